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
from verif.lanewise_cov import observe
from verif.tb_common import (SubroutineTB, line_spec, rand_words, record_bench, sim_test,
                             start_while_busy, steady_cycles_per_beat)


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
    return rand_scalar(tb.rng, tb.fmt)


def rand_scalar(rng, fmt) -> int:
    """A scalar/knob word of either sign: one draw in eight is a rail (the most negative
    value -2**(W-1) among them), the rest uniform in +-0.5."""
    if rng.random() < 0.125:
        return int(rng.choice([fmt.min_int, fmt.min_int + 1, fmt.max_int, -1, 1]))
    return int(rand_words(rng, (), fmt, 0.0, 0.5))


# ---------------------------------------------------------------- rounding ties
# Q(W,F) rounds a full-width product P (2F fraction bits) to nearest, ties toward +inf:
# (P + 2**(F-1)) >> F.  A tie is P = (2k+1) * 2**(F-1): exactly half an LSB between two
# words.  p = odd * 2**j times q = odd * 2**(F-1-j) is always one.
def tie_scalar(rng, fmt, j: int, limit: float = 4.0, sign: int | None = None) -> int:
    """``+-odd * 2**j`` with magnitude <= ``limit`` (real units)."""
    lim = int(limit * fmt.one)
    v = (2 * int(rng.integers(0, max(1, lim >> (j + 1)))) + 1) << j
    sign = sign if sign is not None else (1 if rng.random() < 0.5 else -1)
    return sign * v


def tie_operands(rng, fmt, j: int, shape, limit: float = 4.0):
    """Words ``+-odd * 2**(F-1-j)`` (both signs, magnitude <= ``limit``): times any
    :func:`tie_scalar` ``(j)`` they make an exact rounding tie.  The first two words are
    the smallest of each sign, ``+-2**(F-1-j)``."""
    s = fmt.F - 1 - j
    lim = int(limit * fmt.one)
    odd = 2 * rng.integers(0, max(1, lim >> (s + 1)), size=shape, dtype=np.int64) + 1
    sign = np.where(rng.random(shape) < 0.5, 1, -1)
    v = (sign * odd) << s
    flat = v.reshape(-1)
    flat[:2] = [1 << s, -(1 << s)][:len(flat)]
    return v


def check_ties(fmt, prod):
    """Assert the stimulus is what a rounding-tie test needs: every full product ``prod``
    is exactly half an LSB from a word, both signs occur, and the specified rounding (half
    up) disagrees with ties-away-from-zero, ties-to-even and truncation on some of them
    (so a core rounding any of those ways fails the test)."""
    P = np.asarray(prod, dtype=object).reshape(-1)
    F = fmt.F
    half = 1 << (F - 1)
    assert all(int(x) % (1 << F) == half for x in P), "stimulus is not an exact rounding tie"
    assert any(x > 0 for x in P) and any(x < 0 for x in P), "ties of one sign only"
    spec = [(int(x) + half) >> F for x in P]
    away = [((abs(int(x)) + half) >> F) * (1 if x > 0 else -1) for x in P]
    even = [(int(x) >> F) + ((int(x) >> F) & 1) for x in P]
    trunc = [int(x) >> F for x in P]
    for name, alt in (("ties away from zero", away), ("ties to even", even), ("truncation", trunc)):
        assert alt != spec, f"tie stimulus cannot tell half-up rounding from {name}"
    return len(P)


