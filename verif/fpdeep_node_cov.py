"""Functional coverage of fpdeep_node and fpdeep_node_chain (node 0 of the chain): the model
factory, the pin observer and the per-beat class queues the shared NodeTB
(verif/fpdeep_node/node_tb.py) uses; each core's covermodel.py declares its model from here.

Sampled on the DUT: :class:`NodeObserver` watches at the falling edge (what the DUT sees at
the next rising edge) fwd_start/bwd_start with fwd_busy/bwd_busy (taken or ignored, FWD and
BWD in the same cycle), the cfg fields of every accepted legal start, cfg_err (cause) /
row_err / psum_err at each fwd_done/bwd_done, and which stages stage_busy shows working
together; verif/stream_cov.FlowObserver the valid/ready patterns of the node-0 streams.  The
arithmetic classes (the last node's activation rounding/saturation/ReLU, node 0's input-error
rounding/saturation, node 0's gradient/update rounding and saturation) are queued with the
expectations and sampled when the DUT hands over the corresponding beat
(verif/fpdeep_cov.ResultClasses).
"""
from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly

from verif.fpdeep_cov import (ResultClasses, declare_round_sat, map_corners, minibatch_labels, pad_bins,
                              round_sat_labels, size_bins, CORNERS)
from verif.funcov import CoverModel, enabled
from verif.funcov_tb import declare_flow
from verif.stream_cov import FlowObserver

CAUSES = ["bad_width", "bad_height", "bad_pad", "too_small", "bad_sample", "bad_batch", "bad_lr"]
STAGES = ["fp", "eb", "pg", "fp_eb", "fp_pg", "eb_pg", "fp_eb_pg"]


def streams(single: bool, pre: str):
    ins = [pre + "s_axis_pix", "s_axis_berr"] + (["s_axis_psum_in"] if single else [])
    outs = ["m_axis_act", pre + "m_axis_ein", pre + "m_axis_pw", pre + "m_axis_pb"]
    outs += ["m_axis_psum_out", "m_axis_berr"] if single else []
    return ins, outs, [pre + "s_axis_w", pre + "s_axis_b"]


def node_model(core: str, single: bool, pre: str) -> CoverModel:
    cov = CoverModel(core)
    if cov.points:
        return cov
    cov.point("op", values=["fwd", "bwd"], doc="fwd_start / bwd_start pulse")
    cov.point("busy", values=["idle", "busy"], doc="fwd_busy (FWD) / bwd_busy (BWD) in the cycle of the start")
    cov.cross("start_x_busy", ["op", "busy"], doc="FWD and BWD starts taken while idle and ignored while busy")
    cov.point("together", values=["fwd_only", "bwd_only", "fwd_and_bwd"],
              doc="starts taken in one cycle: FWD alone, BWD alone, FWD of sample b+1 with BWD of sample b")
    cov.point("outcome", values=["ok"] + CAUSES, doc="fwd_done/bwd_done: cfg_err clear, or set for each cause")
    cov.point("width", size_bins(cov, "MAX_WIDTH"), doc="cfg_width of every accepted legal start")
    cov.point("height", size_bins(cov, "MAX_HEIGHT"), doc="cfg_height of every accepted legal start")
    cov.point("pad", pad_bins(cov), doc="cfg_pad of every accepted legal start")
    cov.point("batch", size_bins(cov, "MAX_BATCH"), doc="cfg_batch of a BWD opening a mini-batch")
    cov.point("sample", {"first": lambda v: v == 0, "mid": lambda v: 0 < v < cov.p["MAX_BATCH"] - 1,
                         "last": lambda v: v == cov.p["MAX_BATCH"] - 1},
              doc="cfg_fsample / cfg_bsample (activation RAM region) of accepted starts")
    cov.point("relu", values=[0, 1], doc="cfg_relu of accepted FWD starts")
    if single:
        for f in ("first", "last", "bend"):
            cov.point(f, values=[0, 1], doc=f"cfg_{f} of accepted starts (chain position)")
    cov.point("map_corner", values=CORNERS, doc="map-size and padding corners of finished FWD ops")
    for s in ("row_err", "psum_err"):
        cov.point(s, values=["clear", "set"], doc=f"{s} pin at done of a legal op")
    cov.point("stages", values=STAGES, doc="stage_busy: the stages seen working at the same time")
    ins, outs, loads = streams(single, pre)
    for s in ins + loads:
        declare_flow(cov, s, False)
    for s in outs:
        declare_flow(cov, s, True)
    declare_round_sat(cov, "act", "last node activation: one rounding of the layer's exact sum + bias")
    cov.point("relu_out", values=["clipped", "passed"], doc="ReLU on: negative activation clipped, positive passed")
    declare_round_sat(cov, "ein", "node 0 input errors: one rounding of the exact back-propagated sum")
    declare_round_sat(cov, "grad", "node 0 per-sample filter gradient (one rounding)")
    declare_round_sat(cov, "bgrad", "per-sample bias gradient", round_point=False)
    declare_round_sat(cov, "step", "update step lr_q * gradient sum (one rounding)")
    declare_round_sat(cov, "param", "updated parameter w - step", round_point=False)
    return cov


