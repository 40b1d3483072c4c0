"""Functional coverage model of fpdeep_line_buffer (testplan: verif/fpdeep_line_buffer/testplan.yaml);
built and sampled by verif/fpdeep_cov.py (observer on the DUT pins)."""
from __future__ import annotations

from verif.fpdeep_cov import forward_cause, forward_out_shape, observe, pad_bins, size_bins, stage_model
from verif.funcov import CoverModel

CORE = "fpdeep_line_buffer"
ERRORS = ["bad_width", "bad_height", "bad_pad", "too_small"]
COV = CoverModel(CORE)
stage_model(CORE, ERRORS, {"width": size_bins(COV, "MAX_WIDTH"), "height": size_bins(COV, "MAX_HEIGHT"),
                           "pad": pad_bins(COV, "MAX_PAD")},
            ["s_axis_pix"], ["m_axis_win"])


def cause(c):
    return forward_cause(COV, c, COV.p["MAX_PAD"])


def out_shape(c):
    return forward_out_shape(COV, c)


def start(dut):
    return observe(COV, dut, ["width", "height", "pad"], cause, ["s_axis_pix"], ["m_axis_win"], out_shape,
                   "MAX_HEIGHT", "MAX_WIDTH")
