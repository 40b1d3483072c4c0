"""l2reg: per lane y = sat(x - sat(round(cfg_reg * x_old))), against golden.pipearch_ops.l2reg.

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from golden import pipearch_ops as ops
from verif.harness import dut_params, matrix, run_core
from verif.tb_common import SubroutineTB, line_spec, rand_words, record_bench, steady_cycles_per_beat

CORE = "l2reg"


def make_tb(dut, src_p=1.0, sink_p=1.0):
    p = dut_params()
    return SubroutineTB(dut, ["s_axis_x", "s_axis_xold"], {"m_axis_y": line_spec("m_axis_y", p)},
                        src_p=src_p, sink_p=sink_p)


def job(tb, dim, iters, c=None, extreme=0.1, scale=None):
    """Queue one initiation's data and expectations; returns the cfg fields."""
    L, fmt = tb.lanes(), tb.fmt
    n = dim * iters
    x = rand_words(tb.rng, (n, L), fmt, extreme, scale)
    xo = rand_words(tb.rng, (n, L), fmt, extreme, scale)
    if c is None:
        c = int(rand_words(tb.rng, (), fmt, 0.0, 0.5))
    tb.send_lines("s_axis_x", x)
    tb.send_lines("s_axis_xold", xo)
    tb.expect_lines("m_axis_y", ops.l2reg(fmt, x, xo, c), dim)
    return dict(dimension=dim, iterations=iters, reg=c)


