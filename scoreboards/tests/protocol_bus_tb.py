"""cocotb side of test_protocol_sim.py: the protocol checkers on a simulated bus.

``protocol_bus.v`` only declares the signals; these tests drive both sides of every
port, first legal traffic (no violation may be reported), then one deliberate
violation at a time (the checker must count exactly it), and finally through
:func:`~scoreboards.protocol.guard_tests`, which must fail a test whose bus breaks a
rule and pass one whose bus does not."""
from __future__ import annotations

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, FallingEdge
from cocotb.types import Logic

from scoreboards.protocol import SLVERR, attach_all, guard_tests

AXIS = ("s_axis_a_tdata", "s_axis_a_tlast", "s_axis_a_tuser", "s_axis_a_tkeep", "s_axis_a_tvalid",
        "s_axis_a_tready")


async def setup(dut):
    """Clock, every input 0, a reset; returns the checker on every port."""
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    for h in dut:
        if h._name != "clk" and not isinstance(h, HierarchyObject):
            h.value = 0
    pc = attach_all(dut)
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    return pc


async def cyc(dut, **sigs):
    """Drive ``sigs`` for one cycle (set at the falling edge, sampled at the next rising edge)."""
    await FallingEdge(dut.clk)
    for k, v in sigs.items():
        getattr(dut, k).value = v


async def idle(dut, n=2):
    for _ in range(n):
        await cyc(dut)


def rule(pc, name):
    return next(r for r in pc.rules if r.name == name)


# ----------------------------------------------------------------- legal traffic
async def legal_axis(dut):
    p = "s_axis_a_"
    await cyc(dut, **{p + "tdata": 1, p + "tlast": 0, p + "tuser": 2, p + "tkeep": 0xF, p + "tvalid": 1,
                      p + "tready": 0})
    await cyc(dut)
    await cyc(dut, **{p + "tready": 1})
    await cyc(dut, **{p + "tdata": 2, p + "tlast": 1, p + "tkeep": 0x3})
    await cyc(dut, **{p + "tvalid": 0, p + "tdata": 9})


async def legal_axi_write(dut, addr, beats, early_w=False):
    if not early_w:
        await cyc(dut, m_axi_awaddr=addr, m_axi_awlen=beats - 1, m_axi_awsize=4, m_axi_awburst=1,
                  m_axi_awvalid=1, m_axi_awready=0)
        await cyc(dut, m_axi_awready=1)
        await cyc(dut, m_axi_awvalid=0, m_axi_awready=0)
    for i in range(beats):
        await cyc(dut, m_axi_wdata=i + 10, m_axi_wstrb=0xFFFF, m_axi_wlast=int(i == beats - 1), m_axi_wvalid=1,
                  m_axi_wready=i % 2)
        if i % 2 == 0:
            await cyc(dut, m_axi_wready=1)
    await cyc(dut, m_axi_wvalid=0, m_axi_wlast=0)
    if early_w:
        await cyc(dut, m_axi_awaddr=addr, m_axi_awlen=beats - 1, m_axi_awsize=4, m_axi_awburst=1,
                  m_axi_awvalid=1, m_axi_awready=1)
        await cyc(dut, m_axi_awvalid=0, m_axi_awready=0)
    await cyc(dut, m_axi_bvalid=1, m_axi_bresp=0, m_axi_bready=0)
    await cyc(dut, m_axi_bready=1)
    await cyc(dut, m_axi_bvalid=0, m_axi_bready=0)


async def legal_axi_read(dut, addr, beats):
    await cyc(dut, m_axi_araddr=addr, m_axi_arlen=beats - 1, m_axi_arsize=4, m_axi_arburst=1, m_axi_arvalid=1,
              m_axi_arready=1)
    await cyc(dut, m_axi_arvalid=0, m_axi_arready=0, m_axi_rready=1)
    for i in range(beats):
        await cyc(dut, m_axi_rdata=i, m_axi_rresp=0, m_axi_rlast=int(i == beats - 1), m_axi_rvalid=1)
    await cyc(dut, m_axi_rvalid=0, m_axi_rlast=0)


