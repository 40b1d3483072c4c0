"""Functional coverage model of fpdeep_conv_tile (testplan: verif/fpdeep_conv_tile/testplan.yaml).

Each window's class (mode, tlast, and in mode 0 the rounding and saturation of its exact
sum) is queued with its expectation and sampled when the DUT hands over that result
(verif/fpdeep_cov.ResultClasses on the result monitor); the streams' valid/ready patterns
come from verif/stream_cov.FlowObserver on the pins."""
from __future__ import annotations

from verif.fpdeep_cov import ResultClasses, declare_round_sat, round_sat_labels
from verif.funcov import CoverModel
from verif.funcov_tb import declare_flow
from verif.stream_cov import FlowObserver

COV = CoverModel("fpdeep_conv_tile")
if not COV.points:
    declare_round_sat(COV, "res", "mode 0 result (9 products summed exactly)")
    COV.point("mode", values=["word", "partial"], doc="result mode (tuser): rounded word / exact partial sum")
    COV.point("tlast", values=[0, 1], doc="tlast passed from the window to its result")
    COV.point("filter_load", values=["idle", "between_windows"],
              doc="a filter beat taken with no window in flight / after windows (old filter for earlier ones)")
    for s in ("s_axis_win", "s_axis_w"):
        declare_flow(COV, s, False)
    declare_flow(COV, "m_axis_res", True)


def start(dut, mon):
    FlowObserver(COV, dut, inputs=["s_axis_win", "s_axis_w"], outputs=["m_axis_res"])
    return ResultClasses(COV, mon)


def labels(exact, mode: int, last: int, F: int, W: int) -> list:
    """(point, label) pairs of one window's result."""
    labs = [("mode", "partial" if mode else "word"), ("tlast", int(last))]
    if not mode:
        labs += round_sat_labels([exact], F, W, "res")[0]
    return labs
