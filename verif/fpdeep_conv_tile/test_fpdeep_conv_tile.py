"""fpdeep_conv_tile: window . filter per cycle, rounded (mode 0) or exact (mode 1), against
golden.conv.window_dot (and, through it, golden.conv.forward / icp_forward).

cocotb tests (run inside the simulator) and, at the bottom, the pytest launchers.
"""
from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from golden import conv
from golden.fixedpoint import QFormat
from rtl_gen.common.params import ParamError
from rtl_gen.fpdeep.fpdeep_conv_tile import widths
from rtl_gen.registry import get
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.rounding_ties import edge_targets, fit_tie_shrinking, odd_coef, rand_targets, require_ties, tie_value
from verif.tb_common import DEFAULT_CYCLES, rand_words, record_bench, sim_test, wait_until
from verif.tb_common import sim_seed as seed_of
from verif.fpdeep_conv_tile import covermodel as fcov

CORE = "fpdeep_conv_tile"
OUT = "m_axis_res"


class UserSource(AxisSource):
    """AxisSource that also drives ``tuser`` with each beat: transactions (data, last, user)."""

    def __init__(self, dut, prefix, clk, gate=None):
        self.tuser = getattr(dut, f"{prefix}_tuser")
        self.tuser.value = 0
        super().__init__(dut, prefix, clk, gate)

    async def _driver_send(self, transaction, sync=True, **kwargs):
        data, last, user = transaction
        while not self.gate.next():
            self.tvalid.value = 0
            await RisingEdge(self.clk)
        self.tuser.value = int(user)
        self.gate = _Once(self.gate)          # the bubble was drawn; do not draw again
        try:
            await super()._driver_send((data, last), sync, **kwargs)
        finally:
            self.gate = self.gate.inner


class _Once:
    def __init__(self, inner):
        self.inner = inner

    def next(self):
        return True


class TileTB:
    """Clock, seeded window and filter sources with bubbles, result sink with
    backpressure, monitor, bit-exact scoreboard fed by ``golden.conv.window_dot``."""

    def __init__(self, dut, src_p=1.0, sink_p=1.0):
        self.dut = dut
        self.p = dut_params()
        self.K, self.W = self.p["K"], self.p["W"]
        self.fmt = QFormat(self.p["W"], self.p["F"])
        self.ow = widths(self.p)["ow"]
        self.seed = seed_of()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, self.p)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.src_p = src_p
        self._sources(0)
        self.sink = AxisSink(dut, OUT, dut.clk, Gate(self.seed * 13 + 101, sink_p))
        self.mon = AxisMonitor(dut, OUT, dut.clk, reset=dut.rst)
        self.sb = FixedScoreboard(dut)
        self.exp = self.sb.add_stream(self.mon, StreamSpec(OUT, [("res", 1, self.ow, self.p["F"])]))
        self.wk = np.zeros((self.K, self.K), dtype=np.int64)   # the filter after reset
        self.exp_user, self.got_user = [], []                   # m_axis_res_tuser (mode) per result
        cocotb.start_soon(self._watch_user())
        self.cls = fcov.start(dut, self.mon)                    # functional coverage

    async def _watch_user(self):
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            d = self.dut
            if int(d.rst.value) == 0 and d.m_axis_res_tvalid.value.is_resolvable \
                    and int(d.m_axis_res_tvalid.value) and int(d.m_axis_res_tready.value):
                self.got_user.append(int(d.m_axis_res_tuser.value))

    def _sources(self, salt):
        self.n_win = 0
        self.swin = UserSource(self.dut, "s_axis_win", self.dut.clk, Gate(self.seed * 7 + 1 + salt, self.src_p))
        self.sw = AxisSource(self.dut, "s_axis_w", self.dut.clk, Gate(self.seed * 7 + 2 + salt, self.src_p))

    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def abort_and_reset(self):
        for s in (self.swin, self.sw):
            s.kill()
            s.tvalid.value = 0
        await self.reset()
        self._sources(1000)
        self.exp.clear()
        self.cls.clear()
        self.exp_user, self.got_user = [], []
        self.wk = np.zeros((self.K, self.K), dtype=np.int64)

    async def drain(self):
        """Wait until every queued window has been accepted (a source's own drain() does
        not see a beat held back by a bubble)."""
        await wait_until(self.clk, lambda: self.swin.sent >= self.n_win, DEFAULT_CYCLES,
                         "s_axis_win: windows not all accepted", expect=f"{self.n_win} windows accepted",
                         detail=lambda: f"{self.swin.sent} accepted")

    async def load(self, wk):
        """Load a filter once every earlier window is accepted, and wait until the filter
        is accepted: earlier windows use the old filter, later ones the new one."""
        await self.drain()
        self.wk = np.asarray(wk, dtype=np.int64).reshape(self.K, self.K)
        fcov.COV.sample("filter_load", "between_windows" if self.exp else "idle")
        sent = self.sw.sent
        self.sw.append((pack_lanes(self.wk.reshape(-1), self.W), 0))
        await wait_until(self.clk, lambda: self.sw.sent != sent, DEFAULT_CYCLES,
                         "s_axis_w: filter load not accepted", expect="1 filter beat")

    async def send(self, wins, modes, lasts=None):
        """Queue windows (n, K, K) with their modes; expectations from the golden tile."""
        wins = np.asarray(wins, dtype=np.int64).reshape(-1, self.K, self.K)
        n = len(wins)
        lasts = [0] * n if lasts is None else lasts
        mask = (1 << self.ow) - 1
        for k in range(n):
            m = int(modes[k])
            y = conv.window_dot(wins[k], self.wk, self.fmt, exact=bool(m))
            self.exp.append((int(y) & mask, int(lasts[k])))
            self.exp_user.append(m)
            self.cls.expect([fcov.labels(conv.window_dot(wins[k], self.wk, self.fmt, exact=True), m, lasts[k],
                                         self.fmt.F, self.fmt.W)])
            self.swin.append((pack_lanes(wins[k].reshape(-1), self.W), int(lasts[k]), m))
            self.n_win += 1

    def rand(self, shape, extreme=0.1, scale=None):
        return rand_words(self.rng, shape, self.fmt, extreme, scale)

    async def finish(self, settle=20, timeout=5000):
        """Wait for the expected results (bounded), let extra ones show up, then check."""
        await self.drain()
        for _ in range(timeout):
            if not self.exp:
                break
            await RisingEdge(self.clk)
        await ClockCycles(self.clk, settle)
        assert self.mon.protocol_errors == 0, f"{self.mon.protocol_errors} AXI4-Stream hold violations"
        self.sb.check()
        assert self.got_user == self.exp_user, "m_axis_res_tuser (mode) differs from the windows' modes"