async def legal_axil(dut):
    await cyc(dut, s_axil_awaddr=4, s_axil_awvalid=1, s_axil_awready=0, s_axil_wdata=7, s_axil_wstrb=0xF,
              s_axil_wvalid=1, s_axil_wready=1)
    await cyc(dut, s_axil_wvalid=0, s_axil_wready=0, s_axil_awready=1)
    await cyc(dut, s_axil_awvalid=0, s_axil_awready=0)
    await cyc(dut, s_axil_bvalid=1, s_axil_bresp=0, s_axil_bready=0)
    await cyc(dut, s_axil_bready=1)
    await cyc(dut, s_axil_bvalid=0, s_axil_bready=0, s_axil_araddr=8, s_axil_arvalid=1, s_axil_arready=1)
    await cyc(dut, s_axil_arvalid=0, s_axil_arready=0, s_axil_rvalid=1, s_axil_rdata=0x55, s_axil_rresp=0,
              s_axil_rready=0)
    await cyc(dut)
    await cyc(dut, s_axil_rready=1)
    await cyc(dut, s_axil_rvalid=0, s_axil_rready=0)


@cocotb.test(timeout_time=30, timeout_unit="us")  # bounded (issue 11): each needs < 1 us
async def legal_traffic_passes(dut):
    pc = await setup(dut)
    assert sorted(r.name for r in pc.rules) == ["m_axi", "s_axil", "s_axis_a", "u_leaf.s_axis_q"]
    await legal_axis(dut)
    await legal_axi_write(dut, 0x1000, 4)
    await legal_axi_write(dut, 0x2000, 2, early_w=True)
    await legal_axi_write(dut, 0xFF0, 1)
    await legal_axi_read(dut, 0x3FC0, 4)
    await legal_axil(dut)
    await idle(dut)
    report = pc.assert_clean()
    dut._log.info("legal: %s", report)
    assert rule(pc, "s_axis_a").handshakes == 2
    assert rule(pc, "m_axi").count == {"ar": 1, "aw": 3, "w": 7, "r": 4, "b": 3}
    assert rule(pc, "s_axil").count == {"aw": 1, "w": 1, "b": 1, "ar": 1, "r": 1}


# ----------------------------------------------------------------- violations, one at a time
@cocotb.test(timeout_time=30, timeout_unit="us")  # bounded (issue 11): each needs < 1 us
async def axis_violations_caught(dut):
    pc = await setup(dut)
    r = rule(pc, "s_axis_a")
    p = "s_axis_a_"
    for i, field in enumerate(("tdata", "tlast", "tuser", "tkeep")):
        await cyc(dut, **{p + "tdata": 1, p + "tlast": 0, p + "tuser": 0, p + "tkeep": 0xF, p + "tvalid": 1,
                          p + "tready": 0})
        cur = {"tdata": 1, "tlast": 0, "tuser": 0, "tkeep": 0xF}[field]
        await cyc(dut, **{p + field: cur ^ 1})
        await cyc(dut, **{p + "tready": 1})
        await cyc(dut, **{p + "tvalid": 0, p + "tready": 0})
        await idle(dut)
        assert r.errors == i + 1, f"{field} changed under backpressure: {r.errors} violations, {r.messages}"
    await cyc(dut, **{p + "tvalid": 1, p + "tready": 0})
    await cyc(dut, **{p + "tvalid": 0})                        # tvalid withdrawn
    await idle(dut)
    assert r.errors == 5 and "VALID dropped" in r.messages[-1]
    await cyc(dut, **{p + "tvalid": Logic("X")})
    await cyc(dut, **{p + "tvalid": 0, p + "tready": Logic("Z")})
    await cyc(dut, **{p + "tready": 0})
    await idle(dut)
    assert r.errors == 7, r.messages
    assert "VALID is X/Z" in r.messages[5] and "READY is X/Z" in r.messages[6]
    assert pc.errors == 7  # nothing on the other ports


