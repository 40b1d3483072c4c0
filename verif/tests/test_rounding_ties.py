"""verif.rounding_ties: the tie stimulus is what it claims, and the vacuity check
(require_ties) fails on stimulus without ties of both signs."""
from __future__ import annotations

import numpy as np
import pytest

from golden.cosmic_pe import nl_tables
from golden.fixedpoint import DEFAULT, QFormat
from verif.rounding_ties import (edge_pairs, edge_targets, fit_tie, fit_tie_shrinking, is_tie, odd_coef,
                                 pwl_segment_products, pwl_tie_inputs, rand_targets, require_ties, tie_value)

FMTS = [DEFAULT, QFormat(16, 8), QFormat(8, 4)]


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_fit_tie_reaches_every_target(fmt):
    rng = np.random.default_rng(7)
    for k in range(300):
        t = (edge_targets(fmt) + rand_targets(fmt, rng, 2))[k % 8]
        f = odd_coef(fmt, rng)
        words = rng.integers(-2 * fmt.one, 2 * fmt.one, 5)
        coefs = rng.integers(-fmt.one, fmt.one, 5)
        a_p, a_q = fit_tie_shrinking(fmt, words, coefs, f, t)
        v = sum(int(a) * int(c) for a, c in zip(words, coefs)) + a_p * f + a_q * fmt.one
        assert v == tie_value(fmt, t) and is_tie(fmt, v)
        assert all(fmt.min_int <= x <= fmt.max_int for x in (a_p, a_q))
    with pytest.raises(ValueError, match="even"):
        fit_tie(fmt, 0, 2, 0)


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_edge_pairs_are_words_with_edge_tie_products(fmt):
    pairs = edge_pairs(fmt)
    assert len(pairs) == 2
    for a, b in pairs:
        assert fmt.min_int <= a <= fmt.max_int and fmt.min_int <= b <= fmt.max_int
        assert is_tie(fmt, a * b)
    top, bot = ((a * b) >> fmt.F for a, b in pairs)
    assert top > fmt.max_int - 64 and bot < fmt.min_int + 64
    if fmt == DEFAULT:    # 2**32 - 1 = 3*5*17*257*65537 and 2**32 + 1 = 641*6700417 factor
        assert [a * b for a, b in pairs] == [tie_value(fmt, fmt.max_int), tie_value(fmt, fmt.min_int - 1)]


def test_pwl_tie_inputs_hit_ties_of_both_signs():
    tabs = nl_tables(DEFAULT, 15)
    allp = []
    for t in tabs.values():
        p = pwl_segment_products(t, pwl_tie_inputs(t, 2))
        assert p and all(is_tie(DEFAULT, v) for v in p)
        allp += p
    assert min(allp) < 0 < max(allp)


def test_require_ties_fails_on_vacuous_stimulus():
    f = DEFAULT
    h = 1 << (f.F - 1)
    assert require_ties(f, [h, -h, 3 * h, 5], "t") == (2, 1)
    with pytest.raises(AssertionError, match="vacuous"):
        require_ties(f, [h, 3 * h, 7], "t")               # positive ties only
    with pytest.raises(AssertionError, match="vacuous"):
        require_ties(f, [-h, -3 * h], "t")                # negative ties only
    with pytest.raises(AssertionError, match="vacuous"):
        require_ties(f, [1, -1, f.one], "t")              # no tie at all
