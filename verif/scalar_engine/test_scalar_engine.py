"""scalar_engine: SGD step alpha*(a-b) and SCD soft threshold, against
golden.pipearch_ops.scalar_sgd / scalar_scd.

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, RisingEdge

from golden import pipearch_ops as ops
from scoreboards.axis import AxisMonitor
from scoreboards.checker import pack_lanes
from verif.harness import dut_params, matrix, run_core
from verif.lanewise_cov import observe
from verif.lanewise_suite import check_ties, tie_operands, tie_scalar
from verif.tb_common import SubroutineTB, rand_words, record_bench, steady_cycles_per_beat, word_spec, sim_test
from verif.tb_common import start_while_busy

CORE = "scalar_engine"
OUT = "m_axis_res"
SGD, SCD = ops.SGD_MODE, ops.SCD_MODE


def make_tb(dut, src_p=1.0, sink_p=1.0):
    p = dut_params()
    tb = SubroutineTB(dut, ["s_axis_a", "s_axis_b"], {OUT: word_spec(OUT, p, fields=("step_mu", "x_new"))},
                      src_p=src_p, sink_p=sink_p)
    observe(CORE, dut)   # functional coverage (verif/lanewise_cov.py) of what the DUT does
    return tb


def model(fmt, mode, a, b, alpha, al):
    """Expected (low word, high word) per pair."""
    if mode == SGD:
        return ops.scalar_sgd(fmt, a, b, alpha), np.zeros(len(a), dtype=np.int64)
    return ops.scalar_scd(fmt, a, b, alpha, al)


def branches(fmt, a, b, alpha, al):
    """Which soft-threshold branch each SCD pair takes (0: d > al, 1: d < -al, 2: else)."""
    ag = fmt.mul(alpha, np.asarray(a, dtype=np.int64))
    d = fmt.sub(b, ag)
    return np.where(d > al, 0, np.where(d < -al, 1, 2))


def queue(tb, mode, a, b, alpha, al):
    """Queue given pairs and their expected results; returns the cfg fields."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    tb.send_words("s_axis_a", a)
    tb.send_words("s_axis_b", b)
    lo, hi = model(tb.fmt, mode, a, b, alpha, al)
    n = len(a)
    for k in range(n):
        tb.exp[OUT].append((pack_lanes([lo[k], hi[k]], tb.p["W"]), 1 if k == n - 1 else 0))
    return dict(iterations=n, mode=mode, alpha=alpha, alpha_lambda=al)


