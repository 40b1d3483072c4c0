"""dot_sigmoid: res = S(sat(round(sum a*b))) per iteration, against golden.pipearch_ops.dot_sigmoid.

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import math

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, NextTimeStep, ReadOnly, RisingEdge

from golden import pipearch_ops as ops
from golden.fixedpoint import sigmoid_table
from scoreboards.axis import AxisMonitor
from verif.harness import dut_params, matrix, run_core
from verif.lanewise_cov import observe
from verif.lanewise_suite import check_ties, sigmoid_tie_inputs
from verif.tb_common import SubroutineTB, rand_words, record_bench, steady_cycles_per_beat, word_spec, sim_test
from verif.tb_common import start_while_busy

CORE = "dot_sigmoid"
OUT = "m_axis_res"


def make_tb(dut, src_p=1.0, sink_p=1.0):
    p = dut_params()
    tb = SubroutineTB(dut, ["s_axis_a", "s_axis_b"], {OUT: word_spec(OUT, p)},
                      src_p=src_p, sink_p=sink_p)
    observe(CORE, dut)   # functional coverage (verif/lanewise_cov.py) of what the DUT does
    return tb


def sigmoid_scale(tb, dim):
    """Operand range (in units of 1.0) that puts most dot products inside the sigmoid's
    +-8 input range: uniform words in +-s give a dot product of std s*s*sqrt(N)/3."""
    n = dim * tb.lanes()
    return max(math.sqrt(12.0 / math.sqrt(n)), 2.0 ** -(tb.fmt.F // 2))


def queue(tb, a, b, dim, sig):
    """Queue given lines and their expected results; returns the cfg fields."""
    tb.send_lines("s_axis_a", a)
    tb.send_lines("s_axis_b", b)
    res = ops.dot_sigmoid(tb.fmt, a, b, dim, bool(sig))
    n = len(res)
    tb.expect_words(OUT, res, lasts=[0] * (n - 1) + [1])
    return dict(dimension=dim, iterations=n, sigmoid=int(sig))


def job(tb, dim, iters, sig=None, extreme=0.1, scale=None):
    """Queue one initiation's random data and expectations; returns the cfg fields."""
    L, fmt = tb.lanes(), tb.fmt
    n = dim * iters
    if sig is None:
        sig = int(tb.rng.integers(0, 2))
    if scale is None and tb.rng.random() < 0.5:
        scale = sigmoid_scale(tb, dim)
    a = rand_words(tb.rng, (n, L), fmt, extreme, scale)
    b = rand_words(tb.rng, (n, L), fmt, extreme, scale)
    return queue(tb, a, b, dim, sig)


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 3.5 us on default
async def random_jobs(dut):
    """Random dimensions, iterations, sigmoid on/off and data; random bubbles and backpressure."""
    tb = make_tb(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    maxd = min(tb.p["MAX_DIM"], 12)
    for k in range(6):
        f = job(tb, int(tb.rng.integers(1, maxd + 1)), int(tb.rng.integers(1, 5)))
        await tb.initiate(**f)
        await tb.wait_done(k + 1)
    await tb.finish()


@sim_test(timeout_us={"default": 530, "*": 2120})  # measured 125.1 us on default
async def saturation_corners(dut):
    """Accumulator range (MAX_DIM lines of rail products: exact, no wrap), result saturation
    both ways, an intermediate sum far out of range that comes back in range, rail mixes."""
    tb = make_tb(dut, sink_p=0.7)
    await tb.reset()
    fmt, L, D = tb.fmt, tb.lanes(), tb.p["MAX_DIM"]
    mn, mx = fmt.min_int, fmt.max_int
    full = lambda v, n=D: np.full((n, L), v, dtype=np.int64)  # noqa: E731
    half = D // 2
    back = np.concatenate([full(mx, half), full(mn, D - half)]) if D > 1 else full(mx, 1)
    cases = [
        (full(mn), full(mn)),        # largest positive accumulator: saturates to max
        (full(mn), full(mx)),        # largest negative: saturates to min
        (full(mx), full(mx)),
        (full(mn), np.concatenate([full(mn, half), full(mx, D - half)])),  # out of range, then back
        (full(mn), back),
    ]
    rails = np.array([mn, mx, mn + 1, mx - 1, 0, 1, -1], dtype=np.int64)
    ra = rails[tb.rng.integers(0, len(rails), size=(D, L))]
    rb = rails[tb.rng.integers(0, len(rails), size=(D, L))]
    cases.append((ra, rb))
    k = 0
    for sig in (0, 1):
        for a, b in cases:
            await tb.initiate(**queue(tb, a, b, D, sig))
            k += 1
            await tb.wait_done(k)
    await tb.finish()


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 7.3 us on default
async def sigmoid_tails(dut):
    """Sigmoid (and identity) over a sweep of exact dot products: both tails, the clamp
    edges +-8, every segment boundary +-1 LSB, the rails."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    fmt, L = tb.fmt, tb.lanes()
    t = sigmoid_table(fmt)
    r = t.r_int
    zs = {fmt.min_int, fmt.max_int, fmt.min_int + 1, fmt.max_int - 1, 0, 1, -1,
          -r - 1, -r, -r + 1, r - 2, r - 1, r, r + 1, 2 * r, -2 * r}
    for k in range(t.segments + 1):
        e = -r + (k << t.shift)
        zs.update({e - 1, e, e + 1})
    zs = sorted(z for z in zs if fmt.min_int <= z <= fmt.max_int)
    # dimension 1: a = [z, 0, ...], b = [1.0, 0, ...] gives the dot product z exactly
    a = np.zeros((len(zs), L), dtype=np.int64)
    b = np.zeros((len(zs), L), dtype=np.int64)
    a[:, 0] = zs
    b[:, 0] = fmt.one
    lane = L - 1  # use another lane for half of them (exercises the tree)
    a[::2, lane], a[::2, 0] = a[::2, 0], 0
    b[::2, lane], b[::2, 0] = fmt.one, 0
    mi = tb.p["MAX_ITER"]
    done = 0
    for sig in (1, 0):
        for s in range(0, len(zs), mi):
            await tb.initiate(**queue(tb, a[s:s + mi], b[s:s + mi], 1, sig))
            done += 1
            await tb.wait_done(done)
    await tb.finish()


@sim_test(timeout_us={"default": 490, "*": 1960})  # measured 116.6 us on default
async def dimension_edges(dut):
    """Dimension 1 and the maximum dimension; iterations 1, several and MAX_ITER."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    jobs = [(1, 1, 0), (1, 5, 1), (tb.p["MAX_DIM"], 1, 1), (tb.p["MAX_DIM"], 2, 0),
            (1, tb.p["MAX_ITER"], 1), (2, 3, 0)]
    for k, (d, i, s) in enumerate(jobs):
        await tb.initiate(**job(tb, d, i, s))
        await tb.wait_done(k + 1)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.4 us on default
