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
    "dot_sigmoid": (("s_axis_a", "s_axis_b"), "sigmoid"),
    "scalar_engine": (("s_axis_a", "s_axis_b"), "mode"),
}
OUTPUT = {"dot_sigmoid": "m_axis_res", "scalar_engine": "m_axis_res"}


def model(core: str) -> CoverModel:
    cov = CoverModel(core)
    if cov.points:
        return cov
    if core == "scalar_engine":
        return _scalar_engine(cov)
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
    declare_flow(cov, OUTPUT.get(core, "m_axis_y"), output=True)
    if core == "dot_sigmoid":
        declare_round_sat(cov, "dot")
    if knob == "sigmoid":
        cov.point("sigmoid_region", values=["below", "inside", "above"],
                  doc="PWL sigmoid input: clamped below -range, on a segment, clamped at/above +range")
        cov.point("sigmoid_round", values=["exact", "down", "up", "tie_pos"],
                  doc="PWL sigmoid: rounding of slope*offset (both are never negative: no negative tie)")
    else:
        declare_round_sat(cov, "mul")
    if core != "dot_sigmoid":
        declare_sat(cov, "sub")
    return cov


def _scalar_engine(cov: CoverModel) -> CoverModel:
    cov.point("iterations", field_bins(cov, "MAX_ITER"), "cfg_iterations of an accepted legal start")
    cov.point("mode", values=[0, 1], doc="cfg_mode of an accepted start (0 SGD, 1 SCD)")
    cov.point("alpha", field_bins(cov, signed=True), "cfg_alpha of an accepted start")
    cov.point("alpha_lambda", field_bins(cov, signed=True), "cfg_alpha_lambda of an accepted SCD start")
    declare_control(cov, ["iterations_zero", "iterations_above_max"])
    for s in ("s_axis_a", "s_axis_b"):
        declare_flow(cov, s, output=False)
    declare_flow(cov, "m_axis_res", output=True)
    declare_sat(cov, "sgd_sub")
    declare_round_sat(cov, "sgd_mul")
    declare_round_sat(cov, "scd_mul")
    declare_sat(cov, "scd_sub")
    cov.point("scd_branch", values=["above", "below", "inside"],
              doc="SCD soft threshold: d > al (mu = ag + al), d < -al (mu = ag - al), else mu = x")
    declare_sat(cov, "scd_mu")
    declare_sat(cov, "scd_out")
    return cov


