"""Functional coverage model of fpdeep_eb (testplan: verif/fpdeep_eb/testplan.yaml).

Control, fields, map corners, sticky errors and error/psum/output stream patterns are
sampled by the pin observer of verif/fpdeep_cov.py; filter loads (taken while idle) by
verif/stream_cov.FlowObserver; each output beat's class (last run: rounding and saturation
of psum + the run's exact sum; other runs: psum_out saturation) is queued with its
expectation and sampled when the DUT hands that beat over (verif/fpdeep_cov.ResultClasses)."""
from __future__ import annotations

from verif.fpdeep_cov import ResultClasses, declare_round_sat, observe, pad_bins, round_sat_labels, size_bins, stage_model
from verif.funcov import CoverModel
from verif.stream_cov import FlowObserver

CORE = "fpdeep_eb"
ERRORS = ["bad_width", "bad_height", "bad_pad", "too_small"]
IN, OUT, LOADS = ["s_axis_err", "s_axis_psum_in"], ["m_axis_err", "m_axis_psum_out"], ["s_axis_w"]
COV = CoverModel(CORE)
if not COV.points:
    stage_model(CORE, ERRORS, {"width": size_bins(COV, "MAX_WIDTH"), "height": size_bins(COV, "MAX_HEIGHT"),
                               "pad": pad_bins(COV), "first": [0, 1], "last": [0, 1]},
                IN + LOADS, OUT, sticky=("row_err", "psum_err"))
    declare_round_sat(COV, "err", "last run: psum_in + the run's exact sum, one rounding, one saturation")
    declare_round_sat(COV, "psum", "psum_out: psum_in + the run's exact sum saturated to PSUM_W bits", round_point=False)


def cause(c):
    p, K = COV.p, COV.p["K"]
    if not 1 <= c["width"] <= p["MAX_WIDTH"]:
        return "bad_width"
    if not 1 <= c["height"] <= p["MAX_HEIGHT"]:
        return "bad_height"
    if c["pad"] > K - 1:
        return "bad_pad"
    if c["width"] + K - 1 - 2 * c["pad"] < 1 or c["height"] + K - 1 - 2 * c["pad"] < 1:
        return "too_small"
    return None


def out_shape(c):
    """(error-map h, w, input-map H, W): the corners are taken on the error map in and the
    input-error map out."""
    K = COV.p["K"]
    return c["height"], c["width"], c["height"] + K - 1 - 2 * c["pad"], c["width"] + K - 1 - 2 * c["pad"]


def start(dut, mon_err, mon_ps):
    observe(COV, dut, ["width", "height", "pad", "first", "last"], cause, IN, OUT, out_shape,
            "MAX_HEIGHT", "MAX_WIDTH", sticky=("row_err", "psum_err"))
    FlowObserver(COV, dut, inputs=LOADS)
    return ResultClasses(COV, mon_err), ResultClasses(COV, mon_ps)


def labels(exact, last: bool, F: int, W: int, PS: int) -> list:
    if last:
        return round_sat_labels(exact, F, W, "err")
    return round_sat_labels(exact, F, PS, "psum", round_point=False)
