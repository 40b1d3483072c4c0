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

from golden.pipearch_region import CONFIGS, Region, encode_access
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.tb_common import record_bench, sim_seed, steady_cycles_per_beat

CORE = "pipearch_region"


class RegionTB:
    def __init__(self, dut, src_p=1.0, sink_p=1.0):
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
        for k, n in (("rd", self.NR), ("wr", self.NW)):
            for i in range(n):
                for f in ("start", "access", "iters", "amem_we", "amem_addr", "amem_data"):
                    getattr(dut, f"{k}{i}_{f}").value = 0
        self.src_p = src_p
        self._make_sources()
        self.sb = FixedScoreboard(dut)
        self.mon, self.exp, self.sinks = [], [], []
        for i in range(self.NR):
            n = f"m_axis_rd{i}"
            self.sinks.append(AxisSink(dut, n, dut.clk, Gate(self.seed * 13 + i + 101, sink_p)))
            self.mon.append(AxisMonitor(dut, n, dut.clk, reset=dut.rst))
            self.exp.append(self.sb.add_stream(self.mon[i], StreamSpec(n, [("line", self.L, self.W, 0)])))
        self.model = Region(self.D, self.L, self.config, self.NR, self.AMD)
        self.amem = {}
        self.dones = {}
        cocotb.start_soon(self._count_done())

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
        for c in range(timeout):
            if all(self.dones.get(k, 0) >= n for k, n in targets.items()):
                return c
            await RisingEdge(self.clk)
        raise AssertionError(f"timeout: done counts {self.dones}, wanted {targets}")

    async def run(self, jobs, timeout=100000) -> int:
        """Start ``jobs`` together and wait for all of their done pulses; returns cycles."""
        want = {}
        for kind, ch, _, _ in jobs:
            want[(kind, ch)] = self.dones.get((kind, ch), 0) + 1
        await self.start(jobs)
        return await self.wait_done(want, timeout)

    def fifo_count(self, q=0) -> int:
        cw = self.D.bit_length()
        return (int(self.dut.fifo_count.value) >> (q * cw)) & ((1 << cw) - 1)

    def fifo_readers(self):
        """Read channels that must drain the FIFO: every copy in the replicated config."""
        return list(range(self.NR)) if self.config == "replicated" else [0]

    async def finish(self, settle=20):
        await ClockCycles(self.clk, settle)
        for m in self.mon:
            assert m.protocol_errors == 0, f"{m.name}: {m.protocol_errors} AXI4-Stream hold violations"
        self.sb.check()


def rand_bram_access(tb, use_amem=False, max_len=None):
    D = tb.D
    length = int(tb.rng.integers(1, (max_len or D) + 1))
    offset = int(tb.rng.integers(0, D - length + 1))
    return encode_access(length, offset, keep=bool(tb.rng.integers(0, 2)), use_amem=use_amem)


@cocotb.test()
async def bram_random(dut):
    """BRAM mode: random writes (one channel at a time), then every read channel at once,
    random offsets/lengths/iterations/keep-count; random bubbles and backpressure."""
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


@cocotb.test()
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
    for rep in range(2):
        jobs = []
        for r in range(tb.NR):
            await tb.load_amem("rd", r, tb.rng.integers(0, D, AMD))
            length = int(tb.rng.integers(1, min(AMD, D) + 1))
            off = int(tb.rng.integers(0, D - length + 1))
            acc = encode_access(length, off, keep=bool((r + rep) % 2), use_amem=True)
            it = int(tb.rng.integers(1, 4))
            tb.read(r, acc, it)
            jobs.append(("rd", r, acc, it))
        await tb.run(jobs)
    await tb.finish()


@cocotb.test()
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
    for q in range(len(tb.fifo_readers()) if tb.config == "replicated" else 1):
        assert tb.fifo_count(q) == D
    assert int(tb.sig("wr", w, "busy").value) == 1
    assert int(getattr(dut, f"s_axis_wr{w}_tready").value) == 0, "writer did not stall on full"
    await RisingEdge(dut.clk)
    want = {("rd", r): 2 for r in tb.fifo_readers()}
    want[("wr", w)] = tb.dones.get(("wr", w), 0) + 1
    await tb.start([("rd", r, a4, n_it) for r in tb.fifo_readers()])
    await tb.wait_done(want)
    assert tb.fifo_count() == 0
    await tb.finish()


@cocotb.test()
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
        tb.read(fr, af, 1)
        if tb.config == "replicated":   # the other copies hold the same FIFO lines
            for r in range(tb.NR):
                if r != fr:
                    tb.read(r, af, 1)
        cyc_r = await tb.run([("rd", 0, ab, 1), ("rd", fr, af, 1)])
        dut._log.info("%s: BRAM+FIFO writes %d cycles, reads %d cycles for %d lines each",
                      tb.config, cyc_w, cyc_r, h)
        if tb.config == "type_replicated":
            assert cyc_w <= h + 4 and cyc_r <= h + 6, "BRAM and FIFO accesses did not overlap"
        if tb.config == "replicated":
            jobs = [("rd", r, af, 1) for r in range(tb.NR) if r != fr]
            await tb.run(jobs)
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


@cocotb.test()
async def illegal_access(dut):
    """Both/neither mode bit, length 0, offset+length > DEPTH, iterations 0: sticky err,
    done, no data moved; err_clr clears it; a legal access afterwards is exact."""
    tb = RegionTB(dut)
    await tb.reset()
    D = tb.D
    ok = encode_access(2, 0)
    bad = [(ok | (1 << 30), 1), (ok & ~(1 << 31), 1), (encode_access(0, 0), 1),
           (encode_access(2, D - 1), 1), (encode_access(D, 1), 1), (ok, 0)]
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


@cocotb.test()
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
    await ClockCycles(dut.clk, 15)
    assert int(tb.sig("rd", 0, "busy").value) == 1
    await tb.abort_and_reset()
    await ReadOnly()
    for r in range(tb.NR):
        assert int(tb.sig("rd", r, "busy").value) == 0
        assert int(getattr(dut, f"m_axis_rd{r}_tvalid").value) == 0
    for j in range(tb.NW):
        assert int(tb.sig("wr", j, "busy").value) == 0
    assert int(dut.fifo_count.value) == 0
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


@cocotb.test()
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


@cocotb.test()
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


@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("replicated", "icarus")]))
def test_pipearch_region(cfg, sim):
    run_core(CORE, cfg, sim)


def test_pipearch_region_vhdl_smoke():
    run_core(CORE, "type_replicated", "ghdl", testcase="bram_random,fifo_full_empty")
