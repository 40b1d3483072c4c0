"""Shared functional-coverage pieces of the FPDeep stage cores (fpdeep_line_buffer,
fpdeep_fp, fpdeep_eb, fpdeep_pg): their cover models are built by :func:`stage_model`
and sampled by a :class:`verif.funcov_tb.SubroutineObserver` on the DUT's pins (start
with busy, the cfg fields of every accepted start, cfg_err at done, the valid/ready
pattern of every stream) plus, at each error-free done, the map-size corners of the job
the DUT just finished and the sticky row/psum error pins; the arithmetic class of each
output beat (rounding, saturation) is queued with its expectation and sampled when the DUT
hands that beat over (:class:`ResultClasses`).
"""
from __future__ import annotations

from collections import deque

import numpy as np

from verif.funcov import CoverModel, enabled
from verif.funcov_tb import SubroutineObserver, declare_control, declare_flow, field_bins

CORNERS = ["out_1x1", "out_w1", "out_h1", "w_below_k", "h_below_k", "w_max", "h_max", "square", "wide", "tall"]


def stage_model(core: str, errors: list[str], fields: dict, inputs: list[str], outputs: list[str],
                sticky: tuple = ("row_err",)) -> CoverModel:
    """``fields``: cfg field -> bins (dict label -> predicate) or a list of values."""
    cov = CoverModel(core)
    if cov.points:
        return cov
    declare_control(cov, errors)
    for f, b in fields.items():
        if isinstance(b, dict):
            cov.point(f, b, doc=f"cfg_{f} of every accepted legal start")
        else:
            cov.point(f, values=b, doc=f"cfg_{f} of every accepted legal start")
    cov.point("map_corner", values=CORNERS,
              doc="finished job: output map 1x1 / one column / one row, input narrower or shorter than K "
                  "(padding makes it), width or height at its maximum, square / wide / tall maps")
    for s in sticky:
        cov.point(s, values=["clear", "set"], doc=f"{s} pin at done of a legal job")
    for s in inputs:
        declare_flow(cov, s, False)
    for s in outputs:
        declare_flow(cov, s, True)
    return cov


def size_bins(cov: CoverModel, key: str) -> dict:
    return field_bins(cov, key)


def pad_bins(cov: CoverModel, key: str | None = None) -> dict:
    """0, 1 and the largest legal pad (``key``: the parameter holding it, else K-1)."""
    mx = (lambda: cov.p[key]) if key else (lambda: cov.p["K"] - 1)
    return {"zero": lambda v: v == 0, "one": lambda v: v == 1, "max": lambda v: v == mx()}


def map_corners(cov: CoverModel, h: int, w: int, ho: int, wo: int, maxh: int, maxw: int):
    K = cov.p["K"]
    hits = set()
    if ho == 1 and wo == 1:
        hits.add("out_1x1")
    if wo == 1:
        hits.add("out_w1")
    if ho == 1:
        hits.add("out_h1")
    if w < K:
        hits.add("w_below_k")
    if h < K:
        hits.add("h_below_k")
    if w == maxw:
        hits.add("w_max")
    if h == maxh:
        hits.add("h_max")
    hits.add("square" if h == w else "wide" if w > h else "tall")
    for lb in hits:
        cov.sample("map_corner", lb)


def forward_cause(cov: CoverModel, c: dict, max_pad: int) -> str | None:
    """The configuration error a forward (K x K window, stride 1) job raises, first cause
    first, as the FP/PG/line-buffer datasheets order them; None for a legal job."""
    p = cov.p
    if not 1 <= c["width"] <= p["MAX_WIDTH"]:
        return "bad_width"
    if not 1 <= c["height"] <= p["MAX_HEIGHT"]:
        return "bad_height"
    if c["pad"] > max_pad:
        return "bad_pad"
    if c["width"] + 2 * c["pad"] < p["K"] or c["height"] + 2 * c["pad"] < p["K"]:
        return "too_small"
    return None


def forward_out_shape(cov: CoverModel, c: dict):
    """(h, w, ho, wo) of a legal forward job: the input map and the output map."""
    K = cov.p["K"]
    return c["height"], c["width"], c["height"] + 2 * c["pad"] - K + 1, c["width"] + 2 * c["pad"] - K + 1


def observe(cov: CoverModel, dut, fields: list[str], cause, inputs, outputs, out_shape,
            maxh_key: str, maxw_key: str, sticky: tuple = ("row_err",), signed_fields: tuple = ()):
    """Start the observer; ``out_shape(cfg) -> (h, w, ho, wo)`` of a legal job."""
    if not enabled():
        return None

    def on_done(cfg, beats):
        h, w, ho, wo = out_shape(cfg)
        map_corners(cov, h, w, ho, wo, cov.p[maxh_key], cov.p[maxw_key])
        for s in sticky:
            sig = getattr(dut, s)
            cov.sample(s, "set" if sig.value.is_resolvable and int(sig.value) else "clear")

    return SubroutineObserver(cov, dut, fields, cause, inputs, outputs, on_done=on_done,
                              signed_fields=signed_fields, keep_data=())


