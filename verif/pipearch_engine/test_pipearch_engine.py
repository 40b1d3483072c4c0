"""pipearch_engine: decoded subroutine instructions driven by a Python issuer, LOAD lines
fed on ``s_axis_ld``, STORE lines collected on ``m_axis_st``; every stored line is
compared bit-exactly with the ISS's golden subroutines (``golden.pipearch_iss``,
``Machine.golden_subroutine``) run on the same instructions in issue order.

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

from golden import pipearch_isa as I
from golden.fixedpoint import QFormat
from golden.pipearch_asm import PUConfig
from golden.pipearch_iss import Machine, Memory, SubCall
from golden.pipearch_region import CONFIGS, encode_access
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.pipearch_engine import covermodel as funcov
from verif.tb_common import record_bench, sim_seed, sim_test, start_while_busy, wait_until

CORE = "pipearch_engine"
SUB_BIT = {op: op - 0x10 for op in I.ALL_SUBROUTINES}


def acc(length, offset=0, fifo=False, keep=False, amem=False):
    return encode_access(length, offset, fifo=fifo, keep=keep, use_amem=amem)


def w1_of(regions=(), flags=0):
    w = 0
    for k, r in enumerate(regions):
        w |= (r & 0xF) << (4 * k)
    return w | (flags << 24)


class EngineTB:
    def __init__(self, dut, ld_p=1.0, st_p=1.0):
        self.dut = dut
        self.p = dut_params()
        p = self.p
        self.L, self.W, self.D = p["LANES"], p["W"], p["DEPTH"]
        self.NRG, self.AMD = p["NREGIONS"], p["AMEM_DEPTH"]
        self.cfgs = tuple(CONFIGS[(p["CONFIGS"] >> (2 * r)) & 3] for r in range(self.NRG))
        self.seed = sim_seed()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, p)
        self.fmt = QFormat(p["W"], p["F"])
        self.cfg = PUConfig(lanes=self.L, w=p["W"], f=p["F"], nregions=self.NRG, depth=self.D,
                            amem_depth=self.AMD, max_iter=p["MAX_ITER"], max_dim=p["MAX_DIM"],
                            region_configs=self.cfgs)
        self.mem = Memory(1 << 22, self.L)
        self.iss = Machine(self.cfg, self.mem)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        dut.rst.value = 1
        for f in ("fifo_clr", "sub_start", "sub_iters", "sub_w1", "sub_acc0", "sub_acc1", "sub_acc2", "sub_acc3",
                  "sub_w6", "sub_w7"):
            getattr(dut, f).value = 0
        self.src = AxisSource(dut, "s_axis_ld", dut.clk, Gate(self.seed * 7 + 1, ld_p))
        self.sink = AxisSink(dut, "m_axis_st", dut.clk, Gate(self.seed * 13 + 5, st_p))
        self.mon = AxisMonitor(dut, "m_axis_st", dut.clk, reset=dut.rst)
        self.sb = FixedScoreboard(dut)
        self.exp = self.sb.add_stream(self.mon, StreamSpec("m_axis_st", [("line", self.L, self.W, 0)]))
        self.errs = [0] * 7
        self.addr = 0x1000
        self.fc = funcov.Sampler(dut)
        cocotb.start_soon(self._count_err())

    async def _count_err(self):
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            v = self.dut.sub_err.value
            if v.is_resolvable:
                for s in range(7):
                    self.errs[s] += (int(v) >> s) & 1
                self.fc.cycle(int(v))   # functional coverage (covermodel.py)

    async def reset(self, cycles=3, clear=True):
        """Reset; then (``clear``) zero every region with one broadcast LOAD, since region
        RAMs keep their contents across resets and earlier tests, and the model starts at 0."""
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)
        if clear:
            await self.issue(I.LOAD, 1, (1 << self.NRG) - 1, (acc(self.D, 0),),
                             lines=np.zeros((self.D, self.L), dtype=np.int64))

    async def pulse_fifo_clr(self):
        """Pulse ``fifo_clr`` with every subroutine idle; the ISS empties every region FIFO."""
        await self.wait_idle()
        self.dut.fifo_clr.value = 1
        await RisingEdge(self.clk)
        self.dut.fifo_clr.value = 0
        for rg in self.iss.regions:
            rg.reset_fifo()

    def rand_words(self, shape, scale=None):
        h = 1 << (self.W - 1)
        lim = h if scale is None else scale
        return self.rng.integers(-lim, lim, size=shape, dtype=np.int64)

    # ---- issue -------------------------------------------------------------------
    def busy(self, op):
        return (int(self.dut.sub_busy.value) >> SUB_BIT[op]) & 1

    async def wait_idle(self, op=None, timeout=200000):
        """Wait until the subroutine (all with None) is idle; returns after a clock edge."""
        def idle():
            v = int(self.dut.sub_busy.value)
            return (v == 0) if op is None else not (v >> SUB_BIT[op]) & 1
        await ReadOnly()
        await wait_until(self.clk, idle, timeout - 1, "sub_busy held high", readonly=True,
                         expect="every subroutine idle" if op is None else f"subroutine {op} idle",
                         detail=lambda: f"sub_busy={int(self.dut.sub_busy.value):#x}")
        await RisingEdge(self.clk)

    async def issue(self, op, iters, w1, accs=(0, 0, 0, 0), w6=0, w7=0, model=True, lines=None,
                    nb=False):
        """Issue one decoded instruction (waits while the subroutine is busy) and run it
        on the ISS's golden subroutine (LOAD: ``lines`` go to the Load stream and memory;
        STORE: the golden result is expected on the Store stream)."""
        accs = tuple(accs) + (0,) * (4 - len(accs))
        await self.wait_idle(op)
        if model:
            self.model(op, iters, w1, accs, w6, w7, lines)
        d = self.dut
        d.sub_iters.value = iters
        d.sub_w1.value = w1
        for k in range(4):
            getattr(d, f"sub_acc{k}").value = accs[k]
        d.sub_w6.value = w6 & 0xFFFFFFFF
        d.sub_w7.value = w7 & 0xFFFFFFFF
        d.sub_start.value = 1 << SUB_BIT[op]
        await RisingEdge(self.clk)
        d.sub_start.value = 0
        if not nb:  # blocking issue, as the register machine does for NB = 0
            await self.wait_idle(op)

    def model(self, op, iters, w1, accs, w6, w7, lines):
        flags = (w1 >> 24) & 0xFF
        amem = None
        addr = None
        if op == I.LOAD:
            mask = w1 & 0xFFFF
            regions = tuple(r for r in range(16) if mask >> r & 1)
            addr = self.addr
            self.mem.write_lines(addr, lines)
            self.addr += len(lines) + 1
            for ln in lines:
                self.src.append((pack_lanes(ln, self.W), 0))
            if flags & 1:
                amem = (regions[0], (w7 >> 16) & 0x1F, w7 & 0xFFFF)
                access = (0,)
            else:
                access = (accs[0],)
        else:
            nch = len(I.CHANNELS[op])
            regions = tuple((w1 >> (4 * k)) & 0xF for k in range(nch))
            access = accs[:nch]
            if op == I.STORE:
                addr = self.addr
        call = SubCall(0, op, True, iters, regions, access, flags, w6 & 0xFFFFFFFF, w7 & 0xFFFFFFFF,
                       addr, amem, (0,) * 8)
        assert self.iss.golden_subroutine(call) is None
        if op == I.STORE:
            n = ((accs[0] >> 16) & 0x3FFF) * iters
            per = (accs[0] >> 16) & 0x3FFF
            out = self.mem.read_lines(addr, n)
            self.addr += n + 1
            for k, ln in enumerate(out):
                self.exp.append((pack_lanes(ln, self.W), 1 if (k + 1) % per == 0 else 0))

    # ---- helpers -----------------------------------------------------------------
    async def load(self, mask, access, iters, lines=None, scale=None):
        n = ((access >> 16) & 0x3FFF) * iters
        if lines is None:
            lines = self.rand_words((n, self.L), scale)
        await self.issue(I.LOAD, iters, mask, (access,), lines=np.asarray(lines, dtype=np.int64))
        return lines

    async def store(self, region, access, iters):
        await self.issue(I.STORE, iters, w1_of((region,)), (access,))

    async def finish(self, settle=30):
        await self.wait_idle()
        for _ in range(100000):
            if not self.exp:
                break
            await RisingEdge(self.clk)
        await ClockCycles(self.clk, settle)
        assert self.mon.protocol_errors == 0, "m_axis_st: AXI4-Stream hold violations"
        assert sum(self.errs) == 0, f"unexpected sub_err pulses {self.errs}"
        self.sb.check()


SMALL = 1 << 12   # operand scale keeping products away from saturation in most lanes


async def fill(tb, region, n, offset=0, scale=SMALL):
    return await tb.load(1 << region, acc(n, offset), 1, scale=scale)


# ------------------------------------------------------------------ tests
@sim_test(timeout_us={"small": 40, "*": 640})  # measured 5.0 us on small
async def each_subroutine(dut):
    """Every compute subroutine alone, operands in different regions, results stored."""
    tb = EngineTB(dut)
    await tb.reset()
    dim = min(4, tb.p["MAX_DIM"])
    it = 3
    for r in range(tb.NRG):
        await fill(tb, r, 16 if tb.D >= 32 else tb.D // 2)
    vec = acc(dim, 0)
    keep = acc(dim, 0, keep=True)
    r0, r1, r2, r3 = 0, 1 % tb.NRG, 2 % tb.NRG, 3 % tb.NRG
    # DOTSIG without and with sigmoid: a keeps advancing (samples), b repeats (model)
    for sg in (0, 1):
        await tb.issue(I.DOTSIG, it, w1_of((r0, r1, r2), sg), (keep, vec, acc(1, 20, keep=True)), w6=dim)
        await tb.store(r2, acc(1, 20, keep=True), it)
    for sg in (0, 1):
        await tb.issue(I.SIGDELTA, it, w1_of((r1, r0, r3), sg), (keep, keep, acc(dim, 18, keep=True)),
                       w6=dim)
        await tb.store(r3, acc(dim, 18, keep=True), it)
    alpha, al = int(tb.fmt.to_fixed(0.25)), int(tb.fmt.to_fixed(0.01))
    for mode in (0, 1):
        await tb.issue(I.SCALAR, it, w1_of((r0, r1, r2), mode),
                       (acc(1, 2, keep=True), acc(1, 5, keep=True), acc(1, 24, keep=True)), w6=alpha, w7=al)
        await tb.store(r2, acc(1, 24, keep=True), it)
    for fl in (0, 1):
        await tb.issue(I.MULTSUB, it, w1_of((r0, r1, r2, r3), fl),
                       (vec, keep, acc(1, 0, keep=True), acc(dim, 20, keep=True)), w6=dim)
        await tb.store(r3, acc(dim, 20, keep=True), it)
    await tb.issue(I.L2REG, it, w1_of((r2, r1, r0)), (keep, vec, acc(dim, 20, keep=True)), w6=dim,
                   w7=int(tb.fmt.to_fixed(0.125)))
    await tb.store(r0, acc(dim, 20, keep=True), it)
    # full-scale operands (saturation corners) once
    await tb.load(1 << r0, acc(8, 0), 1)
    await tb.issue(I.DOTSIG, 2, w1_of((r0, r0, r1)), (acc(2, 0, keep=True),) * 2 + (acc(1, 30 % tb.D, keep=True),),
                   w6=2)
    await tb.store(r1, acc(1, 30 % tb.D, keep=True), 2)
    await tb.finish()


@sim_test(timeout_us={"small": 30, "*": 480})  # measured 2.2 us on small
async def load_broadcast(dut):
    """LOAD to several regions at once (broadcast mask), random Load gaps and Store
    backpressure; every region stored back."""
    tb = EngineTB(dut, ld_p=0.6, st_p=0.5)
    await tb.reset()
    n = min(12, tb.D)
    mask = (1 << tb.NRG) - 1
    await tb.load(mask, acc(n // 3, 1, keep=True), 3)
    await tb.load(0b101 & mask, acc(4, 0), 2)     # iterations repeat the same lines
    for r in range(tb.NRG):
        await tb.store(r, acc(n, 0), 1)
    await tb.finish()


@sim_test(timeout_us={"small": 30, "*": 480})  # measured 1.7 us on small
async def amem_sparse(dut):
    """amem-mode LOAD into the address memory of DOTSIG.a and of STORE.in, then
    sparse reads through them (LRMF-style gather)."""
    tb = EngineTB(dut)
    await tb.reset()
    r = 1 % tb.NRG
    await fill(tb, r, min(16, tb.D), scale=None)
    n_ent = tb.AMD
    idx = tb.rng.integers(0, min(16, tb.D), size=n_ent)
    lines = idx.reshape(-1, tb.L) if n_ent % tb.L == 0 else None
    if lines is None:
        idx = np.resize(idx, (n_ent + tb.L - 1) // tb.L * tb.L)
        lines = idx.reshape(-1, tb.L)
    g_store = I.GLOBAL_CHANNELS.index((I.STORE, 0))
    await tb.issue(I.LOAD, len(lines), (1 << r) | (1 << 24), (0,), w7=(g_store << 16), lines=lines)
    await tb.store(r, acc(n_ent, 0, keep=True, amem=True), 1)
    await tb.store(r, acc(2, 0, keep=True, amem=True), 3)
    # DOTSIG.a gathers rows through its address memory; b is a dense vector elsewhere
    g_a = I.GLOBAL_CHANNELS.index((I.DOTSIG, 0))
    await tb.issue(I.LOAD, len(lines), (1 << r) | (1 << 24), (0,), w7=(g_a << 16), lines=lines)
    r2 = 2 % tb.NRG
    await fill(tb, r2, 2, offset=0)
    await tb.issue(I.DOTSIG, 2, w1_of((r, r2, r2)), (acc(2, 0, keep=True, amem=True), acc(2, 0),
                                                     acc(1, 8, keep=True)), w6=2)
    await tb.store(r2, acc(1, 8, keep=True), 2)
    await tb.finish()


@sim_test(timeout_us={"small": 40, "*": 640})  # measured 2.7 us on small
async def fifo_overlap(dut):
    """Non-blocking DOTSIG writes its results into a FIFO region that SCALAR reads at
    the same time (producer/consumer overlap), then STORE."""
    tb = EngineTB(dut, ld_p=0.8, st_p=0.7)
    await tb.reset()
    dim = min(4, tb.p["MAX_DIM"])
    it = min(12, tb.D // 2)
    ra, rb, rf, ro = 0, 1 % tb.NRG, 2 % tb.NRG, 3 % tb.NRG
    await tb.load(1 << ra, acc(dim, 0, keep=True), it, scale=SMALL)    # samples
    await tb.load(1 << rb, acc(dim, 0), 1, scale=SMALL)                 # model
    await tb.load(1 << ro, acc(1, 0, keep=True), it, scale=SMALL)       # labels
    alpha = int(tb.fmt.to_fixed(0.5))
    # issue both back to back: the model runs them in order (DOTSIG fills the FIFO first)
    await tb.issue(I.DOTSIG, it, w1_of((ra, rb, rf)), (acc(dim, 0, keep=True), acc(dim, 0), acc(1, 0, fifo=True)),
                   w6=dim, nb=True)
    await tb.issue(I.SCALAR, it, w1_of((rf, ro, ro)), (acc(1, 0, fifo=True), acc(1, 0, keep=True),
                                                      acc(1, 16 % tb.D, keep=True)), w6=alpha, nb=True)
    await ReadOnly()
    assert tb.busy(I.DOTSIG) and tb.busy(I.SCALAR), "DOTSIG and SCALAR should run concurrently"
    await RisingEdge(tb.clk)
    await tb.wait_idle(I.SCALAR)          # BLOCK before the STORE (hazard-free program)
    await tb.store(ro, acc(1, 16 % tb.D, keep=True), it)
    await tb.finish()


@sim_test(timeout_us={"small": 50, "*": 800})  # measured 5.3 us on small
async def fifo_full_empty(dut):
    """A STORE from an empty FIFO region waits for a LOAD that pushes more lines than
    the region holds; with the Store sink stopped the LOAD stalls (tready low, no line
    taken) once the FIFO is full, and completes when the sink drains it."""
    tb = EngineTB(dut, ld_p=0.9, st_p=0.3)
    await tb.reset()
    # region 0 and the first replicated region (one FIFO queue however many copies)
    for r in [0] + [q for q in range(1, tb.NRG) if tb.cfgs[q] == "replicated"][:1]:
        per = tb.D // 2
        n = 3 * per
        lines = tb.rand_words((n, tb.L))
        # STORE first (FIFO empty): the model runs LOAD then STORE, so compute it by hand
        for k, ln in enumerate(lines):
            tb.exp.append((pack_lanes(ln, tb.W), 1 if (k + 1) % per == 0 else 0))
        await tb.issue(I.STORE, 3, w1_of((r,)), (acc(per, 0, fifo=True),), model=False, nb=True)
        await ClockCycles(tb.clk, 5)
        await ReadOnly()
        assert tb.busy(I.STORE) and int(dut.m_axis_st_tvalid.value) == 0
        await RisingEdge(tb.clk)
        tb.sink.stop()
        sent0 = tb.src.sent
        for ln in lines:
            tb.src.append((pack_lanes(ln, tb.W), 0))
        await tb.issue(I.LOAD, 3, 1 << r, (acc(per, 0, fifo=True),), model=False, nb=True)
        for _ in range(20 * tb.D):                   # the sink is stopped: nothing is popped after
            await ReadOnly()                         # the STORE's 2-line output buffer fills
            if tb.src.sent - sent0 >= tb.D and int(dut.s_axis_ld_tready.value) == 0:
                break
            await RisingEdge(tb.clk)
        await RisingEdge(tb.clk)
        taken = tb.src.sent
        for _ in range(12):
            await ReadOnly()
            assert tb.busy(I.LOAD) and int(dut.s_axis_ld_tready.value) == 0, \
                f"region {r}: LOAD did not stall on a full FIFO"
            await RisingEdge(tb.clk)
        assert tb.src.sent == taken < sent0 + n, f"region {r}: lines taken while the FIFO was full"
        tb.sink = AxisSink(dut, "m_axis_st", dut.clk, Gate(tb.seed * 13 + 6 + r, 0.3))
        await tb.wait_idle()
    await tb.finish()


@sim_test(timeout_us={"small": 40, "*": 640})  # measured 3.0 us on small
async def wrap_and_fifo_clr(dut):
    """Accesses past the end of a region are legal and wrap to line 0 (LOAD, STORE and a
    DOTSIG vector), against the golden ISS; fifo_clr empties every region's FIFO (a
    partly popped one too), so the next pushes land at line 0 and are the next pops."""
    tb = EngineTB(dut, ld_p=0.8, st_p=0.7)
    await tb.reset()
    D, NRG = tb.D, tb.NRG
    r, ro = 1 % NRG, 2 % NRG
    await tb.load(1 << r, acc(6, D - 3), 1)          # lines D-3 .. D-1, then 0 .. 2
    await tb.store(r, acc(8, D - 4), 1)
    await tb.store(r, acc(4, 0), 1)
    dim = min(4, tb.p["MAX_DIM"])
    await tb.issue(I.DOTSIG, 2, w1_of((r, r, ro)), (acc(dim, D - 2, keep=True), acc(dim, D - 1),
                                                    acc(1, D - 1, keep=True)), w6=dim)
    await tb.store(ro, acc(2, D - 1), 1)             # the two results: lines D-1 and 0
    assert sum(tb.errs) == 0, f"a legal wrapping access was rejected: {tb.errs}"
    for rf in range(NRG):
        await tb.load(1 << rf, acc(3, 0, fifo=True), 1)
    await tb.store(0, acc(1, 0, fifo=True), 1)       # region 0: read pointer 1, write pointer 3
    await tb.pulse_fifo_clr()
    for rf in range(NRG):
        await tb.load(1 << rf, acc(2, 0, fifo=True), 1)
        await tb.store(rf, acc(4, 0), 1)             # BRAM view (the FIFO's lines where it shares the RAM)
        await tb.store(rf, acc(2, 0, fifo=True), 1)  # pops exactly the lines pushed after the clear
    await tb.finish()


@sim_test(timeout_us={"small": 40, "*": 640})  # measured 3.6 us on small
async def large_offsets(dut):
    """Any 14-bit (effective) offset is legal and taken modulo DEPTH (offsets DEPTH, 2*DEPTH-1,
    0x3FFF, ...; they were rejected before): LOAD, STORE, every compute subroutine's vector
    and scalar channels, LOAD/STORE in FIFO mode (offset ignored), with and without
    wrapping past the end, against the golden ISS; no sub_err."""
    tb = EngineTB(dut, ld_p=0.8, st_p=0.7)
    await tb.reset()
    D, NRG = tb.D, tb.NRG
    M = 0x3FFF
    assert D <= M, "every 14-bit offset is below DEPTH: nothing to test"
    r, ro, rs = 1 % NRG, 2 % NRG, 3 % NRG
    await tb.load(1 << r, acc(6, D), 1)               # lines 0..5
    await tb.load((1 << r) | (1 << ro), acc(4, 2 * D - 2), 1)   # lines D-2, D-1, 0, 1 (wraps)
    await tb.load(1 << rs, acc(3, M, keep=True), 2)    # (0x3FFF mod D) + 0..5, wraps
    await tb.store(r, acc(8, 0), 1)                    # plain views of what landed where
    await tb.store(r, acc(4, D - 4), 1)
    await tb.store(rs, acc(8, D - 2), 1)
    await tb.store(r, acc(5, 3 * D + 1, keep=True), 2)  # large-offset STOREs
    await tb.store(rs, acc(D, M), 1)
    dim = min(4, tb.p["MAX_DIM"])
    # DOTSIG: a / b / scalar result through offsets >= DEPTH
    await tb.issue(I.DOTSIG, 2, w1_of((r, ro, rs)), (acc(dim, 2 * D - 2, keep=True), acc(dim, D + 1),
                                                     acc(1, M - 1, keep=True)), w6=dim)
    await tb.store(rs, acc(2, (M - 1) % D), 1)
    await tb.issue(I.SIGDELTA, 1, w1_of((r, ro, ro), 1), (acc(dim, M), acc(dim, D), acc(dim, 2 * D + 8)),
                   w6=dim)
    await tb.store(ro, acc(dim, 8), 1)
    alpha = int(tb.fmt.to_fixed(0.25))
    await tb.issue(I.SCALAR, 1, w1_of((rs, r, ro)), (acc(1, M), acc(1, D + 2), acc(1, 4 * D + 5)), w6=alpha)
    await tb.store(ro, acc(1, 5), 1)
    await tb.issue(I.MULTSUB, 1, w1_of((r, ro, rs, ro)), (acc(dim, D), acc(dim, 2 * D - 1), acc(1, M),
                                                          acc(dim, 3 * D - 2)), w6=dim)
    await tb.store(ro, acc(dim, D - 2), 1)
    await tb.issue(I.L2REG, 1, w1_of((ro, r, rs)), (acc(dim, D - 2 + D), acc(dim, M - 2), acc(dim, D + 10)),
                   w6=dim, w7=int(tb.fmt.to_fixed(0.125)))
    await tb.store(rs, acc(dim, 10), 1)
    # FIFO mode ignores the offset
    await tb.load(1 << ro, acc(3, M, fifo=True), 1)
    await tb.store(ro, acc(3, D, fifo=True), 1)
    assert sum(tb.errs) == 0, f"a legal large-offset access was rejected: {tb.errs}"
    await tb.finish()


@sim_test(timeout_us={"small": 30, "*": 480})  # measured 1.6 us on small
async def sgd_step(dut):
    """One SGD sample (Alg. 1: DOTSIG, SCALAR, MULTSUB, L2REG) equals golden.sgd's update."""
    from golden.sgd import sgd
    tb = EngineTB(dut, ld_p=0.8, st_p=0.8)
    await tb.reset()
    n = tb.L * min(4, tb.p["MAX_DIM"])
    dim = n // tb.L
    A = tb.rng.uniform(-1, 1, size=(1, n))
    b = np.array([1.0])
    x0 = tb.rng.uniform(-0.5, 0.5, size=n)
    alpha, lam2 = 0.125, 0.01
    ref = sgd(A, b, loss="logistic", alpha=alpha, lam2=lam2, epochs=1, order=[[0]], x0=x0, fmt=tb.fmt)
    f = tb.fmt
    xq = f.to_fixed(x0).reshape(dim, tb.L)
    aq = f.to_fixed(A[0]).reshape(dim, tb.L)
    bl = np.zeros((1, tb.L), dtype=np.int64)
    bl[0, 0] = int(f.to_fixed(b[0]))
    RX, RA, RS, RT = 0, 1 % tb.NRG, 2 % tb.NRG, 3 % tb.NRG
    await tb.load(1 << RX, acc(dim, 0), 1, lines=xq)
    await tb.load(1 << RA, acc(dim, 0), 1, lines=aq)
    await tb.load(1 << RS, acc(1, 0), 1, lines=bl)
    v = acc(dim, 0)
    await tb.issue(I.DOTSIG, 1, w1_of((RX, RA, RS), 1), (v, v, acc(1, 1)), w6=dim)
    await tb.issue(I.SCALAR, 1, w1_of((RS, RS, RS)), (acc(1, 1), acc(1, 0), acc(1, 2)),
                   w6=int(f.to_fixed(alpha)))
    await tb.issue(I.MULTSUB, 1, w1_of((RX, RA, RS, RT)), (v, v, acc(1, 2), acc(dim, 0)), w6=dim)
    await tb.issue(I.L2REG, 1, w1_of((RT, RX, RX)), (v, v, v), w6=dim, w7=int(f.to_fixed(2 * alpha * lam2)))
    await tb.store(RX, v, 1)
    exp_lines = np.asarray(ref.x, dtype=np.int64).reshape(dim, tb.L)
    assert np.array_equal(tb.mem.read_lines(tb.addr - dim - 1, dim), exp_lines), "ISS != golden.sgd"
    await tb.finish()


