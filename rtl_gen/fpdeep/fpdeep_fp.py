"""``fpdeep_fp`` core: the forward-propagation (FP) module of one FPDeep node (section 5.3)
with input-channel partitioning (ICP, section 4.1).

The node owns S_IC input channels of a layer and computes S_OC output channels:

    s_axis_pix (S_IC channels per beat) -> line buffer (one window beat per cycle)
      -> S_OC conv engines of S_IC tiles (exact partial sums, + bias << F when last)
      -> partial activation buffer: + s_axis_psum_in (the previous node's exact partials)
      -> not last: m_axis_psum_out (exact, to the next node)
         last:     one round/saturation to W bits, optional ReLU -> m_axis_act

The line buffer is ``fpdeep_line_buffer`` instantiated with a pixel of S_IC*W bits (the
S_IC channels of one position travel together; the buffer does not interpret its data), so
one window beat holds element (i, j) of channel c at word ``(i*K + j)*S_IC + c``.  The
engine datapath is the one of ``fpdeep_conv_engine``.  Chain position is a runtime choice:
``cfg_first`` (no psum input; it is neither read nor needed) and ``cfg_last`` are
initiation fields, so one netlist serves every node of a chain.

Three stall domains, each a global stall on the registered not-full flag of a 2-entry
FIFO: line buffer; engine (input register, products, tree -> FIFO); psum add (join with
``s_axis_psum_in``, register) -> special function unit -> output FIFO.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block, concat

from rtl_gen.common.blocks import out_fifo2, round_sat, sat, sext
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.params import Param, ParamSet, multiple_of_8
from rtl_gen.common.ports import make_factory
from rtl_gen.fpdeep import fpdeep_line_buffer as lbmod
from rtl_gen.fpdeep.fpdeep_conv_engine import engine_trees, filter_shift, load_reg, pack
from rtl_gen.fpdeep.fpdeep_conv_engine import widths as engine_widths
from rtl_gen.pipearch.subroutine import bits_for, check_fmt, delay_flags

KIND = "fpdeep_fp"


def _check_psum(p: dict) -> str | None:
    tw = engine_widths(p)["tw"]
    if p["PSUM_W"] < tw + 1:
        return (f"parameter PSUM_W={p['PSUM_W']} must be at least {tw + 1} (the exact engine sum of "
                f"{tw} bits plus one bit of chain growth)")
    return None


def _check_lb(p: dict) -> str | None:
    return lbmod._check(p)


PARAMS = ParamSet([
    Param("W", 16, "word width, signed fixed point (activations and weights)", 8, 32, multiple_of_8),
    Param("F", 8, "fraction bits", 1, 30),
    Param("K", 3, "kernel size K x K", 2, 7),
    Param("S_IC", 2, "input channels of this node (conv tiles per engine)", 1, 8),
    Param("S_OC", 2, "output channels (engines) per run", 1, 8),
    Param("MAX_WIDTH", 16, "largest map width", 1, 4096),
    Param("MAX_HEIGHT", 16, "largest map height", 1, 1 << 16),
    Param("MAX_PAD", 2, "largest zero padding per side, at most K-1", 0, 6),
    Param("PSUM_W", 48, "width of one exact partial-sum lane on the psum ports (scale 2**-2F)", 16, 64,
          multiple_of_8),
], [check_fmt, _check_lb, _check_psum])


def widths(p: dict) -> dict:
    ew = engine_widths(p)
    lbp = lb_params(p)
    return {**ew, "lb": lbmod.widths(lbp), "ps": p["PSUM_W"],
            "iw": bits_for(ew["lat"] + 8)}


def lb_params(p: dict) -> dict:
    return {"W": p["S_IC"] * p["W"], "K": p["K"], "MAX_WIDTH": p["MAX_WIDTH"],
            "MAX_HEIGHT": p["MAX_HEIGHT"], "MAX_PAD": p["MAX_PAD"]}


def ports_of(p: dict) -> list[Port]:
    K, W, S_IC, S_OC, PS = p["K"], p["W"], p["S_IC"], p["S_OC"], p["PSUM_W"]
    lw = lbmod.widths(lb_params(p))
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (filters and biases clear to 0)"),
        Port("start", "in", 1, "initiate one map (sampled with the cfg_* fields while busy is low; "
                                 "may come while the previous map still drains)"),
        Port("cfg_width", "in", lw["fw"], "map width in pixels, 1..MAX_WIDTH"),
        Port("cfg_height", "in", lw["fh"], "map height in rows, 1..MAX_HEIGHT"),
        Port("cfg_pad", "in", lw["fp"], "zero padding on every side, 0..MAX_PAD"),
        Port("cfg_first", "in", 1, "1: first node of the chain (no psum input, s_axis_psum_in unused)"),
        Port("cfg_last", "in", 1, "1: last node: add bias, round/saturate, activation -> m_axis_act; "
                                  "0: forward the exact partial sums on m_axis_psum_out"),
        Port("cfg_relu", "in", 1, "last node only: 1 apply ReLU, 0 identity"),
        Port("busy", "out", 1, "cannot take a start: the current map's input is not all in yet, or "
                               "two maps are in flight"),
        Port("done", "out", 1, "one-cycle pulse per map when its last output is accepted (in start "
                               "order), or for an invalid initiation"),
        Port("cfg_err", "out", 1, "last initiation was invalid (sticky until the next start)"),
        Port("row_err", "out", 1, "an input tlast disagreed with cfg_width (sticky until the next start)"),
        Port("psum_err", "out", 1, "an s_axis_psum_in tlast disagreed with the output row ends "
                                   "(sticky until the next start; the data are still used)"),
        Port("s_axis_w_tdata", "in", K * K * W,
             f"one K x K filter per beat (element (i, j) in bits [(i*K + j)*W +: W]); after {S_OC * S_IC} "
             "beats, beat j is output channel j // S_IC, input channel j % S_IC"),
        Port("s_axis_w_tvalid", "in", 1, "load only with no map in flight (priority over windows)"),
        Port("s_axis_w_tready", "out", 1, ""),
        Port("s_axis_b_tdata", "in", S_OC * W, "biases: output channel o in bits [o*W +: W] (used by the last node)"),
        Port("s_axis_b_tvalid", "in", 1, "load only with no map in flight"),
        Port("s_axis_b_tready", "out", 1, ""),
        Port("s_axis_pix_tdata", "in", S_IC * W, "one map position, input channel c in bits [c*W +: W]; row-major"),
        Port("s_axis_pix_tvalid", "in", 1, ""),
        Port("s_axis_pix_tready", "out", 1, ""),
        Port("s_axis_pix_tlast", "in", 1, "last position of each row (checked, see row_err)"),
        Port("s_axis_psum_in_tdata", "in", S_OC * PS,
             f"partial sums of the previous node, output channel o in bits [o*{PS} +: {PS}], signed, "
             "scale 2**-2F, one beat per output position (raster order)"),
        Port("s_axis_psum_in_tvalid", "in", 1, ""),
        Port("s_axis_psum_in_tready", "out", 1, ""),
        Port("s_axis_psum_in_tlast", "in", 1, "last position of each output row (checked, see psum_err)"),
        Port("m_axis_psum_out_tdata", "out", S_OC * PS,
             "psum_in + this node's exact partials (saturated to PSUM_W bits), same layout as psum_in"),
        Port("m_axis_psum_out_tvalid", "out", 1, "only when cfg_last = 0"),
        Port("m_axis_psum_out_tready", "in", 1, ""),
        Port("m_axis_psum_out_tlast", "out", 1, "last position of each output row"),
        Port("m_axis_act_tdata", "out", S_OC * W,
             "activations, output channel o in bits [o*W +: W], signed Q(W,F)"),
        Port("m_axis_act_tvalid", "out", 1, "only when cfg_last = 1"),
        Port("m_axis_act_tready", "in", 1, ""),
        Port("m_axis_act_tlast", "out", 1, "last position of each output row"),
    ]


@block
def sext_wide(x, y):
    """Sign extension in steps of at most 16 bits (a 31+-bit all-ones fill constant would be
    a sized constant Verilator warns about)."""
    k = len(y) - len(x)
    if k <= 16:
        return sext(x, y)
    mid = sig_s(len(x) + 16)
    return sext(x, mid), sext_wide(mid, y)


@block
def sfu_lane(acc, is_last, relu, y, W, F):
    """Special function unit, one lane: last -> round/saturate to W bits, ReLU, sign-extend
    into ``y``; otherwise saturate the exact sum to ``y``'s width."""
    r = sig_s(W)
    rs = round_sat(acc, r, F)
    a = sig_s(W)
    ae = sig_s(len(y))
    sp = sig_s(len(y))
    sx = sext_wide(a, ae)
    st = sat(acc, sp)

    @always_comb
    def act():
        if relu and r[W - 1]:
            a.next = 0
        else:
            a.next = r

    @always_comb
    def mux():
        if is_last:
            y.next = ae
        else:
            y.next = sp

    return rs, sx, st, act, mux


