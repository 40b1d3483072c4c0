"""``fpdeep_line_buffer`` core: the FPDeep Line Buffer (section 5.3) that feeds the
convolution engines one K x K window per cycle.

A map of ``cfg_height`` rows x ``cfg_width`` pixels arrives row-major on ``s_axis_pix``
(one W-bit pixel per beat).  The core walks the *zero-padded* map (``cfg_pad`` zero rows
and columns on every side) one position per cycle: a position inside the image takes one
input beat, a padding position takes none.  Every position whose column and row are both
``>= K-1`` completes a window, which is presented on ``m_axis_win`` -- so the windows come
out in raster order of their top-left corner, exactly ``golden.conv.sliding_windows(map,
K, cfg_pad)``.  FPDeep's error maps (section 4.3: padded by ``K-1-pad``) use the same core.

Storage: one simple-dual-port RAM of ``MAX_WIDTH + 2*MAX_PAD`` words of ``(K-1)*W`` bits
(the K-1 previous padded rows of each column), written in one process with a synchronous
read, so synthesis infers block RAM.  Each position reads its column, and writes it back
one cycle later with the oldest row dropped and the new pixel added; the read and the
write of one cycle are always to different columns.

Pipeline (global stall on the registered not-full flag ``en`` of a 2-entry output FIFO):
scanner + RAM read -> window shift register -> FIFO.  Control (start/busy/done/cfg_err)
follows the PipeArch subroutines (rtl_gen/pipearch/subroutine.py).
"""
from __future__ import annotations

from myhdl import ConcatSignal, always, always_comb, always_seq, block, concat, intbv

from rtl_gen.common.blocks import out_fifo2
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_u
from rtl_gen.common.params import Param, ParamError, ParamSet, multiple_of_8
from rtl_gen.common.ports import make_factory
from rtl_gen.pipearch.subroutine import bits_for, field_bits

KIND = "fpdeep_line_buffer"


def _check(p: dict) -> str | None:
    if p["MAX_PAD"] > p["K"] - 1:
        return f"parameter MAX_PAD={p['MAX_PAD']} must be at most K-1={p['K'] - 1}"
    if p["MAX_WIDTH"] + 2 * p["MAX_PAD"] < p["K"]:
        return (f"parameter MAX_WIDTH={p['MAX_WIDTH']} with MAX_PAD={p['MAX_PAD']} cannot hold "
                f"one K={p['K']} window")
    if p["MAX_HEIGHT"] + 2 * p["MAX_PAD"] < p["K"]:
        return (f"parameter MAX_HEIGHT={p['MAX_HEIGHT']} with MAX_PAD={p['MAX_PAD']} cannot hold "
                f"one K={p['K']} window")
    return None


PARAMS = ParamSet([
    Param("W", 16, "pixel width (bits); the data is not interpreted", 8, 32, multiple_of_8),
    Param("K", 3, "window (kernel) size K x K", 2, 7),
    Param("MAX_WIDTH", 32, "largest map width (pixels per row); line RAM depth is MAX_WIDTH+2*MAX_PAD", 1, 4096),
    Param("MAX_HEIGHT", 32, "largest map height (rows)", 1, 1 << 16),
    Param("MAX_PAD", 2, "largest zero padding per side (cfg_pad), at most K-1", 0, 6),
], [_check])


def widths(p: dict) -> dict:
    K, W = p["K"], p["W"]
    return {"cw": bits_for(p["MAX_WIDTH"] + 2 * p["MAX_PAD"] + 1),
            "rw": bits_for(p["MAX_HEIGHT"] + 2 * p["MAX_PAD"] + 1),
            "fw": field_bits(p["MAX_WIDTH"]), "fh": field_bits(p["MAX_HEIGHT"]),
            "fp": field_bits(p["MAX_PAD"]), "depth": p["MAX_WIDTH"] + 2 * p["MAX_PAD"],
            "ww": K * K * W, "lw": (K - 1) * W}


