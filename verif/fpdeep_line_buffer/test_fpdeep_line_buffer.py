"""fpdeep_line_buffer: streamed map -> every K x K window of the zero-padded map, against
numpy padding/slicing (golden.conv.sliding_windows).

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from golden.conv import sliding_windows
from rtl_gen.common.params import ParamError
from rtl_gen.registry import get
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.tb_common import StartDoneMixin, record_bench, start_while_busy, steady_cycles_per_beat, sim_test
from verif.tb_common import sim_seed as seed_of
from verif.fpdeep_line_buffer import covermodel as fcov

CORE = "fpdeep_line_buffer"
IN = "s_axis_pix"
OUT = "m_axis_win"


class LineBufferTB(StartDoneMixin):
    """Clock, seeded pixel source with bubbles, window sink with backpressure, monitor,
    bit-exact scoreboard fed by ``sliding_windows``, and a done counter."""

    def __init__(self, dut, src_p=1.0, sink_p=1.0):
        self.dut = dut
        self.p = dut_params()
        self.K, self.W = self.p["K"], self.p["W"]
        self.seed = seed_of()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, self.p)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.src_p = src_p
        self.src = AxisSource(dut, IN, dut.clk, Gate(self.seed * 7 + 1, src_p))
        self.sink = AxisSink(dut, OUT, dut.clk, Gate(self.seed * 13 + 101, sink_p))
        self.mon = AxisMonitor(dut, OUT, dut.clk, reset=dut.rst)
        self.sb = FixedScoreboard(dut)
        self.exp = self.sb.add_stream(self.mon, StreamSpec(OUT, [("win", self.K * self.K, self.W, 0)]))
        dut.start.value = 0
        dut.s_axis_pix_tlast.value = 0
        self.done_count = 0
        cocotb.start_soon(self._count_done())
        self.cov_obs = fcov.start(dut)

    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def abort_and_reset(self):
        self.src.kill()
        self.src.tvalid.value = 0
        await self.reset()
        self.src = AxisSource(self.dut, IN, self.dut.clk, Gate(self.seed * 7 + 1001, self.src_p))
        self.exp.clear()
        self.done_count = 0

    def rand_map(self, h, w, extreme=0.15):
        lo, hi = -(1 << (self.W - 1)), (1 << (self.W - 1)) - 1
        m = self.rng.integers(lo, hi + 1, size=(h, w), dtype=np.int64)
        rails = self.rng.choice(np.array([lo, hi, 0, -1, 1]), size=(h, w))
        return np.where(self.rng.random((h, w)) < extreme, rails, m)

    def job(self, h, w, pad, fmap=None, bad_tlast_at=None):
        """Queue a map and the windows it must give; returns the cfg fields."""
        fmap = self.rand_map(h, w) if fmap is None else np.asarray(fmap, dtype=np.int64)
        mask = (1 << self.W) - 1
        for r in range(h):
            for c in range(w):
                last = int(c == w - 1)
                if bad_tlast_at == (r, c):
                    last ^= 1
                self.src.append((int(fmap[r, c]) & mask, last))
        win = sliding_windows(fmap, self.K, pad)
        ho, wo = win.shape[:2]
        for r in range(ho):
            for c in range(wo):
                self.exp.append((pack_lanes(win[r, c].reshape(-1), self.W), int(c == wo - 1)))
        return dict(width=w, height=h, pad=pad)

    def valid_pads(self, h, w):
        return [p for p in range(self.p["MAX_PAD"] + 1) if h + 2 * p >= self.K and w + 2 * p >= self.K]

    def rand_shape(self, maxh=None, maxw=None):
        maxh = min(self.p["MAX_HEIGHT"], maxh or 12)
        maxw = min(self.p["MAX_WIDTH"], maxw or 12)
        while True:
            h, w = int(self.rng.integers(1, maxh + 1)), int(self.rng.integers(1, maxw + 1))
            pads = self.valid_pads(h, w)
            if pads:
                return h, w, int(self.rng.choice(pads))

    async def run_jobs(self, jobs):
        for k, f in enumerate(jobs):
            await self.initiate(**f)
            await self.wait_done(self.done_count + 1)
            assert int(self.dut.cfg_err.value) == 0, f"cfg_err for {f}"
            assert int(self.dut.row_err.value) == 0, f"row_err for {f}"

    async def finish(self, settle=20):
        await ClockCycles(self.clk, settle)
        assert self.mon.protocol_errors == 0, f"{self.mon.protocol_errors} AXI4-Stream hold violations"
        assert not self.src._sendQ, "input left unconsumed"
        self.sb.check()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 2.5 us on default
async def random_maps(dut):
    """Random sizes, pads and pixels (rails included); random bubbles and backpressure."""
    tb = LineBufferTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    for _ in range(6):
        h, w, pad = tb.rand_shape()
        await tb.run_jobs([tb.job(h, w, pad)])
    await tb.finish()


@sim_test(timeout_us={"default": 180, "*": 720})  # measured 37.8 us on default
async def padding_edges(dut):
    """Every padding value; narrowest/shortest maps for each (one output row/column);
    the maximum width and height; single rows and columns."""
    tb = LineBufferTB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    K, P = tb.K, tb.p["MAX_PAD"]
    MW, MH = tb.p["MAX_WIDTH"], tb.p["MAX_HEIGHT"]
    jobs = []
    for pad in range(P + 1):
        m = max(1, K - 2 * pad)                 # smallest map edge for this pad
        jobs += [tb.job(m, m, pad), tb.job(m, min(MW, m + 3), pad), tb.job(min(MH, m + 2), m, pad)]
    jobs.append(tb.job(MH, MW, 0))
    jobs.append(tb.job(MH, MW, P))
    for h, w in ((1, MW), (MH, 1)):             # a single row / column, largest valid pad
        pads = tb.valid_pads(h, w)
        if pads:
            jobs.append(tb.job(h, w, pads[-1]))
    await tb.run_jobs(jobs)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.9 us on default
async def one_by_one_map(dut):
    """A 1x1 map with every padding that makes it valid: (1+2P-K+1)^2 windows, all zero
    except the pixel; directed values at the rails."""
    tb = LineBufferTB(dut, sink_p=0.8)
    await tb.reset()
    lo, hi = -(1 << (tb.W - 1)), (1 << (tb.W - 1)) - 1
    jobs = []
    for pad in tb.valid_pads(1, 1):
        for v in (hi, lo, -1):
            jobs.append(tb.job(1, 1, pad, fmap=[[v]]))
    assert jobs, "no valid padding for a 1x1 map in this configuration"
    await tb.run_jobs(jobs)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.7 us on default
async def back_to_back(dut):
    """Start again as soon as busy drops; no bubbles, always-ready sink."""
    tb = LineBufferTB(dut)
    await tb.reset()
    fields = [tb.job(*tb.rand_shape()) for _ in range(4)]
    await tb.initiate(**fields[0])
    for k in range(1, len(fields)):
        await tb.wait_done(k)
        await tb.initiate(**fields[k])
    await tb.wait_done(len(fields))
    await tb.finish()



async def _watch_tuser(tb, out):
    """Record ``m_axis_win_tuser`` of every window handshake."""
    dut = tb.dut
    while True:
        await RisingEdge(tb.clk)
        await ReadOnly()
        if int(dut.rst.value) == 0 and int(dut.m_axis_win_tvalid.value) and int(dut.m_axis_win_tready.value):
            out.append(int(dut.m_axis_win_tuser.value))


@sim_test(timeout_us={"default": 200, "*": 800})  # measured 43.1 us on default
async def overlapped_maps(dut):
    """Start each map as soon as ``busy`` drops (the previous map's input is all in, its
    windows still draining): random sizes and pads, random bubbles and backpressure; every
    map bit-exact, ``tuser`` exactly on each map's last window, one ``done`` per map."""
    tb = LineBufferTB(dut)
    await tb.reset()
    tusers, tuser_exp = [], []
    cocotb.start_soon(_watch_tuser(tb, tusers))
    total_overlap = 0
    for k, (src_p, sink_p, n) in enumerate(((1.0, 1.0, 8), (0.8, 0.4, 8), (0.6, 0.9, 8),
                                            (1.0, 0.25, 6), (0.95, 0.8, 8))):
        tb.src.gate = Gate(tb.seed * 7 + 11 * k + 3, src_p)
        tb.sink.gate = Gate(tb.seed * 13 + 17 * k + 5, sink_p)
        jobs = []
        for _ in range(n):
            h, w, pad = tb.rand_shape()
            jobs.append(tb.job(h, w, pad))
            nwin = (h + 2 * pad - tb.K + 1) * (w + 2 * pad - tb.K + 1)
            tuser_exp += [0] * (nwin - 1) + [1]
        d0 = tb.done_count
        overlap = 0
        for i, f in enumerate(jobs):
            await tb.initiate(**f)
            if tb.done_count < d0 + i:          # the previous map has not finished yet
                overlap += 1
            assert int(dut.cfg_err.value) == 0, f"cfg_err for {f}"
        await tb.wait_done(d0 + n)
        assert tb.done_count == d0 + n
        assert int(dut.row_err.value) == 0, "row_err"
        dut._log.info("src_p=%.2f sink_p=%.2f: %d maps, %d started while the previous one drained",
                      src_p, sink_p, n, overlap)
        total_overlap += overlap
    await tb.finish()
    assert total_overlap > 0, "no map was started while the previous one drained"
    assert tusers == tuser_exp, "m_axis_win_tuser is not exactly on each map's last window"


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.6 us on default
async def invalid_configuration(dut):
    """Width or height 0 or above the maximum, pad above MAX_PAD, a padded map smaller than
    K: cfg_err and done, nothing consumed; a valid start afterwards clears cfg_err."""
    tb = LineBufferTB(dut)
    await tb.reset()
    K, P = tb.K, tb.p["MAX_PAD"]
    bad = [dict(width=0, height=4, pad=0), dict(width=4, height=0, pad=0),
           dict(width=1, height=K + 1, pad=0), dict(width=K + 1, height=K - 2 if K > 2 else 1, pad=0)]
    if tb.p["MAX_WIDTH"] + 1 < (1 << len(dut.cfg_width)):
        bad.append(dict(width=tb.p["MAX_WIDTH"] + 1, height=K, pad=0))
    bad.append(dict(width=(1 << len(dut.cfg_width)) - 1, height=K, pad=0))
    bad.append(dict(width=K, height=(1 << len(dut.cfg_height)) - 1, pad=0))
    if P + 1 < (1 << len(dut.cfg_pad)):
        bad.append(dict(width=K, height=K, pad=P + 1))
    fields = tb.job(K, K, 0)                      # queued now: must not be touched
    for k, f in enumerate(bad):
        await tb.initiate(**f)
        await tb.wait_done(k + 1, timeout=10)
        assert int(dut.cfg_err.value) == 1, f"cfg_err not set for {f}"
        assert int(dut.busy.value) == 0
    await ClockCycles(dut.clk, 5)
    assert tb.src.sent == 0, "an invalid initiation consumed input"
    assert int(dut.m_axis_win_tvalid.value) == 0
    await tb.initiate(**fields)
    await RisingEdge(dut.clk)
    assert int(dut.cfg_err.value) == 0
    await tb.wait_done(len(bad) + 1)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.9 us on default
