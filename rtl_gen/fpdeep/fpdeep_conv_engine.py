"""``fpdeep_conv_engine`` core: S_OC FPDeep convolution engines (CEs, section 5.3) of S_IC
conv tiles each, sharing one input beat.

One beat on ``s_axis_win`` carries the K x K windows of the same position in S_IC input
channels.  Engine ``o`` holds S_IC filters (one per tile / input channel); its tiles'
K*K*S_IC products and an optional bias term ``b[o] << F`` are summed **exactly** in one
adder tree (the tiles' trees merged), so each engine finishes one output channel's
partial result per cycle; the S_OC engines produce S_OC output channels per cycle in one
output beat.  Per window, ``s_axis_win_tuser`` selects

* bit 0 = 0: one round to nearest (ties toward +inf) of F bits and one saturation to W bits
  (``golden.conv.engine_beat(..., exact=False)`` = ``golden.conv.forward`` of that window);
* bit 0 = 1: the exact wide sum (scale 2**-2F), for ICP accumulation (FPDeep 4.1);
* bit 1: add the engine's bias word (``b << F``, exact, before the rounding).

Filters: ``s_axis_w`` takes one K x K filter per beat into a shift register of
S_OC*S_IC filters; after S_OC*S_IC beats, beat ``j`` is the filter of engine
``j // S_IC``, input channel (tile) ``j % S_IC``.  Biases: one beat on ``s_axis_b`` holds all
S_OC bias words.  Both have priority over a window in the same cycle and are read by
the multiply stage, so windows accepted earlier use the old values, later ones the new.

Pipeline (global stall on the registered not-full flag ``en`` of a 2-entry output FIFO):
input register -> products (and bias leaf) -> registered adder tree -> round/saturate or
pass -> FIFO.  The datapath helpers here are reused by ``fpdeep_fp``.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block, concat, intbv

from rtl_gen.common.blocks import add_reg, mul_reg, out_fifo2, pass_reg, round_sat, sext
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.params import Param, ParamSet, multiple_of_8
from rtl_gen.common.ports import make_factory
from rtl_gen.pipearch.subroutine import check_fmt, delay_flags

KIND = "fpdeep_conv_engine"

PARAMS = ParamSet([
    Param("W", 16, "word width, signed fixed point (activations and weights)", 8, 32, multiple_of_8),
    Param("F", 8, "fraction bits", 1, 30),
    Param("K", 3, "kernel size K x K (K*K MACs per tile)", 2, 7),
    Param("S_IC", 2, "conv tiles per engine = input channels per beat", 1, 8),
    Param("S_OC", 2, "engines = output channels per beat (share the input windows)", 1, 8),
], [check_fmt])


def widths(p: dict) -> dict:
    """``N = K*K*S_IC`` products plus one bias leaf per engine; the tree adds one bit per
    level: ``tw = 2W + ceil(log2(N+1))`` holds the exact sum with a spare bit
    (|sum| <= (N+1) * 2**(2W-2), since F <= W-1), which is the headroom of the rounding.
    Output lanes are ``tw`` rounded up to bytes."""
    n = p["K"] * p["K"]
    leaves = n * p["S_IC"] + 1
    levels = (leaves - 1).bit_length()
    tw = 2 * p["W"] + levels
    ow = (tw + 7) // 8 * 8
    return {"n": n, "leaves": leaves, "levels": levels, "pw": 2 * p["W"], "tw": tw, "ow": ow,
            "lat": 1 + 1 + levels, "macs": n * p["S_IC"] * p["S_OC"]}


# ---------------------------------------------------------------- shared datapath pieces
@block
def filter_shift(clk, rst, wfire, wdat, wall):
    """Filter store: each accepted beat shifts in at the top; one process, one signal."""
    fw, tot = len(wdat), len(wall)

    if tot == fw:
        @always_seq(clk.posedge, reset=rst)
        def st():
            if wfire:
                wall.next = wdat
    else:
        @always_seq(clk.posedge, reset=rst)
        def st():
            if wfire:
                wall.next = concat(wdat, wall[tot:fw])
    return st


@block
def load_reg(clk, rst, ld, d, q):
    @always_seq(clk.posedge, reset=rst)
    def st():
        if ld:
            q.next = d
    return st


@block
def bias_leaf(clk, rst, en, b_u, sel, y, F):
    """``y = sel ? b << F : 0`` (signed, width 2W), registered on ``en`` with the products."""
    W = len(b_u)
    bs = sig_s(W + F)
    be = sig_s(len(y))

    @always_comb
    def shf():
        bs.next = concat(b_u, intbv(0)[F:]).signed()

    sx = sext(bs, be)

    @always_seq(clk.posedge, reset=rst)
    def st():
        if en:
            if sel:
                y.next = be
            else:
                y.next = 0

    return shf, sx, st


@block
def engine_trees(clk, rst, en, xr, wall, breg, bsel, sums, p, xpos):
    """Products, bias leaves and adder trees of the S_OC engines: ``sums[o]`` (``tw`` bits)
    is engine o's exact sum, ``1 + levels`` en-cycles after ``xr``.  ``xpos(c, e)`` is the
    lane index (in W-bit words) of element ``e`` of input channel ``c``'s window in ``xr``."""
    W, F, S_IC, S_OC = p["W"], p["F"], p["S_IC"], p["S_OC"]
    wd = widths(p)
    n, pw = wd["n"], wd["pw"]
    insts = []
    for o in range(S_OC):
        leaves = []
        for c in range(S_IC):
            slot = o * S_IC + c
            for e in range(n):
                x = xpos(c, e)
                pr = sig_s(pw)
                wl = (slot * n + e) * W
                insts.append(mul_reg(clk, rst, en, xr((x + 1) * W, x * W), wall(wl + W, wl), pr))
                leaves.append(pr)
        bl = sig_s(pw)
        insts.append(bias_leaf(clk, rst, en, breg((o + 1) * W, o * W), bsel, bl, F))
        leaves.append(bl)
        level, w = leaves, pw
        while len(level) > 1:
            w += 1
            nxt = []
            final = len(level) <= 2
            for j in range(0, len(level) - 1, 2):
                y = sums[o] if final else sig_s(w)
                insts.append(add_reg(clk, rst, en, level[j], level[j + 1], y))
                nxt.append(y)
            if len(level) % 2:
                y = sig_s(w)
                insts.append(pass_reg(clk, rst, en, level[-1], y))
                nxt.append(y)
            level = nxt
        assert level[0] is sums[o] and len(sums[o]) == wd["tw"]
    return insts