@sim_test(timeout_us={"small": 30, "*": 480})  # measured 1.6 us on small
async def scd_step(dut):
    """One SCD coordinate step (Alg. 2): z = A x (DOTSIG), residual (SIGDELTA), gradient
    (DOTSIG), soft threshold (SCALAR SCD mode: lane 0 x - mu, lane 1 mu), residual
    update with mu (MULTSUB, s from lane 1)."""
    tb = EngineTB(dut)
    await tb.reset()
    f = tb.fmt
    dim = min(2, tb.p["MAX_DIM"])
    RC, RZ, RB, RS = 0, 1 % tb.NRG, 2 % tb.NRG, 3 % tb.NRG
    await tb.load(1 << RC, acc(dim, 0), 1, scale=SMALL)          # column A[:, j]
    await tb.load(1 << RZ, acc(dim, 0), 1, scale=SMALL)          # z = A x
    await tb.load(1 << RB, acc(dim, 0), 1, scale=SMALL)          # b
    xj = np.zeros((1, tb.L), dtype=np.int64)
    xj[0, 0] = int(f.to_fixed(0.3))
    await tb.load(1 << RS, acc(1, 0), 1, lines=xj)
    v = acc(dim, 0)
    await tb.issue(I.SIGDELTA, 1, w1_of((RZ, RB, RB)), (v, v, acc(dim, 8 % tb.D)), w6=dim)
    await tb.issue(I.DOTSIG, 1, w1_of((RC, RB, RS)), (v, acc(dim, 8 % tb.D), acc(1, 1)), w6=dim)
    await tb.issue(I.SCALAR, 1, w1_of((RS, RS, RS), 1), (acc(1, 1), acc(1, 0), acc(1, 2)),
                   w6=int(f.to_fixed(0.5)), w7=int(f.to_fixed(0.01)))
    await tb.issue(I.MULTSUB, 1, w1_of((RZ, RC, RS, RZ), 1), (v, v, acc(1, 2), v), w6=dim)
    await tb.store(RS, acc(3, 0), 1)
    await tb.store(RZ, v, 1)
    await tb.finish()


