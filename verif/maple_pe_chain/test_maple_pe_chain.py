"""maple_pe_chain: workloads mapped by golden.maple_mapping, run on the RTL, every dump beat
compared bit-exactly (index, value, tlast) with the instruction-level model, which is
itself cross-checked here against the golden.maple workload functions.

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from golden import maple
from golden import maple_mapping as mm
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.rounding_ties import (edge_targets, fit_tie_shrinking, odd_coef, rand_targets, require_ties,
                                 tie_operands, tie_scalar, tie_value)
from verif.tb_common import record_bench, sim_test, wait_until
from verif.tb_common import sim_seed as seed_of_test
from verif.funcov import enabled as fcov_enabled
from verif.maple_pe_chain import covermodel as fcov
from verif.stream_cov import FlowObserver

CORE = "maple_pe_chain"
OUT = "m_axis_out"
CMD = "s_axis_cmd"


class TB:
    def __init__(self, dut, src_p=1.0, sink_p=1.0):
        self.dut = dut
        self.p = dut_params()
        self.cp = mm.ChainParams.from_params(self.p)
        self.fmt = self.cp.fmt
        self.W, self.IDXW, self.M = self.cp.W, self.cp.IDXW, self.cp.M
        self.seed = seed_of_test()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, self.p)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        dut.rst.value = 1
        self.src_p = src_p
        self.src = AxisSource(dut, CMD, dut.clk, Gate(self.seed * 7 + 1, src_p))
        self.sink = AxisSink(dut, OUT, dut.clk, Gate(self.seed * 13 + 101, sink_p))
        self.mon = AxisMonitor(dut, OUT, dut.clk, reset=dut.rst)
        self.inmon = AxisMonitor(dut, CMD, dut.clk, reset=dut.rst)
        self.sb = FixedScoreboard(dut)
        spec = StreamSpec(OUT, [("value", 1, self.W, self.cp.F), ("index", 1, self.IDXW, 0)])
        self.exp = self.sb.add_stream(self.mon, spec)
        self.model = mm.ChainModel(self.cp)
        self.fcov_on = fcov_enabled()                # functional coverage: decoded commands, result classes
        self.cmd_dec = fcov.CmdDecoder(self.M, self.cp.LSD, self.cp.DBEAT)
        if self.fcov_on:
            self.inmon.add_callback(lambda t: self.cmd_dec(t))
            self.shadow = fcov.shadow_model(self.cp)
        self.fcov_pending = []
        FlowObserver(fcov.COV, dut, inputs=[CMD], outputs=[OUT])

    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def abort_and_reset(self):
        """Reset in the middle of work: drop queued stimulus and expectations."""
        self.src.kill()
        self.src.tvalid.value = 0
        await self.reset()
        self.src = AxisSource(self.dut, CMD, self.dut.clk, Gate(self.seed * 7 + 999, self.src_p))
        self.exp.clear()
        self.model = mm.ChainModel(self.cp)
        self.cmd_dec.reset()
        if self.fcov_on:
            self.shadow = fcov.shadow_model(self.cp)
            self.fcov_pending = []

    def pack(self, idx, val) -> int:
        return ((int(idx) & ((1 << self.IDXW) - 1)) << self.W) | (int(val) & ((1 << self.W) - 1))

    def load(self, words) -> list:
        """Queue a program (and its expected dump beats from the model)."""
        n0 = len(self.model.beats)
        self.model.run(words)
        if self.fcov_on:
            e0 = len(self.shadow.exact)
            self.shadow.run(words)
            self.fcov_pending += fcov.result_labels(self.shadow.exact[e0:], self.cp.F, self.W)
        beats = self.model.beats[n0:]
        for i, v, last in beats:
            self.exp.append((self.pack(i, v), last))
        for w in words:
            self.src.append(int(w))
        return beats

    async def run(self, words, timeout=400000) -> list:
        beats = self.load(words)
        await RisingEdge(self.clk)
        await wait_until(self.clk, lambda: not self.src._sendQ and not self.src.busy_sending() and not self.exp,
                         timeout - 1, f"{OUT}: dump beats missing", expect="every instruction taken and every dump beat out",
                         detail=lambda: f"{len(self.exp)} dump beats still expected, {len(self.src._sendQ)} words queued")
        for key in self.fcov_pending:          # every dump beat of the program delivered
            fcov.COV.sample(*key)
        self.fcov_pending = []
        return beats

    def rand(self, shape, lim=1.0):
        q = int(lim * self.fmt.one)
        return self.rng.integers(-q, q + 1, size=shape)

    async def finish(self, settle=30):
        await ClockCycles(self.clk, settle)
        await ReadOnly()
        assert self.mon.protocol_errors == 0, f"{self.mon.protocol_errors} AXI4-Stream hold violations"
        assert int(self.dut.err.value) == 0, "unexpected chain error"
        fcov.COV.sample("err", "clear")
        await RisingEdge(self.clk)
        self.sb.check()


def only(progs):
    assert len(progs) == 1
    return progs[0]


# ---------------------------------------------------------------- workloads
def kmeans_program(tb, N, D, K, dup=True):
    f = tb.fmt
    pts = tb.rand((N, D))
    means = tb.rand((K, D))
    if dup and K > 2:
        means[K - 1] = means[1]            # identical means: the smaller index must win
        pts[0] = means[1]
    xp, rp = maple.distance_augment(pts, means, f)
    plan = mm.plan_matmul(N, D + 1, K, "minmax", axis="rows", cp=tb.cp)
    prog = only(plan.programs(xp, rp.T))
    assign, score = maple.kmeans_assign_scores(pts, means, f)
    return plan, prog, assign, score


def topk_program(tb, items, users, d, k, dup=True):
    from golden.lrmf import lrmf
    rng = tb.rng
    nnz = 3 * items
    res = lrmf(rng.integers(0, items, nnz), rng.integers(0, users, nnz), rng.uniform(-1, 1, nnz),
               m=items, u=users, d=d, alpha=0.05, lam=0.01, epochs=2, tile=4,
               M0=rng.uniform(-0.5, 0.5, (items, d)), fmt=tb.fmt)
    Mi, U = np.asarray(res.M), np.asarray(res.U)
    if dup and items > 4:
        Mi[items - 2] = Mi[1]               # duplicate item rows: equal scores
    plan = mm.plan_matmul(items, d, users, "topk", axis="cols", k=k, cp=tb.cp)
    prog = only(plan.programs(Mi, U.T))
    ei, ev = maple.topk_recommend(Mi, U, k, tb.fmt)
    return plan, prog, ei, ev


def aggregation_program(tb, P, Fo, groups, dc, lim=1.0):
    prog, parts = [], []
    for g in range(groups):
        A = tb.rand((P, dc), lim)
        B = tb.rand((dc, Fo), lim)
        plan = mm.plan_matmul(P, dc, Fo, "rmw", cp=tb.cp)
        # alternate halves of the stores: group g+1 loads while group g's passes run
        prog += only(plan.programs(A, B, rmw_clear=g == 0, rmw_dump=g == groups - 1, buffer=g % 2,
                                   continued=g > 0, keep_armed=g < groups - 1))
        parts.append(tb.fmt.dot(A[:, None, :], B.T[None, :, :]).ravel())
    agg = maple.cnn_aggregate(np.concatenate(parts), np.tile(np.arange(P * Fo), groups), tb.fmt,
                              depth=P * Fo)
    return plan, prog, agg


# ---------------------------------------------------------------------------- tests
@sim_test(timeout_us={"default": 100, "*": 400})  # measured 18.9 us on default
async def kmeans_assign(dut):
    """K-means assignment (column mode, and split mode when a point is longer than a local
    store): the max of the min/max dump is the nearest mean; duplicates tie to the smaller
    index.  Random bubbles on the instruction stream, backpressure on the dump."""
    tb = TB(dut, src_p=0.8, sink_p=0.6)
    await tb.reset()
    for N, D, K in ((6, 3, 2 * tb.M + 1), (4, tb.cp.LSD + 3, tb.M // 2), (3, 2, 1)):
        plan, prog, assign, score = kmeans_program(tb, N, D, K)
        dut._log.info("kmeans N=%d D=%d K=%d: mode %s G=%d S=%d, %d words", N, D, K, plan.mode,
                      plan.G, plan.S, len(prog))
        beats = await tb.run(prog)
        assert [(b[0], b[1]) for b in beats[1::2]] == list(zip(assign.tolist(), score.tolist()))
    await tb.finish()


@sim_test(timeout_us={"default": 170, "*": 680})  # measured 35.8 us on default
async def topk_recommend(dut):
    """Top-k items per user from M U^T (M, U from golden LRMF), replicate mode: k = 1,
    k = KMAX, k = number of items (array length), more items than one A block, k larger
    than the stream; duplicate items."""
    tb = TB(dut, src_p=0.9, sink_p=0.5)
    await tb.reset()
    K = tb.cp.KMAX
    cases = [(10, 2, 3, 1), (3 * K, 2, 3, K), (K, 1, 4, K), (K // 2, 2, 2, K),
             (tb.cp.ilw // 2 + 5, 1, 4, 3)]
    for items, users, d, k in cases:
        plan, prog, ei, ev = topk_program(tb, items, users, d, k)
        dut._log.info("topk items=%d users=%d d=%d k=%d: %d A blocks, %d words", items, users, d, k,
                      plan.n_a_blocks, len(prog))
        beats = await tb.run(prog)
        exp = [(int(a), int(b)) for u in range(users) for a, b in zip(ei[u], ev[u])]
        assert [(b[0], b[1]) for b in beats] == exp
    await tb.finish()


@sim_test(timeout_us={"default": 130, "*": 520})  # measured 26.8 us on default
async def glvq_closest_farthest(dut):
    """GLVQ: closest and farthest reference to each test vector (replicate mode, min/max);
    a duplicated reference ties to the smaller index; also split + replicate (long vectors)."""
    tb = TB(dut, src_p=0.7, sink_p=0.7)
    await tb.reset()
    f = tb.fmt
    for T, R, D in ((3, 9, 3), (2, 5, tb.cp.LSD + 2)):
        X = tb.rand((T, D))
        refs = tb.rand((R, D))
        refs[R - 1] = refs[2]
        xp, rp = maple.distance_augment(X, refs, f)
        plan = mm.plan_matmul(R, D + 1, T, "minmax", axis="cols", cp=tb.cp)
        dut._log.info("glvq T=%d R=%d D=%d: S=%d rows in flight %d", T, R, D, plan.S, plan.rows_in_flight)
        beats = await tb.run(only(plan.programs(rp, xp.T)))
        for t in range(T):
            (ic, sc), (ifa, sf) = maple.glvq_scores_closest_farthest(X[t], refs, f)
            assert beats[2 * t][:2] == (ifa, sf) and beats[2 * t + 1][:2] == (ic, sc)
    await tb.finish()


@sim_test(timeout_us={"default": 90, "*": 360})  # measured 17.2 us on default
async def aggregation_rmw(dut):
    """CNN-style aggregation: input-channel groups accumulate partial sums read-modify-write
    in the smart memory (saturating); equal to golden cnn_aggregate."""
    tb = TB(dut, src_p=0.8, sink_p=0.5)
    await tb.reset()
    P, Fo = (5, 3) if tb.cp.DEPTH >= 16 else (2, 2)
    for groups, dc, lim in ((3, 4, 1.0), (2, 3, 40.0)):
        plan, prog, agg = aggregation_program(tb, P, Fo, groups, dc, lim)
        beats = await tb.run(prog)
        assert [b[1] for b in beats] == agg.tolist()
    await tb.finish()


@sim_test(timeout_us={"default": 160, "*": 640})  # measured 33.5 us on default
async def random_matmul_modes(dut):
    """Random sizes over every mode (column, split, replicate, split+replicate), random
    reductions, including streams shorter than k."""
    tb = TB(dut, src_p=0.7, sink_p=0.7)
    await tb.reset()
    cp = tb.cp
    for r in range(6):
        axis = ("rows", "cols")[r % 2]
        red = ("topk", "minmax", "rmw")[r % 3]
        d = int(tb.rng.integers(1, 2 * cp.LSD)) if r >= 3 else int(tb.rng.integers(1, 6))
        n = int(tb.rng.integers(1, 9))
        m = int(tb.rng.integers(1, 4))
        k = int(tb.rng.integers(1, cp.KMAX + 1))
        try:
            plan = mm.plan_matmul(n, d, m, red, axis=axis, k=k, cp=cp)
        except ValueError as e:
            dut._log.info("skip n=%d d=%d m=%d %s: %s", n, d, m, red, e)
            continue
        A = tb.rand((n, d), 2.0)
        B = tb.rand((d, m), 2.0)
        A[0, 0] = tb.fmt.max_int
        dut._log.info("n=%d d=%d m=%d %s/%s k=%d: %s G=%d S=%d", n, d, m, red, plan.axis, k, plan.mode,
                      plan.G, plan.S)
        await tb.run(only(plan.programs(A, B)))
    await tb.finish()


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 7.4 us on default
async def reset_mid_stream(dut):
    """Reset while a top-k program is half way through (instructions queued, a dump
    possibly under way), then run a K-means program: nothing stale comes out."""
    tb = TB(dut, src_p=0.9, sink_p=0.5)
    await tb.reset()
    _, prog, _, _ = topk_program(tb, 3 * tb.cp.KMAX, 2, 3, tb.cp.KMAX)
    tb.load(prog)
    await ClockCycles(tb.clk, int(tb.rng.integers(len(prog) // 3, len(prog))))
    await tb.abort_and_reset()
    _, prog, assign, _ = kmeans_program(tb, 4, 3, tb.M + 1)
    beats = await tb.run(prog)
    assert [b[0] for b in beats[1::2]] == assign.tolist()
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})
async def instruction_corners(dut):
    """NOP, INC_INPUT_LS_ADDR, SM_CTRL ERRCLR, a top-k of the smallest results and a
    MULT_ACC_DUMP of LSD steps (the whole PE local store) from an advanced input address,
    every dump beat against the instruction-level model."""
    tb = TB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    cp, M, L = tb.cp, tb.M, tb.cp.LSD
    k = min(3, cp.KMAX)
    A = tb.rand(L + 4)
    B = tb.rand((M, L))
    words = [mm.enc(mm.NOP), mm.i_mode(1, 1), mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.WRITE_A, L + 4)]
    words += mm.pack_beats([int(a) & 0xFFFFFFFF for a in A], cp.DBEAT)
    for pe in range(M):
        words += [mm.enc(mm.SET_PE_LS_ADDR, 0), mm.i_write_b(L, pe)] + [int(v) & 0xFFFFFFFF for v in B[pe]]
    words += [mm.enc(mm.SM_CTRL, mm.SM_ERRCLR), mm.i_reduction(mm.OP_SEL, k, largest=False),
              mm.enc(mm.SM_CTRL, mm.SM_START), mm.enc(mm.SET_SM_ADDR, 0), mm.enc(mm.SET_INPUT_LS_ADDR, 0),
              mm.enc(mm.INC_INPUT_LS_ADDR, 4), mm.enc(mm.SET_PE_LS_ADDR, 0), mm.i_macc(L, last=True),
              mm.enc(mm.NOP), mm.i_dump()]
    beats = await tb.run(words)
    assert len(beats) == min(k, M), f"{len(beats)} dump beats for the {k} smallest of {M} results"
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})  # measured 9.8 us on default
async def bad_instructions(dut):
    """A bad SET_PARALLEL_MODE and bad MULT_ACC_DUMPs raise the sticky err and send nothing;
    a smart-memory error (k > KMAX) raises err at the next STATUS poll; after a reset the
    chain works."""
    tb = TB(dut)
    await tb.reset()
    words = [mm.i_mode(2 * tb.M, 1), mm.i_mode(1, 2), mm.enc(mm.SM_CTRL, mm.SM_START), mm.i_macc(0),
             mm.i_macc(tb.cp.LSD + 1), mm.i_macc(1, nres=tb.M + 1), mm.i_run(2, 0), mm.i_run(0, 2)]
    await tb.run(words)
    assert tb.model.errors == 7
    await ClockCycles(tb.clk, 5)
    assert int(dut.err.value) == 1
    fcov.COV.sample("err", "set")
    await tb.reset()
    # a smart-memory error (k > KMAX, rejected by the smart memory) is seen at the next poll
    for w in (mm.i_reduction(mm.OP_SEL, tb.cp.KMAX + 1), mm.i_dump()):
        tb.src.append(w)
    await tb.src.drain()
    # the words are taken before the smart memory has finished its reset clear (DEPTH
    # cycles): the DUMP_SM poll that sees the error comes after it
    await wait_until(tb.clk, lambda: int(dut.err.value) == 1, tb.cp.DEPTH + 60,
                     "err: smart-memory error not reported on err",
                     expect="err high after the DUMP_SM STATUS poll")
    await tb.reset()
    tb.model = mm.ChainModel(tb.cp)
    if tb.fcov_on:
        tb.shadow = fcov.shadow_model(tb.cp)
    _, prog, _, _ = kmeans_program(tb, 2, 2, 3)
    await tb.run(prog)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 3.8 us on default
async def scoreboard_catches_corruption(dut):
    """Negative test: a corrupted expectation (one value LSB, one index) must be reported
    as mismatches, and a missing output as never received."""
    tb = TB(dut)
    await tb.reset()
    _, prog, _, _ = kmeans_program(tb, 2, 2, 3)
    n0 = len(tb.exp)
    tb.load(prog)
    d, l_ = tb.exp[n0]
    tb.exp[n0] = (d ^ 1, l_)                                   # value LSB
    d, l_ = tb.exp[n0 + 1]
    tb.exp[n0 + 1] = (d ^ (1 << tb.W), l_)                     # index bit
    for _ in range(100000):
        await RisingEdge(tb.clk)
        if not tb.exp:
            break
    await ClockCycles(tb.clk, 10)
    assert tb.sb.mismatches == 2, f"corruption not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    tb.exp.append((123, 1))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


def scaled_traffic(cp, rng) -> dict:
    """Model-only (no RTL) traffic at larger sizes, same mapping tool and counting rule."""
    f = cp.fmt
    out = {}
    N, D = 1000, 7
    K = min(4 * cp.M, cp.M * (cp.LSD // (D + 1)))
    pts, means = rng.integers(-f.one, f.one, (N, D)), rng.integers(-f.one, f.one, (K, D))
    xp, rp = maple.distance_augment(pts, means, f)
    prog = only(mm.plan_matmul(N, D + 1, K, "minmax", axis="rows", cp=cp).programs(xp, rp.T))
    m = mm.ChainModel(cp)
    b = m.run(prog)
    out["kmeans"] = dict(size=f"N={N} D={D} K={K}", **mm.bus_traffic(prog, len(b), len(m.elements), N, cp))
    items, users, d, k = min(1000, 1 << cp.IDXW), 4, 8, cp.KMAX
    A, B = rng.integers(-f.one, f.one, (items, d)), rng.integers(-f.one, f.one, (d, users))
    prog = only(mm.plan_matmul(items, d, users, "topk", axis="cols", k=k, cp=cp).programs(A, B))
    m = mm.ChainModel(cp)
    b = m.run(prog)
    out["topk"] = dict(size=f"items={items} users={users} d={d} k={k}",
                       **mm.bus_traffic(prog, len(b), len(m.elements), users * k, cp))
    P, Fo, G, dc = cp.DEPTH // 4, 4, 16, 9
    prog = []
    for g in range(G):
        A, B = rng.integers(-f.one, f.one, (P, dc)), rng.integers(-f.one, f.one, (dc, Fo))
        prog += only(mm.plan_matmul(P, dc, Fo, "rmw", cp=cp).programs(A, B, rmw_clear=g == 0,
                                                                     rmw_dump=g == G - 1))
    m = mm.ChainModel(cp)
    b = m.run(prog)
    out["aggregation"] = dict(size=f"pixels={P} filters={Fo} channel groups={G} x {dc}",
                              **mm.bus_traffic(prog, len(b), len(m.elements), P * Fo, cp))
    return out


@sim_test(timeout_us={"default": 80, "*": 320})  # measured 14.8 us on default
async def overlap_hazards(dut):
    """The overlapped issue/drain (issue 16) against the instruction-level model: passes of
    n = 1 back to back (the final-step spacing), a WRITE_B / WRITE_A / SET_PARALLEL_MODE
    right behind the MULT_ACC_DUMP still reading that store or mode, and a top-k array of
    ascending results (every element an insertion: k-1 scanner stall cycles each) fed by
    n = 1 passes, so the result queue fills and the final step waits for room.  Dump
    backpressure on top."""
    tb = TB(dut, src_p=1.0, sink_p=0.4)
    await tb.reset()
    cp, M, LSD, W, one = tb.cp, tb.M, tb.cp.LSD, tb.W, tb.fmt.one

    def data(vals):
        return [mm.data_word(int(v), W) for v in np.asarray(vals).ravel()]

    def at(ila, lsa, sma):
        return [mm.enc(mm.SET_INPUT_LS_ADDR, ila), mm.enc(mm.SET_PE_LS_ADDR, lsa), mm.enc(mm.SET_SM_ADDR, sma)]

    prog = [mm.i_mode(1, 1), mm.i_reduction(mm.OP_RMW), mm.enc(mm.SM_CTRL, mm.SM_CLEAR),
            mm.enc(mm.SM_CTRL, mm.SM_START)]
    for pe in range(M):
        prog += [mm.enc(mm.SET_PE_LS_ADDR, 0), mm.i_write_b(LSD, pe)] + data(tb.rand(LSD))
    prog += [mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.WRITE_A, 4 * M)] + mm.pack_beats(data(tb.rand(4 * M)), cp.DBEAT)
    prog += at(0, 0, 0) + [mm.i_macc(1)] * 6                      # n = 1 back to back
    prog += at(M, 1, 4) + [mm.i_macc(3), mm.enc(mm.SET_PE_LS_ADDR, 2), mm.i_write_b(2, 0)] + data(tb.rand(2))
    # the word WRITE_A replaces is read by the pass's last step, one cycle after the write
    # would land without the wait
    prog += at(M, 2, 8) + [mm.i_macc(4), mm.enc(mm.SET_INPUT_LS_ADDR, M + 3), mm.enc(mm.WRITE_A, 1)] + \
        data(tb.rand(1))
    prog += at(2 * M, 3, 12) + [mm.i_macc(2), mm.i_mode(2, 2)]
    prog += at(0, 0, 16) + [mm.i_macc(2), mm.i_mode(M, 1)]
    prog += at(0, 5, 20) + [mm.i_macc(1, last=True), mm.i_dump(0, 24)]
    # top-k of ascending results: PE i holds (i+1)/4, pass p reads (p+1)/32
    npass = 4 * M
    prog += [mm.i_mode(1, 1), mm.i_reduction(mm.OP_SEL, cp.KMAX), mm.enc(mm.SM_CTRL, mm.SM_START)]
    for pe in range(M):
        prog += [mm.enc(mm.SET_PE_LS_ADDR, 0), mm.i_write_b(1, pe)] + data([(pe + 1) * one // 4])
    prog += [mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.WRITE_A, npass)] + \
        mm.pack_beats(data([(p + 1) * one // 32 for p in range(npass)]), cp.DBEAT)
    prog += [mm.enc(mm.SET_PE_LS_ADDR, 0)]
    for p in range(npass):
        prog += [mm.enc(mm.SET_INPUT_LS_ADDR, p), mm.enc(mm.SET_SM_ADDR, p * M),
                 mm.i_macc(1, last=p == npass - 1)]
    prog.append(mm.i_dump())
    beats = await tb.run(prog)
    assert len(beats) == 24 + cp.KMAX
    await tb.finish()


@sim_test(timeout_us={"default": 80, "*": 320})
async def smart_memory_errors_and_empty_dumps(dut):
    """The embedded smart memory's refusals seen through the chain (each raises err at the
    next STATUS poll; reset in between): an RMW result index >= DEPTH (dropped, code 5), an
    OP above 2 (code 2), a BASE >= DEPTH and a LEN > DEPTH (code 3, no beat), a DUMP and a
    queued DUMP + START with BASE + LEN > DEPTH (code 3, no beat).  Then, against the model:
    DUMP + START of an empty min/max store (no beat, re-armed), DUMP_SM of an emptied one,
    DUMP + START of an RMW range, WRITE_A / WRITE_B of zero words."""
    tb = TB(dut, src_p=0.9, sink_p=0.7)
    cp, M, D, W = tb.cp, tb.M, tb.cp.DEPTH, tb.W
    assert tb.IDXW > D.bit_length() - 1, "an index >= DEPTH must be expressible"

    async def refused(words, what):
        await tb.reset()
        for w in words:
            tb.src.append(w)
        await tb.src.drain()
        await wait_until(tb.clk, lambda: int(dut.err.value) == 1, D + 400, f"err: {what} not reported",
                         expect="err high after the next STATUS poll")
        assert int(dut.m_axis_out_tvalid.value) == 0, f"{what}: a dump beat was sent"

    rmw = mm.i_reduction(mm.OP_RMW)
    load = [mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.WRITE_A, 1), 3, mm.enc(mm.SET_PE_LS_ADDR, 0),
            mm.i_write_b(1), 5]
    await refused([mm.i_mode(1, 1), rmw, mm.enc(mm.SM_CTRL, mm.SM_START)] + load +
                  [mm.enc(mm.SET_SM_ADDR, D), mm.i_macc(1, last=True, nres=1), rmw], "RMW index >= DEPTH")
    await refused([mm.enc(mm.SET_SM_REDUCTION, (1 << 8) | 3), mm.i_reduction(mm.OP_SEL)], "OP = 3")
    await refused([rmw, mm.i_dump(D - 2, 4), mm.i_dump(D, D + 1), mm.enc(mm.SM_CTRL, mm.SM_DUMP | mm.SM_START), rmw],
                  "BASE/LEN out of range")
    await ClockCycles(tb.clk, 20)
    assert int(dut.m_axis_out_tvalid.value) == 0, "a refused dump sent a beat"
    await tb.reset()
    tb.model = mm.ChainModel(cp)
    if tb.fcov_on:
        tb.shadow = fcov.shadow_model(cp)
    one = tb.fmt.one
    prog = [mm.i_mode(1, 1), mm.i_reduction(mm.OP_MINMAX), mm.enc(mm.SM_CTRL, mm.SM_DUMP | mm.SM_START),
            mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.WRITE_A, 0), mm.enc(mm.WRITE_A, 1), mm.data_word(one, W),
            mm.enc(mm.SET_PE_LS_ADDR, 0), mm.i_write_b(0), mm.i_write_b(1), mm.data_word(one // 2, W),
            mm.enc(mm.SET_SM_ADDR, 0), mm.i_macc(1, last=True, nres=1), mm.i_dump(),
            mm.enc(mm.SM_CTRL, mm.SM_CLEAR), mm.i_dump(),
            mm.i_reduction(mm.OP_RMW), mm.enc(mm.SM_CTRL, mm.SM_CLEAR), mm.i_dump(0, 3),
            mm.enc(mm.SM_CTRL, mm.SM_DUMP | mm.SM_START), mm.enc(mm.SET_SM_ADDR, 1), mm.i_macc(1, last=True),
            mm.i_dump(0, 3)]
    beats = await tb.run(prog)
    assert len(beats) == 2 + 3 + 3 + 3 and tb.model.errors == 0
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})
async def mult_acc_run_strides(dut):
    """MULT_ACC_RUN (self-advancing MULT_ACC_DUMP, issue 16) against the instruction-level
    model, RMW so every result lands at its own address: input and local-store strides
    that wrap (ILW - 7 start, LSD - 3 stride), all and some results per pass, a RUN right
    behind a RUN and a MULT_ACC_DUMP right behind that (the engine hand-over at the final
    pass), split mode with one result per pass, last on the final pass only.  Bubbles on
    the stream, backpressure on the dump."""
    tb = TB(dut, src_p=0.8, sink_p=0.6)
    await tb.reset()
    cp, M, L, W = tb.cp, tb.M, tb.cp.LSD, tb.W

    def data(vals):
        return [mm.data_word(int(v), W) for v in np.asarray(vals).ravel()]

    prog = [mm.i_mode(1, 1), mm.i_reduction(mm.OP_RMW), mm.enc(mm.SM_CTRL, mm.SM_CLEAR),
            mm.enc(mm.SM_CTRL, mm.SM_START)]
    for pe in range(M):
        prog += [mm.enc(mm.SET_PE_LS_ADDR, 0), mm.i_write_b(L, pe)] + data(tb.rand(L))
    prog += [mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.WRITE_A, cp.ilw)] + mm.pack_beats(data(tb.rand(cp.ilw)), cp.DBEAT)
    prog += [mm.i_stride(5, L - 3), mm.enc(mm.SET_INPUT_LS_ADDR, cp.ilw - 7), mm.enc(mm.SET_PE_LS_ADDR, 2),
             mm.enc(mm.SET_SM_ADDR, 0), mm.i_run(3, 6)]                       # 6 M results at 0 ..
    prog += [mm.enc(mm.SET_SM_ADDR, 6 * M), mm.i_run(2, 2, nres=1)]           # 6M, 6M+1
    prog += [mm.enc(mm.SET_SM_ADDR, 6 * M + 2), mm.i_macc(4)]                 # 6M+2 .. 7M+1
    prog += [mm.i_mode(2, 2), mm.i_stride(2, 1), mm.enc(mm.SET_INPUT_LS_ADDR, 0),
             mm.enc(mm.SET_SM_ADDR, 7 * M + 2), mm.i_run(3, 5, last=True, nres=1)]   # 7M+2 .. 7M+6
    total = 7 * M + 7
    prog += [mm.i_dump(0, total), mm.i_mode(1, 1)]
    beats = await tb.run(prog)
    assert len(beats) == total and len(tb.model.elements) == total
    assert sorted(i for i, _ in tb.model.elements) == list(range(total)), "every result at its own address"
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})
async def wide_data_beats(dut):
    """The DBEAT-word data beats (issue 16) against the instruction-level model: WRITE_A at
    every alignment of ila to the M banks with lengths that leave a partial last beat (its
    unused words filled with garbage, which must be ignored), WRITE_BV from an lsa that wraps
    past LSD, a WRITE_B (word 0 of a beat, garbage above it) between them, and a WRITE_BV /
    WRITE_A right behind the MULT_ACC_DUMPs still reading those stores; every written word
    then enters a dot product of a MAC pass over exactly the words written, into the RMW
    store.  Bubbles on the stream, backpressure on the dump."""
    tb = TB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    cp, M, L, W, D = tb.cp, tb.M, tb.cp.LSD, tb.W, tb.cp.DBEAT
    rng = tb.rng

    def beats(vals):
        ws = [mm.data_word(int(v), W) for v in np.asarray(vals).ravel()]
        out = mm.pack_beats(ws, D)
        if len(ws) % D:                     # garbage in the unused words of the last beat
            pad = sum(int(rng.integers(0, 1 << 32)) << (32 * j) for j in range(len(ws) % D, D))
            out[-1] |= pad
        return out

    prog = [mm.i_mode(1, 1), mm.i_reduction(mm.OP_RMW), mm.enc(mm.SM_CTRL, mm.SM_CLEAR),
            mm.enc(mm.SM_CTRL, mm.SM_START)]
    sma = 0
    for k in range(M + 1):
        ila, n = (5 * k + 1) % (cp.ilw - 2 * M), M + 1 + k        # every alignment, partial last beats
        A = tb.rand(n)
        prog += [mm.enc(mm.SET_INPUT_LS_ADDR, ila), mm.enc(mm.WRITE_A, n)] + beats(A)
        lsa = (L - 2 + k) % L                                       # WRITE_BV wraps past LSD
        B = tb.rand((n, M))
        prog += [mm.enc(mm.SET_PE_LS_ADDR, lsa), mm.enc(mm.WRITE_BV, n)] + beats(B)
        if k == 1:                                                  # WRITE_B: word 0 of each beat only
            prog += [mm.i_write_b(2, M - 1)] + [mm.data_word(int(v), W) | (int(rng.integers(1, 1 << 31)) << 32)
                                                if D > 1 else mm.data_word(int(v), W) for v in tb.rand(2)]
        prog += [mm.enc(mm.SET_SM_ADDR, sma), mm.i_macc(n, last=k == M)]
        sma += M
    prog += [mm.i_dump(0, sma)]
    beats_out = await tb.run(prog)
    assert len(beats_out) == sma and tb.model.errors == 0
    await tb.finish()


@sim_test(timeout_us={"default": 80, "*": 320})
async def double_buffer_windows(dut):
    """Loads overlapped with the passes that read the other half of a store (issue 16),
    against the instruction-level model: a MULT_ACC_RUN reading the lower input words and
    local-store words, then WRITE_A / WRITE_BV / WRITE_B beats into words that RUN still
    reads (they must wait: its later passes read the old values) and into the other half
    (they must go ahead while the RUN issues); then passes over everything, into the RMW
    store.  Counts, from the DUT, WRITE_A / WRITE_BV beats taken while the engine was
    active and beats held back by the window: both must occur."""
    tb = TB(dut, src_p=1.0, sink_p=0.7)
    await tb.reset()
    cp, M, L, W, D = tb.cp, tb.M, tb.cp.LSD, tb.W, tb.cp.DBEAT
    IW, H, LH = cp.ilw, cp.ilw // 2, L // 2
    n = max(2, min(LH // 2, H // (4 * M)))      # passes of n steps over input words 0 .. n-1
    PS = min(32, cp.DEPTH // 2)                 # ... PS of them, one result each

    def data(vals):
        return mm.pack_beats([mm.data_word(int(v), W) for v in np.asarray(vals).ravel()], D)

    seen = {"overlap": 0, "held": 0}

    async def watch():
        while True:
            await RisingEdge(tb.clk)
            st, act = int(dut.state.value), int(dut.e_act.value)
            if st in (mm_q.Q_WA, mm_q.Q_WV) and int(dut.s_axis_cmd_tvalid.value):
                if int(dut.s_axis_cmd_tready.value):
                    seen["overlap"] += act
                else:
                    seen["held"] += 1

    from rtl_gen.maple import maple_pe_chain as mm_q
    w = cocotb.start_soon(watch())
    prog = [mm.i_mode(1, 1), mm.i_reduction(mm.OP_RMW), mm.enc(mm.SM_CTRL, mm.SM_CLEAR),
            mm.enc(mm.SM_CTRL, mm.SM_START), mm.enc(mm.SET_PE_LS_ADDR, 0), mm.enc(mm.WRITE_BV, L)] + \
        data(tb.rand((L, M)))
    prog += [mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.WRITE_A, IW)] + data(tb.rand(IW))
    # the RUN: PS passes of n steps over input words 0 .. n-1 and local-store words 0 .. n-1
    prog += [mm.i_stride(0, 0), mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.SET_PE_LS_ADDR, 0),
             mm.enc(mm.SET_SM_ADDR, 0), mm.i_run(n, PS, nres=1)]
    # the other halves: go ahead while the RUN issues
    prog += [mm.enc(mm.SET_INPUT_LS_ADDR, H), mm.enc(mm.WRITE_A, 4 * M)] + data(tb.rand(4 * M))
    prog += [mm.enc(mm.SET_PE_LS_ADDR, LH), mm.enc(mm.WRITE_BV, 2)] + data(tb.rand((2, M)))
    # words the RUN's later passes still read: wait
    prog += [mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.WRITE_A, n)] + data(tb.rand(n))
    prog += [mm.enc(mm.SET_PE_LS_ADDR, n - 1), mm.enc(mm.WRITE_BV, 1)] + data(tb.rand((1, M)))
    prog += [mm.enc(mm.SET_PE_LS_ADDR, 0), mm.i_write_b(1, M - 1)] + [mm.data_word(int(tb.rand(())), W)]
    # read everything back: the upper halves, then the rewritten lower words
    sma = PS
    for ila, lsa, k in ((H, LH, 2), (0, 0, n), (0, n - 1, 1)):
        prog += [mm.enc(mm.SET_INPUT_LS_ADDR, ila), mm.enc(mm.SET_PE_LS_ADDR, lsa), mm.enc(mm.SET_SM_ADDR, sma),
                 mm.i_macc(k, last=lsa == n - 1)]
        sma += M
    prog += [mm.i_dump(0, sma)]
    beats = await tb.run(prog)
    w.kill()
    assert len(beats) == sma and tb.model.errors == 0
    dut._log.info("double buffering: %d beats taken while the engine ran, %d cycles held by its window",
                  seen["overlap"], seen["held"])
    assert seen["overlap"] > 0, "no load beat went ahead while the engine read the other half"
    assert seen["held"] > 0, "no load beat waited for the words the engine still read"
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})
async def input_window_by_g(dut):
    """The input local store's read window of a pass is n*G words (a step reads G words from
    w = ila + j*G on, never below w): for G = 1 (column mode) and G = M (replicate), one
    WRITE_A beat right past the window must be taken while the pass issues, and one on the
    window's last words must wait for it; a second pass reads the rewritten words back
    (against the instruction-level model: an early write would change its results)."""
    tb = TB(dut, src_p=1.0, sink_p=1.0)
    await tb.reset()
    cp, M, L, W, D = tb.cp, tb.M, tb.cp.LSD, tb.W, tb.cp.DBEAT
    IW = cp.ilw
    from rtl_gen.maple import maple_pe_chain as mm_q

    def data(vals):
        return mm.pack_beats([mm.data_word(int(v), W) for v in np.asarray(vals).ravel()], D)

    log = []            # per WRITE_A data beat after a pass: (taken while the engine ran, cycles held)
    cur = {"held": 0, "on": False}

    async def watch():
        while True:
            await RisingEdge(tb.clk)
            if cur["on"] and int(dut.state.value) == mm_q.Q_WA and int(dut.s_axis_cmd_tvalid.value):
                if int(dut.s_axis_cmd_tready.value):
                    log.append((int(dut.e_act.value), cur["held"]))
                    cur["held"] = 0
                else:
                    cur["held"] += 1

    w = cocotb.start_soon(watch())
    sma = 0
    for lg in (0, M.bit_length() - 1):
        G = 1 << lg
        n = min(L, 12, (IW - D) // G)
        prog = [mm.i_mode(G, 1), mm.i_reduction(mm.OP_RMW), mm.enc(mm.SM_CTRL, mm.SM_CLEAR),
                mm.enc(mm.SM_CTRL, mm.SM_START), mm.enc(mm.SET_PE_LS_ADDR, 0), mm.enc(mm.WRITE_BV, n)] + \
            data(tb.rand((n, M)))
        prog += [mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.WRITE_A, IW)] + data(tb.rand(IW))
        await tb.run(prog)
        cur["on"] = True
        prog = [mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.SET_SM_ADDR, sma), mm.i_macc(n)]
        prog += [mm.enc(mm.SET_INPUT_LS_ADDR, n * G), mm.enc(mm.WRITE_A, D)] + data(tb.rand(D))
        prog += [mm.enc(mm.SET_INPUT_LS_ADDR, n * G - D), mm.enc(mm.WRITE_A, D)] + data(tb.rand(D))
        prog += [mm.enc(mm.SET_INPUT_LS_ADDR, 0), mm.enc(mm.SET_SM_ADDR, sma + M), mm.i_macc(n, last=True)]
        prog += [mm.i_dump(sma, 2 * M)]
        beats = await tb.run(prog)
        cur["on"] = False
        assert len(beats) == 2 * M and tb.model.errors == 0
        assert len(log) == 2, log
        (act0, held0), (act1, held1) = log
        dut._log.info("G=%d n=%d: beat past the window taken %s the pass (held %d), beat on its end "
                      "held %d cycles", G, n, "during" if act0 else "after", held0, held1)
        assert act0 and held0 == 0, f"G={G}: the beat at word n*G={n * G} waited for the pass ({log})"
        assert held1 > 0, f"G={G}: the beat at words {n * G - D}..{n * G - 1} did not wait ({log})"
        log.clear()
        sma += 2 * M
    w.kill()
    await tb.finish()


def first_mac(prog, cp) -> int:
    """Stream position of a program's first MULT_ACC_DUMP / MULT_ACC_RUN (data beats skipped)."""
    pc = 0
    while pc < len(prog):
        op = (prog[pc] & 0xFFFFFFFF) >> 28
        if op in (mm.MULT_ACC_DUMP, mm.MULT_ACC_RUN):
            return pc
        pc += 1 + mm.data_beats(prog[pc], cp.M, cp.DBEAT)[0]
    raise AssertionError("program without a MAC instruction")