@block
def to_unsigned(x, y):
    @always_comb
    def cp():
        y.next = x[len(x):]
    return cp


@block
def pack(lanes, res):
    """``res`` = the lanes' bits concatenated, lane 0 least significant."""
    insts, us = [], []
    for s in lanes:
        u = sig_u(len(s))
        insts.append(to_unsigned(s, u))
        us.append(u)
    cs = us[0] if len(us) == 1 else ConcatSignal(*reversed(us))

    @always_comb
    def cp():
        res.next = cs
    return insts, cp


@block
def lane_out(tsum, exact, y, W, F):
    """Mode 0: round/saturate to W bits; mode 1: exact.  Both sign-extended into ``y``."""
    ow, tw = len(y), len(tsum)
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

    @always_comb
    def mux():
        if exact:
            y.next = ts_e
        else:
            y.next = rs_e

    return rs, x1, x2, mux


# ---------------------------------------------------------------- the core
def ports_of(p: dict) -> list[Port]:
    K, W, S_IC, S_OC = p["K"], p["W"], p["S_IC"], p["S_OC"]
    wd = widths(p)
    kk = K * K * W
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (filters and biases clear to 0)"),
        Port("s_axis_w_tdata", "in", kk,
             "one K x K filter: weight (i, j) in bits [(i*K + j)*W +: W]; shifted into the filter "
             f"store; after {S_OC * S_IC} beats, beat j is engine j // S_IC, tile (input channel) j % S_IC"),
        Port("s_axis_w_tvalid", "in", 1, "priority over a window in the same cycle"),
        Port("s_axis_w_tready", "out", 1, ""),
        Port("s_axis_b_tdata", "in", S_OC * W, "biases: engine o's word in bits [o*W +: W], signed Q(W,F)"),
        Port("s_axis_b_tvalid", "in", 1, "priority over a window in the same cycle"),
        Port("s_axis_b_tready", "out", 1, ""),
        Port("s_axis_win_tdata", "in", S_IC * kk,
             "S_IC windows: element (i, j) of input channel c in bits [(c*K*K + i*K + j)*W +: W]"),
        Port("s_axis_win_tvalid", "in", 1, ""),
        Port("s_axis_win_tready", "out", 1, ""),
        Port("s_axis_win_tlast", "in", 1, "passed to m_axis_res_tlast with the beat's results"),
        Port("s_axis_win_tuser", "in", 2, "bit 0: 1 exact wide sum, 0 rounded/saturated W-bit word; "
                                          "bit 1: add the bias (b << F) before rounding"),
        Port("m_axis_res_tdata", "out", S_OC * wd["ow"],
             f"S_OC signed results, engine o in bits [o*{wd['ow']} +: {wd['ow']}]: rounded mode the "
             f"Q(W,F) word sign-extended, exact mode the exact sum (scale 2**-2F, {wd['tw']} "
             "significant bits) sign-extended"),
        Port("m_axis_res_tvalid", "out", 1, ""),
        Port("m_axis_res_tready", "in", 1, ""),
        Port("m_axis_res_tlast", "out", 1, "tlast of the window beat"),
        Port("m_axis_res_tuser", "out", 2, "tuser of the window beat"),
    ]


