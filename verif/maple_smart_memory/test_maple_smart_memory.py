"""maple_smart_memory: selection (top-k), min/max with index and read-modify-write,
against golden.maple, programmed through AXI4-Lite (cocotbext-axi AxiLiteMaster).

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from golden import maple
from golden.fixedpoint import QFormat
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec
from scoreboards import regmap
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.tb_common import record_bench, sim_test, stall_message, within
from verif.tb_common import sim_seed as seed_of_test
from verif.maple_smart_memory import covermodel as fcov
from verif.stream_cov import FlowObserver

CORE = "maple_smart_memory"
AXIL_CYCLES = 10_000  # budget of one AXI4-Lite transaction
OUT = "m_axis_out"
# register byte offsets and command bits from the SystemRDL map (rtl_gen/regmaps, the
# datasheet's source); offsets do not depend on the parameters, fields are read per netlist
RM = regmap.load("maple_smart_memory")
OP, K, CMP, BASE, LEN, CTRL, STATUS, STALLS, INS, COUNT = (RM[n].offset for n in (
    "OP", "K", "CMP", "BASE", "LEN", "CTRL", "STATUS", "STALLS", "INSERTIONS", "COUNT"))
START, CLEAR, DUMP, ERRCLR = (RM.CTRL.pack(**{n: 1}) for n in ("START", "CLEAR", "DUMP", "ERRCLR"))
SEL, MINMAX, RMW = 0, 1, 2


class TB:
    def __init__(self, dut, src_p=1.0, sink_p=1.0):
        self.dut = dut
        self.p = dut_params()
        self.W, self.IDXW = self.p["W"], self.p["IDXW"]
        self.KMAX, self.DEPTH = self.p["KMAX"], self.p["DEPTH"]
        self.rm = regmap.load("maple_smart_memory", self.p)
        self.fmt = QFormat(self.W, self.W // 2)
        self.seed = seed_of_test()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, self.p)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        dut.rst.value = 1
        for n in ("awvalid", "wvalid", "arvalid", "bready", "rready"):
            getattr(dut, f"s_axil_{n}").value = 0
        self.axil = None    # created once reset has defined every output (GHDL starts at 'U')
        self.src_p = src_p
        self.src = AxisSource(dut, "s_axis_in", dut.clk, Gate(self.seed * 7 + 1, src_p))
        self.sink = AxisSink(dut, OUT, dut.clk, Gate(self.seed * 13 + 101, sink_p))
        self.mon = AxisMonitor(dut, OUT, dut.clk, reset=dut.rst)
        self.sb = FixedScoreboard(dut)
        spec = StreamSpec(OUT, [("value", 1, self.W, self.fmt.F), ("index", 1, self.IDXW, 0)])
        self.exp = self.sb.add_stream(self.mon, spec)
        self.flow = FlowObserver(fcov.COV, dut, inputs=["s_axis_in"], outputs=[OUT])

    # ---- plumbing ----------------------------------------------------------------
    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        if self.axil is None:
            self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(self.dut, "s_axil"), self.clk, self.dut.rst)
            await ClockCycles(self.clk, 2)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)
        await self.wait_idle()

    async def abort_and_reset(self):
        """Reset in the middle of work: drop queued stimulus and expectations, restart the driver."""
        self.src.kill()
        self.src.tvalid.value = 0
        await self.reset()
        self.src = AxisSource(self.dut, "s_axis_in", self.dut.clk, Gate(self.seed * 7 + 999, self.src_p))
        self.exp.clear()

    async def wr(self, addr, val):
        await within(self.axil.write_dword(addr, int(val) & 0xFFFFFFFF), AXIL_CYCLES,
                     f"s_axil: write 0x{addr:x} got no response (AW/W/B)")
        if addr == CTRL:
            fcov.sample_ctrl(self.rm, int(val))

    async def rd(self, addr) -> int:
        return int(await within(self.axil.read_dword(addr), AXIL_CYCLES, f"s_axil: read 0x{addr:x} got no response (AR/R)"))

    async def status(self) -> dict:
        f = self.rm.STATUS.unpack(await self.rd(STATUS))
        fcov.sample_status(f["ERROR"], f["CODE"])
        return {"busy": f["BUSY"], "armed": f["ARMED"], "err": f["ERROR"], "code": f["CODE"]}

    async def wait_idle(self, timeout=20000):
        for _ in range(timeout):
            s = await self.status()
            if not s["busy"] and not s["armed"]:
                return s
        raise AssertionError(stall_message(f"STATUS: busy/armed still set after {timeout} status reads", None,
                                           "the store to go idle"))

    def pack(self, idx, val) -> int:
        return ((int(idx) & ((1 << self.IDXW) - 1)) << self.W) | (int(val) & ((1 << self.W) - 1))

    def send(self, values, indices):
        n = len(values)
        for j, (v, i) in enumerate(zip(values, indices)):
            self.src.append((self.pack(i, v), 1 if j == n - 1 else 0))

    def expect(self, indices, values):
        n = len(values)
        for j, (i, v) in enumerate(zip(indices, values)):
            self.exp.append((self.pack(i, v), 1 if j == n - 1 else 0))

    def rand_vals(self, n, lo=None, hi=None):
        lo = self.fmt.min_int if lo is None else lo
        hi = self.fmt.max_int if hi is None else hi
        return self.rng.integers(lo, hi, size=n, endpoint=True)

    async def config(self, op, k=None, largest=None):
        await self.wr(OP, op)
        if k is not None:
            await self.wr(K, k)
        if largest is not None:
            await self.wr(CMP, int(largest))

    async def stream(self, values, indices):
        """START, stream one array (tlast on the last element), wait until it is consumed."""
        await self.wr(CTRL, START)
        self.send(values, indices)
        await self.src.drain()
        await self.wait_idle()

    async def dump(self):
        await self.wr(CTRL, DUMP)
        await self.wait_idle()

    async def select(self, values, indices, k, largest, check_counters=True):
        """One selection run: configure, stream, check STALLS/INSERTIONS, dump and expect."""
        await self.config(SEL, k, largest)
        await self.stream(values, indices)
        t = maple.selection_trace(values, indices, k, largest)
        if check_counters:
            stalls, ins, cnt = await self.rd(STALLS), await self.rd(INS), await self.rd(COUNT)
            # the sorted shadow list inserts in one cycle: no scanner stall (was k-1 per replacement)
            assert stalls == 0, f"STALLS {stalls}, expected 0 (stall-free insertion)"
            assert ins == t["fills"] + t["replacements"], f"INSERTIONS {ins}"
            assert cnt == len(t["values"]), f"COUNT {cnt}"
        self.expect(t["indices"], t["values"])
        await self.dump()
        fcov.sample_selection(values, indices, k, largest)
        return t

    async def minmax(self, values, indices):
        await self.config(MINMAX)
        await self.stream(values, indices)
        (imn, vmn), (imx, vmx) = maple.min_max_with_index(values, indices)
        self.expect([imn, imx], [vmn, vmx])
        await self.dump()
        fcov.sample_minmax(values)

    async def finish(self, settle=20):
        await ClockCycles(self.clk, settle)
        assert self.mon.protocol_errors == 0, f"{self.mon.protocol_errors} AXI4-Stream hold violations"
        s = await self.status()
        assert not s["err"], f"unexpected sticky error, code {s['code']}"
        self.sb.check()


# ---------------------------------------------------------------------------- tests
@sim_test(timeout_us={"default": 90, "*": 360})  # measured 16.3 us on default
async def topk_random(dut):
    """Random arrays, random k, largest and smallest; input bubbles, output backpressure."""
    tb = TB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    for r in range(8):
        n = int(tb.rng.integers(1, 70))
        k = int(tb.rng.integers(1, tb.KMAX + 1))
        vals = tb.rand_vals(n)
        idx = np.arange(n)
        await tb.select(vals, idx, k, largest=bool(r % 2))
    await tb.finish()


@sim_test(timeout_us={"default": 90, "*": 360})  # measured 16.1 us on default
async def topk_ties(dut):
    """Duplicates and ties: values from a tiny set (indices in arrival order), then repeated
    values with reused, out-of-order indices (exact value+index duplicates included)."""
    tb = TB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    for r in range(6):
        n = int(tb.rng.integers(tb.KMAX, 4 * tb.KMAX + 8))
        k = tb.KMAX if r < 2 else int(tb.rng.integers(1, tb.KMAX + 1))
        vals = tb.rng.integers(-2, 3, size=n)
        idx = np.arange(n) if r % 3 != 2 else tb.rng.integers(0, 6, size=n)
        await tb.select(vals, idx, k, largest=bool(r % 2))
    # all equal: the first k arrivals are kept, nothing is ever replaced
    t = await tb.select(np.full(20, 5), np.arange(20), tb.KMAX, True)
    assert t["replacements"] == 0
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})
async def topk_exact_duplicate_of_threshold(dut):
    """The same element (value and index) streamed twice.  While the LIST fills, the second
    copy is not strictly worse than the threshold (the first copy), so the threshold stays
    on the first copy's slot and the next better element replaces that slot (the dump order
    tells the slots apart).  Once the LIST is full, a copy of the threshold is not strictly
    better: discarded, no replacement, no stall.  k = 2, 3 and KMAX, largest and smallest."""
    tb = TB(dut)
    await tb.reset()
    for k in sorted({min(2, tb.KMAX), min(3, tb.KMAX), tb.KMAX}):
        if k < 2:
            continue
        for largest in (True, False):
            sgn = 1 if largest else -1
            good = [sgn * (50 - j) for j in range(k - 2)]          # better than the worst
            worst, best = sgn * 5, sgn * 90
            vals = np.array(good + [worst, worst, best], dtype=np.int64)
            idx = np.array(list(range(10, 10 + k - 2)) + [7, 7, 3], dtype=np.int64)
            t = await tb.select(vals, idx, k, largest)
            assert t["fills"] == k and t["replacements"] == 1, t
            assert list(t["indices"]).index(3) == k - 2, f"the first copy's slot is replaced: {t}"
            # full LIST: a copy of the threshold is discarded
            vals2 = np.array(good + [worst, sgn * 3, sgn * 3], dtype=np.int64)
            idx2 = np.array(list(range(10, 10 + k - 2)) + [7, 8, 8], dtype=np.int64)
            t = await tb.select(vals2, idx2, k, largest)
            assert t["replacements"] == 0 and t["discards"] == 1, t
    await tb.finish()


@sim_test(timeout_us={"default": 90, "*": 360})  # measured 16.1 us on default
async def topk_corners(dut):
    """k = 1, k = array length (= KMAX), streams shorter than k, one element, the value
    rails, and the worst case (ascending input for largest: every element replaces)."""
    tb = TB(dut, sink_p=0.8)
    await tb.reset()
    f = tb.fmt
    rails = np.array([f.min_int, f.max_int, 0, -1, f.max_int, f.min_int, 1], dtype=np.int64)
    cases = [
        (tb.rand_vals(25), 1, True), (tb.rand_vals(25), 1, False),
        (tb.rand_vals(tb.KMAX), tb.KMAX, True), (tb.rand_vals(tb.KMAX), tb.KMAX, False),
        (tb.rand_vals(3), tb.KMAX, True), (tb.rand_vals(1), tb.KMAX, False),
        (rails, 2, True), (rails, 2, False),
        (np.arange(40) - 20, tb.KMAX, True), (np.arange(40, 0, -1), tb.KMAX, False),
    ]
    for vals, k, lg in cases:
        await tb.select(vals, np.arange(len(vals)), k, lg)
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})  # measured 9.2 us on default
async def minmax_with_index(dut):
    """Min and max with index: random arrays, ties (smaller index wins), one element,
    rails; an empty store dumps nothing."""
    tb = TB(dut, src_p=0.6, sink_p=0.6)
    await tb.reset()
    f = tb.fmt
    for r in range(5):
        n = int(tb.rng.integers(1, 50))
        vals = tb.rand_vals(n) if r % 2 else tb.rng.integers(-3, 4, size=n)
        await tb.minmax(vals, tb.rng.permutation(n))
    await tb.minmax(np.array([7]), np.array([3]))
    await tb.minmax(np.full(5, -2), np.array([4, 0, 3, 1, 2]))     # all equal: index 0 is min and max
    await tb.minmax(np.array([f.max_int, f.min_int, f.min_int, f.max_int]), np.array([9, 4, 2, 1]))
    await tb.wr(CTRL, CLEAR)
    await tb.wait_idle()
    await tb.dump()                                  # nothing held: no beat
    fcov.sample_minmax([])
    await tb.finish()
    assert tb.sb.compared == 8 * 2


async def wait_status(tb, cond, reads=2000):
    for _ in range(reads):
        st = tb.rm.STATUS.unpack(await tb.rd(STATUS))
        if cond(st):
            return st
    raise AssertionError(stall_message(f"STATUS: condition not met after {reads} reads ({st})", None,
                                       "the queued DUMP + START to run"))


@sim_test(timeout_us={"default": 60, "*": 240})
async def dump_start_rearm(dut):
    """DUMP + START in one CTRL write: min/max re-arms at once and dumps the extremes of the
    previous array from its copy while the next array streams in (STATUS armed and busy
    right after the write; the dump is the previous array's, the next dump the next
    array's); selection and RMW dump first, then are armed (the next array accumulates
    on the dumped RAM).  Bubbles on the input, backpressure on the dump."""
    tb = TB(dut, src_p=0.8, sink_p=0.5)
    await tb.reset()
    f = tb.fmt
    # min/max: three arrays back to back, each dump overlapping the next array
    await tb.config(MINMAX)
    vals, idx = tb.rand_vals(12), tb.rng.permutation(12)
    await tb.stream(vals, idx)
    for _ in range(2):
        (imn, vmn), (imx, vmx) = maple.min_max_with_index(vals, idx)
        tb.expect([imn, imx], [vmn, vmx])
        await tb.wr(CTRL, START | DUMP)
        s = await tb.status()
        assert s["armed"] == 1 and s["err"] == 0, f"STATUS right after DUMP+START: {s}"
        vals, idx = tb.rand_vals(9), tb.rng.permutation(9) + 40
        tb.send(vals, idx)
        await tb.src.drain()
        await tb.wait_idle()
    (imn, vmn), (imx, vmx) = maple.min_max_with_index(vals, idx)
    tb.expect([imn, imx], [vmn, vmx])
    # queued: DUMP + START written while the array is still armed (STATUS PENDING and BUSY),
    # runs at its tlast; a second one while it is queued is refused with code 4
    await tb.wr(CTRL, START | DUMP)
    st = tb.rm.STATUS.unpack(await tb.rd(STATUS))
    assert st["PENDING"] == 0 and st["ARMED"] == 1 and st["ERROR"] == 0, f"STATUS after DUMP+START: {st}"
    await tb.wr(CTRL, START | DUMP)
    st = tb.rm.STATUS.unpack(await tb.rd(STATUS))
    assert st["PENDING"] == 1 and st["BUSY"] == 1 and st["ARMED"] == 1, f"queued DUMP+START: STATUS {st}"
    await tb.wr(CTRL, START | DUMP)
    s = await tb.status()
    assert s["err"] == 1 and s["code"] == 4, f"second queued DUMP+START: STATUS {s}, expected code 4"
    await tb.wr(CTRL, ERRCLR)
    vals, idx = tb.rand_vals(6), tb.rng.permutation(6) + 80
    (imn, vmn), (imx, vmx) = maple.min_max_with_index(vals, idx)
    tb.expect([imn, imx], [vmn, vmx])                   # dumped by the queued one at the tlast
    tb.send(vals, idx)                                 # the array the first DUMP + START armed
    await tb.src.drain()
    await wait_status(tb, lambda st: st["PENDING"] == 0 and st["ARMED"] == 1)
    vals2, idx2 = tb.rand_vals(5), tb.rng.permutation(5) + 90
    tb.send(vals2, idx2)
    await tb.src.drain()
    await tb.wait_idle()
    (imn, vmn), (imx, vmx) = maple.min_max_with_index(vals2, idx2)
    tb.expect([imn, imx], [vmn, vmx])
    await tb.dump()
    # selection: dump, then armed
    k = min(3, tb.KMAX)
    await tb.config(SEL, k, True)
    vals, idx = tb.rand_vals(10), np.arange(10)
    await tb.stream(vals, idx)
    t = maple.selection_trace(vals, idx, k, True)
    tb.expect(t["indices"], t["values"])
    await tb.wr(CTRL, START | DUMP)
    vals2 = tb.rand_vals(7)
    tb.send(vals2, np.arange(7) + 20)
    await tb.src.drain()
    await tb.wait_idle()
    t = maple.selection_trace(vals2, np.arange(7) + 20, k, True)
    tb.expect(t["indices"], t["values"])
    await tb.dump()
    # RMW: the range dumped, then the next array accumulates on it
    await tb.config(RMW)
    await tb.wr(CTRL, CLEAR)
    a1, v1 = np.array([0, 1, 1, 2]), tb.rand_vals(4, -1000, 1000)
    await tb.stream(v1, a1)
    mem = maple.rmw_accumulate(np.zeros(tb.DEPTH, dtype=np.int64), a1, v1, f)
    await tb.wr(BASE, 0)
    await tb.wr(LEN, 3)
    tb.expect(np.arange(3), mem[:3])
    await tb.wr(CTRL, START | DUMP)
    a2, v2 = np.array([2, 0]), tb.rand_vals(2, -1000, 1000)
    tb.send(v2, a2)
    await tb.src.drain()
    await tb.wait_idle()
    mem = maple.rmw_accumulate(mem, a2, v2, f)
    tb.expect(np.arange(3), mem[:3])
    await tb.dump()
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})
async def minmax_rearm_without_gap(dut):
    """Issue 16: a DUMP + START queued for a min/max array runs in the cycle of the array's
    tlast (the store stays armed), so two arrays streamed back to back with no bubble are
    taken without a single cycle of tready low between them; both dumps exact (the first
    includes its tlast element, the copy taken in that cycle)."""
    tb = TB(dut)
    await tb.reset()
    held = [0]

    async def count():
        while True:
            await RisingEdge(tb.clk)
            if int(dut.s_axis_in_tvalid.value) and not int(dut.s_axis_in_tready.value):
                held[0] += 1

    await tb.config(MINMAX)
    await tb.wr(CTRL, START)
    await tb.wr(CTRL, START | DUMP)                        # queued: runs at the first array's tlast
    v1, i1 = tb.rand_vals(7, -1000, 1000), tb.rng.permutation(7)
    v2, i2 = tb.rand_vals(6, -1000, 1000), tb.rng.permutation(6) + 20
    v1[-1] = 2000                                          # the tlast element is the first array's max
    for v, i in ((v1, i1), (v2, i2)):
        (imn, vmn), (imx, vmx) = maple.min_max_with_index(v, i)
        tb.expect([imn, imx], [vmn, vmx])
    c = cocotb.start_soon(count())
    tb.send(v1, i1)
    tb.send(v2, i2)                                        # right behind, no bubble
    await tb.src.drain()
    await tb.wait_idle()
    c.kill()
    assert held[0] == 0, f"{held[0]} cycles of tready low between two min/max arrays"
    await tb.dump()
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})
async def background_clear(dut):
    """CTRL.CLEAR zeroes the RAM in the background: STATUS shows CLEARING and not BUSY, a
    configuration write meanwhile is accepted; an RMW array started during the clear is
    exact, its element at the top address waiting (tready low) until the clear has passed
    it; a DUMP written during the clear follows the clear's pointer (every word of a full
    RAM dumps as 0; a short range at the bottom is out while the clear still runs, issue 16);
    CLEARING drops once the clear is over."""
    tb = TB(dut, sink_p=0.7)
    await tb.reset()
    D, f = tb.DEPTH, tb.fmt
    held = [0]

    async def count_holds():
        while True:
            await RisingEdge(tb.clk)
            if int(dut.s_axis_in_tvalid.value) and not int(dut.s_axis_in_tready.value) and \
                    int(dut.s_axis_in_tdata.value) >> tb.W == D - 1:
                held[0] += 1

    async def clearing():
        return tb.rm.STATUS.unpack(await tb.rd(STATUS))["CLEARING"]

    async def fill():
        vals = tb.rand_vals(D, 1, 1000)                  # every word non-zero
        await tb.stream(vals, np.arange(D))
        return maple.rmw_accumulate(np.zeros(D, dtype=np.int64), np.arange(D), vals, f)

    await tb.config(RMW)
    await fill()                                         # over the reset's own clear
    await tb.wr(CTRL, CLEAR)
    st = tb.rm.STATUS.unpack(await tb.rd(STATUS))
    assert st["CLEARING"] == 1 and st["BUSY"] == 0 and st["ARMED"] == 0, f"STATUS right after CLEAR: {st}"
    await tb.wr(LEN, D)                                  # configuration during the clear: accepted
    s = await tb.status()
    assert s["err"] == 0, f"configuration written during the clear raised an error: {s}"
    for _ in range(4 * D):
        if not await clearing():
            break
    else:
        raise AssertionError(f"STATUS.CLEARING still set after {4 * D} status reads")
    # an array started right after CLEAR: the top address waits for the clear pointer
    await fill()
    await tb.wr(CTRL, CLEAR)
    holds = cocotb.start_soon(count_holds())
    addrs = np.array([D - 1, 0, D - 1, 1, D - 1])
    vals = tb.rand_vals(5)
    await tb.stream(vals, addrs)
    holds.kill()
    assert held[0] > 0, "the element at DEPTH-1 was taken before the clear had passed it"
    mem = maple.rmw_accumulate(np.zeros(D, dtype=np.int64), addrs, vals, f)
    # a DUMP during the clear: starts after it, every word reads the cleared RAM
    await tb.wr(BASE, 0)
    await tb.wr(LEN, D)
    tb.expect(np.arange(D), mem)
    await tb.dump()
    await fill()
    await tb.wr(CTRL, CLEAR)
    tb.expect(np.arange(D), np.zeros(D))
    await tb.dump()
    assert not await clearing(), "STATUS.CLEARING still set after the dump that waited for the clear"
    # a short range at the bottom dumps behind the clear's pointer, before the clear is over
    await fill()
    await tb.wr(LEN, 4)
    await tb.wr(CTRL, CLEAR)
    tb.expect(np.arange(4), np.zeros(4))
    await tb.dump()
    if D >= 128:          # the clear takes D cycles, the register writes and 4 beats far fewer
        assert await clearing(), "the 4-word dump at BASE 0 waited for the whole clear"
    await tb.wr(LEN, D)
    tb.expect(np.arange(D), np.zeros(D))
    await tb.dump()
    await tb.finish()


@sim_test(timeout_us={"default": 100, "*": 400})  # measured 19.6 us on default
async def rmw_accumulate(dut):
    """Read-modify-write: runs of one address back to back (forwarding), saturation both
    ways, two arrays accumulating, full and partial dumps; bubbles and backpressure."""
    tb = TB(dut, src_p=0.8, sink_p=0.6)
    await tb.reset()
    f, D = tb.fmt, tb.DEPTH
    mem = np.zeros(D, dtype=np.int64)
    await tb.config(RMW)
    await tb.wr(CTRL, CLEAR)
    await tb.wait_idle()
    for r in range(3):
        n = 120
        addrs = tb.rng.integers(0, D, size=n)
        runs = tb.rng.random(n) < 0.5                # repeat the previous address back to back
        for j in range(1, n):
            if runs[j]:
                addrs[j] = addrs[j - 1]
        vals = tb.rand_vals(n) if r == 2 else tb.rand_vals(n, -(1 << (tb.W - 3)), 1 << (tb.W - 3))
        if r == 1:
            addrs[:8] = 3
            vals[:8] = [f.max_int, f.max_int, 5, -1, f.min_int, f.min_int, f.min_int, 7]
        await tb.stream(vals, addrs)
        fcov.sample_rmw(mem, addrs, vals, f)
        mem = maple.rmw_accumulate(mem, addrs, vals, f)
        assert await tb.rd(INS) == n
    await tb.wr(BASE, 0)
    await tb.wr(LEN, D)
    tb.expect(np.arange(D), mem)
    await tb.dump()
    lo, ln = D // 4, D // 2
    await tb.wr(BASE, lo)
    await tb.wr(LEN, ln)
    tb.expect(np.arange(lo, lo + ln), mem[lo:lo + ln])
    await tb.dump()
    await tb.wr(BASE, D - 1)
    await tb.wr(LEN, 1)
    tb.expect([D - 1], mem[D - 1:])
    await tb.dump()
    # CLEAR zeroes it
    await tb.wr(CTRL, CLEAR)
    await tb.wait_idle()
    await tb.wr(BASE, 0)
    await tb.wr(LEN, 4)
    tb.expect(np.arange(4), np.zeros(4))
    await tb.dump()
    await tb.finish()


@sim_test(timeout_us={"default": 80, "*": 320})  # measured 13.2 us on default
async def reset_mid_stream(dut):
    """Reset in the middle of a selection run (scanner busy) and of a dump under
    backpressure: idle afterwards, RAM zeroed, the next runs exact."""
    tb = TB(dut, src_p=0.9, sink_p=0.3)
    await tb.reset()
    await tb.config(SEL, tb.KMAX, True)
    await tb.wr(CTRL, START)
    tb.send(np.arange(200), np.arange(200))          # ascending: replaces every time
    await ClockCycles(dut.clk, int(tb.rng.integers(1, 121)))     # seeded random reset cycle
    assert (await tb.status())["armed"] == 1
    await tb.abort_and_reset()
    assert int(dut.m_axis_out_tvalid.value) == 0 and await tb.rd(COUNT) == 0
    s = await tb.status()
    assert s == dict(busy=0, armed=0, err=0, code=0), f"STATUS not at its reset value: {s}"
    vals = tb.rand_vals(30)
    await tb.select(vals, np.arange(30), tb.KMAX, False)
    # reset during an RMW dump: the RAM is zeroed afterwards
    await tb.config(RMW)
    await tb.stream(np.full(10, 3), np.arange(10))
    await tb.wr(BASE, 0)
    await tb.wr(LEN, tb.DEPTH)
    mem = np.zeros(tb.DEPTH, dtype=np.int64)
    mem[:10] = 3
    tb.expect(np.arange(tb.DEPTH), mem)              # the beats before the reset are checked
    await tb.wr(CTRL, DUMP)
    await ClockCycles(dut.clk, int(tb.rng.integers(1, 21)))     # seeded random reset cycle
    await tb.abort_and_reset()
    assert await tb.rd(OP) == SEL and await tb.rd(K) == tb.KMAX, "reset did not restore the registers"
    await tb.config(RMW)
    await tb.wr(LEN, 12)
    tb.expect(np.arange(12), np.zeros(12))
    await tb.dump()
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})  # measured 8.1 us on default
async def bad_configuration(dut):
    """k = 0, k > KMAX, unknown OP, BASE/LEN out of range, a dump past the RAM end,
    partial and unknown-register writes, configuration while armed, an RMW address past
    DEPTH: each sets the sticky error with its code and changes nothing."""
    tb = TB(dut)
    await tb.reset()
    await tb.config(SEL, 2, True)
    await tb.wr(BASE, 1)
    await tb.wr(LEN, 2)

    async def expect_err(code, what):
        s = await tb.status()
        assert s["err"] == 1 and s["code"] == code, f"{what}: status {s}, expected code {code}"
        await tb.wr(CTRL, ERRCLR)
        s = await tb.status()
        assert s["err"] == 0 and s["code"] == 0, f"{what}: ERRCLR did not clear ({s})"

    for v in (0, tb.KMAX + 1, 0xFFFFFFFF):
        await tb.wr(K, v)
        await expect_err(1, f"K={v}")
        assert await tb.rd(K) == 2
    await tb.wr(OP, 3)
    await expect_err(2, "OP=3")
    assert await tb.rd(OP) == SEL
    await tb.wr(BASE, tb.DEPTH)
    await expect_err(3, "BASE=DEPTH")
    for v in (0, tb.DEPTH + 1):
        await tb.wr(LEN, v)
        await expect_err(3, f"LEN={v}")
    assert await tb.rd(BASE) == 1 and await tb.rd(LEN) == 2
    await tb.axil.write(K, b"\x03\x00")             # partial write (wstrb = 0x3)
    await expect_err(6, "partial write")
    await tb.wr(0x80, 1)
    await expect_err(6, "unknown register")
    await tb.axil.write(K + 1, b"\x03")             # misaligned
    await expect_err(6, "misaligned write")
    assert await tb.rd(K) == 2
    # configuration and DUMP while armed are refused; the run still completes with k = 2
    await tb.wr(CTRL, START)
    await tb.wr(K, 1)
    await expect_err(4, "K while armed")
    await tb.wr(CTRL, DUMP)
    await expect_err(4, "DUMP while armed")
    vals = np.array([4, 9, 1, 7, 9])
    tb.send(vals, np.arange(5))
    await tb.src.drain()
    await tb.wait_idle()
    i, v = maple.topk(vals, np.arange(5), 2, True)
    tb.expect(i, v)
    await tb.dump()
    # a dump past the end of the RAM
    await tb.config(RMW)
    await tb.wr(BASE, tb.DEPTH - 1)
    await tb.wr(LEN, 2)
    await tb.wr(CTRL, DUMP)
    await expect_err(3, "BASE+LEN > DEPTH")
    # an RMW address beyond DEPTH is dropped with code 5 (when IDXW can express one)
    if tb.IDXW > tb.DEPTH.bit_length() - 1:
        await tb.wr(CTRL, CLEAR)
        await tb.wait_idle()
        await tb.stream(np.array([5, 6, 7]), np.array([1, tb.DEPTH, 1]))
        await expect_err(5, "RMW address >= DEPTH")
        await tb.wr(BASE, 0)
        await tb.wr(LEN, 2)
        tb.expect([0, 1], [0, 12])
        await tb.dump()
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})
async def regmap_conformance(dut):
    """The RTL against the SystemRDL map (scoreboards.regmap.check_regmap): reset values (K =
    KMAX, LEN = DEPTH, CMP = 1), undocumented bits read 0, every configuration register reads
    back a legal random value, CTRL reads 0, every unknown offset reads 0; no error raised."""
    tb = TB(dut)
    await tb.reset()
    rm, r = tb.rm, tb.rng
    legal = {"OP": lambda g: int(g.integers(0, 3)), "K": lambda g: int(g.integers(1, tb.KMAX + 1)),
             "BASE": lambda g: int(g.integers(0, tb.DEPTH)), "LEN": lambda g: int(g.integers(1, tb.DEPTH + 1))}
    res = await regmap.check_regmap(rm, tb.rd, tb.wr, r, len(dut.s_axil_araddr), legal=legal)
    assert res["written"] == 5 and res["unknown_read"] == 64 - len(rm.regs), res
    s = await tb.status()
    assert s["err"] == 0, f"legal configuration writes raised an error: {s}"
    # writes to unknown offsets: registers unchanged, sticky error code 6 (the map's description)
    res = await regmap.check_regmap(rm, tb.rd, tb.wr, r, len(dut.s_axil_araddr), legal=legal,
                                    check_reset=False, unknown_sample=0, unknown_writes=4)
    s = await tb.status()
    assert s["err"] == 1 and s["code"] == 6, f"unknown-offset writes: STATUS {s}, documented code 6"
    await tb.wr(CTRL, ERRCLR)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})
async def regmap_aliases_refused(dut):
    """A write to a register's offset with the top address bit set (offset + 0x80, an
    unknown offset of the 8-bit map) changes no register and sets error code 6; a read
    there returns 0 -- for every configuration register (no address bit is ignored).
    (Misaligned addresses cannot be issued here: cocotbext-axi's master aligns them.)"""
    tb = TB(dut)
    await tb.reset()
    top = 1 << (len(dut.s_axil_awaddr) - 1)
    for off in (OP, K, CMP, BASE, LEN):
        before = await tb.rd(off)
        new = 1 if before != 1 else 2            # legal in every register, and different
        await tb.wr(off | top, new)
        s = await tb.status()
        assert s["err"] == 1 and s["code"] == 6, f"write to 0x{off | top:x}: STATUS {s}, documented code 6"
        after = await tb.rd(off)
        assert after == before, f"write to 0x{off | top:x} changed 0x{off:x}: {before} -> {after}"
        assert await tb.rd(off | top) == 0, f"read of unknown offset 0x{off | top:x} is not 0"
        await tb.wr(CTRL, ERRCLR)
    await tb.finish()


async def raw_axil_read(tb, addr: int) -> tuple[int, int]:
    """One AXI4-Lite read driven on the AR wires directly (cocotbext-axi's master aligns every
    address to the word, so it cannot issue a misaligned read).  The master is idle, so its AR
    source leaves ARVALID alone; its R sink holds RREADY and queues the beat, which is taken
    out of its queue here.  Returns (RDATA, RRESP); every wait is bounded."""
    from cocotb.triggers import ReadOnly
    d = tb.dut
    r_sink = tb.axil.read_if.r_channel
    assert r_sink.empty(), "raw read while the master has an R beat queued"
    d.s_axil_araddr.value = addr
    d.s_axil_arvalid.value = 1
    for _ in range(AXIL_CYCLES):
        await ReadOnly()
        took = int(d.s_axil_arready.value)
        await RisingEdge(tb.clk)
        if took:
            break
    else:
        raise AssertionError(f"s_axil: raw read 0x{addr:x}: no ARREADY")
    d.s_axil_arvalid.value = 0
    for _ in range(AXIL_CYCLES):
        await ReadOnly()
        if int(d.s_axil_rvalid.value) and int(d.s_axil_rready.value):
            got = (int(d.s_axil_rdata.value), int(d.s_axil_rresp.value))
            await RisingEdge(tb.clk)
            break
        await RisingEdge(tb.clk)
    else:
        raise AssertionError(f"s_axil: raw read 0x{addr:x}: no R beat")
    await ClockCycles(tb.clk, 2)
    assert r_sink.count() == 1, f"the master's R sink saw {r_sink.count()} beats for one raw read"
    r_sink.clear()
    return got


@sim_test(timeout_us={"default": 60, "*": 240})
async def insertions_read_while_streaming(dut):
    """INS read back to back while a min/max array streams in, one element a cycle (its
    first half ascending: every element a new maximum, so reads land right after an
    insertion): each read returns the insertions accepted before its AR handshake (the
    counter's increment is registered a cycle after the decision and a read adds the
    pending one), then the final count."""
    from cocotb.triggers import ReadOnly
    tb = TB(dut)
    await tb.reset()
    await tb.config(MINMAX)
    await tb.wait_idle()
    await tb.wr(CTRL, START)
    n = 48
    vals = np.concatenate([np.arange(n // 2) * 3 - 20, tb.rng.integers(-60, 60, n - n // 2)])
    lo = hi = None
    ins_of = []                      # per element: does it insert (indices ascend: a tie never does)
    for v in vals:
        ins_of.append(lo is None or v < lo or v > hi)
        lo = v if lo is None else min(lo, v)
        hi = v if hi is None else max(hi, v)
    fires, ars, rd = [], [], []
    done, rec = [False], [True]

    async def watch():
        e = 0
        while not done[0]:
            await ReadOnly()                  # the handshakes of the coming edge e + 1
            d = dut
            if int(d.s_axis_in_tvalid.value) and int(d.s_axis_in_tready.value):
                fires.append(e + 1)
            if rec[0] and int(d.s_axil_arvalid.value) and int(d.s_axil_arready.value):
                ars.append(e + 1)
            if rec[0] and int(d.s_axil_rvalid.value) and int(d.s_axil_rready.value):
                rd.append(int(d.s_axil_rdata.value))
            await RisingEdge(tb.clk)
            e += 1

    w = cocotb.start_soon(watch())
    await RisingEdge(tb.clk)
    tb.send(vals, np.arange(n))
    for _ in range(4 * n):
        await raw_axil_read(tb, INS)
        if len(fires) == n:
            break
    rec[0] = False
    await tb.wait_idle()
    got_final = await tb.rd(INS)
    await ClockCycles(tb.clk, 2)
    done[0] = True
    await w
    assert len(fires) == n, f"{len(fires)} of {n} elements taken"
    assert len(ars) == len(rd), (ars, rd)
    pairs = list(zip(ars, rd))
    during = 0
    for h, v in pairs:
        exp = sum(1 for f, ins in zip(fires, ins_of) if ins and f < h)
        assert v == exp, f"INS read at edge {h}: {v}, expected {exp} (elements taken at {fires})"
        during += fires[0] < h <= fires[-1]
    assert during >= 3, f"only {during} INS reads while the array streamed"
    assert got_final == sum(ins_of), f"final INS {got_final}, expected {sum(ins_of)}"
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})
async def misaligned_reads_return_zero(dut):
    """The map's rule "misaligned reads return 0" (OKAY response) at byte offsets 1, 2 and 3 of
    every configuration register and of STATUS, each holding a nonzero value; the same raw
    read at the aligned offset returns the register (so the helper reads real data)."""
    tb = TB(dut)
    await tb.reset()
    await tb.wr(K, 3)
    await tb.wr(BASE, 1)
    await tb.wr(LEN, 2)
    await tb.wr(CMP, 1)
    await tb.wr(0x80, 1)                         # unknown offset: sets the error, STATUS != 0
    for off in (OP, K, CMP, BASE, LEN, STATUS):
        want = await tb.rd(off)
        if off != OP:
            assert want != 0, f"register 0x{off:x} reads 0: the check below could not tell"
        got, resp = await raw_axil_read(tb, off)
        assert (got, resp) == (want, 0), f"aligned raw read 0x{off:x}: {got:#x}/{resp}, master read {want:#x}"
        for b in (1, 2, 3):
            got, resp = await raw_axil_read(tb, off + b)
            assert (got, resp) == (0, 0), f"misaligned read 0x{off + b:x}: {got:#x}/{resp}, documented 0/OKAY"
    await tb.wr(CTRL, ERRCLR)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})
