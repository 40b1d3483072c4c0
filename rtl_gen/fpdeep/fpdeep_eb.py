"""``fpdeep_eb`` core: the error back-propagation (EB) module of one FPDeep node
(section 5.4, Eq. 2), with exact partial sums so the output channels can be split over
several runs or nodes (the ICP-style chain of ``fpdeep_fp``, on the other axis).

The EB of layer l takes the errors of S_OC output channels and produces the errors of
S_IC input channels:

    s_axis_err (S_OC output-channel errors per beat)
      -> line buffer, the error map zero-padded by K-1-cfg_pad (section 4.3)
      -> S_IC conv engines (one per input channel) of S_OC tiles each; tile (c, o) holds
         filter w[o][c] rotated by 180 degrees (wiring only: window element e meets filter
         element K*K-1-e), so the filters are loaded in their forward layout
      -> + s_axis_psum_in (exact partials of the previous run / node, when not first)
      -> not last: m_axis_psum_out (exact, scale 2**-2F)
         last:     one round/saturation to W bits -> m_axis_err

EB is the forward datapath with the roles of the channels swapped (FPDeep: "each EB module
has S_IC CEs", each CE with P = S_OC tiles, the output-channel errors broadcast to all CEs).
Structure and stall domains are those of ``fpdeep_fp`` (line buffer; engines; psum add +
rounding), each stalled by the registered not-full flag of a 2-entry FIFO.  No bias, no
activation function (the derivative of the activation is applied by the producer of the
errors).  Reference: ``golden.conv.eb_node`` (a chain of runs = ``golden.conv.backprop_error``).
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block, concat

from rtl_gen.common.blocks import out_fifo2, round_sat, sat
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.params import Param, ParamSet, multiple_of_8
from rtl_gen.common.ports import make_factory
from rtl_gen.fpdeep import fpdeep_line_buffer as lbmod
from rtl_gen.fpdeep.fpdeep_conv_engine import engine_trees, filter_shift, pack
from rtl_gen.fpdeep.fpdeep_conv_engine import widths as engine_widths
from rtl_gen.fpdeep.fpdeep_fp import chain_output, join_lane, sext_wide
from rtl_gen.pipearch.subroutine import bits_for, check_fmt, delay_flags, field_bits

KIND = "fpdeep_eb"


def engine_params(p: dict) -> dict:
    """The engine array seen by ``fpdeep_conv_engine``'s helpers: S_IC engines of S_OC tiles."""
    return {"W": p["W"], "F": p["F"], "K": p["K"], "S_IC": p["S_OC"], "S_OC": p["S_IC"]}


def lb_params(p: dict) -> dict:
    return {"W": p["S_OC"] * p["W"], "K": p["K"], "MAX_WIDTH": p["MAX_WIDTH"],
            "MAX_HEIGHT": p["MAX_HEIGHT"], "MAX_PAD": p["K"] - 1}


def _check_psum(p: dict) -> str | None:
    tw = engine_widths(engine_params(p))["tw"]
    if p["PSUM_W"] < tw + 1:
        return (f"parameter PSUM_W={p['PSUM_W']} must be at least {tw + 1} (the exact engine sum of "
                f"{tw} bits plus one bit of chain growth)")
    return None


PARAMS = ParamSet([
    Param("W", 16, "word width, signed fixed point (errors and weights)", 8, 32, multiple_of_8),
    Param("F", 8, "fraction bits", 1, 30),
    Param("K", 3, "kernel size K x K of the layer", 2, 7),
    Param("S_IC", 2, "input channels whose errors are produced (conv engines)", 1, 8),
    Param("S_OC", 2, "output channels whose errors are consumed per beat (tiles per engine)", 1, 8),
    Param("MAX_WIDTH", 16, "largest error-map width (the layer's output width Wo)", 1, 4096),
    Param("MAX_HEIGHT", 16, "largest error-map height (Ho)", 1, 1 << 16),
    Param("PSUM_W", 48, "width of one exact partial-sum lane on the psum ports (scale 2**-2F)", 16, 64,
          multiple_of_8),
], [check_fmt, lambda p: lbmod._check(lb_params(p)), _check_psum])


def widths(p: dict) -> dict:
    ew = engine_widths(engine_params(p))
    return {**ew, "lb": lbmod.widths(lb_params(p)), "ps": p["PSUM_W"], "iw": bits_for(ew["lat"] + 8),
            "fp": field_bits(p["K"] - 1)}


