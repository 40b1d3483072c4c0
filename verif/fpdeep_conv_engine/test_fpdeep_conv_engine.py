"""fpdeep_conv_engine: S_OC engines x S_IC tiles, one window beat per cycle, rounded (+bias)
or exact, against golden.conv.engine_beat (and through it golden.conv.forward / icp_forward).

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
from rtl_gen.fpdeep.fpdeep_conv_engine import widths
from rtl_gen.registry import get
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.rounding_ties import edge_targets, fit_tie, odd_coef, rand_targets, require_ties, tie_value
from verif.tb_common import DEFAULT_CYCLES, rand_words, record_bench, sim_test, wait_until
from verif.tb_common import sim_seed as seed_of
from verif.fpdeep_conv_engine import covermodel as fcov

CORE = "fpdeep_conv_engine"
OUT = "m_axis_res"


class _Once:
    def __init__(self, inner):
        self.inner = inner

    def next(self):
        return True


class UserSource(AxisSource):
    """AxisSource that also drives ``tuser``: transactions (data, last, user)."""

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
        self.gate = _Once(self.gate)
        try:
            await super()._driver_send((data, last), sync, **kwargs)
        finally:
            self.gate = self.gate.inner


class EngineTB:
    """Clock; seeded window, filter and bias sources with bubbles; result sink with
    backpressure; monitor; bit-exact scoreboard fed by ``golden.conv.engine_beat``."""

    def __init__(self, dut, src_p=1.0, sink_p=1.0):
        self.dut = dut
        self.p = dut_params()
        self.K, self.W = self.p["K"], self.p["W"]
        self.S_IC, self.S_OC = self.p["S_IC"], self.p["S_OC"]
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
        self.exp = self.sb.add_stream(self.mon, StreamSpec(OUT, [("res", self.S_OC, self.ow, self.p["F"])]))
        self._clear_model()
        cocotb.start_soon(self._watch_user())
        self.cls = fcov.start(dut, self.mon)                    # functional coverage

    def _clear_model(self):
        self.filt = np.zeros((self.S_OC, self.S_IC, self.K, self.K), dtype=np.int64)
        self.bias = np.zeros(self.S_OC, dtype=np.int64)
        self.exp_user, self.got_user = [], []

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
        g = lambda k: Gate(self.seed * 7 + k + salt, self.src_p)  # noqa: E731
        self.swin = UserSource(self.dut, "s_axis_win", self.dut.clk, g(1))
        self.sw = AxisSource(self.dut, "s_axis_w", self.dut.clk, g(2))
        self.sbias = AxisSource(self.dut, "s_axis_b", self.dut.clk, g(3))

    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def abort_and_reset(self):
        for s in (self.swin, self.sw, self.sbias):
            s.kill()
            s.tvalid.value = 0
        await self.reset()
        self._sources(1000)
        self.exp.clear()
        self.cls.clear()
        self._clear_model()

    async def drain(self):
        await wait_until(self.clk, lambda: self.swin.sent >= self.n_win, DEFAULT_CYCLES,
                         "s_axis_win: windows not all accepted", expect=f"{self.n_win} windows accepted",
                         detail=lambda: f"{self.swin.sent} accepted")

    async def load(self, filt=None, bias=None):
        """Load filters (S_OC, S_IC, K, K) and/or biases after every earlier window is
        accepted; wait until accepted."""
        await self.drain()
        if filt is not None:
            self.filt = np.asarray(filt, dtype=np.int64).reshape(self.filt.shape)
            sent = self.sw.sent
            for o in range(self.S_OC):
                for c in range(self.S_IC):
                    self.sw.append((pack_lanes(self.filt[o, c].reshape(-1), self.W), 0))
            await wait_until(self.clk, lambda: self.sw.sent >= sent + self.S_OC * self.S_IC, DEFAULT_CYCLES,
                             "s_axis_w: filter load not accepted", expect=f"{self.S_OC * self.S_IC} filter beats")
            fcov.COV.sample("load", "filters")
        if bias is not None:
            self.bias = np.asarray(bias, dtype=np.int64).reshape(self.S_OC)
            sent = self.sbias.sent
            self.sbias.append((pack_lanes(self.bias, self.W), 0))
            await wait_until(self.clk, lambda: self.sbias.sent != sent, DEFAULT_CYCLES,
                             "s_axis_b: bias load not accepted", expect="1 bias beat")
            fcov.COV.sample("load", "bias")

    def expect(self, wins, users, lasts):
        mask = (1 << self.ow) - 1
        for k in range(len(wins)):
            u = int(users[k])
            y = conv.engine_beat(wins[k], self.filt, self.fmt, self.bias if u & 2 else None, bool(u & 1))
            self.exp.append((pack_lanes([int(v) & mask for v in y], self.ow), int(lasts[k])))
            self.exp_user.append(u)
            ex = conv.engine_beat(wins[k], self.filt, self.fmt, self.bias if u & 2 else None, True)
            self.cls.expect([fcov.labels(ex, u, lasts[k], self.fmt.F, self.fmt.W)])

    async def send(self, wins, users, lasts=None):
        """Queue window beats (n, S_IC, K, K) with tuser values; expectations from the model."""
        wins = np.asarray(wins, dtype=np.int64).reshape(-1, self.S_IC, self.K, self.K)
        n = len(wins)
        lasts = [0] * n if lasts is None else lasts
        self.expect(wins, users, lasts)
        for k in range(n):
            self.swin.append((pack_lanes(wins[k].reshape(-1), self.W), int(lasts[k]), int(users[k])))
            self.n_win += 1

    def rand(self, shape, extreme=0.1, scale=None):
        return rand_words(self.rng, shape, self.fmt, extreme, scale)

    def rand_filters(self, scale=1.0):
        return self.rand((self.S_OC, self.S_IC, self.K, self.K), scale=scale)

    async def finish(self, settle=20, timeout=5000):
        await self.drain()
        for _ in range(timeout):
            if not self.exp:
                break
            await RisingEdge(self.clk)
        await ClockCycles(self.clk, settle)
        assert self.mon.protocol_errors == 0, f"{self.mon.protocol_errors} AXI4-Stream hold violations"
        self.sb.check()
        assert self.got_user == self.exp_user, "m_axis_res_tuser differs from the windows' tuser"


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 2.5 us on default
async def random_windows(dut):
    """Random window beats, filters, biases and tuser (mode, bias); several reloads;
    bubbles on all sources and backpressure."""
    tb = EngineTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    for _ in range(5):
        await tb.load(tb.rand_filters(2.0), tb.rand((tb.S_OC,), scale=8.0))
        n = int(tb.rng.integers(1, 40))
        await tb.send(tb.rand((n, tb.S_IC, tb.K, tb.K), scale=2.0), tb.rng.integers(0, 4, n),
                      tb.rng.integers(0, 2, n))
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.7 us on default
async def conv_of_padded_maps(dut):
    """The engine over the windows of zero-padded S_IC-channel maps (every pad 0..K-1, a
    1x1 map with the largest pad) equals golden.conv.forward with bias; exact partials of
    two channel groups summed with the bias and rounded once equal the forward of all
    channels (ICP)."""
    tb = EngineTB(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    K, fmt, C = tb.K, tb.fmt, tb.S_IC
    for pad in range(K):
        if pad == K - 1:
            h = w = 1
        else:
            lo = max(1, K - 2 * pad)
            h, w = int(tb.rng.integers(lo, K + 3)), int(tb.rng.integers(lo, K + 3))
        x = tb.rand((C, h, w), scale=2.0)
        filt, b = tb.rand_filters(1.0), tb.rand((tb.S_OC,), scale=4.0)
        wins = np.stack([conv.sliding_windows(x[c], K, pad) for c in range(C)], axis=2)
        ho, wo = wins.shape[:2]
        y = conv.forward(x, filt, b, 1, pad, fmt)                       # (S_OC, ho, wo)
        assert np.array_equal(np.moveaxis(conv.engine_beat(wins, filt, fmt, b), -1, 0), y)
        await tb.load(filt, b)
        lasts = [int(j == wo - 1) for i in range(ho) for j in range(wo)]
        await tb.send(wins.reshape(-1, C, K, K), [2] * (ho * wo), lasts)
    # ICP: 2*S_IC input channels in two passes of exact partials; bias in the first only
    x = tb.rand((2 * C, K + 1, K + 2), scale=1.5)
    full = tb.rand((tb.S_OC, 2 * C, K, K), scale=0.5)
    b = tb.rand((tb.S_OC,), scale=4.0)
    pad = (K - 1) // 2
    total = 0
    for g in range(2):
        ch = slice(g * C, (g + 1) * C)
        wins = np.stack([conv.sliding_windows(x[c], K, pad) for c in range(g * C, (g + 1) * C)], axis=2)
        await tb.load(full[:, ch], b)
        u = 3 if g == 0 else 1
        await tb.send(wins.reshape(-1, C, K, K), [u] * (wins.shape[0] * wins.shape[1]))
        total = total + conv.engine_beat(wins, full[:, ch], fmt, b if g == 0 else None, exact=True)
    y = conv.forward(x, full, b, 1, pad, fmt)
    got = fmt.sat((np.asarray(total, dtype=object) + (1 << (fmt.F - 1))) >> fmt.F)
    assert np.array_equal(np.moveaxis(got, -1, 0), y), "ICP partials do not give forward()"
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.4 us on default
async def saturation_corners(dut):
    """Rails: largest exact sums both ways (exact mode), saturation both ways with and
    without bias (rounded mode), mixed rails."""
    tb = EngineTB(dut, sink_p=0.7)
    await tb.reset()
    K, fmt, C, O = tb.K, tb.fmt, tb.S_IC, tb.S_OC
    mn, mx = fmt.min_int, fmt.max_int
    full = lambda v, s: np.full(s, v, dtype=np.int64)  # noqa: E731
    rails = np.array([mn, mx, mn + 1, mx - 1, 0, 1, -1], dtype=np.int64)
    fs = (O, C, K, K)
    for filt, b in ((full(mn, fs), full(mn, O)), (full(mx, fs), full(mx, O)),
                    (rails[tb.rng.integers(0, 7, fs)], rails[tb.rng.integers(0, 7, O)])):
        await tb.load(filt, b)
        ws = (C, K, K)
        wins = np.stack([full(mn, ws), full(mx, ws), full(-1, ws), full(1, ws), rails[tb.rng.integers(0, 7, ws)]])
        await tb.send(np.concatenate([wins] * 4), [0] * 5 + [1] * 5 + [2] * 5 + [3] * 5)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.1 us on default
async def back_to_back(dut):
    """No bubbles, always-ready sink, filter and bias loads between bursts, all tuser values."""
    tb = EngineTB(dut)
    await tb.reset()
    for k in range(3):
        await tb.load(tb.rand_filters(), tb.rand((tb.S_OC,)))
        await tb.send(tb.rand((20, tb.S_IC, tb.K, tb.K)), [(i + k) % 4 for i in range(20)])
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})
async def bias_back_to_back(dut):
    """Two bias beats in consecutive cycles: the second replaces the first, so the
    biased windows after them (rounded and exact) use the second bias."""
    tb = EngineTB(dut)
    await tb.reset()
    await tb.load(tb.rand_filters(), tb.rand((tb.S_OC,)))
    await tb.send(tb.rand((3, tb.S_IC, tb.K, tb.K)), [2, 3, 2])
    await tb.drain()
    b1, b2 = tb.rand((tb.S_OC,)), tb.rand((tb.S_OC,))
    sent = tb.sbias.sent
    for b in (b1, b2):
        tb.sbias.append((pack_lanes(np.asarray(b, dtype=np.int64), tb.W), 0))
    await wait_until(tb.clk, lambda: tb.sbias.sent >= sent + 2, DEFAULT_CYCLES, "s_axis_b: two bias beats not accepted")
    tb.bias = np.asarray(b2, dtype=np.int64).reshape(tb.S_OC)
    await tb.send(tb.rand((6, tb.S_IC, tb.K, tb.K)), [2, 3, 0, 1, 3, 2])
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.0 us on default
async def reset_mid_stream(dut):
    """Reset with beats in the pipeline and the sink stalling: nothing comes out afterwards,
    filters and biases are cleared, the next results are exact."""
    tb = EngineTB(dut, src_p=0.9, sink_p=0.4)
    await tb.reset()
    await tb.load(tb.rand_filters(), tb.rand((tb.S_OC,)))
    await tb.send(tb.rand((30, tb.S_IC, tb.K, tb.K)), [2] * 30)
    await ClockCycles(dut.clk, int(tb.rng.integers(1, 25)))     # seeded random reset cycle
    await tb.abort_and_reset()
    assert int(dut.m_axis_res_tvalid.value) == 0
    await tb.send(tb.rand((4, tb.S_IC, tb.K, tb.K)), [3, 0, 1, 2])        # zero filters and bias
    await tb.load(tb.rand_filters(), tb.rand((tb.S_OC,)))
    await tb.send(tb.rand((10, tb.S_IC, tb.K, tb.K)), tb.rng.integers(0, 4, 10))
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.6 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expectation (one lane), an extra result and a dropped
    result must each make the scoreboard fail."""
    tb = EngineTB(dut)
    await tb.reset()
    await tb.load(tb.rand_filters(), tb.rand((tb.S_OC,)))
    await tb.send(tb.rand((4, tb.S_IC, tb.K, tb.K)), [0, 1, 2, 3])
    d, last = tb.exp[2]
    tb.exp[2] = (d ^ (1 << ((tb.S_OC - 1) * tb.ow)), last)
    await tb.drain()
    await ClockCycles(dut.clk, 20)
    assert tb.sb.mismatches == 1, f"corruption not detected ({tb.sb.mismatches} mismatches)"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    await tb.send(tb.rand((2, tb.S_IC, tb.K, tb.K)), [0, 0])
    tb.exp.pop()
    await tb.drain()
    await ClockCycles(dut.clk, 20)
    assert tb.sb.errors == 1, "extra result not detected"
    tb.sb.errors = 0
    tb.exp.append((123, 0))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()
    tb.exp.clear()
    tb.exp_user[1] ^= 2                            # the tuser checker must fail too
    with pytest.raises(AssertionError, match="tuser"):
        await tb.finish(settle=2, timeout=2)


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 2.4 us on default
async def bench_throughput(dut):
    """Benchmark (reported, not asserted): MAC utilisation = useful MACs /
    (S_OC*S_IC*K*K MAC units x cycles) between the first and the last result of a long
    burst (no bubbles, always-ready sink); ideal 1.0.  Also the latency."""
    tb = EngineTB(dut)
    inmon = AxisMonitor(dut, "s_axis_win", dut.clk)
    await tb.reset()
    await tb.load(tb.rand_filters(), tb.rand((tb.S_OC,)))
    n = 200
    await tb.send(tb.rand((n, tb.S_IC, tb.K, tb.K), extreme=0.0), [2] * n)
    await tb.finish()
    t = tb.mon.times[-n:]
    cycles = t[-1] - t[0] + 1
    units = widths(tb.p)["macs"]
    rec = record_bench(CORE, beats=n, mac_units=units, macs=n * units, cycles=cycles,
                       mac_utilization=n * units / (units * cycles), ideal=1.0,
                       latency_cycles=t[-1] - inmon.times[-1])
    dut._log.info("bench: %s", rec)


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.8 us on default
async def rounding_ties(dut):
    """Directed rounding ties at each engine's rounding point (tuser mode 0, with and
    without bias): every output of every beat is exactly half an LSB above a word, both
    signs -- random targets and the edge targets.  Engine o owns two window taps: its
    filter has ``one`` at tap q_o = 2o and an odd word at tap p_o = 2o + 1, every other
    filter has 0 there, so window taps p_o (residue) and q_o (word) are solved per engine
    (``fit_tie``; the other taps zeroed when out of reach) over random other taps,
    filters and biases.  Ties counted per sign on the exact sums (golden.conv.engine_beat
    exact) and must occur."""
    tb = EngineTB(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    K, fmt, rng, O = tb.K, tb.fmt, tb.rng, tb.S_OC
    n = tb.S_IC * K * K
    assert n >= 2 * O, "too few window taps for one residue and one word tap per engine"
    own = set(range(2 * O))
    vals = []
    for rnd in range(2):
        filt = tb.rand((O, n), 0.0, scale=1.0)
        for o in range(O):
            filt[:, 2 * o] = filt[:, 2 * o + 1] = 0
            filt[o, 2 * o], filt[o, 2 * o + 1] = fmt.one, odd_coef(fmt, rng)
        bias = tb.rand((O,), 0.0, scale=1.0)
        await tb.load(filt.reshape(O, tb.S_IC, K, K), bias)
        targets = (edge_targets(fmt) if rnd == 0 else []) + rand_targets(fmt, rng, 8)
        wins, users = [], []
        for b, t0 in enumerate(targets):
            u = 2 * (b % 2)                    # rounded, bias on odd beats
            win = tb.rand((n,), 0.0, scale=2.0)
            free = np.array([i for i in range(n) if i not in own], dtype=np.int64)
            for o in range(O):
                t = targets[(b + o) % len(targets)] if o else t0
                rest = sum(int(win[i]) * int(filt[o, i]) for i in range(n) if i not in own)
                rest += (int(bias[o]) << fmt.F) if u else 0
                try:
                    win[2 * o + 1], win[2 * o] = fit_tie(fmt, rest, int(filt[o, 2 * o + 1]), t)
                except ValueError:              # out of reach from these taps: smaller free taps
                    win[free] = 0               # (the taps are shared: restart this beat's engines)
                    for o2 in range(o + 1):
                        t2 = targets[(b + o2) % len(targets)] if o2 else t0
                        ex = (int(bias[o2]) << fmt.F) if u else 0
                        win[2 * o2 + 1], win[2 * o2] = fit_tie(fmt, ex, int(filt[o2, 2 * o2 + 1]), t2)
            wins.append(win.reshape(tb.S_IC, K, K))
            users.append(u)
            vals += list(conv.engine_beat(wins[-1], tb.filt, fmt, bias if u else None, exact=True))
        await tb.send(np.stack(wins), users)
    require_ties(fmt, vals, "engine dot (+bias)", dut._log)
    assert tie_value(fmt, fmt.max_int) in vals and tie_value(fmt, fmt.min_int - 1) in vals
    await tb.finish()


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("k5", "icarus"), ("default", "ghdl")]))
def test_fpdeep_conv_engine(cfg, sim):
    run_core(CORE, cfg, sim)


@pytest.mark.parametrize("given,param", [({"K": 1}, "K"), ({"S_IC": 0}, "S_IC"), ({"S_OC": 9}, "S_OC"),
                                         ({"W": 12}, "W"), ({"W": 8, "F": 8}, "F")])
def test_fpdeep_conv_engine_invalid_parameters(given, param):
    with pytest.raises(ParamError, match=param):
        get(CORE).resolve(given)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
