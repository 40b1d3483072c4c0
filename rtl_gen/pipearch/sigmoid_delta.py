"""``sigmoid_delta`` core: per lane ``S(z) - b`` (PipeArch SigmoidDelta, Alg. 2 line 11)."""
from __future__ import annotations

from myhdl import block

from rtl_gen.common.core import CoreDef
from rtl_gen.common.ports import make_factory

from .lanewise import build_lanewise, datasheet_lanewise, lanewise_ports
from .subroutine import make_params

KIND = "sigmoid_delta"


def block_fn(p):
    core, _ = build_lanewise(p, KIND)

    @block
    def sigmoid_delta(clk, rst, start, cfg_dimension, cfg_iterations, cfg_sigmoid, busy, done, cfg_err,
                      s_axis_z_tdata, s_axis_z_tvalid, s_axis_z_tready,
                      s_axis_b_tdata, s_axis_b_tvalid, s_axis_b_tready,
                      m_axis_y_tdata, m_axis_y_tvalid, m_axis_y_tready, m_axis_y_tlast):
        return core(clk, rst, start, cfg_dimension, cfg_iterations, cfg_sigmoid, busy, done, cfg_err,
                    s_axis_z_tdata, s_axis_z_tvalid, s_axis_z_tready,
                    s_axis_b_tdata, s_axis_b_tvalid, s_axis_b_tready,
                    None, None, None,
                    m_axis_y_tdata, m_axis_y_tvalid, m_axis_y_tready, m_axis_y_tlast)

    return sigmoid_delta


def build(p):
    ports = lanewise_ports(p, KIND)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    _, lat = build_lanewise(p, KIND)
    return datasheet_lanewise(p, KIND, lat,
                              "Per lane `y = sat(S(z) - b)` where `S` is the piecewise-linear "
                              "sigmoid (64 segments over [-8, 8), table from "
                              "`golden.fixedpoint.sigmoid_table`) or the identity: the residual of "
                              "SCD for logistic or least-squares loss (PipeArch Alg. 2 line 11).")


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch SigmoidDelta subroutine: S(z) - b per lane",
    params=make_params(sigmoid=True),
    build=build, datasheet=datasheet,
    configs={"default": {}, "small": {"LANES": 4, "W": 16, "F": 8, "MAX_DIM": 64, "MAX_ITER": 64}},
    generator="rtl_gen/pipearch/sigmoid_delta.py",
)
