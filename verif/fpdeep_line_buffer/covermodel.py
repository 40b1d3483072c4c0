"""Functional coverage model of fpdeep_line_buffer (testplan: verif/fpdeep_line_buffer/testplan.yaml);
built and sampled by verif/fpdeep_cov.py (observer on the DUT pins)."""
from __future__ import annotations

from verif.fpdeep_cov import observe, pad_bins, size_bins, stage_model
from verif.funcov import CoverModel

CORE = "fpdeep_line_buffer"
ERRORS = ["bad_width", "bad_height", "bad_pad", "too_small"]
COV = CoverModel(CORE)
stage_model(CORE, ERRORS, {"width": size_bins(COV, "MAX_WIDTH"), "height": size_bins(COV, "MAX_HEIGHT"),
                           "pad": pad_bins(COV, "MAX_PAD")},
            ["s_axis_pix"], ["m_axis_win"])


def cause(c):
    p = COV.p
    if not 1 <= c["width"] <= p["MAX_WIDTH"]:
        return "bad_width"
    if not 1 <= c["height"] <= p["MAX_HEIGHT"]:
        return "bad_height"
    if c["pad"] > p["MAX_PAD"]:
        return "bad_pad"
    if c["width"] + 2 * c["pad"] < p["K"] or c["height"] + 2 * c["pad"] < p["K"]:
        return "too_small"
    return None


def out_shape(c):
    K = COV.p["K"]
    return c["height"], c["width"], c["height"] + 2 * c["pad"] - K + 1, c["width"] + 2 * c["pad"] - K + 1


def start(dut):
    return observe(COV, dut, ["width", "height", "pad"], cause, ["s_axis_pix"], ["m_axis_win"], out_shape,
                   "MAX_HEIGHT", "MAX_WIDTH")
