"""Deadlock regression (issue 11): a stalled stream fails the cocotb test within a bounded
simulated time, naming the stalled interface and the seed, instead of hanging.

The cocotb tests below run on the real ``l2reg`` netlist and are EXPECTED TO FAIL:

* ``sink_never_ready``: the output sink never asserts ``m_axis_y_tready``; the wait for
  ``done`` runs out of its cycle budget and the message names ``m_axis_y``;
* ``input_never_accepted``: a job is started but only ``s_axis_x`` is fed, so the core
  never raises ``s_axis_x_tready`` (it waits for ``s_axis_xold``); the source's own
  handshake budget fails the test naming ``s_axis_x``, although the test body waits
  with a budget of a million cycles;
* ``transaction_never_answered``: a bus-model transaction that never completes, bounded by
  ``waits.within`` (as the AXI4-Lite reads/writes of the register-mapped testbenches are),
  fails naming it;
* ``bound_reached``: the same stall with every cycle budget far away: the test's
  simulated-time bound (``sim_test``) fails it and still names ``s_axis_x``.

The pytest launcher at the bottom builds the ``small`` netlist in its own build folder
(not through ``run_top``: these failures are the expected outcome, not regression rows),
runs the module and asserts that each test failed, with the expected message, within
its bound of simulated time and a wall-time limit.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
import xml.etree.ElementTree as ET

import pytest

from verif.harness import BUILD, CLOCK_NS, REPO, rtl_dir, sim_available
from verif.l2reg.test_l2reg import ADAPTER
from verif.lanewise_suite import job
from verif.tb_common import SubroutineTB, line_spec, sim_test, within

STALL = 2000          # cycle budget of the stalled wait in the first two tests
BOUND_US = 40.0       # simulated-time bound of bound_reached (4000 cycles)


def _tb(dut):
    from verif.harness import dut_params
    return SubroutineTB(dut, list(ADAPTER.inputs), {"m_axis_y": line_spec("m_axis_y", dut_params())})


@sim_test(timeout_us=200)
async def sink_never_ready(dut):
    tb = _tb(dut)
    tb.sinks["m_axis_y"].stop()                    # tready low for ever
    await tb.reset()
    await tb.initiate(**job(ADAPTER, tb, 8, 2))
    await tb.wait_done(1, timeout=STALL)


@sim_test(timeout_us=200)
async def input_never_accepted(dut):
    tb = _tb(dut)
    tb.src["s_axis_x"].stall_cycles = STALL
    await tb.reset()
    f = job(ADAPTER, tb, 8, 2)
    tb.src["s_axis_xold"].kill()                   # x_old never arrives
    await tb.initiate(**f)
    await tb.wait_done(1, timeout=1_000_000)


@sim_test(timeout_us=BOUND_US)
async def bound_reached(dut):
    tb = _tb(dut)
    await tb.reset()
    f = job(ADAPTER, tb, 8, 2)
    tb.src["s_axis_xold"].kill()
    await tb.initiate(**f)
    await tb.wait_done(1, timeout=1_000_000)


@sim_test(timeout_us=200)
async def transaction_never_answered(dut):
    """A bus-model transaction (here an awaitable that never completes, standing in for an
    AXI4-Lite read nobody answers) bounded by ``within`` fails naming it."""
    from cocotb.triggers import Event
    tb = _tb(dut)
    await tb.reset()
    await within(Event().wait(), STALL, "s_axil: read 0x10 got no response (AR/R)")


# --------------------------------------------------------------------------------------
# pytest launcher
# --------------------------------------------------------------------------------------
EXPECT = {  # test -> (patterns the failure message must contain, latest failure time in cycles)
    "sink_never_ready": ([r"done: no pulse for 1999 cycles", r"m_axis_y: tvalid held \d+ cycles without tready"],
                         STALL + 100),
    "input_never_accepted": ([r"s_axis_x: tvalid held without tready for 2000 cycles"], STALL + 100),
    "transaction_never_answered": ([r"s_axil: read 0x10 got no response \(AR/R\) for 2000 cycles"], STALL + 100),
    "bound_reached": ([r"simulated-time bound of 40 us", r"s_axis_x: tvalid held \d+ cycles without tready"],
                           int(BOUND_US * 1000 / CLOCK_NS) + 1),
}


@pytest.mark.parametrize("sim", ["icarus", pytest.param("verilator", marks=pytest.mark.slow)])
def test_l2reg_stall_fails_in_time(sim):
    why = sim_available(sim)
    if why:
        pytest.skip(f"{sim} unavailable: {why}")
    from cocotb_tools.runner import get_runner

    from rtl_gen.registry import get
    cd = get("l2reg")
    params = cd.resolve(cd.configs["small"])
    src = rtl_dir("l2reg", "small") / "l2reg.v"
    key = hashlib.sha1(src.read_bytes()).hexdigest()[:10]
    build_dir = BUILD / "sim" / "l2reg_stall" / f"small-{key}" / sim
    runner = get_runner(sim)
    runner.build(sources=[src], hdl_toplevel="l2reg", build_dir=build_dir, timescale=("1ns", "1ps"),
                 build_args=["-Wall", "--output-split", "0"] if sim == "verilator" else [])
    xml = build_dir / "results.xml"
    xml.unlink(missing_ok=True)
    env = {"DUT_PARAMS": json.dumps(params), "DUT_CFG": "small", "DUT_SIM": sim,
           "PYTHONPATH": os.pathsep.join([str(REPO / "verif" / "l2reg"), str(REPO),
                                          os.environ.get("PYTHONPATH", "")])}
    t0 = time.time()
    try:
        runner.test(test_module="test_l2reg_stall", hdl_toplevel="l2reg", build_dir=build_dir,
                    test_dir=build_dir, extra_env=env, results_xml=str(xml))
    except SystemExit:
        pass
    wall = time.time() - t0
    assert wall < 120, f"the stalled tests took {wall:.0f} s of wall time"
    assert xml.exists(), "simulator produced no results file"
    seen = {}
    for tc in ET.parse(xml).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        fail = tc.find("failure")
        if fail is None:
            fail = tc.find("error")
        seen[tc.get("name")] = (fail, float(props.get("sim_time_duration", "nan")))
    assert set(seen) == set(EXPECT), f"ran {sorted(seen)}"
    for name, (pats, max_cycles) in EXPECT.items():
        fail, dur_ns = seen[name]
        assert fail is not None, f"{name}: passed, but the stall should have failed it"
        msg = (fail.get("message") or "") + (fail.text or "")
        for pat in pats + [r"seed=\d+"]:
            assert re.search(pat, msg), f"{name}: failure message lacks {pat!r}: {msg[:400]}"
        assert dur_ns <= max_cycles * CLOCK_NS, f"{name}: failed only after {dur_ns / CLOCK_NS:.0f} cycles"
