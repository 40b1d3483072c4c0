"""cosmic_memory_schedule_unit: schedule walk, shifter, broadcast, writes and error flags
against golden.cosmic_msu, with cocotbext-axi AxiRam (random latency/backpressure through
its pause generators) as memory and an AxiLiteMaster as host.

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from golden import cosmic_msu as gm
from golden.cosmic_msu import Entry, MsuConfig
from scoreboards.axis import AxisMonitor, AxisSink
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes
from scoreboards import regmap
from scoreboards.gates import Gate
from scoreboards.protocol import burst_errors as axi_burst_errors
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.tb_common import record_bench, sim_test, wait_until, within
from verif.tb_common import sim_seed as seed_of_test
from verif.cosmic_memory_schedule_unit import covermodel as fcov
from verif.funcov import enabled as fcov_enabled
from verif.stream_cov import FlowObserver

CORE = "cosmic_memory_schedule_unit"
AXIL_CYCLES = 10_000  # budget of one AXI4-Lite transaction
# register offsets and command bits from the SystemRDL map (rtl_gen/regmaps, the datasheet's source)
RM = regmap.load(CORE)
CTRL, STATUS, QCOUNT, QPUSH, MODEL, DELIV, CYCLES = (RM[n].offset for n in (
    "CTRL", "STATUS", "QCOUNT", "QPUSH", "MODEL_ADDR", "DELIVERED", "CYCLES"))
START, CLEAR, ERRCLR = (RM.CTRL.pack(**{n: 1}) for n in ("START", "CLEAR", "ERRCLR"))
RAM_BYTES = 1 << 16


TBL0 = RM["THREAD[0].MEM_ADDR"].offset
TBL_STRIDE = RM["THREAD[1].MEM_ADDR"].offset - TBL0


def tbl(t):
    """Thread Index Table row t (MEM_ADDR; PE_OFFSET at + 4, as the map's THREAD regfile)."""
    return TBL0 + TBL_STRIDE * t


class _Packed:
    """tdata, tkeep and tdest of m_axis_pe seen as one value (checked and held together)."""

    def __init__(self, dut, lw, sb):
        self.d, self.k, self.t = dut.m_axis_pe_tdata, dut.m_axis_pe_tkeep, dut.m_axis_pe_tdest
        self.lw, self.sb = lw, sb

    @property
    def value(self):
        return int(self.d.value) | (int(self.k.value) << self.lw) | (int(self.t.value) << (self.lw + self.sb))


class TB:
    def __init__(self, dut, mem_p=1.0, pe_p=1.0, src_p=1.0):
        self.dut = dut
        self.p = dut_params()
        p = self.p
        self.W, self.L, self.NPE, self.NT, self.QD = p["W"], p["LANES"], p["NPE"], p["NTHREADS"], p["QDEPTH"]
        self.LW, self.SB = self.W * self.L, self.W * self.L // 8
        self.PEW = max(1, (self.NPE - 1).bit_length())
        self.cfg = MsuConfig(self.W, self.L, self.NPE, self.NT, self.QD)
        self.rm = regmap.load(CORE, p)
        self.seed = seed_of_test()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, p)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        dut.rst.value = 1
        for n in ("awvalid", "wvalid", "arvalid", "bready", "rready"):
            getattr(dut, f"s_axil_{n}").value = 0
        dut.s_axis_pe_tvalid.value = 0
        dut.s_axis_pe_tdata.value = 0
        dut.s_axis_pe_tid.value = 0
        self.axil = None
        self.ram = None      # created once reset has defined every output (GHDL starts at 'U')
        self.mem_p = mem_p
        self.sink = AxisSink(dut, "m_axis_pe", dut.clk, Gate(self.seed * 13 + 101, pe_p))
        self.mon = AxisMonitor(dut, "m_axis_pe", dut.clk, reset=dut.rst)
        self.mon.tdata = _Packed(dut, self.LW, self.SB)
        self.sb = FixedScoreboard(dut)
        spec = StreamSpec("m_axis_pe", [("word", self.L, self.W, 0), ("tkeep", 1, self.SB, 0),
                                        ("tdest", 1, self.PEW, 0)])
        self.exp = self.sb.add_stream(self.mon, spec)
        if fcov_enabled():                                  # functional coverage
            beats = fcov.BeatSampler(self.LW, self.SB, self.NPE)
            self.mon.add_callback(lambda t: beats(t))
        FlowObserver(fcov.COV, dut, inputs=["s_axis_pe"], outputs=["m_axis_pe"])
        self.src_gate = Gate(self.seed * 7 + 3, src_p)
        self.wq = []                      # (tid, tdata) beats the PEs hand back
        self.burst_errors = 0
        self.bursts = 0
        cocotb.start_soon(self._pe_source())
        cocotb.start_soon(self._burst_check("ar"))
        cocotb.start_soon(self._burst_check("aw"))

    # ---- AXI memory -------------------------------------------------------------------
    def set_mem_pause(self, p):
        chans = [self.ram.read_if.ar_channel, self.ram.read_if.r_channel, self.ram.write_if.aw_channel,
                 self.ram.write_if.w_channel, self.ram.write_if.b_channel]
        for i, ch in enumerate(chans):
            if p >= 1.0:
                ch.set_pause_generator(None)
            else:
                g = Gate(self.seed * 31 + i, p, max_run=6)
                ch.set_pause_generator(iter(lambda g=g: not g.next(), None))

    async def _burst_check(self, ch):
        """AXI4 rules of every AR/AW: INCR, beat aligned, <= MAXBURST, no 4 KiB crossing."""
        d = self.dut
        valid, ready = getattr(d, f"m_axi_{ch}valid"), getattr(d, f"m_axi_{ch}ready")
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            if not valid.value.is_resolvable or not ready.value.is_resolvable:
                continue
            if int(valid.value) and int(ready.value) and not int(d.rst.value):
                addr = int(getattr(d, f"m_axi_{ch}addr").value)
                n = int(getattr(d, f"m_axi_{ch}len").value) + 1
                kind, size = int(getattr(d, f"m_axi_{ch}burst").value), int(getattr(d, f"m_axi_{ch}size").value)
                # AXI4 legality from the shared library (size, MAXBURST, 4 KiB), then this core's rules
                ok = (not axi_burst_errors(addr, n, size, kind, self.SB, self.p["MAXBURST"])
                      and kind == 1 and addr % self.SB == 0 and size == self.SB.bit_length() - 1)
                self.bursts += 1
                fcov.sample_burst(ch, addr, n, self.SB, self.p["MAXBURST"])
                if not ok:
                    self.burst_errors += 1
                    d._log.error("bad %s burst addr=0x%x len=%d", ch, addr, n)

    async def _pe_source(self):
        d = self.dut
        while True:
            await RisingEdge(self.clk)
            if int(d.s_axis_pe_tvalid.value) and int(d.s_axis_pe_tready.value):
                self.wq.pop(0)
            elif int(d.s_axis_pe_tvalid.value) and not int(d.rst.value):
                continue  # AXI4-Stream: a beat once offered stays until it is taken
            if int(d.rst.value):
                d.s_axis_pe_tvalid.value = 0
                continue
            if self.wq and self.src_gate.next():
                tid, data = self.wq[0]
                d.s_axis_pe_tid.value = tid
                d.s_axis_pe_tdata.value = data
                d.s_axis_pe_tvalid.value = 1
            else:
                d.s_axis_pe_tvalid.value = 0

    def mem_write(self, mem):
        bpw = self.W // 8
        self.ram.write(0, b"".join(int(w).to_bytes(bpw, "little") for w in mem))

    def mem_read(self, n):
        bpw = self.W // 8
        raw = self.ram.read(0, n * bpw)
        return np.array([int.from_bytes(raw[i * bpw:(i + 1) * bpw], "little") for i in range(n)], dtype=np.int64)

    # ---- host ---------------------------------------------------------------------------
    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        if self.axil is None:
            self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(self.dut, "s_axil"), self.clk, self.dut.rst)
            self.ram = AxiRam(AxiBus.from_prefix(self.dut, "m_axi"), self.clk, self.dut.rst, size=RAM_BYTES)
            self.set_mem_pause(self.mem_p)
            await ClockCycles(self.clk, 2)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def wr(self, addr, val):
        if addr == CTRL and int(val) & START:
            fcov.COV.sample("start", "busy" if int(self.dut.busy.value) else "idle")
        await within(self.axil.write_dword(addr, int(val) & 0xFFFFFFFF), AXIL_CYCLES,
                     f"s_axil: write 0x{addr:x} got no response (AW/W/B)")

    async def rd(self, addr) -> int:
        v = int(await within(self.axil.read_dword(addr), AXIL_CYCLES, f"s_axil: read 0x{addr:x} got no response (AR/R)"))
        if addr == QCOUNT:
            fcov.COV.sample("qcount", v)
        return v

    async def status(self) -> dict:
        f = self.rm.STATUS.unpack(await self.rd(STATUS))
        if f["ERROR"]:
            fcov.COV.sample("error_code", f["CODE"])
        return {"busy": f["BUSY"], "done": f["DONE"], "err": f["ERROR"], "code": f["CODE"]}

    async def expect_err(self, code, what):
        s = await self.status()
        assert s["err"] == 1 and s["code"] == code, f"{what}: status {s}, expected code {code}"
        await self.wr(CTRL, ERRCLR)
        s = await self.status()
        assert s["err"] == 0 and s["code"] == 0, f"{what}: ERRCLR did not clear ({s})"

    async def program(self, entries, mem_addr, offs, model_addr=0):
        await self.wr(CTRL, CLEAR)
        for e in entries:
            await self.wr(QPUSH, self.rm.QPUSH.pack(SIZE=e.size, BASE_PE=e.base, WRITE=int(e.write),
                                                    BROADCAST=int(e.bcast)) if isinstance(e, Entry) else e)
        for t in range(self.NT):
            await self.wr(tbl(t), mem_addr[t])
            await self.wr(tbl(t) + 4, offs[t])
        await self.wr(MODEL, model_addr)

    async def wait_done(self, timeout=200000):
        await ClockCycles(self.clk, 8)  # busy is polled every 8 cycles
        await wait_until(self.clk, lambda: not int(self.dut.busy.value), timeout // 8 - 1, "busy held high (count in 8-cycle polls, not cycles)",
                         expect="the run to finish", edge=lambda c: ClockCycles(c, 8),
                         detail=lambda: f"{len(self.wq)} PE write beats pending")

    def expect_plan(self, plan, mem, tid_xor=0):
        """Queue the golden deliveries and the PE write beats; returns the golden result."""
        L = self.L
        wd = []
        for tr in plan.transfers:
            if tr.write:
                data = self.rng.integers(0, 1 << self.W, size=tr.size)
                wd.append(data)
                nb = -(-tr.size // L)
                for k in range(nb):
                    lanes = list(data[k * L:(k + 1) * L])
                    lanes += list(self.rng.integers(0, 1 << self.W, size=L - len(lanes)))  # junk lanes
                    self.wq.append((tr.pes[0] ^ tid_xor, pack_lanes(lanes, self.W)))
        res = gm.run(self.cfg, plan, mem, wd)
        wb = self.W // 8
        for pe, words, nv, last in res.beats:
            keep = (1 << (nv * wb)) - 1
            self.exp.append((pack_lanes(words, self.W) | (keep << self.LW) | (pe << (self.LW + self.SB)),
                             int(last)))
        return res

    async def run_case(self, entries, mem_addr, offs, model_addr=0, mem_words=None, strict=True,
                       check_regs=True, tid_xor=0):
        nw = RAM_BYTES // (self.W // 8)
        mem = self.rng.integers(0, 1 << self.W, size=nw) if mem_words is None else mem_words
        self.mem_write(mem)
        await self.program(entries, mem_addr, offs, model_addr)
        plan = gm.plan(self.cfg, entries, mem_addr, offs, model_addr, strict=strict)
        res = self.expect_plan(plan, mem, tid_xor)
        await self.wr(CTRL, START)
        await self.wait_done()
        s = await self.status()
        assert s["done"] == 1 and s["busy"] == 0
        fcov.sample_entries(entries, mem_addr, self.L, self.p["MAXBURST"])
        if check_regs:
            assert not s["err"], f"unexpected error code {s['code']}"
            for t in range(self.NT):
                got = await self.rd(tbl(t))
                assert got == plan.mem_addr[t], f"MEM_ADDR[{t}] {got} != {plan.mem_addr[t]}"
            assert await self.rd(MODEL) == plan.model_addr
            assert await self.rd(DELIV) == len(res.beats)
        got = self.mem_read(nw)
        bad = np.nonzero(got != res.mem)[0]
        assert len(bad) == 0, f"memory differs at {len(bad)} words, first at word {bad[0]}: " \
                              f"0x{int(got[bad[0]]):x} != 0x{int(res.mem[bad[0]]):x}"
        assert not self.wq, f"{len(self.wq)} PE write beats were not taken"
        return plan, res

    def rand_entries(self, n, wr_p=0.25, bc_p=0.15, max_size=None):
        span = self.NPE // self.NT
        max_size = max_size or 4 * self.L + 3
        out = []
        for _ in range(n):
            bc = self.rng.random() < bc_p
            wr = (not bc) and self.rng.random() < wr_p
            out.append(Entry(int(self.rng.integers(0, span)), wr, bc, int(self.rng.integers(1, max_size + 1))))
        return out

    def rand_table(self, region=1500):
        """Disjoint per-thread regions with random (mostly unaligned) starts; PEs split evenly."""
        span = self.NPE // self.NT
        addrs = [t * region + int(self.rng.integers(0, 3 * self.L)) for t in range(self.NT)]
        offs = [t * span for t in range(self.NT)]
        return addrs, offs

    async def finish(self, settle=20):
        await ClockCycles(self.clk, settle)
        assert self.mon.protocol_errors == 0, f"{self.mon.protocol_errors} AXI4-Stream hold violations"
        assert self.burst_errors == 0, f"{self.burst_errors} AXI4 burst rule violations"
        s = await self.status()
        assert not s["err"], f"unexpected sticky error, code {s['code']}"
        self.sb.check()


# ---------------------------------------------------------------------------- tests
@sim_test(timeout_us={"default": 100, "*": 400})  # measured 17.5 us on default
async def random_schedules(dut):
    """Random schedules (reads, writes, broadcasts, unaligned starts, sizes around the beat
    and burst sizes) over several threads; random memory latency/backpressure on every
    AXI channel, PE backpressure, PE source bubbles; runs continue from the advanced
    pointers."""
    tb = TB(dut, mem_p=0.7, pe_p=0.7, src_p=0.7)
    await tb.reset()
    nw = RAM_BYTES // (tb.W // 8)
    region = nw // (tb.NT + 1)
    for r in range(4):
        ents = tb.rand_entries(int(tb.rng.integers(1, tb.QD + 1)))
        addrs, offs = tb.rand_table(region)
        await tb.run_case(ents, addrs, offs, model_addr=tb.NT * region + int(tb.rng.integers(0, 7)))
    # a second START continues from the advanced pointers (next mini-batch)
    ents = [Entry(1, size=2 * tb.L + 1), Entry(0, write=True, size=tb.L + 1)]
    addrs, offs = tb.rand_table(region)
    mem = tb.rng.integers(0, 1 << tb.W, size=nw)
    p1, r1 = await tb.run_case(ents, addrs, offs, mem_words=mem)
    plan2 = gm.plan(tb.cfg, ents, p1.mem_addr, offs)
    res2 = tb.expect_plan(plan2, r1.mem)
    await tb.wr(CTRL, START)
    await tb.wait_done()
    assert [await tb.rd(tbl(t)) for t in range(tb.NT)] == plan2.mem_addr
    assert np.array_equal(tb.mem_read(nw), res2.mem)
    await tb.finish()
    assert tb.bursts > 0


@sim_test(timeout_us={"default": 140, "*": 560})  # measured 29.0 us on default
async def broadcast_and_alignment(dut):
    """Every start offset within a beat, sizes 1..2*LANES+1 (partial beats, straddling),
    long transfers crossing 4 KiB pages (burst splitting), and broadcast reads."""
    tb = TB(dut, mem_p=0.8, pe_p=0.8)
    await tb.reset()
    span = tb.NPE // tb.NT
    offs = [t * span for t in range(tb.NT)]
    for s0 in range(tb.L):
        ents = [Entry(0, size=sz) for sz in range(1, min(tb.QD, 2 * tb.L + 1) + 1)][:tb.QD]
        await tb.run_case(ents, [s0 + 700 * t for t in range(tb.NT)], offs)
    words_4k = 4096 // (tb.W // 8)
    long = min(3 * words_4k // 2, (RAM_BYTES // (tb.W // 8)) // (tb.NT + 2) - 8)
    ents = [Entry(span - 1, bcast=True, size=3 * tb.L + 1), Entry(0, size=long), Entry(1, bcast=True, size=1)]
    await tb.run_case(ents, [words_4k - 3 + t * (long + 16) for t in range(tb.NT)], offs,
                      model_addr=words_4k * 2 * tb.NT // tb.NT - 2)
    # a long write entry: the write bursts are split at the 4 KiB page too
    await tb.run_case([Entry(0, write=True, size=long)], [words_4k - 3 + t * (long + 16) for t in range(tb.NT)], offs)
    await tb.finish()


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 6.2 us on default
async def queue_full_and_bad_entries(dut):
    """A full queue, overflow, Size 0, Base >= NPE, reserved bits, broadcast write,
    PE Offset >= NPE, START on an empty queue, configuration while busy, partial and
    unknown-register writes, and a run-time target past NPE (skipped): each sets the
    sticky error with its code; the accepted full queue then runs exactly."""
    tb = TB(dut)
    await tb.reset()
    await tb.wr(CTRL, CLEAR)
    await tb.wr(CTRL, START)
    await tb.expect_err(gm.E_BUSY, "START on empty queue")
    ents = [Entry(int(tb.rng.integers(0, tb.NPE // tb.NT)), size=int(tb.rng.integers(1, 9))) for _ in range(tb.QD)]
    for i, e in enumerate(ents):
        await tb.wr(QPUSH, e.encode())
        if i == 0:
            assert await tb.rd(QCOUNT) == 1, "QCOUNT after one push"
    assert await tb.rd(QCOUNT) == tb.QD
    await tb.wr(QPUSH, Entry(0, size=1).encode())
    await tb.expect_err(gm.E_FULL, "overflow")
    await tb.wr(CTRL, CLEAR)
    for word, code, what in [(Entry(0, size=0).encode(), gm.E_SIZE, "size 0"),
                             (Entry(tb.NPE, size=1).encode(), gm.E_PE, "base >= NPE"),
                             (Entry(1, size=1).encode() | (1 << 31), gm.E_REG, "reserved bit"),
                             (Entry(1, write=True, bcast=True, size=1).encode(), gm.E_REG, "bcast write")]:
        assert gm.entry_error(word, tb.NPE) == code
        await tb.wr(QPUSH, word)
        await tb.expect_err(code, what)
        assert await tb.rd(QCOUNT) == 0
        assert tb.rm.STATUS.unpack(await tb.rd(STATUS))["WRQ"] == 0, f"{what}: WRQ set"
    await tb.wr(tbl(0) + 4, 3)
    await tb.wr(tbl(0) + 4, tb.NPE)
    await tb.expect_err(gm.E_PE, "PE_OFFSET >= NPE")
    assert await tb.rd(tbl(0) + 4) == 3
    await tb.axil.write(QPUSH, b"\x01\x00")
    await tb.expect_err(gm.E_REG, "partial write")
    await tb.wr(0x80, 1)
    await tb.expect_err(gm.E_REG, "unknown register")
    # the full queue runs; a configuration write while busy is refused
    addrs, offs = tb.rand_table(1000)
    nw = RAM_BYTES // (tb.W // 8)
    mem = tb.rng.integers(0, 1 << tb.W, size=nw)
    tb.mem_write(mem)
    await tb.program(ents, addrs, offs)
    plan = gm.plan(tb.cfg, ents, addrs, offs)
    tb.expect_plan(plan, mem)
    await tb.wr(CTRL, START)
    await tb.wr(MODEL, 5)
    await tb.wr(CTRL, START)
    await tb.wait_done()
    await tb.expect_err(gm.E_BUSY, "writes while busy")
    assert await tb.rd(MODEL) == 0
    # a run-time target past NPE: skipped, code 1, the others delivered
    ents = [Entry(tb.NPE - 1, size=3), Entry(tb.NPE - 1, bcast=True, size=2), Entry(0, size=2)]
    offs = [0] + [1] * (tb.NT - 1)
    addrs = [100 * t for t in range(tb.NT)]
    plan = gm.plan(tb.cfg, ents, addrs, offs, strict=False)
    assert plan.errors or tb.NT == 1
    await tb.run_case(ents, addrs, offs, strict=False, check_regs=False)
    if tb.NT > 1:
        await tb.expect_err(gm.E_PE, "target >= NPE at run time")
        assert [await tb.rd(tbl(t)) for t in range(tb.NT)] == plan.mem_addr
    # write data handed back by the wrong PE (tid): code 6, the data is still written
    await tb.run_case([Entry(0, write=True, size=tb.L + 1)], *tb.rand_table(1000), check_regs=False, tid_xor=1)
    await tb.expect_err(gm.E_WRPE, "write data from the wrong PE")
    # STATUS.WRQ: set while the queue holds a write entry (the one just run), CLEAR drops it
    assert tb.rm.STATUS.unpack(await tb.rd(STATUS))["WRQ"] == 1, "WRQ not set by a write entry"
    await tb.wr(CTRL, CLEAR)
    assert tb.rm.STATUS.unpack(await tb.rd(STATUS))["WRQ"] == 0, "WRQ not cleared by CLEAR"
    await tb.finish()


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 5.7 us on default
async def axi_error_response(dut):
    """Reads past the end of the memory model get SLVERR (zero data): error code 7, the
    beats are still delivered; the next run is clean."""
    tb = TB(dut, mem_p=0.8)
    await tb.reset()
    nw = RAM_BYTES // (tb.W // 8)
    orig = tb.ram.read_if._read

    async def failing_read(address, length):     # the memory model answers SLVERR past its end
        if address >= RAM_BYTES:
            raise ValueError("address out of range")
        return await orig(address, length)

    tb.ram.read_if._read = failing_read
    ents = [Entry(0, size=2 * tb.L + 1)]
    offs = [t * (tb.NPE // tb.NT) for t in range(tb.NT)]
    addrs = [nw + 64 * t + 1 for t in range(tb.NT)]
    await tb.program(ents, addrs, offs)
    plan = gm.plan(tb.cfg, ents, addrs, offs)
    tb.expect_plan(plan, np.zeros(nw + 64 * tb.NT + 64, dtype=np.int64))
    await tb.wr(CTRL, START)
    await tb.wait_done()
    await tb.expect_err(gm.E_RESP, "SLVERR on reads")
    await tb.run_case(tb.rand_entries(tb.QD), *tb.rand_table(1000))
    await tb.finish()


@sim_test(timeout_us={"default": 100, "*": 400})  # measured 18.6 us on default
async def reset_mid_transfer(dut):
    """Reset while reads, deliveries and writes are in flight (slow memory, slow PEs):
    afterwards idle, queue empty, and a fresh run is exact."""
    tb = TB(dut, mem_p=0.5, pe_p=0.4, src_p=0.5)
    await tb.reset()
    for wr in (False, True):
        ents = [Entry(0, size=8 * tb.L + 1), Entry(1, write=wr, size=6 * tb.L)]
        addrs, offs = tb.rand_table(1000)
        mem = tb.rng.integers(0, 1 << tb.W, size=RAM_BYTES // (tb.W // 8))
        tb.mem_write(mem)
        await tb.program(ents, addrs, offs)
        tb.expect_plan(gm.plan(tb.cfg, ents, addrs, offs), mem)   # beats before the reset are checked
        await tb.wr(CTRL, START)
        await ClockCycles(dut.clk, int(tb.rng.integers(1, (60 if not wr else 40 * tb.NT) + 1)))   # seeded random
        assert int(dut.busy.value) == 1
        dut.rst.value = 1
        await ClockCycles(dut.clk, 3)
        tb.exp.clear()
        tb.wq.clear()
        dut.rst.value = 0
        await RisingEdge(dut.clk)
        s = await tb.status()
        assert s["busy"] == 0 and await tb.rd(QCOUNT) == 0 and await tb.rd(MODEL) == 0
        assert s == {k: 0 for k in s}, f"STATUS not at its reset value: {s}"
        await ClockCycles(dut.clk, 10)
        assert int(dut.m_axis_pe_tvalid.value) == 0
        await tb.run_case(tb.rand_entries(tb.QD), *tb.rand_table(1000))
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})
async def cycles_register_counts_the_run(dut):
    """CYCLES (busy cycles since START) after a run: at least one per delivered beat and at
    most the clock cycles the testbench counted from before START to the read."""
    tb = TB(dut)
    await tb.reset()
    ticks = 0

    async def count():
        nonlocal ticks
        while True:
            await RisingEdge(dut.clk)
            ticks += 1

    counter = cocotb.start_soon(count())
    await tb.run_case(tb.rand_entries(4), *tb.rand_table(1000))
    cyc, deliv = await tb.rd(CYCLES), await tb.rd(DELIV)
    counter.cancel()
    assert deliv > 0 and deliv <= cyc <= ticks, f"CYCLES {cyc}: expected {deliv} (beats) .. {ticks} (cycles counted)"
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 3.8 us on default
async def entry_size_with_top_bit(dut):
    """A read entry of SIZE 32768 + 5 words (bit 15 of the 16-bit field set, legal up to
    65535): the first 300 delivered beats equal the golden plan's and the run is still busy
    then (the whole entry is 8194 beats over 128 KiB, more than the 64 KiB memory model holds,
    so a reset ends it there, as in reset_mid_transfer)."""
    tb = TB(dut)
    await tb.reset()
    size = (1 << 15) + 5
    nw = RAM_BYTES // (tb.W // 8)
    mem = tb.rng.integers(0, 1 << tb.W, size=nw)
    tb.mem_write(mem)
    ents = [Entry(0, size=size)]
    addrs, offs = tb.rand_table(1000)
    await tb.program(ents, addrs, offs)
    plan = gm.plan(tb.cfg, ents, addrs, offs)
    assert plan.transfers and all(tr.size == size for tr in plan.transfers), plan.transfers
    # (one transfer per thread) words past the model's end are never delivered before the reset
    tb.expect_plan(plan, np.concatenate([mem, np.zeros(2 * size, dtype=np.int64)]))
    n0 = len(tb.exp)
    await tb.wr(CTRL, START)
    await wait_until(tb.clk, lambda: n0 - len(tb.exp) >= 300, 3000, "m_axis_pe: 300 beats",
                     expect="300 beats of a 32773-word entry")
    await ReadOnly()
    assert int(dut.busy.value) == 1, f"run ended after {n0 - len(tb.exp)} of {n0} beats"
    assert tb.sb.mismatches == 0, "a delivered beat differs from the golden plan"
    await RisingEdge(dut.clk)
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    tb.exp.clear()
    tb.wq.clear()
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})
async def axil_write_lines_without_valid_ignored(dut):
    """AXI4-Lite write address, data and strobes that sit on the bus without AWVALID/WVALID
    (a master may leave them there between transactions) write nothing: a Thread Index
    Table row keeps its value, and the next real write still lands."""
    tb = TB(dut)
    await tb.reset()
    a, b = 0x1230, 0x4560
    await tb.wr(tbl(0), a)
    assert await tb.rd(tbl(0)) == a
    dut.s_axil_awvalid.value = 0
    dut.s_axil_wvalid.value = 0
    dut.s_axil_awaddr.value = tbl(0)
    dut.s_axil_wdata.value = b
    dut.s_axil_wstrb.value = 0xF
    await ClockCycles(dut.clk, 10)
    got = await tb.rd(tbl(0))
    assert got == a, f"THREAD[0].MEM_ADDR changed to 0x{got:x} without a write handshake (was 0x{a:x})"
    await tb.wr(tbl(0), b)
    assert await tb.rd(tbl(0)) == b
    await tb.finish()


@sim_test(timeout_us={"default": 120, "*": 480})
async def regmap_conformance(dut):
    """The RTL against the SystemRDL map (scoreboards.regmap.check_regmap): reset values,
    undocumented bits read 0, MODEL_ADDR and every Thread Index Table row read back (PE_OFFSET
    a legal random PE), CTRL and QPUSH read 0, every unknown offset of the 12-bit space (table
    rows t >= NTHREADS included) reads 0; no error raised."""
    tb = TB(dut)
    await tb.reset()
    rm = tb.rm
    legal = {f"THREAD[{t}].PE_OFFSET": (lambda g: int(g.integers(0, tb.NPE))) for t in range(tb.NT)}
    res = await regmap.check_regmap(rm, tb.rd, tb.wr, tb.rng, len(dut.s_axil_araddr), legal=legal)
    assert res["written"] == 1 + 2 * tb.NT and res["unknown_read"] == 1024 - len(rm.regs), res
    s = await tb.status()
    assert s["err"] == 0, f"legal register writes raised an error: {s}"
    # writes to unknown offsets: registers unchanged, sticky error code 5 (the map's description)
    res = await regmap.check_regmap(rm, tb.rd, tb.wr, tb.rng, len(dut.s_axil_araddr), legal=legal,
                                    check_reset=False, unknown_sample=0, unknown_writes=8)
    s = await tb.status()
    assert s["err"] == 1 and s["code"] == 5, f"unknown-offset writes: STATUS {s}, documented code 5"
    await tb.wr(CTRL, ERRCLR)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.8 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expectation, an extra output and a dropped output must
    each make the scoreboard fail; a corrupted memory expectation must be caught too."""
    tb = TB(dut)
    await tb.reset()
    ents = [Entry(0, size=2 * tb.L)]
    addrs, offs = tb.rand_table(1000)
    nw = RAM_BYTES // (tb.W // 8)
    mem = tb.rng.integers(0, 1 << tb.W, size=nw)
    tb.mem_write(mem)
    await tb.program(ents, addrs, offs)
    plan = gm.plan(tb.cfg, ents, addrs, offs)
    tb.expect_plan(plan, mem)
    d, last = tb.exp[1]
    tb.exp[1] = (d ^ 1, last)                        # corrupt one data bit
    await tb.wr(CTRL, START)
    await tb.wait_done()
    await ClockCycles(dut.clk, 10)
    assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    # one expectation short: an extra output
    plan = gm.plan(tb.cfg, ents, plan.mem_addr, offs)
    tb.expect_plan(plan, mem)
    tb.exp.pop()
    await tb.wr(CTRL, START)
    await tb.wait_done()
    await ClockCycles(dut.clk, 10)
    assert tb.sb.errors >= 1, "extra output not detected"
    tb.sb.errors = tb.sb.mismatches = 0
    tb.exp.append((123, 1))                          # an output that never comes
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()
    tb.exp.clear()
    # a corrupted memory expectation is caught by run_case's memory comparison
    ents = [Entry(0, write=True, size=tb.L + 1)]
    with pytest.raises(AssertionError, match="memory differs"):
        bad = tb.rng.integers(0, 1 << tb.W, size=nw)
        tb.mem_write(bad)
        await tb.program(ents, addrs, offs)
        plan = gm.plan(tb.cfg, ents, addrs, offs)
        res = tb.expect_plan(plan, bad)
        await tb.wr(CTRL, START)
        await tb.wait_done()
        res.mem[addrs[0]] ^= 1
        got = tb.mem_read(nw)
        bi = np.nonzero(got != res.mem)[0]
        assert len(bi) == 0, f"memory differs at {len(bi)} words"


@sim_test(timeout_us={"default": 210, "*": 840})  # measured 46.9 us on default
async def bench_throughput(dut):
    """Benchmark: delivered words per cycle against the memory bandwidth (LANES words per
    cycle) with memory and PEs never stalling; long transfers over all threads, aligned and
    unaligned, and a short-transfer mix (reported; the long-transfer ratio is asserted
    >= 0.98)."""
    tb = TB(dut)
    await tb.reset()
    nw = RAM_BYTES // (tb.W // 8)
    region = nw // tb.NT
    size = min(region // 2 - 8, 1024)
    rows = {}
    for name, ents, unal in [
            ("long_aligned", [Entry(0, size=size), Entry(1, size=size)], 0),
            ("long_unaligned", [Entry(0, size=size - 1), Entry(1, size=size)], 1),
            ("short_mix", [Entry(i % 4, size=4 * tb.L + 1) for i in range(tb.QD)], 1)]:
        offs = [t * (tb.NPE // tb.NT) for t in range(tb.NT)]
        addrs = [t * region + unal for t in range(tb.NT)]
        t0 = len(tb.mon.times)
        plan, res = await tb.run_case(ents, addrs, offs, mem_words=tb.rng.integers(0, 1 << tb.W, size=nw))
        tm = tb.mon.times[t0:]
        words = sum(b[2] for b in res.beats)
        mbeats = sum(gm.mem_beats(tb.cfg, t) for t in plan.transfers)
        span = tm[-1] - tm[0] + 1
        rows[name] = {"words": words, "cycles": span, "memory_beats": mbeats,
                      "words_per_cycle": round(words / span, 3),
                      "fraction_of_peak": round(words / span / tb.L, 4),
                      "beats_per_cycle": round(len(tm) / span, 4)}
        dut._log.info("bench %s: %s", name, rows[name])
    rec = record_bench(CORE, peak_words_per_cycle=tb.L, **rows)
    await tb.finish()
    assert rows["long_aligned"]["fraction_of_peak"] >= 0.98, rows
    return rec


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("small", "icarus")]))
def test_cosmic_memory_schedule_unit(cfg, sim):
    run_core(CORE, cfg, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