async def back_to_back(dut):
    """Start again in the cycle done is seen; no bubbles, sink always ready; sigmoid toggles."""
    tb = make_tb(dut)
    await tb.reset()
    dims = [7, 1, 16, 3]
    fields = [job(tb, min(d, tb.p["MAX_DIM"]), 2, k % 2) for k, d in enumerate(dims)]
    await tb.initiate(**fields[0])
    for k in range(1, len(fields)):
        await tb.wait_done(k)
        await tb.initiate(**fields[k])
    await tb.wait_done(len(fields))
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.5 us on default
async def invalid_initiation(dut):
    """dimension 0, iterations 0 and fields above their maximum: cfg_err, done, nothing consumed."""
    tb = make_tb(dut)
    await tb.reset()
    bad = [dict(dimension=0, iterations=1, sigmoid=0), dict(dimension=1, iterations=0, sigmoid=1)]
    if tb.p["MAX_DIM"] + 1 < (1 << len(dut.cfg_dimension)):
        bad.append(dict(dimension=tb.p["MAX_DIM"] + 1, iterations=1, sigmoid=0))
    if tb.p["MAX_ITER"] + 1 < (1 << len(dut.cfg_iterations)):
        bad.append(dict(dimension=1, iterations=tb.p["MAX_ITER"] + 1, sigmoid=0))
    z = np.zeros((1, tb.lanes()), dtype=np.int64)
    tb.send_lines("s_axis_a", z)
    tb.send_lines("s_axis_b", z)
    for k, f in enumerate(bad):
        await tb.initiate(**f)
        await tb.wait_done(k + 1, timeout=10)
        assert int(dut.cfg_err.value) == 1, f"cfg_err not set for {f}"
        assert int(dut.busy.value) == 0
    await ClockCycles(dut.clk, 5)
    assert tb.src["s_axis_a"].sent == 0, "an invalid initiation consumed input"
    assert int(dut.m_axis_res_tvalid.value) == 0
    # a valid initiation afterwards clears cfg_err and consumes the waiting line
    tb.expect_words(OUT, ops.dot_sigmoid(tb.fmt, z, z, 1, True), lasts=[1])
    await tb.initiate(dimension=1, iterations=1, sigmoid=1)
    await RisingEdge(dut.clk)
    assert int(dut.cfg_err.value) == 0
    await tb.wait_done(len(bad) + 1)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.0 us on default
