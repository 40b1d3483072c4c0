"""``fpdeep_conv_tile`` core: the FPDeep convolution tile (section 5.3): K x K
multiply-accumulate units that finish one K x K window per cycle.

The K x K filter is held in a register loaded from ``s_axis_w`` (one beat = the whole
filter, same element ordering as the window).  Each window on ``s_axis_win`` gives the
exact dot product with the filter; ``s_axis_win_tuser`` selects per window

* mode 0: one round to nearest (ties toward +inf) of F fraction bits and one saturation to
  W bits -- ``golden.conv.window_dot(win, w, fmt)`` (= ``fmt.dot``);
* mode 1: the exact sum of products (scale 2**-2F), no rounding, for ICP accumulation of
  partial sums across tiles / input channels (FPDeep 4.1); the accumulator rounds once at
  the end (``golden.conv.icp_forward``) -- ``golden.conv.window_dot(..., exact=True)``.

Pipeline (global stall on the registered not-full flag ``en`` of a 2-entry output FIFO):
input register -> K*K full-width products -> registered adder tree (one bit wider per
level) -> round/saturate or pass -> FIFO.  Adder tree cells are the ones of
``rtl_gen.pipearch.dot_sigmoid``.
"""
from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat

from rtl_gen.common.blocks import add_reg, mul_reg, out_fifo2, pass_reg, round_sat, sext
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.params import Param, ParamSet, multiple_of_8
from rtl_gen.common.ports import make_factory
from rtl_gen.pipearch.subroutine import check_fmt, delay_flags

KIND = "fpdeep_conv_tile"

PARAMS = ParamSet([
    Param("W", 16, "word width, signed fixed point (activations, errors and weights)", 8, 32, multiple_of_8),
    Param("F", 8, "fraction bits", 1, 30),
    Param("K", 3, "kernel size K x K (K*K MACs)", 2, 7),
], [check_fmt])


def widths(p: dict) -> dict:
    """Products 2W bits; the tree adds one bit per level: ``tw = 2W + ceil(log2(K*K))``
    holds the exact sum with a spare bit (|sum| <= K*K * 2**(2W-2)), which is also the
    headroom the rounding add needs.  The output port is ``tw`` rounded up to bytes."""
    n = p["K"] * p["K"]
    levels = (n - 1).bit_length()
    tw = 2 * p["W"] + levels
    ow = (tw + 7) // 8 * 8
    return {"n": n, "levels": levels, "pw": 2 * p["W"], "tw": tw, "ow": ow, "lat": 1 + 1 + levels}


def ports_of(p: dict) -> list[Port]:
    K, W = p["K"], p["W"]
    wd = widths(p)
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (the filter register clears to 0)"),
        Port("s_axis_w_tdata", "in", K * K * W, "filter: weight (i, j) in bits [(i*K + j)*W +: W], signed Q(W,F)"),
        Port("s_axis_w_tvalid", "in", 1, "a filter beat has priority over a window in the same cycle"),
        Port("s_axis_w_tready", "out", 1, ""),
        Port("s_axis_win_tdata", "in", K * K * W,
             "window: element (i, j) in bits [(i*K + j)*W +: W] (the fpdeep_line_buffer ordering)"),
        Port("s_axis_win_tvalid", "in", 1, ""),
        Port("s_axis_win_tready", "out", 1, ""),
        Port("s_axis_win_tlast", "in", 1, "passed to m_axis_res_tlast with the window's result"),
        Port("s_axis_win_tuser", "in", 1, "mode of this window: 0 rounded/saturated W-bit result, "
                                          "1 exact wide partial sum"),
        Port("m_axis_res_tdata", "out", wd["ow"],
             f"signed result: mode 0 the Q(W,F) word sign-extended; mode 1 the exact sum "
             f"(scale 2**-2F, {wd['tw']} significant bits) sign-extended"),
        Port("m_axis_res_tvalid", "out", 1, ""),
        Port("m_axis_res_tready", "in", 1, ""),
        Port("m_axis_res_tlast", "out", 1, "tlast of the window"),
        Port("m_axis_res_tuser", "out", 1, "mode of the window (1: exact partial sum)"),
    ]


