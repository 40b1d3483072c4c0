"""Functional coverage model of fpdeep_fp (testplan: verif/fpdeep_fp/testplan.yaml).

Control, fields, map corners, sticky errors and pixel/psum/output stream patterns are
sampled by the pin observer of verif/fpdeep_cov.py; filter/bias loads (taken while idle) by
verif/stream_cov.FlowObserver; each output beat's class (last node: rounding, saturation
and ReLU of psum + partial + bias; other nodes: psum_out saturation) is queued with its
expectation and sampled when the DUT hands that beat over (verif/fpdeep_cov.ResultClasses)."""
from __future__ import annotations

from verif.fpdeep_cov import forward_cause, forward_out_shape, ResultClasses, declare_round_sat, observe, pad_bins, round_sat_labels, size_bins, stage_model
from verif.funcov import CoverModel
from verif.stream_cov import FlowObserver

CORE = "fpdeep_fp"
ERRORS = ["bad_width", "bad_height", "bad_pad", "too_small"]
IN, OUT, LOADS = ["s_axis_pix", "s_axis_psum_in"], ["m_axis_act", "m_axis_psum_out"], ["s_axis_w", "s_axis_b"]
COV = CoverModel(CORE)
if not COV.points:
    stage_model(CORE, ERRORS, {"width": size_bins(COV, "MAX_WIDTH"), "height": size_bins(COV, "MAX_HEIGHT"),
                               "pad": pad_bins(COV, "MAX_PAD"), "first": [0, 1], "last": [0, 1], "relu": [0, 1]},
                IN + LOADS, OUT, sticky=("row_err", "psum_err"))
    declare_round_sat(COV, "act", "last node: psum_in + partial + (bias << F), one rounding, one saturation")
    declare_round_sat(COV, "psum", "psum_out: psum_in + partial saturated to PSUM_W bits", round_point=False)
    COV.point("relu_out", values=["clipped", "passed"], doc="ReLU on: a negative activation clipped to 0, a positive passed")


def cause(c):
    return forward_cause(COV, c, COV.p["MAX_PAD"])


def out_shape(c):
    return forward_out_shape(COV, c)


def start(dut, mon_act, mon_ps):
    observe(COV, dut, ["width", "height", "pad", "first", "last", "relu"], cause, IN, OUT, out_shape,
            "MAX_HEIGHT", "MAX_WIDTH", sticky=("row_err", "psum_err"))
    FlowObserver(COV, dut, inputs=LOADS)
    return ResultClasses(COV, mon_act), ResultClasses(COV, mon_ps)


def labels(exact, last: bool, relu: bool, F: int, W: int, PS: int) -> list:
    """Per output beat (raster order): ``exact`` (S_OC, Ho, Wo) unrounded sums (scale 2**-2F)."""
    if last:
        return round_sat_labels(exact, F, W, "act", relu=relu)
    return round_sat_labels(exact, F, PS, "psum", round_point=False)