def make_tb(dut, src_p=1.0, sink_p=1.0):
    return TileTB(dut, src_p, sink_p)


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 2.4 us on default
async def random_windows(dut):
    """Random windows, filters and modes; several filter reloads; bubbles and backpressure."""
    tb = make_tb(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    K = tb.K
    for _ in range(5):
        await tb.load(tb.rand((K, K), scale=2.0))
        n = int(tb.rng.integers(1, 40))
        await tb.send(tb.rand((n, K, K), scale=2.0), tb.rng.integers(0, 2, n), tb.rng.integers(0, 2, n))
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.6 us on default
async def conv_of_padded_maps(dut):
    """The tile over the windows of zero-padded maps (every pad 0..K-1, a 1x1 map with
    padding) equals one channel of golden.conv.forward; mode 1 partials of several input
    channels, summed exactly and rounded once, equal the multi-channel forward (ICP)."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    K, fmt = tb.K, tb.fmt
    for pad in range(K):
        h, w = (1, 1) if pad == K - 1 else (int(tb.rng.integers(max(1, K - 2 * pad), K + 3)),
                                             int(tb.rng.integers(max(1, K - 2 * pad), K + 3)))
        if h + 2 * pad < K or w + 2 * pad < K:
            continue
        m = tb.rand((h, w), scale=2.0)
        wk = tb.rand((K, K), scale=1.0)
        wins = conv.sliding_windows(m, K, pad).reshape(-1, K, K)
        y = conv.forward(m[None], wk[None, None], None, 1, pad, fmt)[0].reshape(-1)
        assert np.array_equal(conv.window_dot(wins, wk, fmt), y), "golden tile != golden forward"
        await tb.load(wk)
        await tb.send(wins, [0] * len(wins))
    # ICP: three input channels, one output channel, pad (K-1)//2
    C, pad = 3, (K - 1) // 2
    x = tb.rand((C, K + 1, K + 2), scale=1.5)
    wk = tb.rand((1, C, K, K), scale=0.5)
    total = 0
    for c in range(C):
        wins = conv.sliding_windows(x[c], K, pad).reshape(-1, K, K)
        await tb.load(wk[0, c])
        await tb.send(wins, [1] * len(wins))
        total = total + conv.window_dot(wins, wk[0, c], fmt, exact=True)
    y = conv.forward(x, wk, None, 1, pad, fmt)[0].reshape(-1)
    assert np.array_equal(fmt.sat((np.asarray(total, dtype=object) + (1 << (fmt.F - 1))) >> fmt.F), y)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.9 us on default
async def saturation_corners(dut):
    """Rails: largest positive and negative exact sums (mode 1 range), saturation both
    ways (mode 0), mixed rails."""
    tb = make_tb(dut, sink_p=0.7)
    await tb.reset()
    K, fmt = tb.K, tb.fmt
    mn, mx = fmt.min_int, fmt.max_int
    full = lambda v: np.full((K, K), v, dtype=np.int64)  # noqa: E731
    rails = np.array([mn, mx, mn + 1, mx - 1, 0, 1, -1], dtype=np.int64)
    for wk in (full(mn), full(mx), rails[tb.rng.integers(0, 7, (K, K))]):
        await tb.load(wk)
        wins = np.stack([full(mn), full(mx), full(-1), full(1), rails[tb.rng.integers(0, 7, (K, K))]])
        await tb.send(np.concatenate([wins, wins]), [0] * 5 + [1] * 5)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.0 us on default
async def back_to_back(dut):
    """No bubbles, always-ready sink, filter loads between bursts, alternating modes."""
    tb = make_tb(dut)
    await tb.reset()
    K = tb.K
    for k in range(3):
        await tb.load(tb.rand((K, K)))
        await tb.send(tb.rand((20, K, K)), [(i + k) % 2 for i in range(20)])
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})
async def filter_back_to_back_and_stalled(dut):
    """Two filter beats in consecutive cycles (later windows use the second), and a filter
    beat offered while a stopped result sink has filled the output FIFO and stalled the
    pipeline: it is held (AXI4-Stream), taken once the sink resumes, and the windows
    accepted before it still use the old filter."""
    tb = make_tb(dut)
    await tb.reset()
    K, W = tb.K, tb.W
    await tb.load(tb.rand((K, K)))
    await tb.send(tb.rand((3, K, K)), [0, 1, 0])
    await tb.drain()
    f1, f2 = tb.rand((K, K)), tb.rand((K, K))
    sent = tb.sw.sent
    for f in (f1, f2):
        tb.sw.append((pack_lanes(f.reshape(-1), W), 0))
    await wait_until(tb.clk, lambda: tb.sw.sent >= sent + 2, DEFAULT_CYCLES, "s_axis_w: two filter beats not accepted")
    tb.wk = np.asarray(f2, dtype=np.int64)
    await tb.send(tb.rand((4, K, K)), [0, 1, 0, 1])
    await tb.drain()
    tb.sink.stop()                                        # results pile up: FIFO full, pipeline stalled
    await tb.send(tb.rand((3, K, K)), [1, 0, 1])
    await tb.drain()
    await ClockCycles(dut.clk, 12)
    f3 = tb.rand((K, K))
    sent = tb.sw.sent
    tb.sw.append((pack_lanes(f3.reshape(-1), W), 0))
    await ClockCycles(dut.clk, 8)
    tb.sink = AxisSink(dut, OUT, dut.clk)
    await wait_until(tb.clk, lambda: tb.sw.sent > sent, DEFAULT_CYCLES, "s_axis_w: filter not accepted after the stall")
    tb.wk = np.asarray(f3, dtype=np.int64)
    await tb.send(tb.rand((4, K, K)), [0, 1, 1, 0])
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.9 us on default
async def reset_mid_stream(dut):
    """Reset with windows in the pipeline: nothing comes out afterwards, the filter is
    cleared, and the next results are exact."""
    tb = make_tb(dut, src_p=0.9, sink_p=0.4)
    await tb.reset()
    K = tb.K
    await tb.load(tb.rand((K, K)))
    await tb.send(tb.rand((30, K, K)), [0] * 30)
    await ClockCycles(dut.clk, int(tb.rng.integers(1, 25)))     # seeded random reset cycle
    await tb.abort_and_reset()
    assert int(dut.m_axis_res_tvalid.value) == 0
    await tb.send(tb.rand((4, K, K)), [1, 0, 1, 0])       # filter is zero after reset
    await tb.load(tb.rand((K, K)))
    await tb.send(tb.rand((10, K, K)), tb.rng.integers(0, 2, 10))
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.4 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expectation, an extra result and a dropped result must
    each make the scoreboard fail."""
    tb = make_tb(dut)
    await tb.reset()
    K = tb.K
    await tb.load(tb.rand((K, K)))
    await tb.send(tb.rand((4, K, K)), [0, 1, 0, 1])
    d, last = tb.exp[2]
    tb.exp[2] = (d ^ 1, last)
    await tb.drain()
    await ClockCycles(dut.clk, 15)
    assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    await tb.send(tb.rand((2, K, K)), [0, 0])
    tb.exp.pop()
    await tb.drain()
    await ClockCycles(dut.clk, 15)
    assert tb.sb.errors == 1, "extra result not detected"
    tb.sb.errors = 0
    tb.exp.append((123, 0))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 2.3 us on default
async def bench_throughput(dut):
    """Benchmark (reported, not asserted): MAC utilization = useful MACs / (K*K * cycles)
    between the first and the last result of a long burst (no bubbles, always-ready sink);
    ideal 1.0.  Also the latency from the last window to its result."""
    tb = make_tb(dut)
    inmon = AxisMonitor(dut, "s_axis_win", dut.clk)
    await tb.reset()
    K = tb.K
    await tb.load(tb.rand((K, K)))
    n = 200
    await tb.send(tb.rand((n, K, K), extreme=0.0), [0] * n)
    await tb.finish()
    t = tb.mon.times[-n:]
    cycles = t[-1] - t[0] + 1
    rec = record_bench(CORE, windows=n, macs=n * K * K, cycles=cycles,
                       mac_utilization=n * K * K / (K * K * cycles), ideal=1.0,
                       latency_cycles=t[-1] - inmon.times[-1])
    dut._log.info("bench: %s", rec)


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.9 us on default
async def rounding_ties(dut):
    """Directed rounding ties in mode 0 (the tile's only rounding point): windows whose
    exact dot product with the filter is exactly half an LSB above a word, both signs --
    random targets and the edge targets (half an LSB above max_int must saturate, above
    min_int - 1 lands on min_int).  The filter has ``one`` at tap 0 and an odd word at the
    last tap; the window's other taps are random, the last tap fixes the residue and tap 0
    the word (``fit_tie_shrinking``).  Ties counted per sign on the exact sums (must occur)."""
    tb = make_tb(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    K, fmt, rng = tb.K, tb.fmt, tb.rng
    n = K * K
    vals = []
    for rnd in range(2):
        wk = tb.rand((n,), 0.0, scale=1.0)
        wk[0], wk[-1] = fmt.one, odd_coef(fmt, rng)
        await tb.load(wk.reshape(K, K))
        wins = []
        for t in (edge_targets(fmt) if rnd == 0 else []) + rand_targets(fmt, rng, 12):
            win = tb.rand((n,), 0.0, scale=2.0)
            mid = win[1:n - 1]
            win[-1], win[0] = fit_tie_shrinking(fmt, mid, wk[1:n - 1], int(wk[-1]), t)
            win[1:n - 1] = mid
            wins.append(win.reshape(K, K))
        vals += [conv.window_dot(w, wk.reshape(K, K), fmt, exact=True) for w in wins]
        await tb.send(np.stack(wins), [0] * len(wins))
    require_ties(fmt, vals, "window dot (mode 0)", dut._log)
    assert tie_value(fmt, fmt.max_int) in vals and tie_value(fmt, fmt.min_int - 1) in vals
    await tb.finish()


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("k5", "icarus"), ("default", "ghdl")]))
def test_fpdeep_conv_tile(cfg, sim):
    run_core(CORE, cfg, sim)


@pytest.mark.parametrize("given,param", [({"K": 1}, "K"), ({"K": 8}, "K"), ({"W": 12}, "W"),
                                         ({"W": 8, "F": 8}, "F"), ({"F": 0}, "F")])
def test_fpdeep_conv_tile_invalid_parameters(given, param):
    with pytest.raises(ParamError, match=param):
        get(CORE).resolve(given)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
