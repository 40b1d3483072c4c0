"""Directed rounding-tie stimulus for the cores whose rounding point is a wide exact value
(a product, a dot product, a conv window, an accumulator, a PWL segment product): the
cosmic, FPDeep and MAPLE testbenches.

Builds on the lane-wise helpers (:func:`verif.lanewise_suite.tie_scalar`,
:func:`~verif.lanewise_suite.tie_operands`, :func:`~verif.lanewise_suite.check_ties`).
A value ``v`` (2F fraction bits) at a rounding point is a tie when ``v mod 2**F`` is
exactly ``2**(F-1)``: ``v = t * 2**F + 2**(F-1)`` lies half an LSB above the word ``t``
and the rule (half up) gives ``t + 1``.  The targets ``t = max_int`` (half-up carries out
of the word: must saturate, a wrap gives ``min_int``), ``max_int - 1``, ``min_int - 1``
(rounds up onto ``min_int``), ``-1`` (``-0.5`` LSB rounds to 0) and ``0`` are the edge ties.
"""
from __future__ import annotations

import math

import numpy as np

from verif.lanewise_suite import check_ties, tie_operands, tie_scalar  # noqa: F401 (re-exported)


def is_tie(fmt, v) -> bool:
    return int(v) % (1 << fmt.F) == 1 << (fmt.F - 1)


def tie_value(fmt, t: int) -> int:
    """The exact value half an LSB above the word ``t`` (scale ``2**-2F``)."""
    return (int(t) << fmt.F) + (1 << (fmt.F - 1))


def edge_targets(fmt) -> list:
    return [fmt.max_int, fmt.max_int - 1, fmt.min_int - 1, fmt.min_int, -1, 0]


def rand_targets(fmt, rng, n: int, lim: int = 64) -> list:
    """``n`` random targets of alternating sign (``t >= 0`` gives a positive tie, ``t <= -1``
    a negative one), ``|t| <= lim`` words."""
    lim = max(1, min(lim, fmt.max_int))
    return [int(rng.integers(0, lim)) if k % 2 == 0 else -1 - int(rng.integers(0, lim)) for k in range(n)]


def require_ties(fmt, values, what: str, log=None) -> tuple:
    """Count the exact ties among ``values`` (the exact numbers a core rounds) by sign,
    assert at least one of each sign, and check (:func:`check_ties`) that on the ties the
    specified rounding differs from ties-away, ties-to-even and truncation.  Returns
    ``(positive, negative)``."""
    vals = [int(v) for v in np.asarray(values, dtype=object).reshape(-1)]
    ties = [v for v in vals if is_tie(fmt, v)]
    pos = sum(v > 0 for v in ties)
    neg = sum(v < 0 for v in ties)
    if log is not None:
        log.info("%s: %d exact rounding ties (%d positive, %d negative) of %d rounded values",
                 what, len(ties), pos, neg, len(vals))
    assert pos > 0 and neg > 0, f"{what}: {pos} positive and {neg} negative ties: the tie test is vacuous"
    check_ties(fmt, ties)
    return pos, neg


def fit_tie(fmt, rest: int, f_odd: int, t: int, one: int | None = None) -> tuple:
    """Words ``(a_p, a_q)`` with ``rest + a_p * f_odd + a_q * one == tie_value(t)``: ``a_p``
    fixes the residue mod ``2**F`` (``f_odd`` odd, so it has an inverse), ``a_q`` (times
    ``one = 2**F``) the integer part.  ``a_p`` moves by multiples of ``2**F`` until ``a_q``
    is a word.  Raises ``ValueError`` when no such pair exists."""
    M = 1 << fmt.F
    one = M if one is None else int(one)
    if one != M:
        raise ValueError("fit_tie: the integer-part coefficient must be one = 2**F")
    f_odd, rest = int(f_odd), int(rest)
    if f_odd % 2 == 0:
        raise ValueError(f"fit_tie: coefficient {f_odd} is even")
    r0 = ((tie_value(fmt, t) - rest) * pow(f_odd % M, -1, M)) % M
    r0 = r0 - M if r0 >= M // 2 else r0                      # smallest magnitude residue
    q0 = (tie_value(fmt, t) - rest - r0 * f_odd) // M       # a_q for k = 0; a_q(k) = q0 - k f
    lo, hi = fmt.min_int, fmt.max_int
    # k with lo <= q0 - k*f <= hi
    a, b = sorted(((q0 - hi) / f_odd, (q0 - lo) / f_odd))
    kmin, kmax = math.ceil(a), math.floor(b)
    kw_lo, kw_hi = math.ceil((lo - r0) / M), math.floor((hi - r0) / M)    # a_p a word
    kmin, kmax = max(kmin, kw_lo), min(kmax, kw_hi)
    if kmin > kmax:
        raise ValueError(f"fit_tie: no word pair reaches t={t} with rest={rest}, f={f_odd} in {fmt}")
    k = min(max(0, kmin), kmax)
    a_p, a_q = r0 + k * M, q0 - k * f_odd
    assert rest + a_p * f_odd + a_q * M == tie_value(fmt, t)
    return int(a_p), int(a_q)