class NodeObserver:
    def __init__(self, cov: CoverModel, dut, single: bool, pre: str):
        self.cov, self.dut, self.single, self.pre = cov, dut, single, pre
        self.fields = {f: getattr(dut, f"cfg_{f}") for f in ("width", "height", "pad", "batch", "lr", "relu",
                                                          "fsample", "bsample") + (("first", "last", "bend") if single else ())}
        self.pend = {"fwd": None, "bwd": None}
        self.open_left = 0          # BWD ops left in the open mini-batch
        self.seen_stage = set()
        cocotb.start_soon(self._watch())

    def sig(self, n):
        return getattr(self.dut, self.pre + n)

    def _cfg(self):
        c = {f: (int(s.value) if s.value.is_resolvable else None) for f, s in self.fields.items()}
        lw = len(self.fields["lr"])
        if c["lr"] is not None and c["lr"] >> (lw - 1):
            c["lr"] -= 1 << lw
        return c

    def cause(self, op, c):
        p, K = self.cov.p, self.cov.p["K"]
        need = ["width", "height", "pad", "fsample" if op == "fwd" else "bsample"]
        need += ["relu"] if op == "fwd" else (["batch", "lr"] if self.open_left == 0 else [])
        need += ["first", "last", "bend"] if self.single else []
        if any(c[f] is None for f in need):
            return "unknown"                 # a field left undriven (X): not classified
        if not 1 <= c["width"] <= p["MAX_WIDTH"]:
            return "bad_width"
        if not 1 <= c["height"] <= p["MAX_HEIGHT"]:
            return "bad_height"
        if c["pad"] > K - 1:
            return "bad_pad"
        if c["width"] + 2 * c["pad"] < K or c["height"] + 2 * c["pad"] < K:
            return "too_small"
        if c["fsample" if op == "fwd" else "bsample"] >= p["MAX_BATCH"]:
            return "bad_sample"
        if op == "bwd" and self.open_left == 0:
            if not 1 <= c["batch"] <= p["MAX_BATCH"]:
                return "bad_batch"
            if c["lr"] <= 0:
                return "bad_lr"
        return None

    async def _watch(self):
        d, cov = self.dut, self.cov
        fs, bs = d.fwd_start, d.bwd_start
        fb, bb = self.sig("fwd_busy"), self.sig("bwd_busy")
        fdn, bdn, err = self.sig("fwd_done"), self.sig("bwd_done"), self.sig("cfg_err")
        st = self.sig("stage_busy")
        fe, ro = FallingEdge(d.clk), ReadOnly()
        while True:
            await fe
            await ro
            if not d.rst.value.is_resolvable or int(d.rst.value):
                self.pend = {"fwd": None, "bwd": None}
                self.open_left = 0
                continue
            taken = []
            for op, s, b in (("fwd", fs, fb), ("bwd", bs, bb)):
                if not (s.value.is_resolvable and int(s.value)):
                    continue
                busy = int(b.value) if b.value.is_resolvable else 0
                cov.sample_cross("start_x_busy", op, "busy" if busy else "idle")
                if busy:
                    continue
                c = self._cfg()
                why = self.cause(op, c)
                self.pend[op] = (c, why) if why != "unknown" else None
                taken.append(op)
                if why:
                    continue
                for f in ("width", "height", "pad"):
                    cov.sample(f, c[f])
                if op == "fwd":
                    cov.sample("sample", c["fsample"])
                    cov.sample("relu", c["relu"])
                else:
                    cov.sample("sample", c["bsample"])
                    if self.open_left == 0:
                        cov.sample("batch", c["batch"])
                        self.open_left = c["batch"]
                    self.open_left -= 1
                if self.single:
                    for f in ("first", "last", "bend"):
                        cov.sample(f, c[f])
            if taken:
                cov.sample("together", "fwd_and_bwd" if len(taken) == 2 else f"{taken[0]}_only")
            for op, dn in (("fwd", fdn), ("bwd", bdn)):
                if self.pend[op] is None or not (dn.value.is_resolvable and int(dn.value)):
                    continue
                c, why = self.pend[op]
                self.pend[op] = None
                e = int(err.value) if err.value.is_resolvable else 0
                if e and why:
                    cov.sample("outcome", why)
                elif not e and not why:
                    cov.sample("outcome", "ok")
                    for s in ("row_err", "psum_err"):
                        v = self.sig(s).value
                        cov.sample(s, "set" if v.is_resolvable and int(v) else "clear")
                    if op == "fwd":
                        K = cov.p["K"]
                        h, w = c["height"], c["width"]
                        map_corners(cov, h, w, h + 2 * c["pad"] - K + 1, w + 2 * c["pad"] - K + 1,
                                    cov.p["MAX_HEIGHT"], cov.p["MAX_WIDTH"])
            if len(self.seen_stage) < len(STAGES) and st.value.is_resolvable:
                v = int(st.value)
                names = [n for bit, n in enumerate(("fp", "eb", "pg")) if v >> bit & 1]
                if names:
                    lb = "_".join(names)
                    if lb not in self.seen_stage:
                        self.seen_stage.add(lb)
                        cov.sample("stages", lb)


