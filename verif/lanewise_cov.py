"""Cover models of the lane-parallel PipeArch cores (l2reg, multiply_subtract,
sigmoid_delta) and the observer that samples them (``verif/lanewise_suite.py`` starts
it in every test).  Each core's ``verif/<core>/covermodel.py`` calls :func:`model`.

Points (``<core>.<point>``):

* ``dimension``, ``iterations``: cfg fields of accepted legal starts at 1, between, max;
* ``reg`` (l2reg cfg word) / ``scalar`` (multiply_subtract s_axis_s words): zero, +-LSB,
  +-1.0, min, max, positive, negative; ``sigmoid`` (sigmoid_delta): 0 / 1;
* ``start``, ``busy``, ``start_x_busy``, ``outcome`` (every cfg_err cause);
* ``<stream>_flow`` for each input and the output stream (bubbles, backpressure);
* arithmetic per operator, from the accepted input beats of each completed job:
  ``mul_round``/``mul_sat`` and ``sub_sat`` (l2reg, multiply_subtract), ``sigmoid_region``,
  ``sigmoid_round`` and ``sub_sat`` (sigmoid_delta).
"""
from __future__ import annotations

import numpy as np

from verif.funcov import CoverModel, enabled
from verif.funcov_tb import (SubroutineObserver, declare_control, declare_flow, declare_round_sat, declare_sat,
                             field_bins, sample_round, sample_sat, unpack)

ERRORS = ["dimension_zero", "dimension_above_max", "iterations_zero", "iterations_above_max"]
SPEC = {  # core -> (inputs, knob)
    "l2reg": (("s_axis_x", "s_axis_xold"), "reg"),
    "multiply_subtract": (("s_axis_x", "s_axis_a"), "scalar"),
    "sigmoid_delta": (("s_axis_z", "s_axis_b"), "sigmoid"),
}


def model(core: str) -> CoverModel:
    cov = CoverModel(core)
    if cov.points:
        return cov
    ins, knob = SPEC[core]
    cov.point("dimension", field_bins(cov, "MAX_DIM"), "cfg_dimension of an accepted legal start")
    cov.point("iterations", field_bins(cov, "MAX_ITER"), "cfg_iterations of an accepted legal start")
    if knob == "sigmoid":
        cov.point("sigmoid", values=[0, 1], doc="cfg_sigmoid of an accepted start (identity / PWL sigmoid)")
    else:
        cov.point(knob, field_bins(cov, signed=True),
                  "cfg_reg of an accepted start" if knob == "reg" else "each s_axis_s word consumed")
    declare_control(cov, ERRORS)
    for s in ins + (("s_axis_s",) if knob == "scalar" else ()):
        declare_flow(cov, s, output=False)
    declare_flow(cov, "m_axis_y", output=True)
    if knob == "sigmoid":
        cov.point("sigmoid_region", values=["below", "inside", "above"],
                  doc="PWL sigmoid input: clamped below -range, on a segment, clamped at/above +range")
        cov.point("sigmoid_round", values=["exact", "down", "up", "tie_pos"],
                  doc="PWL sigmoid: rounding of slope*offset (both are never negative: no negative tie)")
    else:
        declare_round_sat(cov, "mul")
    declare_sat(cov, "sub")
    return cov


def cause(p: dict):
    def why(c: dict):
        if c["dimension"] == 0:
            return "dimension_zero"
        if c["dimension"] > p["MAX_DIM"]:
            return "dimension_above_max"
        if c["iterations"] == 0:
            return "iterations_zero"
        if c["iterations"] > p["MAX_ITER"]:
            return "iterations_above_max"
        return None
    return why


def observe(core: str, dut) -> SubroutineObserver:
    """Start the observer of ``core`` on ``dut`` (one per cocotb test; ``MLACCEL_FUNCOV=0``:
    none, to measure its cost)."""
    if not enabled():
        return None
    cov = model(core)
    p = cov.p
    ins, knob = SPEC[core]
    L, W, F = p["LANES"], p["W"], p["F"]
    fields = ["dimension", "iterations"] + ([knob] if knob in ("reg", "sigmoid") else [])
    streams = list(ins) + (["s_axis_s"] if knob == "scalar" else [])

    def on_done(cfg, beats):
        a, b = beats[ins[0]], beats[ins[1]]
        n = min(len(a), len(b))
        if n == 0:
            return
        A = unpack(a[:n], L, W).astype(object)
        B = unpack(b[:n], L, W).astype(object)
        hi, lo = (1 << (W - 1)) - 1, -(1 << (W - 1))
        if knob == "sigmoid":
            from golden.fixedpoint import QFormat, sigmoid_fx, sigmoid_table
            fmt = QFormat(W, F)
            if cfg["sigmoid"]:
                t = sigmoid_table(fmt)
                z = A.astype(np.int64)
                r = t.r_int
                reg = {"below" if v < -r else "above" if v >= r else "inside" for v in z.reshape(-1)}
                for s in reg:
                    cov.sample("sigmoid_region", s)
                zc = np.clip(z, -r, r - 1) + r
                off = zc & ((1 << t.shift) - 1)
                slope = np.asarray(t.slope, dtype=np.int64)[zc >> t.shift]
                inside = (z >= -r) & (z < r)
                sample_round(cov, "sigmoid", (slope * off)[inside].astype(object), F)
                s_val = sigmoid_fx(z, t).astype(object)
            else:
                s_val = A
            sample_sat(cov, "sub", s_val - B, W)
            return
        if knob == "reg":
            k = np.full((n, 1), cfg["reg"], dtype=object)
        else:
            ss = [v - (1 << W) if v >> (W - 1) & 1 else v for v in beats["s_axis_s"]]
            for v in set(ss):
                cov.sample("scalar", v)
            d = cfg["dimension"]
            if len(ss) * d < n:
                return
            k = np.array([[ss[i // d]] for i in range(n)], dtype=object)
        P = k * B
        sample_round(cov, "mul", P, F)
        m = (P + (1 << (F - 1))) // (1 << F)        # round half up: floor((P + half) / 2**F)
        sample_sat(cov, "mul", m, W)
        ms = np.vectorize(lambda v: min(max(v, lo), hi), otypes=[object])(m)
        sample_sat(cov, "sub", A - ms, W)

    return SubroutineObserver(cov, dut, fields, cause(p), streams, ["m_axis_y"], on_done,
                              signed_fields=("reg",) if knob == "reg" else ())
