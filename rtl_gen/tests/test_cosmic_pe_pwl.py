"""cosmic_pe's PWL pipeline folds ``sat(base + round(slope * off, F))`` and the output
clamp into one add with a carry in (``rtl_gen.cosmic.cosmic_pe.pwl_fold``).  Here the
folded arithmetic is compared with ``golden.fixedpoint.pwl_fx`` on every segment and
every offset of every nonlinear table of the catalog configurations and of a W/F sweep
(the RTL's equality with the folded form is what the cosmic_pe cocotb tests check);
the generator's guard rejects tables the fold would get wrong."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from golden.cosmic_pe import PEConfig, nl_tables
from golden.fixedpoint import pwl_fx
from rtl_gen.cosmic.cosmic_pe import CORE, _check, pwl_fold, pwl_fold_eval


def every_input(t):
    """Segment index, offset and input ``z`` of every point of the domain of ``t``."""
    idx, off = np.meshgrid(np.arange(t.segments), np.arange(1 << t.shift), indexing="ij")
    idx, off = idx.ravel(), off.ravel()
    return idx, off, t.lo + (idx << t.shift) + off


def mismatches(t, ref=None) -> int:
    """Inputs where the folded form of ``t`` differs from ``pwl_fx`` of ``ref`` (``t``)."""
    idx, off, z = every_input(t)
    return int(np.count_nonzero(pwl_fold_eval(t, idx, off) != pwl_fx(z, t if ref is None else ref)))


def tables_of(params: dict):
    p = CORE.resolve(params)
    return nl_tables(PEConfig.from_params(p).fmt, p["NL"])


CATALOG = [(cfg, name) for cfg in CORE.configs for name in tables_of(CORE.configs[cfg])]


@pytest.mark.parametrize("cfg,name", CATALOG, ids=[f"{c}-{n}" for c, n in CATALOG])
def test_fold_equals_pwl_fx_catalog(cfg, name):
    t = tables_of(CORE.configs[cfg])[name]
    assert pwl_fold(t)
    assert mismatches(t) == 0


def sweep_point(W: int, F: int, NL: int) -> dict | None:
    """The parameters, or None when the tables do not fit W/F (rejected anyway)."""
    p = dict(CORE.resolve({}), W=W, F=F, NL=NL)
    try:
        tables_of(p)
    except ValueError:
        return None
    return p


SWEEP = [(W, F, NL) for W in (8, 16) for F in range(2, W) for NL in (1, 2, 4, 8)] + \
    [(24, 12, 15), (32, 8, 15), (32, 24, 15)]
SWEEP = [s for s in SWEEP if sweep_point(*s) is not None]


@pytest.mark.parametrize("W,F,NL", SWEEP, ids=[f"W{w}F{f}NL{n}" for w, f, n in SWEEP])
def test_fold_equals_pwl_fx_sweep(W, F, NL):
    p = sweep_point(W, F, NL)
    assert _check(p) is None
    for name, t in tables_of(p).items():
        assert pwl_fold(t), name
        if t.segments << t.shift <= 1 << 21:
            assert mismatches(t) == 0, name


def test_fold_negative():
    """A base one LSB off in one segment is caught by the exhaustive compare, and a
    table whose values reach past ``y_max`` (the clamp would act) is refused by the
    guard and differs from ``pwl_fx``."""
    t = tables_of({})["sigmoid"]
    bad = dataclasses.replace(t, base=(t.base[0] + 1,) + tuple(t.base[1:]))
    assert mismatches(bad, t) == 1 << t.shift
    clipped = dataclasses.replace(t, y_max=int(max(t.base)) - 1)
    assert not pwl_fold(clipped)
    assert mismatches(clipped) > 0