@block
def join_lane(e_u, p_u, first, fire, clk, rst, acc):
    """``acc = e + (first ? 0 : p)`` (exact, one bit wider than the psum lane), registered on ``fire``."""
    wa = len(acc)
    e = sig_s(len(e_u))
    ee = sig_s(wa)
    pe = sig_s(wa)
    ps = sig_s(len(p_u))
    x1 = sext(e, ee)
    x2 = sext(ps, pe)

    @always_comb
    def cast():
        e.next = e_u.signed()
        if first:
            ps.next = 0
        else:
            ps.next = p_u.signed()

    @always_seq(clk.posedge, reset=rst)
    def st():
        if fire:
            acc.next = ee + pe

    return x1, x2, cast, st


@block
def chain_output(clk, rst, lanes, l2, last2, mend2, en2, v2,
                 psum_d, psum_v, psum_r, psum_l, res_d, res_v, res_r, res_l, mdone, W):
    """Output stage shared by FP and EB: the ``lanes`` (exact partial sums, or results in
    their low W bits) enter a two-entry FIFO whose registered not-full flag is ``en2``;
    a beat of a node that is not the last of the chain (``last2`` low) leaves on the
    partial-sum port ``psum_*``, a beat of the last node on the result port ``res_*``
    (the low W bits of every lane).  ``mdone`` pulses with the handshake of a map's
    last beat (``mend2``)."""
    n, PS = len(lanes), len(lanes[0])
    o_in = sig_u(n * PS)
    pk = pack(lanes, o_in)
    push = sig_b()
    mode_u = sig_u(2)        # {map end, last node}
    o_d = sig_u(n * PS)
    o_v, o_r, o_l = sig_b(), sig_b(), sig_b()
    o_mode = sig_u(2)
    ohs = sig_b()

    @always_comb
    def oc():
        push.next = en2 and v2
        mode_u.next = concat(mend2, last2)

    ofifo = out_fifo2(clk, rst, o_in, l2, mode_u, push, en2, o_d, o_v, o_r, o_l, o_mode)
    parts = [o_d(k * PS + W, k * PS) for k in range(n)]
    res = parts[0] if n == 1 else ConcatSignal(*reversed(parts))

    @always_comb
    def outs():
        psum_d.next = o_d
        psum_l.next = o_l
        psum_v.next = o_v and not o_mode[0]
        res_d.next = res
        res_l.next = o_l
        res_v.next = o_v and o_mode[0]
        if o_mode[0]:
            o_r.next = res_r
        else:
            o_r.next = psum_r
        ohs.next = o_v and ((o_mode[0] and res_r) or (not o_mode[0] and psum_r))

    @always_comb
    def mdc():
        mdone.next = ohs and o_mode[1]

    return pk, oc, ofifo, outs, mdc