def odd_coef(fmt, rng) -> int:
    """A random odd word of either sign with magnitude in ``[one/2, one)``: large enough
    that :func:`fit_tie` reaches every target from moderate ``rest`` values."""
    half = max(1, fmt.one // 2)
    v = 2 * int(rng.integers(half // 2, max(half // 2 + 1, half))) + 1
    return v if rng.random() < 0.5 else -v


def fit_tie_shrinking(fmt, words, coefs, f_odd: int, t: int, extra: int = 0) -> tuple:
    """:func:`fit_tie` with ``rest = extra + sum(words * coefs)``; when no word pair
    reaches ``t``, the free ``words`` (an int64 array, changed in place) are shrunk by
    two bits and it tries again, down to all zero.  Returns ``(a_p, a_q)``."""
    while True:
        rest = int(extra) + sum(int(a) * int(c) for a, c in zip(words, coefs))
        try:
            return fit_tie(fmt, rest, f_odd, t)
        except ValueError:
            if not np.any(words):
                raise
            words >>= 2


def edge_tie_pair(fmt, t: int):
    """Two words whose product is exactly ``tie_value(t)`` (``odd * 2**(F-1)`` with
    ``odd = 2t + 1``), or None when ``2t + 1`` has no factor split that fits two words."""
    odd = 2 * int(t) + 1
    m = abs(odd)
    sgn = 1 if odd > 0 else -1
    hi = fmt.max_int
    for d in range(1, math.isqrt(m) + 1, 2):          # m is odd: odd divisors only
        if m % d == 0:
            for x, y in ((d, m // d), (m // d, d)):
                for s in range(fmt.F):
                    a, b = x << s, y << (fmt.F - 1 - s)
                    if a <= hi and b <= hi:
                        return sgn * a, b
    return None


def edge_pairs(fmt, top_span: int = 64) -> list:
    """Word pairs (a, b) whose product is a tie at the top edge (``t = max_int``, then the
    nearest factorable ``t`` below) and at the bottom edge (``t = min_int - 1``, then the
    nearest factorable above): the first factorable target counting inward from each rail."""
    out = []
    for start, step in ((fmt.max_int, -1), (fmt.min_int - 1, 1)):
        for k in range(top_span):
            pr = edge_tie_pair(fmt, start + step * k)
            if pr is not None:
                out.append(pr)
                break
    return out


def pwl_tie_inputs(table, per_segment: int = 1, rng=None) -> np.ndarray:
    """Inputs ``z`` of a :class:`golden.fixedpoint.PwlTable` whose segment product
    ``slope * offset`` is an exact rounding tie, up to ``per_segment`` per segment
    (random offsets among the ties when ``rng`` is given)."""
    F = table.fmt.F
    off = np.arange(1 << table.shift, dtype=np.int64)
    zs = []
    for idx, sl in enumerate(table.slope):
        hit = off[((int(sl) * off) & ((1 << F) - 1)) == (1 << (F - 1))]
        if rng is not None and len(hit):
            hit = rng.permutation(hit)
        zs += [table.lo + (idx << table.shift) + int(o) for o in hit[:per_segment]]
    return np.array(zs, dtype=np.int64)


def pwl_segment_products(table, z) -> list:
    """The exact products ``slope[idx] * off`` the PWL unit rounds, for inputs ``z``."""
    z = np.clip(np.asarray(z, dtype=np.int64), table.lo, table.hi - 1)
    u = z - table.lo
    idx = u >> table.shift
    off = u & ((1 << table.shift) - 1)
    return [int(table.slope[int(i)]) * int(o) for i, o in zip(idx, off)]