def ports_of(p: dict) -> list[Port]:
    K, W, S_IC, S_OC, PS = p["K"], p["W"], p["S_IC"], p["S_OC"], p["PSUM_W"]
    wd = widths(p)
    lw = wd["lb"]
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (filters clear to 0)"),
        Port("start", "in", 1, "initiate one error map (sampled with the cfg_* fields while busy is low; "
                                 "may come while the previous map still drains)"),
        Port("cfg_width", "in", lw["fw"], "error-map width Wo (the layer's output width), 1..MAX_WIDTH"),
        Port("cfg_height", "in", lw["fh"], "error-map height Ho, 1..MAX_HEIGHT"),
        Port("cfg_pad", "in", wd["fp"], "the layer's forward padding P, 0..K-1 (the error map is padded by K-1-P)"),
        Port("cfg_first", "in", 1, "1: first run of the chain (no psum input, s_axis_psum_in unused)"),
        Port("cfg_last", "in", 1, "1: last run: round/saturate -> m_axis_err; "
                                  "0: forward the exact partial sums on m_axis_psum_out"),
        Port("busy", "out", 1, "cannot take a start: the current map's input is not all in yet, or "
                               "two maps are in flight"),
        Port("done", "out", 1, "one-cycle pulse per map when its last output is accepted (in start "
                               "order), or for an invalid initiation"),
        Port("cfg_err", "out", 1, "last initiation was invalid (sticky until the next start)"),
        Port("row_err", "out", 1, "an input tlast disagreed with cfg_width (sticky until the next start)"),
        Port("psum_err", "out", 1, "an s_axis_psum_in tlast disagreed with the output row ends "
                                   "(sticky until the next start; the data are still used)"),
        Port("s_axis_w_tdata", "in", K * K * W,
             f"one K x K filter per beat in the FORWARD layout (element (i, j) in bits [(i*K + j)*W +: W]); "
             f"after {S_OC * S_IC} beats, beat j is output channel j // {S_IC}, input channel j % {S_IC}"),
        Port("s_axis_w_tvalid", "in", 1, "load only with no map in flight (priority over windows)"),
        Port("s_axis_w_tready", "out", 1, ""),
        Port("s_axis_err_tdata", "in", S_OC * W,
             "one error-map position, output channel o in bits [o*W +: W]; row-major"),
        Port("s_axis_err_tvalid", "in", 1, ""),
        Port("s_axis_err_tready", "out", 1, ""),
        Port("s_axis_err_tlast", "in", 1, "last position of each row (checked, see row_err)"),
        Port("s_axis_psum_in_tdata", "in", S_IC * PS,
             f"partial input errors of the previous run, input channel c in bits [c*{PS} +: {PS}], signed, "
             "scale 2**-2F, one beat per input-map position (raster order)"),
        Port("s_axis_psum_in_tvalid", "in", 1, ""),
        Port("s_axis_psum_in_tready", "out", 1, ""),
        Port("s_axis_psum_in_tlast", "in", 1, "last position of each row (checked, see psum_err)"),
        Port("m_axis_psum_out_tdata", "out", S_IC * PS,
             "psum_in + this run's exact partials (saturated to PSUM_W bits), same layout as psum_in"),
        Port("m_axis_psum_out_tvalid", "out", 1, "only when cfg_last = 0"),
        Port("m_axis_psum_out_tready", "in", 1, ""),
        Port("m_axis_psum_out_tlast", "out", 1, "last position of each row"),
        Port("m_axis_err_tdata", "out", S_IC * W,
             "errors of the input activations, input channel c in bits [c*W +: W], signed Q(W,F)"),
        Port("m_axis_err_tvalid", "out", 1, "only when cfg_last = 1"),
        Port("m_axis_err_tready", "in", 1, ""),
        Port("m_axis_err_tlast", "out", 1, "last position of each row"),
    ]


@block
def eb_out_lane(acc, is_last, y, W, F):
    """last: round/saturate to W bits, sign-extended into ``y``; else saturate to ``y``."""
    r = sig_s(W)
    rs = round_sat(acc, r, F)
    re = sig_s(len(y))
    sx = sext_wide(r, re)
    sp = sig_s(len(y))
    st = sat(acc, sp)

    @always_comb
    def mux():
        if is_last:
            y.next = re
        else:
            y.next = sp

    return rs, sx, st, mux