@sim_test(timeout_us={"small": 30, "*": 480})  # measured 1.6 us on small
async def rejected_issues(dut):
    """Malformed issues pulse sub_err, start nothing and keep sub_busy low."""
    tb = EngineTB(dut)
    await tb.reset()
    D = tb.D
    bad = [
        (I.STORE, 1, w1_of((0,)), (acc(1, 0) | (1 << 30),), 0, 0),          # both BRAM and FIFO
        (I.STORE, 1, w1_of((0,)), (acc(D + 1, 0),), 0, 0),                   # length > DEPTH
        (I.STORE, 1, w1_of((0,)), (acc(D + 1, D),), 0, 0),                   # length > DEPTH (legal offset >= DEPTH)
        (I.STORE, 1, w1_of((0,)), (acc(0, 0x3FFF),), 0, 0),                  # length 0
        (I.DOTSIG, 1, w1_of((0, 0, 0)), (acc(2, 0), acc(2, 2 * D - 1) | (1 << 30), acc(1, 4)), 2, 0),  # b both bits
        (I.DOTSIG, 1, w1_of((0, 0, 0)), (acc(2, 0), acc(2, 0), acc(2, D)), 2, 0),  # scalar length 2 (offset >= DEPTH)
        (I.MULTSUB, 1, w1_of((0, 0, 0, 0)), (acc(2, 0), acc(2, 0), acc(1, 0), acc(D + 1, 0x3FFF)), 2, 0),  # y length
        (I.LOAD, 1, 1, (acc(D + 1, 0),), 0, 0),                              # LOAD length > DEPTH
        (I.LOAD, 1, 1, (acc(D + 1, 0x3FFF),), 0, 0),                         # LOAD length > DEPTH (offset legal)
        (I.LOAD, 1, 1, (acc(1, D) & ~(1 << 31),), 0, 0),                     # LOAD neither mode bit
        (I.STORE, 0, w1_of((0,)), (acc(1, 0),), 0, 0),                       # iterations 0
        (I.DOTSIG, 1, w1_of((0, 0, 0)), (acc(2, 0), acc(2, 0), acc(1, 4)), 3, 0),  # vector length != dim
        (I.DOTSIG, 1, w1_of((0, 0, 0)), (acc(2, 0), acc(2, 0), acc(2, 4)), 2, 0),  # scalar length != 1
        (I.L2REG, 1, w1_of((0, 0, 0)), (acc(1, 0),) * 3, 0, 0),             # dimension 0
        (I.SIGDELTA, 1, w1_of((0, 0, 0)), (acc(1, 0),) * 3, 0, 0),          # dimension 0
        (I.SCALAR, 1, w1_of((0, 0, 0)), (acc(2, 0), acc(1, 0), acc(1, 4)), 0, 0),  # scalar a of length 2
        (I.LOAD, 1, 0, (acc(1, 0),), 0, 0),                                  # empty mask
        (I.LOAD, 1, 1 | (1 << 24), (0,), 0, 31 << 16),                       # amem: no channel 31
    ]
    if tb.NRG < 16:
        bad.append((I.STORE, 1, w1_of((tb.NRG,)), (acc(1, 0),), 0, 0))      # region >= NREGIONS
        bad.append((I.LOAD, 1, 1 << tb.NRG, (acc(1, 0),), 0, 0))
    for k, (op, it, w1, accs, w6, w7) in enumerate(bad):
        before = list(tb.errs)
        await tb.issue(op, it, w1, accs, w6, w7, model=False, nb=True)
        await ReadOnly()
        assert (int(dut.sub_err.value) >> SUB_BIT[op]) & 1, f"case {k}: no sub_err pulse"
        assert int(dut.sub_busy.value) == 0, f"case {k}: sub_busy rose"
        await RisingEdge(tb.clk)
        await RisingEdge(tb.clk)
        assert tb.errs[SUB_BIT[op]] == before[SUB_BIT[op]] + 1, f"case {k}: err count {tb.errs}"
    tb.errs = [0] * 7
    # the engine still works afterwards
    await fill(tb, 0, 4)
    await tb.store(0, acc(4, 0), 1)
    await tb.finish()


