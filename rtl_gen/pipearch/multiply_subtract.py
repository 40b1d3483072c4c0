"""``multiply_subtract`` core: per lane ``x - s*a`` (PipeArch Alg. 1 line 13, Alg. 2 line 14,
Alg. 3 lines 14-15), ``s`` one scalar per iteration from its own stream."""
from __future__ import annotations

from myhdl import block

from rtl_gen.common.core import CoreDef
from rtl_gen.common.ports import make_factory

from .lanewise import build_lanewise, datasheet_lanewise, lanewise_ports
from .subroutine import make_params

KIND = "multiply_subtract"


def block_fn(p):
    core, _ = build_lanewise(p, KIND)

    @block
    def multiply_subtract(clk, rst, start, cfg_dimension, cfg_iterations, busy, done, cfg_err,
                          s_axis_x_tdata, s_axis_x_tvalid, s_axis_x_tready,
                          s_axis_a_tdata, s_axis_a_tvalid, s_axis_a_tready,
                          s_axis_s_tdata, s_axis_s_tvalid, s_axis_s_tready,
                          m_axis_y_tdata, m_axis_y_tvalid, m_axis_y_tready, m_axis_y_tlast):
        return core(clk, rst, start, cfg_dimension, cfg_iterations, None, busy, done, cfg_err,
                    s_axis_x_tdata, s_axis_x_tvalid, s_axis_x_tready,
                    s_axis_a_tdata, s_axis_a_tvalid, s_axis_a_tready,
                    s_axis_s_tdata, s_axis_s_tvalid, s_axis_s_tready,
                    m_axis_y_tdata, m_axis_y_tvalid, m_axis_y_tready, m_axis_y_tlast)

    return multiply_subtract


def build(p):
    ports = lanewise_ports(p, KIND)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    _, lat = build_lanewise(p, KIND)
    return datasheet_lanewise(p, KIND, lat,
                              "Per lane `y = sat(x - sat(round(s * a)))`, with one scalar `s` per "
                              "iteration taken from `s_axis_s`: the model update of SGD "
                              "(PipeArch Alg. 1), the residual update of SCD (Alg. 2) and the "
                              "factor updates of LRMF (Alg. 3).")


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch MultiplySubtract subroutine: x - s*a per lane",
    params=make_params(),
    build=build, datasheet=datasheet,
    configs={"default": {}, "small": {"LANES": 4, "W": 16, "F": 8, "MAX_DIM": 64, "MAX_ITER": 64}},
    generator="rtl_gen/pipearch/multiply_subtract.py",
)
