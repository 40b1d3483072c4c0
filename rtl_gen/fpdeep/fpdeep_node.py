"""``fpdeep_node`` core: one FPDeep training node (sections 4.1, 4.3, 4.4, 5) -- forward
propagation (FP), error back-propagation (EB) and parameter gradient + mini-batch SGD
(PG) around an activation RAM and one parameter store, with chain ports so nodes form a
1-D array that splits the input channels of a layer (ICP).

The node owns S_IC input channels of a layer of S_OC output channels:

    FWD op  s_axis_pix (its S_IC channels) -> fpdeep_fp (+ s_axis_psum_in of the previous
            node) -> m_axis_psum_out (exact partials, to the next node) or, in the last
            node, bias/round/ReLU -> m_axis_act.  Every accepted pixel beat is also written
            into the activation RAM, region ``cfg_fsample`` (one region per sample).
    BWD op  s_axis_berr (the S_OC-channel output-error map) is broadcast to fpdeep_eb, to
            an error-map buffer in front of fpdeep_pg (two error rows and a margin, so EB
            is not held while PG's activation line buffer fills) and (unless cfg_bend)
            through a 2-entry FIFO to m_axis_berr for the next node of the error chain; the
            activation RAM region ``cfg_bsample`` is read back into fpdeep_pg.  EB's errors of this node's input channels leave on
            m_axis_ein.  PG is started by the first BWD op of a mini-batch (cfg_batch,
            cfg_lr); after cfg_batch BWD ops it takes the SGD step, writes the updated
            filters and biases back into FP and EB, and streams them out on m_axis_pw /
            m_axis_pb (the readback port).

Ops are pipelined: a FWD op may start once FP has taken the previous map's pixels (FP holds
two maps), a BWD op once the previous one's error map and activations are in and EB can
take another map; at most two ops of each kind are in flight, and their done pulses come in
order.  Filter and bias beats reach FP and EB through a register (``preg``).

The parameter store is the three filter registers of FP, EB and PG (the engines read all
filters in parallel, so they live in registers): host loads on s_axis_w / s_axis_b are
broadcast to all three, and PG's updated parameters are broadcast back to FP and EB (each
copy only while that stage is idle), so the copies are always equal.  The gradient buffer
is PG's batch buffer.  Reference: ``golden.conv.fp_node`` / ``backprop_error`` /
``pg_minibatch``; a chain gives ``golden.conv.icp_chain_minibatch``.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always, always_comb, always_seq, block, concat

from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_u
from rtl_gen.common.params import Param, ParamError, ParamSet, multiple_of_8
from rtl_gen.common.ports import make_factory
from rtl_gen.fpdeep import fpdeep_eb as ebmod
from rtl_gen.fpdeep import fpdeep_fp as fpmod
from rtl_gen.fpdeep import fpdeep_pg as pgmod
from rtl_gen.fpdeep.fpdeep_line_buffer import zext
from rtl_gen.pipearch.subroutine import bits_for, check_fmt, field_bits

KIND = "fpdeep_node"


def fp_params(p: dict) -> dict:
    return {"W": p["W"], "F": p["F"], "K": p["K"], "S_IC": p["S_IC"], "S_OC": p["S_OC"],
            "MAX_WIDTH": p["MAX_WIDTH"], "MAX_HEIGHT": p["MAX_HEIGHT"], "MAX_PAD": p["K"] - 1,
            "PSUM_W": p["PSUM_W"]}


def eb_params(p: dict) -> dict:
    """EB sees the error map: up to (MAX_HEIGHT + K-1) x (MAX_WIDTH + K-1) (pad K-1)."""
    return {"W": p["W"], "F": p["F"], "K": p["K"], "S_IC": p["S_IC"], "S_OC": p["S_OC"],
            "MAX_WIDTH": p["MAX_WIDTH"] + p["K"] - 1, "MAX_HEIGHT": p["MAX_HEIGHT"] + p["K"] - 1,
            "PSUM_W": p["PSUM_W"]}


def pg_params(p: dict) -> dict:
    return {"W": p["W"], "F": p["F"], "K": p["K"], "S_IC": p["S_IC"], "S_OC": p["S_OC"],
            "MAX_WIDTH": p["MAX_WIDTH"], "MAX_HEIGHT": p["MAX_HEIGHT"], "MAX_BATCH": p["MAX_BATCH"]}


def _check_subs(p: dict) -> str | None:
    for mod, fn in ((fpmod, fp_params), (ebmod, eb_params), (pgmod, pg_params)):
        try:
            mod.PARAMS.resolve(fn(p))
        except ParamError as e:
            return f"{e} (in the node's {mod.KIND})"
    return None


PARAMS = ParamSet([
    Param("W", 16, "word width, signed fixed point (activations, errors, weights, lr)", 8, 32, multiple_of_8),
    Param("F", 8, "fraction bits", 1, 30),
    Param("K", 3, "kernel size K x K", 2, 7),
    Param("S_IC", 2, "input channels held by this node (its ICP slice)", 1, 8),
    Param("S_OC", 2, "output channels of the layer", 1, 8),
    Param("MAX_WIDTH", 8, "largest input-map width", 1, 1024),
    Param("MAX_HEIGHT", 8, "largest input-map height", 1, 1024),
    Param("MAX_BATCH", 4, "largest mini-batch (activation RAM regions, PG batch)", 1, 256),
    Param("PSUM_W", 48, "width of one exact partial-sum lane on the forward chain (scale 2**-2F)", 16, 64,
          multiple_of_8),
], [check_fmt, _check_subs])


def widths(p: dict) -> dict:
    K, W = p["K"], p["W"]
    stride = p["MAX_HEIGHT"] * p["MAX_WIDTH"]
    aw = bits_for(p["MAX_BATCH"] * stride - 1)
    fpw = {q.name: q.width for q in fpmod.ports_of(fp_params(p))}
    ebw = {q.name: q.width for q in ebmod.ports_of(eb_params(p))}
    pgw = {q.name: q.width for q in pgmod.ports_of(pg_params(p))}
    return {"fw": fpw["cfg_width"], "fh": fpw["cfg_height"], "fp": fpw["cfg_pad"],
            "efw": ebw["cfg_width"], "efh": ebw["cfg_height"], "fb": pgw["cfg_batch"],
            "fs": field_bits(p["MAX_BATCH"] - 1) if p["MAX_BATCH"] > 1 else 1,
            "stride": stride, "aw": aw, "depth": 1 << aw, "rw": p["S_IC"] * W + 1,
            "mults": {"fp": K * K * p["S_IC"] * p["S_OC"], "eb": K * K * p["S_IC"] * p["S_OC"],
                      "pg": K * K * p["S_IC"] * p["S_OC"] + K * K + p["S_OC"]}}


def ports_of(p: dict) -> list[Port]:
    K, W, S_IC, S_OC, PS = p["K"], p["W"], p["S_IC"], p["S_OC"], p["PSUM_W"]
    wd = widths(p)
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (parameters, gradients and RAM pointers clear)"),
        Port("fwd_start", "in", 1, "initiate a FWD op (one sample's map), sampled with the cfg_* fields "
                                   "while fwd_busy is low"),
        Port("bwd_start", "in", 1, "initiate a BWD op (one sample's error map), sampled with the cfg_* "
                                   "fields while bwd_busy is low"),
        Port("cfg_width", "in", wd["fw"], "input-map width W, 1..MAX_WIDTH (FWD and BWD)"),
        Port("cfg_height", "in", wd["fh"], "input-map height H, 1..MAX_HEIGHT (FWD and BWD)"),
        Port("cfg_pad", "in", wd["fp"], "zero padding P, 0..K-1, with W+2P >= K and H+2P >= K"),
        Port("cfg_first", "in", 1, "FWD: first node of the forward chain (s_axis_psum_in unused)"),
        Port("cfg_last", "in", 1, "FWD: last node (bias, rounding, ReLU -> m_axis_act)"),
        Port("cfg_relu", "in", 1, "FWD, last node: 1 ReLU, 0 identity"),
        Port("cfg_fsample", "in", wd["fs"], "FWD: activation RAM region (sample of the mini-batch), "
                                            "0..MAX_BATCH-1"),
        Port("cfg_bsample", "in", wd["fs"], "BWD: activation RAM region read back for PG, 0..MAX_BATCH-1"),
        Port("cfg_bend", "in", 1, "BWD: end of the error chain (the error map is not forwarded on m_axis_berr)"),
        Port("cfg_batch", "in", wd["fb"], "BWD starting a mini-batch: samples, 1..MAX_BATCH"),
        Port("cfg_lr", "in", W, "BWD starting a mini-batch: lr_q = to_fixed(lr / batch), Q(W,F), > 0"),
        Port("fwd_busy", "out", 1, "no FWD start accepted: FP still takes the last map's pixels (or holds "
                                   "two maps), or the parameter update is pending"),
        Port("fwd_done", "out", 1, "one-cycle pulse: FWD op finished (last output accepted) or invalid"),
        Port("bwd_busy", "out", 1, "no BWD start accepted: the last op's error map or activations are not "
                                   "all in, EB holds two maps, two ops are in flight, or the update is pending"),
        Port("bwd_done", "out", 1, "one-cycle pulse, in start order: BWD op finished (its error map taken, "
                                   "its input errors out; after the last sample the update written back) or "
                                   "invalid"),
        Port("cfg_err", "out", 1, "the last initiation was invalid (sticky until the next valid start)"),
        Port("row_err", "out", 1, "an input tlast disagreed with the row end (FP/EB/PG, sticky per op)"),
        Port("psum_err", "out", 1, "an s_axis_psum_in tlast disagreed with the output row ends (sticky per op)"),
        Port("stage_busy", "out", 3, "bit 0 FP has a map, bit 1 EB has a map, bit 2 PG has a sample or "
                                     "the update (for idle-stage measurements)"),
        Port("s_axis_w_tdata", "in", K * K * W,
             f"parameter load: one K x K filter per beat (element (i, j) in bits [(i*K + j)*W +: W]); "
             f"{S_OC * S_IC} beats, beat j = output channel j // {S_IC}, input channel j % {S_IC} of the node"),
        Port("s_axis_w_tvalid", "in", 1, "accepted only while the node is idle (no op, no mini-batch open)"),
        Port("s_axis_w_tready", "out", 1, ""),
        Port("s_axis_b_tdata", "in", S_OC * W, "bias load, output channel o in bits [o*W +: W]"),
        Port("s_axis_b_tvalid", "in", 1, "accepted only while the node is idle"),
        Port("s_axis_b_tready", "out", 1, ""),
        Port("m_axis_pw_tdata", "out", K * K * W, "readback: updated filters after each mini-batch, load order"),
        Port("m_axis_pw_tvalid", "out", 1, ""),
        Port("m_axis_pw_tready", "in", 1, "must be drained for the update to finish"),
        Port("m_axis_pw_tlast", "out", 1, "last filter of the step"),
        Port("m_axis_pb_tdata", "out", S_OC * W, "readback: updated biases (one beat after the filters)"),
        Port("m_axis_pb_tvalid", "out", 1, ""),
        Port("m_axis_pb_tready", "in", 1, ""),
        Port("m_axis_pb_tlast", "out", 1, "always 1"),
        Port("s_axis_pix_tdata", "in", S_IC * W, "FWD: one map position, channel c in bits [c*W +: W]; row-major"),
        Port("s_axis_pix_tvalid", "in", 1, ""),
        Port("s_axis_pix_tready", "out", 1, ""),
        Port("s_axis_pix_tlast", "in", 1, "last position of each row"),
        Port("s_axis_psum_in_tdata", "in", S_OC * PS,
             f"forward chain in: previous node's exact partial sums, channel o in bits [o*{PS} +: {PS}]"),
        Port("s_axis_psum_in_tvalid", "in", 1, ""),
        Port("s_axis_psum_in_tready", "out", 1, ""),
        Port("s_axis_psum_in_tlast", "in", 1, "last position of each output row"),
        Port("m_axis_psum_out_tdata", "out", S_OC * PS, "forward chain out (cfg_last = 0), layout of psum_in"),
        Port("m_axis_psum_out_tvalid", "out", 1, ""),
        Port("m_axis_psum_out_tready", "in", 1, ""),
        Port("m_axis_psum_out_tlast", "out", 1, ""),
        Port("m_axis_act_tdata", "out", S_OC * W, "activations of the layer (cfg_last = 1), channel o in "
                                                  "bits [o*W +: W]"),
        Port("m_axis_act_tvalid", "out", 1, ""),
        Port("m_axis_act_tready", "in", 1, ""),
        Port("m_axis_act_tlast", "out", 1, ""),
        Port("s_axis_berr_tdata", "in", S_OC * W,
             "backward chain in: output-error map of the layer, channel o in bits [o*W +: W]; row-major"),
        Port("s_axis_berr_tvalid", "in", 1, ""),
        Port("s_axis_berr_tready", "out", 1, "accepted only during a BWD op, Ho*Wo beats"),
        Port("s_axis_berr_tlast", "in", 1, "last position of each error row"),
        Port("m_axis_berr_tdata", "out", S_OC * W, "backward chain out: the same error map for the next node"),
        Port("m_axis_berr_tvalid", "out", 1, "never when cfg_bend"),
        Port("m_axis_berr_tready", "in", 1, ""),
        Port("m_axis_berr_tlast", "out", 1, ""),
        Port("m_axis_ein_tdata", "out", S_IC * W, "errors of this node's input channels, channel c in bits "
                                                  "[c*W +: W], raster order of the H x W input map"),
        Port("m_axis_ein_tvalid", "out", 1, ""),
        Port("m_axis_ein_tready", "in", 1, ""),
        Port("m_axis_ein_tlast", "out", 1, "last position of each row"),
    ]


# ---------------------------------------------------------------- building blocks
@block
def fork_branch(clk, rst, s_valid, s_fire, en, m_valid, m_ready, ok):
    """One output of a broadcast: valid until this branch took the beat; ``ok`` when this
    branch has taken it or takes it now."""
    taken = sig_b()

    @always_comb
    def cmb():
        m_valid.next = s_valid and en and not taken
        ok.next = taken or (en and m_ready)

    @always_seq(clk.posedge, reset=rst)
    def st():
        if s_fire:
            taken.next = False
        elif s_valid and en and m_ready:
            taken.next = True

    return cmb, st


@block
def fork(clk, rst, s_valid, s_ready, s_fire, ens, m_valids, m_readys):
    """Broadcast one stream to len(ens) consumers (each takes every beat exactly once; a
    disabled branch blocks until enabled).  ``s_ready`` is combinational in the branches'
    readies, which inside the node never depend on their valids."""
    n = len(ens)
    oks = [sig_b() for _ in range(n)]
    brs = [fork_branch(clk, rst, s_valid, s_fire, ens[i], m_valids[i], m_readys[i], oks[i]) for i in range(n)]
    okv = ConcatSignal(*reversed(oks))
    allm = (1 << n) - 1

    @always_comb
    def cmb():
        s_ready.next = okv == allm
        s_fire.next = s_valid and okv == allm

    return brs, cmb


@block
def fifo2(clk, rst, din, din_last, push, not_full, m_tdata, m_tvalid, m_tready, m_tlast):
    """Two-entry FIFO with a registered not-full flag (no combinational tready path)."""
    w = len(din)
    d0, d1 = sig_u(w), sig_u(w)
    l0, l1 = sig_b(), sig_b()
    cnt = sig_u(2)

    @always_seq(clk.posedge, reset=rst)
    def seq():
        pop = cnt != 0 and m_tready
        if pop:
            d0.next = d1
            l0.next = l1
        if push:
            if cnt == 0 or (cnt == 1 and pop):
                d0.next = din
                l0.next = din_last
            else:
                d1.next = din
                l1.next = din_last
        if push and not pop:
            cnt.next = cnt + 1
            not_full.next = cnt == 0
        elif pop and not push:
            cnt.next = cnt - 1
            not_full.next = True
        else:
            not_full.next = cnt != 2

    @always_comb
    def outs():
        m_tdata.next = d0
        m_tlast.next = l0
        m_tvalid.next = cnt != 0

    return seq, outs


@block
def preg(clk, rst, d, v, r, q, qv):
    """Parameter pipeline register in front of FP / EB (whose filter/bias tready is the
    constant 1): the beat a broadcast branch hands over (v and r) reaches the stage one
    cycle later, so no broadcast or busy logic of the node reaches into the stage's window
    handshake in the same cycle."""
    @always_seq(clk.posedge, reset=rst)
    def rg():
        qv.next = v and r
        if v:
            q.next = d

    return rg


@block
def efifo(clk, rst, din, din_last, push, not_full, m_tdata, m_tvalid, m_tready, m_tlast, empty, depth):
    """Error-map buffer in front of PG: ``depth`` entries (a power of two) of distributed
    RAM, registered not-full flag, first-word-fall-through read."""
    w = len(din)
    ab = max(1, (depth - 1).bit_length())
    mem = [sig_u(w + 1) for _ in range(depth)]
    wp, rp = sig_u(ab), sig_u(ab)
    cnt = sig_u(ab + 1)
    wd, q = sig_u(w + 1), sig_u(w + 1)
    pop = sig_b()

    @always_comb
    def cat():
        wd.next = concat(din_last, din)

    @always(clk.posedge)
    def ram():
        if push:
            mem[wp].next = wd

    @always_comb
    def rd():
        q.next = mem[rp]

    @always_comb
    def outs():
        pop.next = cnt != 0 and m_tready
        m_tdata.next = q[w:]
        m_tlast.next = q[w]
        m_tvalid.next = cnt != 0
        empty.next = cnt == 0

    @always_seq(clk.posedge, reset=rst)
    def ptr():
        if push:
            if wp == depth - 1:
                wp.next = 0
            else:
                wp.next = wp + 1
        if pop:
            if rp == depth - 1:
                rp.next = 0
            else:
                rp.next = rp + 1
        if push and not pop:
            cnt.next = cnt + 1
            not_full.next = cnt < depth - 1
        elif pop and not push:
            cnt.next = cnt - 1
            not_full.next = True
        else:
            not_full.next = cnt < depth

    return cat, ram, rd, outs, ptr


@block
def act_ram(clk, we, wa, wd, ra, rd, depth):
    """Activation RAM: simple dual port, synchronous read (block RAM)."""
    mem = [sig_u(len(wd)) for _ in range(depth)]

    @always(clk.posedge)
    def ram():
        if we:
            mem[wa].next = wd
        rd.next = mem[ra]

    return ram


@block
def region_rom(sample, base, stride, nreg):
    rom = tuple((s if s < nreg else 0) * stride for s in range(1 << len(sample)))

    @always_comb
    def rm():
        base.next = rom[int(sample)]

    return rm


@block
def mux2(sel, a, b, y):
    """y = sel ? b : a."""
    @always_comb
    def m():
        if sel:
            y.next = b
        else:
            y.next = a
    return m


# ---------------------------------------------------------------- top
def block_fn(p):
    K, W, S_IC, S_OC = p["K"], p["W"], p["S_IC"], p["S_OC"]
    MAXW, MAXH, MAXB = p["MAX_WIDTH"], p["MAX_HEIGHT"], p["MAX_BATCH"]
    wd = widths(p)
    fw, fh, fpw, efw, efh, fs, AW, RW = wd["fw"], wd["fh"], wd["fp"], wd["efw"], wd["efh"], wd["fs"], \
        wd["aw"], wd["rw"]
    fp_fn = fpmod.block_fn(fpmod.PARAMS.resolve(fp_params(p)))
    eb_fn = ebmod.block_fn(ebmod.PARAMS.resolve(eb_params(p)))
    pg_fn = pgmod.block_fn(pgmod.PARAMS.resolve(pg_params(p)))
    XW = max(fw, fh, efw, efh) + 2          # width of the size arithmetic
    KM1 = K - 1
    NW, BW, XD = K * K * W, S_OC * W, S_IC * W
    WM1 = W - 1
    EMW, EMH = MAXW + K - 1, MAXH + K - 1      # largest error map (never exceeded when valid)
    # error-map buffer in front of PG: two error rows and a margin, so EB takes the map
    # while PG's activation line buffer still fills (PG lags EB by about a row)
    EQD = 1 << (2 * EMW + 7).bit_length()

    @block
    def fpdeep_node(clk, rst, fwd_start, bwd_start, cfg_width, cfg_height, cfg_pad, cfg_first, cfg_last,
                    cfg_relu, cfg_fsample, cfg_bsample, cfg_bend, cfg_batch, cfg_lr,
                    fwd_busy, fwd_done, bwd_busy, bwd_done, cfg_err, row_err, psum_err, stage_busy,
                    s_axis_w_tdata, s_axis_w_tvalid, s_axis_w_tready,
                    s_axis_b_tdata, s_axis_b_tvalid, s_axis_b_tready,
                    m_axis_pw_tdata, m_axis_pw_tvalid, m_axis_pw_tready, m_axis_pw_tlast,
                    m_axis_pb_tdata, m_axis_pb_tvalid, m_axis_pb_tready, m_axis_pb_tlast,
                    s_axis_pix_tdata, s_axis_pix_tvalid, s_axis_pix_tready, s_axis_pix_tlast,
                    s_axis_psum_in_tdata, s_axis_psum_in_tvalid, s_axis_psum_in_tready, s_axis_psum_in_tlast,
                    m_axis_psum_out_tdata, m_axis_psum_out_tvalid, m_axis_psum_out_tready,
                    m_axis_psum_out_tlast,
                    m_axis_act_tdata, m_axis_act_tvalid, m_axis_act_tready, m_axis_act_tlast,
                    s_axis_berr_tdata, s_axis_berr_tvalid, s_axis_berr_tready, s_axis_berr_tlast,
                    m_axis_berr_tdata, m_axis_berr_tvalid, m_axis_berr_tready, m_axis_berr_tlast,
                    m_axis_ein_tdata, m_axis_ein_tvalid, m_axis_ein_tready, m_axis_ein_tlast):
        insts = []
        # ---- configuration check --------------------------------------------------
        xw, xh, xp = sig_u(XW), sig_u(XW), sig_u(XW)
        insts += [zext(cfg_width, xw), zext(cfg_height, xh), zext(cfg_pad, xp)]
        wsum, hsum = sig_u(XW), sig_u(XW)
        ebw_x, ebh_x = sig_u(XW), sig_u(XW)
        eb_cw, eb_ch = sig_u(efw), sig_u(efh)
        cbad, fbad, bbad = sig_b(), sig_b(), sig_b()
        pg_busy = sig_b()

        @always_comb
        def sizes():
            wsum.next = xw + xp + xp
            hsum.next = xh + xp + xp

        @always_comb
        def ebsz():
            if wsum >= K:
                ebw_x.next = wsum - KM1
            else:
                ebw_x.next = 0
            if hsum >= K:
                ebh_x.next = hsum - KM1
            else:
                ebh_x.next = 0

        @always_comb
        def ebsl():
            eb_cw.next = ebw_x[efw:]
            eb_ch.next = ebh_x[efh:]

        @always_comb
        def chk():
            cbad.next = (cfg_width == 0 or cfg_width > MAXW or cfg_height == 0 or cfg_height > MAXH
                         or cfg_pad > KM1 or wsum < K or hsum < K or ebw_x > EMW or ebh_x > EMH)

        @always_comb
        def chk2():
            fbad.next = cbad or cfg_fsample >= MAXB
            bbad.next = cbad or cfg_bsample >= MAXB or (
                not pg_busy and (cfg_batch == 0 or cfg_batch > MAXB or cfg_lr == 0 or cfg_lr[WM1]))

        # ---- sub-blocks' signals ----------------------------------------------------
        fp_start, fp_busy, fp_done, fp_cerr, fp_rerr, fp_perr = (sig_b() for _ in range(6))
        eb_start, eb_busy, eb_done, eb_cerr, eb_rerr, eb_perr = (sig_b() for _ in range(6))
        pg_start, pg_done, pg_cerr, pg_rerr = (sig_b() for _ in range(4))
        fpw_d, fpw_v, fpw_r = sig_u(NW), sig_b(), sig_b()
        fpb_d, fpb_v, fpb_r = sig_u(BW), sig_b(), sig_b()
        ebw_d, ebw_v, ebw_r = sig_u(NW), sig_b(), sig_b()
        # registered copies actually seen by FP and EB (preg)
        fpw_q, fpw_qv, fpb_q, fpb_qv = sig_u(NW), sig_b(), sig_u(BW), sig_b()
        ebw_q, ebw_qv = sig_u(NW), sig_b()
        pgx_d, pgx_v, pgx_r, pgx_l = sig_u(XD), sig_b(), sig_b(), sig_b()
        # EB's error-chain ports are not used by the node (one EB run covers all S_OC
        # output channels): psum in tied off, psum out must never be valid (checked)
        ebp_in = sig_u(S_IC * p["PSUM_W"])
        ebp_in_v, ebp_in_l, ebp_in_r = sig_b(), sig_b(), sig_b()
        ebp_d = sig_u(S_IC * p["PSUM_W"])
        ebp_v, ebp_l = sig_b(), sig_b()
        ebp_r = sig_b(True)
        one, zero = sig_b(True), sig_b()
        eb_err_d, eb_err_v, eb_err_r, eb_err_l = sig_u(S_OC * W), sig_b(), sig_b(), sig_b()
        pge_v, pge_r = sig_b(), sig_b()
        pge_d, pge_l = sig_u(S_OC * W), sig_b()
        pgq_v, pgq_nf, pgq_push, pgq_empty = sig_b(), sig_b(), sig_b(), sig_b()
        chn_v, chn_nf = sig_b(), sig_b()
        pgw_d, pgw_v, pgw_r, pgw_l = sig_u(NW), sig_b(), sig_b(), sig_b()
        pgb_d, pgb_v, pgb_r, pgb_l = sig_u(BW), sig_b(), sig_b(), sig_b()
        pgsw_v, pgsw_r, pgsb_v, pgsb_r = sig_b(), sig_b(), sig_b(), sig_b()

        fpi = fp_fn(clk, rst, fp_start, cfg_width, cfg_height, cfg_pad, cfg_first, cfg_last, cfg_relu,
                    fp_busy, fp_done, fp_cerr, fp_rerr, fp_perr,
                    fpw_q, fpw_qv, fpw_r, fpb_q, fpb_qv, fpb_r,
                    s_axis_pix_tdata, s_axis_pix_tvalid, s_axis_pix_tready, s_axis_pix_tlast,
                    s_axis_psum_in_tdata, s_axis_psum_in_tvalid, s_axis_psum_in_tready, s_axis_psum_in_tlast,
                    m_axis_psum_out_tdata, m_axis_psum_out_tvalid, m_axis_psum_out_tready, m_axis_psum_out_tlast,
                    m_axis_act_tdata, m_axis_act_tvalid, m_axis_act_tready, m_axis_act_tlast)
        ebi = eb_fn(clk, rst, eb_start, eb_cw, eb_ch, cfg_pad, one, one,
                    eb_busy, eb_done, eb_cerr, eb_rerr, eb_perr,
                    ebw_q, ebw_qv, ebw_r,
                    s_axis_berr_tdata, eb_err_v, eb_err_r, s_axis_berr_tlast,
                    ebp_in, ebp_in_v, ebp_in_r, ebp_in_l,
                    ebp_d, ebp_v, ebp_r, ebp_l,
                    m_axis_ein_tdata, m_axis_ein_tvalid, m_axis_ein_tready, m_axis_ein_tlast)
        pgi = pg_fn(clk, rst, pg_start, cfg_width, cfg_height, cfg_pad, cfg_batch, cfg_lr,
                    pg_busy, pg_done, pg_cerr, pg_rerr,
                    s_axis_w_tdata, pgsw_v, pgsw_r, s_axis_b_tdata, pgsb_v, pgsb_r,
                    pgx_d, pgx_v, pgx_r, pgx_l,
                    pge_d, pge_v, pge_r, pge_l,
                    pgw_d, pgw_v, pgw_r, pgw_l, pgb_d, pgb_v, pgb_r, pgb_l)
        insts += [fpi, ebi, pgi, preg(clk, rst, fpw_d, fpw_v, fpw_r, fpw_q, fpw_qv),
                  preg(clk, rst, fpb_d, fpb_v, fpb_r, fpb_q, fpb_qv),
                  preg(clk, rst, ebw_d, ebw_v, ebw_r, ebw_q, ebw_qv)]

        # ---- parameter store: host loads broadcast to FP, EB and PG ------------------
        host_en = sig_b()
        hw_v, hw_r, hw_f = sig_b(), sig_b(), sig_b()
        hb_v, hb_r, hb_f = sig_b(), sig_b(), sig_b()
        hfw_v, heb_v, hfb_v = sig_b(), sig_b(), sig_b()
        upd_pend = sig_b()
        # ops in flight (accepted .. done), up to two each: FP maps (nf_out), BWD ops
        # (nb_out), EB maps (eb_n); fbusy_r / bbusy_r block the next start (registered)
        nf_out, nb_out, eb_n = sig_u(2), sig_u(2), sig_u(2)
        fbusy_r, bbusy_r = sig_b(), sig_b()

        @always_comb
        def hosten():
            host_en.next = not (fp_busy or eb_busy or pg_busy or nf_out != 0 or nb_out != 0 or eb_n != 0)
            hw_v.next = s_axis_w_tvalid and host_en
            hb_v.next = s_axis_b_tvalid and host_en
            s_axis_w_tready.next = hw_r and host_en
            s_axis_b_tready.next = hb_r and host_en

        insts.append(fork(clk, rst, hw_v, hw_r, hw_f, [one, one, one], [hfw_v, heb_v, pgsw_v],
                          [fpw_r, ebw_r, pgsw_r]))
        insts.append(fork(clk, rst, hb_v, hb_r, hb_f, [one, one], [hfb_v, pgsb_v], [fpb_r, pgsb_r]))

        # ---- PG's updated parameters: back into FP and EB (when idle), and out --------
        fp_idle, eb_idle = sig_b(), sig_b()
        ufw_v, ueb_v, ufb_v = sig_b(), sig_b(), sig_b()
        uw_f, ub_f = sig_b(), sig_b()

        @always_comb
        def idles():
            fp_idle.next = nf_out == 0
            eb_idle.next = eb_n == 0

        insts.append(fork(clk, rst, pgw_v, pgw_r, uw_f, [fp_idle, eb_idle, one], [ufw_v, ueb_v, m_axis_pw_tvalid],
                          [fpw_r, ebw_r, m_axis_pw_tready]))
        insts.append(fork(clk, rst, pgb_v, pgb_r, ub_f, [fp_idle, one], [ufb_v, m_axis_pb_tvalid],
                          [fpb_r, m_axis_pb_tready]))

        @always_comb
        def pmux():
            m_axis_pw_tdata.next = pgw_d
            m_axis_pw_tlast.next = pgw_l
            m_axis_pb_tdata.next = pgb_d
            m_axis_pb_tlast.next = pgb_l
            if pg_busy:
                fpw_v.next = ufw_v
                ebw_v.next = ueb_v
                fpb_v.next = ufb_v
            else:
                fpw_v.next = hfw_v
                ebw_v.next = heb_v
                fpb_v.next = hfb_v

        insts += [mux2(pg_busy, s_axis_w_tdata, pgw_d, fpw_d), mux2(pg_busy, s_axis_w_tdata, pgw_d, ebw_d),
                  mux2(pg_busy, s_axis_b_tdata, pgb_d, fpb_d)]

        # ---- activation RAM ---------------------------------------------------------------
        we = sig_b()
        wa, ra = sig_u(AW), sig_u(AW)
        wdat, rdat = sig_u(RW), sig_u(RW)
        fbase, bbase = sig_u(AW), sig_u(AW)
        insts += [region_rom(cfg_fsample, fbase, wd["stride"], MAXB),
                  region_rom(cfg_bsample, bbase, wd["stride"], MAXB),
                  act_ram(clk, we, wa, wdat, ra, rdat, wd["depth"])]

        @always_comb
        def wport():
            we.next = nf_out != 0 and s_axis_pix_tvalid and s_axis_pix_tready
            wdat.next = concat(s_axis_pix_tlast, s_axis_pix_tdata)

        # ---- read-back into PG: RAM -> 2-entry prefetch FIFO -> s_axis_x -------------
        rd_on, pend, issue, rd_pop = sig_b(), sig_b(), sig_b(), sig_b()
        rc, wm1 = sig_u(fw), sig_u(fw)
        rr, hm1 = sig_u(fh), sig_u(fh)
        d0, d1 = sig_u(RW), sig_u(RW)
        cnt = sig_u(2)
        rstart = sig_b()

        @always_comb
        def rcomb():
            rd_pop.next = cnt != 0 and pgx_r
            issue.next = rd_on and ((cnt + pend) < 2 or ((cnt + pend) == 2 and cnt != 0 and pgx_r))
            pgx_v.next = cnt != 0
            pgx_d.next = d0[XD:]
            pgx_l.next = d0[XD]

        @always_seq(clk.posedge, reset=rst)
        def reader():
            if rstart:
                rd_on.next = True
                ra.next = bbase
                rc.next = 0
                rr.next = 0
                wm1.next = cfg_width - 1
                hm1.next = cfg_height - 1
            elif issue:
                ra.next = ra + 1
                if rc == wm1:
                    rc.next = 0
                    rr.next = rr + 1
                    if rr == hm1:
                        rd_on.next = False
                else:
                    rc.next = rc + 1
            pend.next = issue
            if rd_pop:
                d0.next = d1
            if pend:
                if cnt == 0 or (cnt == 1 and rd_pop):
                    d0.next = rdat
                else:
                    d1.next = rdat
            if pend and not rd_pop:
                cnt.next = cnt + 1
            elif rd_pop and not pend:
                cnt.next = cnt - 1

        # ---- error map broadcast: EB, PG, next node -------------------------------------
        e_v, e_r, e_f = sig_b(), sig_b(), sig_b()
        e_open, chn_rdy = sig_b(), sig_b()
        bend_r = sig_b()
        ec, ewm1 = sig_u(efw), sig_u(efw)
        er, ehm1 = sig_u(efh), sig_u(efh)

        @always_comb
        def ecomb():
            e_v.next = s_axis_berr_tvalid and e_open
            s_axis_berr_tready.next = e_r and e_open
            chn_rdy.next = chn_nf or bend_r        # end of the chain: the copy is dropped

        insts.append(fork(clk, rst, e_v, e_r, e_f, [one, one, one], [eb_err_v, pgq_v, chn_v],
                          [eb_err_r, pgq_nf, chn_rdy]))
        insts.append(efifo(clk, rst, s_axis_berr_tdata, s_axis_berr_tlast, pgq_push, pgq_nf,
                           pge_d, pge_v, pge_r, pge_l, pgq_empty, EQD))
        chn_push = sig_b()

        @always_comb
        def cpush():
            chn_push.next = chn_v and chn_nf and not bend_r
            pgq_push.next = pgq_v and pgq_nf

        insts.append(fifo2(clk, rst, s_axis_berr_tdata, s_axis_berr_tlast, chn_push, chn_nf,
                           m_axis_berr_tdata, m_axis_berr_tvalid, m_axis_berr_tready, m_axis_berr_tlast))

        # ---- control ----------------------------------------------------------------------
        fwd_acc, bwd_acc, blast = sig_b(), sig_b(), sig_b()
        bcnt, bat_m1 = sig_u(wd["fb"]), sig_u(wd["fb"])
        nerr = sig_b()
        fdone_i, bdone_i, bfin = sig_b(), sig_b(), sig_b()
        ebd = sig_u(2)          # EB maps done, not yet reported as bwd_done
        ebp_bad = sig_b()

        @always_comb
        def acc():
            fwd_acc.next = fwd_start and not fbusy_r and not upd_pend and not (bwd_acc and blast)
            fp_start.next = fwd_acc and not fbad
            eb_start.next = bwd_acc and not bbad
            pg_start.next = bwd_acc and not bbad and not pg_busy
            rstart.next = bwd_acc and not bbad

        @always_comb
        def acc2():
            bwd_acc.next = bwd_start and not bbusy_r
            if pg_busy:
                blast.next = bcnt == bat_m1
            else:
                blast.next = cfg_batch == 1

        @always_comb
        def fin():
            # the oldest BWD op is done: its EB map is out and its error map taken (with two
            # ops in flight the older one's is), the last op of a mini-batch after the update;
            # never in the cycle an invalid BWD start is answered
            bfin.next = ebd != 0 and (nb_out == 2 or not (e_open or upd_pend)) and not (bwd_acc and bbad)

        @always_seq(clk.posedge, reset=rst)
        def ctl():
            bdone_i.next = False
            # FWD: the next map may start once FP has taken the pixels of the last (FP holds
            # two maps); an invalid start's done waits for a cycle without FP's done
            fbusy_r.next = fp_busy or fp_start
            if fdone_i and not (nf_out != 0 and fp_done):
                fdone_i.next = False
            if fwd_acc:
                if fbad:
                    nerr.next = True
                    fdone_i.next = True
                else:
                    nerr.next = False
                    wa.next = fbase
            if fp_start and not (nf_out != 0 and fp_done):
                nf_out.next = nf_out + 1
            elif nf_out != 0 and fp_done and not fp_start:
                nf_out.next = nf_out - 1
            if we:
                wa.next = wa + 1
            # BWD
            if bwd_acc:
                if bbad:
                    nerr.next = True
                    bdone_i.next = True
                else:
                    nerr.next = False
                    e_open.next = True
                    bend_r.next = cfg_bend
                    ec.next = 0
                    er.next = 0
                    ewm1.next = eb_cw - 1
                    ehm1.next = eb_ch - 1
                    upd_pend.next = blast
                    if pg_busy:
                        bcnt.next = bcnt + 1
                    else:
                        bcnt.next = 1
                        bat_m1.next = cfg_batch - 1
            if e_f:
                if ec == ewm1:
                    ec.next = 0
                    er.next = er + 1
                    if er == ehm1:
                        e_open.next = False
                else:
                    ec.next = ec + 1
            # BWD: the next op may start once this one's error map and activations are in,
            # EB can take another map, at most two ops are in flight, and no update is pending
            bbusy_r.next = eb_start or e_open or rd_on or eb_busy or upd_pend or nb_out == 2
            if eb_start and not eb_done:
                eb_n.next = eb_n + 1
            elif eb_done and not eb_start:
                eb_n.next = eb_n - 1
            if eb_done and not bfin:
                ebd.next = ebd + 1
            elif bfin and not eb_done:
                ebd.next = ebd - 1
            if eb_start and not bfin:
                nb_out.next = nb_out + 1
            elif bfin and not eb_start:
                nb_out.next = nb_out - 1
            if pg_done:
                upd_pend.next = False
            if bfin:
                bdone_i.next = True
            # EB's chain output is unused (cfg_last = 1 always): a beat on it is flagged; its
            # data and tlast are part of the condition so that nothing of EB is left unread
            if ebp_v and (ebp_l or ebp_d != 0 or ebp_d == 0):
                ebp_bad.next = True

        pg_work, eb_any, fp_any = sig_b(), sig_b(), sig_b()

        @always_comb
        def pgw():
            eb_any.next = eb_n != 0
            fp_any.next = nf_out != 0
            pg_work.next = pg_busy and nb_out != 0 and (e_open or not pgq_empty or upd_pend)

        @always_comb
        def outs():
            fwd_busy.next = fbusy_r or upd_pend
            bwd_busy.next = bbusy_r
            fwd_done.next = fdone_i or (nf_out != 0 and fp_done)
            bwd_done.next = bdone_i
            cfg_err.next = nerr or fp_cerr or eb_cerr or pg_cerr
            row_err.next = fp_rerr or eb_rerr or pg_rerr
            psum_err.next = fp_perr or eb_perr or ebp_bad or ebp_in_r
            stage_busy.next = concat(pg_work, eb_any, fp_any)
            ebp_in_v.next = zero
            ebp_in_l.next = zero
            ebp_in.next = 0

        return insts, sizes, ebsz, ebsl, chk, chk2, hosten, idles, pmux, wport, rcomb, reader, ecomb, \
            cpush, acc, acc2, fin, ctl, pgw, outs

    return fpdeep_node


def build(p):
    ports = ports_of(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    K, W, F, S_IC, S_OC, PS = p["K"], p["W"], p["F"], p["S_IC"], p["S_OC"], p["PSUM_W"]
    wd = widths(p)
    m = wd["mults"]
    return Datasheet(
        summary=f"One FPDeep training node (sections 4.1, 4.3-4.4, 5): FP, EB and PG of a layer's {S_IC}-"
                f"input-channel slice ({S_OC} output channels, {K}x{K} filters), an activation RAM of "
                f"{p['MAX_BATCH']} sample regions, one parameter store (host load, PG update write-back, "
                "readback port), PG's gradient buffer, and chain ports for forward partial sums and the "
                "backward error map, so N nodes in a 1-D array split the input channels of a layer (ICP). "
                "Reference: `golden.conv.icp_chain_minibatch` (= `forward`, `backprop_error`, "
                "`pg_minibatch` per node).",
        latency="FWD: that of `fpdeep_fp`; BWD: that of `fpdeep_eb` plus, after the last sample of a "
                "mini-batch, PG's fold, update and write-back (S_OC*S_IC+1 parameter beats)",
        throughput="FP, EB and PG each one map position per cycle; a FWD op and a BWD op run concurrently "
                   "(sample b+1 forward while sample b goes backward); a sample costs at least H*W cycles (FP "
                   "and PG take H*W input beats, EB gives H*W outputs); PG takes the error map through its own "
                   "buffer (EB is not held while PG's line buffer fills), and consecutive FWD ops (and BWD "
                   "ops) overlap one map's tail with the next one's head (two in flight). Cycles per sample "
                   "and the idle fraction of each stage are measured by the node's bench_throughput (`make "
                   "bench`) and, for chains of 2-4 nodes, by verif/fpdeep_node_chain's bench_throughput",
        fields=[("cfg_width", str(wd["fw"]), f"input-map width W, 1..{p['MAX_WIDTH']}"),
                ("cfg_height", str(wd["fh"]), f"input-map height H, 1..{p['MAX_HEIGHT']}"),
                ("cfg_pad", str(wd["fp"]), f"zero padding P, 0..{K - 1}; W+2P >= K, H+2P >= K"),
                ("cfg_first / cfg_last / cfg_relu", "1 each", "FWD: chain position, ReLU in the last node"),
                ("cfg_fsample", str(wd["fs"]), f"FWD: activation RAM region, 0..{p['MAX_BATCH'] - 1}"),
                ("cfg_bsample", str(wd["fs"]), f"BWD: region read back for PG, 0..{p['MAX_BATCH'] - 1}"),
                ("cfg_bend", "1", "BWD: end of the error chain (no m_axis_berr output)"),
                ("cfg_batch", str(wd["fb"]), f"BWD opening a mini-batch: samples, 1..{p['MAX_BATCH']}"),
                ("cfg_lr", str(W), f"BWD opening a mini-batch: lr_q = to_fixed(lr / batch), Q({W},{F}), > 0")],
        fields_title="Initiation fields (sampled on `fwd_start` / `bwd_start`)",
        notes=[
            "Control sequence: (1) load the node's filters (S_OC*S_IC beats on s_axis_w, beat j = output "
            f"channel j // {S_IC}, node input channel j % {S_IC}) and the layer's biases (one beat on "
            "s_axis_b) while the node is idle; (2) per sample b of a mini-batch of B: a FWD op "
            "(fwd_start, cfg_fsample = b; H*W pixel beats; the chain's partial sums / activations), then "
            "a BWD op (bwd_start, cfg_bsample = b; Ho*Wo error beats on s_axis_berr; H*W input-error beats "
            "on m_axis_ein); the FWD of sample b+1 may run concurrently with the BWD of sample b; the first "
            "BWD op of a mini-batch carries cfg_batch = B and cfg_lr; (3) the B-th BWD op ends with the SGD "
            "step: the updated filters and biases are written into FP and EB and leave on m_axis_pw / "
            "m_axis_pb (drain them); bwd_done pulses after that, and the next mini-batch may begin.",
            "Chain (ICP): node i holds input channels [i*S_IC, (i+1)*S_IC) of the layer; FWD: node 0 "
            "cfg_first, node N-1 cfg_last (+ bias, ReLU), m_axis_psum_out -> s_axis_psum_in of the next "
            "node; the result is exactly `relu(golden.conv.forward(x, w, b))` (one rounding point). BWD: "
            "the error map enters one end of the chain (s_axis_berr), every node forwards it on "
            "m_axis_berr except the node with cfg_bend; each node's EB gives the exact "
            "`golden.conv.backprop_error` of its own input channels (no partial sums needed: the node "
            "has every output channel), and its PG the gradient of its own filters. Every node "
            "computes the same bias gradient; the bias is used by the last node.",
            f"Activation RAM: {wd['depth']} words of {wd['rw']} bits ({p['MAX_BATCH']} regions of "
            f"{wd['stride']} positions, pixel + tlast), written as FP accepts pixels, read back into PG "
            "through a 2-entry prefetch FIFO (one beat per cycle).",
            "Parameter store: the filter registers of FP, EB and PG hold the same values: host loads are "
            "broadcast to all three (accepted only while the node is idle and no mini-batch is open), PG's "
            "update is broadcast to FP and EB, each copy when its stage is idle. Reset clears them to 0. "
            "Filters and bias are also read back on m_axis_pw / m_axis_pb after every step.",
            f"Multipliers: FP {m['fp']}, EB {m['eb']}, PG {m['pg']} (S_OC*S_IC*K*K gradient MACs, plus "
            f"K*K + S_OC for the update), {sum(m.values())} in all; `make synth` compares them with DSP48E1.",
            "Invalid initiation (map size out of range, pad > K-1, padded map smaller than K, sample >= "
            "MAX_BATCH, and for a BWD op opening a mini-batch: batch 0 or > MAX_BATCH, lr_q <= 0) sets "
            "cfg_err and pulses the op's done; nothing is consumed. A FWD start while fwd_busy (a FWD op or "
            "the pending update of a mini-batch whose last BWD op runs) is ignored; so is a BWD start "
            "while bwd_busy. busy drops before the op's done when the next op may already start "
            "(pipelined ops, done pulses in start order); a BWD op's done means its input errors are "
            "out (PG folds its sample from the error buffer; the mini-batch's last done follows the "
            "update).",
            "The map size must be the same for all samples of a mini-batch (PG samples it once). "
            "Errors on s_axis_berr are the layer's output errors with the activation derivative already "
            "applied (as for `fpdeep_eb`).",
            "Backpressure on every stream. Broadcasts (loads, error map, update) complete a beat when every "
            "consumer has taken it; the error chain output has a 2-entry FIFO with a registered not-full "
            "flag, so no tready path runs along the chain."])


CORE = CoreDef(
    name=KIND, family="fpdeep",
    description="FPDeep training node: FP, EB and PG with activation RAM, parameter store and gradient "
                "buffer; forward partial-sum and backward error chain ports (ICP 1-D array)",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={"default": {},
             "k2": {"W": 8, "F": 4, "K": 2, "S_IC": 1, "S_OC": 3, "MAX_WIDTH": 5, "MAX_HEIGHT": 4,
                    "MAX_BATCH": 3, "PSUM_W": 32},
             # bench shape (issue 16): the 32x32 map of fpdeep_fp/eb/pg's b32 and a 16-sample
             # mini-batch; run by make bench (bench_throughput) only, not by the test matrix
             "b32": {"MAX_WIDTH": 32, "MAX_HEIGHT": 32, "MAX_BATCH": 16}},
    generator="rtl_gen/fpdeep/fpdeep_node.py",
)