def _round_label(v: int, F: int) -> str:
    fr = v & ((1 << F) - 1)
    half = 1 << (F - 1)
    if fr == 0:
        return "exact"
    if fr != half:
        return "down" if fr < half else "up"
    return "tie_pos" if v > 0 else "tie_neg"


def round_sat_labels(exact, F: int, W: int, op: str, round_point: bool = True, relu: bool = False) -> list:
    """Per output beat (raster order of the (C, Ho, Wo) or (n,) array ``exact``: the
    unrounded value, scale 2**-2F), the (point, label) pairs of its lanes: ``<op>_round``
    (when ``round_point``), ``<op>_sat`` and, with ``relu``, ``relu_out`` clipped/passed."""
    a = np.asarray(exact, dtype=object)
    if a.ndim == 1:
        a = a.reshape(1, 1, -1)
    hi, lo = (1 << (W - 1)) - 1, -(1 << (W - 1))
    out = []
    for i in range(a.shape[1]):
        for j in range(a.shape[2]):
            labs = set()
            for c in range(a.shape[0]):
                v = int(a[c, i, j])
                y = ((v + (1 << (F - 1))) >> F) if round_point else v
                if round_point:
                    labs.add((f"{op}_round", _round_label(v, F)))
                labs.add((f"{op}_sat", "pos" if y > hi else "neg" if y < lo else "none"))
                if relu:
                    labs.add(("relu_out", "clipped" if min(max(y, lo), hi) < 0 else "passed"))
            out.append(sorted(labs))
    return out


class ResultClasses:
    """Labels of each expected output beat of one stream, sampled when the testbench's
    monitor sees that beat (results come out in order; ``clear`` on a reset)."""

    def __init__(self, cov: CoverModel, mon):
        self.cov = cov
        self.q = deque()
        self.seen: set = set()
        if enabled():
            mon.add_callback(self._beat)

    def expect(self, beats: list):
        if enabled():
            self.q.extend(beats)

    def clear(self):
        self.q.clear()

    def _beat(self, _txn):
        if not self.q:
            return
        for key in self.q.popleft():
            if key not in self.seen:
                self.seen.add(key)
                self.cov.sample(*key)


def declare_round_sat(cov: CoverModel, op: str, doc: str, round_point: bool = True):
    if round_point and f"{op}_round" not in cov.points:
        cov.point(f"{op}_round", values=["exact", "down", "up", "tie_pos", "tie_neg"],
                  doc=f"{doc}: discarded fraction at the one rounding point (round half up)")
    if f"{op}_sat" not in cov.points:
        cov.point(f"{op}_sat", values=["none", "pos", "neg"], doc=f"{doc}: saturated high / low")


def _sat(v, W):
    hi, lo = (1 << (W - 1)) - 1, -(1 << (W - 1))
    return "pos" if v > hi else "neg" if v < lo else "none"


def minibatch_labels(xs, es, w, b, lr_q: int, K: int, pad: int, F: int, W: int) -> list:
    """One entry with the (point, label) classes of a PG mini-batch: per-sample gradient
    rounding/saturation (``grad_*``), bias-gradient saturation (``bgrad_sat``), the update
    step (``step_*``) and the updated parameter (``param_sat``)."""
    from golden.conv import pad_map
    labs = set()
    hi, lo = (1 << (W - 1)) - 1, -(1 << (W - 1))
    clip = lambda v: min(max(int(v), lo), hi)  # noqa: E731
    gsw = np.zeros(np.asarray(w).shape, dtype=object)
    gsb = np.zeros(len(b), dtype=object)
    for x, e in zip(xs, es):
        x, e = np.asarray(x, dtype=np.int64), np.asarray(e, dtype=np.int64)
        O, ho, wo = e.shape
        C = x.shape[0]
        v = np.lib.stride_tricks.sliding_window_view(pad_map(x, pad), (ho, wo), axis=(1, 2))
        acc = (e.reshape(O, -1).astype(object) @ v.reshape(C * K * K, ho * wo).astype(object).T).reshape(O, C, K, K)
        for a in acc.reshape(-1):
            labs.add(("grad_round", _round_label(int(a), F)))
            labs.add(("grad_sat", _sat((int(a) + (1 << (F - 1))) >> F, W)))
        gsw = gsw + np.array([clip((int(a) + (1 << (F - 1))) >> F) for a in acc.reshape(-1)],
                             dtype=object).reshape(acc.shape)
        for s in e.reshape(O, -1).astype(object).sum(axis=1):
            labs.add(("bgrad_sat", _sat(int(s), W)))
        gsb = gsb + np.array([clip(s) for s in e.reshape(O, -1).astype(object).sum(axis=1)], dtype=object)
    for g, p in ((gsw.reshape(-1), np.asarray(w).reshape(-1)), (gsb, np.asarray(b).reshape(-1))):
        for gi, pi in zip(g, p):
            t = int(gi) * lr_q
            labs.add(("step_round", _round_label(t, F)))
            labs.add(("step_sat", _sat((t + (1 << (F - 1))) >> F, W)))
            labs.add(("param_sat", _sat(int(pi) - clip((t + (1 << (F - 1))) >> F), W)))
    return [sorted(labs)]
