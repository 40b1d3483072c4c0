"""``fpdeep_pg`` core: the parameter-gradient (PG) module of one FPDeep node (section 5.5,
Eq. 3) with the mini-batch SGD step (Eq. 4) applied to on-chip filters and biases.

Per sample, the activations of S_IC input channels (one beat = one input position) run
through a line buffer that zero-pads them by cfg_pad and emits the K x K window of every
output position in raster order; each window is paired with one beat of the output-error
stream (S_OC errors of that output position).  The large Ho x Wo gradient convolution is
cut into K x K pieces: S_OC*S_IC*K*K multipliers, multiplier (o, c, e) forming
``window[c][e] * err[o]`` and adding it into its own exact accumulator, plus one exact
error accumulator per output channel for the bias gradient:

    s_axis_x  -> line buffer (pad) -> window --+
    s_axis_err ------------------------------ join -> input reg -> products -> accumulators
    end of sample: gradient word = sat(round(acc)) (bias: sat(sum err)), added exactly into
                   the batch gradient buffer (W + bits(MAX_BATCH) bits per element)
    end of batch:  w' = sat(w - sat(round(lr_q * gsum))), one filter per cycle through a
                   pipeline (gradient register, product register, rounded-step register,
                   then w - step and its saturation in the write-back cycle)
                   -> m_axis_w (filters), m_axis_b (biases); the store keeps w'.

Reference: ``golden.conv.pg_minibatch`` (= ``param_gradient`` per sample + ``update``),
bit for bit; the accumulation order is ``golden.conv.pg_sample_exact``.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block, concat

from rtl_gen.common.blocks import out_fifo2, round_sat, sat, sext
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.params import Param, ParamSet, multiple_of_8
from rtl_gen.common.ports import make_factory
from rtl_gen.fpdeep import fpdeep_line_buffer as lbmod
from rtl_gen.fpdeep.fpdeep_conv_engine import filter_shift, pack
from rtl_gen.fpdeep.fpdeep_fp import sext_wide
from rtl_gen.fpdeep.fpdeep_line_buffer import zext
from rtl_gen.pipearch.subroutine import bits_for, check_fmt, field_bits

KIND = "fpdeep_pg"

IDLE, RUN, UPD, FLUSH = 0, 1, 2, 3


def lb_params(p: dict) -> dict:
    return {"W": p["S_IC"] * p["W"], "K": p["K"], "MAX_WIDTH": p["MAX_WIDTH"],
            "MAX_HEIGHT": p["MAX_HEIGHT"], "MAX_PAD": p["K"] - 1}


PARAMS = ParamSet([
    Param("W", 16, "word width, signed fixed point (activations, errors, weights, lr)", 8, 32, multiple_of_8),
    Param("F", 8, "fraction bits", 1, 30),
    Param("K", 3, "kernel size K x K of the layer", 2, 7),
    Param("S_IC", 1, "input channels per activation beat", 1, 8),
    Param("S_OC", 2, "output channels per error beat", 1, 8),
    Param("MAX_WIDTH", 8, "largest input-map width", 1, 1024),
    Param("MAX_HEIGHT", 8, "largest input-map height", 1, 1024),
    Param("MAX_BATCH", 4, "largest mini-batch (samples per SGD step)", 1, 1 << 12),
], [check_fmt, lambda p: lbmod._check(lb_params(p))])


def widths(p: dict) -> dict:
    K, W = p["K"], p["W"]
    n = K * K
    npos = (p["MAX_HEIGHT"] + K - 1) * (p["MAX_WIDTH"] + K - 1)   # most output positions
    pb = bits_for(npos)
    return {"n": n, "nslot": p["S_OC"] * p["S_IC"], "macs": n * p["S_IC"] * p["S_OC"],
            "aw": 2 * W + pb,            # exact K x K accumulator (one headroom bit)
            "ew": W + pb,                # exact error sum (bias gradient)
            "gw": W + bits_for(p["MAX_BATCH"]),   # batch gradient buffer element
            "lb": lbmod.widths(lb_params(p)), "fp": field_bits(K - 1), "fb": field_bits(p["MAX_BATCH"]),
            "dw": max(n, p["S_OC"]) * W}


def ports_of(p: dict) -> list[Port]:
    K, W, S_IC, S_OC = p["K"], p["W"], p["S_IC"], p["S_OC"]
    wd = widths(p)
    lw = wd["lb"]
    ns = wd["nslot"]
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (filters, biases and gradients clear to 0)"),
        Port("start", "in", 1, "initiate one mini-batch (sampled with the cfg_* fields while busy is low)"),
        Port("cfg_width", "in", lw["fw"], "input-map width, 1..MAX_WIDTH"),
        Port("cfg_height", "in", lw["fh"], "input-map height, 1..MAX_HEIGHT"),
        Port("cfg_pad", "in", wd["fp"], "forward zero padding P, 0..K-1 (output map >= 1x1)"),
        Port("cfg_batch", "in", wd["fb"], "samples in the mini-batch, 1..MAX_BATCH"),
        Port("cfg_lr", "in", W, "lr_q = to_fixed(lr / batch), signed Q(W,F), must be > 0"),
        Port("busy", "out", 1, "a mini-batch is in progress (until the last updated parameter is accepted)"),
        Port("done", "out", 1, "one-cycle pulse: bias beat accepted, or an invalid initiation"),
        Port("cfg_err", "out", 1, "last initiation was invalid (sticky until the next start)"),
        Port("row_err", "out", 1, "an activation or error tlast disagreed with the row end (sticky until "
                                  "the next start; data still used)"),
        Port("s_axis_w_tdata", "in", K * K * W,
             f"one K x K filter per beat (element (i, j) in bits [(i*K + j)*W +: W]); after {ns} beats, "
             f"beat j is output channel j // {S_IC}, input channel j % {S_IC}"),
        Port("s_axis_w_tvalid", "in", 1, "load while idle"),
        Port("s_axis_w_tready", "out", 1, ""),
        Port("s_axis_b_tdata", "in", S_OC * W, "biases, output channel o in bits [o*W +: W]; load while idle"),
        Port("s_axis_b_tvalid", "in", 1, ""),
        Port("s_axis_b_tready", "out", 1, ""),
        Port("s_axis_x_tdata", "in", S_IC * W, "one input position, channel c in bits [c*W +: W]; row-major"),
        Port("s_axis_x_tvalid", "in", 1, ""),
        Port("s_axis_x_tready", "out", 1, ""),
        Port("s_axis_x_tlast", "in", 1, "last position of each input row (checked, see row_err)"),
        Port("s_axis_err_tdata", "in", S_OC * W,
             "errors of one output position, output channel o in bits [o*W +: W]; row-major"),
        Port("s_axis_err_tvalid", "in", 1, ""),
        Port("s_axis_err_tready", "out", 1, ""),
        Port("s_axis_err_tlast", "in", 1, "last position of each output row (checked, see row_err)"),
        Port("m_axis_w_tdata", "out", K * K * W, "updated filters, same layout and order as s_axis_w"),
        Port("m_axis_w_tvalid", "out", 1, ""),
        Port("m_axis_w_tready", "in", 1, ""),
        Port("m_axis_w_tlast", "out", 1, "last filter of the step"),
        Port("m_axis_b_tdata", "out", S_OC * W, "updated biases (after the filters), layout of s_axis_b"),
        Port("m_axis_b_tvalid", "out", 1, ""),
        Port("m_axis_b_tready", "in", 1, ""),
        Port("m_axis_b_tlast", "out", 1, "always 1 (one beat)"),
    ]


# ---------------------------------------------------------------- lanes
@block
def prod_reg(clk, rst, a_u, b_u, p):
    """``p = a * b`` (signed, full width), registered every cycle."""
    a = sig_s(len(a_u))
    b = sig_s(len(b_u))

    @always_comb
    def cast():
        a.next = a_u.signed()
        b.next = b_u.signed()

    @always_seq(clk.posedge, reset=rst)
    def st():
        p.next = a * b

    return cast, st


@block
def mac_lane(clk, rst, v, first, p, acc):
    """``acc = (first ? 0 : acc) + p`` (exact), on ``v``."""
    pe = sig_s(len(acc))
    x = sext_wide(p, pe)

    @always_seq(clk.posedge, reset=rst)
    def st():
        if v:
            if first:
                acc.next = pe
            else:
                acc.next = acc + pe

    return x, st


@block
def esum_lane(clk, rst, v, first, e_u, acc):
    """Exact error sum of one output channel: ``acc = (first ? 0 : acc) + e``."""
    e = sig_s(len(e_u))

    @always_comb
    def cast():
        e.next = e_u.signed()

    m = mac_lane(clk, rst, v, first, e, acc)
    return cast, m


@block
def fold_lane(word, g_u, bfirst, gnew_u):
    """``gnew = (bfirst ? 0 : g) + word`` (exact, sign-extended W-bit gradient word)."""
    G = len(g_u)
    we = sig_s(G)
    x = sext(word, we)
    g = sig_s(G)
    s = sig_s(G)

    @always_comb
    def add():
        g.next = g_u.signed()

    @always_comb
    def sm():
        if bfirst:
            s.next = we
        else:
            s.next = g + we

    @always_comb
    def out():
        gnew_u.next = s[G:]

    return x, add, sm, out


@block
def wfold_lane(acc, g_u, bfirst, gnew_u, W, F):
    """Filter gradient: round/saturate the exact accumulator once, add into the buffer."""
    r = sig_s(W)
    rs = round_sat(acc, r, F)
    f = fold_lane(r, g_u, bfirst, gnew_u)
    return rs, f


@block
def bfold_lane(acc, g_u, bfirst, gnew_u, W):
    """Bias gradient: saturate the exact error sum, add into the buffer."""
    r = sig_s(W)
    st = sat(acc, r)
    f = fold_lane(r, g_u, bfirst, gnew_u)
    return st, f


@block
def upd_lane(clk, rst, en, w_u, g_u, lr_u, wn_u, F):
    """``w' = sat(w - sat(round(lr * g)))`` in a three-register pipeline, every register
    loaded on ``en``: the gradient ``g`` (A), the product ``lr * g`` (B), the rounded and
    saturated step (C); the subtraction from the current ``w`` and its saturation follow
    C combinationally (the write-back cycle)."""
    W, G = len(w_u), len(g_u)
    w = sig_s(W)
    ga = sig_s(G)
    lr = sig_s(W)
    pr = sig_s(W + G)
    stepn = sig_s(W)
    step = sig_s(W)
    d = sig_s(W + 1)
    wn = sig_s(W)

    @always_comb
    def cast():
        w.next = w_u.signed()
        lr.next = lr_u.signed()

    @always_seq(clk.posedge, reset=rst)
    def sta():
        if en:
            ga.next = g_u.signed()

    @always_seq(clk.posedge, reset=rst)
    def mul():
        if en:
            pr.next = ga * lr

    rs = round_sat(pr, stepn, F)

    @always_seq(clk.posedge, reset=rst)
    def stc():
        if en:
            step.next = stepn

    @always_comb
    def sub():
        d.next = w - step

    st = sat(d, wn)

    @always_comb
    def out():
        wn_u.next = wn[W:]

    return cast, sta, mul, rs, stc, sub, st, out


# ---------------------------------------------------------------- top
def block_fn(p):
    K, W, F, S_IC, S_OC = p["K"], p["W"], p["F"], p["S_IC"], p["S_OC"]
    MAXW, MAXH, MAXB = p["MAX_WIDTH"], p["MAX_HEIGHT"], p["MAX_BATCH"]
    wd = widths(p)
    n, ns, aw, ew, G, DW = wd["n"], wd["nslot"], wd["aw"], wd["ew"], wd["gw"], wd["dw"]
    lw = wd["lb"]
    cw, rw = lw["cw"], lw["rw"]
    fb = wd["fb"]
    lb_fn = lbmod.block_fn(lb_params(p))
    tot = ns * n * W
    NSM1, NS, NW, BW, WM1 = ns - 1, ns, n * W, S_OC * W, W - 1

    @block
    def fpdeep_pg(clk, rst, start, cfg_width, cfg_height, cfg_pad, cfg_batch, cfg_lr,
                  busy, done, cfg_err, row_err,
                  s_axis_w_tdata, s_axis_w_tvalid, s_axis_w_tready,
                  s_axis_b_tdata, s_axis_b_tvalid, s_axis_b_tready,
                  s_axis_x_tdata, s_axis_x_tvalid, s_axis_x_tready, s_axis_x_tlast,
                  s_axis_err_tdata, s_axis_err_tvalid, s_axis_err_tready, s_axis_err_tlast,
                  m_axis_w_tdata, m_axis_w_tvalid, m_axis_w_tready, m_axis_w_tlast,
                  m_axis_b_tdata, m_axis_b_tvalid, m_axis_b_tready, m_axis_b_tlast):
        phase = sig_u(2)
        # ---- configuration check (all fields, before anything is consumed) ---------
        we_c, pe_c = sig_u(cw), sig_u(cw)
        he_r, pe_r = sig_u(rw), sig_u(rw)
        z1 = zext(cfg_width, we_c)
        z2 = zext(cfg_pad, pe_c)
        z3 = zext(cfg_height, he_r)
        z4 = zext(cfg_pad, pe_r)
        wsum, hsum = sig_u(cw), sig_u(rw)
        cbad = sig_b()

        @always_comb
        def cfgc():
            wsum.next = we_c + pe_c + pe_c
            hsum.next = he_r + pe_r + pe_r

        @always_comb
        def cfgchk():
            cbad.next = (cfg_width == 0 or cfg_width > MAXW or cfg_height == 0 or cfg_height > MAXH
                         or cfg_pad > K - 1 or wsum < K or hsum < K or cfg_batch == 0 or cfg_batch > MAXB
                         or cfg_lr == 0 or cfg_lr[WM1])

        w_r = sig_u(lw["fw"])
        h_r = sig_u(lw["fh"])
        p_r = sig_u(lw["fp"])
        bm1 = sig_u(fb)
        lr_r = sig_u(W)

        # ---- line buffer over the activations ---------------------------------------
        lb_start, lb_busy, lb_done, lb_cerr, lb_rerr = sig_b(), sig_b(), sig_b(), sig_b(), sig_b()
        win_d = sig_u(n * S_IC * W)
        win_v, win_r, win_l, win_u = sig_b(), sig_b(), sig_b(), sig_b()
        lbi = lb_fn(clk, rst, lb_start, w_r, h_r, p_r, lb_busy, lb_done, lb_cerr, lb_rerr,
                    s_axis_x_tdata, s_axis_x_tvalid, s_axis_x_tready, s_axis_x_tlast,
                    win_d, win_v, win_r, win_l, win_u)

        # ---- join windows with errors; input register ---------------------------------
        fire, wfire, bfire, sfirst = (sig_b() for _ in range(4))
        scnt, bcnt = sig_u(fb), sig_u(fb)
        en_o = sig_b(True)
        # update: ufire issues slot ucnt (ucnt == ns: the biases) into the 3-stage update
        # pipeline (valid/bias/last flags ua/ub/uc, moving on en_o); wb is its write-back
        ufire, ufire_f = sig_b(), sig_b()
        ucnt = sig_u(bits_for(ns + 1))
        va_u, vb_u, vc_u, ua, ub, uc, la, lu_b, lc = (sig_b() for _ in range(9))
        wb, wb_f, wb_b = sig_b(), sig_b(), sig_b()

        @always_comb
        def hand():
            s_axis_w_tready.next = phase == IDLE
            s_axis_b_tready.next = phase == IDLE
            wfire.next = phase == IDLE and s_axis_w_tvalid
            bfire.next = phase == IDLE and s_axis_b_tvalid
            win_r.next = phase == RUN and s_axis_err_tvalid
            s_axis_err_tready.next = phase == RUN and win_v
            fire.next = phase == RUN and win_v and s_axis_err_tvalid
            lb_start.next = phase == RUN and scnt != bcnt and not lb_busy
            ufire.next = phase == UPD and en_o and ucnt <= NS
            ufire_f.next = phase == UPD and en_o and ucnt < NS
            wb.next = en_o and vc_u
            wb_f.next = en_o and vc_u and not uc
            wb_b.next = en_o and vc_u and uc

        @always_seq(clk.posedge, reset=rst)
        def upipe():
            if en_o:
                va_u.next = ufire
                ua.next = ucnt == NS
                la.next = ucnt == NSM1 or ucnt == NS
                vb_u.next = va_u
                ub.next = ua
                lu_b.next = la
                vc_u.next = vb_u
                uc.next = ub
                lc.next = lu_b

        xr = sig_u(n * S_IC * W)
        er = sig_u(S_OC * W)
        va, fa, ea = sig_b(), sig_b(), sig_b()

        @always_seq(clk.posedge, reset=rst)
        def inreg():
            va.next = fire
            fa.next = sfirst
            ea.next = fire and win_u
            if fire:
                xr.next = win_d
                er.next = s_axis_err_tdata

        # ---- products (registered) and exact accumulators -------------------------------
        vb, fbf, ebf = sig_b(), sig_b(), sig_b()
        eb = sig_u(S_OC * W)

        @always_seq(clk.posedge, reset=rst)
        def preg():
            vb.next = va
            fbf.next = fa
            ebf.next = ea
            eb.next = er

        # fold pulse: the accumulators hold a sample's sums two cycles after its last
        # window (line-buffer tuser) entered the input register
        fold = sig_b()

        @always_seq(clk.posedge, reset=rst)
        def ldly():
            fold.next = ebf

        bfirst = sig_b()
        insts = []
        gnew = []           # lane (slot j, element e) -> new gradient-buffer bits
        for o in range(S_OC):
            for c in range(S_IC):
                for e in range(n):
                    x = e * S_IC + c
                    pr = sig_s(2 * W)
                    insts.append(prod_reg(clk, rst, xr((x + 1) * W, x * W), er((o + 1) * W, o * W), pr))
                    acc = sig_s(aw)
                    insts.append(mac_lane(clk, rst, vb, fbf, pr, acc))
                    gnew.append((acc, o * S_IC + c, e))
        bsums = []
        for o in range(S_OC):
            es = sig_s(ew)
            insts.append(esum_lane(clk, rst, vb, fbf, eb((o + 1) * W, o * W), es))
            bsums.append(es)

        # ---- batch gradient buffers (one signal each, one process each) --------------
        gbuf = sig_u(ns * n * G)
        gbb = sig_u(S_OC * G)
        gn_lanes = [None] * (ns * n)
        for acc, j, e in gnew:
            l = j * n + e
            u = sig_u(G)
            insts.append(wfold_lane(acc, gbuf((l + 1) * G, l * G), bfirst, u, W, F))
            gn_lanes[l] = u
        gb_lanes = []
        for o in range(S_OC):
            u = sig_u(G)
            insts.append(bfold_lane(bsums[o], gbb((o + 1) * G, o * G), bfirst, u, W))
            gb_lanes.append(u)
        gn_cat = gn_lanes[0] if len(gn_lanes) == 1 else ConcatSignal(*reversed(gn_lanes))
        gb_cat = gb_lanes[0] if len(gb_lanes) == 1 else ConcatSignal(*reversed(gb_lanes))
        gall = ns * n * G
        sg = n * G

        if ns > 1:
            @always_seq(clk.posedge, reset=rst)
            def gbuf_st():
                if fold:
                    gbuf.next = gn_cat
                elif ufire_f:
                    gbuf.next = concat(gbuf[sg:0], gbuf[gall:sg])
        else:
            @always_seq(clk.posedge, reset=rst)
            def gbuf_st():
                if fold:
                    gbuf.next = gn_cat

        @always_seq(clk.posedge, reset=rst)
        def gbb_st():
            if fold:
                gbb.next = gb_cat

        # ---- parameter stores and the update of slot 0 -------------------------------
        wall = sig_u(tot)
        breg = sig_u(S_OC * W)
        wsrc = sig_u(n * W)
        wsh = sig_b()
        fdat = sig_u(n * W)
        bdat = sig_u(S_OC * W)
        wn_l, bn_l = [], []
        for e in range(n):
            u = sig_u(W)
            insts.append(upd_lane(clk, rst, en_o, wall((e + 1) * W, e * W), gbuf((e + 1) * G, e * G), lr_r, u, F))
            wn_l.append(u)
        for o in range(S_OC):
            u = sig_u(W)
            insts.append(upd_lane(clk, rst, en_o, breg((o + 1) * W, o * W), gbb((o + 1) * G, o * G), lr_r, u, F))
            bn_l.append(u)
        pk1 = pack(wn_l, fdat)
        pk2 = pack(bn_l, bdat)

        @always_comb
        def wsel():
            wsh.next = wfire or wb_f
            if phase == IDLE:
                wsrc.next = s_axis_w_tdata
            else:
                wsrc.next = fdat

        fs = filter_shift(clk, rst, wsh, wsrc, wall)

        @always_seq(clk.posedge, reset=rst)
        def bst():
            if bfire:
                breg.next = s_axis_b_tdata
            elif wb_b:
                breg.next = bdat

        # ---- output FIFO: filters then the bias beat -------------------------------------
        fde, bde = sig_u(DW), sig_u(DW)
        x1 = zext(fdat, fde)
        x2 = zext(bdat, bde)
        din = sig_u(DW)
        dlast = sig_b()
        duser = sig_u(1)
        o_d = sig_u(DW)
        o_v, o_r, o_l = sig_b(), sig_b(), sig_b()
        o_user = sig_u(1)

        @always_comb
        def dinc():
            if uc:
                din.next = bde
                duser.next = 1
            else:
                din.next = fde
                duser.next = 0
            dlast.next = lc

        ofifo = out_fifo2(clk, rst, din, dlast, duser, wb, en_o, o_d, o_v, o_r, o_l, o_user)

        @always_comb
        def outs():
            m_axis_w_tdata.next = o_d[NW:]
            m_axis_b_tdata.next = o_d[BW:]
            m_axis_w_tlast.next = o_l
            m_axis_b_tlast.next = o_l
            m_axis_w_tvalid.next = o_v and not o_user[0]
            m_axis_b_tvalid.next = o_v and o_user[0]
            if o_user[0]:
                o_r.next = m_axis_b_tready
            else:
                o_r.next = m_axis_w_tready

        # ---- control -----------------------------------------------------------------------
        fcnt = sig_u(fb)

        @always_seq(clk.posedge, reset=rst)
        def ctl():
            done.next = False
            if start and phase == IDLE:
                row_err.next = False
                if cbad:
                    cfg_err.next = True
                    done.next = True
                else:
                    cfg_err.next = False
                    phase.next = RUN
                    w_r.next = cfg_width
                    h_r.next = cfg_height
                    p_r.next = cfg_pad
                    bm1.next = cfg_batch - 1
                    lr_r.next = cfg_lr
                    bcnt.next = cfg_batch
                    scnt.next = 0
                    sfirst.next = True
                    bfirst.next = True
                    fcnt.next = 0
                    ucnt.next = 0
            if lb_start:
                scnt.next = scnt + 1
            if fire:
                sfirst.next = win_u       # the window after a sample's last starts the next sample
                if s_axis_err_tlast != win_l:
                    row_err.next = True
            if lb_rerr and phase == RUN and scnt != 0:    # lb flag is stale until its first start
                row_err.next = True
            if lb_cerr and phase == RUN and lb_done:     # never: the fields were checked above
                cfg_err.next = True
            if fold:
                bfirst.next = False
                fcnt.next = fcnt + 1
                if fcnt == bm1:
                    phase.next = UPD
            if ufire:
                ucnt.next = ucnt + 1
            if wb_b:
                phase.next = FLUSH
            if phase == FLUSH and not o_v:
                phase.next = IDLE
                done.next = True

        @always_comb
        def bsy():
            busy.next = phase != IDLE

        return (z1, z2, z3, z4, cfgc, cfgchk, lbi, hand, upipe, inreg, preg, ldly, insts, gbuf_st, gbb_st,
                pk1, pk2, wsel, fs, bst, x1, x2, dinc, ofifo, outs, ctl, bsy)

    return fpdeep_pg


def build(p):
    ports = ports_of(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    K, W, F, S_IC, S_OC = p["K"], p["W"], p["F"], p["S_IC"], p["S_OC"]
    wd = widths(p)
    lw = wd["lb"]
    ns = wd["nslot"]
    return Datasheet(
        summary=f"Parameter gradient and mini-batch SGD of one FPDeep node (section 5.5, Eq. 3-4): the "
                f"activations of {S_IC} input channel(s) stream through a zero-padding line buffer whose "
                f"K x K windows meet, position by position, the errors of {S_OC} output channel(s); "
                f"{wd['macs']} multipliers (one per filter element) accumulate exactly per sample, each "
                "sample's gradient is rounded once and summed exactly over the mini-batch, and the step "
                "w' = sat(w - sat(round(lr_q * sum g))) updates the stored filters and biases and streams "
                "them out. Reference: `golden.conv.pg_minibatch` (= `param_gradient` + `update`).",
        latency="8 cycles from the handshake of the last error beat of the mini-batch to the first updated "
                f"filter on an always-ready sink (fold into the batch buffer; the update pipeline: gradient, "
                f"product lr_q * g, rounded step, then w - step into the 2-entry FIFO), then "
                f"{ns} filter beats and the bias beat one per cycle; done one cycle after the bias beat",
        throughput="one output position (all MACs busy) per cycle; padding costs no cycles (padding-free "
                   "line buffer scan): an output row of Wo positions takes Wo + max(0, K-1-2P) cycles, "
                   "the samples of a mini-batch stream back to back (the next sample's activations enter "
                   "while the previous one's last windows drain), then the update streams the parameters "
                   "out once per mini-batch (MAC utilisation over a whole mini-batch measured by "
                   "bench_throughput)",
        fields=[("cfg_width", str(lw["fw"]), f"input-map width, 1..{p['MAX_WIDTH']}"),
                ("cfg_height", str(lw["fh"]), f"input-map height, 1..{p['MAX_HEIGHT']}"),
                ("cfg_pad", str(wd["fp"]), f"zero padding P, 0..{K - 1}; (H+2P) and (W+2P) >= K"),
                ("cfg_batch", str(wd["fb"]), f"samples per mini-batch, 1..{p['MAX_BATCH']}"),
                ("cfg_lr", str(W), f"lr_q = to_fixed(lr / batch) in Q({W},{F}), > 0")],
        notes=[f"Per sample: H*W activation beats on s_axis_x (channel c in bits [c*{W} +: {W}], row-major, "
               f"tlast per row) and Ho*Wo error beats on s_axis_err (Ho = H+2P-K+1; output channel o in bits "
               f"[o*{W} +: {W}], tlast per row); cfg_batch samples back to back.",
               f"Filters: {ns} beats of one {K}x{K} filter on s_axis_w (beat j = output channel j // {S_IC}, "
               f"input channel j % {S_IC}, the layout of `fpdeep_fp`), biases one beat on s_axis_b; load "
               "while idle. The step overwrites the store, so consecutive mini-batches continue training "
               "without reloading. Reset clears filters, biases and gradients to 0.",
               f"Bit-exact: accumulators of {wd['aw']} bits (filters) and {wd['ew']} bits (bias, exact error "
               f"sums), one round-to-nearest (ties to +inf) and saturation per sample, batch buffer of "
               f"{wd['gw']} bits per element, update as `golden.conv.update`.",
               "Output: the updated filters on m_axis_w (same order as loaded, tlast on the last), then "
               "one beat of biases on m_axis_b; done pulses when the bias beat is accepted.",
               "An invalid initiation (width/height 0 or above the maximum, cfg_pad > K-1, padded map "
               "smaller than K, batch 0 or above MAX_BATCH, lr_q <= 0) sets cfg_err, pulses done and "
               "consumes nothing.",
               "Backpressure on every stream: activations and errors are joined beat for beat (either "
               "may stall), the accumulation pipeline never stalls, the update stalls on the registered "
               "not-full flag of the output FIFO."])


CORE = CoreDef(
    name=KIND, family="fpdeep",
    description="FPDeep PG node: line-buffered activations x output errors, exact per-filter-element "
                "accumulators, mini-batch gradient buffer and SGD update",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={"default": {},
             "k2s": {"W": 8, "F": 4, "K": 2, "S_IC": 2, "S_OC": 3, "MAX_WIDTH": 7, "MAX_HEIGHT": 4,
                     "MAX_BATCH": 3},
             "k5": {"W": 8, "F": 4, "K": 5, "S_IC": 2, "S_OC": 1, "MAX_WIDTH": 6, "MAX_HEIGHT": 5,
                    "MAX_BATCH": 3},
             # bench sizes (make bench): realistic maps, K=3 and K=5, mini-batch of 4
             "b32": {"MAX_WIDTH": 32, "MAX_HEIGHT": 32, "MAX_BATCH": 4},
             "b28k5": {"W": 8, "F": 4, "K": 5, "S_IC": 1, "S_OC": 2, "MAX_WIDTH": 28, "MAX_HEIGHT": 28,
                       "MAX_BATCH": 4}},
    generator="rtl_gen/fpdeep/fpdeep_pg.py",
)