async def row_tlast_check(dut):
    """A wrong input tlast sets row_err (sticky until the next start); the windows are
    unaffected."""
    tb = LineBufferTB(dut, src_p=0.8)
    await tb.reset()
    K = tb.K
    await tb.initiate(**tb.job(K + 1, K + 2, 0, bad_tlast_at=(1, 2)))
    await tb.wait_done(1)
    assert int(dut.row_err.value) == 1, "row_err not set by a misplaced tlast"
    await tb.run_jobs([tb.job(K, K, 0)])        # cleared by the next start
    await tb.finish()


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 5.1 us on default
async def reset_mid_stream(dut):
    """Reset in the middle of a map (line RAM half filled, windows in flight): idle
    afterwards, the next maps exact."""
    tb = LineBufferTB(dut, src_p=0.9, sink_p=0.5)
    await tb.reset()
    h, w = min(tb.p["MAX_HEIGHT"], 9), min(tb.p["MAX_WIDTH"], 9)
    await tb.initiate(**tb.job(h, w, tb.p["MAX_PAD"]))
    at = int(tb.rng.integers(1, 3 * w + 6))     # seeded random reset cycle within the map
    dut._log.info("reset %d cycles after start", at)
    await ClockCycles(dut.clk, at)
    assert tb.done_count == 0, "the map should still be in progress"   # busy may drop once its input is in
    await tb.abort_and_reset()
    assert int(dut.busy.value) == 0 and int(dut.m_axis_win_tvalid.value) == 0
    assert int(dut.cfg_err.value) == 0 and int(dut.row_err.value) == 0, "error flags not at reset values"
    await tb.run_jobs([tb.job(*tb.rand_shape()), tb.job(*tb.rand_shape())])
    await tb.finish()


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 5.5 us on default
async def start_while_busy_ignored(dut):
    """Start pulses with other cfg fields (another valid shape, then an invalid one) while
    busy: the map in flight completes exactly as first configured (windows bit-exact, one
    done, no cfg_err), the extra starts consume nothing and produce nothing, and the next
    legal start works."""
    tb = LineBufferTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    K = tb.K
    h, w = min(tb.p["MAX_HEIGHT"], K + 3), min(tb.p["MAX_WIDTH"], K + 4)
    f = tb.job(h, w, 0)
    await tb.initiate(**f)
    n = await start_while_busy(dut, tb.clk, dict(width=K, height=K + 1, pad=tb.p["MAX_PAD"]), pulses=2)
    n += await start_while_busy(dut, tb.clk, dict(width=0, height=0, pad=0), pulses=1)
    dut._log.info("%d starts given while busy", n)
    await tb.wait_done(1)
    await ClockCycles(dut.clk, 40)
    assert tb.done_count == 1, f"{tb.done_count} done pulses for one accepted map"
    assert int(dut.cfg_err.value) == 0 and int(dut.row_err.value) == 0, "error flag from an ignored start"
    assert int(dut.busy.value) == 0, "busy after the only accepted map finished"
    assert not tb.src._sendQ, "input left unconsumed"
    await tb.run_jobs([tb.job(*tb.rand_shape())])
    assert tb.done_count == 2
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.6 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expected window, an extra window and a dropped window
    must each make the scoreboard fail."""
    tb = LineBufferTB(dut)
    await tb.reset()
    K = tb.K
    f = tb.job(K + 1, K + 1, 0)
    d, last = tb.exp[1]
    tb.exp[1] = (d ^ (1 << (tb.W * K)), last)       # one bit of element (1, 0)
    await tb.run_jobs([f])
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    f = tb.job(K, K + 1, 0)
    tb.exp.pop()
    await tb.run_jobs([f])
    await ClockCycles(dut.clk, 5)
    assert tb.sb.errors == 1, "extra window not detected"
    tb.sb.errors = 0
    tb.exp.append((123, 1))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@sim_test(timeout_us={"default": 680, "*": 2720})  # measured 163.4 us on default
async def bench_throughput(dut):
    """Benchmark (reported, not asserted): windows per cycle along an output row (steady
    state, ideal 1.0) and over whole maximum-size maps from start to done, with and
    without padding; no bubbles, always-ready sink."""
    tb = LineBufferTB(dut)
    inmon = AxisMonitor(dut, IN, dut.clk)
    await tb.reset()
    K, P = tb.K, tb.p["MAX_PAD"]
    h, w = tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"]
    rec = {}
    for pad in sorted({0, (K - 1) // 2, P} & set(tb.valid_pads(h, w))):
        n0 = len(tb.mon.times)
        i0 = len(inmon.times)
        f = tb.job(h, w, pad)
        t0 = tb.mon.cycles
        await tb.initiate(**f)
        await tb.wait_done(tb.done_count + 1)
        cycles = tb.mon.cycles - t0
        times = tb.mon.times[n0:]
        wo = w + 2 * pad - K + 1
        row = [steady_cycles_per_beat(times[r * wo:(r + 1) * wo]) for r in range(len(times) // wo)] if wo > 1 else [1.0]
        rec[f"pad{pad}"] = dict(windows=len(times), cycles_start_to_done=cycles,
                                windows_per_cycle_in_row=1.0 / max(row),
                                windows_per_cycle_map=len(times) / cycles,
                                pixels_per_cycle_map=(len(inmon.times) - i0) / cycles)
        if pad == 0:        # the last pixel completes the last output row's input
            ho = h + 2 * pad - K + 1
            rec[f"pad{pad}"]["latency_last_pixel_to_row_first_window"] = times[(ho - 1) * wo] - inmon.times[-1]
        # NB maps back to back, each started as soon as busy drops (overlapping the drain)
        NB = 4
        jobs = [tb.job(h, w, pad) for _ in range(NB)]
        n0, t0, d0 = len(tb.mon.times), tb.mon.cycles, tb.done_count
        for f in jobs:
            await tb.initiate(**f)
        await tb.wait_done(d0 + NB)
        cyc = tb.mon.cycles - t0
        rec[f"pad{pad}"].update(batch_maps=NB, batch_cycles_start_to_done=cyc,
                                windows_per_cycle_batch=(len(tb.mon.times) - n0) / cyc)
    await tb.finish()
    # flat summary (shown in the `make bench` table): per pad, over one map and back to back
    flat = {f"{k}_{pd}": round(v, 4) for pd, d in rec.items() for k, v in d.items()
            if k in ('windows_per_cycle_map', 'windows_per_cycle_batch')}
    out = record_bench(CORE, map=f"{h}x{w}", ideal_windows_per_cycle=1.0, **flat, **rec)
    dut._log.info("bench: %s", out)


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("k5", "icarus")]))
def test_fpdeep_line_buffer(cfg, sim):
    run_core(CORE, cfg, sim)


@pytest.mark.parametrize("given,param", [({"K": 1}, "K"), ({"K": 8}, "K"), ({"MAX_PAD": 3}, "MAX_PAD"),
                                         ({"W": 12}, "W"), ({"MAX_WIDTH": 0}, "MAX_WIDTH"),
                                         ({"K": 5, "MAX_PAD": 0, "MAX_HEIGHT": 4}, "MAX_HEIGHT")])
def test_fpdeep_line_buffer_invalid_parameters(given, param):
    with pytest.raises(ParamError, match=param):
        get(CORE).resolve(given)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