@cocotb.test()
async def random_jobs(dut):
    """Random dimensions, iterations and data; random bubbles and backpressure."""
    tb = make_tb(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    maxd = min(tb.p["MAX_DIM"], 12)
    for k in range(6):
        f = job(tb, int(tb.rng.integers(1, maxd + 1)), int(tb.rng.integers(1, 4)))
        await tb.initiate(**f)
        await tb.wait_done(k + 1)
    await tb.finish()


@cocotb.test()
async def saturation_corners(dut):
    """Operands and the regularisation word at the rails: saturate, never wrap."""
    tb = make_tb(dut)
    await tb.reset()
    fmt, L = tb.fmt, tb.lanes()
    rails = [fmt.min_int, fmt.max_int, fmt.min_int + 1, fmt.max_int - 1, 0, 1, -1]
    for k, c in enumerate([fmt.max_int, fmt.min_int, -1, 1]):
        x = np.array([[rails[(i + j) % len(rails)] for j in range(L)] for i in range(len(rails))], dtype=np.int64)
        xo = np.array([[rails[(3 * i + j + 1) % len(rails)] for j in range(L)] for i in range(len(rails))], dtype=np.int64)
        tb.send_lines("s_axis_x", x)
        tb.send_lines("s_axis_xold", xo)
        tb.expect_lines("m_axis_y", ops.l2reg(fmt, x, xo, c), len(rails))
        await tb.initiate(dimension=len(rails), iterations=1, reg=c)
        await tb.wait_done(k + 1)
    await tb.finish()


@cocotb.test()
async def dimension_edges(dut):
    """Dimension 1 and the maximum dimension; iterations 1 and several."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    jobs = [(1, 1), (1, 5), (tb.p["MAX_DIM"], 1), (2, 3)]
    for k, (d, i) in enumerate(jobs):
        await tb.initiate(**job(tb, d, i))
        await tb.wait_done(k + 1)
    await tb.finish()


@cocotb.test()
async def back_to_back(dut):
    """Start again in the cycle done is seen; no bubbles, sink always ready.
    Checks one line per cycle in steady state and no gap between initiations."""
    tb = make_tb(dut)
    await tb.reset()
    dims = [7, 1, 16, 3]
    fields = [job(tb, d, 2) for d in dims]
    await tb.initiate(**fields[0])
    for k in range(1, len(fields)):
        await tb.wait_done(k)
        await tb.initiate(**fields[k])
    await tb.wait_done(len(fields))
    await tb.finish()


@cocotb.test()
async def invalid_initiation(dut):
    """dimension 0, iterations 0 and dimension above MAX_DIM: cfg_err, done, nothing consumed."""
    tb = make_tb(dut)
    await tb.reset()
    bad = [dict(dimension=0, iterations=1, reg=0), dict(dimension=1, iterations=0, reg=0)]
    if tb.p["MAX_DIM"] + 1 < (1 << len(dut.cfg_dimension)):
        bad.append(dict(dimension=tb.p["MAX_DIM"] + 1, iterations=1, reg=0))
    if tb.p["MAX_ITER"] + 1 < (1 << len(dut.cfg_iterations)):
        bad.append(dict(dimension=1, iterations=tb.p["MAX_ITER"] + 1, reg=0))
    # data is present on the inputs: it must not be consumed
    tb.send_lines("s_axis_x", np.zeros((1, tb.lanes()), dtype=np.int64))
    tb.send_lines("s_axis_xold", np.zeros((1, tb.lanes()), dtype=np.int64))
    for k, f in enumerate(bad):
        await tb.initiate(**f)
        await tb.wait_done(k + 1, timeout=10)
        assert int(dut.cfg_err.value) == 1, f"cfg_err not set for {f}"
        assert int(dut.busy.value) == 0
    await ClockCycles(dut.clk, 5)
    assert tb.src["s_axis_x"].sent == 0, "an invalid initiation consumed input"
    # a valid initiation afterwards clears cfg_err and consumes the waiting line
    c = 3
    tb.expect_lines("m_axis_y", ops.l2reg(tb.fmt, np.zeros((1, tb.lanes()), dtype=np.int64),
                                          np.zeros((1, tb.lanes()), dtype=np.int64), c), 1)
    await tb.initiate(dimension=1, iterations=1, reg=c)
    await RisingEdge(dut.clk)
    assert int(dut.cfg_err.value) == 0
    await tb.wait_done(len(bad) + 1)
    await tb.finish()


@cocotb.test()
async def reset_mid_stream(dut):
    """Reset in the middle of a job: the core returns to idle and the next job is exact."""
    tb = make_tb(dut, src_p=0.9, sink_p=0.5)
    await tb.reset()
    await tb.initiate(**job(tb, 10, 4))
    await ClockCycles(dut.clk, 15)
    assert int(dut.busy.value) == 1
    await tb.abort_and_reset()
    assert int(dut.busy.value) == 0 and int(dut.m_axis_y_tvalid.value) == 0
    await tb.initiate(**job(tb, 5, 2))
    await tb.wait_done(1)
    await tb.finish()


@cocotb.test()
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expectation, a missing expectation (extra output) and
    an unmet expectation (dropped output) must each make the scoreboard fail."""
    tb = make_tb(dut)
    await tb.reset()
    f = job(tb, 4, 1)
    q = tb.exp["m_axis_y"]
    d, last = q[2]
    q[2] = (d ^ 1, last)          # corrupt one lane's LSB
    await tb.initiate(**f)
    await tb.wait_done(1)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    # extra output: run a job whose last expectation was removed
    tb.sb.errors = tb.sb.mismatches = 0
    f = job(tb, 3, 1)
    q.pop()
    await tb.initiate(**f)
    await tb.wait_done(2)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.errors == 1, "extra output not detected"
    # dropped output: an expectation nothing will produce
    tb.sb.errors = 0
    q.append((123, 1))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@cocotb.test()
async def bench_throughput(dut):
    """Benchmark (reported by `make bench`, not asserted): cycles per output line with
    no source bubbles and an always-ready sink; ideal is 1.0."""
    tb = make_tb(dut)
    await tb.reset()
    dim, iters = min(64, tb.p["MAX_DIM"]), 4
    await tb.initiate(**job(tb, dim, iters, extreme=0.0))
    await tb.wait_done(1)
    await tb.finish()
    t = tb.mon["m_axis_y"].times
    record_bench(CORE, lines=len(t), cycles_per_line=steady_cycles_per_beat(t), ideal=1.0)


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("small", "icarus")]))
def test_l2reg(cfg, sim):
    run_core(CORE, cfg, sim)


def test_l2reg_vhdl_smoke():
    run_core(CORE, "small", "ghdl", testcase="random_jobs")