def block_fn(p):
    K, W, F, S_IC, S_OC = p["K"], p["W"], p["F"], p["S_IC"], p["S_OC"]
    wd = widths(p)
    n, levels, ow = wd["n"], wd["levels"], wd["ow"]

    @block
    def fpdeep_conv_engine(clk, rst, s_axis_w_tdata, s_axis_w_tvalid, s_axis_w_tready,
                           s_axis_b_tdata, s_axis_b_tvalid, s_axis_b_tready,
                           s_axis_win_tdata, s_axis_win_tvalid, s_axis_win_tready, s_axis_win_tlast,
                           s_axis_win_tuser,
                           m_axis_res_tdata, m_axis_res_tvalid, m_axis_res_tready, m_axis_res_tlast,
                           m_axis_res_tuser):
        en = sig_b(True)
        fire, wfire, bfire = sig_b(), sig_b(), sig_b()
        xr = sig_u(S_IC * n * W)
        wall = sig_u(S_OC * S_IC * n * W)
        breg = sig_u(S_OC * W)
        v0 = sig_u(4)          # {bias, exact, last, valid}
        bsel = sig_b()

        @always_comb
        def hand():
            s_axis_w_tready.next = en
            s_axis_b_tready.next = en
            wfire.next = en and s_axis_w_tvalid
            bfire.next = en and s_axis_b_tvalid
            s_axis_win_tready.next = en and not s_axis_w_tvalid and not s_axis_b_tvalid
            fire.next = en and s_axis_win_tvalid and not s_axis_w_tvalid and not s_axis_b_tvalid

        @always_seq(clk.posedge, reset=rst)
        def inreg():
            if en:
                if fire:
                    xr.next = s_axis_win_tdata
                v0.next = concat(s_axis_win_tuser, s_axis_win_tlast, fire)

        @always_comb
        def bselc():
            bsel.next = v0[3]

        fs = filter_shift(clk, rst, wfire, s_axis_w_tdata, wall)
        bl = load_reg(clk, rst, bfire, s_axis_b_tdata, breg)
        sums = [sig_s(wd["tw"]) for _ in range(S_OC)]
        trees = engine_trees(clk, rst, en, xr, wall, breg, bsel, sums, p, lambda c, e: c * n + e)
        vt = sig_u(4)          # {bias, exact, last, valid} at the tree output
        dly = delay_flags(clk, rst, en, v0, vt, 1 + levels)
        exact = sig_b()
        lanes, louts = [], []
        for o in range(S_OC):
            y = sig_s(ow)
            lanes.append(y)
            louts.append(lane_out(sums[o], exact, y, W, F))
        res = sig_u(S_OC * ow)
        pk = pack(lanes, res)
        push, last = sig_b(), sig_b()
        user_in = sig_u(2)

        @always_comb
        def outc():
            exact.next = vt[2]
            push.next = en and vt[0]
            last.next = vt[1]
            user_in.next = vt[4:2]

        ofifo = out_fifo2(clk, rst, res, last, user_in, push, en,
                          m_axis_res_tdata, m_axis_res_tvalid, m_axis_res_tready, m_axis_res_tlast,
                          m_axis_res_tuser)
        return hand, inreg, bselc, fs, bl, trees, dly, louts, pk, outc, ofifo

    return fpdeep_conv_engine


