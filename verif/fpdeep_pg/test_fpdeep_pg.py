"""fpdeep_pg: FPDeep parameter gradient + mini-batch SGD step (line buffer over the
activations joined with the output errors -> exact per-element accumulators -> per-sample
rounding -> batch gradient buffer -> update) against golden.conv.pg_minibatch, which is
param_gradient + update bit for bit.

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
from rtl_gen.fpdeep.fpdeep_pg import widths
from rtl_gen.registry import get
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.rounding_ties import is_tie, require_ties, tie_operands, tie_scalar
from verif.tb_common import (DEFAULT_CYCLES, StartDoneMixin, rand_words, record_bench, sim_test, start_while_busy,
                             wait_until)
from verif.tb_common import sim_seed as seed_of
from verif.fpdeep_pg import covermodel as fcov

CORE = "fpdeep_pg"
MW = "m_axis_w"
MB = "m_axis_b"


class PgTB(StartDoneMixin):
    """Clock; seeded activation, error, filter and bias sources with bubbles; filter and bias
    sinks with backpressure; monitors; bit-exact scoreboard fed by golden.conv.pg_minibatch;
    a software copy of the parameter store (the core keeps the updated parameters)."""

    def __init__(self, dut, src_p=1.0, sink_p=1.0):
        self.dut = dut
        self.p = dut_params()
        p = self.p
        self.K, self.W, self.F = p["K"], p["W"], p["F"]
        self.S_IC, self.S_OC = p["S_IC"], p["S_OC"]
        self.fmt = QFormat(self.W, self.F)
        self.seed = seed_of()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, p)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.src_p = src_p
        self._sources(0)
        self.sinks = [AxisSink(dut, MW, dut.clk, Gate(self.seed * 13 + 101, sink_p)),
                      AxisSink(dut, MB, dut.clk, Gate(self.seed * 13 + 102, sink_p))]
        self.mon_w = AxisMonitor(dut, MW, dut.clk, reset=dut.rst)
        self.mon_b = AxisMonitor(dut, MB, dut.clk, reset=dut.rst)
        self.sb = FixedScoreboard(dut)
        self.exp_w = self.sb.add_stream(self.mon_w, StreamSpec(MW, [("w", self.K * self.K, self.W, self.F)]))
        self.exp_b = self.sb.add_stream(self.mon_b, StreamSpec(MB, [("b", self.S_OC, self.W, self.F)]))
        for s in ("start", "s_axis_x_tlast", "s_axis_err_tlast"):
            getattr(dut, s).value = 0
        self.w = np.zeros((self.S_OC, self.S_IC, self.K, self.K), dtype=np.int64)   # reset value
        self.b = np.zeros(self.S_OC, dtype=np.int64)
        self.done_count = 0
        cocotb.start_soon(self._count_done())
        self.cls = fcov.start(dut, self.mon_b)                  # functional coverage

    def _sources(self, salt):
        g = lambda k: Gate(self.seed * 7 + k + salt, self.src_p)  # noqa: E731
        self.sx = AxisSource(self.dut, "s_axis_x", self.dut.clk, g(1))
        self.se = AxisSource(self.dut, "s_axis_err", self.dut.clk, g(2))
        self.sw = AxisSource(self.dut, "s_axis_w", self.dut.clk, g(3))
        self.sbias = AxisSource(self.dut, "s_axis_b", self.dut.clk, g(4))

    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def abort_and_reset(self):
        for s in (self.sx, self.se, self.sw, self.sbias):
            s.kill()
            s.tvalid.value = 0
        await self.reset()
        self._sources(1000)
        self.exp_w.clear()
        self.exp_b.clear()
        self.cls.clear()
        self.done_count = 0
        self.w[...] = 0
        self.b[...] = 0

    # ---- stimulus ------------------------------------------------------------
    def rand(self, shape, extreme=0.1, scale=None):
        return rand_words(self.rng, shape, self.fmt, extreme, scale)

    async def load(self, w, b):
        """Filters (S_OC, S_IC, K, K) and biases (S_OC,), while idle; wait until accepted."""
        w = np.asarray(w, dtype=np.int64)
        n0, m0 = self.sw.sent, self.sbias.sent
        for o in range(self.S_OC):
            for c in range(self.S_IC):
                self.sw.append((pack_lanes(w[o, c].reshape(-1), self.W), 0))
        self.sbias.append((pack_lanes(b, self.W), 1))
        await wait_until(self.clk, lambda: self.sw.sent >= n0 + self.S_OC * self.S_IC and self.sbias.sent >= m0 + 1,
                         DEFAULT_CYCLES, "s_axis_w/s_axis_b: filter and bias load not accepted",
                         expect=f"{self.S_OC * self.S_IC} filter beats and 1 bias beat",
                         detail=lambda: f"{self.sw.sent - n0} filter and {self.sbias.sent - m0} bias beats accepted")
        self.w, self.b = w.copy(), np.asarray(b, dtype=np.int64).copy()

    def out_shape(self, h, w, pad):
        return (h + 2 * pad - self.K + 1, w + 2 * pad - self.K + 1)

    def valid_pads(self, h, w):
        return [q for q in range(self.K) if min(self.out_shape(h, w, q)) >= 1]

    def rand_shape(self, maxh=6, maxw=6):
        maxh, maxw = min(self.p["MAX_HEIGHT"], maxh), min(self.p["MAX_WIDTH"], maxw)
        while True:
            h, w = int(self.rng.integers(1, maxh + 1)), int(self.rng.integers(1, maxw + 1))
            pads = self.valid_pads(h, w)
            if pads:
                return h, w, int(self.rng.choice(pads))

    def rand_lr(self, lo=1, hi=None):
        hi = hi or max(2, self.fmt.one // 4)
        return int(self.rng.integers(lo, hi + 1))

    def rand_batch(self, B, h, w, pad, xscale=2.0, escale=0.5):
        ho, wo = self.out_shape(h, w, pad)
        xs = [self.rand((self.S_IC, h, w), scale=xscale) for _ in range(B)]
        es = [self.rand((self.S_OC, ho, wo), scale=escale) for _ in range(B)]
        return xs, es

    def job(self, xs, es, pad, lr_q, bad_err_tlast=False):
        """Queue one mini-batch's beats; expectations from pg_minibatch on the current store.
        Returns (cfg fields, (w_new, b_new))."""
        B = len(xs)
        _, h, w = np.asarray(xs[0]).shape
        for x, e in zip(xs, es):
            x, e = np.asarray(x), np.asarray(e)
            for r in range(h):
                for c in range(w):
                    self.sx.append((pack_lanes(x[:, r, c], self.W), int(c == w - 1)))
            _, ho, wo = e.shape
            for r in range(ho):
                for c in range(wo):
                    lst = int(c == wo - 1)
                    if bad_err_tlast and (r, c) == (0, 0):
                        lst ^= 1
                    self.se.append((pack_lanes(e[:, r, c], self.W), lst))
        lr = lr_q * B / self.fmt.one
        assert int(self.fmt.to_fixed(lr / B)) == lr_q
        wn, bn, gw, gb = conv.pg_minibatch(xs, es, self.w, self.b, lr, self.K, pad, self.fmt)
        # pg_minibatch = param_gradient per sample + update (checked once per job)
        grads = [conv.param_gradient(x, e, self.K, pad, self.fmt) for x, e in zip(xs, es)]
        assert np.array_equal(wn, conv.update(self.w, np.stack([g[0] for g in grads]), lr, self.fmt))
        assert np.array_equal(bn, conv.update(self.b, np.stack([g[1] for g in grads]), lr, self.fmt))
        ns = self.S_OC * self.S_IC
        for j in range(ns):
            o, c = divmod(j, self.S_IC)
            self.exp_w.append((pack_lanes(wn[o, c].reshape(-1), self.W), int(j == ns - 1)))
        self.exp_b.append((pack_lanes(bn, self.W), 1))
        self.cls.expect(fcov.labels(xs, es, self.w, self.b, lr_q, self.K, pad, self.F, self.W))
        self.w, self.b = np.asarray(wn, dtype=np.int64), np.asarray(bn, dtype=np.int64)
        return dict(width=w, height=h, pad=pad, batch=B, lr=lr_q), (wn, bn)

    async def run(self, fields, check_flags=True):
        await self.initiate(**fields)
        c = await self.wait_done(self.done_count + 1)
        if check_flags:
            for f in ("cfg_err", "row_err"):
                assert int(getattr(self.dut, f).value) == 0, f"{f} set for {fields}"
        return c

    async def finish(self, settle=20):
        await ClockCycles(self.clk, settle)
        for m in (self.mon_w, self.mon_b):
            assert m.protocol_errors == 0, f"{m}: {m.protocol_errors} AXI4-Stream hold violations"
        assert not self.sx._sendQ and not self.se._sendQ, "input left unconsumed"
        self.sb.check()


@sim_test(timeout_us={"default": 60, "*": 960})  # measured 7.9 us on default
async def random_batches(dut):
    """Random map sizes, pads, batches 1..MAX_BATCH, activations, errors, parameters and
    learning rates; bubbles on every source, backpressure on both outputs; half the
    mini-batches continue from the stored (updated) parameters without reloading."""
    tb = PgTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    for k in range(6):
        h, w, pad = tb.rand_shape()
        B = int(tb.rng.integers(1, tb.p["MAX_BATCH"] + 1))
        if k % 2 == 0:
            await tb.load(tb.rand((tb.S_OC, tb.S_IC, tb.K, tb.K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
        xs, es = tb.rand_batch(B, h, w, pad)
        f, _ = tb.job(xs, es, pad, tb.rand_lr())
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 640})  # measured 4.5 us on default
async def batch_averaging(dut):
    """Batch 1 then batch MAX_BATCH on the same map: lr_q = to_fixed(lr / batch), one
    rounding of lr_q * (exact sum of the per-sample gradient words)."""
    tb = PgTB(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    h, w = min(4, tb.p["MAX_HEIGHT"]), min(5, tb.p["MAX_WIDTH"])
    pad = tb.valid_pads(h, w)[-1]
    for B in (1, tb.p["MAX_BATCH"], 2 if tb.p["MAX_BATCH"] >= 2 else 1):
        await tb.load(tb.rand((tb.S_OC, tb.S_IC, tb.K, tb.K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
        xs, es = tb.rand_batch(B, h, w, pad)
        f, _ = tb.job(xs, es, pad, tb.rand_lr())
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 640})
async def bias_back_to_back(dut):
    """Two bias beats in consecutive cycles while idle: the second one is the bias the next
    mini-batch updates (and streams out)."""
    tb = PgTB(dut)
    await tb.reset()
    h, w = min(4, tb.p["MAX_HEIGHT"]), min(4, tb.p["MAX_WIDTH"])
    await tb.load(tb.rand((tb.S_OC, tb.S_IC, tb.K, tb.K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
    b1, b2 = tb.rand(tb.S_OC, scale=1.0), tb.rand(tb.S_OC, scale=1.0)
    sent = tb.sbias.sent
    for bb in (b1, b2):
        tb.sbias.append((pack_lanes(bb, tb.W), 1))
    await wait_until(tb.clk, lambda: tb.sbias.sent >= sent + 2, DEFAULT_CYCLES, "s_axis_b: two bias beats not accepted")
    tb.b = np.asarray(b2, dtype=np.int64).copy()
    xs, es = tb.rand_batch(1, h, w, 0)
    f, _ = tb.job(xs, es, 0, tb.rand_lr())
    await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 50, "*": 800})  # measured 6.5 us on default
async def padding_edges(dut):
    """Every pad 0..K-1 with the smallest valid maps (1x1 output map), a 1x1 input map with
    pad K-1, and the maximum map with pads 0 and K-1."""
    tb = PgTB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    K = tb.K
    shapes = []
    for pad in range(K):
        m = max(1, K - 2 * pad)              # smallest map with an output
        shapes += [(m, m, pad), (m, min(tb.p["MAX_WIDTH"], m + 2), pad)]
    shapes += [(1, 1, K - 1), (tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], 0),
               (tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], K - 1)]
    for k, (h, w, pad) in enumerate(shapes):
        assert pad in tb.valid_pads(h, w), (h, w, pad)
        await tb.load(tb.rand((tb.S_OC, tb.S_IC, K, K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
        B = 1 + k % min(2, tb.p["MAX_BATCH"])
        xs, es = tb.rand_batch(B, h, w, pad)
        f, _ = tb.job(xs, es, pad, tb.rand_lr())
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 640})  # measured 3.8 us on default
async def saturation(dut):
    """Rails: per-sample gradients saturate both ways, the step saturates, and w - step
    saturates both ways (parameters at the rails, largest lr)."""
    tb = PgTB(dut, sink_p=0.7)
    await tb.reset()
    K, fmt = tb.K, tb.fmt
    mn, mx = fmt.min_int, fmt.max_int
    h = w = min(tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], K + 1)
    ho, wo = tb.out_shape(h, w, 0)
    B = tb.p["MAX_BATCH"]
    for xv, ev, wv, lr in ((mx, mx, mn, mx), (mx, mn, mx, mx), (mn, mn, mn, mx), (mn, mx, 0, 1)):
        xs = [np.full((tb.S_IC, h, w), xv) for _ in range(B)]
        es = [np.full((tb.S_OC, ho, wo), ev) for _ in range(B)]
        await tb.load(np.full((tb.S_OC, tb.S_IC, K, K), wv), np.full(tb.S_OC, wv))
        g = conv.param_gradient(xs[0], es[0], K, 0, fmt)[0]
        assert int(np.abs(g).max()) >= mx, "per-sample gradient does not saturate"
        f, (wn, _) = tb.job(xs, es, 0, lr)
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 640})
async def step_saturation_with_headroom(dut):
    """The step saturates while w - step does not: a positive step clamped to max_int taken
    from w = max_int (result 0), a negative step clamped to min_int taken from w = min_int
    (result 0).  (`saturation` pairs each saturating step with a parameter at the rail
    it moves towards, where a wrong step clamp still ends at the same rail.)"""
    tb = PgTB(dut, sink_p=0.7)
    await tb.reset()
    K, fmt = tb.K, tb.fmt
    mn, mx = fmt.min_int, fmt.max_int
    h = w = min(tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], K + 1)
    ho, wo = tb.out_shape(h, w, 0)
    B = tb.p["MAX_BATCH"]
    for ev, wv, lr in ((mx, mx, mx), (mn, mn, mx), (mx, mx, 2 * fmt.one), (mn, mn, 2 * fmt.one)):
        xs = [np.full((tb.S_IC, h, w), mx) for _ in range(B)]
        es = [np.full((tb.S_OC, ho, wo), ev) for _ in range(B)]
        await tb.load(np.full((tb.S_OC, tb.S_IC, K, K), wv), np.full(tb.S_OC, wv))
        gsum = sum(np.asarray(conv.param_gradient(x, e, K, 0, fmt)[0], dtype=object) for x, e in zip(xs, es))
        raw = (gsum * lr + (1 << (fmt.F - 1))) // (1 << fmt.F)   # step before its clamp
        assert (raw > mx).all() if ev == mx else (raw < mn).all(), "step does not saturate"
        f, (wn, _) = tb.job(xs, es, 0, lr)
        assert int(np.abs(np.asarray(wn, dtype=np.int64)).max()) <= 1, "w - step saturated"
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 480})  # measured 1.9 us on default
async def back_to_back(dut):
    """Mini-batches started as soon as busy drops; no bubbles, always-ready sinks; the
    parameters carry over from one step to the next."""
    tb = PgTB(dut)
    await tb.reset()
    await tb.load(tb.rand((tb.S_OC, tb.S_IC, tb.K, tb.K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
    fields = []
    for k in range(3):
        h, w, pad = tb.rand_shape()
        B = 1 + k % tb.p["MAX_BATCH"]
        xs, es = tb.rand_batch(B, h, w, pad)
        fields.append(tb.job(xs, es, pad, tb.rand_lr())[0])
    for k, f in enumerate(fields):
        await tb.initiate(**f)
        await tb.wait_done(k + 1)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 480})  # measured 2.1 us on default
async def reset_mid_stream(dut):
    """Reset in the middle of a mini-batch: idle afterwards, parameters cleared (the next
    step starts from zeros), the next mini-batches exact."""
    tb = PgTB(dut, src_p=0.9, sink_p=0.5)
    await tb.reset()
    h, w = min(tb.p["MAX_HEIGHT"], 5), min(tb.p["MAX_WIDTH"], 5)
    await tb.load(tb.rand((tb.S_OC, tb.S_IC, tb.K, tb.K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
    xs, es = tb.rand_batch(min(2, tb.p["MAX_BATCH"]), h, w, 0)
    f, _ = tb.job(xs, es, 0, tb.rand_lr())
    await tb.initiate(**f)
    at = int(tb.rng.integers(1, 3 * w + 9))     # seeded random reset cycle within the mini-batch
    dut._log.info("reset %d cycles after start", at)
    await ClockCycles(dut.clk, at)
    assert int(dut.busy.value) == 1
    await tb.abort_and_reset()
    assert int(dut.busy.value) == 0
    for fl in ("cfg_err", "row_err", "done"):
        assert int(getattr(dut, fl).value) == 0, f"{fl} not at its reset value"
    assert int(dut.m_axis_w_tvalid.value) == 0 and int(dut.m_axis_b_tvalid.value) == 0
    xs, es = tb.rand_batch(1, 3, 3, 1)
    f, _ = tb.job(xs, es, 1, tb.rand_lr())     # store cleared by reset: starts from zeros
    await tb.run(f)
    for _ in range(2):
        h, w, pad = tb.rand_shape()
        await tb.load(tb.rand((tb.S_OC, tb.S_IC, tb.K, tb.K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
        xs, es = tb.rand_batch(int(tb.rng.integers(1, tb.p["MAX_BATCH"] + 1)), h, w, pad)
        f, _ = tb.job(xs, es, pad, tb.rand_lr())
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 480})  # measured 0.9 us on default
async def invalid_configuration(dut):
    """Width/height 0 or above the maximum, pad above K-1, padded map smaller than K,
    batch 0 or above MAX_BATCH, lr_q 0 or negative: cfg_err and done, nothing consumed;
    a valid start afterwards clears cfg_err and runs exactly."""
    tb = PgTB(dut)
    await tb.reset()
    K, MB_ = tb.K, tb.p["MAX_BATCH"]
    ok = dict(width=3, height=3, pad=1, batch=1, lr=1)
    bad = [dict(ok, width=0), dict(ok, height=0), dict(ok, width=(1 << len(dut.cfg_width)) - 1),
           dict(ok, height=(1 << len(dut.cfg_height)) - 1), dict(ok, batch=0),
           dict(ok, batch=(1 << len(dut.cfg_batch)) - 1), dict(ok, lr=0), dict(ok, lr=-1),
           dict(ok, lr=tb.fmt.min_int)]
    if tb.p["MAX_WIDTH"] + 1 < (1 << len(dut.cfg_width)):
        bad.append(dict(ok, width=tb.p["MAX_WIDTH"] + 1))
    if MB_ + 1 < (1 << len(dut.cfg_batch)):
        bad.append(dict(ok, batch=MB_ + 1))
    bad += [dict(ok, pad=q) for q in range(K, 1 << len(dut.cfg_pad))]
    bad.append(dict(ok, width=1, height=K, pad=(K - 2) // 2))   # 1 + 2P < K
    await tb.load(tb.rand((tb.S_OC, tb.S_IC, K, K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
    xs, es = tb.rand_batch(1, 3, 3, 1)
    fields, _ = tb.job(xs, es, 1, tb.rand_lr())
    for k, f in enumerate(bad):
        await tb.initiate(**f)
        await tb.wait_done(k + 1, timeout=20)
        assert int(dut.cfg_err.value) == 1, f"cfg_err not set for {f}"
        assert int(dut.busy.value) == 0
    await ClockCycles(dut.clk, 5)
    assert tb.sx.sent == 0 and tb.se.sent == 0, "an invalid initiation consumed input"
    assert int(dut.m_axis_w_tvalid.value) == 0 and int(dut.m_axis_b_tvalid.value) == 0
    await tb.run(fields)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 480})  # measured 1.7 us on default
async def tlast_checks(dut):
    """An error tlast off the row end, then an activation tlast off the row end, set row_err
    (sticky until the next start); results unaffected."""
    tb = PgTB(dut, src_p=0.8)
    await tb.reset()
    P = tb.K - 1
    xs, es = tb.rand_batch(1, 3, 4, P)
    f, _ = tb.job(xs, es, P, tb.rand_lr(), bad_err_tlast=True)
    await tb.run(f, check_flags=False)
    assert int(dut.row_err.value) == 1
    xs, es = tb.rand_batch(1, 3, 4, P)
    f, _ = tb.job(xs, es, P, tb.rand_lr())
    d, _ = tb.sx._sendQ[1][0]
    tb.sx._sendQ[1] = ((d, 1),) + tuple(tb.sx._sendQ[1][1:])
    await tb.run(f, check_flags=False)
    assert int(dut.row_err.value) == 1
    xs, es = tb.rand_batch(1, 2, 3, P)
    await tb.run(tb.job(xs, es, P, tb.rand_lr())[0])
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 480})  # measured 2.3 us on default
async def start_while_busy_ignored(dut):
    """Start pulses with other cfg fields (another shape, batch and learning rate, then an
    invalid batch) while busy: the mini-batch in flight completes exactly as first
    configured (updated parameters bit-exact, one done, no error flag), the extra starts
    consume nothing and produce nothing, and the next legal start works."""
    tb = PgTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    await tb.load(tb.rand((tb.S_OC, tb.S_IC, tb.K, tb.K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
    h, w = min(tb.p["MAX_HEIGHT"], tb.K + 2), min(tb.p["MAX_WIDTH"], tb.K + 3)
    B = min(2, tb.p["MAX_BATCH"])
    xs, es = tb.rand_batch(B, h, w, 0)
    lr = tb.rand_lr()
    f, _ = tb.job(xs, es, 0, lr)
    await tb.initiate(**f)
    n = await start_while_busy(dut, tb.clk, dict(width=tb.K, height=tb.K + 1, pad=tb.K - 1,
                                                 batch=tb.p["MAX_BATCH"], lr=lr + 7), pulses=2)
    n += await start_while_busy(dut, tb.clk, dict(width=0, height=0, pad=0, batch=0, lr=0), pulses=1)
    dut._log.info("%d starts given while busy", n)
    await tb.wait_done(1)
    await ClockCycles(dut.clk, 40)
    assert tb.done_count == 1, f"{tb.done_count} done pulses for one accepted mini-batch"
    for fl in ("cfg_err", "row_err"):
        assert int(getattr(dut, fl).value) == 0, f"{fl} set by an ignored start"
    assert int(dut.busy.value) == 0, "busy after the only accepted mini-batch finished"
    assert not tb.sx._sendQ and not tb.se._sendQ, "input left unconsumed"
    h2, w2, pad2 = tb.rand_shape()
    xs, es = tb.rand_batch(1, h2, w2, pad2)
    f2, _ = tb.job(xs, es, pad2, tb.rand_lr())
    await tb.run(f2)
    assert tb.done_count == 2
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 480})  # measured 1.1 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expected filter word, a corrupted expected bias, and a
    dropped expectation must each make the scoreboard fail."""
    tb = PgTB(dut)
    await tb.reset()
    await tb.load(tb.rand((tb.S_OC, tb.S_IC, tb.K, tb.K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
    xs, es = tb.rand_batch(1, 3, 3, 1)
    f, _ = tb.job(xs, es, 1, tb.rand_lr())
    d, last = tb.exp_w[0]
    tb.exp_w[0] = (d ^ 1, last)
    await tb.run(f)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 1, f"filter corruption not detected ({tb.sb.mismatches})"
    f, _ = tb.job(xs, es, 1, tb.rand_lr())
    d, last = tb.exp_b[0]
    tb.exp_b[0] = (d ^ (1 << (tb.W - 1)), last)
    await tb.run(f)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 2, f"bias corruption not detected ({tb.sb.mismatches})"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    f, _ = tb.job(xs, es, 1, tb.rand_lr())
    tb.exp_b.pop()
    await tb.run(f)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.errors == 1, "extra output not detected"
    tb.sb.errors = 0
    tb.exp_w.append((123, 1))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


async def _record_handshakes(dut, prefix, out):
    """Append the cycle index of every handshake on ``prefix`` (one error beat = one output
    position = every MAC busy for one cycle)."""
    n = 0
    while True:
        await RisingEdge(dut.clk)
        await ReadOnly()
        n += 1
        if int(getattr(dut, f"{prefix}_tvalid").value) and int(getattr(dut, f"{prefix}_tready").value):
            out.append(n)


@sim_test(timeout_us={"default": 70, "*": 1120})  # measured 10.2 us on default
async def bench_throughput(dut):
    """Benchmark (reported, not asserted): MAC utilisation = useful MACs (Ho*Wo*S_OC*S_IC*K*K
    per sample) / (MAC units x cycles from start to done) for a maximum-size mini-batch,
    pads 0 and K-1; no bubbles, always-ready sinks."""
    tb = PgTB(dut)
    await tb.reset()
    K = tb.K
    units = widths(tb.p)["macs"]
    h, w, B = tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], tb.p["MAX_BATCH"]
    rec = {}
    for pad in sorted({0, (K - 1) // 2, K - 1} & set(tb.valid_pads(h, w))):
        xs, es = tb.rand_batch(B, h, w, pad)
        f, _ = tb.job(xs, es, pad, tb.rand_lr())
        fires = []
        mon = cocotb.start_soon(_record_handshakes(dut, "s_axis_err", fires))
        cycles = await tb.run(f) + 1
        mon.cancel()
        ho, wo = tb.out_shape(h, w, pad)
        useful = B * ho * wo * units
        assert len(fires) == B * ho * wo
        rows = [fires[r * wo:(r + 1) * wo] for r in range(B * ho)]
        rec[f"pad{pad}"] = dict(batch=B, cycles_start_to_done=cycles,
                                mac_utilization_steady_row=sum(len(r) for r in rows)
                                / sum(r[-1] - r[0] + 1 for r in rows),
                                mac_utilization=useful / (units * cycles),
                                ideal_padded_scan=ho * wo / ((h + 2 * pad) * (w + 2 * pad)))
    await tb.finish()
    # flat summary (shown in the `make bench` table): per pad, over one map and back to back
    flat = {f"{k}_{pd}": round(v, 4) for pd, d in rec.items() for k, v in d.items()
            if k in ('mac_utilization',)}
    out = record_bench(CORE, map=f"{h}x{w}", mac_units=units, ideal=1.0, **flat, **rec)
    dut._log.info("bench: %s", out)


@sim_test(timeout_us={"default": 40, "*": 640})  # measured 4.1 us on default
async def rounding_ties(dut):
    """Directed rounding ties at both rounding points, both signs:
    per-sample gradient -- activations tie_operands(j) (+-odd * 2**(F-1-j)), errors integer
    words (multiples of one) except one tie_scalar(j) entry per output channel, no padding:
    every exact K x K accumulator is a tie (the tie entry's window product plus integer
    products); SGD step -- lr_q = odd * 2**(F-1) (0.5, then 1.5 when it fits), so
    lr_q * gsum is a tie for every odd gradient sum (filters and biases).  Mini-batches
    of 1..MAX_BATCH (at least 3, at most 6: until ties of both signs occurred at both
    points), then step ties half an LSB above max_int and min_int - 1 (batch 3, saturated
    gradients).  Ties counted per sign on golden.conv.pg_sample_exact / pg_minibatch and must occur."""
    tb = PgTB(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    K, fmt, rng, F = tb.K, tb.fmt, tb.rng, tb.F
    h, w = min(tb.p["MAX_HEIGHT"], K + 1), min(tb.p["MAX_WIDTH"], K + 2)
    ho, wo = tb.out_shape(h, w, 0)
    lrs = [fmt.one // 2] + ([3 * fmt.one // 2] if 3 * fmt.one // 2 <= fmt.max_int else [])
    grad, step = [], []
    await tb.load(tb.rand((tb.S_OC, tb.S_IC, K, K), scale=1.0), tb.rand(tb.S_OC, scale=1.0))
    for k in range(6):
        B = 1 + k % tb.p["MAX_BATCH"]
        j = int(rng.integers(0, F))
        xs, es = [], []
        for _ in range(B):
            xs.append(tie_operands(rng, fmt, j, (tb.S_IC, h, w), limit=1.0))
            e = rng.integers(-1, 2, size=(tb.S_OC, ho, wo)).astype(np.int64) * fmt.one
            for o in range(tb.S_OC):
                e[o, int(rng.integers(0, ho)), int(rng.integers(0, wo))] = tie_scalar(rng, fmt, j, limit=1.0)
            es.append(e)
            grad += list(conv.pg_sample_exact(xs[-1], e, K, 0, fmt)[0].ravel())
        lr_q = lrs[k % len(lrs)]
        _, _, gsw, gsb = conv.pg_minibatch(xs, es, tb.w, tb.b, lr_q * B / fmt.one, K, 0, fmt)
        step += [int(g) * lr_q for g in list(gsw.ravel()) + list(gsb.ravel())]
        f, _ = tb.job(xs, es, 0, lr_q)
        await tb.run(f)
        if k >= 2 and all(any(is_tie(fmt, v) and (v > 0) == pos for v in vs)
                          for vs in (grad, step) for pos in (True, False)):
            break
    # SGD step at the edges (batch 3, lr_q = 0.5): two saturated gradients (max_int or
    # min_int at every tap and bias) and one of +-1 make gsum = 2 max_int + 1 or
    # 2 min_int - 1, so lr_q * gsum is half an LSB above max_int (must saturate) or
    # above min_int - 1 (lands on min_int)
    if tb.p["MAX_BATCH"] >= 3:
        mn, mx, lr_q = fmt.min_int, fmt.max_int, fmt.one // 2
        for ev, unit in ((mx, 1), (mn, -1)):
            xs = [np.full((tb.S_IC, h, w), v, dtype=np.int64) for v in (mx, mx, fmt.one)]
            e1 = np.zeros((tb.S_OC, ho, wo), dtype=np.int64)
            e1[:, 0, 0] = unit
            es = [np.full((tb.S_OC, ho, wo), ev, dtype=np.int64)] * 2 + [e1]
            _, _, gsw, gsb = conv.pg_minibatch(xs, es, tb.w, tb.b, lr_q * 3 / fmt.one, K, 0, fmt)
            step += [int(g) * lr_q for g in list(gsw.ravel()) + list(gsb.ravel())]
            f, _ = tb.job(xs, es, 0, lr_q)
            await tb.run(f)
        half = 1 << (F - 1)
        assert half * (2 * fmt.max_int + 1) in step and half * (2 * fmt.min_int - 1) in step
    else:
        dut._log.info("MAX_BATCH=%d < 3: no SGD-step ties at the saturation edges", tb.p["MAX_BATCH"])
    require_ties(fmt, grad, "per-sample gradient accumulators", dut._log)
    require_ties(fmt, step, "SGD step lr_q * gradient sum", dut._log)
    await tb.finish()


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("k2s", "icarus")]))
def test_fpdeep_pg(cfg, sim):
    run_core(CORE, cfg, sim)


@pytest.mark.parametrize("given,param", [({"K": 1}, "K"), ({"S_IC": 0}, "S_IC"), ({"MAX_BATCH": 0}, "MAX_BATCH"),
                                         ({"MAX_WIDTH": 0}, "MAX_WIDTH"), ({"W": 8, "F": 8}, "F")])
def test_fpdeep_pg_invalid_parameters(given, param):
    with pytest.raises(ParamError, match=param):
        get(CORE).resolve(given)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