async def reset_mid_stream(dut):
    """Reset in the middle of a job (mid dot product): idle afterwards, the next job exact
    (the accumulator must restart from zero)."""
    tb = make_tb(dut, src_p=0.9, sink_p=0.5)
    await tb.reset()
    await tb.initiate(**job(tb, min(10, tb.p["MAX_DIM"]), 4))
    await ClockCycles(dut.clk, 15)
    assert int(dut.busy.value) == 1
    await tb.abort_and_reset()
    assert int(dut.busy.value) == 0 and int(dut.m_axis_res_tvalid.value) == 0
    await tb.initiate(**job(tb, min(5, tb.p["MAX_DIM"]), 2, 0))
    await tb.wait_done(1)
    await tb.initiate(**job(tb, min(3, tb.p["MAX_DIM"]), 2, 1))
    await tb.wait_done(2)
    await tb.finish()


def dot_tie_lines(tb, dim, sign, parity=None):
    """``dim`` lines whose exact dot product is a rounding tie (half an LSB from a word) of
    the given sign: random lines (+-0.5), then lane 0 of the last line (1 LSB times the
    residue) fixes the product sum to 2**(F-1) modulo 2**F and lane 1 (1.0 times a word)
    sets the result to +-(m + 1/2) LSB with |m| < 2.0 in real units; ``parity`` fixes m's
    lowest bit (ties to even and half up agree on one parity, so a test needs both).
    Returns (a, b, sum)."""
    L, fmt, F = tb.lanes(), tb.fmt, tb.fmt.F
    a = rand_words(tb.rng, (dim, L), fmt, 0.0, 0.5)
    b = rand_words(tb.rng, (dim, L), fmt, 0.0, 0.5)
    a[-1, :2] = 0
    b[-1, :2] = 0
    s = sum(int(x) * int(y) for x, y in zip(a.reshape(-1), b.reshape(-1)))
    half = 1 << (F - 1)
    r0 = (half - s) % (1 << F)
    m = int(tb.rng.integers(0, 2 * fmt.one))
    if parity is not None:
        m = (m & ~1) | parity
    target = sign * ((m << F) + half)
    b1 = (target - s - r0) >> F
    assert (target - s - r0) % (1 << F) == 0 and fmt.min_int <= b1 <= fmt.max_int
    a[-1, 0], b[-1, 0] = 1, r0
    a[-1, 1], b[-1, 1] = fmt.one, b1
    return a, b, target


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 2.2 us on default
async def rounding_ties(dut):
    """Directed rounding ties on both rounding operators: dot products exactly half an
    LSB from a word, both signs (each iteration a tie; sigmoid off and on), and sigmoid
    inputs whose slope*offset product is a tie (positive by construction: slope and
    offset are never negative).  At the production format Q(32,16) in the default config."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    fmt, L = tb.fmt, tb.lanes()
    with pytest.raises(AssertionError):           # the stimulus check fails on a non-tie
        check_ties(fmt, [(1 << (fmt.F - 1)) + 1, -(1 << (fmt.F - 1))])
    k = ties = 0
    iters = min(8, tb.p["MAX_ITER"])
    for sig in (0, 1):
        for dim in sorted({1, min(3, tb.p["MAX_DIM"])}):
            lines_a, lines_b, sums = [], [], []
            for i in range(iters):
                a, b, t = dot_tie_lines(tb, dim, 1 if i % 2 == 0 else -1, parity=(i // 2) % 2)
                lines_a.append(a)
                lines_b.append(b)
                sums.append(t)
            ties += check_ties(fmt, sums)
            await tb.initiate(**queue(tb, np.concatenate(lines_a), np.concatenate(lines_b), dim, sig))
            k += 1
            await tb.wait_done(k)
    # sigmoid ties: dimension 1, a = [z, 0, ...], b = [1.0, 0, ...] gives the dot product z exactly
    zs = sigmoid_tie_inputs(fmt)
    a = np.zeros((len(zs), L), dtype=np.int64)
    b = np.zeros((len(zs), L), dtype=np.int64)
    a[:, 0], b[:, 0] = zs, fmt.one
    mi = tb.p["MAX_ITER"]
    for s0 in range(0, len(zs), mi):
        await tb.initiate(**queue(tb, a[s0:s0 + mi], b[s0:s0 + mi], 1, 1))
        k += 1
        await tb.wait_done(k)
    dut._log.info("%d dot-product ties, %d sigmoid ties", ties, len(zs))
    await tb.finish()


def dot_near_tie_lines(tb, dim, sign, delta):
    """``dim`` lines whose exact dot product (2F fraction bits) is ``delta`` (+-1) from a
    rounding tie of the given sign, made as :func:`dot_tie_lines` makes a tie: lane 0 of
    the last line (1 LSB times the residue) fixes the sum modulo 2**F, lane 1 (1.0 times a
    word) the rest.  Returns (a, b, sum)."""
    L, fmt, F = tb.lanes(), tb.fmt, tb.fmt.F
    a = rand_words(tb.rng, (dim, L), fmt, 0.0, 0.5)
    b = rand_words(tb.rng, (dim, L), fmt, 0.0, 0.5)
    a[-1, :2] = 0
    b[-1, :2] = 0
    s = sum(int(x) * int(y) for x, y in zip(a.reshape(-1), b.reshape(-1)))
    m = int(tb.rng.integers(0, 2 * fmt.one))
    target = sign * ((m << F) + (1 << (F - 1))) + delta
    r0 = (target - s) % (1 << F)
    b1 = (target - s - r0) >> F
    assert (target - s - r0) % (1 << F) == 0 and fmt.min_int <= b1 <= fmt.max_int
    a[-1, 0], b[-1, 0] = 1, r0
    a[-1, 1], b[-1, 1] = fmt.one, b1
    assert sum(int(x) * int(y) for x, y in zip(a.reshape(-1), b.reshape(-1))) == target
    return a, b, target


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.0 us on default
async def rounding_near_ties(dut):
    """Dot products one unit of the full product (2**-2F) below and above a rounding tie,
    both signs, dimensions 1 and 3, sigmoid off; exact against
    golden.pipearch_ops.dot_sigmoid.  One below a tie rounds down, one above rounds up:
    a product or a rounding constant one too large (a lane product with 1 in place of a 0
    fill bit, m021 of dot_sigmoid's campaign on the split-product netlist) turns the one
    below into a tie, which rounding_ties' exact ties cannot show (tie + 1 still rounds up)."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    fmt, F = tb.fmt, tb.fmt.F
    half = 1 << (F - 1)
    iters = min(8, tb.p["MAX_ITER"])
    k = 0
    for dim in sorted({1, min(3, tb.p["MAX_DIM"])}):
        lines_a, lines_b, sums = [], [], []
        for i in range(iters):
            a, b, t = dot_near_tie_lines(tb, dim, 1 if i % 2 == 0 else -1, -1 if (i // 2) % 2 == 0 else 1)
            lines_a.append(a)
            lines_b.append(b)
            sums.append(t)
        # the stimulus: one unit either side of a tie, both signs, and a sum one unit larger
        # rounds differently from every one below a tie
        assert {(t - half) % (1 << F) for t in sums} == {1, (1 << F) - 1}
        assert any(t > 0 for t in sums) and any(t < 0 for t in sums)
        assert all(((t + 1 + half) >> F) != ((t + half) >> F)
                   for t in sums if (t - half) % (1 << F) == (1 << F) - 1)
        await tb.initiate(**queue(tb, np.concatenate(lines_a), np.concatenate(lines_b), dim, 0))
        k += 1
        await tb.wait_done(k)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 2.0 us on default
async def start_while_busy_ignored(dut):
    """Start pulses with other cfg fields (another dimension, iteration count and sigmoid
    flag, then an invalid dimension) while busy: the job in flight completes exactly as
    first configured (one done, no cfg_err), the extra starts consume and produce nothing,
    and the next legal start works."""
    tb = make_tb(dut, src_p=0.5, sink_p=0.5)
    await tb.reset()
    dim, iters = min(8, tb.p["MAX_DIM"]), 4
    f = job(tb, dim, iters, 1)
    await tb.initiate(**f)
    given = await start_while_busy(dut, tb.clk, dict(dimension=1, iterations=1, sigmoid=0), pulses=3)
    given += await start_while_busy(dut, tb.clk, dict(dimension=0, iterations=1, sigmoid=0), pulses=1)
    dut._log.info("%d starts given while busy", given)
    await tb.wait_done(1)
    await ClockCycles(dut.clk, 30)
    assert tb.done_count == 1, f"{tb.done_count} done pulses for one accepted start"
    assert int(dut.cfg_err.value) == 0, "cfg_err set by an ignored start"
    assert int(dut.busy.value) == 0, "busy after the only accepted job finished"
    for name in ("s_axis_a", "s_axis_b"):
        assert tb.src[name].sent == dim * iters, f"{name}: {tb.src[name].sent} lines consumed"
    await tb.initiate(**job(tb, 2, 1, 0))
    await tb.wait_done(2)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.6 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expectation, a missing expectation (extra output) and
    an unmet expectation (dropped output) must each make the scoreboard fail."""
    tb = make_tb(dut)
    await tb.reset()
    f = job(tb, 2, 4, 0)
    q = tb.exp[OUT]
    d, last = q[2]
    q[2] = (d ^ 1, last)          # corrupt one result's LSB
    await tb.initiate(**f)
    await tb.wait_done(1)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    # extra output: run a job whose last expectation was removed
    tb.sb.errors = tb.sb.mismatches = 0
    f = job(tb, 3, 2, 1)
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


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 5.5 us on default
async def bench_throughput(dut):
    """Benchmark (reported by `make bench`, not asserted): cycles per input line (a and b
    handshakes) with no source bubbles and an always-ready sink, over several iterations;
    ideal is 1.0.  Also records the latency from the last line to the last result."""
    tb = make_tb(dut)
    inmon = AxisMonitor(dut, "s_axis_a", dut.clk)  # created with tb's monitors: same cycle count
    await tb.reset()
    dim, iters = min(64, tb.p["MAX_DIM"]), 8
    await tb.initiate(**job(tb, dim, iters, 1, extreme=0.0))
    await tb.wait_done(1)
    await tb.finish()
    t_in = inmon.times
    t_out = tb.mon[OUT].times
    assert len(t_in) == dim * iters
    rec = record_bench(CORE, lines=len(t_in), cycles_per_line=steady_cycles_per_beat(t_in), ideal=1.0,
                       latency_cycles=t_out[-1] - t_in[-1])
    dut._log.info("bench: %s", rec)


@sim_test(timeout_us={"default": 30, "*": 120})
async def one_result_per_cycle(dut):
    """Dimension 1, no source bubbles, always-ready sink: one result per line, and both the
    input lines and the results run at one per cycle in steady state (the 2-entry output
    FIFO keeps the pipeline enabled while it holds one result).  Asserted, unlike
    bench_throughput, whose 64-line iterations hide a stall at each result."""
    tb = make_tb(dut)
    inmon = AxisMonitor(dut, "s_axis_a", dut.clk)
    await tb.reset()
    iters = 32
    await tb.initiate(**job(tb, 1, iters, 1))
    await tb.wait_done(1)
    await tb.finish()
    t_in, t_out = inmon.times, tb.mon[OUT].times
    assert len(t_in) == iters and len(t_out) == iters
    cin, cout = steady_cycles_per_beat(t_in), steady_cycles_per_beat(t_out)
    assert cin == 1.0 and cout == 1.0, (
        f"dimension 1: {cin:.3f} cycles per input line and {cout:.3f} per result; promised 1.0")


@sim_test(timeout_us={"default": 30, "*": 120})
async def one_cycle_reset_while_streaming(dut):
    """A reset held for a single clock edge while a line is being taken (tvalid and tready
    high at that edge): the interrupted job leaves nothing behind -- no result appears
    afterwards -- and the next job is exact.  (A longer reset hides an input register
    that is not reset: its second edge reloads it with no line.)"""
    tb = make_tb(dut)
    await tb.reset()
    await tb.initiate(**job(tb, 1, 16, 0))
    for _ in range(200):
        await RisingEdge(dut.clk)
        if int(dut.s_axis_a_tvalid.value) and int(dut.s_axis_a_tready.value):
            break
    else:
        raise AssertionError("no line was taken within 200 cycles")
    await ReadOnly()
    assert int(dut.s_axis_a_tvalid.value) and int(dut.s_axis_a_tready.value), "lines must flow at the reset edge"
    await NextTimeStep()
    dut.rst.value = 1
    await RisingEdge(dut.clk)   # the one reset edge, with a line handshake on it
    dut.rst.value = 0
    for src in tb.src.values():
        src.kill()
        src.tvalid.value = 0
    for q in tb.exp.values():
        q.clear()
    tb.done_count = 0
    for k in range(30):
        await RisingEdge(dut.clk)
        assert int(dut.m_axis_res_tvalid.value) == 0, f"a result {k + 1} cycles after a one-cycle reset"
    assert int(dut.busy.value) == 0
    tb._make_sources(salt=2000)
    await tb.initiate(**job(tb, 2, 3, 1))
    await tb.wait_done(1)
    await tb.finish()


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("small", "icarus")]))
def test_dot_sigmoid(cfg, sim):
    run_core(CORE, cfg, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
