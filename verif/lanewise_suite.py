"""cocotb test suite shared by the lane-parallel PipeArch cores (l2reg,
multiply_subtract, sigmoid_delta): two line streams in, one line stream out.

A core's test module defines an :class:`Adapter` and pulls the tests into its
namespace with ``globals().update(make_tests(adapter))``; cocotb discovers them there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from verif.harness import dut_params
from verif.tb_common import (SubroutineTB, line_spec, rand_words, record_bench, sim_test,
                             steady_cycles_per_beat)


@dataclass
class Adapter:
    core: str
    inputs: tuple[str, str]                 # the two line streams, e.g. ("s_axis_x", "s_axis_xold")
    golden: Callable                        # (fmt, a_lines, b_lines, k_per_line) -> y_lines
    knob: str                               # "reg" (cfg field word), "scalar" (s_axis_s) or "sigmoid"
    rails_knobs: Callable                   # fmt -> list of knob values for the saturation test
    timeouts_us: dict | None = None         # test name -> simulated-time bound (see tb_common.sim_test)


def _rand_knob(ad: Adapter, tb):
    if ad.knob == "sigmoid":
        return int(tb.rng.integers(0, 2))
    return int(rand_words(tb.rng, (), tb.fmt, 0.05, 0.5))


def job(ad: Adapter, tb, dim, iters, k=None, extreme=0.1, scale=None, a=None, b=None):
    """Queue one initiation's stimulus and expectation; returns its cfg fields."""
    L, fmt = tb.lanes(), tb.fmt
    n = dim * iters
    a = rand_words(tb.rng, (n, L), fmt, extreme, scale) if a is None else a
    b = rand_words(tb.rng, (n, L), fmt, extreme, scale) if b is None else b
    f = dict(dimension=dim, iterations=iters)
    if ad.knob == "scalar":
        ks = [(_rand_knob(ad, tb) if k is None else k) for _ in range(iters)]
        tb.send_words("s_axis_s", ks)
        kl = np.repeat(np.array(ks, dtype=np.int64), dim)
    else:
        kv = _rand_knob(ad, tb) if k is None else k
        f[ad.knob] = kv
        kl = kv
    tb.send_lines(ad.inputs[0], a)
    tb.send_lines(ad.inputs[1], b)
    tb.expect_lines("m_axis_y", ad.golden(fmt, a, b, kl), dim)
    return f


#: simulated-time bound (us) of each test (tb_common.sim_test): 4x the most any of l2reg,
#: multiply_subtract, sigmoid_delta needed on default/Verilator (comment) + 20 us, rounded up
#: to 10 us; other configs ("*", smaller netlists) 4x that
TIMEOUT_US = {
    "random_jobs": {"default": 40, "*": 160},  # 4.0 us
    "saturation_corners": {"default": 30, "*": 120},  # 0.9 us
    "dimension_edges": {"default": 100, "*": 400},  # 18.9 us
    "back_to_back": {"default": 30, "*": 120},  # 1.1 us
    "invalid_initiation": {"default": 30, "*": 120},  # 0.5 us
    "reset_mid_stream": {"default": 30, "*": 120},  # 0.7 us
    "rounding_ties": {"default": 30, "*": 120},  # 1.7 us
    "start_while_busy_ignored": {"default": 30, "*": 120},  # 2.0 us
    "checker_catches_corruption": {"default": 30, "*": 120},  # 0.4 us
    "bench_throughput": {"default": 40, "*": 160},  # 2.9 us
}