@cocotb.test(timeout_time=30, timeout_unit="us")  # bounded (issue 11): each needs < 1 us
async def axi_master_violations_caught(dut):
    pc = await setup(dut)
    r = rule(pc, "m_axi")
    # AR address changed while stalled
    await cyc(dut, m_axi_araddr=0x100, m_axi_arlen=0, m_axi_arsize=4, m_axi_arburst=1, m_axi_arvalid=1)
    await cyc(dut, m_axi_araddr=0x200)
    await cyc(dut, m_axi_arready=1)
    await cyc(dut, m_axi_arvalid=0, m_axi_arready=0, m_axi_rvalid=1, m_axi_rlast=1, m_axi_rready=1)
    await cyc(dut, m_axi_rvalid=0, m_axi_rlast=0)
    assert r.errors == 1 and "ar: payload changed" in r.messages[-1], r.messages
    # INCR burst crossing 4 KiB
    await legal_axi_read(dut, 0xFE0, 4)
    assert r.errors == 2 and "4 KiB" in r.messages[-1], r.messages
    # WLAST missing on the last beat
    await cyc(dut, m_axi_awaddr=0, m_axi_awlen=1, m_axi_awsize=4, m_axi_awburst=1, m_axi_awvalid=1,
              m_axi_awready=1)
    await cyc(dut, m_axi_awvalid=0, m_axi_awready=0, m_axi_wvalid=1, m_axi_wready=1, m_axi_wlast=0)
    await cyc(dut)
    await cyc(dut, m_axi_wvalid=0, m_axi_bvalid=1, m_axi_bready=1)
    await cyc(dut, m_axi_bvalid=0)
    assert r.errors == 3 and "WLAST missing" in r.messages[-1], r.messages
    # B before the write data
    await cyc(dut, m_axi_awaddr=0x40, m_axi_awlen=0, m_axi_awvalid=1, m_axi_awready=1)
    await cyc(dut, m_axi_awvalid=0, m_axi_awready=0, m_axi_bvalid=1, m_axi_bready=1)
    await cyc(dut, m_axi_bvalid=0, m_axi_wvalid=1, m_axi_wready=1, m_axi_wlast=1)
    await cyc(dut, m_axi_wvalid=0, m_axi_wlast=0)
    await idle(dut)
    assert r.errors == 4 and "BVALID" in r.messages[-1], r.messages
    # a burst never answered: found by the end-of-test rules
    await cyc(dut, m_axi_araddr=0x40, m_axi_arlen=3, m_axi_arvalid=1, m_axi_arready=1)
    await cyc(dut, m_axi_arvalid=0, m_axi_arready=0)
    await idle(dut)
    assert r.errors == 4
    try:
        pc.assert_clean()
    except AssertionError as e:
        msg = str(e)
    else:
        raise AssertionError("assert_clean passed a bus with violations")
    assert r.errors == 6 and "never completed" in msg and "never got a B" in msg, msg