# ------------------------------------------------- issue 11: corners (start while busy, reset, random issues)
def rand_vec_acc(tb, dim, keep=None):
    """Random legal BRAM access of length ``dim``: any 14-bit offset (taken modulo DEPTH, so
    some wrap), keep-count random."""
    off = int(tb.rng.integers(0, 0x4000)) if tb.rng.integers(0, 3) == 0 else int(tb.rng.integers(0, tb.D))
    k = bool(tb.rng.integers(0, 2)) if keep is None else keep
    return acc(dim, off, keep=k)


def rand_issue(tb, fifo_occ, exclude=(), nb_ok=False):
    """One random legal instruction for the engine, as kwargs of ``EngineTB.issue`` plus the
    set of regions it touches.  Compute subroutines use BRAM mode with their write region
    different from their read regions (the ISS reads all operands before writing, the RTL
    streams); LOAD and STORE also use FIFO mode when the region's queue (``fifo_occ``, kept
    up to date here) has room / enough lines.  ``exclude``: regions not to touch."""
    NRG, D, L = tb.NRG, tb.D, tb.L
    free = [r for r in range(NRG) if r not in exclude]
    ops_ = [I.LOAD, I.STORE, I.DOTSIG, I.SIGDELTA, I.SCALAR, I.MULTSUB, I.L2REG]
    while True:
        op = ops_[int(tb.rng.integers(0, len(ops_)))]
        it = int(tb.rng.integers(1, 4))
        dim = int(tb.rng.integers(1, min(6, tb.p["MAX_DIM"]) + 1))
        if op == I.LOAD:
            r = int(tb.rng.choice(free))
            use_fifo = not nb_ok and tb.rng.integers(0, 3) == 0
            if use_fifo:
                n = int(tb.rng.integers(1, min(8, D) + 1))
                if fifo_occ[r] + n * it > D:
                    continue
                fifo_occ[r] += n * it
                return dict(op=op, iters=it, w1=1 << r, accs=(acc(n, 0, fifo=True),)), {r}
            mask = 1 << r
            for q in free:
                if tb.rng.integers(0, 3) == 0:
                    mask |= 1 << q
            n = int(tb.rng.integers(1, min(10, D) + 1))
            regs = {q for q in range(NRG) if mask >> q & 1}
            return dict(op=op, iters=it, w1=mask, accs=(rand_vec_acc(tb, n),)), regs
        if op == I.STORE:
            r = int(tb.rng.choice(free))
            if not nb_ok and fifo_occ[r] and tb.rng.integers(0, 2) == 0:
                n = int(tb.rng.integers(1, fifo_occ[r] + 1))
                it = int(tb.rng.integers(1, fifo_occ[r] // n + 1))
                fifo_occ[r] -= n * it
                return dict(op=op, iters=it, w1=w1_of((r,)), accs=(acc(n, 0, fifo=True),)), {r}
            n = int(tb.rng.integers(1, min(10, D) + 1))
            return dict(op=op, iters=it, w1=w1_of((r,)), accs=(rand_vec_acc(tb, n),)), {r}
        if len(free) < 2:
            continue
        kinds = I.CHANNELS[op]
        wr = int(tb.rng.choice(free))
        rd = [q for q in free if q != wr]
        regions, accs = [], []
        for name, rw, kind in kinds:
            regions.append(wr if rw == "w" else int(tb.rng.choice(rd)))
            accs.append(rand_vec_acc(tb, 1 if kind == "scalar" else dim))
        flags = int(tb.rng.integers(0, 2))
        if op == I.MULTSUB and L < 2:
            flags = 0
        w6, w7 = dim, 0
        if op == I.SCALAR:
            w6 = int(tb.fmt.to_fixed(float(tb.rng.uniform(-2, 2))))
            w7 = int(tb.fmt.to_fixed(float(tb.rng.uniform(0, 0.5))))
            if flags and L < 2:
                flags = 0
        if op == I.L2REG:
            flags = 0
            w7 = int(tb.fmt.to_fixed(float(tb.rng.uniform(-0.5, 0.5))))
        return (dict(op=op, iters=it, w1=w1_of(regions, flags), accs=tuple(accs), w6=w6, w7=w7),
                set(regions))


async def issue_random(tb, kw, nb=False):
    n = 0
    if kw["op"] == I.LOAD:
        n = ((kw["accs"][0] >> 16) & 0x3FFF) * kw["iters"]
        kw = dict(kw, lines=tb.rand_words((n, tb.L), scale=None if tb.rng.integers(0, 4) == 0 else 1 << 18))
    await tb.issue(kw["op"], kw["iters"], kw["w1"], kw["accs"], kw.get("w6", 0), kw.get("w7", 0),
                   lines=kw.get("lines"), nb=nb)


async def random_sequence(tb, n_issues, p_pair=0.3):
    """``n_issues`` random legal issues (blocking, and with probability ``p_pair`` two
    non-blocking ones on disjoint regions running concurrently), then every region stored
    in full (BRAM view) and every FIFO drained: all against the golden ISS."""
    fifo_occ = [0] * tb.NRG
    pairs = 0
    k = 0
    while k < n_issues:
        if tb.rng.random() < p_pair:
            a, ra = rand_issue(tb, fifo_occ, nb_ok=True)
            b, rb = rand_issue(tb, fifo_occ, exclude=ra, nb_ok=True) if len(ra) <= tb.NRG - 2 else (None, None)
            if b is not None and b["op"] != a["op"] and not (ra & rb):
                await issue_random(tb, a, nb=True)
                await issue_random(tb, b, nb=True)
                await tb.wait_idle()
                pairs += 1
                k += 2
                continue
        kw, _ = rand_issue(tb, fifo_occ)
        await issue_random(tb, kw)
        k += 1
    for r in range(tb.NRG):
        if fifo_occ[r]:
            await tb.store(r, acc(fifo_occ[r], 0, fifo=True), 1)
        await tb.store(r, acc(tb.D, 0), 1)
    return pairs


@sim_test(timeout_us={"small": 90, "*": 1440})  # measured 15.1 us on small
async def random_issue_sequences(dut):
    """Random legal sequences of subroutine issues (all seven subroutines, random regions,
    LOAD broadcast masks, offsets anywhere in 0..0x3FFF so accesses wrap, keep-count,
    iterations, dimensions, sigmoid/SCD/lane flags, FIFO-mode LOAD/STORE against a tracked
    queue occupancy, concurrent non-blocking pairs on disjoint regions) under random Load
    gaps and Store backpressure; every region's final contents and every STORE equal the
    golden ISS (``Machine.golden_subroutine``)."""
    tb = EngineTB(dut, ld_p=0.7, st_p=0.6)
    await tb.reset()
    pairs = await random_sequence(tb, 60)
    dut._log.info("60 random issues, %d concurrent pairs", pairs)
    assert pairs > 0, "no concurrent pair was drawn"
    await tb.finish()


async def _count_go(tb, cnt):
    while True:
        await RisingEdge(tb.clk)
        await ReadOnly()
        if int(tb.dut.rst.value) == 0:
            cnt["ld"] += int(tb.dut.ld_go.value)
            cnt["st"] += int(tb.dut.st_go.value)


@sim_test(timeout_us={"small": 40, "*": 640})  # measured 3.3 us on small
async def start_while_busy_ignored(dut):
    """sub_start[s] pulsed while sub_busy[s], with other iterations, routing, access words
    and w6/w7 (legal ones, then illegal ones): LOAD, STORE and a long DOTSIG complete
    exactly as first issued (stored lines equal the ISS), no sub_err (an ignored start is
    not checked), one ld_go/st_go per accepted LOAD/STORE, and the next issues work."""
    tb = EngineTB(dut, ld_p=0.5, st_p=0.4)
    await tb.reset()
    cnt = {"ld": 0, "st": 0}
    cocotb.start_soon(_count_go(tb, cnt))
    D, NRG = tb.D, tb.NRG
    dim = min(4, tb.p["MAX_DIM"])
    r0, r1, r2 = 0, 1 % NRG, 2 % NRG
    alt_ok = dict(iters=2, w1=w1_of((r2, r2, r0, r0), 1), acc0=acc(1, 3), acc1=acc(1, 5), acc2=acc(1, 7),
                  acc3=acc(1, 9), w6=1, w7=5)
    alt_bad = dict(iters=0, w1=0xF, acc0=0, acc1=0, acc2=0, acc3=0, w6=0, w7=0)
    given = 0
    # LOAD (nb) of many lines with Load gaps
    n = min(24, D)
    await tb.issue(I.LOAD, 1, 1 << r0, (acc(n, 0),), lines=tb.rand_words((n, tb.L), SMALL), nb=True)
    for alt in (alt_ok, alt_bad):
        g = await start_while_busy(dut, tb.clk, alt, start="sub_start", busy="sub_busy",
                                   cfg_prefix="sub_", bit=SUB_BIT[I.LOAD], pulses=2)
        funcov.sample_start_busy("LOAD", g)   # pulses given with sub_busy[LOAD] seen high
        given += g
    await tb.wait_idle()
    await fill(tb, r1, dim)
    # a long DOTSIG: a keeps advancing over the loaded lines
    it = max(1, n // dim)
    await tb.issue(I.DOTSIG, it, w1_of((r0, r1, r2), 1), (acc(dim, 0, keep=True), acc(dim, 0),
                                                          acc(1, D // 2, keep=True)), w6=dim, nb=True)
    for alt in (alt_ok, alt_bad):
        g = await start_while_busy(dut, tb.clk, alt, start="sub_start", busy="sub_busy",
                                   cfg_prefix="sub_", bit=SUB_BIT[I.DOTSIG], pulses=2)
        funcov.sample_start_busy("DOTSIG", g)   # pulses given with sub_busy[DOTSIG] seen high
        given += g
    await tb.wait_idle()
    # STORE (nb) under backpressure
    await tb.issue(I.STORE, it, w1_of((r2,)), (acc(1, D // 2, keep=True),), nb=True)
    for alt in (alt_ok, alt_bad):
        g = await start_while_busy(dut, tb.clk, alt, start="sub_start", busy="sub_busy",
                                   cfg_prefix="sub_", bit=SUB_BIT[I.STORE], pulses=2)
        funcov.sample_start_busy("STORE", g)   # pulses given with sub_busy[STORE] seen high
        given += g
    await tb.wait_idle()
    dut._log.info("%d starts given while busy", given)
    await ClockCycles(tb.clk, 10)
    assert sum(tb.errs) == 0, f"sub_err pulses {tb.errs} from starts given while busy"
    assert cnt == {"ld": 2, "st": 1}, f"ld_go/st_go pulses {cnt}, expected 2 LOADs and 1 STORE"
    await tb.store(r0, acc(n, 0), 1)
    await tb.finish()


@sim_test(timeout_us={"small": 70, "*": 1120})  # measured 10.2 us on small
async def reset_during_work(dut):
    """Reset at a seeded random cycle while a LOAD, a DOTSIG and a STORE run concurrently
    (Load gaps, Store backpressure): every sub_busy low, no Store line valid, no sub_err, no
    ld_go/st_go afterwards; then (regions re-zeroed, the ISS restarted) a random issue
    sequence equals the golden ISS exactly, with nothing of the aborted work on m_axis_st."""
    tb = EngineTB(dut, ld_p=0.5, st_p=0.3)
    await tb.reset()
    cnt = {"ld": 0, "st": 0}
    cocotb.start_soon(_count_go(tb, cnt))
    D, NRG = tb.D, tb.NRG
    dim = min(4, tb.p["MAX_DIM"])
    r0, r1, r2, r3 = 0, 1 % NRG, 2 % NRG, 3 % NRG
    await fill(tb, r1, min(16, D))
    await fill(tb, r2, dim)
    n = min(24, D)
    await tb.issue(I.LOAD, 1, 1 << r0, (acc(n, 0),), lines=tb.rand_words((n, tb.L), SMALL), nb=True)
    await tb.issue(I.DOTSIG, 4, w1_of((r1, r2, r3)), (acc(dim, 0, keep=True), acc(dim, 0),
                                                      acc(1, 0, keep=True)), w6=dim, nb=True)
    await tb.issue(I.STORE, 2, w1_of((r1,)), (acc(min(12, D), 0),), nb=True)
    at = int(tb.rng.integers(1, 25))
    dut._log.info("reset %d cycles into the work", at)
    await ClockCycles(tb.clk, at)
    await ReadOnly()
    assert int(dut.sub_busy.value) != 0, "the work finished before the reset"
    await RisingEdge(tb.clk)
    # abort: drop the queued Load lines and the pending expectations, restart the model
    tb.src.kill()
    tb.src.tvalid.value = 0
    tb.exp.clear()
    dut.rst.value = 1
    await ClockCycles(tb.clk, 3)
    dut.rst.value = 0
    await RisingEdge(tb.clk)
    tb.src = AxisSource(dut, "s_axis_ld", dut.clk, Gate(tb.seed * 7 + 1001, 0.7))
    tb.errs = [0] * 7
    cnt.update(ld=0, st=0)
    for _ in range(8):
        await ReadOnly()
        assert int(dut.sub_busy.value) == 0, f"sub_busy={int(dut.sub_busy.value):#x} after reset"
        assert int(dut.m_axis_st_tvalid.value) == 0, "a Store line valid after reset"
        await RisingEdge(tb.clk)
    assert sum(tb.errs) == 0 and cnt == {"ld": 0, "st": 0}, f"after reset: sub_err {tb.errs}, go {cnt}"
    tb.iss = Machine(tb.cfg, tb.mem)
    await tb.reset(cycles=1)          # a second (short) reset, then every region re-zeroed by LOAD
    await random_sequence(tb, 20)
    await tb.finish()


@sim_test(timeout_us={"small": 30, "*": 480})  # measured 0.8 us on small
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expected line, an extra and a dropped line each fail."""
    tb = EngineTB(dut)
    await tb.reset()
    await fill(tb, 0, 4)
    await tb.issue(I.STORE, 1, w1_of((0,)), (acc(4, 0),), nb=True)
    d, last = tb.exp[1]
    tb.exp[1] = (d ^ 1, last)
    await tb.wait_idle()
    await ClockCycles(dut.clk, 10)
    assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches})"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    await tb.issue(I.STORE, 1, w1_of((0,)), (acc(4, 0),), nb=True)
    tb.exp.pop()
    await tb.wait_idle()
    await ClockCycles(dut.clk, 10)
    assert tb.sb.errors == 1, "extra output not detected"
    tb.sb.errors = 0
    tb.exp.append((123, 1))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@sim_test(timeout_us={"small": 40, "*": 640})  # measured 4.9 us on small
async def bench_throughput(dut):
    """Cycles per line: DOTSIG with a and b in different regions (1 line/cycle) and in
    the same regular region (shared read port: 1/2); two subroutines on disjoint regions
    (DOTSIG on regions 0, 1; L2REG on 2, 3) concurrently (each at full rate); LOAD broadcast."""
    tb = EngineTB(dut)
    await tb.reset()
    # every regression config has 4 regions; a config with fewer cannot run this bench and
    # must fail loudly rather than pass without measuring anything
    assert tb.NRG >= 4, f"bench_throughput needs NREGIONS >= 4, config has {tb.NRG}"
    dim = tb.p["MAX_DIM"] if tb.p["MAX_DIM"] <= tb.D // 2 else tb.D // 2
    it = 4
    m = {}
    for r in range(4):
        await tb.load(1 << r, acc(dim, 0), 1, scale=SMALL)
    await tb.wait_idle()
    clk = tb.clk

    async def timed(issues):
        t0 = get_sim_time("ns")
        for a in issues:
            await tb.issue(*a[0], **a[1], nb=True)
        await tb.wait_idle()
        return int((get_sim_time("ns") - t0) / CLOCK_NS)

    v = acc(dim, 0)
    r_in = [tb.cfgs[r] for r in range(4)]
    base = await timed([((I.DOTSIG, it, w1_of((0, 1, 2)), (v, v, acc(1, dim, keep=True))), {"w6": dim})])
    m["dotsig_two_regions_lines_per_cycle"] = round(dim * it / base, 3)
    same = await timed([((I.DOTSIG, it, w1_of((0, 0, 2)), (v, v, acc(1, dim, keep=True))), {"w6": dim})])
    m["dotsig_same_region_lines_per_cycle"] = round(dim * it / same, 3)
    # disjoint regions in every configuration: DOTSIG reads 0 and 1 and writes 1 (past its b
    # lines), L2REG reads 2 and 3 and writes 3 (past its xold lines); reads and writes of
    # one region use different ports
    both = await timed([((I.DOTSIG, it, w1_of((0, 1, 1)), (v, v, acc(1, dim, keep=True))), {"w6": dim}),
                        ((I.L2REG, it, w1_of((2, 3, 3)), (v, v, acc(dim, dim))), {"w6": dim})])
    m["dotsig_plus_l2reg_cycles"] = both
    m["dotsig_alone_cycles"] = base
    n = dim * it
    t = await timed([((I.LOAD, it, (1 << 4) - 1, (v,)), {"lines": tb.rand_words((n, tb.L))})])
    m["load_broadcast_lines_per_cycle"] = round(n / t, 3)
    dut._log.info("throughput %s (regions %s)", m, r_in)
    record_bench(CORE, unit="line", config=tb.p, **m)


@sim_test(timeout_us={"small": 90, "*": 1440})  # measured 17.2 us on small
async def sigmoid_every_segment(dut):
    """The PWL sigmoid of SIGDELTA (one pipe per lane) and of DOTSIG (one pipe) in every
    segment of its table: SIGDELTA z lines where lane j of line i lies in segment
    (i + j) mod 64 at a random offset, plus the domain edges and beyond; DOTSIG with dim 1,
    a = (z, 0, ..), b = (1.0, 0, ..), so each dot product is exactly one z of the sweep.
    Results stored and checked against the ISS's golden subroutines."""
    from golden.fixedpoint import sigmoid_table
    tb = EngineTB(dut)
    await tb.reset()
    t = sigmoid_table(tb.fmt)
    nseg, r, L = len(t.base), t.r_int, tb.L
    edges = [-r, r - 1, -r - 1, r, -r + (1 << t.shift) - 1, r - (1 << t.shift)]
    z = np.array([[-r + (((i + j) % nseg) << t.shift) + int(tb.rng.integers(0, 1 << t.shift))
                   for j in range(L)] for i in range(nseg)]
                 + [[edges[(i + j) % len(edges)] for j in range(L)] for i in range(2)], dtype=np.int64)
    assert all(len({(int(v) + r) >> t.shift for v in z[:nseg, j]}) == nseg for j in range(L))
    r0, r1, r2 = 0, 1 % tb.NRG, 2 % tb.NRG
    n = min(16, tb.D // 2, tb.p["MAX_DIM"], tb.p["MAX_ITER"])
    for s in range(0, len(z), n):
        zc = z[s:s + n]
        k = len(zc)
        await tb.load(1 << r0, acc(k, 0), 1, lines=zc)
        await tb.load(1 << r1, acc(k, 0), 1, lines=tb.rand_words((k, L), SMALL))
        await tb.issue(I.SIGDELTA, 1, w1_of((r0, r1, r2), 1), (acc(k, 0, keep=True),) * 3, w6=k)
        await tb.store(r2, acc(k, 0, keep=True), 1)
    one = int(tb.fmt.one)
    zs = z.reshape(-1)
    for s in range(0, len(zs), n):
        zc = zs[s:s + n]
        k = len(zc)
        a = np.zeros((k, L), dtype=np.int64)
        a[:, 0] = zc
        await tb.load(1 << r0, acc(k, 0), 1, lines=a)
        await tb.load(1 << r1, acc(1, 0), 1, lines=np.array([[one] + [0] * (L - 1)], dtype=np.int64))
        await tb.issue(I.DOTSIG, k, w1_of((r0, r1, r2), 1),
                       (acc(1, 0, keep=True), acc(1, 0), acc(1, n, keep=True)), w6=1)
        await tb.store(r2, acc(1, n, keep=True), k)
    await tb.finish()


# ------------------------------------------------- issue 14: every channel of every region
COMPUTE = (I.DOTSIG, I.SIGDELTA, I.SCALAR, I.MULTSUB, I.L2REG)


def op_accs(op, dim, **mode):
    """One access word per channel of ``op``: vector channels of length ``dim``, scalar
    channels of length 1 (``mode``: encode_access flags, the same on every channel)."""
    return tuple(acc(dim if kind == "vector" else 1, 0, **mode) for _, _, kind in I.CHANNELS[op])


async def issue_compute(tb, op, regions, accs, it, dim, nb=False, flags=0):
    """A compute subroutine with channel k in ``regions[k]`` (w6/w7 as each one needs)."""
    f = tb.fmt
    w6, w7 = dim, 0
    if op == I.SCALAR:
        w6, w7 = int(f.to_fixed(0.25)), int(f.to_fixed(0.01))
    elif op == I.L2REG:
        w7 = int(f.to_fixed(0.125))
    await tb.issue(op, it, w1_of(regions, flags), accs, w6=w6, w7=w7, nb=nb)


@sim_test(timeout_us={"small": 120, "*": 1920})
async def every_channel_amem_and_fifo(dut):
    """Every (region, global channel) pair in both non-plain modes, against the ISS:
    (1) an amem-mode LOAD into each of the 18 channels' address memories of each region,
    then every subroutine with all its channels in that region in amem mode (reads gather
    from lines 0..15, writes scatter into lines 16..31), LOAD and STORE through theirs, and
    the region stored back; (2) every compute subroutine with channel k in region
    (rot + k) mod NREGIONS, every channel in FIFO mode (inputs pushed by FIFO LOADs, the
    result popped by a FIFO STORE), for each rotation; (3) an amem LOAD naming each absent
    global channel id (18..31) is refused with sub_err."""
    tb = EngineTB(dut)
    await tb.reset()
    D, L, AMD, NRG = tb.D, tb.L, tb.AMD, tb.NRG
    half = D // 2
    dim, it = 4, 2
    assert dim * it <= AMD and AMD % L == 0 and 2 * AMD <= half, tb.p
    NG = len(I.GLOBAL_CHANNELS)
    for r in range(NRG):
        for g, (op, k) in enumerate(I.GLOBAL_CHANNELS):
            write = I.CHANNELS[op][k][1] == "w"
            idx = (half if write else 0) + tb.rng.permutation(half)[:AMD]
            await tb.issue(I.LOAD, AMD // L, (1 << r) | (1 << 24), (0,), w7=g << 16,
                           lines=idx.reshape(-1, L))
        await tb.load(1 << r, acc(half, 0), 1, scale=SMALL)
        for op in COMPUTE:
            await issue_compute(tb, op, (r,) * len(I.CHANNELS[op]),
                                op_accs(op, dim, keep=True, amem=True), it, dim, flags=op & 1)
            await tb.store(r, acc(half, half), 1)
        await tb.load(1 << r, acc(AMD, 0, keep=True, amem=True), 1, scale=SMALL)   # LOAD.out scatter
        await tb.store(r, acc(half, half), 1)
        await tb.store(r, acc(AMD, 0, keep=True, amem=True), 1)                   # STORE.in gather
    await tb.pulse_fifo_clr()
    for rot in range(NRG):
        for op in COMPUTE:
            chans = I.CHANNELS[op]
            regs = tuple((rot + k) % NRG for k in range(len(chans)))
            for k, (_, rw, kind) in enumerate(chans):
                n = (dim if kind == "vector" else 1) * it
                if rw == "r":
                    await tb.load(1 << regs[k], acc(n, 0, fifo=True), 1, scale=SMALL)
            await issue_compute(tb, op, regs, op_accs(op, dim, fifo=True), it, dim)
            kw = len(chans) - 1
            await tb.store(regs[kw], acc((dim if chans[kw][2] == "vector" else 1) * it, 0, fifo=True), 1)
    for g in range(NG, 32):
        before = tb.errs[SUB_BIT[I.LOAD]]
        await tb.issue(I.LOAD, 1, 1 | (1 << 24), (0,), w7=g << 16, model=False, nb=True)
        await ReadOnly()
        assert (int(dut.sub_err.value) >> SUB_BIT[I.LOAD]) & 1, f"amem LOAD to absent channel {g}: no sub_err"
        assert int(dut.sub_busy.value) == 0, f"amem LOAD to absent channel {g} started"
        await ClockCycles(tb.clk, 2)
        assert tb.errs[SUB_BIT[I.LOAD]] == before + 1, f"channel {g}: err count {tb.errs}"
    tb.errs = [0] * 7
    await tb.finish()


@sim_test(timeout_us={"small": 200, "*": 3200})
async def producers_stall_on_full_fifo(dut):
    """Every compute subroutine writes its results in FIFO mode into a region whose FIFO is
    full, while a non-blocking STORE drains that FIFO against a slow Store stream: the
    producer's pipeline and its input channels must hold (en low, read buffers full) without
    losing or repeating a line.  Order for the ISS: the STORE pops the DEPTH prefilled lines,
    then the producer pushes its results, which a second STORE pops; each rotation puts the
    FIFO and the inputs in other regions."""
    tb = EngineTB(dut, st_p=0.15)
    await tb.reset()
    D, NRG = tb.D, tb.NRG
    dim, it = 4, 4
    await tb.pulse_fifo_clr()
    for rot in range(NRG):
        for op in COMPUTE:
            chans = I.CHANNELS[op]
            kw = len(chans) - 1
            regs = tuple((rot + 1 + k) % NRG for k in range(kw)) + (rot,)
            for k in range(kw):
                n = (dim if chans[k][2] == "vector" else 1) * it
                await tb.load(1 << regs[k], acc(n, 0), 1, scale=SMALL)
            await tb.load(1 << rot, acc(D, 0, fifo=True), 1, scale=SMALL)        # FIFO full
            await tb.issue(I.STORE, 1, w1_of((rot,)), (acc(D, 0, fifo=True),), nb=True)
            accs = tuple(acc(dim if kind == "vector" else 1, 0, keep=True) for _, _, kind in chans[:kw])
            nw = (dim if chans[kw][2] == "vector" else 1) * it
            await issue_compute(tb, op, regs, accs + (acc(nw // it, 0, fifo=True),), it, dim, nb=True,
                                flags=op & 1)
            await tb.wait_idle()
            await tb.store(rot, acc(nw, 0, fifo=True), 1)
    await tb.finish()


# ------------------------------------------------------------------ pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("small", "verilator")]))
def test_pipearch_engine(cfg, sim):
    run_core(CORE, cfg, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
