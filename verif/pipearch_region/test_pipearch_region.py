"""pipearch_region: BRAM/FIFO modes, address memories, iterations, the three region
configurations, against golden.pipearch_region (the region's sequential model).

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
Every test queues each access on the model in an order the hardware cannot contradict
(writes before the reads of the same lines; FIFO pushes before their pops), then starts
the channels on the DUT, possibly overlapping, and compares every output line.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from golden.pipearch_region import CONFIGS, MAX_OFFSET, Region, encode_access
from scoreboards import protocol
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.pipearch_region import covermodel as funcov
from verif.tb_common import record_bench, sim_seed, sim_test, start_while_busy, steady_cycles_per_beat, wait_until

CORE = "pipearch_region"


class RegionTB:
    def __init__(self, dut, src_p=1.0, sink_p=1.0, unchecked=()):
        """``unchecked``: read channels left off the scoreboard; their lines are
        collected in ``self.got[ch]`` as (tdata, tlast) for the test to judge."""
        self.dut = dut
        self.p = dut_params()
        self.NR, self.NW, self.D = self.p["NR"], self.p["NW"], self.p["DEPTH"]
        self.AMD, self.L, self.W = self.p["AMEM_DEPTH"], self.p["LANES"], self.p["W"]
        self.config = CONFIGS[self.p["CONFIG"]]
        self.seed = sim_seed()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, self.p)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        dut.rst.value = 1
        dut.err_clr.value = 0
        dut.fifo_clr.value = 0
        for k, n in (("rd", self.NR), ("wr", self.NW)):
            for i in range(n):
                for f in ("start", "access", "iters", "amem_we", "amem_addr", "amem_data"):
                    getattr(dut, f"{k}{i}_{f}").value = 0
        self.src_p = src_p
        self._make_sources()
        self.sb = FixedScoreboard(dut)
        self.mon, self.exp, self.sinks = [], [], []
        self.got = {i: [] for i in unchecked}
        for i in range(self.NR):
            n = f"m_axis_rd{i}"
            self.sinks.append(AxisSink(dut, n, dut.clk, Gate(self.seed * 13 + i + 101, sink_p)))
            if i in self.got:
                self.mon.append(AxisMonitor(dut, n, dut.clk, callback=self.got[i].append, reset=dut.rst))
                self.exp.append(None)
            else:
                self.mon.append(AxisMonitor(dut, n, dut.clk, reset=dut.rst))
                self.exp.append(self.sb.add_stream(self.mon[i], StreamSpec(n, [("line", self.L, self.W, 0)])))
        self.model = Region(self.D, self.L, self.config, self.NR, self.AMD)
        self.amem = {}
        self.dones = {}
        cocotb.start_soon(self._count_done())
        funcov.observe(self)   # functional coverage of what the DUT does (covermodel.py)

    def _make_sources(self, salt=0):
        self.src = [AxisSource(self.dut, f"s_axis_wr{j}", self.dut.clk,
                               Gate(self.seed * 7 + j + 1 + salt, self.src_p)) for j in range(self.NW)]

    async def _count_done(self):
        sigs = [((k, i), getattr(self.dut, f"{k}{i}_done")) for k, n in (("rd", self.NR), ("wr", self.NW))
                for i in range(n)]
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            for key, s in sigs:
                if s.value.is_resolvable and int(s.value):
                    self.dones[key] = self.dones.get(key, 0) + 1

    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def abort_and_reset(self):
        for s in self.src:
            s.kill()
            s.tvalid.value = 0
        await self.reset()
        self._make_sources(salt=1000)
        for q in self.exp:
            q.clear()
        self.dones.clear()
        self.model = Region(self.D, self.L, self.config, self.NR, self.AMD)  # RAM contents unknown now
        self.amem = {}

    def sig(self, kind, ch, f):
        return getattr(self.dut, f"{kind}{ch}_{f}")

    async def load_amem(self, kind, ch, values):
        values = np.asarray(values, dtype=np.int64)
        for a, v in enumerate(values):
            self.sig(kind, ch, "amem_we").value = 1
            self.sig(kind, ch, "amem_addr").value = a
            self.sig(kind, ch, "amem_data").value = int(v)
            await RisingEdge(self.clk)
        self.sig(kind, ch, "amem_we").value = 0
        self.amem[(kind, ch)] = values

    def rand_lines(self, n):
        h = 1 << (self.W - 1)
        return self.rng.integers(-h, h, size=(n, self.L), dtype=np.int64)

    # ---- model side ----------------------------------------------------------------
    def write(self, ch, access, iters, lines=None):
        """Apply a write to the model and queue its lines on the source (unless rejected)."""
        f_len = (access >> 16) & 0x3FFF
        if lines is None:
            lines = self.rand_lines(f_len * iters)
        err = self.model.write(access, iters, lines, self.amem.get(("wr", ch)))
        if err is None:
            for ln in lines:
                self.src[ch].append((pack_lanes(ln, self.W), 0))
        return err

    def read(self, ch, access, iters):
        """Apply a read to the model and queue the expected lines (tlast per iteration)."""
        out = self.model.read(ch, access, iters, self.amem.get(("rd", ch)))
        if isinstance(out, str):
            return out
        ln_per_it = (access >> 16) & 0x3FFF
        for k, ln in enumerate(out):
            self.exp[ch].append((pack_lanes(ln, self.W), 1 if (k + 1) % ln_per_it == 0 else 0))
        return out

    # ---- DUT side ------------------------------------------------------------------
    async def start(self, jobs):
        """Pulse start on every (kind, ch, access, iters) in the same cycle."""
        for kind, ch, access, iters in jobs:
            assert int(self.sig(kind, ch, "busy").value) == 0, f"{kind}{ch} busy at start"
            self.sig(kind, ch, "access").value = int(access)
            self.sig(kind, ch, "iters").value = int(iters)
            self.sig(kind, ch, "start").value = 1
        await RisingEdge(self.clk)
        for kind, ch, _, _ in jobs:
            self.sig(kind, ch, "start").value = 0

    async def wait_done(self, targets, timeout=100000) -> int:
        """Wait until done counts reach ``targets`` {(kind, ch): count}; returns cycles."""
        return await wait_until(self.clk, lambda: all(self.dones.get(k, 0) >= n for k, n in targets.items()),
                                timeout - 1, "rd*/wr*_done: no pulse", expect=f"done counts {targets}",
                                detail=lambda: f"done counts {self.dones}")

    async def run(self, jobs, timeout=100000) -> int:
        """Start ``jobs`` together and wait for all of their done pulses; returns cycles."""
        want = {}
        for kind, ch, _, _ in jobs:
            want[(kind, ch)] = self.dones.get((kind, ch), 0) + 1
        await self.start(jobs)
        return await self.wait_done(want, timeout)

    def fifo_count(self) -> int:
        return int(self.dut.fifo_count.value)

    def fifo_readers(self):
        """The read channel that drains the FIFO (one queue in every configuration; any
        channel may pop it: the replicated config uses the last one, reading its own copy)."""
        return [self.NR - 1] if self.config == "replicated" else [0]

    async def fifo_clear(self):
        """Pulse ``fifo_clr`` for one cycle (every channel idle) and empty the model's FIFO."""
        for k, n in (("rd", self.NR), ("wr", self.NW)):
            for i in range(n):
                assert int(self.sig(k, i, "busy").value) == 0, f"{k}{i} busy at fifo_clr"
        self.dut.fifo_clr.value = 1
        await RisingEdge(self.clk)
        self.dut.fifo_clr.value = 0
        self.model.reset_fifo()

    async def finish(self, settle=20):
        await ClockCycles(self.clk, settle)
        for m in self.mon:
            assert m.protocol_errors == 0, f"{m.name}: {m.protocol_errors} AXI4-Stream hold violations"
        self.sb.check()