@block
def pad_map_rom(cfg_pad, cfg_width, lb_pad, lb_width, K):
    """Line-buffer padding K-1-cfg_pad (a case table); an out-of-range cfg_pad turns the
    width into 0 so the line buffer rejects the initiation."""
    rom = tuple(K - 1 - q if q <= K - 1 else 0 for q in range(1 << len(cfg_pad)))

    @always_comb
    def mp():
        lb_pad.next = rom[int(cfg_pad)]
        if cfg_pad > K - 1:
            lb_width.next = 0
        else:
            lb_width.next = cfg_width

    return mp


def block_fn(p):
    K, W, F, S_IC, S_OC, PS = p["K"], p["W"], p["F"], p["S_IC"], p["S_OC"], p["PSUM_W"]
    pe = engine_params(p)
    wd = widths(p)
    n, levels, tw, iw = wd["n"], wd["levels"], wd["tw"], wd["iw"]
    lw = wd["lb"]
    lb_fn = lbmod.block_fn(lb_params(p))
    nslot = S_IC * S_OC

    @block
    def fpdeep_eb(clk, rst, start, cfg_width, cfg_height, cfg_pad, cfg_first, cfg_last,
                  busy, done, cfg_err, row_err, psum_err,
                  s_axis_w_tdata, s_axis_w_tvalid, s_axis_w_tready,
                  s_axis_err_tdata, s_axis_err_tvalid, s_axis_err_tready, s_axis_err_tlast,
                  s_axis_psum_in_tdata, s_axis_psum_in_tvalid, s_axis_psum_in_tready, s_axis_psum_in_tlast,
                  m_axis_psum_out_tdata, m_axis_psum_out_tvalid, m_axis_psum_out_tready, m_axis_psum_out_tlast,
                  m_axis_err_tdata, m_axis_err_tvalid, m_axis_err_tready, m_axis_err_tlast):
        # ---- line buffer over S_OC-channel error positions, padded by K-1-P --------
        # the line buffer's done is not needed: map ends travel with the windows (tuser)
        lb_start, lb_busy, lb_done_unused = sig_b(), sig_b(), sig_b()
        lb_pad = sig_u(lw["fp"])
        lb_width = sig_u(lw["fw"])
        pm = pad_map_rom(cfg_pad, cfg_width, lb_pad, lb_width, K)
        win_d = sig_u(n * S_OC * W)
        win_v, win_r, win_l, win_u = sig_b(), sig_b(), sig_b(), sig_b()
        lbi = lb_fn(clk, rst, lb_start, lb_width, cfg_height, lb_pad, lb_busy, lb_done_unused, cfg_err, row_err,
                    s_axis_err_tdata, s_axis_err_tvalid, s_axis_err_tready, s_axis_err_tlast,
                    win_d, win_v, win_r, win_l, win_u)

        # ---- engines: S_IC engines of S_OC tiles ---------------------------------------
        en = sig_b(True)
        fire, wfire = sig_b(), sig_b()
        xr = sig_u(n * S_OC * W)
        wall = sig_u(nslot * n * W)
        v0 = sig_u(5)            # {map end, last run, first run, row last, valid}
        # two map slots (the map entering the engines and the next one): chain position
        cf0, cf1, cl0, cl1 = (sig_b() for _ in range(4))
        wsel, rsel, chk, errq = sig_b(), sig_b(), sig_b(), sig_b()
        nmaps = sig_u(2)
        bfx, blx = sig_b(), sig_b()
        ibusy = sig_b()

        @always_comb
        def slotsel():
            if rsel:
                bfx.next = cf1
                blx.next = cl1
            else:
                bfx.next = cf0
                blx.next = cl0
            ibusy.next = lb_busy or chk or errq or nmaps == 2
            busy.next = lb_busy or chk or errq or nmaps == 2
        bz = sig_u(S_IC * W)     # no bias in EB: constant-zero bias words, leaf never selected
        bsel = sig_b()

        @always_comb
        def hand():
            s_axis_w_tready.next = en
            wfire.next = en and s_axis_w_tvalid
            win_r.next = en and not s_axis_w_tvalid
            fire.next = en and win_v and not s_axis_w_tvalid
            lb_start.next = start and not ibusy

        @always_seq(clk.posedge, reset=rst)
        def inreg():
            bz.next = 0
            bsel.next = False
            if en:
                if fire:
                    xr.next = win_d
                v0.next = concat(win_u, blx, bfx, win_l, fire)

        fs = filter_shift(clk, rst, wfire, s_axis_w_tdata, wall)
        # transpose: engine c, tile o (slot c*S_OC + o) takes loaded beat o*S_IC + c
        if nslot > 1:
            parts = []
            for c in range(S_IC):
                for o in range(S_OC):
                    j = o * S_IC + c
                    parts.append(wall((j + 1) * n * W, j * n * W))
            wcat = ConcatSignal(*reversed(parts))
            wt = sig_u(nslot * n * W)

            @always_comb
            def tr():
                wt.next = wcat
        else:
            wt = wall
            tr = []
        sums = [sig_s(tw) for _ in range(S_IC)]
        # rotation by 180 degrees: window element e meets filter element n-1-e
        trees = engine_trees(clk, rst, en, xr, wt, bz, bsel, sums, pe, lambda t, e: (n - 1 - e) * S_OC + t)
        vt = sig_u(5)
        dly = delay_flags(clk, rst, en, v0, vt, 1 + levels)
        e_in = sig_u(S_IC * tw)
        pk1 = pack(sums, e_in)
        push1, last1 = sig_b(), sig_b()
        tag_u = sig_u(3)         # {map end, last run, first run}

        @always_comb
        def ec():
            push1.next = en and vt[0]
            last1.next = vt[1]
            tag_u.next = vt[5:2]

        e_d = sig_u(S_IC * tw)
        e_v, e_r, e_l = sig_b(), sig_b(), sig_b()
        e_tag = sig_u(3)
        e_first = sig_b()
        efifo = out_fifo2(clk, rst, e_in, last1, tag_u, push1, en, e_d, e_v, e_r, e_l, e_tag)

        @always_comb
        def etag():
            e_first.next = e_tag[0]

        # ---- + psum_in ------------------------------------------------------------
        en2 = sig_b(True)
        jfire = sig_b()
        v2, l2 = sig_b(), sig_b()

        @always_comb
        def jhand():
            e_r.next = en2 and (e_first or s_axis_psum_in_tvalid)
            s_axis_psum_in_tready.next = en2 and e_v and not e_first
            jfire.next = en2 and e_v and (e_first or s_axis_psum_in_tvalid)

        last2, mend2 = sig_b(), sig_b()

        @always_seq(clk.posedge, reset=rst)
        def jreg():
            if en2:
                v2.next = jfire
                if jfire:
                    l2.next = e_l
                    last2.next = e_tag[1]
                    mend2.next = e_tag[2]

        accs, joins = [], []
        for c in range(S_IC):
            acc = sig_s(PS + 1)
            accs.append(acc)
            joins.append(join_lane(e_d((c + 1) * tw, c * tw), s_axis_psum_in_tdata((c + 1) * PS, c * PS),
                                   e_first, jfire, clk, rst, acc))

        # ---- rounding and output --------------------------------------------------
        lanes, outl = [], []
        for c in range(S_IC):
            y = sig_s(PS)
            lanes.append(y)
            outl.append(eb_out_lane(accs[c], last2, y, W, F))
        mdone = sig_b()
        out = chain_output(clk, rst, lanes, l2, last2, mend2, en2, v2,
                           m_axis_psum_out_tdata, m_axis_psum_out_tvalid, m_axis_psum_out_tready,
                           m_axis_psum_out_tlast, m_axis_err_tdata, m_axis_err_tvalid,
                           m_axis_err_tready, m_axis_err_tlast, mdone, W)

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
                else:
                    cf0.next = cfg_first
                    cl0.next = cfg_last
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

        return (pm, lbi, hand, inreg, fs, tr, trees, dly, pk1, ec, efifo, jhand, jreg, joins, outl, out,
                slotsel, etag, ctl)

    return fpdeep_eb