def block_fn(p):
    """The MyHDL @block top of this core for parameters ``p`` (instantiable inside
    another block; conversion flattens it)."""
    K, W, F = p["K"], p["W"], p["F"]
    wd = widths(p)
    n, levels, pw, tw, ow = wd["n"], wd["levels"], wd["pw"], wd["tw"], wd["ow"]

    @block
    def fpdeep_conv_tile(clk, rst, s_axis_w_tdata, s_axis_w_tvalid, s_axis_w_tready,
                         s_axis_win_tdata, s_axis_win_tvalid, s_axis_win_tready, s_axis_win_tlast,
                         s_axis_win_tuser,
                         m_axis_res_tdata, m_axis_res_tvalid, m_axis_res_tready, m_axis_res_tlast,
                         m_axis_res_tuser):
        en = sig_b(True)
        fire = sig_b()
        wfire = sig_b()
        xr = sig_u(n * W)
        wr = sig_u(n * W)
        v0 = sig_u(3)          # {mode, last, valid}

        @always_comb
        def hand():
            s_axis_w_tready.next = en
            wfire.next = en and s_axis_w_tvalid
            s_axis_win_tready.next = en and not s_axis_w_tvalid
            fire.next = en and s_axis_win_tvalid and not s_axis_w_tvalid

        @always_seq(clk.posedge, reset=rst)
        def inreg():
            if en:
                if fire:
                    xr.next = s_axis_win_tdata
                if wfire:
                    wr.next = s_axis_w_tdata
                v0.next = concat(s_axis_win_tuser, s_axis_win_tlast, fire)

        prods = [sig_s(pw) for _ in range(n)]
        insts = []
        for i in range(n):
            insts.append(mul_reg(clk, rst, en, xr((i + 1) * W, i * W), wr((i + 1) * W, i * W), prods[i]))
        level = prods
        w = pw
        while len(level) > 1:
            w += 1
            nxt = []
            for j in range(0, len(level) - 1, 2):
                y = sig_s(w)
                insts.append(add_reg(clk, rst, en, level[j], level[j + 1], y))
                nxt.append(y)
            if len(level) % 2:
                y = sig_s(w)
                insts.append(pass_reg(clk, rst, en, level[-1], y))
                nxt.append(y)
            level = nxt
        tsum = level[0]
        assert len(tsum) == tw
        vt = sig_u(3)
        dly = delay_flags(clk, rst, en, v0, vt, 1 + levels)

        rs_c = sig_s(W)
        rs = round_sat(tsum, rs_c, F)
        rs_e = sig_s(ow)
        x1 = sext(rs_c, rs_e)
        if ow > tw:
            ts_e = sig_s(ow)
            x2 = sext(tsum, ts_e)
        else:
            ts_e = tsum
            x2 = []
        res = sig_u(ow)
        push = sig_b()
        last = sig_b()
        mode_u = sig_u(1)
        muser = sig_u(1)

        @always_comb
        def outc():
            if vt[2]:
                res.next = ts_e[ow:]
            else:
                res.next = rs_e[ow:]
            push.next = en and vt[0]
            last.next = vt[1]
            mode_u.next = vt[2]
            m_axis_res_tuser.next = muser[0]

        ofifo = out_fifo2(clk, rst, res, last, mode_u, push, en,
                          m_axis_res_tdata, m_axis_res_tvalid, m_axis_res_tready, m_axis_res_tlast, muser)
        return hand, inreg, insts, dly, rs, x1, x2, outc, ofifo

    return fpdeep_conv_tile


def build(p):
    ports = ports_of(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    K, W, F = p["K"], p["W"], p["F"]
    wd = widths(p)
    return Datasheet(
        summary=f"{K}x{K} multiply-accumulate tile of the FPDeep convolution engines (section 5.3): the "
                "exact dot product of one window and the loaded filter per cycle, rounded and saturated "
                "(mode 0) or as the exact wide partial sum for input-channel-partitioned accumulation "
                "(mode 1, FPDeep 4.1). Reference: `golden.conv.window_dot`.",
        latency=f"{wd['lat'] + 1} cycles from a window's handshake to its result's handshake on an "
                f"always-ready sink (input register, products, {wd['levels']} adder-tree levels, "
                "output FIFO)",
        throughput=f"one window ({K * K} MACs) per cycle while windows are valid and the output FIFO is "
                   "not full; a filter load takes the input slot for one cycle (measured in `make bench`)",
        notes=[f"Window and filter ordering: element (i, j) of the {K}x{K} array is bits "
               f"[(i*{K} + j)*{W} +: {W}] (row-major, (0, 0) least significant) -- the "
               "`fpdeep_line_buffer` window ordering.",
               f"Arithmetic: {K * K} full-width ({2 * W}-bit) signed products, an adder tree widening "
               f"one bit per level to {wd['tw']} bits: the exact sum, which cannot wrap "
               f"(|sum| <= {K * K} * 2**{2 * W - 2}). Mode 0 rounds {F} fraction bits once (to nearest, "
               f"ties toward +inf) and saturates once to {W} bits, exactly `fmt.dot`; mode 1 outputs "
               f"the exact sum. Both are sign-extended to the {wd['ow']}-bit output.",
               "ICP use: sum the mode-1 outputs of the tiles of all input channels (exactly, in a "
               f"{wd['tw']}+ceil(log2(channels))-bit accumulator), add the bias as `b << {F}`, then "
               "round and saturate once: bit-exact with `golden.conv.icp_forward` / `forward`.",
               "Filter loading: a beat on `s_axis_w` replaces the whole filter. It is accepted before "
               "any window waiting in the same cycle; windows accepted earlier use the old filter, "
               "windows accepted later the new one.",
               "No bias, no activation: those belong to the accumulator / special function unit.",
               "Backpressure: a two-entry output FIFO with a registered not-full flag stalls the "
               "whole pipeline; no combinational path from `m_axis_res_tready` to an input `tready`."])


CORE = CoreDef(
    name=KIND, family="fpdeep",
    description="FPDeep conv tile: K x K MACs, one window per cycle, rounded or exact partial-sum output",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={"default": {}, "k5": {"W": 8, "F": 4, "K": 5}},
    generator="rtl_gen/fpdeep/fpdeep_conv_tile.py",
)