def rand_offset(tb):
    """Random legal offset: usually 0..DEPTH-1, one time in three anywhere in the
    14-bit range 0..0x3FFF (taken modulo DEPTH)."""
    hi = MAX_OFFSET + 1 if tb.rng.integers(0, 3) == 0 else tb.D
    return int(tb.rng.integers(0, hi))


def rand_bram_access(tb, use_amem=False, max_len=None):
    """Random legal BRAM-mode access: any offset (sometimes >= DEPTH), so about half of
    them wrap."""
    D = tb.D
    length = int(tb.rng.integers(1, (max_len or D) + 1))
    offset = rand_offset(tb)
    return encode_access(length, offset, keep=bool(tb.rng.integers(0, 2)), use_amem=use_amem)


@sim_test(timeout_us={"default": 70, "*": 280})  # measured 12.2 us on default
async def bram_random(dut):
    """BRAM mode: random writes (one channel at a time), then every read channel at once,
    random offsets (some >= DEPTH, anywhere in 0..0x3FFF)/lengths/iterations/keep-count
    (accesses past the end wrap); random bubbles and backpressure."""
    tb = RegionTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    full = encode_access(tb.D, 0)
    ch = int(tb.rng.integers(0, tb.NW))
    tb.write(ch, full, 1)                           # define every line first
    await tb.run([("wr", ch, full, 1)])
    for _ in range(5):
        ch = int(tb.rng.integers(0, tb.NW))
        a, it = rand_bram_access(tb), int(tb.rng.integers(1, 4))
        tb.write(ch, a, it)
        await tb.run([("wr", ch, a, it)])
        jobs = []
        for r in range(tb.NR):
            a, it = rand_bram_access(tb), int(tb.rng.integers(1, 4))
            tb.read(r, a, it)
            jobs.append(("rd", r, a, it))
        await tb.run(jobs)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.9 us on default