@block
def zext(x, xe):
    """Zero-extend unsigned ``x`` into ``xe`` (no width change warning)."""
    k = len(xe) - len(x)
    if k == 0:
        @always_comb
        def cp():
            xe.next = x
        return cp
    assert k > 0

    @always_comb
    def ext():
        xe.next = concat(intbv(0)[k:], x)
    return ext


def ports_of(p: dict) -> list[Port]:
    wd = widths(p)
    K, W = p["K"], p["W"]
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (the line RAM is not cleared: it is "
                             "always written before it is read)"),
        Port("start", "in", 1, "initiate one map (sampled with the cfg_* fields while busy is low)"),
        Port("cfg_width", "in", wd["fw"], "map width in pixels, 1..MAX_WIDTH"),
        Port("cfg_height", "in", wd["fh"], "map height in rows, 1..MAX_HEIGHT"),
        Port("cfg_pad", "in", wd["fp"], "zero padding on every side, 0..MAX_PAD"),
        Port("busy", "out", 1, "a map is in progress"),
        Port("done", "out", 1, "one-cycle pulse: last window accepted, or an invalid initiation"),
        Port("cfg_err", "out", 1, "last initiation was invalid (sticky until the next start)"),
        Port("row_err", "out", 1, "an input tlast disagreed with the row end given by cfg_width "
                                  "(sticky until the next start; the data are still used)"),
        Port("s_axis_pix_tdata", "in", W, "one pixel, row-major order"),
        Port("s_axis_pix_tvalid", "in", 1, ""),
        Port("s_axis_pix_tready", "out", 1, ""),
        Port("s_axis_pix_tlast", "in", 1, "last pixel of each row (checked, see row_err)"),
        Port("m_axis_win_tdata", "out", K * K * W,
             "window: element (i, j) (row i from the top, column j from the left) in bits "
             "[(i*K + j)*W +: W]"),
        Port("m_axis_win_tvalid", "out", 1, ""),
        Port("m_axis_win_tready", "in", 1, ""),
        Port("m_axis_win_tlast", "out", 1, "last window of each output row"),
    ]


