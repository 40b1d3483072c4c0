"""Functional coverage model of fpdeep_pg (testplan: verif/fpdeep_pg/testplan.yaml).

Control, fields (lr signed), map corners, the row_err pin and activation/error/output
stream patterns are sampled by the pin observer of verif/fpdeep_cov.py; parameter loads
(taken while idle) by verif/stream_cov.FlowObserver.  The arithmetic of a mini-batch --
per-sample gradient rounding/saturation, bias-gradient saturation, the update step's
rounding/saturation and the parameter's saturation -- is classified from the beats the
testbench queued and sampled when the DUT hands over the mini-batch's bias beat (its last
output; the scoreboard compares every updated word)."""
from __future__ import annotations

from verif.fpdeep_cov import (ResultClasses, forward_cause, forward_out_shape, declare_round_sat, minibatch_labels, observe, pad_bins, size_bins,
                              stage_model)
from verif.funcov import CoverModel
from verif.stream_cov import FlowObserver

CORE = "fpdeep_pg"
ERRORS = ["bad_width", "bad_height", "bad_pad", "too_small", "bad_batch", "bad_lr"]
IN, OUT, LOADS = ["s_axis_x", "s_axis_err"], ["m_axis_w", "m_axis_b"], ["s_axis_w", "s_axis_b"]
COV = CoverModel(CORE)
if not COV.points:
    stage_model(CORE, ERRORS, {"width": size_bins(COV, "MAX_WIDTH"), "height": size_bins(COV, "MAX_HEIGHT"),
                               "pad": pad_bins(COV), "batch": size_bins(COV, "MAX_BATCH"),
                               "lr": {"lsb": lambda v: v == 1, "mid": lambda v: 1 < v < (1 << (COV.p["W"] - 1)) - 1,
                                      "max": lambda v: v == (1 << (COV.p["W"] - 1)) - 1}},
                IN + LOADS, OUT, sticky=("row_err",))
    declare_round_sat(COV, "grad", "per-sample filter gradient (exact sum of products, one rounding)")
    declare_round_sat(COV, "bgrad", "per-sample bias gradient (exact sum of error words)", round_point=False)
    declare_round_sat(COV, "step", "update step lr_q * sum of gradients (one rounding)")
    declare_round_sat(COV, "param", "updated parameter w - step", round_point=False)


def cause(c):
    why = forward_cause(COV, c, COV.p["K"] - 1)
    if why is None and not 1 <= c["batch"] <= COV.p["MAX_BATCH"]:
        return "bad_batch"
    if why is None and c["lr"] <= 0:
        return "bad_lr"
    return why


def out_shape(c):
    return forward_out_shape(COV, c)


def start(dut, mon_b):
    observe(COV, dut, ["width", "height", "pad", "batch", "lr"], cause, IN, OUT, out_shape,
            "MAX_HEIGHT", "MAX_WIDTH", sticky=("row_err",), signed_fields=("lr",))
    FlowObserver(COV, dut, inputs=LOADS)
    return ResultClasses(COV, mon_b)


def labels(xs, es, w, b, lr_q: int, K: int, pad: int, F: int, W: int) -> list:
    """One entry (for the bias beat) with the classes of a whole mini-batch."""
    return minibatch_labels(xs, es, w, b, lr_q, K, pad, F, W)
