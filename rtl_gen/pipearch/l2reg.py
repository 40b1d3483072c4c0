"""``l2reg`` core: per lane ``x - 2*alpha*lambda2 * x_old`` (PipeArch Alg. 1 line 14)."""
from __future__ import annotations

from myhdl import block

from rtl_gen.common.core import CoreDef
from rtl_gen.common.ports import make_factory

from .lanewise import build_lanewise, datasheet_lanewise, lanewise_ports
from .subroutine import make_params

KIND = "l2reg"


def block_fn(p):
    core, _ = build_lanewise(p, KIND)

    @block
    def l2reg(clk, rst, start, cfg_dimension, cfg_iterations, cfg_reg, busy, done, cfg_err,
              s_axis_x_tdata, s_axis_x_tvalid, s_axis_x_tready,
              s_axis_xold_tdata, s_axis_xold_tvalid, s_axis_xold_tready,
              m_axis_y_tdata, m_axis_y_tvalid, m_axis_y_tready, m_axis_y_tlast):
        return core(clk, rst, start, cfg_dimension, cfg_iterations, cfg_reg, busy, done, cfg_err,
                    s_axis_x_tdata, s_axis_x_tvalid, s_axis_x_tready,
                    s_axis_xold_tdata, s_axis_xold_tvalid, s_axis_xold_tready,
                    None, None, None,
                    m_axis_y_tdata, m_axis_y_tvalid, m_axis_y_tready, m_axis_y_tlast)

    return l2reg


def build(p):
    ports = lanewise_ports(p, KIND)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    _, lat = build_lanewise(p, KIND)
    return datasheet_lanewise(p, KIND, lat,
                              "Per lane `y = sat(x - sat(round(cfg_reg * x_old)))`: the L2 "
                              "regularisation step of PipeArch Alg. 1 (line 14), over "
                              "`dimension` lines for each of `iterations` vectors.")


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch L2Reg subroutine: x - 2*alpha*lambda*x_old per lane",
    params=make_params(),
    build=build, datasheet=datasheet,
    configs={"default": {}, "small": {"LANES": 4, "W": 16, "F": 8, "MAX_DIM": 64, "MAX_ITER": 64}},
    generator="rtl_gen/pipearch/l2reg.py",
)