async def sparse_address_memory(dut):
    """Use-address-memory on writes (a permutation) and reads (random entries with
    repeats), with offsets, keep-count and several iterations (index wraps modulo AMEM_DEPTH)."""
    tb = RegionTB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    D, AMD = tb.D, tb.AMD
    full = encode_access(D, 0)
    tb.write(1 % tb.NW, full, 1)                    # define every line (RAM survives earlier tests)
    await tb.run([("wr", 1 % tb.NW, full, 1)])
    perm = tb.rng.permutation(D)[:AMD] if AMD <= D else tb.rng.integers(0, D, AMD)
    await tb.load_amem("wr", 0, perm)
    a = encode_access(min(AMD, D), 0, keep=True, use_amem=True)
    tb.write(0, a, 2)
    await tb.run([("wr", 0, a, 2)])
    a = encode_access(min(AMD, D), 0, use_amem=True)   # without keep-count: entries 0.. again each iteration
    tb.write(0, a, 2)
    await tb.run([("wr", 0, a, 2)])
    for rep in range(2):
        jobs = []
        for r in range(tb.NR):
            await tb.load_amem("rd", r, tb.rng.integers(0, D, AMD))
            length = int(tb.rng.integers(1, min(AMD, D) + 1))
            off = rand_offset(tb)
            acc = encode_access(length, off, keep=bool((r + rep) % 2), use_amem=True)
            it = int(tb.rng.integers(1, 4))
            tb.read(r, acc, it)
            jobs.append(("rd", r, acc, it))
        await tb.run(jobs)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.6 us on default
