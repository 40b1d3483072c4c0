"""fpdeep_fp: one FPDeep forward-propagation node (line buffer -> engines -> psum add ->
bias/round/ReLU) against golden.conv.fp_node, and a chain of two node runs (ICP) against
golden.conv.forward of the whole layer.

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
from rtl_gen.fpdeep.fpdeep_fp import widths
from rtl_gen.registry import get
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes, split_lanes
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.rounding_ties import edge_targets, rand_targets, require_ties, tie_operands, tie_scalar, tie_value
from verif.tb_common import (DEFAULT_CYCLES, StartDoneMixin, rand_words, record_bench, sim_test, start_while_busy,
                             wait_until)
from verif.tb_common import sim_seed as seed_of
from verif.fpdeep_fp import covermodel as fcov

CORE = "fpdeep_fp"
ACT = "m_axis_act"
PSO = "m_axis_psum_out"


class FpTB(StartDoneMixin):
    """Clock; seeded pixel, psum, filter and bias sources with bubbles; act and psum sinks
    with backpressure; monitors; bit-exact scoreboard fed by ``golden.conv.fp_node``;
    done counter."""

    def __init__(self, dut, src_p=1.0, sink_p=1.0):
        self.dut = dut
        self.p = dut_params()
        p = self.p
        self.K, self.W, self.F = p["K"], p["W"], p["F"]
        self.S_IC, self.S_OC, self.PS = p["S_IC"], p["S_OC"], p["PSUM_W"]
        self.fmt = QFormat(self.W, self.F)
        self.seed = seed_of()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d params=%s", self.seed, p)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.src_p = src_p
        self._sources(0)
        self.sinks = [AxisSink(dut, ACT, dut.clk, Gate(self.seed * 13 + 101, sink_p)),
                      AxisSink(dut, PSO, dut.clk, Gate(self.seed * 13 + 102, sink_p))]
        self.mon_act = AxisMonitor(dut, ACT, dut.clk, reset=dut.rst)
        self.mon_ps = AxisMonitor(dut, PSO, dut.clk, reset=dut.rst)
        self.got_ps = []                          # every psum_out tdata, for chaining
        self.mon_ps.add_callback(lambda t: self.got_ps.append(t[0]))
        self.sb = FixedScoreboard(dut)
        self.exp_act = self.sb.add_stream(self.mon_act, StreamSpec(ACT, [("act", self.S_OC, self.W, self.F)]))
        self.exp_ps = self.sb.add_stream(self.mon_ps, StreamSpec(PSO, [("psum", self.S_OC, self.PS, 2 * self.F)]))
        for s in ("start", "cfg_first", "cfg_last", "cfg_relu", "s_axis_pix_tlast", "s_axis_psum_in_tlast"):
            getattr(dut, s).value = 0
        self.done_count = 0
        cocotb.start_soon(self._count_done())
        self.cls_act, self.cls_ps = fcov.start(dut, self.mon_act, self.mon_ps)   # functional coverage

    def _sources(self, salt):
        g = lambda k: Gate(self.seed * 7 + k + salt, self.src_p)  # noqa: E731
        self.spix = AxisSource(self.dut, "s_axis_pix", self.dut.clk, g(1))
        self.sps = AxisSource(self.dut, "s_axis_psum_in", self.dut.clk, g(2))
        self.sw = AxisSource(self.dut, "s_axis_w", self.dut.clk, g(3))
        self.sbias = AxisSource(self.dut, "s_axis_b", self.dut.clk, g(4))

    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def abort_and_reset(self):
        for s in (self.spix, self.sps, self.sw, self.sbias):
            s.kill()
            s.tvalid.value = 0
        await self.reset()
        self._sources(1000)
        self.exp_act.clear()
        self.exp_ps.clear()
        self.cls_act.clear()
        self.cls_ps.clear()
        self.done_count = 0

    # ---- stimulus ------------------------------------------------------------
    def rand(self, shape, extreme=0.1, scale=None):
        return rand_words(self.rng, shape, self.fmt, extreme, scale)

    def rand_psum(self, shape, bits=None):
        bits = bits or (2 * self.W + 2)
        lim = 1 << (bits - 1)
        return self.rng.integers(-lim, lim, size=shape, dtype=np.int64).astype(object)

    async def load(self, filt, bias):
        """Filters (S_OC, S_IC, K, K) and biases (S_OC,), while idle; wait until accepted."""
        filt = np.asarray(filt, dtype=np.int64)
        n0, b0 = self.sw.sent, self.sbias.sent
        for o in range(self.S_OC):
            for c in range(self.S_IC):
                self.sw.append((pack_lanes(filt[o, c].reshape(-1), self.W), 0))
        self.sbias.append((pack_lanes(np.asarray(bias).reshape(-1), self.W), 0))
        await wait_until(self.clk, lambda: self.sw.sent >= n0 + self.S_OC * self.S_IC and self.sbias.sent != b0,
                         DEFAULT_CYCLES, "s_axis_w/s_axis_b: filter and bias load not accepted",
                         expect=f"{self.S_OC * self.S_IC} filter beats and 1 bias beat",
                         detail=lambda: f"{self.sw.sent - n0} filter and {self.sbias.sent - b0} bias beats accepted")

    def job(self, x, filt, bias, pad, first=True, last=True, relu=True, psum_in=None,
            bad_psum_tlast_at=None, bad_tlast_at=None):
        """Queue one map's pixels (and psum beats); expectations from fp_node.  Returns
        (cfg fields, golden output)."""
        x = np.asarray(x, dtype=np.int64)
        C, h, w = x.shape
        for r in range(h):
            for c in range(w):
                self.spix.append((pack_lanes(x[:, r, c], self.W), int(c == w - 1) ^ int(bad_tlast_at == (r, c))))
        out = conv.fp_node(x, filt, None if first else psum_in, last, bias, relu, pad, self.fmt,
                           psum_bits=self.PS)
        _, ho, wo = out.shape
        ex = conv.fp_node(x, filt, None if first else psum_in, False, pad=pad, fmt=self.fmt)
        if last and bias is not None:
            ex = ex + (np.asarray(bias, dtype=np.int64).astype(object)[:, None, None] << self.F)
        (self.cls_act if last else self.cls_ps).expect(fcov.labels(ex, last, relu, self.F, self.W, self.PS))
        if not first:
            for i in range(ho):
                for j in range(wo):
                    lst = int(j == wo - 1)
                    if bad_psum_tlast_at == (i, j):
                        lst ^= 1
                    self.sps.append((pack_lanes(psum_in[:, i, j], self.PS), lst))
        for i in range(ho):
            for j in range(wo):
                if last:
                    self.exp_act.append((pack_lanes(out[:, i, j], self.W), int(j == wo - 1)))
                else:
                    self.exp_ps.append((pack_lanes(out[:, i, j], self.PS), int(j == wo - 1)))
        return dict(width=w, height=h, pad=pad, first=int(first), last=int(last), relu=int(relu)), out

    async def run(self, fields, check_flags=True):
        await self.initiate(**fields)
        await self.wait_done(self.done_count + 1)
        if check_flags:
            for f in ("cfg_err", "row_err", "psum_err"):
                assert int(getattr(self.dut, f).value) == 0, f"{f} set for {fields}"

    def valid_pads(self, h, w):
        return [q for q in range(self.p["MAX_PAD"] + 1) if h + 2 * q >= self.K and w + 2 * q >= self.K]

    def rand_shape(self, maxh=8, maxw=8):
        maxh, maxw = min(self.p["MAX_HEIGHT"], maxh), min(self.p["MAX_WIDTH"], maxw)
        while True:
            h, w = int(self.rng.integers(1, maxh + 1)), int(self.rng.integers(1, maxw + 1))
            pads = self.valid_pads(h, w)
            if pads:
                return h, w, int(self.rng.choice(pads))

    def rand_layer(self, h, w, scale=1.0):
        return (self.rand((self.S_IC, h, w), scale=2.0), self.rand((self.S_OC, self.S_IC, self.K, self.K), scale=scale),
                self.rand((self.S_OC,), scale=4.0))

    def out_shape(self, h, w, pad):
        return (self.S_OC, h + 2 * pad - self.K + 1, w + 2 * pad - self.K + 1)

    async def finish(self, settle=20):
        await ClockCycles(self.clk, settle)
        for m in (self.mon_act, self.mon_ps):
            assert m.protocol_errors == 0, f"{m}: {m.protocol_errors} AXI4-Stream hold violations"
        assert not self.spix._sendQ and not self.sps._sendQ, "input left unconsumed"
        self.sb.check()


@sim_test(timeout_us={"default": 50, "*": 200})  # measured 6.2 us on default
async def random_maps(dut):
    """Random sizes, pads, pixels, filters, biases; random chain position (first/last),
    ReLU on/off, random psum_in; bubbles on every source, backpressure on both outputs."""
    tb = FpTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    for _ in range(6):
        h, w, pad = tb.rand_shape()
        x, filt, b = tb.rand_layer(h, w)
        first, last, relu = (bool(v) for v in tb.rng.integers(0, 2, 3))
        await tb.load(filt, b)
        f, _ = tb.job(x, filt, b, pad, first, last, relu, tb.rand_psum(tb.out_shape(h, w, pad)))
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})  # measured 8.3 us on default
async def padding_edges(dut):
    """Every padding value with the smallest valid maps, the maximum map, and a 1x1 map
    with each padding that makes it valid; alternating chain positions."""
    tb = FpTB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    K, P = tb.K, tb.p["MAX_PAD"]
    shapes = []
    for pad in range(P + 1):
        m = max(1, K - 2 * pad)
        shapes += [(m, m, pad), (m, min(tb.p["MAX_WIDTH"], m + 2), pad)]
    shapes.append((tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], P))
    shapes += [(1, 1, q) for q in tb.valid_pads(1, 1)]
    for k, (h, w, pad) in enumerate(shapes):
        x, filt, b = tb.rand_layer(h, w)
        await tb.load(filt, b)
        first, last = k % 2 == 0, k % 3 != 1
        f, _ = tb.job(x, filt, b, pad, first, last, True, tb.rand_psum(tb.out_shape(h, w, pad)))
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 3.1 us on default
async def saturation(dut):
    """Rails: activations saturate both ways in the last node (with and without ReLU);
    psum_out saturates to PSUM_W bits both ways when psum_in sits at its rails."""
    tb = FpTB(dut, sink_p=0.7)
    await tb.reset()
    K, fmt = tb.K, tb.fmt
    mn, mx = fmt.min_int, fmt.max_int
    h = w = K + 1
    shp = tb.out_shape(h, w, 0)
    plo, phi = -(1 << (tb.PS - 1)), (1 << (tb.PS - 1)) - 1
    for xv, wv, relu in ((mx, mx, False), (mx, mn, False), (mn, mn, True), (mx, mn, True)):
        x = np.full((tb.S_IC, h, w), xv)
        filt = np.full((tb.S_OC, tb.S_IC, K, K), wv)
        b = np.full(tb.S_OC, wv)
        await tb.load(filt, b)
        f, _ = tb.job(x, filt, b, 0, True, True, relu)
        await tb.run(f)
    for xv, wv, pv in ((mx, mx, phi), (mx, mn, plo), (mn, mn, phi - 5)):
        x = np.full((tb.S_IC, h, w), xv)
        filt = np.full((tb.S_OC, tb.S_IC, K, K), wv)
        await tb.load(filt, np.zeros(tb.S_OC, dtype=np.int64))
        ps = np.full(shp, pv, dtype=object)
        f, out = tb.job(x, filt, None, 0, False, False, False, ps)
        assert int(out.max()) == phi or int(out.min()) == plo, "saturation case does not saturate"
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})  # measured 7.7 us on default
async def icp_chain_two_nodes(dut):
    """System level (FPDeep ICP): a layer with 2*S_IC input channels split over two node
    runs -- node 0 (first, not last) sends its psum_out, which is fed as psum_in of node 1
    (last, bias, ReLU) -- equals relu(golden.conv.forward) of the whole layer, with and
    without padding; random bubbles and backpressure on the chain ports."""
    tb = FpTB(dut, src_p=0.75, sink_p=0.6)
    await tb.reset()
    K, fmt, C = tb.K, tb.fmt, tb.S_IC
    for pad in sorted({0, (K - 1) // 2, tb.p["MAX_PAD"]}):
        h, w = min(tb.p["MAX_HEIGHT"], K + 3), min(tb.p["MAX_WIDTH"], K + 4)
        x = tb.rand((2 * C, h, w), scale=2.0)
        full = tb.rand((tb.S_OC, 2 * C, K, K), scale=1.0)
        b = tb.rand((tb.S_OC,), scale=4.0)
        ref = np.maximum(conv.forward(x, full, b, 1, pad, fmt), 0)
        # node 0
        await tb.load(full[:, :C], np.zeros(tb.S_OC, dtype=np.int64))
        n0 = len(tb.got_ps)
        f0, ps0 = tb.job(x[:C], full[:, :C], None, pad, True, False)
        await tb.run(f0)
        _, ho, wo = ps0.shape
        assert len(tb.got_ps) - n0 == ho * wo
        hw_ps = np.array([split_lanes(v, tb.S_OC, tb.PS) for v in tb.got_ps[n0:]], dtype=object)
        hw_ps = hw_ps.T.reshape(tb.S_OC, ho, wo)
        # node 1: fed with what node 0 produced
        await tb.load(full[:, C:], b)
        f1, y = tb.job(x[C:], full[:, C:], b, pad, False, True, True, hw_ps)
        assert np.array_equal(y, ref), "golden chain != golden forward"
        await tb.run(f1)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.8 us on default
async def back_to_back(dut):
    """Start again as soon as busy drops; no bubbles, always-ready sinks."""
    tb = FpTB(dut)
    await tb.reset()
    x, filt, b = tb.rand_layer(6, 6)
    await tb.load(filt, b)
    fields = []
    for k in range(4):
        h, w, pad = tb.rand_shape()
        x = tb.rand((tb.S_IC, h, w), scale=2.0)
        fields.append(tb.job(x, filt, b, pad, k % 2 == 0, k >= 2, True,
                             tb.rand_psum(tb.out_shape(h, w, pad)))[0])
    for k, f in enumerate(fields):
        await tb.initiate(**f)
        await tb.wait_done(k + 1)
    await tb.finish()


@sim_test(timeout_us={"default": 70, "*": 280})  # measured 12.1 us on default
async def overlapped_maps(dut):
    """Start each map as soon as busy drops, i.e. while the previous map's windows and
    psums still drain (two maps in flight): random sizes, pads and per-map first/last/relu,
    random bubbles and backpressure; every output bit-exact, one done per map."""
    for k, (src_p, sink_p) in enumerate(((1.0, 1.0), (0.8, 0.5), (0.9, 0.25))):
        tb = FpTB(dut, src_p=src_p, sink_p=sink_p) if k == 0 else tb
        if k:
            tb.sinks[0].gate = Gate(tb.seed * 13 + 201 + k, sink_p)
            tb.sinks[1].gate = Gate(tb.seed * 13 + 301 + k, sink_p)
            for i, s in enumerate((tb.spix, tb.sps)):
                s.gate = Gate(tb.seed * 7 + 401 + 10 * k + i, src_p)
        else:
            await tb.reset()
        x, filt, b = tb.rand_layer(2, 2)
        await tb.load(filt, b)
        fields = []
        for _ in range(6):
            h, w, pad = tb.rand_shape()
            x = tb.rand((tb.S_IC, h, w), scale=2.0)
            first, last, relu = (bool(tb.rng.integers(2)) for _ in range(3))
            fields.append(tb.job(x, filt, b, pad, first, last, relu,
                                 tb.rand_psum(tb.out_shape(h, w, pad)))[0])
        d0, overlap = tb.done_count, 0
        for i, f in enumerate(fields):
            await tb.initiate(**f)
            overlap += tb.done_count < d0 + i
        await tb.wait_done(d0 + len(fields))
        for fl in ("cfg_err", "row_err", "psum_err"):
            assert int(getattr(dut, fl).value) == 0, f"{fl} set"
        dut._log.info("src_p=%.2f sink_p=%.2f: %d maps, %d started before the previous one's done",
                      src_p, sink_p, len(fields), overlap)
        assert overlap > 0, "no map was started while the previous one drained"
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.8 us on default
async def reset_mid_stream(dut):
    """Reset in the middle of a map (windows and psums in flight, sinks stalling): idle
    afterwards, filters cleared, the next maps exact."""
    tb = FpTB(dut, src_p=0.9, sink_p=0.5)
    await tb.reset()
    h, w = min(tb.p["MAX_HEIGHT"], 7), min(tb.p["MAX_WIDTH"], 7)
    x, filt, b = tb.rand_layer(h, w)
    await tb.load(filt, b)
    f, _ = tb.job(x, filt, b, 1, False, False, False, tb.rand_psum(tb.out_shape(h, w, 1)))
    await tb.initiate(**f)
    at = int(tb.rng.integers(1, 3 * w + 9))     # seeded random reset cycle within the map
    dut._log.info("reset %d cycles after start", at)
    await ClockCycles(dut.clk, at)
    assert tb.done_count == 0, "the map should still be in progress"   # busy may drop once its input is in
    await tb.abort_and_reset()
    assert int(dut.busy.value) == 0
    for fl in ("cfg_err", "row_err", "psum_err", "done"):
        assert int(getattr(dut, fl).value) == 0, f"{fl} not at its reset value"
    assert int(dut.m_axis_act_tvalid.value) == 0 and int(dut.m_axis_psum_out_tvalid.value) == 0
    z = np.zeros((tb.S_OC, tb.S_IC, tb.K, tb.K), dtype=np.int64)
    x2 = tb.rand((tb.S_IC, tb.K, tb.K + 1), scale=2.0)
    f, _ = tb.job(x2, z, np.zeros(tb.S_OC, dtype=np.int64), 0, True, True, False)   # zero filters
    await tb.run(f)
    for _ in range(2):
        h, w, pad = tb.rand_shape()
        x, filt, b = tb.rand_layer(h, w)
        await tb.load(filt, b)
        f, _ = tb.job(x, filt, b, pad, False, True, True, tb.rand_psum(tb.out_shape(h, w, pad)))
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.8 us on default
async def invalid_configuration(dut):
    """Width/height 0, above the maximum or all ones, pad above MAX_PAD, padded map
    smaller than K: cfg_err and done, nothing consumed (pixels nor psums); a valid start
    afterwards clears cfg_err and runs exactly."""
    tb = FpTB(dut)
    await tb.reset()
    K, P = tb.K, tb.p["MAX_PAD"]
    bad = [dict(width=0, height=4, pad=0), dict(width=4, height=0, pad=0),
           dict(width=1, height=K + 1, pad=0), dict(width=(1 << len(dut.cfg_width)) - 1, height=K, pad=0),
           dict(width=K, height=(1 << len(dut.cfg_height)) - 1, pad=0)]
    if tb.p["MAX_WIDTH"] + 1 < (1 << len(dut.cfg_width)):
        bad.append(dict(width=tb.p["MAX_WIDTH"] + 1, height=K, pad=0))
    if P + 1 < (1 << len(dut.cfg_pad)):
        bad.append(dict(width=K, height=K, pad=P + 1))
    x, filt, b = tb.rand_layer(K, K)
    await tb.load(filt, b)
    fields, _ = tb.job(x, filt, b, 0, False, True, True, tb.rand_psum(tb.out_shape(K, K, 0)))
    for k, f in enumerate(bad):
        await tb.initiate(**f, first=0, last=1, relu=1)
        await tb.wait_done(k + 1, timeout=20)
        assert int(dut.cfg_err.value) == 1, f"cfg_err not set for {f}"
        assert int(dut.busy.value) == 0
    await ClockCycles(dut.clk, 5)
    assert tb.spix.sent == 0 and tb.sps.sent == 0, "an invalid initiation consumed input"
    assert int(dut.m_axis_act_tvalid.value) == 0 and int(dut.m_axis_psum_out_tvalid.value) == 0
    await tb.run(fields)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.1 us on default
async def psum_tlast_check(dut):
    """A psum_in tlast off the output row end sets psum_err (sticky until the next start);
    results unaffected."""
    tb = FpTB(dut, src_p=0.8)
    await tb.reset()
    K = tb.K
    x, filt, b = tb.rand_layer(K + 1, K + 2)
    await tb.load(filt, b)
    f, _ = tb.job(x, filt, b, 0, False, True, True, tb.rand_psum(tb.out_shape(K + 1, K + 2, 0)),
                  bad_psum_tlast_at=(1, 0))
    await tb.run(f, check_flags=False)
    assert int(dut.psum_err.value) == 1, "psum_err not set by a misplaced psum tlast"
    x, filt, b = tb.rand_layer(K, K)
    await tb.load(filt, b)
    await tb.run(tb.job(x, filt, b, 0, False, False, True, tb.rand_psum(tb.out_shape(K, K, 0)))[0])
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})
async def row_tlast_check(dut):
    """A pixel tlast off the row end (early and missing) sets row_err (sticky until the next
    start); the activations are unaffected; the next clean map clears it."""
    tb = FpTB(dut, src_p=0.8)
    await tb.reset()
    K = tb.K
    for bad in ((0, 1), (1, K + 1)):
        x, filt, b = tb.rand_layer(K + 1, K + 2)
        await tb.load(filt, b)
        f, _ = tb.job(x, filt, b, 0, True, True, False, bad_tlast_at=bad)
        await tb.run(f, check_flags=False)
        assert int(dut.row_err.value) == 1, f"row_err not set by a misplaced pixel tlast at {bad}"
        assert int(dut.cfg_err.value) == 0 and int(dut.psum_err.value) == 0
    x, filt, b = tb.rand_layer(K, K)
    await tb.load(filt, b)
    await tb.run(tb.job(x, filt, b, 0, True, True, True)[0])
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})
async def bias_back_to_back(dut):
    """Two bias beats in consecutive cycles while idle: the second one is the bias of the
    next map (last node, ReLU off, so both signs show)."""
    tb = FpTB(dut)
    await tb.reset()
    K = tb.K
    x, filt, b1 = tb.rand_layer(K, K + 1)
    b2 = tb.rand((tb.S_OC,), scale=4.0)
    await tb.load(filt, b1)
    sent = tb.sbias.sent
    for b in (b1[::-1].copy(), b2):
        tb.sbias.append((pack_lanes(np.asarray(b).reshape(-1), tb.W), 0))
    await wait_until(tb.clk, lambda: tb.sbias.sent >= sent + 2, DEFAULT_CYCLES, "s_axis_b: two bias beats not accepted")
    await tb.run(tb.job(x, filt, b2, 1, True, True, False)[0])
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.8 us on default
async def start_while_busy_ignored(dut):
    """Start pulses with other cfg fields (another shape and first/last/relu, then an
    invalid map) while busy: the map in flight completes exactly as first configured
    (outputs bit-exact, one done, no error flag), the extra starts consume nothing and
    produce nothing, and the next legal start works."""
    tb = FpTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    K = tb.K
    h, w = min(tb.p["MAX_HEIGHT"], K + 3), min(tb.p["MAX_WIDTH"], K + 3)
    x, filt, b = tb.rand_layer(h, w)
    await tb.load(filt, b)
    f, _ = tb.job(x, filt, b, 0, False, True, False, tb.rand_psum(tb.out_shape(h, w, 0)))
    await tb.initiate(**f)
    n = await start_while_busy(dut, tb.clk, dict(width=K, height=K + 1, pad=tb.p["MAX_PAD"], first=1,
                                                 last=0, relu=1), pulses=2)
    n += await start_while_busy(dut, tb.clk, dict(width=0, height=0, pad=0, first=0, last=0, relu=0), pulses=1)
    dut._log.info("%d starts given while busy", n)
    await tb.wait_done(1)
    await ClockCycles(dut.clk, 40)
    assert tb.done_count == 1, f"{tb.done_count} done pulses for one accepted map"
    for fl in ("cfg_err", "row_err", "psum_err"):
        assert int(getattr(dut, fl).value) == 0, f"{fl} set by an ignored start"
    assert int(dut.busy.value) == 0, "busy after the only accepted map finished"
    assert not tb.spix._sendQ and not tb.sps._sendQ, "input left unconsumed"
    h2, w2, pad2 = tb.rand_shape()
    f2, _ = tb.job(tb.rand((tb.S_IC, h2, w2), scale=2.0), filt, b, pad2, True, True, True)
    await tb.run(f2)
    assert tb.done_count == 2
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.3 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expected activation, a corrupted expected psum, an
    extra output and a dropped output must each make the scoreboard fail."""
    tb = FpTB(dut)
    await tb.reset()
    K = tb.K
    x, filt, b = tb.rand_layer(K + 1, K + 1)
    await tb.load(filt, b)
    f, _ = tb.job(x, filt, b, 0, True, True, False)
    d, last = tb.exp_act[1]
    tb.exp_act[1] = (d ^ 1, last)
    await tb.run(f)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 1, f"act corruption not detected ({tb.sb.mismatches})"
    f, _ = tb.job(x, filt, b, 0, True, False, False)
    d, last = tb.exp_ps[0]
    tb.exp_ps[0] = (d ^ (1 << (tb.PS - 1)), last)
    await tb.run(f)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 2, f"psum corruption not detected ({tb.sb.mismatches})"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    f, _ = tb.job(x, filt, b, 0, True, True, True)
    tb.exp_act.pop()
    await tb.run(f)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.errors == 1, "extra output not detected"
    tb.sb.errors = 0
    tb.exp_ps.append((123, 1))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@sim_test(timeout_us={"default": 140, "*": 560})  # measured 27.6 us on default