def make_tests(ad: Adapter) -> dict:
    def make_tb(dut, src_p=1.0, sink_p=1.0):
        p = dut_params()
        ins = list(ad.inputs) + (["s_axis_s"] if ad.knob == "scalar" else [])
        return SubroutineTB(dut, ins, {"m_axis_y": line_spec("m_axis_y", p)},
                            src_p=src_p, sink_p=sink_p)

    async def random_jobs(dut):
        """Random dimensions, iterations, knobs and data; random bubbles and backpressure."""
        tb = make_tb(dut, src_p=0.7, sink_p=0.6)
        await tb.reset()
        maxd = min(tb.p["MAX_DIM"], 12)
        for k in range(6):
            f = job(ad, tb, int(tb.rng.integers(1, maxd + 1)), int(tb.rng.integers(1, 4)))
            await tb.initiate(**f)
            await tb.wait_done(k + 1)
        await tb.finish()

    async def saturation_corners(dut):
        """Operands and knobs at the rails: saturate, never wrap."""
        tb = make_tb(dut)
        await tb.reset()
        fmt, L = tb.fmt, tb.lanes()
        rails = [fmt.min_int, fmt.max_int, fmt.min_int + 1, fmt.max_int - 1, 0, 1, -1,
                 fmt.one, -fmt.one, 9 * fmt.one if 9 * fmt.one <= fmt.max_int else fmt.max_int // 2]
        n = len(rails)
        a = np.array([[rails[(i + j) % n] for j in range(L)] for i in range(n)], dtype=np.int64)
        b = np.array([[rails[(3 * i + j + 1) % n] for j in range(L)] for i in range(n)], dtype=np.int64)
        for k, kv in enumerate(ad.rails_knobs(fmt)):
            await tb.initiate(**job(ad, tb, n, 1, k=kv, a=a, b=b))
            await tb.wait_done(k + 1)
        await tb.finish()

    async def dimension_edges(dut):
        """Dimension 1 and the maximum dimension; iterations 1 and several."""
        tb = make_tb(dut, src_p=0.8, sink_p=0.8)
        await tb.reset()
        for k, (d, i) in enumerate([(1, 1), (1, 5), (tb.p["MAX_DIM"], 1), (2, 3)]):
            await tb.initiate(**job(ad, tb, d, i))
            await tb.wait_done(k + 1)
        await tb.finish()

    async def back_to_back(dut):
        """Start again in the cycle done is seen; no bubbles, sink always ready."""
        tb = make_tb(dut)
        await tb.reset()
        fields = [job(ad, tb, d, 2) for d in (7, 1, 16, 3)]
        await tb.initiate(**fields[0])
        for k in range(1, len(fields)):
            await tb.wait_done(k)
            await tb.initiate(**fields[k])
        await tb.wait_done(len(fields))
        await tb.finish()

    async def invalid_initiation(dut):
        """dimension 0, iterations 0, fields above their maxima: cfg_err, done, nothing consumed."""
        tb = make_tb(dut)
        await tb.reset()
        bad = [dict(dimension=0, iterations=1), dict(dimension=1, iterations=0)]
        if tb.p["MAX_DIM"] + 1 < (1 << len(dut.cfg_dimension)):
            bad.append(dict(dimension=tb.p["MAX_DIM"] + 1, iterations=1))
        if tb.p["MAX_ITER"] + 1 < (1 << len(dut.cfg_iterations)):
            bad.append(dict(dimension=1, iterations=tb.p["MAX_ITER"] + 1))
        z = np.zeros((1, tb.lanes()), dtype=np.int64)
        f_ok = job(ad, tb, 1, 1, k=1, a=z, b=z)   # queued now: must wait for the valid start
        for k, f in enumerate(bad):
            await tb.initiate(**f)
            await tb.wait_done(k + 1, timeout=10)
            assert int(dut.cfg_err.value) == 1, f"cfg_err not set for {f}"
            assert int(dut.busy.value) == 0
        await ClockCycles(dut.clk, 5)
        assert all(s.sent == 0 for s in tb.src.values()), "an invalid initiation consumed input"
        await tb.initiate(**f_ok)
        await RisingEdge(dut.clk)
        assert int(dut.cfg_err.value) == 0, "cfg_err not cleared by a valid start"
        await tb.wait_done(len(bad) + 1)
        await tb.finish()

    async def reset_mid_stream(dut):
        """Reset in the middle of a job: back to idle, and the next job is exact."""
        tb = make_tb(dut, src_p=0.9, sink_p=0.5)
        await tb.reset()
        await tb.initiate(**job(ad, tb, 10, 4))
        await ClockCycles(dut.clk, 15)
        assert int(dut.busy.value) == 1
        await tb.abort_and_reset()
        assert int(dut.busy.value) == 0 and int(dut.m_axis_y_tvalid.value) == 0
        await tb.initiate(**job(ad, tb, 5, 2))
        await tb.wait_done(1)
        await tb.finish()

    async def checker_catches_corruption(dut):
        """Negative test: a corrupted expectation, an extra output and a dropped output
        must each make the scoreboard fail."""
        tb = make_tb(dut)
        await tb.reset()
        f = job(ad, tb, 4, 1)
        q = tb.exp["m_axis_y"]
        d, last = q[2]
        q[2] = (d ^ 1, last)          # flip the LSB of lane 0 of the third line
        await tb.initiate(**f)
        await tb.wait_done(1)
        await ClockCycles(dut.clk, 5)
        assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches} mismatches)"
        with pytest.raises(AssertionError):
            tb.sb.check()
        tb.sb.errors = tb.sb.mismatches = 0
        f = job(ad, tb, 3, 1)
        q.pop()                       # the DUT's last line is now unexpected
        await tb.initiate(**f)
        await tb.wait_done(2)
        await ClockCycles(dut.clk, 5)
        assert tb.sb.errors == 1, "extra output not detected"
        tb.sb.errors = 0
        q.append((123, 1))            # an output the DUT will never produce
        with pytest.raises(AssertionError, match="never received"):
            tb.sb.check()

    async def bench_throughput(dut):
        """Benchmark for `make bench` (reported, not asserted): cycles per output line
        with no bubbles and an always-ready sink; ideal 1.0."""
        tb = make_tb(dut)
        await tb.reset()
        await tb.initiate(**job(ad, tb, min(64, tb.p["MAX_DIM"]), 4, extreme=0.0))
        await tb.wait_done(1)
        await tb.finish()
        t = tb.mon["m_axis_y"].times
        record_bench(ad.core, unit="line", beats=len(t),
                     cycles_per_unit=steady_cycles_per_beat(t), ideal=1.0)

    fns = [random_jobs, saturation_corners, dimension_edges, back_to_back, invalid_initiation,
           reset_mid_stream, checker_catches_corruption, bench_throughput]
    out = {}
    for fn in fns:
        fn.__qualname__ = fn.__name__
        fn.__module__ = f"test_{ad.core}"
        out[fn.__name__] = sim_test((ad.timeouts_us or TIMEOUT_US).get(fn.__name__))(fn)
    return out