def block_fn(p):
    K, W, F, S_IC, S_OC, PS = p["K"], p["W"], p["F"], p["S_IC"], p["S_OC"], p["PSUM_W"]
    wd = widths(p)
    n, levels, tw, iw = wd["n"], wd["levels"], wd["tw"], wd["iw"]
    lb_fn = lbmod.block_fn(lb_params(p))

    @block
    def fpdeep_fp(clk, rst, start, cfg_width, cfg_height, cfg_pad, cfg_first, cfg_last, cfg_relu,
                  busy, done, cfg_err, row_err, psum_err,
                  s_axis_w_tdata, s_axis_w_tvalid, s_axis_w_tready,
                  s_axis_b_tdata, s_axis_b_tvalid, s_axis_b_tready,
                  s_axis_pix_tdata, s_axis_pix_tvalid, s_axis_pix_tready, s_axis_pix_tlast,
                  s_axis_psum_in_tdata, s_axis_psum_in_tvalid, s_axis_psum_in_tready, s_axis_psum_in_tlast,
                  m_axis_psum_out_tdata, m_axis_psum_out_tvalid, m_axis_psum_out_tready, m_axis_psum_out_tlast,
                  m_axis_act_tdata, m_axis_act_tvalid, m_axis_act_tready, m_axis_act_tlast):
        # ---- line buffer over S_IC-channel pixels -----------------------------
        # the line buffer's done is not needed: map ends travel with the windows (tuser)
        lb_start, lb_busy, lb_done_unused = sig_b(), sig_b(), sig_b()
        win_d = sig_u(n * S_IC * W)
        win_v, win_r, win_l, win_u = sig_b(), sig_b(), sig_b(), sig_b()
        lbi = lb_fn(clk, rst, lb_start, cfg_width, cfg_height, cfg_pad, lb_busy, lb_done_unused, cfg_err, row_err,
                    s_axis_pix_tdata, s_axis_pix_tvalid, s_axis_pix_tready, s_axis_pix_tlast,
                    win_d, win_v, win_r, win_l, win_u)

        # ---- engines -----------------------------------------------------------
        en = sig_b(True)
        fire, wfire, bfire = sig_b(), sig_b(), sig_b()
        xr = sig_u(n * S_IC * W)
        wall = sig_u(S_OC * S_IC * n * W)
        breg = sig_u(S_OC * W)
        v0 = sig_u(6)            # {map end, relu, last node, first node, row last, valid}
        # two map slots (the map entering the engines and the next one): chain position
        cf0, cf1, cl0, cl1, cr0, cr1 = (sig_b() for _ in range(6))
        wsel, rsel, chk, errq = sig_b(), sig_b(), sig_b(), sig_b()
        nmaps = sig_u(2)
        bf, blx, brx = sig_b(), sig_b(), sig_b()
        xl = sig_b()
        ibusy = sig_b()

        @always_comb
        def slotsel():
            if rsel:
                bf.next = cf1
                blx.next = cl1
                brx.next = cr1
            else:
                bf.next = cf0
                blx.next = cl0
                brx.next = cr0
            ibusy.next = lb_busy or chk or errq or nmaps == 2
            busy.next = lb_busy or chk or errq or nmaps == 2

        @always_comb
        def hand():
            s_axis_w_tready.next = en
            s_axis_b_tready.next = en
            wfire.next = en and s_axis_w_tvalid
            bfire.next = en and s_axis_b_tvalid
            win_r.next = en and not s_axis_w_tvalid and not s_axis_b_tvalid
            fire.next = en and win_v and not s_axis_w_tvalid and not s_axis_b_tvalid
            lb_start.next = start and not ibusy

        @always_seq(clk.posedge, reset=rst)
        def inreg():
            if en:
                if fire:
                    xr.next = win_d
                    xl.next = blx
                v0.next = concat(win_u, brx, blx, bf, win_l, fire)

        fs = filter_shift(clk, rst, wfire, s_axis_w_tdata, wall)
        bl = load_reg(clk, rst, bfire, s_axis_b_tdata, breg)
        sums = [sig_s(tw) for _ in range(S_OC)]
        trees = engine_trees(clk, rst, en, xr, wall, breg, xl, sums, p, lambda c, e: e * S_IC + c)
        vt = sig_u(6)
        dly = delay_flags(clk, rst, en, v0, vt, 1 + levels)
        e_in = sig_u(S_OC * tw)
        pk1 = pack(sums, e_in)
        push1, last1 = sig_b(), sig_b()
        tag_u = sig_u(4)         # {map end, relu, last node, first node}

        @always_comb
        def ec():
            push1.next = en and vt[0]
            last1.next = vt[1]
            tag_u.next = vt[6:2]

        e_d = sig_u(S_OC * tw)
        e_v, e_r, e_l = sig_b(), sig_b(), sig_b()
        e_tag = sig_u(4)
        e_first = sig_b()
        efifo = out_fifo2(clk, rst, e_in, last1, tag_u, push1, en, e_d, e_v, e_r, e_l, e_tag)

        @always_comb
        def etag():
            e_first.next = e_tag[0]

        # ---- partial activation buffer: + psum_in ------------------------------
        en2 = sig_b(True)
        jfire = sig_b()
        v2, l2 = sig_b(), sig_b()

        @always_comb
        def jhand():
            e_r.next = en2 and (e_first or s_axis_psum_in_tvalid)
            s_axis_psum_in_tready.next = en2 and e_v and not e_first
            jfire.next = en2 and e_v and (e_first or s_axis_psum_in_tvalid)

        last2, relu2, mend2 = sig_b(), sig_b(), sig_b()

        @always_seq(clk.posedge, reset=rst)
        def jreg():
            if en2:
                v2.next = jfire
                if jfire:
                    l2.next = e_l
                    last2.next = e_tag[1]
                    relu2.next = e_tag[2]
                    mend2.next = e_tag[3]

        accs, joins = [], []
        for o in range(S_OC):
            acc = sig_s(PS + 1)
            accs.append(acc)
            joins.append(join_lane(e_d((o + 1) * tw, o * tw), s_axis_psum_in_tdata((o + 1) * PS, o * PS),
                                   e_first, jfire, clk, rst, acc))

        # ---- special function unit and output ----------------------------------
        lanes, sfus = [], []
        for o in range(S_OC):
            y = sig_s(PS)
            lanes.append(y)
            sfus.append(sfu_lane(accs[o], last2, relu2, y, W, F))
        mdone = sig_b()
        out = chain_output(clk, rst, lanes, l2, last2, mend2, en2, v2,
                           m_axis_psum_out_tdata, m_axis_psum_out_tvalid, m_axis_psum_out_tready,
                           m_axis_psum_out_tlast, m_axis_act_tdata, m_axis_act_tvalid,
                           m_axis_act_tready, m_axis_act_tlast, mdone, W)

        # ---- control: up to two maps in flight -----------------------------------------
        @always_seq(clk.posedge, reset=rst)
        def ctl():
            done.next = False
            if lb_start:
                chk.next = True
                psum_err.next = False
                if wsel:
                    cf1.next = cfg_first
                    cl1.next = cfg_last
                    cr1.next = cfg_relu
                else:
                    cf0.next = cfg_first
                    cl0.next = cfg_last
                    cr0.next = cfg_relu
            if chk:
                chk.next = False
                if cfg_err:             # the line buffer rejected it: done now (or after a map's)
                    if mdone:
                        errq.next = True
                    else:
                        done.next = True
                else:
                    wsel.next = not wsel
            if errq and not mdone:
                errq.next = False
                done.next = True
            if mdone:
                done.next = True
            if chk and not cfg_err and not mdone:
                nmaps.next = nmaps + 1
            elif mdone and not (chk and not cfg_err):
                nmaps.next = nmaps - 1
            if fire and win_u:
                rsel.next = not rsel
            if jfire and not e_first and s_axis_psum_in_tlast != e_l:
                psum_err.next = True

        return (lbi, hand, inreg, fs, bl, trees, dly, pk1, ec, efifo, jhand, jreg, joins, sfus, out,
                slotsel, etag, ctl)

    return fpdeep_fp


