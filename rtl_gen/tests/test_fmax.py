"""``make fmax`` (rtl_gen/fmax.py) on one small core, and its failure modes.

* the flow places and routes ``l2reg`` ``small`` on the LFE5UM-85F (about 10 s): the
  report parses, every number is positive, the counts agree between Yosys' netlist and
  nextpnr's utilisation, the Fmax is the inverse of the critical path nextpnr printed,
  and the markdown shows the same row;
* the checker fails on a report whose numbers disagree (one corruption at a time);
* a request that cannot fit (l2reg ``default`` on an LFE5U-12F: 64 multipliers, 28 on the
  part) fails with a clear error, from the flow's own check and from nextpnr itself;
* the datasheet section shows the row, the critical path of a row below target, and says
  so when the netlist changed after the measurement.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from rtl_gen import fmax


def run_flow(tmp_path: Path, *args: str) -> tuple[int, list[dict], str]:
    out = tmp_path / "rep"
    rc = fmax.main([*args, "--out", str(out), "--build", str(tmp_path / "build")])
    rows = json.loads((out / "fmax.json").read_text())
    return rc, rows, (out / "fmax.md").read_text()


def check_row(r: dict, md: str) -> None:
    """What a finished row of reports/fmax.json must satisfy."""
    assert r["status"] == "ok", r
    for k in ("fmax_mhz", "LUT4", "FF"):
        assert isinstance(r[k], (int, float)) and r[k] > 0, f"{k} = {r.get(k)!r}"
    for k in ("DSP", "RAM", "LUTRAM", "ALU54B"):
        assert isinstance(r[k], int) and r[k] >= 0, f"{k} = {r.get(k)!r}"
    # an ECP5-8 register-to-register path: above 20 MHz and below the fabric's ~400 MHz
    assert 20 < r["fmax_mhz"] < 450, r["fmax_mhz"]
    avail = r["available"]
    for k, site in (("LUT4", "TRELLIS_COMB"), ("FF", "TRELLIS_FF"), ("DSP", "MULT18X18D"),
                    ("RAM", "DP16KD")):
        assert r[k] <= avail[site], f"{k} {r[k]} > {site} available {avail[site]}"
    # nextpnr places what Yosys mapped: same flip-flops, multipliers and block RAMs
    y = r["yosys_cells"]
    assert r["FF"] == y.get("TRELLIS_FF", 0), (r["FF"], y)
    assert r["DSP"] == y.get("MULT18X18D", 0), (r["DSP"], y)
    assert r["RAM"] == y.get("DP16KD", 0), (r["RAM"], y)
    # every LUT4 and carry half of the netlist occupies a TRELLIS_COMB (LUT RAM adds more)
    assert r["LUT4"] >= y.get("LUT4", 0) + 2 * y.get("CCU2C", 0), (r["LUT4"], y)
    cp = r["critical_path"]
    assert cp is not None and cp["levels"] > 0
    assert cp["logic_ns"] + cp["routing_ns"] == pytest.approx(cp["delay_ns"], abs=0.01)
    assert 1000.0 / cp["delay_ns"] == pytest.approx(r["fmax_mhz"], rel=0.01), (cp["delay_ns"], r["fmax_mhz"])
    row = re.search(rf"^\| {r['core']} \| {r['config']} \| ([0-9.]+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|",
                    md, re.M)
    assert row, f"no table row for {r['core']} {r['config']} in fmax.md"
    assert float(row.group(1)) == pytest.approx(r["fmax_mhz"], abs=0.05)
    assert [int(row.group(i)) for i in (2, 3, 4, 5)] == [r["LUT4"], r["FF"], r["DSP"], r["RAM"]]
    if r["fmax_mhz"] < r["target_mhz"]:
        assert f"`{r['core']}` `{r['config']}` ({r['fmax_mhz']:.1f} MHz): `{cp['from']}`" in md


@pytest.fixture(scope="module")
def l2reg_small(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fmax")
    rc, rows, md = run_flow(tmp, "l2reg", "--config", "small")
    return rc, rows, md, tmp


def test_l2reg_small_report(l2reg_small):
    rc, rows, md, tmp = l2reg_small
    assert rc == 0, rows
    assert [(r["core"], r["config"]) for r in rows] == [("l2reg", "small")]
    r = rows[0]
    assert (r["device"], r["speed"], r["target_mhz"]) == ("LFE5UM-85F", 8, 150.0)
    check_row(r, md)
    # the small l2reg has 4 lanes of 16x16 products: one MULT18X18D each, and no block RAM
    assert r["DSP"] == 4 and r["RAM"] == 0
    # the job ran nextpnr out of context on the requested part, one thread, clk at 150 MHz
    cmd = (tmp / "build" / "l2reg" / "small" / "nextpnr.cmd").read_text().split()
    for flag in ("--um-85k", "--out-of-context", "--speed", "8", "--freq", "150", "--threads", "1"):
        assert flag in cmd, cmd


@pytest.mark.parametrize("corrupt", [
    pytest.param(lambda r: r.update(fmax_mhz=r["fmax_mhz"] * 1.5), id="fmax-not-path"),
    pytest.param(lambda r: r.update(FF=r["FF"] + 1), id="ff-count"),
    pytest.param(lambda r: r.update(DSP=r["available"]["MULT18X18D"] + 1), id="over-capacity"),
    pytest.param(lambda r: r.update(LUT4=0), id="zero-lut"),
    pytest.param(lambda r: r["critical_path"].update(routing_ns=r["critical_path"]["routing_ns"] + 1),
                 id="path-sum"),
    pytest.param(lambda r: r.update(status="error"), id="status"),
])
def test_checker_rejects_inconsistent_report(l2reg_small, corrupt):
    _, rows, md, _ = l2reg_small
    bad = copy.deepcopy(rows[0])
    corrupt(bad)
    with pytest.raises(AssertionError):
        check_row(bad, md)


def test_checker_rejects_markdown_mismatch(l2reg_small):
    _, rows, md, _ = l2reg_small
    r = rows[0]
    wrong = md.replace(f"| {r['LUT4']} | {r['FF']} |", f"| {r['LUT4'] + 7} | {r['FF']} |")
    assert wrong != md
    with pytest.raises(AssertionError):
        check_row(r, wrong)


def test_too_large_fails_clearly(tmp_path):
    rc, rows, md = run_flow(tmp_path, "l2reg", "--config", "default", "--device", "12k")
    assert rc == 1
    r = rows[0]
    assert r["status"] == "does_not_fit", r
    assert "does not fit LFE5U-12F" in r["error"] and "MULT18X18D" in r["error"], r["error"]
    assert "fmax_mhz" not in r
    assert "| l2reg | default | DOES NOT FIT: does not fit LFE5U-12F" in md
    # nextpnr on its own refuses the same netlist (the pre-check is not the only guard)
    job = tmp_path / "build" / "l2reg" / "default"
    with pytest.raises(fmax.FlowError, match=r"nextpnr exited [1-9]"):
        fmax.pnr(job, "l2reg", "--12k", 8, "CABGA381", 150.0, 1, 300)
    text = (job / "nextpnr.out").read_text()
    assert "MULT18X18D" in text, text[-2000:]


def test_unknown_core_is_refused():
    with pytest.raises(SystemExit, match="unknown core"):
        fmax.main(["no_such_core"])


def test_datasheet_section(tmp_path):
    res = tmp_path / "fmax_results.json"
    rows = [{"core": "l2reg", "config": "default", "status": "ok", "device": "LFE5UM-85F", "speed": 8,
             "target_mhz": 150.0, "rtl_sha256": "aa", "fmax_mhz": 120.25, "LUT4": 10, "FF": 20,
             "DSP": 3, "RAM": 1, "LUTRAM": 0, "critical_path": "`a` -> `b`: 8.3 ns"},
            {"core": "l2reg", "config": "tiny", "status": "ok", "device": "LFE5UM-85F", "speed": 8,
             "target_mhz": 150.0, "rtl_sha256": "bb", "fmax_mhz": 210.0, "LUT4": 5, "FF": 6, "DSP": 0,
             "RAM": 0, "LUTRAM": 0, "fit_note": "default needs more than the part", "critical_path": "x"}]
    res.write_text(json.dumps({"rows": rows}))
    same = "\n".join(fmax.datasheet_section("l2reg", "aa", res))
    assert "| default | 120.2 | 10 | 20 | 3 | 1 | 0 |" in same or "| default | 120.3 | 10 | 20 | 3 | 1 | 0 |" in same
    assert "| tiny (fit) | 210.0 | 5 | 6 | 0 | 0 | 0 |" in same
    assert "Critical path of `default`: `a` -> `b`: 8.3 ns." in same
    assert "Critical path of `tiny`" not in same  # above target: no path sentence
    assert "`tiny`: default needs more than the part" in same
    assert "earlier netlist" not in same
    stale = "\n".join(fmax.datasheet_section("l2reg", "cc", res))
    assert "measured on an earlier netlist" in stale
    assert fmax.datasheet_section("cosmic_pe", "aa", res) == []
