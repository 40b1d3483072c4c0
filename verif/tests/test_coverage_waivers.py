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


# ------------------------------------------- pipearch_engine: the regions' error arms
# rtl_gen/pipearch/pipearch_engine.py: each region channel's start is route_eq/load_route
# (go & region nibble / mask bit, normal LOAD only), its access word is the subroutine's
# accs[c], and go = start & !busy & ok with ok the AND of every channel's chan_ok (LOAD:
# load_ok) and range_ok(sub_iters, 1, MAX_ITER).  The region refuses an access (`else`
# arm, err <= 1) only when a_ok is false; err is cleared only by err_clr, tied to zero1.
# The same engine is flattened into pipearch_pu (its sub_* inputs come from the register
# machine there).
ENGINES = {"pipearch_engine": "engine_impl0", "pipearch_pu": "pu_impl0_pipearch_engine0_engine_impl0"}


def engine_netlist(core: str) -> str:
    return (REPO / "ip" / core / "rtl" / f"{core}.v").read_text()


def err_clr_conditions(text: str, pre: str) -> set[str]:
    """The condition nets of every region channel's `err <= 1'b0` arm."""
    return set(re.findall(rf"if \((\w+)\) begin\s*\n\s*{pre}_region_impl\d+_(?:read|write)_channel\d+_err"
                          r" <= 1'b0;", text))


def constant_zero(text: str, net: str) -> bool:
    """``net`` has exactly one driver in the netlist and it is the constant 0."""
    drivers = re.findall(rf"^\s*(?:assign\s+)?{re.escape(net)}\s*(?:<=|=)\s*([^;]+);", text, re.M)
    return drivers == ["1'd0"] or drivers == ["0"]


@pytest.mark.parametrize("core", list(ENGINES))
def test_engine_region_err_clr_is_constant_zero(core):
    text, pre = engine_netlist(core), ENGINES[core]
    conds = err_clr_conditions(text, pre)
    assert conds == {f"{pre}_zero1"}, conds
    assert constant_zero(text, f"{pre}_zero1")
    # negative: the same net driven by a signal is reported
    bad = text.replace(f"assign {pre}_zero1 = 1'd0;", f"assign {pre}_zero1 = rst;")
    assert bad != text and not constant_zero(bad, f"{pre}_zero1")


_ACC = r"\((?P<a>\w*sub_acc\d)\[31\] != (?P=a)\[30\]\)"
CHECK_FORMS = {   # the access terms of every chan_ok / load_ok in the netlist, by kind
    "any": re.compile(rf"^\((?P<n>\w+)_reg_ok && {_ACC} && \((?P=n)_ln != 0\) && \((?P=n)_ln <= (?P<d>\d+)\)\)$"),
    "vector": re.compile(rf"^\((?P<n>\w+)_reg_ok && {_ACC} && \((?P=n)_ln != 0\) && \((?P=n)_ln <= (?P<d>\d+)\) && "
                         r"\((?P<w>\w*sub_w6)\[32-1:14\] == 0\) && \((?P=w)\[14-1:0\] == (?P=n)_ln\)\)$"),
    "scalar": re.compile(rf"^\((?P<n>\w+)_reg_ok && {_ACC} && \((?P=n)_ln == 1\)\)$"),
    "load": re.compile(rf"^\({_ACC} && \((?P<n>\w+)_ln != 0\) && \((?P=n)_ln <= (?P<d>\d+)\)\)$"),
}


def engine_ok(kind: str, b31: int, b30: int, ln: int, depth: int) -> bool:
    """The access terms of a check form (reg_ok and the w6 == ln rule only narrow it)."""
    if kind == "scalar":
        return b31 != b30 and ln == 1
    return b31 != b30 and ln != 0 and ln <= depth


def region_a_ok(b31: int, b30: int, ln: int, iters: int, depth: int) -> bool:
    return b31 != b30 and ln != 0 and ln <= depth and iters != 0


def implication_counterexample(ok, depth: int, max_iter: int):
    """(kind, b31, b30, ln, iters) where the engine's checks pass and the region refuses, or
    None: every 14-bit length, both mode bits, iterations 0, 1, MAX_ITER and 8191 (13 bits)."""
    for kind in ("any", "vector", "scalar", "load"):
        for b31 in (0, 1):
            for b30 in (0, 1):
                for ln in range(1 << 14):
                    if not ok(kind, b31, b30, ln, depth):
                        continue
                    for iters in (0, 1, max_iter, (1 << 13) - 1):
                        if 1 <= iters <= max_iter and not region_a_ok(b31, b30, ln, iters, depth):
                            return kind, b31, b30, ln, iters
    return None


@pytest.mark.parametrize("core", list(ENGINES))
def test_engine_checks_imply_region_a_ok(core):
    text, pre = engine_netlist(core), ENGINES[core]
    depth = int(re.search(r"DEPTH=(\d+)", text).group(1))
    max_iter = int(re.search(r"MAX_ITER=(\d+)", text).group(1))
    m = re.search(rf"assign {pre}_iters16 = \{{\d+'h0, (\w+)\}};", text)
    assert m, "iters16 is no longer the iteration count zero-extended"
    it_net = m.group(1)
    # the region's a_ok, for every channel of every region: exactly the four terms
    a_oks = re.findall(rf"assign ({pre}_region_impl\w+)_a_ok = (.*);", text)
    assert a_oks
    for name, expr in a_oks:
        acc_ = name.rsplit("_access_ctl", 1)[0] + "_access"
        want = (f"(({acc_}[31] != {acc_}[30]) && ({name}_a_len != 0) && ({name}_a_len <= {depth}) && "
                f"({pre}_iters16 != 0))")
        assert expr == want, (name, expr)
        assert f"assign {name}_a_len = {acc_}[30-1:16];" in text, name
    # every engine check has one of the known forms, with this DEPTH
    forms = []
    for net, expr in re.findall(rf"assign ({pre}_chan_ok\d+)_ok = (.*);", text):
        kinds = [k for k, rx in CHECK_FORMS.items() if k != "load" and rx.match(expr)]
        assert len(kinds) == 1, (net, expr)
        mm = CHECK_FORMS[kinds[0]].match(expr)
        assert kinds[0] == "scalar" or int(mm.group("d")) == depth, (net, expr)
        forms.append(kinds[0])
    loads = re.findall(rf"{pre}_load_ok\d+_ok = (\(\(\w*sub_acc0.*\));", text)
    assert loads and all(CHECK_FORMS["load"].match(x) and int(CHECK_FORMS["load"].match(x).group("d")) == depth
                         for x in loads), loads
    assert {"vector", "scalar"} <= set(forms), forms
    iters = set(re.findall(rf"assign \w+_ok = \(\({it_net} >= (\d+)\) && \({it_net} <= (\d+)\)\);", text))
    assert iters == {("1", str(max_iter))}, iters
    assert implication_counterexample(engine_ok, depth, max_iter) is None


def test_engine_implication_check_can_fail():
    """Negative: a check without the `length <= DEPTH` term admits DEPTH + 1, which the region
    refuses; a check without the mode-bit term admits both bits set."""
    def no_depth(kind, b31, b30, ln, depth):
        return b31 != b30 and ln != 0
    cx = implication_counterexample(no_depth, 32, 16)
    assert cx is not None and cx[3] == 33, cx

    def no_mode(kind, b31, b30, ln, depth):
        return ln == 1
    cx = implication_counterexample(no_mode, 32, 16)
    assert cx is not None and cx[1] == cx[2], cx
