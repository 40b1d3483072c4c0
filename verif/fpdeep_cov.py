"""Shared functional-coverage pieces of the FPDeep stage cores (fpdeep_line_buffer,
fpdeep_fp, fpdeep_eb, fpdeep_pg): their cover models are built by :func:`stage_model`
and sampled by a :class:`verif.funcov_tb.SubroutineObserver` on the DUT's pins (start
with busy, the cfg fields of every accepted start, cfg_err at done, the valid/ready
pattern of every stream) plus, at each error-free done, the map-size corners of the job
the DUT just finished and the sticky row/psum error pins; output words are classified
(rails, zero) from the handshakes the testbench's monitors saw.
"""
from __future__ import annotations

from verif.funcov import CoverModel, enabled
from verif.funcov_tb import SubroutineObserver, declare_control, declare_flow, field_bins

CORNERS = ["out_1x1", "out_w1", "out_h1", "w_below_k", "h_below_k", "w_max", "h_max", "square", "wide", "tall"]


def stage_model(core: str, errors: list[str], fields: dict, inputs: list[str], outputs: list[str],
                sticky: tuple = ("row_err",), words: tuple = ()) -> CoverModel:
    """``fields``: cfg field -> bins (dict label -> predicate) or a list of values.
    ``words``: output streams whose words are classified (``<stream>_word``)."""
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
    for s in words:
        cov.point(f"{s}_word", values=["max", "min", "zero", "positive", "negative"],
                  doc=f"{s}: a lane at the positive / negative rail (saturated), zero, other signs")
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


class WordSampler:
    """Callback for a monitor: classify each lane of an output beat once per label."""

    def __init__(self, cov: CoverModel, stream: str, lanes: int, width: int):
        self.cov, self.pt = cov, f"{stream}_word"
        self.lanes, self.w = lanes, width
        self.todo = set(cov.points[self.pt].labels)

    def __call__(self, txn):
        if not self.todo:
            return
        data = txn[0] if isinstance(txn, tuple) else txn
        m, top = (1 << self.w) - 1, 1 << (self.w - 1)
        for j in range(self.lanes):
            v = (int(data) >> (j * self.w)) & m
            v = v - (1 << self.w) if v & top else v
            lb = "max" if v == top - 1 else "min" if v == -top else "zero" if v == 0 else \
                "positive" if v > 0 else "negative"
            for x in ([lb] + (["positive"] if lb == "max" else ["negative"] if lb == "min" else [])):
                if x in self.todo:
                    self.todo.discard(x)
                    self.cov.sample(self.pt, x)


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
