"""Shared cocotb testbench for ``fpdeep_node``: one node (the core itself) or a 1-D chain of
N nodes (the wrapper of verif/fpdeep_node_chain, per-node ports prefixed ``n<i>_``).

Stimulus of a whole mini-batch is queued at once (a node takes exactly H*W pixels per FWD
op and Ho*Wo error beats per BWD op); the testbench only issues the starts, in one of four
schedules: ``seq`` (FWD b, BWD b, ...), ``overlap`` (BWD b together with FWD b+1),
``fwd_first`` (every FWD, then every BWD) and ``stream`` (each start as soon as every node's
busy is low: FWD b+1 while FWD b drains, BWD b once FWD b is done, up to two ops of a kind
in flight).  Expectations come from
``golden.conv.icp_chain_minibatch`` (and ``fp_node`` for a single node in the middle of a
chain); every output stream is scoreboarded bit-exactly.
"""
from __future__ import annotations

import importlib
import json
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

from golden import conv
from golden.fixedpoint import QFormat
from scoreboards.axis import AxisMonitor, AxisSink, AxisSource
from scoreboards.checker import FixedScoreboard, StreamSpec, pack_lanes
from scoreboards.gates import Gate
from verif.harness import CLOCK_NS, dut_params
from verif.tb_common import DEFAULT_CYCLES, StallError, rand_words, wait_until
from verif.tb_common import sim_seed as seed_of
from verif.fpdeep_node_cov import NodeCov