async def bench_throughput(dut):
    """Benchmark (reported, not asserted): MAC utilisation = useful MACs /
    (S_OC*S_IC*K*K MAC units x cycles), (a) in steady state along output rows (first to
    last output of a row, averaged) and (b) over a whole maximum-size map from start to
    done (includes the line buffer's padded scan and pipeline fill); no bubbles,
    always-ready sinks, psum_in always valid (a middle node)."""
    tb = FpTB(dut)
    inmon = AxisMonitor(dut, "s_axis_pix", dut.clk)
    await tb.reset()
    K = tb.K
    units = widths(tb.p)["macs"]
    h, w = tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"]
    rec = {}
    for pad in sorted({0, (K - 1) // 2} & set(tb.valid_pads(h, w))):
        x, filt, b = tb.rand_layer(h, w)
        await tb.load(filt, b)
        f, out = tb.job(x, filt, b, pad, False, False, True, tb.rand_psum(tb.out_shape(h, w, pad)))
        n0 = len(tb.mon_ps.times)
        t0 = tb.mon_ps.cycles
        await tb.run(f)
        cycles = tb.mon_ps.cycles - t0
        times = tb.mon_ps.times[n0:]
        _, ho, wo = out.shape
        rows = [times[r * wo:(r + 1) * wo] for r in range(ho)]
        row_util = (sum(len(r) for r in rows) / sum(r[-1] - r[0] + 1 for r in rows))
        rec[f"pad{pad}"] = dict(outputs=len(times), macs=len(times) * units, cycles_start_to_done=cycles,
                                mac_utilization_steady=row_util,
                                mac_utilization_map=len(times) * units / (units * cycles))
        if pad == 0:        # the last pixel completes the last window
            rec[f"pad{pad}"]["latency_cycles"] = times[-1] - inmon.times[-1]
        # whole maps back to back: NB maps queued, each started as soon as busy drops
        # (the next map's rows stream in while the current map's last windows drain)
        NB = 4
        jobs = []
        for _ in range(NB):
            xb = tb.rand((tb.S_IC, h, w), scale=2.0)
            jobs.append(tb.job(xb, filt, b, pad, False, False, True, tb.rand_psum(tb.out_shape(h, w, pad)))[0])
        n0, t0, d0 = len(tb.mon_ps.times), tb.mon_ps.cycles, tb.done_count
        for fj in jobs:
            await tb.initiate(**fj)
        await tb.wait_done(d0 + NB)
        cyc = tb.mon_ps.cycles - t0
        nout = len(tb.mon_ps.times) - n0
        rec[f"pad{pad}"].update(batch_maps=NB, batch_outputs=nout, batch_cycles_start_to_done=cyc,
                                mac_utilization_batch=nout / cyc)
    await tb.finish()
    # flat summary (shown in the `make bench` table): per pad, over one map and back to back
    flat = {f"{k}_{pd}": round(v, 4) for pd, d in rec.items() for k, v in d.items()
            if k in ('mac_utilization_map', 'mac_utilization_batch')}
    out = record_bench(CORE, map=f"{h}x{w}", mac_units=units, ideal=1.0, **flat, **rec)
    dut._log.info("bench: %s", out)


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.8 us on default
async def rounding_ties(dut):
    """Directed rounding ties at the last node's one rounding point (psum + window sums +
    bias << F), ReLU off so both signs show:
    (1) first node, no padding: activations tie_operands(j) (+-odd * 2**(F-1-j)), filters
        integer words (multiples of one) except one tie_scalar(j) tap per output channel,
        so every exact output sum is a tie through the multipliers alone;
    (2) not first: random activations, filters, biases and padding; psum_in chosen per
        output element so the exact value is half an LSB above a target word -- random
        targets of both signs and the edge targets (max_int must saturate).
    Ties counted per sign on golden.conv.fp_node's exact sums and must occur."""
    tb = FpTB(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    K, fmt, rng, F = tb.K, tb.fmt, tb.rng, tb.F
    h, w = min(tb.p["MAX_HEIGHT"], K + 1), min(tb.p["MAX_WIDTH"], K + 2)
    vals = []
    for j in (0, int(rng.integers(1, F))):
        x = tie_operands(rng, fmt, j, (tb.S_IC, h, w), limit=1.0)
        filt = rng.integers(-1, 2, size=(tb.S_OC, tb.S_IC, K, K)).astype(np.int64) * fmt.one
        for o in range(tb.S_OC):
            c, u, v = (int(rng.integers(0, m)) for m in (tb.S_IC, K, K))
            filt[o, c, u, v] = tie_scalar(rng, fmt, j, limit=1.0)
        b = tb.rand((tb.S_OC,), 0.0, scale=2.0)
        await tb.load(filt, b)
        f, _ = tb.job(x, filt, b, 0, True, True, False)
        await tb.run(f)
        vals += list((conv.fp_node(x, filt, None, False, fmt=fmt) + (b[:, None, None].astype(object) << F)).ravel())
    targets = edge_targets(fmt)
    for rnd in range(2):
        pad = int(rng.choice(tb.valid_pads(h, w)))
        x, filt, b = tb.rand_layer(h, w)
        shp = tb.out_shape(h, w, pad)
        ts = (targets + rand_targets(fmt, rng, int(np.prod(shp))))[:int(np.prod(shp))]
        exact = conv.fp_node(x, filt, None, False, pad=pad, fmt=fmt) + (b[:, None, None].astype(object) << F)
        ps = np.array([tie_value(fmt, t) for t in ts], dtype=object).reshape(shp) - exact
        await tb.load(filt, b)
        f, _ = tb.job(x, filt, b, pad, False, True, False, ps)
        await tb.run(f)
        vals += list((conv.fp_node(x, filt, ps, False, pad=pad, fmt=fmt, psum_bits=tb.PS)
                      + (b[:, None, None].astype(object) << F)).ravel())
        targets = []
    require_ties(fmt, vals, "fp node output sums", dut._log)
    assert tie_value(fmt, fmt.max_int) in vals and tie_value(fmt, fmt.min_int - 1) in vals
    await tb.finish()


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("k5", "icarus")]))
def test_fpdeep_fp(cfg, sim):
    run_core(CORE, cfg, sim)


@pytest.mark.parametrize("given,param", [({"K": 1}, "K"), ({"S_IC": 0}, "S_IC"), ({"MAX_PAD": 3}, "MAX_PAD"),
                                         ({"PSUM_W": 32}, "PSUM_W"), ({"PSUM_W": 44}, "PSUM_W"),
                                         ({"W": 8, "F": 8}, "F")])
def test_fpdeep_fp_invalid_parameters(given, param):
    with pytest.raises(ParamError, match=param):
        get(CORE).resolve(given)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