async def minmax_large_indices(dut):
    """MIN/MAX with indices spread over the whole IDXW range (the top index bits set): the
    dumped min and max carry every bit of their index, ties between equal values are
    decided on every index bit, and INSERTIONS counts the elements that changed the min or
    the max (the first one included), per golden.maple's tie rule."""
    tb = TB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    hi = 1 << tb.IDXW

    async def run(vals, idx):
        await tb.minmax(vals, idx)
        mn = mx = None
        changes = 0
        for v, i in zip(np.asarray(vals).tolist(), np.asarray(idx).tolist()):
            up = mn is None or maple.better(v, i, *mn, False) or maple.better(v, i, *mx, True)
            if mn is None or maple.better(v, i, *mn, False):
                mn = (v, i)
            if mx is None or maple.better(v, i, *mx, True):
                mx = (v, i)
            changes += bool(up)
        ins = await tb.rd(INS)
        assert ins == changes, f"INSERTIONS {ins} after MIN/MAX of {len(vals)} elements, expected {changes}"

    for _ in range(3):
        n = 12
        await run(tb.rng.integers(-1000, 1000, size=n), tb.rng.integers(hi // 2, hi, size=n))
    await run(np.array([3, -7, 9]), np.array([hi - 1, hi - 2, hi // 2]))
    # equal values: the smaller index wins min and max, also when only the top bit tells
    await run(np.array([4, 4, 4]), np.array([hi // 2 + 1, 2, hi // 2 + 3]))
    await run(np.array([4, 4, 4]), np.array([hi // 2 + 3, hi // 2 + 1, 2]))
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 3.4 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expectation, an extra output and a dropped output must
    each make the scoreboard fail."""
    tb = TB(dut)
    await tb.reset()
    vals = tb.rand_vals(20)
    await tb.config(SEL, 4, True)
    await tb.stream(vals, np.arange(20))
    i, v = maple.topk(vals, np.arange(20), 4, True)
    tb.expect(i, v)
    d, last = tb.exp[1]
    tb.exp[1] = (d ^ (1 << tb.W), last)              # corrupt one index LSB
    await tb.dump()
    assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    tb.expect(i[:-1], v[:-1])                         # one expectation short: an extra output
    await tb.dump()
    assert tb.sb.errors >= 1, "extra output not detected"
    tb.sb.errors = tb.sb.mismatches = 0
    tb.exp.append((123, 1))                            # an output that never comes
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@sim_test(timeout_us={"default": 240, "*": 960})  # measured 54.7 us on default
async def bench_throughput(dut):
    """Benchmark: scanner stall cycles per replacement against k (the paper's scanner: k-1;
    the sorted shadow list: 0), cycles per element of a random array with no bubbles
    (asserted 1.0 for every k: replacements do not stall), and RMW elements per cycle with
    no bubbles (ideal 1.0)."""
    tb = TB(dut)
    inmon = AxisMonitor(dut, "s_axis_in", dut.clk)
    await tb.reset()
    n = 256
    vals = tb.rng.permutation(np.arange(-n, n))[:n]
    ks, rows = [], []
    k = 1
    while k <= tb.KMAX:
        ks.append(k)
        k *= 2
    for k in ks:
        t0 = len(inmon.times)
        for lg in (True, False):
            await tb.config(SEL, k, lg)
            await tb.stream(vals, np.arange(n))
            stalls, ins = await tb.rd(STALLS), await tb.rd(INS)
            tr = maple.selection_trace(vals, np.arange(n), k, lg)
            tm = inmon.times[-n:]
            rows.append({"k": k, "largest": lg, "insertions": ins, "replacements": tr["replacements"],
                         "stalls": stalls,
                         "stalls_per_insertion": round(stalls / max(ins, 1), 3),
                         "stalls_per_replacement": round(stalls / max(tr["replacements"], 1), 3),
                         "cycles_per_element": round((tm[-1] - tm[0] + 1) / n, 3)})
            assert tr["replacements"] == 0 or k == 1 or rows[-1]["cycles_per_element"] == 1.0, \
                f"k={k}: {tm[-1] - tm[0] + 1} cycles for {n} elements with {tr['replacements']} replacements"
            tb.expect(tr["indices"], tr["values"])
            await tb.dump()
        assert len(inmon.times) - t0 == 2 * n
    await tb.config(RMW)
    addrs = tb.rng.integers(0, tb.DEPTH, size=n)
    addrs[n // 2:n // 2 + 16] = 1                      # a run on one address
    await tb.stream(np.ones(n, dtype=np.int64), addrs)
    tm = inmon.times[-n:]
    rmw_cpe = (tm[-1] - tm[0] + 1) / n
    for r in rows:
        dut._log.info("bench select: %s", r)
    rec = record_bench(CORE, select=rows, rmw_elements_per_cycle=round(1.0 / rmw_cpe, 3), ideal_rmw=1.0,
                       array_length=n)
    dut._log.info("bench: rmw elements/cycle %.3f", 1.0 / rmw_cpe)
    await tb.finish()
    return rec


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("small", "icarus"), ("default", "ghdl")]))
def test_maple_smart_memory(cfg, sim):
    run_core(CORE, cfg, sim)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