class NodeTB:
    def __init__(self, dut, n_nodes: int = 1, src_p: float = 1.0, sink_p: float = 1.0,
                 stall_p: float = 0.0):
        self.dut = dut
        self.p = p = dut_params()
        self.N = n_nodes
        self.single = n_nodes == 1 and hasattr(dut, "cfg_first")
        self.K, self.W, self.F = p["K"], p["W"], p["F"]
        self.S_IC, self.S_OC, self.PS = p["S_IC"], p["S_OC"], p["PSUM_W"]
        self.C = self.N * self.S_IC
        self.fmt = QFormat(self.W, self.F)
        self.seed = seed_of()
        self.rng = np.random.default_rng(self.seed)
        dut._log.info("seed=%d nodes=%d params=%s", self.seed, self.N, p)
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.src_p, self.sink_p, self.stall_p = src_p, sink_p, stall_p
        self._sources(0)
        self.sb = FixedScoreboard(dut)
        self.mons, self.sinks = [], []
        K2, W, F = self.K * self.K, self.W, self.F

        def stream(name, fields, k):
            self.sinks.append(AxisSink(dut, name, dut.clk, Gate(self.seed * 13 + 101 + k, sink_p)))
            m = AxisMonitor(dut, name, dut.clk, reset=dut.rst)
            self.mons.append(m)
            return self.sb.add_stream(m, StreamSpec(name, fields))

        self.exp_act = stream("m_axis_act", [("act", self.S_OC, W, F)], 0)
        self.exp_ein = [stream(self.pre(i) + "m_axis_ein", [("e", self.S_IC, W, F)], 10 + i) for i in range(self.N)]
        self.exp_pw = [stream(self.pre(i) + "m_axis_pw", [("w", K2, W, F)], 20 + i) for i in range(self.N)]
        self.exp_pb = [stream(self.pre(i) + "m_axis_pb", [("b", self.S_OC, W, F)], 30 + i) for i in range(self.N)]
        if self.single:
            self.exp_ps = stream("m_axis_psum_out", [("psum", self.S_OC, self.PS, 2 * F)], 40)
            self.exp_be = stream("m_axis_berr", [("e", self.S_OC, W, F)], 41)
        for s in ("fwd_start", "bwd_start"):
            getattr(dut, s).value = 0
        # a chain wrapper with per-node BWD starts (n<i>_bwd_go, OR-ed with the shared bwd_start):
        # the ``stream`` schedule then starts each node's next BWD op as soon as that node is free
        self.pernode = self.N > 1 and hasattr(dut, "n0_bwd_go")
        if self.pernode:
            for i in range(self.N):
                getattr(dut, f"n{i}_bwd_go").value = 0
        self.w = np.zeros((self.S_OC, self.C, self.K, self.K), dtype=np.int64)   # reset value
        self.b = np.zeros(self.S_OC, dtype=np.int64)
        self.fdone = [0] * self.N
        self.bdone = [0] * self.N
        self.cycle = 0
        self.busy_log = None            # list of per-cycle stage_busy tuples while measuring
        self.done_log = None            # (cycle index in busy_log, node, "f"/"b") while measuring
        cocotb.start_soon(self._watch())
        # functional coverage (verif/fpdeep_node_cov.py): the node's own model, or the chain's
        core = "fpdeep_node" if self.single else "fpdeep_node_chain"
        importlib.import_module(f"verif.{core}.covermodel")
        self.fcov = NodeCov(core, dut, self)
        if hasattr(dut, "stall"):
            dut.stall.value = 0          # a previous test may have left stall bits set
            if stall_p > 0:
                cocotb.start_soon(self._stalls())

    def pre(self, i: int) -> str:
        return "" if self.N == 1 else f"n{i}_"

    def sig(self, i, name):
        return getattr(self.dut, self.pre(i) + name)

    def _sources(self, salt):
        g = lambda k: Gate(self.seed * 7 + k + salt, self.src_p)  # noqa: E731
        d, c = self.dut, self.dut.clk
        self.spix = [AxisSource(d, self.pre(i) + "s_axis_pix", c, g(1 + 10 * i)) for i in range(self.N)]
        self.sw = [AxisSource(d, self.pre(i) + "s_axis_w", c, g(2 + 10 * i)) for i in range(self.N)]
        self.sbias = [AxisSource(d, self.pre(i) + "s_axis_b", c, g(3 + 10 * i)) for i in range(self.N)]
        self.sberr = AxisSource(d, "s_axis_berr", c, g(4))
        self.sps = AxisSource(d, "s_axis_psum_in", c, g(5)) if self.single else None

    def all_sources(self):
        return self.spix + self.sw + self.sbias + [self.sberr] + ([self.sps] if self.sps else [])

    async def _watch(self):
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            self.cycle += 1
            for i in range(self.N):
                v = self.sig(i, "fwd_done").value
                if v.is_resolvable and int(v):
                    self.fdone[i] += 1
                    if self.done_log is not None and self.busy_log is not None:
                        self.done_log.append((len(self.busy_log), i, "f"))
                v = self.sig(i, "bwd_done").value
                if v.is_resolvable and int(v):
                    self.bdone[i] += 1
                    if self.done_log is not None and self.busy_log is not None:
                        self.done_log.append((len(self.busy_log), i, "b"))
            if self.busy_log is not None:
                self.busy_log.append(tuple(int(self.sig(i, "stage_busy").value) for i in range(self.N)))

    async def _stalls(self):
        """Random stalls on every internal chain link (the wrapper's gated register slices)."""
        n = len(self.dut.stall)
        gates = [Gate(self.seed * 17 + 500 + k, 1.0 - self.stall_p) for k in range(n)]
        while True:
            self.dut.stall.value = sum((0 if g.next() else 1) << k for k, g in enumerate(gates))
            await RisingEdge(self.clk)

    async def reset(self, cycles=3):
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def abort_and_reset(self):
        for s in self.all_sources():
            s.kill()
            s.tvalid.value = 0
        await self.reset()
        self._sources(1000)
        for q in [self.exp_act] + self.exp_ein + self.exp_pw + self.exp_pb + (
                [self.exp_ps, self.exp_be] if self.single else []):
            q.clear()
        self.fcov.clear()
        self.fdone = [0] * self.N
        self.bdone = [0] * self.N
        self.w[...] = 0
        self.b[...] = 0

    # ---- stimulus ------------------------------------------------------------------
    def rand(self, shape, extreme=0.1, scale=None):
        return rand_words(self.rng, shape, self.fmt, extreme, scale)

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

    def rand_lr(self):
        return int(self.rng.integers(1, max(2, self.fmt.one // 4) + 1))

    def rand_params(self):
        return self.rand((self.S_OC, self.C, self.K, self.K), scale=1.0), self.rand(self.S_OC, scale=1.0)

    async def load(self, w, b):
        """Each node's filters (its input channels, beat j = (o, c) = divmod(j, S_IC)) and the
        biases; wait until every node accepted them."""
        w = np.asarray(w, dtype=np.int64)
        marks = [(self.sw[i].sent, self.sbias[i].sent) for i in range(self.N)]
        for i in range(self.N):
            for o in range(self.S_OC):
                for c in range(self.S_IC):
                    self.sw[i].append((pack_lanes(w[o, i * self.S_IC + c].reshape(-1), self.W), 0))
            self.sbias[i].append((pack_lanes(b, self.W), 1))
        ns = self.S_OC * self.S_IC
        for i in range(self.N):
            await wait_until(self.clk, lambda: self.sw[i].sent >= marks[i][0] + ns and self.sbias[i].sent >= marks[i][1] + 1,
                             DEFAULT_CYCLES, f"{self.pre(i)}s_axis_w/s_axis_b: filter and bias load not accepted",
                             expect=f"{ns} filter beats and 1 bias beat",
                             detail=lambda: f"{self.sw[i].sent - marks[i][0]} filter and "
                                            f"{self.sbias[i].sent - marks[i][1]} bias beats accepted")
        self.w, self.b = w.copy(), np.asarray(b, dtype=np.int64).copy()

    def rand_batch(self, B, h, w, pad, xscale=2.0, escale=0.5):
        ho, wo = self.out_shape(h, w, pad)
        xs = [self.rand((self.C, h, w), scale=xscale) for _ in range(B)]
        es = [self.rand((self.S_OC, ho, wo), scale=escale) for _ in range(B)]
        return xs, es

    def queue_batch(self, xs, es, pad, lr_q, relu=True, first=True, last=True, bend=True,
                    psums=None, corrupt=None):
        """Queue the beats of one mini-batch and its expectations; update the software model
        of the parameters.  Returns the golden result dict."""
        B = len(xs)
        fmt, W, S = self.fmt, self.W, self.S_IC
        _, h, w = np.asarray(xs[0]).shape
        lr = lr_q * B / fmt.one
        assert int(fmt.to_fixed(lr / B)) == lr_q
        r = conv.icp_chain_minibatch(xs, es, self.w, self.b, lr, self.N, pad, relu, fmt)
        if self.single and not (first and last):
            r["y"] = [conv.fp_node(x, self.w, None if first else ps, last, self.b, relu, pad, fmt,
                                   psum_bits=self.PS) for x, ps in zip(xs, psums)]
        for bi, (x, e) in enumerate(zip(xs, es)):
            x, e = np.asarray(x), np.asarray(e)
            for i in range(self.N):
                for rr in range(h):
                    for cc in range(w):
                        self.spix[i].append((pack_lanes(x[i * S:(i + 1) * S, rr, cc], W), int(cc == w - 1)))
            y = r["y"][bi]
            _, ho, wo = y.shape
            for rr in range(ho):
                for cc in range(wo):
                    lst = int(cc == wo - 1)
                    if self.single and not first:
                        self.sps.append((pack_lanes(psums[bi][:, rr, cc], self.PS), lst))
                    if last:
                        self.exp_act.append((pack_lanes(y[:, rr, cc], W), lst))
                    else:
                        self.exp_ps.append((pack_lanes(y[:, rr, cc], self.PS), lst))
                    self.sberr.append((pack_lanes(e[:, rr, cc], W), lst))
                    if self.single and not bend:
                        self.exp_be.append((pack_lanes(e[:, rr, cc], W), lst))
            ein = r["e_in"][bi]
            for i in range(self.N):
                for rr in range(h):
                    for cc in range(w):
                        self.exp_ein[i].append((pack_lanes(ein[i * S:(i + 1) * S, rr, cc], W), int(cc == w - 1)))
        self.fcov.batch(self, xs, es, pad, lr_q, relu, first, last)
        ns = self.S_OC * S
        for i in range(self.N):
            for j in range(ns):
                o, c = divmod(j, S)
                self.exp_pw[i].append((pack_lanes(r["w_new"][o, i * S + c].reshape(-1), W), int(j == ns - 1)))
            self.exp_pb[i].append((pack_lanes(r["b_new"], W), 1))
        self.w = np.asarray(r["w_new"], dtype=np.int64)
        self.b = np.asarray(r["b_new"], dtype=np.int64)
        return r

    # ---- control ---------------------------------------------------------------------
    async def start(self, fwd=None, bwd=None, fields=None, nodes=None):
        """Pulse fwd_start (sample ``fwd``) and/or bwd_start (sample ``bwd``) in one cycle;
        with ``nodes`` the BWD start goes to those nodes only (n<i>_bwd_go)."""
        d = self.dut
        for k, v in (fields or {}).items():
            s = getattr(d, f"cfg_{k}")
            s.value = int(v) & ((1 << len(s)) - 1)
        if fwd is not None:
            d.cfg_fsample.value = fwd
            d.fwd_start.value = 1
        if bwd is not None:
            d.cfg_bsample.value = bwd
            if nodes is None:
                d.bwd_start.value = 1
            else:
                for i in nodes:
                    getattr(d, f"n{i}_bwd_go").value = 1
        await RisingEdge(self.clk)
        d.fwd_start.value = 0
        d.bwd_start.value = 0
        for i in nodes or ():
            getattr(d, f"n{i}_bwd_go").value = 0

    async def wait_counts(self, f=None, b=None, timeout=20000):
        try:
            await wait_until(self.clk, lambda: (f is None or min(self.fdone) >= f) and (b is None or min(self.bdone) >= b),
                             timeout - 1, "fwd_done/bwd_done: no pulse", expect=f"fwd_done {f}, bwd_done {b} on every node",
                             detail=lambda: f"fwd_done {self.fdone}, bwd_done {self.bdone}")
        except StallError:
            self.dump()
            raise

    def dump(self):
        """Log the node's control state (debug aid on a timeout)."""
        for i in range(self.N):
            h = self.dut if self.N == 1 else getattr(self.dut, f"node{i}")
            vals = []
            for n in ("fwd_busy_r", "bwd_busy_r", "upd_pend", "e_open", "eb_seen", "eb_busy", "fp_busy",
                      "pg_busy", "rd_on", "ec", "er", "cnt", "pend", "bcnt", "bat_m1", "fpdeep_pg0_phase",
                      "fpdeep_pg0_need_start", "fpdeep_pg0_lb_busy", "pgx_r", "fpdeep_pg0_win_v", "e_v", "eb_err_r",
                      "pge_r", "s_axis_berr_tvalid", "fpdeep_pg0_ldcnt", "fpdeep_pg0_fcnt", "e_f"):
                try:
                    vals.append(f"{n}={getattr(h, n).value}")
                except AttributeError:
                    pass
            self.dut._log.info("node %d: %s", i, " ".join(vals))

    def check_flags(self):
        for i in range(self.N):
            for f in ("cfg_err", "row_err", "psum_err"):
                assert int(self.sig(i, f).value) == 0, f"node {i}: {f} set"

    async def run_batch(self, B, h, w, pad, lr_q, relu=True, schedule="seq", pos=None, flags=True):
        """Issue the starts of one queued mini-batch of B samples."""
        fields = dict(width=w, height=h, pad=pad, relu=int(relu), batch=B, lr=lr_q)
        if self.single:
            first, last, bend = pos or (1, 1, 1)
            fields.update(first=first, last=last, bend=bend)
        f0, b0 = min(self.fdone), min(self.bdone)
        if schedule == "fwd_first":
            for s in range(B):
                await self.start(fwd=s, fields=fields)
                await self.wait_counts(f=f0 + s + 1)
            for s in range(B):
                await self.start(bwd=s, fields=fields)
                await self.wait_counts(b=b0 + s + 1)
        elif schedule == "stream" and self.pernode:
            # per-node BWD starts: node i takes BWD op s once it is free and every node has
            # started op s-1 (cfg_bsample is shared: the laggards start s before anyone s+1)
            fs, bs = 0, [0] * self.N
            for _ in range(B * 20000):            # bounded: every op of the batch started
                if min(bs) >= B:
                    break
                await FallingEdge(self.clk)
                fidle = all(int(self.sig(i, "fwd_busy").value) == 0 for i in range(self.N))
                nf = fs if fs < B and fidle else None
                s = min(bs)
                go = [i for i in range(self.N) if bs[i] == s and s < min(self.fdone) - f0
                      and int(self.sig(i, "bwd_busy").value) == 0]
                if nf is None and not go:
                    continue
                await self.start(fwd=nf, bwd=s if go else None, fields=fields, nodes=go)
                fs += nf is not None
                for i in go:
                    bs[i] += 1
            assert min(bs) >= B, f"stream schedule: only {fs} FWD / {bs} BWD ops started"
            await self.wait_counts(f=f0 + B, b=b0 + B)
        elif schedule in ("stream", "stream_shared"):
            fs = bs = 0
            for _ in range(B * 20000):            # bounded: every op of the batch started
                if bs >= B:
                    break
                await FallingEdge(self.clk)
                fidle = all(int(self.sig(i, "fwd_busy").value) == 0 for i in range(self.N))
                bidle = all(int(self.sig(i, "bwd_busy").value) == 0 for i in range(self.N))
                nf = fs if fs < B and fidle else None
                nb = bs if bs < min(self.fdone) - f0 and bidle else None
                if nf is None and nb is None:
                    continue
                await self.start(fwd=nf, bwd=nb, fields=fields)
                fs += nf is not None
                bs += nb is not None
            assert bs >= B, f"stream schedule: only {fs} FWD / {bs} BWD ops started"
            await self.wait_counts(f=f0 + B, b=b0 + B)
        elif schedule == "overlap":
            await self.start(fwd=0, fields=fields)
            await self.wait_counts(f=f0 + 1)
            for s in range(B):
                nxt = s + 1 if s + 1 < B else None
                await self.start(fwd=nxt, bwd=s, fields=fields)
                await self.wait_counts(f=f0 + s + 1 + (nxt is not None), b=b0 + s + 1)
        else:
            for s in range(B):
                await self.start(fwd=s, fields=fields)
                await self.wait_counts(f=f0 + s + 1)
                await self.start(bwd=s, fields=fields)
                await self.wait_counts(b=b0 + s + 1)
        if flags:
            self.check_flags()

    async def measure_idle(self, pad: int, schedule: str = "stream") -> dict:
        """Benchmark one maximum-size mini-batch (MAX_BATCH samples, ``stream`` schedule: every
        start as soon as the nodes take it) and return the cycles per sample and the
        idle-stage fractions: per node and stage (FP, EB, PG) the fraction of the cycles from
        the first start to the last done in which the stage has no map (FP, EB) or no sample /
        update (PG), from the nodes' stage_busy outputs.  Steady state (MAX_BATCH >= 3): the
        cycles between the first and the second-to-last sample's bwd_done (every node's) per
        sample, and the idle fractions within that window (the first sample's FWD, which
        nothing overlaps, and the last sample's update excluded).  Issue 16's measure,
        ``idle_after_first_<stage>``: the idle fraction from the cycle the first sample's
        fwd_done has come from every node to the last done of the mini-batch (the update
        included), averaged over the nodes."""
        h, w, B = self.p["MAX_HEIGHT"], self.p["MAX_WIDTH"], self.p["MAX_BATCH"]
        xs, es = self.rand_batch(B, h, w, pad)
        lr = self.rand_lr()
        self.queue_batch(xs, es, pad, lr)
        self.busy_log, self.done_log = [], []
        await self.run_batch(B, h, w, pad, lr, True, schedule)
        log, self.busy_log = self.busy_log, None
        dl, self.done_log = self.done_log, None
        cyc = len(log)
        idle = {st: [sum(1 for c in log if not (c[i] >> bit) & 1) / cyc for i in range(self.N)]
                for bit, st in enumerate(("fp", "eb", "pg"))}
        if os.environ.get("FPDEEP_BUSY_LOG"):      # debug aid: the per-cycle log for offline study
            with open(f"{os.environ['FPDEEP_BUSY_LOG']}-pad{pad}.json", "w") as fh:
                json.dump({"busy": log, "done": dl}, fh)
        steady = {}
        if B >= 3:
            # cycle at which the k-th sample's bwd_done has come from every node
            tb_ = [max(sorted(c for c, i, k in dl if i == n and k == "b")[s] for n in range(self.N))
                   for s in range(B)]
            t0, t1 = tb_[0], tb_[B - 2]
            win = log[t0:t1]
            steady = dict(steady_cycles_per_sample=round((t1 - t0) / (B - 2), 3),
                          **{f"steady_idle_{st}": round(sum(sum(1 for c in win if not (c[i] >> bit) & 1)
                                                            for i in range(self.N)) / (self.N * len(win)), 4)
                             for bit, st in enumerate(("fp", "eb", "pg"))})
        # issue 16's measure: idle fraction of each stage over the mini-batch after the first
        # sample, i.e. from the cycle the first sample's fwd_done has come from every node (the
        # first FWD, which nothing can overlap, excluded) to the last done of the mini-batch
        tf0 = max(min(c for c, i, k in dl if i == n and k == "f") for n in range(self.N))
        after = log[tf0:]
        after_first = {f"idle_after_first_{st}": round(sum(sum(1 for c in after if not (c[i] >> bit) & 1)
                                                           for i in range(self.N)) / (self.N * len(after)), 4)
                       for bit, st in enumerate(("fp", "eb", "pg"))}
        return dict(cycles=cyc, samples=B, cycles_per_sample=cyc / B, schedule=schedule, **steady, **after_first,
                    # lower bound: FP and PG take H*W input beats and EB gives H*W outputs, one per cycle
                    ideal_cycles_per_sample=h * w,
                    **{f"idle_{st}": round(sum(v) / len(v), 4) for st, v in idle.items()},
                    idle_any_stage=round(sum(sum(v) / len(v) for v in idle.values()) / 3, 4),
                    idle_per_node={st: [round(x, 4) for x in v] for st, v in idle.items()})

    async def finish(self, settle=30):
        await ClockCycles(self.clk, settle)
        for m in self.mons:
            assert m.protocol_errors == 0, f"{m}: {m.protocol_errors} AXI4-Stream hold violations"
        for s in self.all_sources():
            assert not s._sendQ, f"{s.prefix}: input left unconsumed"
        self.sb.check()