def rand_threshold(rng, fmt, kind=None):
    """A threshold word of either sign.  ``kind``: "min" (the most negative value
    -2**(W-1), whose exact negation needs W+1 bits), "neg", "pos", "rail" (one of the
    rails), None (any of these, a quarter each)."""
    if kind is None:
        kind = ("min", "neg", "pos", "rail")[int(rng.integers(0, 4))]
    if kind == "min":
        return fmt.min_int
    if kind == "rail":
        return int(rng.choice([fmt.min_int, fmt.min_int + 1, fmt.max_int, fmt.max_int - 1, -1, 0, 1]))
    v = int(rng.integers(1, fmt.one // 2 + 1))
    return -v if kind == "neg" else v


def job(tb, iters, mode=None, alpha=None, al=None, extreme=0.1, scale=None):
    """Queue one initiation's random data and expectations; returns the cfg fields."""
    fmt = tb.fmt
    if mode is None:
        mode = int(tb.rng.integers(0, 2))
    if alpha is None:
        alpha = int(rand_words(tb.rng, (), fmt, 0.1, 1.0))
    if al is None:
        al = rand_threshold(tb.rng, fmt)
    a = rand_words(tb.rng, (iters,), fmt, extreme, scale)
    b = rand_words(tb.rng, (iters,), fmt, extreme, scale)
    return queue(tb, mode, a, b, alpha, al)


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 4.6 us on default
async def random_jobs(dut):
    """Random modes, step sizes (both signs), thresholds, iterations and data; bubbles and
    backpressure.  The SCD thresholds are stratified so every run sees each kind: the most
    negative word -2**(W-1), a negative, a positive and a rail value, in random order; the
    data has rails in a quarter of the words, so x - alpha*g saturates at the most negative
    value against the most negative threshold (where the exact negation of the threshold
    matters: a W-bit negation wraps there)."""
    tb = make_tb(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    for k, (mode, al, iters, extreme) in enumerate(random_job_plan(tb)):
        await tb.initiate(**job(tb, iters, mode=mode, al=al, extreme=extreme))
        await tb.wait_done(k + 1)
    await tb.finish()


def random_job_plan(tb):
    """(mode, threshold, iterations, rail fraction) of random_jobs' 12 initiations: SGD and
    SCD alternate; the six SCD thresholds are two most-negative words, a negative, a
    positive and two rails, in random order; the most-negative jobs have at least 8 pairs
    and rails in 60 % of their words."""
    mi = min(tb.p["MAX_ITER"], 20)
    kinds = list(tb.rng.permutation(["min", "min", "neg", "pos", "rail", "rail"]))
    plan = []
    for k in range(12):
        if k % 2 == SGD:
            plan.append((SGD, None, int(tb.rng.integers(1, mi + 1)), 0.25))
        else:
            kind = kinds[k // 2]
            lo = min(8, mi) if kind == "min" else 1
            plan.append((SCD, rand_threshold(tb.rng, tb.fmt, kind), int(tb.rng.integers(lo, mi + 1)),
                         0.6 if kind == "min" else 0.25))
    return plan


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 7.2 us on default
async def sgd_corners(dut):
    """SGD with operands and alpha at the rails: a - b and the product saturate, never wrap."""
    tb = make_tb(dut, sink_p=0.7)
    await tb.reset()
    fmt = tb.fmt
    rails = [fmt.min_int, fmt.max_int, fmt.min_int + 1, fmt.max_int - 1, 0, 1, -1, fmt.one, -fmt.one]
    a = np.array([x for x in rails for _ in rails], dtype=np.int64)
    b = np.array([y for _ in rails for y in rails], dtype=np.int64)
    mi = tb.p["MAX_ITER"]
    k = 0
    for alpha in (fmt.max_int, fmt.min_int, fmt.one, -fmt.one, -1, 1, 0):
        for s in range(0, len(a), mi):
            await tb.initiate(**queue(tb, SGD, a[s:s + mi], b[s:s + mi], alpha, 0))
            k += 1
            await tb.wait_done(k)
    await tb.finish()


@sim_test(timeout_us={"default": 80, "*": 320})  # measured 13.3 us on default
async def scd_branches(dut):
    """SCD: all three soft-threshold branches (asserted covered), the boundaries d = +-al,
    al = 0 and al at the rails, and saturation of alpha*g, x - alpha*g, ag +- al and x - mu."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    fmt = tb.fmt
    one = fmt.one
    mi = tb.p["MAX_ITER"]
    seen = np.zeros(3, dtype=np.int64)
    k = 0

    async def run(a, b, alpha, al):
        nonlocal k
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        np.add.at(seen, branches(fmt, a, b, alpha, al), 1)
        for s in range(0, len(a), mi):
            await tb.initiate(**queue(tb, SCD, a[s:s + mi], b[s:s + mi], alpha, al))
            k += 1
            await tb.wait_done(k)

    # directed: alpha = 1.0 so ag = g and d = x - g
    al = one // 4
    g = np.array([0, 0, 0, 0, 0, one, -one, 0, 0], dtype=np.int64)
    x = np.array([al + 1, -al - 1, al, -al, 0, 0, 0, one, -one], dtype=np.int64)
    await run(g, x, one, al)
    # al = 0: only the exact d == 0 case keeps x
    await run([0, 1, -1, one, 5], [0, 0, 0, one, 7], one, 0)
    # rails: saturation everywhere, al at both rails
    rails = np.array([fmt.min_int, fmt.max_int, 0, 1, -1, one, -one], dtype=np.int64)
    ga = np.repeat(rails, len(rails))
    xa = np.tile(rails, len(rails))
    for alpha in (fmt.max_int, fmt.min_int, one):
        for al in (fmt.max_int, fmt.min_int, 0, one):
            await run(ga, xa, alpha, al)
    # random with a small threshold and small step
    n = min(mi, 40)
    await run(rand_words(tb.rng, (n,), fmt, 0.1, 2.0), rand_words(tb.rng, (n,), fmt, 0.1, 2.0), one // 2, one // 8)
    assert np.all(seen > 0), f"soft-threshold branches not all covered: {seen.tolist()}"
    dut._log.info("soft-threshold branch counts (d>al, d<-al, else): %s", seen.tolist())
    await tb.finish()


@sim_test(timeout_us={"default": 590, "*": 2360})  # measured 140.6 us on default
async def iteration_edges(dut):
    """Iterations 1 and MAX_ITER in both modes."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    jobs = [(1, SGD), (1, SCD), (tb.p["MAX_ITER"], SGD), (tb.p["MAX_ITER"], SCD), (2, SCD)]
    for k, (i, m) in enumerate(jobs):
        await tb.initiate(**job(tb, i, m))
        await tb.wait_done(k + 1)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.9 us on default
async def back_to_back(dut):
    """Start again in the cycle done is seen; no bubbles, sink always ready; mode toggles."""
    tb = make_tb(dut)
    await tb.reset()
    fields = [job(tb, n, k % 2) for k, n in enumerate([7, 1, 16, 3, 1])]
    await tb.initiate(**fields[0])
    for k in range(1, len(fields)):
        await tb.wait_done(k)
        await tb.initiate(**fields[k])
    await tb.wait_done(len(fields))
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.4 us on default
async def invalid_initiation(dut):
    """iterations 0 and above MAX_ITER: cfg_err, done, nothing consumed."""
    tb = make_tb(dut)
    await tb.reset()
    bad = [dict(iterations=0, mode=SGD, alpha=1, alpha_lambda=0)]
    if tb.p["MAX_ITER"] + 1 < (1 << len(dut.cfg_iterations)):
        bad.append(dict(iterations=tb.p["MAX_ITER"] + 1, mode=SCD, alpha=1, alpha_lambda=0))
    tb.send_words("s_axis_a", [3])
    tb.send_words("s_axis_b", [5])
    for k, f in enumerate(bad):
        await tb.initiate(**f)
        await tb.wait_done(k + 1, timeout=10)
        assert int(dut.cfg_err.value) == 1, f"cfg_err not set for {f}"
        assert int(dut.busy.value) == 0
    await ClockCycles(dut.clk, 5)
    assert tb.src["s_axis_a"].sent == 0, "an invalid initiation consumed input"
    assert int(dut.m_axis_res_tvalid.value) == 0
    alpha = tb.fmt.one
    lo, hi = model(tb.fmt, SCD, np.array([3]), np.array([5]), alpha, 1)
    tb.exp[OUT].append((pack_lanes([lo[0], hi[0]], tb.p["W"]), 1))
    await tb.initiate(iterations=1, mode=SCD, alpha=alpha, alpha_lambda=1)
    await RisingEdge(dut.clk)
    assert int(dut.cfg_err.value) == 0
    await tb.wait_done(len(bad) + 1)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.7 us on default
async def reset_mid_stream(dut):
    """Reset in the middle of a job: the core returns to idle and the next jobs are exact."""
    tb = make_tb(dut, src_p=0.9, sink_p=0.5)
    await tb.reset()
    await tb.initiate(**job(tb, min(40, tb.p["MAX_ITER"]), SCD))
    await ClockCycles(dut.clk, 12)
    assert int(dut.busy.value) == 1
    await tb.abort_and_reset()
    assert int(dut.busy.value) == 0 and int(dut.m_axis_res_tvalid.value) == 0
    await tb.initiate(**job(tb, 5, SGD))
    await tb.wait_done(1)
    await tb.initiate(**job(tb, 4, SCD))
    await tb.wait_done(2)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.9 us on default
async def negative_thresholds(dut):
    """SCD with thresholds of both signs, the most negative word included, against data on
    both sides of +-al (d = al, -al and one LSB around them) and at the rails."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    fmt, one = tb.fmt, tb.fmt.one
    mi = tb.p["MAX_ITER"]
    k = 0
    for al in (fmt.min_int, fmt.min_int + 1, -one, -1, 0, 1, one // 4, fmt.max_int):
        # alpha = 1.0, g = 0: d = x; probe x around +-al (where representable) and the rails
        xs = {fmt.min_int, fmt.min_int + 1, fmt.max_int, 0, -1, 1}
        for c in (al, -al):
            xs.update(c + e for e in (-1, 0, 1))
        x = np.array(sorted(v for v in xs if fmt.min_int <= v <= fmt.max_int), dtype=np.int64)
        g = np.zeros(len(x), dtype=np.int64)
        g[::3] = one        # some with alpha*g != 0, so ag +- al saturates too
        for s0 in range(0, len(x), mi):
            await tb.initiate(**queue(tb, SCD, g[s0:s0 + mi], x[s0:s0 + mi], one, al))
            k += 1
            await tb.wait_done(k)
    await tb.finish()


@sim_test()
async def rounding_ties(dut):
    """Directed rounding ties on both rounding products: SGD alpha*sat(a - b) and SCD
    alpha*g, each exactly half an LSB from a word, both signs (alpha = +-odd*2**j against
    +-odd*2**(F-1-j) for j = 0, F/2, F-1 and two random j).  At the production format
    Q(32,16) in the default config."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    fmt, F = tb.fmt, tb.fmt.F
    with pytest.raises(AssertionError):           # the stimulus check fails on a non-tie
        check_ties(fmt, [(1 << (F - 1)) + 1, -(1 << (F - 1))])
    n = min(tb.p["MAX_ITER"], 16)
    js = [0, F // 2, F - 1] + [int(x) for x in tb.rng.integers(0, F, size=2)]
    k = ties = 0
    for j in js:
        for sign in (1, -1):
            alpha = tie_scalar(tb.rng, fmt, j, sign=sign)
            op = tie_operands(tb.rng, fmt, j, (n,))
            ties += check_ties(fmt, [alpha * int(v) for v in op])
            b = rand_words(tb.rng, (n,), fmt, 0.0, 2.0)
            a = op + b                      # a - b = op exactly (no saturation at +-6.0)
            await tb.initiate(**queue(tb, SGD, a, b, alpha, 0))
            await tb.wait_done(k + 1)
            x = rand_words(tb.rng, (n,), fmt, 0.0, 2.0)
            await tb.initiate(**queue(tb, SCD, op, x, alpha, rand_threshold(tb.rng, fmt)))
            k += 2
            await tb.wait_done(k)
    dut._log.info("%d rounding ties per mode", ties)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.4 us on default
async def start_while_busy_ignored(dut):
    """Start pulses with other cfg fields (other mode, step, threshold and iterations,
    then an invalid iteration count) while busy: the job in flight completes exactly as
    first configured (one done, no cfg_err), the extra starts consume and produce nothing,
    and the next legal start works."""
    tb = make_tb(dut, src_p=0.5, sink_p=0.5)
    await tb.reset()
    fmt = tb.fmt
    n = min(tb.p["MAX_ITER"], 32)
    await tb.initiate(**job(tb, n, SCD, al=rand_threshold(tb.rng, fmt)))
    given = await start_while_busy(dut, tb.clk, dict(iterations=1, mode=SGD, alpha=fmt.max_int,
                                                     alpha_lambda=fmt.min_int), pulses=3)
    given += await start_while_busy(dut, tb.clk, dict(iterations=0, mode=SCD, alpha=0, alpha_lambda=0), pulses=1)
    dut._log.info("%d starts given while busy", given)
    await tb.wait_done(1)
    await ClockCycles(dut.clk, 30)
    assert tb.done_count == 1, f"{tb.done_count} done pulses for one accepted start"
    assert int(dut.cfg_err.value) == 0, "cfg_err set by an ignored start"
    assert int(dut.busy.value) == 0, "busy after the only accepted job finished"
    for name in ("s_axis_a", "s_axis_b"):
        assert tb.src[name].sent == n, f"{name}: {tb.src[name].sent} words consumed, expected {n}"
    await tb.initiate(**job(tb, 3, SGD))
    await tb.wait_done(2)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.4 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expectation (in the upper word), a missing expectation
    (extra output) and an unmet expectation (dropped output) must each fail the scoreboard."""
    tb = make_tb(dut)
    await tb.reset()
    f = job(tb, 4, SCD)
    q = tb.exp[OUT]
    d, last = q[2]
    q[2] = (d ^ (1 << tb.p["W"]), last)   # corrupt the LSB of x_new
    await tb.initiate(**f)
    await tb.wait_done(1)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    f = job(tb, 3, SGD)
    q.pop()
    await tb.initiate(**f)
    await tb.wait_done(2)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.errors == 1, "extra output not detected"
    tb.sb.errors = 0
    q.append((123, 1))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.9 us on default
async def bench_throughput(dut):
    """Benchmark (reported by `make bench`, not asserted): cycles per input pair with no
    source bubbles and an always-ready sink; ideal is 1.0.  Also records the latency."""
    tb = make_tb(dut)
    inmon = AxisMonitor(dut, "s_axis_a", dut.clk)  # created with tb's monitors: same cycle count
    await tb.reset()
    n = min(256, tb.p["MAX_ITER"])
    await tb.initiate(**job(tb, n, SCD, extreme=0.0))
    await tb.wait_done(1)
    await tb.finish()
    t_in = inmon.times
    t_out = tb.mon[OUT].times
    assert len(t_in) == n
    rec = record_bench(CORE, pairs=n, cycles_per_pair=steady_cycles_per_beat(t_in), ideal=1.0,
                       out_cycles_per_result=steady_cycles_per_beat(t_out),
                       latency_cycles=t_out[-1] - t_in[-1])
    dut._log.info("bench: %s", rec)


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("small", "icarus"), ("default", "ghdl")]))
def test_scalar_engine(cfg, sim):
    run_core(CORE, cfg, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