async def steady_mac_rate(tb) -> float:
    """MAC steps per cycle of back-to-back passes (RMW, column mode, n = max(4, LSD/4)
    steps per pass, 3 set-up words each; A and B loaded before, no clear): from the cycle
    the first MULT_ACC_DUMP is taken to the first dump beat, so the drain of the last pass
    and the DUMP_SM handshake are inside the window.  Results checked like every run."""
    cp, M = tb.cp, tb.M
    d, m = max(4, cp.LSD // 4), 4 * M
    n = max(1, min(cp.ilw // d, cp.DEPTH // m))
    plan = mm.plan_matmul(n, d, m, "rmw", cp=cp)
    assert plan.n_a_blocks == 1 and plan.n_b_blocks == 1, "steady bench must load A and B once"
    prog = only(plan.programs(tb.rand((n, d)), tb.rand((d, m)), rmw_clear=False))
    first = first_mac(prog, cp)
    steps = mm.mac_steps(prog, cp)
    i0, b0 = len(tb.inmon.times), len(tb.mon.times)
    await tb.run(prog)
    window = tb.mon.times[b0] - tb.inmon.times[i0 + first]
    tb.dut._log.info("bench steady: %d rows x %d cols, d=%d: %d MAC steps in %d cycles", n, m, d,
                     steps, window)
    return round(steps / window, 3)


@sim_test(timeout_us={"default": 180, "*": 720})  # measured 38.4 us on default
async def bench_throughput(dut):
    """Benchmark (reported): off-chip data bytes and bus transactions with the smart memory
    vs without it (every intermediate result stored and reloaded for the reduction) for
    K-means, top-k and aggregation run on the RTL (small sizes) and, with the same mapping
    and counting, on the model at larger sizes; cycles per multiply-accumulate step."""
    tb = TB(dut)
    # the figures are checked against bench_limits: their data (top-k's scanner stalls depend
    # on the values) is fixed, not drawn from the run seed, so every seed measures the same
    tb.rng = np.random.default_rng(0x4D41504C)
    await tb.reset()
    M, K = tb.M, tb.cp.KMAX
    rows = []
    work = [("kmeans", lambda: kmeans_program(tb, 16, 3, 2 * M, dup=False)),
            ("topk", lambda: topk_program(tb, 4 * K, 2, 4, K, dup=False)),
            ("aggregation", lambda: aggregation_program(tb, 4, 3, 4, 4))]
    tot_cyc = tot_steps = 0
    rec_extra = {}
    for name, mk in work:
        out = mk()
        plan, prog = out[0], out[1]
        c0 = tb.inmon.cycles
        m0 = len(tb.model.elements)
        beats = await tb.run(prog)
        elements = len(tb.model.elements) - m0
        results = {"kmeans": len(beats) // 2, "topk": len(beats), "aggregation": len(beats)}[name]
        t = mm.bus_traffic(prog, len(beats), elements, results, tb.cp)
        cyc = tb.inmon.cycles - c0
        steps = mm.mac_steps(prog, tb.cp)
        tot_cyc += cyc
        tot_steps += steps
        rows.append({"workload": name, "mode": plan.mode, "program_words": len(prog),
                     "intermediate_results": elements, "dump_beats": len(beats), "cycles": cyc,
                     "mac_steps": steps, "cycles_per_mac_step": round(cyc / steps, 3),
                     # one s_axis_cmd word per cycle at most: the program length alone bounds this
                     "stream_bound_cycles_per_mac_step": round(len(prog) / steps, 3), **t})
        rec_extra[f"cycles_per_mac_step_{name}"] = round(cyc / steps, 3)
        rec_extra[f"trans_ratio_{name}"] = t["trans_ratio"]
        rec_extra[f"bytes_ratio_{name}"] = t["bytes_ratio"]
        dut._log.info("bench RTL %s: %s", name, rows[-1])
    rec_extra["steady_mac_steps_per_cycle"] = await steady_mac_rate(tb)
    scaled = scaled_traffic(tb.cp, tb.rng)
    for name, t in scaled.items():
        dut._log.info("bench model %s: %s", name, t)
        rec_extra[f"scaled_trans_ratio_{name}"] = t["trans_ratio"]
        rec_extra[f"scaled_bytes_ratio_{name}"] = t["bytes_ratio"]
    # the ideal is one MAC step (M MACs) per cycle; program loading and dumps are included
    rec = record_bench(CORE, cycles_per_mac_step=round(tot_cyc / tot_steps, 3), mac_steps=tot_steps,
                       ideal=1.0, rtl=rows, scaled=scaled, burst_bytes=mm.BURST_BYTES,
                       paper_table3="reduction 1.64x (SSI), 25.7x (K-means), 76x (CNN)", **rec_extra)
    await tb.finish()
    return rec


@sim_test(timeout_us={"default": 110, "*": 440})  # measured 20.9 us on default
async def rounding_ties(dut):
    """Directed rounding ties at the drain unit's one rounding point (the exact sum of the
    S partial dot products), both signs, through RMW programs (cleared memory, so every
    dumped value is the rounded dot product):
    (1) column mode (d small) and split mode (d = LSD + 3, S = 2): column 0 of A is
        tie_operands(j), row 0 of B tie_scalar(j) of random sign per column, the other
        rows of B integer words (multiples of one) -- every dot product is a tie;
    (2) one result per target: B = (odd, one, random), each row of A solved so the exact
        dot product is half an LSB above the target word -- random targets of both signs
        and the edge targets (max_int must saturate, min_int - 1 lands on min_int).
    Ties counted per sign on the exact dot products (Python ints) and must occur."""
    tb = TB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    fmt, rng, cp = tb.fmt, tb.rng, tb.cp
    vals = []
    for n, d, m in ((5, 4, 3), (4, cp.LSD + 3, 2)):
        j = int(rng.integers(0, fmt.F))
        A = tb.rand((n, d), 2.0)
        A[:, 0] = tie_operands(rng, fmt, j, (n,), limit=1.0)
        B = rng.integers(-2, 3, size=(d, m)).astype(np.int64) * fmt.one
        B[0] = [tie_scalar(rng, fmt, j, limit=1.0) for _ in range(m)]
        plan = mm.plan_matmul(n, d, m, "rmw", cp=cp)
        dut._log.info("n=%d d=%d m=%d: %s G=%d S=%d", n, d, m, plan.mode, plan.G, plan.S)
        await tb.run(only(plan.programs(A, B)))
        vals += list((A.astype(object) @ B.astype(object)).ravel())
    ts = edge_targets(fmt) + rand_targets(fmt, rng, 6)
    B = np.array([[odd_coef(fmt, rng)], [fmt.one], [int(tb.rand((), 1.0))]], dtype=np.int64)
    A = np.zeros((len(ts), 3), dtype=np.int64)
    for i, t in enumerate(ts):
        free = tb.rand((1,), 2.0)
        A[i, 0], A[i, 1] = fit_tie_shrinking(fmt, free, B[2], int(B[0, 0]), t)
        A[i, 2] = free[0]
    await tb.run(only(mm.plan_matmul(len(ts), 3, 1, "rmw", cp=cp).programs(A, B)))
    vals += list((A.astype(object) @ B.astype(object)).ravel())
    require_ties(fmt, vals, "chain dot products", dut._log)
    assert tie_value(fmt, fmt.max_int) in vals and tie_value(fmt, fmt.min_int - 1) in vals
    await tb.finish()


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("small", "icarus")]))
def test_maple_pe_chain(cfg, sim):
    run_core(CORE, cfg, sim)


@pytest.mark.parametrize("given,msg", [
    ({"DBEAT": 8}, "DBEAT=8 must not exceed M=4"),
    ({"M": 2, "DBEAT": 4}, "DBEAT=4 must not exceed M=2"),
    ({"DBEAT": 3}, "must be 0 (= M) or a power of two"),
    ({"DBEAT": 32}, "above its maximum"),
])
def test_maple_pe_chain_params(given, msg):
    """Impossible data-beat widths are refused before any HDL is written, naming the
    parameter; 0 (the default) means M, and every legal width builds its stream port."""
    import re
    from rtl_gen.common.params import ParamError
    from rtl_gen.maple import maple_pe_chain as gen
    from rtl_gen.registry import get
    with pytest.raises(ParamError, match=re.escape(msg)):
        get(CORE).resolve(given)
    for d, width in ((0, 128), (1, 32), (2, 64), (4, 128)):
        p = get(CORE).resolve({"DBEAT": d})
        assert [q.width for q in gen.ports_of(p) if q.name == "s_axis_cmd_tdata"] == [width]
        assert mm.ChainParams.from_params(p).DBEAT == width // 32


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