async def fifo_full_empty(dut):
    """FIFO mode: a reader started on an empty FIFO stalls (tvalid low); a writer of
    DEPTH+4 lines stalls at DEPTH (tready low, fifo_count = DEPTH) until it is drained."""
    tb = RegionTB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    D = tb.D
    # empty: reader first
    a4 = encode_access(4, 0, fifo=True)
    tb.write(0, a4, 2)
    for r in tb.fifo_readers():
        tb.read(r, a4, 2)
    await tb.start([("rd", r, a4, 2) for r in tb.fifo_readers()])
    await ClockCycles(dut.clk, 12)
    for r in tb.fifo_readers():
        assert int(tb.sig("rd", r, "busy").value) == 1
        assert int(getattr(dut, f"m_axis_rd{r}_tvalid").value) == 0, "reader did not stall on empty"
    assert tb.fifo_count() == 0
    want = {("rd", r): 1 for r in tb.fifo_readers()}
    want[("wr", 0)] = 1
    await tb.start([("wr", 0, a4, 2)])
    await tb.wait_done(want)
    assert tb.fifo_count() == 0
    # full: writer first, readers later
    n_it = D // 4 + 1
    tb.write(1 % tb.NW, a4, D // 4)        # model in the order the hardware allows
    for r in tb.fifo_readers():
        tb.read(r, a4, 1)
    tb.write(1 % tb.NW, a4, 1)
    for r in tb.fifo_readers():
        tb.read(r, a4, D // 4)
    tb.src_p = 1.0
    w = 1 % tb.NW
    await tb.start([("wr", w, a4, n_it)])
    for _ in range(D * 4):
        await RisingEdge(dut.clk)
        if tb.fifo_count() == D:
            break
    await ClockCycles(dut.clk, 10)
    await ReadOnly()
    assert tb.fifo_count() == D, f"fifo_count {tb.fifo_count()} != DEPTH {D}"
    assert int(tb.sig("wr", w, "busy").value) == 1
    assert int(getattr(dut, f"s_axis_wr{w}_tready").value) == 0, "writer did not stall on full"
    await RisingEdge(dut.clk)
    want = {("rd", r): 2 for r in tb.fifo_readers()}
    want[("wr", w)] = tb.dones.get(("wr", w), 0) + 1
    await tb.start([("rd", r, a4, n_it) for r in tb.fifo_readers()])
    await tb.wait_done(want)
    assert tb.fifo_count() == 0
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.9 us on default
async def concurrent_modes(dut):
    """A BRAM-mode and a FIFO-mode access at the same time (write side, then read side),
    and every read channel reading the same lines at once; cycle counts show the
    parallelism the configuration promises."""
    tb = RegionTB(dut)
    await tb.reset()
    D = tb.D
    h = D // 2
    ab = encode_access(h, h)                        # lines [D/2, D): away from the FIFO ring [0, n)
    n = h
    af = encode_access(n, 0, fifo=True)
    wf = 1 % tb.NW
    tb.write(0, ab, 1)
    tb.write(wf, af, 1)
    jobs = [("wr", 0, ab, 1)] + ([("wr", wf, af, 1)] if wf != 0 else [])
    cyc_w = await tb.run(jobs)
    if wf == 0:
        await tb.run([("wr", 0, af, 1)])
    if tb.NR >= 2:
        tb.read(0, ab, 1)
        fr = 1
        tb.read(fr, af, 1)              # one queue: the FIFO reader pops every pushed line
        cyc_r = await tb.run([("rd", 0, ab, 1), ("rd", fr, af, 1)])
        dut._log.info("%s: BRAM+FIFO writes %d cycles, reads %d cycles for %d lines each",
                      tb.config, cyc_w, cyc_r, h)
        assert tb.fifo_count() == 0
        if tb.config == "type_replicated":
            assert cyc_w <= h + 4 and cyc_r <= h + 6, "BRAM and FIFO accesses did not overlap"
        if tb.config == "replicated":   # each reader on its own copy
            assert cyc_r <= h + 6, "replicated BRAM-mode and FIFO-mode reads did not overlap"
    # all read channels on the same lines
    jobs = []
    for r in range(tb.NR):
        tb.read(r, ab, 2)
        jobs.append(("rd", r, ab, 2))
    cyc = await tb.run(jobs)
    dut._log.info("%s: %d read channels x %d lines: %d cycles", tb.config, tb.NR, 2 * h, cyc)
    if tb.config == "replicated":
        assert cyc <= 2 * h + 6, "replicated reads did not run in parallel"
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.9 us on default
async def illegal_access(dut):
    """Both/neither mode bit, length 0, length > DEPTH (also with an offset >= DEPTH, which
    alone is legal), iterations 0: sticky err, done, no data moved; err_clr clears it; a
    legal access afterwards is exact."""
    tb = RegionTB(dut)
    await tb.reset()
    D = tb.D
    ok = encode_access(2, 0)
    big = min(D, MAX_OFFSET)                        # an offset >= DEPTH where one exists
    bad = [(ok | (1 << 30), 1), (ok & ~(1 << 31), 1), (encode_access(0, 0), 1),
           (encode_access(D + 1, 0), 1), (encode_access(D + 1, big), 1),
           (encode_access(0, MAX_OFFSET), 1), (encode_access(2, big) | (1 << 30), 1),
           (encode_access(2, big), 0), (ok, 0)]
    z = np.zeros((2, tb.L), dtype=np.int64)
    for kind, ch in (("rd", tb.NR - 1), ("wr", tb.NW - 1)):
        tb.src[tb.NW - 1].append((pack_lanes(z[0], tb.W), 0))   # bait: must not be taken
        for acc, it in bad:
            err = tb.model.write(acc, it, z) if kind == "wr" else tb.model.read(ch, acc, it)
            assert isinstance(err, str), f"model accepted {acc:#x}/{it}"
            await tb.run([(kind, ch, acc, it)], timeout=5)
            await ReadOnly()
            assert int(tb.sig(kind, ch, "err").value) == 1, f"{kind}{ch}: err not set for {acc:#x}/{it}"
            assert int(tb.sig(kind, ch, "busy").value) == 0
            await RisingEdge(dut.clk)
        assert tb.src[tb.NW - 1].sent == 0, "a rejected write consumed a line"
        tb.src[tb.NW - 1].kill()
        tb.src[tb.NW - 1].tvalid.value = 0
        protocol.waive_withdraw(f"s_axis_wr{tb.NW - 1}")  # the bait is withdrawn on purpose
        tb._make_sources(salt=77)
        dut.err_clr.value = 1
        await RisingEdge(dut.clk)
        dut.err_clr.value = 0
        await ReadOnly()
        assert int(tb.sig(kind, ch, "err").value) == 0, "err_clr did not clear err"
        await RisingEdge(dut.clk)
    tb.write(tb.NW - 1, ok, 1)
    await tb.run([("wr", tb.NW - 1, ok, 1)])
    tb.read(tb.NR - 1, ok, 1)
    await tb.run([("rd", tb.NR - 1, ok, 1)])
    assert int(tb.sig("rd", tb.NR - 1, "err").value) == 0
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.5 us on default
async def wrapping_access(dut):
    """Accesses that run past the end of the region (offset + length > DEPTH, legal) wrap
    to line 0: a wrapping write and wrapping reads (with and without keep-count), checked
    against the golden model and by plain reads of both ends of the region."""
    tb = RegionTB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    D = tb.D
    full = encode_access(D, 0)
    tb.write(0, full, 1)                            # define every line first
    await tb.run([("wr", 0, full, 1)])
    w = tb.NW - 1
    aw = encode_access(D // 2 + 2, D - 3)           # lines D-3 .. D-1, then 0 .. D/2-2
    assert tb.write(w, aw, 1) is None, "golden model rejected a wrapping access"
    await tb.run([("wr", w, aw, 1)])
    jobs = []
    for r in range(tb.NR):
        a = (encode_access(D, D - 1 - r), encode_access(5, D - 2, keep=True),
             encode_access(D // 2, 0))[r % 3]
        it = 1 + (r % 3 == 1)
        assert not isinstance(tb.read(r, a, it), str), "golden model rejected a wrapping read"
        jobs.append(("rd", r, a, it))
    await tb.run(jobs)
    r = tb.NR - 1
    tail = encode_access(3, D - 3)                  # the end of the region, no wrap
    tb.read(r, tail, 1)
    await tb.run([("rd", r, tail, 1)])
    for k, n in (("rd", tb.NR), ("wr", tb.NW)):
        for i in range(n):
            assert int(tb.sig(k, i, "err").value) == 0, f"{k}{i}: a legal wrapping access set err"
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 4.0 us on default
async def large_offset_access(dut):
    """Offsets >= DEPTH are legal (any 14-bit offset, taken modulo DEPTH): offsets DEPTH,
    2*DEPTH-1, 0x3FFF and others on writes and reads (BRAM mode with and without keep-count
    and wrapping past the end, use-address-memory, FIFO mode, which ignores the offset),
    checked against the golden model and by plain reads with offset < DEPTH; no err."""
    tb = RegionTB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    D = tb.D
    assert D < MAX_OFFSET + 1, "every 14-bit offset is below DEPTH: nothing to test"
    full = encode_access(D, 0)
    tb.write(0, full, 1)                            # define every line first
    await tb.run([("wr", 0, full, 1)])
    w = tb.NW - 1
    writes = [(encode_access(3, D), 1),                     # lines 0..2
              (encode_access(2, 2 * D - 1), 1),             # lines D-1, 0 (wraps)
              (encode_access(3, MAX_OFFSET, keep=True), 2)]  # (0x3FFF mod D) + 0..5
    for aw, it in writes:
        assert tb.write(w, aw, it) is None, f"golden model rejected the write {aw:#x}"
        await tb.run([("wr", w, aw, it)])
    offs = [D, 2 * D - 1, MAX_OFFSET, 3 * D + 1, MAX_OFFSET - D + 2]
    for rep in range(2):
        jobs = []
        for r in range(tb.NR):
            off = offs[(r + 2 * rep) % len(offs)]
            a = (encode_access(D, off), encode_access(4, off, keep=True),
                 encode_access(D // 2 + 1, off))[(r + rep) % 3]
            it = 1 + ((r + rep) % 3 == 1)
            assert not isinstance(tb.read(r, a, it), str), f"golden model rejected the read {a:#x}"
            jobs.append(("rd", r, a, it))
        await tb.run(jobs)
    # plain reads (offset < DEPTH) of the lines written through large offsets
    r = tb.NR - 1
    for a in (encode_access(3, 0), encode_access(2, D - 2), encode_access(6, MAX_OFFSET % D)):
        tb.read(r, a, 1)
        await tb.run([("rd", r, a, 1)])
    # use-address-memory with a large offset
    await tb.load_amem("rd", 0, tb.rng.integers(0, D, tb.AMD))
    a = encode_access(min(tb.AMD, D), 2 * D + 3, keep=True, use_amem=True)
    tb.read(0, a, 2)
    await tb.run([("rd", 0, a, 2)])
    # FIFO mode ignores the offset: push with offset 0x3FFF, pop with offset DEPTH
    fr = tb.fifo_readers()[0]
    push, pop = encode_access(3, MAX_OFFSET, fifo=True), encode_access(3, D, fifo=True)
    assert tb.write(w, push, 2) is None, "golden model rejected a FIFO push with a large offset"
    assert not isinstance(tb.read(fr, pop, 2), str), "golden model rejected a FIFO pop with a large offset"
    await tb.run([("wr", w, push, 2)])
    await tb.run([("rd", fr, pop, 2)])
    assert tb.fifo_count() == 0
    for k, n in (("rd", tb.NR), ("wr", tb.NW)):
        for i in range(n):
            assert int(tb.sig(k, i, "err").value) == 0, f"{k}{i}: a legal large-offset access set err"
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.5 us on default
async def fifo_clear(dut):
    """fifo_clr empties the FIFO: pushed and partly popped lines are dropped,
    fifo_count returns to 0 and the next push lands at line 0 (seen by a BRAM-mode read
    where the FIFO shares the RAM) and is the next line popped."""
    tb = RegionTB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    D = tb.D
    fr = tb.fifo_readers()[0]
    full = encode_access(D, 0)
    tb.write(0, full, 1)                            # define every line (RAM survives earlier tests)
    await tb.run([("wr", 0, full, 1)])
    a5, a2 = encode_access(5, 0, fifo=True), encode_access(2, 0, fifo=True)
    tb.write(0, a5, 1)
    await tb.run([("wr", 0, a5, 1)])
    tb.read(fr, a2, 1)                              # read pointer 2, write pointer 5
    await tb.run([("rd", fr, a2, 1)])
    await ReadOnly()
    assert tb.fifo_count() == tb.model.count == 3
    await RisingEdge(dut.clk)
    await tb.fifo_clear()
    await ReadOnly()
    assert tb.fifo_count() == tb.model.count == 0, f"fifo_count {tb.fifo_count()} after fifo_clr"
    await RisingEdge(dut.clk)
    n = min(4, D)
    an = encode_access(n, 0, fifo=True)
    w = tb.NW - 1
    tb.write(w, an, 1)
    await tb.run([("wr", w, an, 1)])
    await ReadOnly()
    assert tb.fifo_count() == tb.model.count == n
    await RisingEdge(dut.clk)
    head = encode_access(n + 2, 0)                  # lines 0 .. n+1: the new pushes first
    tb.read(0, head, 1)
    await tb.run([("rd", 0, head, 1)])
    tb.read(fr, an, 1)                              # pops exactly the lines pushed after the clear
    await tb.run([("rd", fr, an, 1)])
    await ReadOnly()
    assert tb.fifo_count() == tb.model.count == 0
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 3.5 us on default
async def shared_fifo_readers(dut):
    """Every read channel pops the one FIFO queue at the same time (random lengths and
    iterations, readers started before the writer, more lines than the FIFO holds,
    random bubbles and backpressure): each pushed line is popped exactly once, by one
    reader; each reader gets its lines in queue order (the golden model's pop order),
    tlast per iteration; total popped = total pushed; fifo_count ends at 0."""
    if dut_params()["NR"] < 2:
        return
    tb = RegionTB(dut, src_p=0.7, sink_p=0.5, unchecked=tuple(range(dut_params()["NR"])))
    await tb.reset()
    D, NR = tb.D, tb.NR
    while True:                                     # each reader: length 1..DEPTH, 1..3 iterations
        rl = [int(v) for v in tb.rng.integers(1, D + 1, NR)]
        ri = [int(v) for v in tb.rng.integers(1, 4, NR)]
        N = sum(a * b for a, b in zip(rl, ri))
        if N >= D + D // 2:                         # the writer must stall on a full FIFO
            break
    a1 = encode_access(1, 0, fifo=True)             # the writer pushes N lines, one per iteration
    lines = tb.rand_lines(N)
    assert len({ln.tobytes() for ln in lines}) == N, "draw distinct lines"
    w = tb.NW - 1
    # the golden queue order: the model pushes and pops with one reader (line by line:
    # the model's sequential FIFO holds at most DEPTH lines)
    order = []
    for ln in lines:
        assert tb.model.write(a1, 1, ln[None, :]) is None
        order += [pack_lanes(x, tb.W) for x in tb.model.read(0, a1, 1)]
    jobs = [("rd", r, encode_access(rl[r], 0, fifo=True), ri[r]) for r in range(NR)]
    want = {("rd", r): tb.dones.get(("rd", r), 0) + 1 for r in range(NR)}
    want[("wr", w)] = tb.dones.get(("wr", w), 0) + 1
    await tb.start(jobs)
    await ClockCycles(dut.clk, 3)
    for ln in lines:
        tb.src[w].append((pack_lanes(ln, tb.W), 0))
    await tb.start([("wr", w, a1, N)])
    await tb.wait_done(want)
    await ClockCycles(dut.clk, 3)
    for k, n in (("rd", NR), ("wr", tb.NW)):
        for i in range(n):
            assert int(tb.sig(k, i, "err").value) == 0, f"{k}{i}: err"
    assert tb.fifo_count() == 0, f"fifo_count {tb.fifo_count()} after popping every line"
    pos = {d: k for k, d in enumerate(order)}
    seen = []
    owner = {}
    for r in range(NR):
        got = tb.got[r]
        assert len(got) == rl[r] * ri[r], f"rd{r}: {len(got)} lines, started for {rl[r]}x{ri[r]}"
        idx = []
        for k, (d, last) in enumerate(got):
            assert d in pos, f"rd{r} line {k}: 0x{d:x} was never pushed"
            assert last == int((k + 1) % rl[r] == 0), f"rd{r} line {k}: tlast {last}"
            idx.append(pos[d])
            owner[pos[d]] = r
        assert idx == sorted(idx), f"rd{r}: lines out of queue order {idx}"
        seen += idx
    assert len(seen) == len(set(seen)), "a pushed line was popped more than once"
    assert sorted(seen) == list(range(N)), "total popped != total pushed"
    inter = sum(owner[k] != owner[k + 1] for k in range(N - 1))
    dut._log.info("%s: %d lines popped by %d readers (%s), %d reader switches in queue order",
                  tb.config, N, NR, [f"{a}x{b}" for a, b in zip(rl, ri)], inter)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 2.0 us on default
async def reset_mid_access(dut):
    """Reset during a FIFO write and a BRAM read under backpressure: every channel idle,
    FIFO empty, no output valid; new accesses afterwards are exact."""
    tb = RegionTB(dut, src_p=0.9, sink_p=0.4)
    await tb.reset()
    D = tb.D
    full = encode_access(D, 0)
    tb.write(0, full, 1)
    await tb.run([("wr", 0, full, 1)])
    hi = encode_access(D // 2, D // 2)              # lines the FIFO ring [0, D/2) does not touch
    tb.read(0, hi, 4)
    af = encode_access(D // 2, 0, fifo=True)
    w = 1 % tb.NW
    tb.write(w, af, 1)
    await tb.start([("rd", 0, hi, 4), ("wr", w, af, 1)])
    await ClockCycles(dut.clk, int(tb.rng.integers(1, 41)))     # seeded random reset cycle
    assert int(tb.sig("rd", 0, "busy").value) == 1
    await tb.abort_and_reset()
    await ReadOnly()
    for r in range(tb.NR):
        assert int(tb.sig("rd", r, "busy").value) == 0
        assert int(getattr(dut, f"m_axis_rd{r}_tvalid").value) == 0
    for j in range(tb.NW):
        assert int(tb.sig("wr", j, "busy").value) == 0
    assert int(dut.fifo_count.value) == 0
    for k, n in (("rd", tb.NR), ("wr", tb.NW)):
        for i in range(n):
            assert int(tb.sig(k, i, "err").value) == 0 and int(tb.sig(k, i, "done").value) == 0, \
                f"{k}{i}: err/done not at reset values"
    await RisingEdge(dut.clk)
    a8 = encode_access(min(8, D), 0)
    tb.write(0, a8, 1)
    await tb.run([("wr", 0, a8, 1)])
    a3 = encode_access(3, 0, fifo=True)
    tb.write(w, a3, 1)
    await tb.run([("wr", w, a3, 1)])
    tb.read(0, a8, 2)
    await tb.run([("rd", 0, a8, 2)])
    for r in tb.fifo_readers():
        tb.read(r, a3, 1)
    await tb.run([("rd", r, a3, 1) for r in tb.fifo_readers()])
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})  # measured 8.8 us on default
async def start_while_busy_ignored(dut):
    """Every channel: start pulses with another access word and iteration count (a legal
    one, then a rejected one) while the channel is busy: the access in flight completes
    exactly as first configured (written lines read back bit-exact, read lines and tlast
    exact), one done per accepted start, err stays clear, no extra line, and the next
    legal start on the channel works."""
    tb = RegionTB(dut, src_p=0.7, sink_p=0.5)
    await tb.reset()
    D = tb.D
    alt_ok = dict(access=encode_access(1, D // 2 + 1, keep=True), iters=3)
    alt_bad = dict(access=0, iters=0)
    given = 0
    want = {}
    for j in range(tb.NW):
        full = encode_access(D, j * 5)
        tb.write(j, full, 2)
        await tb.start([("wr", j, full, 2)])
        for alt in (alt_ok, alt_bad):
            given += await start_while_busy(dut, tb.clk, alt, start=f"wr{j}_start", busy=f"wr{j}_busy",
                                            cfg_prefix=f"wr{j}_", pulses=2)
        want[("wr", j)] = 1
        await tb.wait_done(want)
    for r in range(tb.NR):
        a = encode_access(max(1, D // 2), r * 3 + 1, keep=True)
        tb.read(r, a, 3)
        await tb.start([("rd", r, a, 3)])
        for alt in (alt_ok, alt_bad):
            given += await start_while_busy(dut, tb.clk, alt, start=f"rd{r}_start", busy=f"rd{r}_busy",
                                            cfg_prefix=f"rd{r}_", pulses=2)
        want[("rd", r)] = 1
        await tb.wait_done(want)
    dut._log.info("%d starts given while busy", given)
    await ClockCycles(dut.clk, 30)
    assert tb.dones == want, f"done counts {tb.dones}, one per accepted start {want}"
    for k, n in (("rd", tb.NR), ("wr", tb.NW)):
        for i in range(n):
            assert int(tb.sig(k, i, "err").value) == 0, f"{k}{i}_err set by an ignored start"
            assert int(tb.sig(k, i, "busy").value) == 0, f"{k}{i} busy after its only access"
    # the next legal start on every channel
    a = encode_access(min(5, D), 7)
    for j in range(tb.NW):
        tb.write(j, a, 1)
        await tb.run([("wr", j, a, 1)])
    for r in range(tb.NR):
        tb.read(r, a, 2)
    await tb.run([("rd", r, a, 2) for r in range(tb.NR)])
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})
async def errors_sticky_top_length_bit(dut):
    """Every read and write channel is given an access whose 14-bit length field has its top
    bit set (8192 + 2, above any depth; the model refuses it): each sets err and moves no
    data; every err then stays set over 16 idle cycles without err_clr, and one err_clr
    pulse clears all of them at once."""
    tb = RegionTB(dut)
    await tb.reset()
    bad = encode_access((1 << 13) + 2, 0)
    chans = [("rd", r) for r in range(tb.NR)] + [("wr", j) for j in range(tb.NW)]
    for kind, ch in chans:
        z = np.zeros(((1 << 13) + 2, tb.L), dtype=np.int64)
        err = tb.model.write(bad, 1, z) if kind == "wr" else tb.model.read(ch, bad, 1)
        assert isinstance(err, str), f"model accepted {bad:#x}"
        await tb.run([(kind, ch, bad, 1)], timeout=5)
        await ReadOnly()
        assert int(tb.sig(kind, ch, "err").value) == 1, f"{kind}{ch}: err not set for length 8194"
        assert int(tb.sig(kind, ch, "busy").value) == 0, f"{kind}{ch}: busy after a refused access"
        await RisingEdge(dut.clk)
    for _ in range(16):
        await RisingEdge(dut.clk)
        await ReadOnly()
        for kind, ch in chans:
            assert int(tb.sig(kind, ch, "err").value) == 1, f"{kind}{ch}_err cleared without err_clr"
    await RisingEdge(dut.clk)
    dut.err_clr.value = 1
    await RisingEdge(dut.clk)
    dut.err_clr.value = 0
    await ReadOnly()
    for kind, ch in chans:
        assert int(tb.sig(kind, ch, "err").value) == 0, f"{kind}{ch}: err_clr did not clear err"
    for j in range(tb.NW):
        assert tb.src[j].sent == 0, f"a refused write took a line on s_axis_wr{j}"
    await RisingEdge(dut.clk)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})
async def iterations_with_top_bit(dut):
    """Every read channel: a one-line read of 32768 + 3 iterations (the top bit of the 16-bit
    iteration count set) must still be running after 300 lines, each line the stored one with
    tlast (one line per iteration); then a reset aborts it (a full run would be 32771 cycles)."""
    nr = dut_params()["NR"]
    tb = RegionTB(dut, unchecked=tuple(range(nr)))
    D = tb.D
    for r in range(nr):
        await tb.reset()
        a = encode_access(1, (5 * r + 1) % D)
        tb.write(0, a, 1)
        await tb.run([("wr", 0, a, 1)])
        want = pack_lanes(tb.model.read(r, a, 1)[0], tb.W)
        tb.got[r].clear()
        await tb.start([("rd", r, a, (1 << 15) + 3)])
        await wait_until(tb.clk, lambda: len(tb.got[r]) >= 300, 2000, f"rd{r}: 300 lines",
                         expect="300 lines of a 32771-iteration read")
        await ReadOnly()
        assert int(tb.sig("rd", r, "busy").value) == 1, f"rd{r} finished a 32771-iteration read early"
        bad = [k for k, (d, last) in enumerate(tb.got[r]) if int(d) != want or int(last) != 1]
        assert not bad, f"rd{r}: lines {bad[:5]} differ from the stored line / tlast"
        await RisingEdge(dut.clk)    # the reset at the top of the loop (or below) aborts the read
    await tb.reset()
    await ReadOnly()
    assert all(int(tb.sig("rd", r, "busy").value) == 0 for r in range(nr)), "a read survived the reset"
    await RisingEdge(dut.clk)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.4 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expectation, an extra output and a dropped output must
    each make the scoreboard fail."""
    tb = RegionTB(dut)
    await tb.reset()
    a = encode_access(4, 0)
    tb.write(0, a, 1)
    await tb.run([("wr", 0, a, 1)])
    tb.read(0, a, 1)
    q = tb.exp[0]
    d, last = q[2]
    q[2] = (d ^ 1, last)
    await tb.run([("rd", 0, a, 1)])
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    tb.read(0, a, 1)
    q.pop()
    await tb.run([("rd", 0, a, 1)])
    await ClockCycles(dut.clk, 5)
    assert tb.sb.errors == 1, "extra output not detected"
    tb.sb.errors = 0
    q.append((123, 1))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@sim_test(timeout_us={"default": 90, "*": 360})  # measured 15.8 us on default
async def bench_throughput(dut):
    """Benchmark (reported, not asserted): lines per cycle per channel with no bubbles and
    always-ready sinks; each channel alone, then every read channel at once. Ideal 1.0."""
    tb = RegionTB(dut)
    await tb.reset()
    D = tb.D
    full = encode_access(D, 0)
    it = 4
    metrics = {}
    for j in range(tb.NW):
        tb.write(j, full, it)
        cyc = await tb.run([("wr", j, full, it)])
        metrics[f"wr{j}_lines_per_cycle"] = round(D * it / (cyc - 1), 4)
    for r in range(tb.NR):
        n0 = len(tb.mon[r].times)
        tb.read(r, full, it)
        await tb.run([("rd", r, full, it)])
        metrics[f"rd{r}_lines_per_cycle"] = round(1.0 / steady_cycles_per_beat(tb.mon[r].times[n0:]), 4)
    n0 = [len(m.times) for m in tb.mon]
    jobs = []
    for r in range(tb.NR):
        tb.read(r, full, it)
        jobs.append(("rd", r, full, it))
    cyc = await tb.run(jobs)
    # concurrent: every read channel's lines over the whole phase (shared ports split 1.0)
    span = max(tb.mon[r].times[-1] for r in range(tb.NR)) - min(tb.mon[r].times[n0[r]] for r in range(tb.NR)) + 1
    for r in range(tb.NR):
        metrics[f"rd{r}_concurrent_lines_per_cycle"] = round((len(tb.mon[r].times) - n0[r]) / span, 4)
    metrics["concurrent_aggregate_lines_per_cycle"] = round(
        sum(len(tb.mon[r].times) - n0[r] for r in range(tb.NR)) / span, 4)
    metrics["concurrent_phase_cycles"] = cyc
    if tb.config == "type_replicated" and tb.NR >= 2:
        # one BRAM-mode and one FIFO-mode reader at once: separate RAMs, 1.0 each
        af = encode_access(D, 0, fifo=True)
        tb.write(1 % tb.NW, af, 1)
        await tb.run([("wr", 1 % tb.NW, af, 1)])
        n0 = [len(m.times) for m in tb.mon]
        tb.read(0, full, 1)
        tb.read(1, af, 1)
        await tb.run([("rd", 0, full, 1), ("rd", 1, af, 1)])
        span = max(tb.mon[r].times[-1] for r in (0, 1)) - min(tb.mon[r].times[n0[r]] for r in (0, 1)) + 1
        metrics["bram_fifo_concurrent_lines_per_cycle"] = [
            round((len(tb.mon[r].times) - n0[r]) / span, 4) for r in (0, 1)]
    await tb.finish()
    worst = min(v for k, v in metrics.items() if k.endswith("lines_per_cycle") and "concurrent" not in k)
    dut._log.info("throughput %s", metrics)
    record_bench(CORE, unit="line", config=tb.config, lines_per_cycle_worst_alone=worst,
                 cycles_per_unit=round(1.0 / worst, 4), ideal=1.0, **metrics)


@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("replicated", "icarus"), ("default", "ghdl")]))
def test_pipearch_region(cfg, sim):
    run_core(CORE, cfg, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
