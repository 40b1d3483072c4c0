"""Code-coverage flow (verif/coverage.py): l2reg small, one cocotb test, with coverage on.

The measurement must be able to fail: a copy of the netlist with a line no stimulus can
reach (a counter that would need ~3.7e9 cycles) must show that line as uncovered."""
from __future__ import annotations

import re

import pytest

from verif import coverage
from verif.harness import get, rtl_dir, run_core, run_top, sim_available

CORE, CFG, TC = "l2reg", "small", "saturation_corners"
PROBE = """
reg [31:0] cov_probe_ctr;
always @(posedge clk) begin: cov_probe
    cov_probe_ctr <= cov_probe_ctr + 32'd1;
    if (cov_probe_ctr == 32'hDEADBEEF) begin
        cov_probe_ctr <= 32'd0; // COV_PROBE unreachable in any test
    end
end
"""

pytestmark = pytest.mark.skipif(sim_available("verilator") is not None, reason="no Verilator")


@pytest.fixture
def cov_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MLACCEL_COVERAGE", "1")
    monkeypatch.setenv("MLACCEL_COVERAGE_DIR", str(tmp_path / "cov"))
    return tmp_path


def _raws(tmp_path):
    return sorted((tmp_path / "cov" / "raw" / CORE).glob("*.dat"))


def test_coverage_run_reports_numbers_and_merges(cov_env):
    tmp_path = cov_env
    meta = run_core(CORE, CFG, "verilator", testcase=TC)
    assert meta["outcome"] == "pass"
    run_core(CORE, CFG, "verilator", testcase=TC)  # a second run: the merge must add counts
    raws = _raws(tmp_path)
    assert len(raws) == 2, raws
    # keyed without the path: an unchanged netlist may move to a new build/gen folder when
    # any generator source changes between the two runs (verif.coverage.same_netlists)
    one = {tuple(sorted((k, v) for k, v in p.items() if k not in ("count", "f"))): p["count"]
           for p in coverage.parse_dat(raws[0])}
    merged = coverage.same_netlists(coverage.parse_dat(coverage.merge(CORE)))
    assert merged and len(merged) == len(one), (len(merged), len(one))
    differ = []
    for p in merged:
        key = tuple(sorted((k, v) for k, v in p.items() if k not in ("count", "f")))
        if p["count"] != 2 * one[key]:  # same seed and test: each point counted twice
            differ.append((dict(key).get("o"), dict(key).get("l"), one[key], p["count"]))
    assert not differ, f"{len(differ)} merged counts are not twice one run's: {differ[:5]}"
    nets = coverage.analyse(CORE, merged, waivers=[])
    assert len(nets) == 1 and nets[0]["file"].endswith(f"{CORE}.v"), [n["file"] for n in nets]
    n = nets[0]
    assert n["line_total"] > 50 and n["toggle_total"] > 1000
    assert 0 < n["line_pct"] <= 100 and 0 < n["toggle_pct"] < 100, (n["line_pct"], n["toggle_pct"])
    rep = coverage.write_report(CORE, nets, tmp_path / "rep", runs=2).read_text()
    assert re.search(r"\| \d+/\d+ \| \d+\.\d \| \d+/\d+ \| \d+\.\d \|", rep)


def test_unreachable_line_is_reported_uncovered_and_fails_unwaived(cov_env):
    tmp_path = cov_env
    src = (rtl_dir(CORE, CFG) / f"{CORE}.v").read_text()
    body, end = src.rsplit("endmodule", 1)
    probed = tmp_path / f"{CORE}.v"
    probed.write_text(body + PROBE + "endmodule" + end)
    cd = get(CORE)
    meta = run_top(CORE, CORE, CFG, "verilator", [probed], ["--output-split", "0"],
                   cd.resolve(cd.configs[CFG]), testcase=TC, tag="covprobe")
    assert meta["outcome"] == "pass"
    nets = coverage.analyse(CORE, coverage.parse_dat(coverage.merge(CORE)), waivers=[])
    (n,) = nets
    probe_line = next(i for i, ln in enumerate(probed.read_text().splitlines(), 1) if "COV_PROBE" in ln)
    unc = {u["line"]: u for u in n["uncovered"]}
    assert probe_line in unc and "COV_PROBE" in unc[probe_line]["text"]
    assert n["line_pct"] < 100.0 and unc[probe_line] in n["unwaived"]
    # the gate: under the target with an unwaived line fails; a waiver with a reason clears it
    old = coverage.TARGET
    try:
        coverage.TARGET = 100.0
        assert not coverage.analyse(CORE, coverage.parse_dat(coverage.merge(CORE)), waivers=[])[0]["ok"]
        wf = tmp_path / "w.txt"
        wf.write_text("# test waiver\n" + "|".join(re.escape(u["text"]) for u in n["uncovered"])
                      + " :: unreachable by construction (test probe)\n")
        w = coverage.analyse(CORE, coverage.parse_dat(coverage.merge(CORE)),
                             waivers=coverage.read_waivers(CORE, wf))[0]
        assert w["ok"] and not w["unwaived"]
        assert "waived: unreachable by construction" in \
            coverage.write_report(CORE, [w], tmp_path / "rep", runs=1).read_text()
        # a known-gap reason is shown but does not clear the gate (the line stays unwaived)
        g = coverage.analyse(CORE, coverage.parse_dat(coverage.merge(CORE)), waivers=[],
                             gaps=coverage.read_waivers(CORE, wf))[0]
        assert not g["ok"] and unc[probe_line]["line"] in {u["line"] for u in g["unwaived"]}
        assert "GAP: unreachable by construction" in \
            coverage.write_report(CORE, [g], tmp_path / "rep", runs=1).read_text()
    finally:
        coverage.TARGET = old
    wf.write_text("COV_PROBE\n")
    with pytest.raises(ValueError, match="without a reason"):
        coverage.read_waivers(CORE, wf)