def build(p):
    ports = ports_of(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    K, W, F, S_IC, S_OC, PS = p["K"], p["W"], p["F"], p["S_IC"], p["S_OC"], p["PSUM_W"]
    wd = widths(p)
    lw = wd["lb"]
    return Datasheet(
        summary=f"Forward propagation of one FPDeep node (section 5.3) with input-channel partitioning "
                f"(4.1): a line buffer over {S_IC} input channel(s), {S_OC} conv engine(s) of {S_IC} "
                f"{K}x{K} tile(s) ({wd['macs']} MACs per cycle), the partial activation buffer that adds the "
                "previous node's exact partial sums, and a special function unit (bias, one rounding, ReLU) "
                "in the last node of the chain. Reference: `golden.conv.fp_node`.",
        latency=f"{wd['lat'] + 5} cycles from the handshake of the pixel completing a window to its "
                "output's handshake on an always-ready sink with psum_in valid (line buffer 2, engine input "
                f"register, products, {wd['levels']} tree levels, engine FIFO, psum add register, output "
                "FIFO; measured in `make bench`)",
        throughput="one output position (S_OC output channels, every MAC busy) per cycle; padding costs "
                   "no cycles (the line buffer's padding-free scan): an output row of Wo positions takes "
                   "Wo + max(0, K-1-2P) cycles, a map without padding is input-bound at about H*W cycles, "
                   "and up to two maps are in flight, so maps started as soon as busy drops run back to "
                   "back without draining the pipeline (MAC utilisation over whole maps measured in "
                   "`make bench`)",
        fields=[("cfg_width", str(lw["fw"]), f"pixels per row, 1..{p['MAX_WIDTH']}"),
                ("cfg_height", str(lw["fh"]), f"rows, 1..{p['MAX_HEIGHT']}"),
                ("cfg_pad", str(lw["fp"]), f"zero padding P on every side, 0..{p['MAX_PAD']}"),
                ("cfg_first", "1", "first node: psum_in taken as 0 and not read"),
                ("cfg_last", "1", "last node: output activations on m_axis_act; else psum on m_axis_psum_out"),
                ("cfg_relu", "1", "last node: ReLU on (1) or identity (0)")],
        notes=[f"Pixel beat: input channel c of the node in bits [c*{W} +: {W}] (the {S_IC} channels of one "
               "map position together), row-major, `tlast` on the last position of each row.",
               f"Filters: {S_OC * S_IC} beats of one {K}x{K} filter each; the last {S_OC * S_IC} accepted beats "
               f"define the filters, beat j = output channel j // {S_IC}, input channel j % {S_IC} of this node. "
               f"Bias: one beat of {S_OC} words. Both reset to 0; load them only while no map is in flight "
               "(before the first start or after the last map's done: busy low is not enough).",
               f"psum lanes: {PS}-bit signed exact sums (scale 2**-2F). The engine sum has {wd['tw']} bits, so "
               f"a chain of up to 2**{PS - wd['tw']} nodes cannot saturate; beyond, psum_out saturates "
               "(never wraps) -- `golden.conv.fp_node(..., psum_bits=PSUM_W)`.",
               f"Last node: y = sat_W(round_F(psum_in + partial + (b << {F}))), then max(y, 0) when cfg_relu: "
               "a chain of nodes splitting the input channels gives exactly `relu(golden.conv.forward(...))` "
               "of the whole layer (one rounding point, FPDeep ICP). The bias is added only by the last node.",
               f"Output channels beyond {S_OC}: run the map again with the next filters and biases "
               "(one run per group of S_OC output channels).",
               "Chain position is a runtime field (cfg_first/cfg_last), so every node uses the same netlist; "
               "a single-node layer is cfg_first = cfg_last = 1.",
               "An invalid initiation (the line buffer's rules: width/height 0 or too large, pad > MAX_PAD, "
               "padded map smaller than K) sets cfg_err, pulses done and consumes nothing. "
               "`start` while busy is ignored. Up to two maps are in flight: a start is taken once the "
               "previous map's input is all in (busy low), while its outputs still drain; cfg_first, "
               "cfg_last and cfg_relu travel with each map's windows. done pulses once per map after its "
               "last output is accepted, in start order; the done of an invalid initiation is not "
               "ordered with that of a map still draining. cfg_err, row_err and psum_err refer to the "
               "latest start (cleared by it).",
               "Backpressure on every stream, through three stall domains (line buffer; engines; psum add "
               "+ SFU), each stalled by the registered not-full flag of its 2-entry output FIFO: no "
               "combinational path from an output tready to any input tready. s_axis_psum_in_tready "
               "depends only on registered state (engine result valid, output FIFO not full), never on "
               "s_axis_psum_in_tvalid."])


CORE = CoreDef(
    name=KIND, family="fpdeep",
    description="FPDeep FP node: line buffer, S_OC x S_IC conv engines, ICP partial-sum add, bias/ReLU",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={"default": {},
             "k5": {"W": 8, "F": 4, "K": 5, "S_IC": 1, "S_OC": 1, "MAX_WIDTH": 10, "MAX_HEIGHT": 8,
                    "MAX_PAD": 4, "PSUM_W": 32},
             # bench sizes (make bench): realistic maps, K=3 pad 1 and K=5 pad 2
             "b32": {"MAX_WIDTH": 32, "MAX_HEIGHT": 32},
             "b28k5": {"W": 8, "F": 4, "K": 5, "S_IC": 1, "S_OC": 2, "MAX_WIDTH": 28, "MAX_HEIGHT": 28,
                       "MAX_PAD": 4, "PSUM_W": 32}},
    generator="rtl_gen/fpdeep/fpdeep_fp.py",
)