def block_fn(p):
    """The MyHDL @block top of this core for parameters ``p`` (instantiable inside
    another block; conversion flattens it)."""
    K, W = p["K"], p["W"]
    wd = widths(p)
    cw, rw, ww, lw, depth = wd["cw"], wd["rw"], wd["ww"], wd["lw"], wd["depth"]
    MAXW, MAXH, MAXP = p["MAX_WIDTH"], p["MAX_HEIGHT"], p["MAX_PAD"]

    @block
    def fpdeep_line_buffer(clk, rst, start, cfg_width, cfg_height, cfg_pad, busy, done, cfg_err, row_err,
                           s_axis_pix_tdata, s_axis_pix_tvalid, s_axis_pix_tready, s_axis_pix_tlast,
                           m_axis_win_tdata, m_axis_win_tvalid, m_axis_win_tready, m_axis_win_tlast):
        en = sig_b(True)
        # ---- configuration: raw fields widened, derived limits ---------------
        we_c, pe_c = sig_u(cw), sig_u(cw)
        he_r, pe_rr = sig_u(rw), sig_u(rw)
        z1 = zext(cfg_width, we_c)
        z2 = zext(cfg_pad, pe_c)
        z3 = zext(cfg_height, he_r)
        z4 = zext(cfg_pad, pe_rr)
        wsum, hsum = sig_u(cw), sig_u(rw)
        cbad = sig_b()

        @always_comb
        def cfgc():
            wsum.next = we_c + pe_c + pe_c
            hsum.next = he_r + pe_rr + pe_rr

        @always_comb
        def cfgchk():
            cbad.next = (cfg_width == 0 or cfg_width > MAXW or cfg_height == 0 or cfg_height > MAXH
                         or cfg_pad > MAXP or wsum < K or hsum < K)

        pad_c, cend, cend_m1, wlast = sig_u(cw), sig_u(cw), sig_u(cw), sig_u(cw)
        pad_r, rend, hlast = sig_u(rw), sig_u(rw), sig_u(rw)
        r0, c0 = sig_u(rw), sig_u(cw)
        running = sig_b()
        fire = sig_b()
        in_img = sig_b()
        pix0 = sig_u(W)
        wv0, last0, fin0 = sig_b(), sig_b(), sig_b()
        out_final_pop = sig_b()

        @always_comb
        def scan():
            in_img.next = c0 >= pad_c and c0 < cend and r0 >= pad_r and r0 < rend
            wv0.next = c0 >= K - 1 and r0 >= K - 1
            last0.next = c0 == wlast
            fin0.next = c0 == wlast and r0 == hlast

        @always_comb
        def hand():
            fire.next = running and en and (s_axis_pix_tvalid or not in_img)
            s_axis_pix_tready.next = running and en and in_img
            if in_img:
                pix0.next = s_axis_pix_tdata
            else:
                pix0.next = 0

        @always_seq(clk.posedge, reset=rst)
        def ctl():
            done.next = False
            if start and not busy:
                row_err.next = False
                if cbad:
                    cfg_err.next = True
                    done.next = True
                else:
                    cfg_err.next = False
                    busy.next = True
                    running.next = True
                    pad_c.next = pe_c
                    cend.next = we_c + pe_c
                    cend_m1.next = we_c + pe_c - 1
                    wlast.next = wsum - 1
                    pad_r.next = pe_rr
                    rend.next = he_r + pe_rr
                    hlast.next = hsum - 1
                    r0.next = 0
                    c0.next = 0
            if fire:
                if in_img and (s_axis_pix_tlast != (c0 == cend_m1)):
                    row_err.next = True
                if c0 == wlast:
                    c0.next = 0
                    if r0 == hlast:
                        r0.next = 0
                        running.next = False
                    else:
                        r0.next = r0 + 1
                else:
                    c0.next = c0 + 1
            if out_final_pop:
                busy.next = False
                done.next = True

        # ---- line RAM: K-1 previous padded rows per column, one process -------
        # entries > 2**(cw-1), so the cw-bit column index is exactly as wide as the RAM
        # address (Verilator -Wall); adds a few unused words only when depth+1 is a power of 2
        mem = [sig_u(lw) for _ in range(max(depth, (1 << (cw - 1)) + 1))]
        rd = sig_u(lw)
        wdat = sig_u(lw)
        wen = sig_b()
        v1, wv1, last1, fin1 = sig_b(), sig_b(), sig_b(), sig_b()
        pix1 = sig_u(W)
        c1 = sig_u(cw)

        @always(clk.posedge)
        def ram():
            if wen:
                mem[c1].next = wdat
            if fire:
                rd.next = mem[c0]

        @always_seq(clk.posedge, reset=rst)
        def st1():
            if en:
                v1.next = fire
                if fire:
                    pix1.next = pix0
                    c1.next = c0
                    wv1.next = wv0
                    last1.next = last0
                    fin1.next = fin0

        if K > 2:
            @always_comb
            def wb():
                wen.next = en and v1
                wdat.next = concat(pix1, rd[lw:W])
        else:
            @always_comb
            def wb():
                wen.next = en and v1
                wdat.next = pix1

        # ---- window shift register: new column enters on the right ---------------
        col = sig_u(K * W)          # column slot i = window row i (K-1 = the new pixel)
        hw = (K - 1) * W            # one row of the history: window columns 1..K-1
        hist = sig_u(K * hw)

        @always_comb
        def colc():
            col.next = concat(pix1, rd)

        wparts, hparts = [], []
        for i in range(K - 1, -1, -1):
            wparts += [col((i + 1) * W, i * W), hist((i + 1) * hw, i * hw)]
            hparts.append(col((i + 1) * W, i * W))
            if K > 2:
                hparts.append(hist((i + 1) * hw, i * hw + W))
        shifted = ConcatSignal(*wparts)     # the window completed by this column
        hnext = ConcatSignal(*hparts)

        @always_seq(clk.posedge, reset=rst)
        def wreg():
            if en and v1:
                hist.next = hnext

        push = sig_b()
        fin_u = sig_u(1)
        mfin = sig_u(1)

        @always_comb
        def outc():
            push.next = en and v1 and wv1
            fin_u.next = fin1
            out_final_pop.next = m_axis_win_tvalid and m_axis_win_tready and mfin[0]

        ofifo = out_fifo2(clk, rst, shifted, last1, fin_u, push, en,
                          m_axis_win_tdata, m_axis_win_tvalid, m_axis_win_tready, m_axis_win_tlast, mfin)
        return (z1, z2, z3, z4, cfgc, cfgchk, scan, hand, ctl, ram, st1, wb, colc, wreg, outc, ofifo)

    return fpdeep_line_buffer


