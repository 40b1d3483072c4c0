"""fpdeep_eb: one FPDeep error back-propagation run (line buffer padding K-1-P -> S_IC engines
on rotated/transposed filters -> psum add -> one rounding) against golden.conv.eb_node, and
a chain of two runs over a split of the output channels against golden.conv.backprop_error.

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
from rtl_gen.fpdeep.fpdeep_eb import widths
from rtl_gen.registry import get
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes, split_lanes
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params, matrix, run_core
from verif.rounding_ties import edge_targets, rand_targets, require_ties, tie_operands, tie_scalar, tie_value
from verif.tb_common import (DEFAULT_CYCLES, StartDoneMixin, rand_words, record_bench, sim_test, start_while_busy,
                             wait_until)
from verif.tb_common import sim_seed as seed_of
from verif.fpdeep_eb import covermodel as fcov

CORE = "fpdeep_eb"
ERR = "m_axis_err"
PSO = "m_axis_psum_out"


class EbTB(StartDoneMixin):
    """Clock; seeded error, psum and filter sources with bubbles; err and psum sinks with
    backpressure; monitors; bit-exact scoreboard fed by ``golden.conv.eb_node``; done counter."""

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
        self.sinks = [AxisSink(dut, ERR, dut.clk, Gate(self.seed * 13 + 101, sink_p)),
                      AxisSink(dut, PSO, dut.clk, Gate(self.seed * 13 + 102, sink_p))]
        self.mon_err = AxisMonitor(dut, ERR, dut.clk, reset=dut.rst)
        self.mon_ps = AxisMonitor(dut, PSO, dut.clk, reset=dut.rst)
        self.got_ps = []
        self.mon_ps.add_callback(lambda t: self.got_ps.append(t[0]))
        self.sb = FixedScoreboard(dut)
        self.exp_err = self.sb.add_stream(self.mon_err, StreamSpec(ERR, [("err", self.S_IC, self.W, self.F)]))
        self.exp_ps = self.sb.add_stream(self.mon_ps, StreamSpec(PSO, [("psum", self.S_IC, self.PS, 2 * self.F)]))
        for s in ("start", "cfg_first", "cfg_last", "s_axis_err_tlast", "s_axis_psum_in_tlast"):
            getattr(dut, s).value = 0
        self.done_count = 0
        cocotb.start_soon(self._count_done())
        self.cls_err, self.cls_ps = fcov.start(dut, self.mon_err, self.mon_ps)   # functional coverage

    def _sources(self, salt):
        g = lambda k: Gate(self.seed * 7 + k + salt, self.src_p)  # noqa: E731
        self.serr = AxisSource(self.dut, "s_axis_err", self.dut.clk, g(1))
        self.sps = AxisSource(self.dut, "s_axis_psum_in", self.dut.clk, g(2))
        self.sw = AxisSource(self.dut, "s_axis_w", self.dut.clk, g(3))

    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def abort_and_reset(self):
        for s in (self.serr, self.sps, self.sw):
            s.kill()
            s.tvalid.value = 0
        await self.reset()
        self._sources(1000)
        self.exp_err.clear()
        self.exp_ps.clear()
        self.cls_err.clear()
        self.cls_ps.clear()
        self.done_count = 0

    # ---- stimulus ------------------------------------------------------------
    def rand(self, shape, extreme=0.1, scale=None):
        return rand_words(self.rng, shape, self.fmt, extreme, scale)

    def rand_psum(self, shape, bits=None):
        bits = bits or (2 * self.W + 2)
        lim = 1 << (bits - 1)
        return self.rng.integers(-lim, lim, size=shape, dtype=np.int64).astype(object)

    async def load(self, filt):
        """Filters (S_OC, S_IC, K, K) in the forward layout, while idle; wait until accepted."""
        filt = np.asarray(filt, dtype=np.int64)
        n0 = self.sw.sent
        for o in range(self.S_OC):
            for c in range(self.S_IC):
                self.sw.append((pack_lanes(filt[o, c].reshape(-1), self.W), 0))
        await wait_until(self.clk, lambda: self.sw.sent >= n0 + self.S_OC * self.S_IC, DEFAULT_CYCLES,
                         "s_axis_w: filter load not accepted", expect=f"{self.S_OC * self.S_IC} filter beats",
                         detail=lambda: f"{self.sw.sent - n0} accepted")

    def job(self, e, filt, pad, first=True, last=True, psum_in=None, bad_psum_tlast_at=None):
        """Queue one error map's beats (and psum beats); expectations from eb_node.
        Returns (cfg fields, golden output)."""
        e = np.asarray(e, dtype=np.int64)
        _, h, w = e.shape
        for r in range(h):
            for c in range(w):
                self.serr.append((pack_lanes(e[:, r, c], self.W), int(c == w - 1)))
        out = conv.eb_node(e, filt, None if first else psum_in, last, pad, self.fmt, psum_bits=self.PS)
        _, ho, wo = out.shape
        ex = conv.eb_node(e, filt, None if first else psum_in, False, pad, self.fmt)
        (self.cls_err if last else self.cls_ps).expect(fcov.labels(ex, last, self.F, self.W, self.PS))
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
                    self.exp_err.append((pack_lanes(out[:, i, j], self.W), int(j == wo - 1)))
                else:
                    self.exp_ps.append((pack_lanes(out[:, i, j], self.PS), int(j == wo - 1)))
        return dict(width=w, height=h, pad=pad, first=int(first), last=int(last)), out

    async def run(self, fields, check_flags=True):
        await self.initiate(**fields)
        await self.wait_done(self.done_count + 1)
        if check_flags:
            for f in ("cfg_err", "row_err", "psum_err"):
                assert int(getattr(self.dut, f).value) == 0, f"{f} set for {fields}"

    def in_shape(self, h, w, pad):
        """Shape of the produced input-error map for an h x w error map."""
        return (self.S_IC, h + self.K - 1 - 2 * pad, w + self.K - 1 - 2 * pad)

    def valid_pads(self, h, w):
        return [q for q in range(self.K) if h + self.K - 1 - 2 * q >= 1 and w + self.K - 1 - 2 * q >= 1]

    def rand_shape(self, maxh=6, maxw=6):
        maxh, maxw = min(self.p["MAX_HEIGHT"], maxh), min(self.p["MAX_WIDTH"], maxw)
        h, w = int(self.rng.integers(1, maxh + 1)), int(self.rng.integers(1, maxw + 1))
        return h, w, int(self.rng.choice(self.valid_pads(h, w)))

    def rand_layer(self, h, w, scale=1.0):
        return self.rand((self.S_OC, h, w), scale=2.0), self.rand((self.S_OC, self.S_IC, self.K, self.K), scale=scale)

    async def finish(self, settle=20):
        await ClockCycles(self.clk, settle)
        for m in (self.mon_err, self.mon_ps):
            assert m.protocol_errors == 0, f"{m}: {m.protocol_errors} AXI4-Stream hold violations"
        assert not self.serr._sendQ and not self.sps._sendQ, "input left unconsumed"
        self.sb.check()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 4.2 us on default
async def random_maps(dut):
    """Random error-map sizes, forward pads, errors and filters; random chain position
    (first/last) and psum_in; bubbles on every source, backpressure on both outputs."""
    tb = EbTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    for _ in range(6):
        h, w, pad = tb.rand_shape()
        e, filt = tb.rand_layer(h, w)
        first, last = (bool(v) for v in tb.rng.integers(0, 2, 2))
        await tb.load(filt)
        f, _ = tb.job(e, filt, pad, first, last, tb.rand_psum(tb.in_shape(h, w, pad)))
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 70, "*": 280})  # measured 12.2 us on default
async def padding_edges(dut):
    """Every forward pad 0..K-1 with the smallest valid error maps, the maximum map, and a
    1x1 error map with every pad that keeps the output non-empty."""
    tb = EbTB(dut, src_p=0.8, sink_p=0.7)
    await tb.reset()
    K = tb.K
    shapes = []
    for pad in range(K):
        m = max(1, 2 * pad - K + 2)          # smallest map with a non-empty output
        shapes += [(m, m, pad), (m, min(tb.p["MAX_WIDTH"], m + 2), pad)]
    shapes.append((tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], 0))
    shapes.append((tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"], K - 1))
    shapes += [(1, 1, q) for q in tb.valid_pads(1, 1)]
    for k, (h, w, pad) in enumerate(shapes):
        e, filt = tb.rand_layer(h, w)
        await tb.load(filt)
        f, _ = tb.job(e, filt, pad, k % 2 == 0, k % 3 != 1, tb.rand_psum(tb.in_shape(h, w, pad)))
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.9 us on default
async def saturation(dut):
    """Rails: input errors saturate both ways in the last run; psum_out saturates to
    PSUM_W bits both ways when psum_in sits at its rails."""
    tb = EbTB(dut, sink_p=0.7)
    await tb.reset()
    K, fmt = tb.K, tb.fmt
    mn, mx = fmt.min_int, fmt.max_int
    h = w = 2
    shp = tb.in_shape(h, w, 0)
    plo, phi = -(1 << (tb.PS - 1)), (1 << (tb.PS - 1)) - 1
    for ev, wv in ((mx, mx), (mx, mn), (mn, mn)):
        e = np.full((tb.S_OC, h, w), ev)
        filt = np.full((tb.S_OC, tb.S_IC, K, K), wv)
        await tb.load(filt)
        f, out = tb.job(e, filt, 0, True, True)
        assert int(out.max()) == mx or int(out.min()) == mn, "saturation case does not saturate"
        await tb.run(f)
    for ev, wv, pv in ((mx, mx, phi), (mx, mn, plo), (mn, mn, phi - 5)):
        e = np.full((tb.S_OC, h, w), ev)
        filt = np.full((tb.S_OC, tb.S_IC, K, K), wv)
        await tb.load(filt)
        ps = np.full(shp, pv, dtype=object)
        f, out = tb.job(e, filt, 0, False, False, ps)
        assert int(out.max()) == phi or int(out.min()) == plo, "saturation case does not saturate"
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})
async def min_times_min_products(dut):
    """The one product that needs the full 2W-bit signed range: min_int * min_int = 2**(2W-2).
    Errors all min_int, filter taps a checkerboard of min_int and max_int (and its inverse),
    psum_out (first, not last: the exact sums, no saturation), pad 0 and K-1: every
    multiplier sees min_int * min_int in one of the two runs, and the window sums stay far
    from the PSUM_W rails, so a product register one bit narrower (which reads 2**(2W-2)
    as -2**(2W-2)) changes the sum."""
    tb = EbTB(dut, src_p=0.9, sink_p=0.8)
    await tb.reset()
    K, fmt = tb.K, tb.fmt
    h, w = min(tb.p["MAX_HEIGHT"], K), min(tb.p["MAX_WIDTH"], K + 1)
    par = np.indices((tb.S_OC, tb.S_IC, K, K)).sum(axis=0) % 2
    hits = 0
    for inv in (0, 1):
        filt = np.where(par == inv, fmt.min_int, fmt.max_int).astype(np.int64)
        e = np.full((tb.S_OC, h, w), fmt.min_int, dtype=np.int64)
        for pad in (0, K - 1):
            await tb.load(filt)
            f, out = tb.job(e, filt, pad, True, False)
            hits += int(np.count_nonzero(np.abs(out.astype(np.int64)) < (1 << (2 * tb.W - 1))))
            assert int(np.max(np.abs(out.astype(np.int64)))) < (1 << (tb.PS - 1)) - 1, "psum saturated"
            await tb.run(f)
    assert hits > 0, "no window sum below one min*min product"
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 3.8 us on default
async def chain_two_runs(dut):
    """System level: a layer with 2*S_OC output channels back-propagated in two runs -- run 0
    (first, not last) sends its exact psum_out, fed back as psum_in of run 1 (last) -- equals
    golden.conv.backprop_error of the whole layer for pads 0, (K-1)//2, K-1; bubbles and
    backpressure."""
    tb = EbTB(dut, src_p=0.75, sink_p=0.6)
    await tb.reset()
    K, fmt, O = tb.K, tb.fmt, tb.S_OC
    h, w = min(tb.p["MAX_HEIGHT"], K), min(tb.p["MAX_WIDTH"], K + 1)
    for pad in sorted({0, (K - 1) // 2, K - 1} & set(tb.valid_pads(h, w))):
        e = tb.rand((2 * O, h, w), scale=2.0)
        full = tb.rand((2 * O, tb.S_IC, K, K), scale=1.0)
        ref = conv.backprop_error(e, full, pad, fmt)
        await tb.load(full[:O])
        n0 = len(tb.got_ps)
        f0, ps0 = tb.job(e[:O], full[:O], pad, True, False)
        await tb.run(f0)
        _, ho, wo = ps0.shape
        assert len(tb.got_ps) - n0 == ho * wo
        hw_ps = np.array([split_lanes(v, tb.S_IC, tb.PS) for v in tb.got_ps[n0:]], dtype=object)
        hw_ps = hw_ps.T.reshape(tb.S_IC, ho, wo)
        await tb.load(full[O:])
        f1, y = tb.job(e[O:], full[O:], pad, False, True, hw_ps)
        assert np.array_equal(y, ref), "golden chain != golden backprop_error"
        await tb.run(f1)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.8 us on default
async def back_to_back(dut):
    """Start again as soon as busy drops; no bubbles, always-ready sinks."""
    tb = EbTB(dut)
    await tb.reset()
    _, filt = tb.rand_layer(2, 2)
    await tb.load(filt)
    fields = []
    for k in range(4):
        h, w, pad = tb.rand_shape()
        e = tb.rand((tb.S_OC, h, w), scale=2.0)
        fields.append(tb.job(e, filt, pad, k % 2 == 0, k >= 2, tb.rand_psum(tb.in_shape(h, w, pad)))[0])
    for k, f in enumerate(fields):
        await tb.initiate(**f)
        await tb.wait_done(k + 1)
    await tb.finish()


@sim_test(timeout_us={"default": 60, "*": 240})  # measured 9.2 us on default
async def overlapped_maps(dut):
    """Start each map as soon as busy drops, i.e. while the previous map's windows and
    psums still drain (two maps in flight): random sizes, pads and per-map first/last,
    random bubbles and backpressure; every output bit-exact, one done per map."""
    for k, (src_p, sink_p) in enumerate(((1.0, 1.0), (0.8, 0.5), (0.9, 0.25))):
        tb = EbTB(dut, src_p=src_p, sink_p=sink_p) if k == 0 else tb
        if k:
            for i, s in enumerate(tb.sinks):
                s.gate = Gate(tb.seed * 13 + 201 + 10 * k + i, sink_p)
            for i, s in enumerate((tb.serr, tb.sps)):
                s.gate = Gate(tb.seed * 7 + 401 + 10 * k + i, src_p)
        else:
            await tb.reset()
        _, filt = tb.rand_layer(2, 2)
        await tb.load(filt)
        fields = []
        for _ in range(6):
            h, w, pad = tb.rand_shape()
            e = tb.rand((tb.S_OC, h, w), scale=2.0)
            first, last = (bool(tb.rng.integers(2)) for _ in range(2))
            fields.append(tb.job(e, filt, pad, first, last, tb.rand_psum(tb.in_shape(h, w, pad)))[0])
        d0, overlap = tb.done_count, 0
        for i, f in enumerate(fields):
            await tb.initiate(**f)
            overlap += tb.done_count < d0 + i
        await tb.wait_done(d0 + len(fields))
        for fl in ("cfg_err", "row_err", "psum_err"):
            if hasattr(dut, fl):
                assert int(getattr(dut, fl).value) == 0, f"{fl} set"
        dut._log.info("src_p=%.2f sink_p=%.2f: %d maps, %d started before the previous one's done",
                      src_p, sink_p, len(fields), overlap)
        assert overlap > 0, "no map was started while the previous one drained"
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 3.0 us on default
async def reset_mid_stream(dut):
    """Reset in the middle of a map (windows and psums in flight, sinks stalling): idle
    afterwards, filters cleared, the next maps exact."""
    tb = EbTB(dut, src_p=0.9, sink_p=0.5)
    await tb.reset()
    h, w = min(tb.p["MAX_HEIGHT"], 5), min(tb.p["MAX_WIDTH"], 5)
    e, filt = tb.rand_layer(h, w)
    await tb.load(filt)
    f, _ = tb.job(e, filt, 0, False, False, tb.rand_psum(tb.in_shape(h, w, 0)))
    await tb.initiate(**f)
    at = int(tb.rng.integers(1, 3 * (w + 2 * tb.K) + 9))     # seeded random reset cycle within the map
    dut._log.info("reset %d cycles after start", at)
    await ClockCycles(dut.clk, at)
    assert tb.done_count == 0, "the map should still be in progress"   # busy may drop once its input is in
    await tb.abort_and_reset()
    assert int(dut.busy.value) == 0
    for fl in ("cfg_err", "row_err", "psum_err", "done"):
        assert int(getattr(dut, fl).value) == 0, f"{fl} not at its reset value"
    assert int(dut.m_axis_err_tvalid.value) == 0 and int(dut.m_axis_psum_out_tvalid.value) == 0
    z = np.zeros((tb.S_OC, tb.S_IC, tb.K, tb.K), dtype=np.int64)
    e2 = tb.rand((tb.S_OC, 2, 3), scale=2.0)
    f, _ = tb.job(e2, z, 0, True, True)       # filters cleared by reset: all-zero result
    await tb.run(f)
    for _ in range(2):
        h, w, pad = tb.rand_shape()
        e, filt = tb.rand_layer(h, w)
        await tb.load(filt)
        f, _ = tb.job(e, filt, pad, False, True, tb.rand_psum(tb.in_shape(h, w, pad)))
        await tb.run(f)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 0.9 us on default
async def invalid_configuration(dut):
    """Width/height 0, above the maximum or all ones, pad above K-1 (every such value the
    field can hold), output map smaller than 1x1: cfg_err and done, nothing consumed; a
    valid start afterwards clears cfg_err and runs exactly."""
    tb = EbTB(dut)
    await tb.reset()
    K = tb.K
    bad = [dict(width=0, height=2, pad=0), dict(width=2, height=0, pad=0),
           dict(width=(1 << len(dut.cfg_width)) - 1, height=2, pad=0),
           dict(width=2, height=(1 << len(dut.cfg_height)) - 1, pad=0)]
    if tb.p["MAX_WIDTH"] + 1 < (1 << len(dut.cfg_width)):
        bad.append(dict(width=tb.p["MAX_WIDTH"] + 1, height=2, pad=0))
    bad += [dict(width=3, height=3, pad=q) for q in range(K, 1 << len(dut.cfg_pad))]
    if K >= 3:      # 1 + K-1 - 2*(K-1) = 2-K < 1: empty output
        bad.append(dict(width=1, height=4, pad=K - 1))
    e, filt = tb.rand_layer(2, 2)
    await tb.load(filt)
    fields, _ = tb.job(e, filt, 0, False, True, tb.rand_psum(tb.in_shape(2, 2, 0)))
    for k, f in enumerate(bad):
        await tb.initiate(**f, first=0, last=1)
        await tb.wait_done(k + 1, timeout=20)
        assert int(dut.cfg_err.value) == 1, f"cfg_err not set for {f}"
        assert int(dut.busy.value) == 0
    await ClockCycles(dut.clk, 5)
    assert tb.serr.sent == 0 and tb.sps.sent == 0, "an invalid initiation consumed input"
    assert int(dut.m_axis_err_tvalid.value) == 0 and int(dut.m_axis_psum_out_tvalid.value) == 0
    await tb.run(fields)
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.5 us on default
async def tlast_checks(dut):
    """A psum_in tlast off the row end sets psum_err, an error-map tlast off the row end sets
    row_err (both sticky until the next start); results unaffected."""
    tb = EbTB(dut, src_p=0.8)
    await tb.reset()
    e, filt = tb.rand_layer(2, 3)
    await tb.load(filt)
    f, _ = tb.job(e, filt, 0, False, True, tb.rand_psum(tb.in_shape(2, 3, 0)), bad_psum_tlast_at=(1, 0))
    await tb.run(f, check_flags=False)
    assert int(dut.psum_err.value) == 1 and int(dut.row_err.value) == 0
    e, filt = tb.rand_layer(2, 3)
    f, _ = tb.job(e, filt, 0, True, True)
    d, _ = tb.serr._sendQ[1][0]                 # 2nd beat of row 0 claims to end the row
    tb.serr._sendQ[1] = ((d, 1),) + tuple(tb.serr._sendQ[1][1:])
    await tb.load(filt)
    await tb.run(f, check_flags=False)
    assert int(dut.row_err.value) == 1 and int(dut.psum_err.value) == 0
    e, filt = tb.rand_layer(2, 2)
    await tb.load(filt)
    await tb.run(tb.job(e, filt, 0, True, False)[0])
    await tb.finish()


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 3.1 us on default
async def start_while_busy_ignored(dut):
    """Start pulses with other cfg fields (another shape and first/last, then an invalid
    map) while busy: the map in flight completes exactly as first configured (outputs
    bit-exact, one done, no error flag), the extra starts consume nothing and produce
    nothing, and the next legal start works."""
    tb = EbTB(dut, src_p=0.7, sink_p=0.6)
    await tb.reset()
    K = tb.K
    h, w = min(tb.p["MAX_HEIGHT"], 5), min(tb.p["MAX_WIDTH"], 6)
    e, filt = tb.rand_layer(h, w)
    await tb.load(filt)
    f, _ = tb.job(e, filt, 0, False, True, tb.rand_psum(tb.in_shape(h, w, 0)))
    await tb.initiate(**f)
    # a legal other shape (1 x 2 error map with pad (K-1)//2 gives an input map >= 1x1; pad K-1 would not)
    n = await start_while_busy(dut, tb.clk, dict(width=1, height=2, pad=(K - 1) // 2, first=1, last=0), pulses=2)
    n += await start_while_busy(dut, tb.clk, dict(width=0, height=0, pad=0, first=0, last=0), pulses=1)
    dut._log.info("%d starts given while busy", n)
    await tb.wait_done(1)
    await ClockCycles(dut.clk, 40)
    assert tb.done_count == 1, f"{tb.done_count} done pulses for one accepted map"
    for fl in ("cfg_err", "row_err", "psum_err"):
        assert int(getattr(dut, fl).value) == 0, f"{fl} set by an ignored start"
    assert int(dut.busy.value) == 0, "busy after the only accepted map finished"
    assert not tb.serr._sendQ and not tb.sps._sendQ, "input left unconsumed"
    h2, w2, pad2 = tb.rand_shape()
    f2, _ = tb.job(tb.rand((tb.S_OC, h2, w2), scale=2.0), filt, pad2, True, True)
    await tb.run(f2)
    assert tb.done_count == 2
    await tb.finish()


@sim_test(timeout_us={"default": 30, "*": 120})  # measured 1.2 us on default
async def checker_catches_corruption(dut):
    """Negative test: a corrupted expected error word, a corrupted expected psum, an extra
    output and a dropped output must each make the scoreboard fail."""
    tb = EbTB(dut)
    await tb.reset()
    e, filt = tb.rand_layer(2, 2)
    await tb.load(filt)
    f, _ = tb.job(e, filt, 0, True, True)
    d, last = tb.exp_err[1]
    tb.exp_err[1] = (d ^ 1, last)
    await tb.run(f)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 1, f"err corruption not detected ({tb.sb.mismatches})"
    f, _ = tb.job(e, filt, 0, True, False)
    d, last = tb.exp_ps[0]
    tb.exp_ps[0] = (d ^ (1 << (tb.PS - 1)), last)
    await tb.run(f)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.mismatches == 2, f"psum corruption not detected ({tb.sb.mismatches})"
    with pytest.raises(AssertionError):
        tb.sb.check()
    tb.sb.errors = tb.sb.mismatches = 0
    f, _ = tb.job(e, filt, 0, True, True)
    tb.exp_err.pop()
    await tb.run(f)
    await ClockCycles(dut.clk, 5)
    assert tb.sb.errors == 1, "extra output not detected"
    tb.sb.errors = 0
    tb.exp_ps.append((123, 1))
    with pytest.raises(AssertionError, match="never received"):
        tb.sb.check()


@sim_test(timeout_us={"default": 200, "*": 800})  # measured 44.5 us on default
async def bench_throughput(dut):
    """Benchmark (reported, not asserted): MAC utilisation = useful MACs /
    (S_IC*S_OC*K*K MAC units x cycles), (a) steady state along output rows and (b) over a
    whole maximum-size error map from start to done (padded scan + fill); 'useful' counts
    products whose error operand is not a padding zero (the work of Eq. 2 proper)."""
    tb = EbTB(dut)
    await tb.reset()
    K = tb.K
    units = widths(tb.p)["macs"]
    h, w = tb.p["MAX_HEIGHT"], tb.p["MAX_WIDTH"]
    rec = {}
    for pad in sorted({0, (K - 1) // 2, K - 1} & set(tb.valid_pads(h, w))):
        e, filt = tb.rand_layer(h, w)
        await tb.load(filt)
        f, out = tb.job(e, filt, pad, False, False, tb.rand_psum(tb.in_shape(h, w, pad)))
        n0 = len(tb.mon_ps.times)
        t0 = tb.mon_ps.cycles
        await tb.run(f)
        cycles = tb.mon_ps.cycles - t0
        times = tb.mon_ps.times[n0:]
        _, ho, wo = out.shape
        rows = [times[r * wo:(r + 1) * wo] for r in range(ho)]
        row_util = sum(len(r) for r in rows) / sum(r[-1] - r[0] + 1 for r in rows)
        # nonzero-operand products: every error element meets K*K (clipped) filter taps
        nz = conv.backprop_error(np.ones((1, h, w)), np.ones((1, 1, K, K)), pad)
        useful = float(nz.sum()) * tb.S_IC * tb.S_OC
        rec[f"pad{pad}"] = dict(outputs=len(times), cycles_start_to_done=cycles,
                                mac_utilization_steady=row_util,
                                mac_utilization_map_all_taps=len(times) * units / (units * cycles),
                                mac_utilization_map_useful=useful / (units * cycles))
        # whole maps back to back: NB error maps queued, each started as soon as busy drops
        NB = 4
        jobs = []
        for _ in range(NB):
            eb_, _f = tb.rand_layer(h, w)
            jobs.append(tb.job(eb_, filt, pad, False, False, tb.rand_psum(tb.in_shape(h, w, pad)))[0])
        n0, t0, d0 = len(tb.mon_ps.times), tb.mon_ps.cycles, tb.done_count
        for fj in jobs:
            await tb.initiate(**fj)
        await tb.wait_done(d0 + NB)
        cyc = tb.mon_ps.cycles - t0
        nout = len(tb.mon_ps.times) - n0
        rec[f"pad{pad}"].update(batch_maps=NB, batch_outputs=nout, batch_cycles_start_to_done=cyc,
                                mac_utilization_batch_all_taps=nout / cyc,
                                mac_utilization_batch_useful=NB * useful / (units * cyc))
    await tb.finish()
    # flat summary (shown in the `make bench` table): per pad, over one map and back to back
    flat = {f"{k}_{pd}": round(v, 4) for pd, d in rec.items() for k, v in d.items()
            if k in ('mac_utilization_map_useful', 'mac_utilization_batch_useful')}
    out = record_bench(CORE, map=f"{h}x{w}", mac_units=units, ideal=1.0, **flat, **rec)
    dut._log.info("bench: %s", out)


@sim_test(timeout_us={"default": 40, "*": 160})  # measured 2.4 us on default
async def rounding_ties(dut):
    """Directed rounding ties at the last run's one rounding point (psum + exact sum over
    the output channels), both signs:
    (1) first run, forward pad K-1 (the error map is not padded, so every tap sees a real
        error): errors tie_operands(j), filters integer words (multiples of one) except one
        tie_scalar(j) tap per input channel -- every exact output sum is a tie through the
        multipliers alone;
    (2) not first: random errors, filters and padding; psum_in chosen per output element
        so the exact value is half an LSB above a target word -- random targets of both
        signs and the edge targets (max_int must saturate).
    Ties counted per sign on golden.conv.eb_node's exact sums and must occur."""
    tb = EbTB(dut, src_p=0.8, sink_p=0.8)
    await tb.reset()
    K, fmt, rng = tb.K, tb.fmt, tb.rng
    h, w = min(tb.p["MAX_HEIGHT"], K + 1), min(tb.p["MAX_WIDTH"], K + 2)
    vals = []
    for j in (0, int(rng.integers(1, fmt.F))):
        e = tie_operands(rng, fmt, j, (tb.S_OC, h, w), limit=1.0)
        filt = rng.integers(-1, 2, size=(tb.S_OC, tb.S_IC, K, K)).astype(np.int64) * fmt.one
        for c in range(tb.S_IC):
            o, u, v = (int(rng.integers(0, m)) for m in (tb.S_OC, K, K))
            filt[o, c, u, v] = tie_scalar(rng, fmt, j, limit=1.0)
        await tb.load(filt)
        f, _ = tb.job(e, filt, K - 1, True, True)
        await tb.run(f)
        vals += list(conv.eb_node(e, filt, None, False, K - 1, fmt).ravel())
    targets = edge_targets(fmt)
    for rnd in range(2):
        pad = int(rng.choice(tb.valid_pads(h, w)))
        e, filt = tb.rand_layer(h, w)
        shp = tb.in_shape(h, w, pad)
        n = int(np.prod(shp))
        ts = (targets + rand_targets(fmt, rng, n))[:n]
        exact = conv.eb_node(e, filt, None, False, pad, fmt)
        ps = np.array([tie_value(fmt, t) for t in ts], dtype=object).reshape(shp) - exact
        await tb.load(filt)
        f, _ = tb.job(e, filt, pad, False, True, ps)
        await tb.run(f)
        vals += list(conv.eb_node(e, filt, ps, False, pad, fmt, psum_bits=tb.PS).ravel())
        targets = []
    require_ties(fmt, vals, "eb output sums", dut._log)
    assert tie_value(fmt, fmt.max_int) in vals and tie_value(fmt, fmt.min_int - 1) in vals
    await tb.finish()


# ---------------------------------------------------------------- pytest launchers
@pytest.mark.parametrize("cfg,sim", matrix(CORE, quick=[("default", "verilator"), ("k5", "icarus")]))
def test_fpdeep_eb(cfg, sim):
    run_core(CORE, cfg, sim)


@pytest.mark.parametrize("given,param", [({"K": 1}, "K"), ({"S_IC": 0}, "S_IC"), ({"PSUM_W": 32}, "PSUM_W"),
                                         ({"MAX_WIDTH": 0}, "MAX_WIDTH"), ({"W": 8, "F": 8}, "F")])
def test_fpdeep_eb_invalid_parameters(given, param):
    with pytest.raises(ParamError, match=param):
        get(CORE).resolve(given)


# bus protocol checkers (scoreboards/protocol.py) on every AXI4-Stream/AXI4/AXI4-Lite port
# of the toplevel, attached before each cocotb test; its violations must be zero at the end
from scoreboards.protocol import guard_tests  # noqa: E402

guard_tests(globals())
