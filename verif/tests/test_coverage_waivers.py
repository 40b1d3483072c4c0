"""The proofs behind the code-coverage waivers (verif/<core>/coverage_waivers.txt).

A waiver says a netlist line is unreachable; where that rests on numbers (the PWL tables
of the nonlinear units), the numbers are checked here, and every check has a negative
case showing it can fail.  Also: every waiver pattern still names a line of its core's
committed netlist (``<block>: <text>``, as verif.coverage matches it), so a regenerated
netlist cannot leave a waiver silently pointing at nothing.

PWL datapath (rtl_gen/common/nonlinear.py ``pwl_comb``, rtl_gen/common/sigmoid.py): for an
input clamped into the domain, ``idx`` selects a table entry and ``off`` in
``[0, 2**shift)`` the offset; ``rnd = round_sat((slope[idx] * off + 2**(F-1)) >> F)`` to W
bits, ``ys = sat(base[idx] + rnd)`` to W bits, then the output clamps to
``[y_min, y_max]`` (sigmoid.py: to ``[0, one]``).  ``slope * off`` is linear in ``off``
and the rounding shift is monotone, so over each segment ``rnd`` and ``base + rnd`` take
their extremes at ``off = 0`` or ``off = 2**shift - 1``: checking both ends of every
segment covers every input the unit can see.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from golden.cosmic_pe import NL_OPS, nl_tables
from golden.fixedpoint import QFormat, sigmoid_table
from rtl_gen.common.core import REPO
from verif import coverage


def pwl_ranges(base, slope, shift: int, F: int) -> dict:
    """Exact (min, max) of ``rnd`` (before saturation) and of ``base + rnd`` over every
    reachable (segment, offset) of a PWL unit."""
    rnd, tot = [], []
    for b, s in zip(base, slope):
        for off in (0, (1 << shift) - 1):
            r = (int(s) * off + (1 << (F - 1))) >> F
            rnd.append(r)
            tot.append(int(b) + r)
    return {"rnd": (min(rnd), max(rnd)), "sum": (min(tot), max(tot))}


def fits(fmt: QFormat, lo_hi) -> bool:
    return fmt.min_int <= lo_hi[0] and lo_hi[1] <= fmt.max_int


# the cosmic_pe netlists: default (all four units at Q32.16) and dbuf/nobypass (sigmoid only);
# units are instantiated in NL bit order, so pwl_comb0..3 = sigmoid, gauss, recip, log
COSMIC_FMTS = [QFormat(32, 16)]


@pytest.mark.parametrize("fmt", COSMIC_FMTS, ids=str)
@pytest.mark.parametrize("name", list(NL_OPS))
def test_cosmic_pwl_never_saturates(fmt, name):
    """round_sat's and sat's `else` (saturating) arms of every pwl_comb unit are unreachable:
    neither the rounded product nor base + product leaves the W-bit range."""
    t = nl_tables(fmt, 15)[name]
    r = pwl_ranges(t.base, t.slope, t.shift, fmt.F)
    assert fits(fmt, r["rnd"]) and fits(fmt, r["sum"]), r


def test_cosmic_pwl_output_clamps():
    """Which output clamps of pwl_comb can fire at Q32.16: sigmoid and reciprocal never go
    below y_min = 0, the reciprocal never above y_max = 1 (so `y_sig = 0`, `y_rec = 0` and
    the reciprocal's `ys > 65536` arm are unreachable); log has no output clamp."""
    fmt = QFormat(32, 16)
    t = nl_tables(fmt, 15)
    sig = pwl_ranges(t["sigmoid"].base, t["sigmoid"].slope, t["sigmoid"].shift, fmt.F)["sum"]
    rec = pwl_ranges(t["recip"].base, t["recip"].slope, t["recip"].shift, fmt.F)["sum"]
    assert t["sigmoid"].y_min == 0 and sig[0] >= 0, sig
    assert t["recip"].y_min == 0 and rec[0] >= 0 and rec[1] <= t["recip"].y_max == fmt.one, rec
    assert (t["log"].y_min, t["log"].y_max) == (fmt.min_int, fmt.max_int)   # no outc clamp


@pytest.mark.parametrize("fmt", [QFormat(32, 16), QFormat(16, 8)], ids=str)
def test_sigmoid_pipe_never_saturates_or_clamps(fmt):
    """rtl_gen/common/sigmoid.py (sigmoid_delta, dot_sigmoid lanes, default Q32.16 and small
    Q16.8): the round_sat `else` arm and both st4 clamps (`sumv > one`, `sumv < 0`) are
    unreachable: base + rounded product stays within [0, one]."""
    t = sigmoid_table(fmt)
    r = pwl_ranges(t.base, t.slope, t.shift, fmt.F)
    assert fits(fmt, r["rnd"]), r
    assert 0 <= r["sum"][0] and r["sum"][1] <= fmt.one, r


def test_pwl_checks_can_fail():
    """Negative cases: a slope that overflows the W-bit product, a base below 0 and a sum
    above one are each reported."""
    fmt = QFormat(16, 8)
    t = sigmoid_table(fmt)
    big = list(t.slope)
    big[5] = fmt.max_int
    assert not fits(fmt, pwl_ranges(t.base, big, t.shift + 8, fmt.F)["rnd"])
    neg = list(t.base)
    neg[0] = -1
    assert pwl_ranges(neg, t.slope, t.shift, fmt.F)["sum"][0] < 0
    hi = list(t.base)
    hi[-1] = fmt.one + 1
    assert pwl_ranges(hi, t.slope, t.shift, fmt.F)["sum"][1] > fmt.one


# ------------------------------------------------------------ waivers name real lines
WAIVER_FILES = sorted((REPO / "verif").glob("*/coverage_waivers.txt"))


def netlist_lines(core: str) -> list[str]:
    """What waivers are matched against (verif.coverage.match_texts), for every line of the
    core's committed default netlist."""
    f = REPO / "ip" / core / "rtl" / f"{core}.v"
    src = f.read_text().splitlines()
    return [k for n in range(1, len(src) + 1) for k in coverage.match_texts(src, n)]


@pytest.mark.parametrize("wf", WAIVER_FILES, ids=lambda p: p.parent.name)
def test_every_waiver_names_a_netlist_line(wf: Path):
    core = wf.parent.name
    lines = netlist_lines(core)
    stale = [pat for rx, pat, _ in coverage.read_waivers(core, wf) if not any(rx.search(x) for x in lines)]
    assert not stale, f"{wf}: waivers matching no line of ip/{core}/rtl/{core}.v: {stale}"


def test_block_of_names_the_enclosing_always_block():
    src = ["module m;", "always @(a) begin: blk_one", "    if (a) begin", "        y = 1;",
           "    end", "    else begin", "        y = 0;", "    end", "end", "assign z = a;",
           "always @(posedge clk) begin: blk_two", "    q <= d;", "end", "endmodule"]
    assert coverage.block_of(src, 6) == "blk_one" and coverage.block_of(src, 12) == "blk_two"
    assert coverage.block_of(src, 1) == ""
    # a waiver naming one block's `else` does not match another block's
    rx = re.compile(r"^blk_two: else begin$")
    assert not rx.search(f"{coverage.block_of(src, 6)}: {src[5].strip()}")


def test_same_netlists_merges_identical_files_only(tmp_path):
    """One netlist read from two build/gen folders merges (counts summed); a netlist whose
    text differs stays separate."""
    a, b, c = tmp_path / "a.v", tmp_path / "b.v", tmp_path / "c.v"
    a.write_text("module m; endmodule\n")
    b.write_text("module m; endmodule\n")
    c.write_text("module m2; endmodule\n")
    pt = lambda f, n: {"f": str(f), "l": "1", "page": "v_line/m", "o": "block", "count": n}  # noqa: E731
    out = coverage.same_netlists([pt(a, 0), pt(b, 3), pt(c, 0)])
    got = sorted((Path(p["f"]).name, p["count"]) for p in out)
    assert got == [("a.v", 3), ("c.v", 0)], got
    nets = coverage.analyse("none", [pt(a, 0), pt(b, 3)], waivers=[])
    assert len(nets) == 1 and nets[0]["line_pct"] == 100.0, nets