def sigmoid_tie_inputs(fmt, per_segment: int = 2):
    """Inputs z of the PWL sigmoid (``golden.fixedpoint.sigmoid_fx``) whose product
    slope * offset is an exact rounding tie, up to ``per_segment`` per segment.  The slope
    and the offset are never negative, so sigmoid ties are positive only."""
    from golden.fixedpoint import sigmoid_table
    t = sigmoid_table(fmt)
    F = fmt.F
    off = np.arange(1 << t.shift, dtype=np.int64)
    zs = []
    for idx, sl in enumerate(t.slope):
        hit = off[((int(sl) * off) & ((1 << F) - 1)) == (1 << (F - 1))]
        zs += [-t.r_int + (idx << t.shift) + int(o) for o in hit[:per_segment]]
    assert zs, f"{fmt}: no sigmoid segment has a rounding tie"
    return np.array(zs, dtype=np.int64)


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
        tb = SubroutineTB(dut, ins, {"m_axis_y": line_spec("m_axis_y", p)},
                          src_p=src_p, sink_p=sink_p)
        observe(ad.core, dut)   # functional coverage (verif/lanewise_cov.py) of what the DUT does
        return tb

    async def random_jobs(dut):
        """Random dimensions, iterations, knobs (both signs, :func:`rand_scalar`) and data;
        random bubbles and backpressure.  One job, at a random position, has the most
        negative knob -2**(W-1) (scalar or regularisation word)."""
        tb = make_tb(dut, src_p=0.7, sink_p=0.6)
        await tb.reset()
        maxd = min(tb.p["MAX_DIM"], 12)
        at_min = int(tb.rng.integers(0, 6))
        for k in range(6):
            kv = tb.fmt.min_int if k == at_min and ad.knob != "sigmoid" else None
            f = job(ad, tb, int(tb.rng.integers(1, maxd + 1)), int(tb.rng.integers(1, 4)), k=kv)
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
        """Dimension 1 and the maximum dimension; iterations 1, several and (where MAX_ITER
        <= 256, the small config: at 4096 the job alone costs 4 s of Verilator wall time)
        the maximum."""
        tb = make_tb(dut, src_p=0.8, sink_p=0.8)
        await tb.reset()
        shapes = [(1, 1), (1, 5), (tb.p["MAX_DIM"], 1), (2, 3)]
        if tb.p["MAX_ITER"] <= 256:
            shapes.append((1, tb.p["MAX_ITER"]))
        for k, (d, i) in enumerate(shapes):
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

    async def rounding_ties(dut):
        """Directed rounding ties: every product the core rounds is exactly half an LSB
        from a word, both signs (multiplier knobs: the scalar or regularisation word
        +-odd*2**j against +-odd*2**(F-1-j) lanes for j = 0, F/2, F-1 and two random j;
        sigmoid: inputs whose slope*offset is a tie, positive by construction); then, for
        the multiplier knobs, products one LSB either side of a tie in every lane.  At the
        production format Q(32,16) in the default config."""
        tb = make_tb(dut, src_p=0.8, sink_p=0.8)
        await tb.reset()
        fmt, L, F = tb.fmt, tb.lanes(), tb.fmt.F
        # the stimulus check itself fails on a non-tie and on ties of one sign
        with pytest.raises(AssertionError):
            check_ties(fmt, [(1 << (F - 1)) + 1, -(1 << (F - 1))])
        with pytest.raises(AssertionError):
            check_ties(fmt, [1 << (F - 1), 3 << (F - 1)])
        k = 0
        if ad.knob == "sigmoid":
            zt = sigmoid_tie_inputs(fmt)
            n = -(-len(zt) // L)
            z = np.resize(zt, (n, L))
            tb.dut._log.info("%d sigmoid ties over %d lines", len(zt), n)
            for sig in (1, 0):
                await tb.initiate(**job(ad, tb, n, 1, k=sig, a=z, b=rand_words(tb.rng, (n, L), fmt, 0.0, 1.0)))
                k += 1
                await tb.wait_done(k)
        else:
            js = [0, F // 2, F - 1] + [int(x) for x in tb.rng.integers(0, F, size=2)]
            n = min(4, tb.p["MAX_DIM"])
            ties = 0
            for j in js:
                for sign in (1, -1):
                    kv = tie_scalar(tb.rng, fmt, j, sign=sign)
                    b = tie_operands(tb.rng, fmt, j, (n, L))
                    ties += check_ties(fmt, [kv * int(v) for v in b.reshape(-1)])
                    a = rand_words(tb.rng, (n, L), fmt, 0.0, 2.0)
                    await tb.initiate(**job(ad, tb, n, 1, k=kv, a=a, b=b))
                    k += 1
                    await tb.wait_done(k)
            tb.dut._log.info("%d rounding ties", ties)
            # one LSB of the product either side of a tie (fraction 2**(F-1) -+ 1): an odd
            # knob is invertible mod 2**F, so every lane's word is picked to land there.
            # Half-up adds exactly 2**(F-1): a rounding constant one too large carries on
            # 2**(F-1) - 1 (the ties above catch one too small)
            M = 1 << F
            for sign in (1, -1):
                kv = tie_scalar(tb.rng, fmt, 0, sign=sign)
                inv = pow(kv % M, -1, M)
                for frac in ((M >> 1) - 1, (M >> 1) + 1):
                    r = frac * inv % M
                    hi = tb.rng.integers(-3, 3, size=(n, L))
                    b = (r + hi * M).astype(np.int64)
                    P = [kv * int(v) for v in b.reshape(-1)]
                    assert all(x % M == frac for x in P), "not one LSB from a tie"
                    assert any(x > 0 for x in P) and any(x < 0 for x in P), "one sign only"
                    a = rand_words(tb.rng, (n, L), fmt, 0.0, 2.0)
                    await tb.initiate(**job(ad, tb, n, 1, k=kv, a=a, b=b))
                    k += 1
                    await tb.wait_done(k)
        await tb.finish()

    async def start_while_busy_ignored(dut):
        """Start pulses with other cfg fields (another shape and knob, then an invalid
        one) while busy: the job in flight completes exactly as first configured (one
        done, no cfg_err), the extra starts consume and produce nothing, and the next
        legal start works."""
        tb = make_tb(dut, src_p=0.5, sink_p=0.5)
        await tb.reset()
        dim, iters = min(8, tb.p["MAX_DIM"]), 4     # long enough (>= 32 lines) for 4 pulses
        f = job(ad, tb, dim, iters)
        await tb.initiate(**f)
        other = dict(dimension=1, iterations=1)
        if ad.knob != "scalar":
            other[ad.knob] = 1 - f[ad.knob] if ad.knob == "sigmoid" else tb.fmt.min_int
        given = await start_while_busy(dut, tb.clk, other, pulses=3)
        given += await start_while_busy(dut, tb.clk, dict(dimension=0, iterations=0), pulses=1)
        dut._log.info("%d starts given while busy", given)
        await tb.wait_done(1)
        await ClockCycles(dut.clk, 30)
        assert tb.done_count == 1, f"{tb.done_count} done pulses for one accepted start"
        assert int(dut.cfg_err.value) == 0, "cfg_err set by an ignored start"
        assert int(dut.busy.value) == 0, "busy after the only accepted job finished"
        n = dim * iters
        for name in ad.inputs:
            assert tb.src[name].sent == n, f"{name}: {tb.src[name].sent} lines consumed, expected {n}"
        if ad.knob == "scalar":
            assert tb.src["s_axis_s"].sent == iters, f"s_axis_s: {tb.src['s_axis_s'].sent} scalars consumed"
        await tb.initiate(**job(ad, tb, 2, 1))
        await tb.wait_done(2)
        await tb.finish()

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
           reset_mid_stream, rounding_ties, start_while_busy_ignored, checker_catches_corruption,
           bench_throughput]
    out = {}
    for fn in fns:
        fn.__qualname__ = fn.__name__
        fn.__module__ = f"test_{ad.core}"
        out[fn.__name__] = sim_test((ad.timeouts_us or TIMEOUT_US).get(fn.__name__))(fn)
    return out