def build(p):
    ports = ports_of(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    K, W, F, S_IC, S_OC, PS = p["K"], p["W"], p["F"], p["S_IC"], p["S_OC"], p["PSUM_W"]
    wd = widths(p)
    lw = wd["lb"]
    return Datasheet(
        summary=f"Error back-propagation of one FPDeep node (section 5.4, Eq. 2): the errors of {S_OC} "
                f"output channel(s) stream through a line buffer that pads the error map by K-1-P "
                f"(section 4.3); {S_IC} conv engine(s) (one per input channel) of {S_OC} {K}x{K} tile(s) "
                f"({wd['macs']} MACs per cycle) correlate them with the 180-degree rotated, transposed "
                "filters and sum over the output channels exactly; partial sums of earlier runs are added "
                "and the last run rounds once. Reference: `golden.conv.eb_node` / "
                "`golden.conv.backprop_error`.",
        latency=f"{wd['lat'] + 5} cycles from the handshake of the error beat completing a window to its "
                "output's handshake on an always-ready sink with psum_in valid (line buffer 2, engine input "
                f"register, products, {wd['levels']} tree levels, engine FIFO, psum add register, output FIFO)",
        throughput="one input-map position (S_IC input channels) per cycle; the K-1-P error-map padding "
                   "costs no cycles (padding-free line buffer scan): an output row of W = Wo+K-1-2P "
                   "positions takes W + max(0, 2P+1-K) cycles, and up to two maps are in flight, so maps "
                   "started as soon as busy drops run back to back (MAC utilisation over whole maps "
                   "measured by the bench_throughput test)",
        fields=[("cfg_width", str(lw["fw"]), f"error-map width Wo, 1..{p['MAX_WIDTH']}"),
                ("cfg_height", str(lw["fh"]), f"error-map height Ho, 1..{p['MAX_HEIGHT']}"),
                ("cfg_pad", str(wd["fp"]), f"forward padding P of the layer, 0..{K - 1}"),
                ("cfg_first", "1", "first run: psum_in taken as 0 and not read"),
                ("cfg_last", "1", "last run: rounded errors on m_axis_err; else exact psum on m_axis_psum_out")],
        notes=[f"Error beat: output channel o of this run in bits [o*{W} +: {W}] (the {S_OC} channels of one "
               "error-map position together), row-major, `tlast` on the last position of each row.",
               f"Filters: {S_OC * S_IC} beats of one {K}x{K} filter each, in the forward layout "
               f"w[o][c][i][j] (the same beats `fpdeep_fp` takes): beat j = output channel j // {S_IC}, "
               f"input channel j % {S_IC}. The 180-degree rotation and the (C_out, C_in) transpose are "
               "wiring. Filters reset to 0; load them only while no map is in flight (before the first "
               "start or after the last map's done: busy low is not enough); the last beats accepted "
               "define them.",
               f"Output: input channel c's error in bits [c*{W} +: {W}] on m_axis_err, raster order of the "
               "layer's input map (H = Ho + K-1-2P rows of Wo + K-1-2P positions), `tlast` per row.",
               f"Result = sat_W(round_F(psum_in + sum over the run's output channels)), one rounding point: "
               f"a layer with more than {S_OC} output channels runs once per group of {S_OC} (cfg_first on the "
               f"first, cfg_last on the last, psum_out of a run fed as psum_in of the next, {PS}-bit exact "
               f"lanes, engine sum {wd['tw']} bits) and gives exactly `golden.conv.backprop_error`; more than "
               f"{S_IC} input channels: one run per group of {S_IC} with that group's filters.",
               "An invalid initiation (width/height 0 or above the maximum, cfg_pad > K-1, or an output map "
               "smaller than 1x1, i.e. Wo + K-1-2P < 1) sets cfg_err, pulses done and consumes nothing. "
               "`start` while busy is ignored. Up to two maps are in flight: a start is taken once the "
               "previous map's input is all in (busy low), while its outputs still drain; cfg_first and "
               "cfg_last travel with each map's windows. done pulses once per map after its last output "
               "is accepted, in start order; the done of an invalid initiation is not ordered with that "
               "of a map still draining. cfg_err, row_err and psum_err refer to the latest start.",
               "Backpressure on every stream through three stall domains, each stalled by the registered "
               "not-full flag of its 2-entry FIFO: no combinational path from an output tready to an input "
               "tready; s_axis_psum_in_tready never depends on s_axis_psum_in_tvalid."])


CORE = CoreDef(
    name=KIND, family="fpdeep",
    description="FPDeep EB node: error map padded by K-1-P, S_IC engines x S_OC tiles on rotated filters, "
                "exact chain partials",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={"default": {},
             "k5": {"W": 8, "F": 4, "K": 5, "S_IC": 1, "S_OC": 2, "MAX_WIDTH": 6, "MAX_HEIGHT": 6,
                    "PSUM_W": 32},
             # bench sizes (make bench): realistic maps, K=3 and K=5
             "b32": {"MAX_WIDTH": 32, "MAX_HEIGHT": 32},
             "b28k5": {"W": 8, "F": 4, "K": 5, "S_IC": 1, "S_OC": 2, "MAX_WIDTH": 28, "MAX_HEIGHT": 28,
                       "PSUM_W": 32}},
    generator="rtl_gen/fpdeep/fpdeep_eb.py",
)