def build(p):
    ports = ports_of(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    K, W = p["K"], p["W"]
    wd = widths(p)
    return Datasheet(
        summary="Streams a feature map (FP, PG) or an error map (EB) row by row and presents every "
                f"{K}x{K} window of the zero-padded map, one per cycle, in raster order of the "
                "window's top-left corner: the Line Buffer of FPDeep section 5.3 feeding the conv "
                "tiles. Reference: `golden.conv.sliding_windows(map, K, cfg_pad)`.",
        latency="2 cycles from the handshake of the pixel completing a window to that window's "
                "handshake on an always-ready sink (scanner/RAM read, window register, output FIFO)",
        throughput="one padded-map position per cycle: a window per cycle along an output row; each "
                   "padded row costs K-1 extra cycles at its start and the first K-1 padded rows give "
                   "no window, so a map takes (H+2P)*(W+2P) cycles for (H+2P-K+1)*(W+2P-K+1) windows "
                   "(measured in `make bench`). Without padding the input is consumed at one pixel "
                   "per cycle.",
        fields=[("cfg_width", str(wd["fw"]), f"pixels per row, 1..{p['MAX_WIDTH']}"),
                ("cfg_height", str(wd["fh"]), f"rows, 1..{p['MAX_HEIGHT']}"),
                ("cfg_pad", str(wd["fp"]), f"zero padding P on every side, 0..{p['MAX_PAD']}")],
        notes=[f"Window ordering: element (i, j) -- row i from the top, column j from the left of the "
               f"{K}x{K} window -- is `m_axis_win_tdata[(i*{K} + j)*{W} +: {W}]`, i.e. "
               "`pack(window.reshape(-1))` with element (0, 0) in the least significant bits. "
               "This is the ordering `fpdeep_conv_tile` expects.",
               "Output map: (cfg_height + 2P - K + 1) rows of (cfg_width + 2P - K + 1) windows; "
               "`m_axis_win_tlast` is set on the last window of every output row.",
               "Input: exactly cfg_width*cfg_height pixels, row-major. The source sets `tlast` on the "
               "last pixel of every row; lengths come from the fields, and a disagreeing `tlast` sets "
               "the sticky `row_err` flag (the pixel is still used).",
               "Line storage: one RAM of MAX_WIDTH+2*MAX_PAD words x (K-1)*W bits "
               f"({wd['depth']} x {wd['lw']} here) with a synchronous read; the read and the write "
               "of one cycle always address different columns.",
               "An invalid initiation (width or height 0 or above its maximum, pad above MAX_PAD, or "
               "a padded map smaller than K in either direction: cfg_width + 2P < K or cfg_height + 2P < K, "
               "so a 1x1 map needs 2P >= K-1) sets `cfg_err`, pulses `done` and consumes nothing. "
               "`start` while `busy` is ignored.",
               "Backpressure: a two-entry output FIFO with a registered not-full flag stalls the "
               "whole pipeline; no window is dropped or duplicated, and there is no combinational "
               "path from `m_axis_win_tready` to `s_axis_pix_tready`."])


CORE = CoreDef(
    name=KIND, family="fpdeep",
    description="FPDeep line buffer: streamed map to K x K windows with runtime size and zero padding",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={"default": {}, "k5": {"W": 8, "K": 5, "MAX_WIDTH": 12, "MAX_HEIGHT": 10, "MAX_PAD": 4}},
    generator="rtl_gen/fpdeep/fpdeep_line_buffer.py",
)