@cocotb.test(timeout_time=30, timeout_unit="us")  # bounded (issue 11): each needs < 1 us
async def axil_slave_violations_caught(dut):
    pc = await setup(dut)
    r = rule(pc, "s_axil")
    # RDATA changed while RVALID && !RREADY
    await cyc(dut, s_axil_araddr=0, s_axil_arvalid=1, s_axil_arready=1)
    await cyc(dut, s_axil_arvalid=0, s_axil_arready=0, s_axil_rvalid=1, s_axil_rdata=1)
    await cyc(dut, s_axil_rdata=2)
    await cyc(dut, s_axil_rready=1)
    await cyc(dut, s_axil_rvalid=0, s_axil_rready=0)
    assert r.errors == 1 and "r: payload changed" in r.messages[-1], r.messages
    # BVALID without a request
    await cyc(dut, s_axil_bvalid=1, s_axil_bready=1)
    await cyc(dut, s_axil_bvalid=0, s_axil_bready=0)
    assert r.errors == 2 and "BVALID" in r.messages[-1], r.messages
    # error response where the datasheet promises OKAY
    await cyc(dut, s_axil_awvalid=1, s_axil_awready=1, s_axil_wvalid=1, s_axil_wready=1)
    await cyc(dut, s_axil_awvalid=0, s_axil_awready=0, s_axil_wvalid=0, s_axil_wready=0, s_axil_bvalid=1,
              s_axil_bresp=SLVERR, s_axil_bready=1)
    await cyc(dut, s_axil_bvalid=0, s_axil_bready=0, s_axil_bresp=0)
    assert r.errors == 3 and "BRESP=2" in r.messages[-1], r.messages
    # two responses for one read
    await cyc(dut, s_axil_arvalid=1, s_axil_arready=1)
    await cyc(dut, s_axil_arvalid=0, s_axil_arready=0, s_axil_rvalid=1, s_axil_rready=1)
    await cyc(dut, s_axil_rdata=3)
    await cyc(dut, s_axil_rvalid=0, s_axil_rready=0)
    await idle(dut)
    assert r.errors == 4 and "RVALID" in r.messages[-1], r.messages
    # a write never answered
    await cyc(dut, s_axil_awvalid=1, s_axil_awready=1, s_axil_wvalid=1, s_axil_wready=1)
    await cyc(dut, s_axil_awvalid=0, s_axil_awready=0, s_axil_wvalid=0, s_axil_wready=0)
    await idle(dut)
    try:
        pc.assert_clean()
    except AssertionError as e:
        assert "never got a B" in str(e), str(e)
    else:
        raise AssertionError("assert_clean passed a bus with violations")
    assert r.errors == 5


@cocotb.test(timeout_time=30, timeout_unit="us")
async def instance_port_violation_caught(dut):
    """A port of a core instantiated one level down is checked too (named inst.port)."""
    pc = await setup(dut)
    r = rule(pc, "u_leaf.s_axis_q")
    await cyc(dut, q_data=1, q_valid=1, q_ready=0)
    await cyc(dut, q_data=2)
    await cyc(dut, q_ready=1)
    await cyc(dut, q_valid=0, q_ready=0)
    await idle(dut)
    assert r.errors == 1 and r.handshakes == 1 and pc.errors == 1, r.messages


# ----------------------------------------------------------------- the guard every testbench uses
@cocotb.test(timeout_time=30, timeout_unit="us")  # bounded (issue 11): each needs < 1 us
async def guarded_legal(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    await cyc(dut, rst=1)
    await cyc(dut, rst=0)
    await legal_axis(dut)
    await legal_axi_write(dut, 0x100, 3)
    await legal_axil(dut)
    await idle(dut)


@cocotb.test(expect_fail=True, timeout_time=30, timeout_unit="us")
async def guarded_violation_fails_the_test(dut):
    """Passes only because the guard fails it: tkeep changes under backpressure."""
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    await cyc(dut, rst=1)
    await cyc(dut, rst=0)
    await cyc(dut, s_axis_a_tvalid=1, s_axis_a_tready=0, s_axis_a_tkeep=0xF)
    await cyc(dut, s_axis_a_tkeep=0x7)
    await cyc(dut, s_axis_a_tready=1)
    await cyc(dut, s_axis_a_tvalid=0, s_axis_a_tready=0)
    await idle(dut)


@cocotb.test(expect_fail=True, timeout_time=30, timeout_unit="us")
async def guarded_missing_response_fails_the_test(dut):
    """Passes only because the guard's end-of-test rule fails it: an AXI4-Lite read never answered."""
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    await cyc(dut, rst=1)
    await cyc(dut, rst=0)
    await cyc(dut, s_axil_arvalid=1, s_axil_arready=1)
    await cyc(dut, s_axil_arvalid=0, s_axil_arready=0)
    await idle(dut)


assert guard_tests({k: globals()[k] for k in ("guarded_legal", "guarded_violation_fails_the_test",
                                               "guarded_missing_response_fails_the_test")}) == 3
