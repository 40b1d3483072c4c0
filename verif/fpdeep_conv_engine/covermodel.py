"""Functional coverage model of fpdeep_conv_engine (testplan: verif/fpdeep_conv_engine/testplan.yaml).

Each window beat's class (tuser mode and bias, tlast, and in rounded mode the rounding and
saturation of every engine's exact sum) is queued with its expectation and sampled when the
DUT hands over that result (verif/fpdeep_cov.ResultClasses on the result monitor); stream
patterns come from verif/stream_cov.FlowObserver on the pins."""
from __future__ import annotations

from verif.fpdeep_cov import ResultClasses, declare_round_sat, round_sat_labels
from verif.funcov import CoverModel
from verif.funcov_tb import declare_flow
from verif.stream_cov import FlowObserver

COV = CoverModel("fpdeep_conv_engine")
if not COV.points:
    declare_round_sat(COV, "res", "rounded-mode result of an engine (S_IC tiles summed exactly, + bias)")
    COV.point("tuser", values=["word", "partial", "word_bias", "partial_bias"],
              doc="window tuser: rounded word / exact sum, without / with the bias")
    COV.point("tlast", values=[0, 1], doc="tlast passed from the window to its result")
    COV.point("load", values=["filters", "bias"], doc="filter set and bias beat loads taken")
    for s in ("s_axis_win", "s_axis_w", "s_axis_b"):
        declare_flow(COV, s, False)
    declare_flow(COV, "m_axis_res", True)

USER = ["word", "partial", "word_bias", "partial_bias"]


def start(dut, mon):
    FlowObserver(COV, dut, inputs=["s_axis_win", "s_axis_w", "s_axis_b"], outputs=["m_axis_res"])
    return ResultClasses(COV, mon)


def labels(exact, user: int, last: int, F: int, W: int) -> list:
    """(point, label) pairs of one window beat's result (``exact``: the S_OC exact sums)."""
    labs = [("tuser", USER[user & 3]), ("tlast", int(last))]
    if not user & 1:
        labs += round_sat_labels(list(exact), F, W, "res")[0]
    return labs
