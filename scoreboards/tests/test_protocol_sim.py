"""The protocol checkers on a simulated bus (Icarus): legal traffic passes, each
deliberate violation is reported, and the guard every testbench calls fails a test
whose bus breaks a rule.  The cocotb tests are in protocol_bus_tb.py."""
from __future__ import annotations

import hashlib
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from verif.harness import BUILD, REPO

HERE = Path(__file__).parent
TESTS = ["legal_traffic_passes", "axis_violations_caught", "axi_master_violations_caught",
         "axil_slave_violations_caught", "instance_port_violation_caught", "guarded_legal",
         "guarded_violation_fails_the_test", "guarded_missing_response_fails_the_test"]


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog not on PATH")
def test_protocol_checkers_on_icarus():
    from cocotb_tools.runner import get_runner

    src = HERE / "protocol_bus.v"
    key = hashlib.sha1(src.read_bytes()).hexdigest()[:10]
    build = BUILD / "sim" / "protocol_bus" / f"icarus-{key}"
    runner = get_runner("icarus")
    runner.build(sources=[src], hdl_toplevel="protocol_bus", build_dir=build, timescale=("1ns", "1ps"))
    xml = build / "results.xml"
    if xml.exists():
        xml.unlink()
    try:
        runner.test(test_module="scoreboards.tests.protocol_bus_tb", hdl_toplevel="protocol_bus",
                    build_dir=build, test_dir=build, results_xml=str(xml),
                    extra_env={"PYTHONPATH": str(REPO)})
    except SystemExit:
        pass
    assert xml.exists(), "simulator produced no results file"
    cases = {tc.get("name"): [c.tag for c in tc if c.tag in ("failure", "error", "skipped")]
             for tc in ET.parse(xml).getroot().iter("testcase")}
    assert sorted(cases) == sorted(TESTS), sorted(cases)
    bad = {n: st for n, st in cases.items() if st}
    assert not bad, f"not passed: {bad}"