class NodeCov:
    """What NodeTB holds: the observers and the per-beat class queues."""

    def __init__(self, core: str, dut, tb):
        self.single = tb.single
        self.pre = tb.pre(0)
        self.cov = node_model(core, self.single, self.pre)
        self.on = enabled()
        N = tb.N
        self.act = ResultClasses(self.cov, tb.mons[0])
        self.ein = ResultClasses(self.cov, tb.mons[1])
        self.pb = ResultClasses(self.cov, tb.mons[1 + 2 * N])
        if self.on:
            NodeObserver(self.cov, dut, self.single, self.pre)
            ins, outs, loads = streams(self.single, self.pre)
            FlowObserver(self.cov, dut, inputs=ins + loads, outputs=outs)

    def clear(self):
        for q in (self.act, self.ein, self.pb):
            q.clear()

    def batch(self, tb, xs, es, pad, lr_q, relu, first, last):
        """Queue the classes of one mini-batch (before tb.w/tb.b take the update)."""
        if not self.on:
            return
        from golden import conv
        fmt, F, W, S = tb.fmt, tb.F, tb.W, tb.S_IC
        for x, e in zip(xs, es):
            x, e = np.asarray(x, dtype=np.int64), np.asarray(e, dtype=np.int64)
            if first and last:
                ex = conv.fp_node(x, tb.w, None, False, pad=pad, fmt=fmt)
                ex = ex + (np.asarray(tb.b, dtype=np.int64).astype(object)[:, None, None] << F)
                self.act.expect(round_sat_labels(ex, F, W, "act", relu=relu))
            ein = conv.eb_node(e, tb.w, None, False, pad, fmt)[:S]
            self.ein.expect(round_sat_labels(ein, F, W, "ein"))
        xs0 = [np.asarray(x)[:S] for x in xs]
        self.pb.expect(minibatch_labels(xs0, es, np.asarray(tb.w)[:, :S], tb.b, lr_q, tb.K, pad, F, W))