def build(p):
    ports = ports_of(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    K, W, F, S_IC, S_OC = p["K"], p["W"], p["F"], p["S_IC"], p["S_OC"]
    wd = widths(p)
    return Datasheet(
        summary=f"{S_OC} FPDeep convolution engine(s) (section 5.3) of {S_IC} {K}x{K} conv tile(s) each: "
                f"one beat of {S_IC} input-channel windows per cycle gives {S_OC} output-channel results "
                f"({wd['macs']} MACs per cycle), each the exact sum over the {S_IC} tiles (+ optional bias), "
                "rounded and saturated once or kept exact for input-channel-partitioned (ICP) accumulation. "
                "Reference: `golden.conv.engine_beat`.",
        latency=f"{wd['lat'] + 1} cycles from a window beat's handshake to its result's handshake on an "
                f"always-ready sink (input register, products, {wd['levels']} adder-tree levels, output FIFO)",
        throughput=f"one window beat ({wd['macs']} MACs) per cycle while windows are valid and the output "
                   "FIFO is not full; a filter or bias beat takes the input slot for one cycle "
                   "(MAC utilisation measured in `make bench`)",
        notes=[f"Window beat layout: element (i, j) of input channel c is bits [(c*{K * K} + i*{K} + j)*{W} "
               f"+: {W}]: the S_IC windows side by side, each in the `fpdeep_line_buffer` ordering.",
               f"Filter loading: {S_OC * S_IC} beats of one filter each (element (i, j) in bits "
               f"[(i*{K} + j)*{W} +: {W}]); the last {S_OC * S_IC} accepted beats define the filters, beat "
               f"j belonging to engine j // {S_IC} and input channel j % {S_IC}. Do not send windows in "
               "the middle of a load unless a mixed filter set is wanted.",
               f"Bias: one beat of {S_OC} words. Added as `b << {F}` to the exact sum (tuser bit 1), "
               "so rounded results are `fmt.sat(round(sum + (b << F)))`, exactly `golden.conv.forward`.",
               f"Arithmetic: {wd['macs']} full-width ({2 * W}-bit) products ({K * K * S_IC} per engine) and one "
               "adder tree per engine over "
               f"{wd['leaves']} leaves ({K * K}x{S_IC} products + the bias) widening one bit per level to "
               f"{wd['tw']} bits: exact, cannot wrap. Results are sign-extended into {wd['ow']}-bit lanes.",
               "The S_IC tiles of an engine are merged into one tree (same K*K multipliers per tile; the "
               "tile adder trees and the cross-tile sum become one exact tree): bit-identical to summing "
               "`fpdeep_conv_tile` mode-1 outputs, with fewer pipeline registers.",
               "Backpressure: a two-entry output FIFO with a registered not-full flag stalls the whole "
               "pipeline; no combinational path from `m_axis_res_tready` to an input `tready`."])


CORE = CoreDef(
    name=KIND, family="fpdeep",
    description="FPDeep conv engines: S_OC engines x S_IC K x K tiles, one window beat per cycle",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={"default": {}, "k5": {"W": 8, "F": 4, "K": 5, "S_IC": 1, "S_OC": 1}},
    generator="rtl_gen/fpdeep/fpdeep_conv_engine.py",
)