def cause(p: dict):
    def why(c: dict):
        if "dimension" not in c:
            pass
        elif c["dimension"] == 0:
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
    if core == "scalar_engine":
        return _observe_scalar_engine(cov, dut)
    L, W, F = p["LANES"], p["W"], p["F"]
    fields = ["dimension", "iterations"] + ([knob] if knob in ("reg", "sigmoid") else [])
    streams = list(ins) + (["s_axis_s"] if knob == "scalar" else [])

    def sigmoid(z):
        """Sample the PWL sigmoid's points for inputs ``z`` (int64 array); its outputs."""
        from golden.fixedpoint import QFormat, sigmoid_fx, sigmoid_table
        t = sigmoid_table(QFormat(W, F))
        r = t.r_int
        for s in {"below" if v < -r else "above" if v >= r else "inside" for v in z.reshape(-1)}:
            cov.sample("sigmoid_region", s)
        zc = np.clip(z, -r, r - 1) + r
        off = zc & ((1 << t.shift) - 1)
        slope = np.asarray(t.slope, dtype=np.int64)[zc >> t.shift]
        inside = (z >= -r) & (z < r)
        sample_round(cov, "sigmoid", (slope * off)[inside].astype(object), F)
        return sigmoid_fx(z, t).astype(object)

    def on_done(cfg, beats):
        if core == "dot_sigmoid":
            return dot_done(cfg, beats)
        a, b = beats[ins[0]], beats[ins[1]]
        n = min(len(a), len(b))
        if n == 0:
            return
        A = unpack(a[:n], L, W).astype(object)
        B = unpack(b[:n], L, W).astype(object)
        hi, lo = (1 << (W - 1)) - 1, -(1 << (W - 1))
        if knob == "sigmoid":
            s_val = sigmoid(A.astype(np.int64)) if cfg["sigmoid"] else A
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

    def dot_done(cfg, beats):
        a, b = beats[ins[0]], beats[ins[1]]
        d = cfg["dimension"]
        n = min(len(a), len(b)) // d * d
        if n == 0:
            return
        A = unpack(a[:n], L, W).astype(object).reshape(n // d, d * L)
        B = unpack(b[:n], L, W).astype(object).reshape(n // d, d * L)
        acc = (A * B).sum(axis=1)                      # exact sum per iteration
        sample_round(cov, "dot", acc, F)
        r = (acc + (1 << (F - 1))) // (1 << F)
        sample_sat(cov, "dot", r, W)
        if cfg["sigmoid"]:
            hi, lo = (1 << (W - 1)) - 1, -(1 << (W - 1))
            sigmoid(np.array([min(max(int(v), lo), hi) for v in r], dtype=np.int64))

    return SubroutineObserver(cov, dut, fields, cause(p), streams, [OUTPUT.get(core, "m_axis_y")], on_done,
                              signed_fields=("reg",) if knob == "reg" else ())


def _observe_scalar_engine(cov: CoverModel, dut) -> SubroutineObserver:
    p = cov.p
    W, F = p["W"], p["F"]
    hi, lo = (1 << (W - 1)) - 1, -(1 << (W - 1))
    sat = lambda v: min(max(int(v), lo), hi)
    rnd = lambda P: (P + (1 << (F - 1))) // (1 << F)

    def why(c):
        if c["iterations"] == 0:
            return "iterations_zero"
        if c["iterations"] > p["MAX_ITER"]:
            return "iterations_above_max"
        return None

    def on_done(cfg, beats):
        a = [v - (1 << W) if v >> (W - 1) & 1 else v for v in beats["s_axis_a"]]
        b = [v - (1 << W) if v >> (W - 1) & 1 else v for v in beats["s_axis_b"]]
        n = min(len(a), len(b))
        if not n:
            return
        al, alpha = cfg["alpha_lambda"], cfg["alpha"]
        if cfg["mode"] == 0:                           # SGD: alpha * sat(a - b)
            diff = [a[i] - b[i] for i in range(n)]
            sample_sat(cov, "sgd_sub", diff, W)
            P = [alpha * sat(x) for x in diff]
            sample_round(cov, "sgd_mul", P, F)
            sample_sat(cov, "sgd_mul", [rnd(x) for x in P], W)
            return
        cov.sample("alpha_lambda", al)
        P = [alpha * a[i] for i in range(n)]           # SCD: g = a, x = b
        sample_round(cov, "scd_mul", P, F)
        sample_sat(cov, "scd_mul", [rnd(x) for x in P], W)
        ag = [sat(rnd(x)) for x in P]
        d_ex = [b[i] - ag[i] for i in range(n)]
        sample_sat(cov, "scd_sub", d_ex, W)
        mu_ex, out_ex = [], []
        for i in range(n):
            d = sat(d_ex[i])
            if d > al:
                cov.sample("scd_branch", "above")
                mu_ex.append(ag[i] + al)
            elif d < -al:
                cov.sample("scd_branch", "below")
                mu_ex.append(ag[i] - al)
            else:
                cov.sample("scd_branch", "inside")
                mu_ex.append(b[i])
            out_ex.append(b[i] - sat(mu_ex[-1]))
        sample_sat(cov, "scd_mu", mu_ex, W)
        sample_sat(cov, "scd_out", out_ex, W)

    return SubroutineObserver(cov, dut, ["iterations", "mode", "alpha", "alpha_lambda"], why,
                              ["s_axis_a", "s_axis_b"], ["m_axis_res"], on_done,
                              signed_fields=("alpha", "alpha_lambda"), sample_fields=("iterations", "mode", "alpha"))
