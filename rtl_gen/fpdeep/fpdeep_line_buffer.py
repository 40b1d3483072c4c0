"""``fpdeep_line_buffer`` core: the FPDeep Line Buffer (section 5.3) that feeds the
convolution engines one K x K window per cycle.

A map of ``cfg_height`` rows x ``cfg_width`` pixels arrives row-major on ``s_axis_pix``
(one W-bit pixel per beat).  Every K x K window of the *zero-padded* map (``cfg_pad`` zero
rows and columns on every side) is presented on ``m_axis_win`` in raster order of its
top-left corner, exactly ``golden.conv.sliding_windows(map, K, cfg_pad)``.  FPDeep's error
maps (section 4.3: padded by ``K-1-pad``) use the same core.

Storage: a ring of K+2 row RAMs (``MAX_WIDTH`` words of W bits each, one process and a
synchronous read each, so synthesis infers block RAM): K rows under the windows being
read, the next row, and one row of slack.  The writer stores one pixel per cycle into the
row it is filling and stalls only when the ring is full.  The reader produces one window
per cycle: it reads one new column (K rows) per window; padding rows and columns are zeros
generated from its counters, never stored or visited, and the K-1-P leading columns of the
next output row are read during the current row's right-padding windows or idle cycles.
The unit of availability is a row: a window is produced once every input row it covers is
complete.

Maps overlap: ``busy`` drops once a map's last pixel is in, so the next map's start is
accepted and its rows stream into the free ring rows while the previous map's last windows
are read; ``done`` pulses once per map, when its last window (``m_axis_win_tuser``) is
accepted.  Pipeline (global stall on the registered not-full flag ``en`` of a 2-entry
output FIFO): reader + RAM read -> column select/mask and window register -> FIFO.
Control (start/busy/done/cfg_err) follows the PipeArch subroutines
(rtl_gen/pipearch/subroutine.py).
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
    Param("MAX_WIDTH", 32, "largest map width (pixels per row) = depth of each of the K+2 row RAMs", 1, 4096),
    Param("MAX_HEIGHT", 32, "largest map height (rows)", 1, 1 << 16),
    Param("MAX_PAD", 2, "largest zero padding per side (cfg_pad), at most K-1", 0, 6),
], [_check])


def widths(p: dict) -> dict:
    K, W = p["K"], p["W"]
    depth = max(p["MAX_WIDTH"], 2)
    return {"cw": bits_for(p["MAX_WIDTH"] + 2 * p["MAX_PAD"] + 1),
            "rw": bits_for(p["MAX_HEIGHT"] + 2 * p["MAX_PAD"] + 1),
            "rw2": bits_for(p["MAX_HEIGHT"] + 2 * p["MAX_PAD"] + 2 * (K + 2) + 2),
            "fw": field_bits(p["MAX_WIDTH"]), "fh": field_bits(p["MAX_HEIGHT"]),
            "fp": field_bits(p["MAX_PAD"]), "depth": depth, "ab": bits_for(depth - 1),
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
        Port("start", "in", 1, "initiate one map (sampled with the cfg_* fields while busy is low; "
                                 "may come while the previous map's windows still drain)"),
        Port("cfg_width", "in", wd["fw"], "map width in pixels, 1..MAX_WIDTH"),
        Port("cfg_height", "in", wd["fh"], "map height in rows, 1..MAX_HEIGHT"),
        Port("cfg_pad", "in", wd["fp"], "zero padding on every side, 0..MAX_PAD"),
        Port("busy", "out", 1, "cannot take a start: high from a start until that map's last pixel "
                               "is in and its reading has begun (the map may still be draining)"),
        Port("done", "out", 1, "one-cycle pulse per map when its last window is accepted (maps in start "
                               "order), or for an invalid initiation"),
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
        Port("m_axis_win_tuser", "out", 1, "last window of the map"),
    ]


@block
def slot_add(slot, i, R, y):
    """``y = (slot + i) mod R`` for ``slot < R``, ``i < R``."""
    @always_comb
    def add():
        if slot + i >= R:
            y.next = slot + i - R
        else:
            y.next = slot + i
    return add


@block
def slot_reg(clk, rst, en, x, y):
    """``y = x``, registered on ``en``."""
    @always_seq(clk.posedge, reset=rst)
    def st():
        if en:
            y.next = x
    return st


@block
def mux2(s, a, b, y):
    @always_comb
    def m():
        if s:
            y.next = b
        else:
            y.next = a
    return m


@block
def slot_mux(sel, ins, y):
    """``y = ins[sel]`` (0 for ``sel >= len(ins)``) as a tree of 2:1 multiplexers over every
    bit of ``sel`` (a list of signals is not a memory here)."""
    n = len(sel)
    zero = sig_u(len(y))
    level = list(ins) + [zero] * ((1 << n) - len(ins))
    insts = []
    for b in range(n):
        sb_ = sel(b + 1, b)
        nxt = []
        for k in range(0, len(level), 2):
            if level[k] is zero and level[k + 1] is zero:
                nxt.append(zero)
                continue
            o = y if len(level) == 2 else sig_u(len(y))
            insts.append(mux2(sb_, level[k], level[k + 1], o))
            nxt.append(o)
        level = nxt
    return insts


def ring_rows(p: dict) -> int:
    """Row RAMs in the ring: K rows of the windows being read, the head row of the next
    output row, and one row of slack so the writer can run a full row ahead."""
    return p["K"] + 2


def block_fn(p):
    """The MyHDL @block top of this core for parameters ``p`` (instantiable inside
    another block; conversion flattens it)."""
    K, W = p["K"], p["W"]
    wd = widths(p)
    cw, rw2 = wd["cw"], wd["rw2"]
    MAXW, MAXH, MAXP = p["MAX_WIDTH"], p["MAX_HEIGHT"], p["MAX_PAD"]
    R = ring_rows(p)
    sb = bits_for(R - 1)
    depth, ab = wd["depth"], wd["ab"]
    KW = K * W
    HW = (K - 1) * KW

    @block
    def fpdeep_line_buffer(clk, rst, start, cfg_width, cfg_height, cfg_pad, busy, done, cfg_err, row_err,
                           s_axis_pix_tdata, s_axis_pix_tvalid, s_axis_pix_tready, s_axis_pix_tlast,
                           m_axis_win_tdata, m_axis_win_tvalid, m_axis_win_tready, m_axis_win_tlast,
                           m_axis_win_tuser):
        en = sig_b(True)
        # ---- configuration: raw fields widened, derived limits ---------------
        we_c, pe_c = sig_u(cw), sig_u(cw)
        he_r, pe_r = sig_u(rw2), sig_u(rw2)
        z1 = zext(cfg_width, we_c)
        z2 = zext(cfg_pad, pe_c)
        z3 = zext(cfg_height, he_r)
        z4 = zext(cfg_pad, pe_r)
        wsum, hsum = sig_u(cw), sig_u(rw2)
        cbad = sig_b()

        @always_comb
        def cfgc():
            wsum.next = we_c + pe_c + pe_c
            hsum.next = he_r + pe_r + pe_r

        @always_comb
        def cfgchk():
            cbad.next = (cfg_width == 0 or cfg_width > MAXW or cfg_height == 0 or cfg_height > MAXH
                         or cfg_pad > MAXP or wsum < K or hsum < K)

        # ---- writer: one pixel per cycle into the ring of row RAMs ----------------
        # map geometry of the writer's (latest accepted) map
        g_wm1, g_hc, g_wo1 = sig_u(cw), sig_u(cw), sig_u(cw)
        g_w = sig_u(cw)
        g_hm1, g_ho1, g_hp, g_p = sig_u(rw2), sig_u(rw2), sig_u(rw2), sig_u(rw2)
        g_h, g_hcr = sig_u(rw2), sig_u(rw2)     # g_h = height, g_hcr = g_hc at the row width
        wbusy, rpend, errq = sig_b(), sig_b(), sig_b()
        wcol = sig_u(cw)
        wrow = sig_u(rw2)
        wslot = sig_u(sb)
        nfull = sig_u(rw2)           # complete rows in the ring not yet released by the reader
        wfire = sig_b()
        wadr = sig_u(ab)
        accept = sig_b()

        @always_comb
        def whand():
            s_axis_pix_tready.next = wbusy and nfull < R
            wfire.next = wbusy and nfull < R and s_axis_pix_tvalid
            wadr.next = wcol[ab:]
            accept.next = start and not (wbusy or rpend or errq)
            busy.next = wbusy or rpend or errq

        # ---- reader: one window per cycle, padding from the counters ---------------
        ract = sig_b()
        r_w, r_hc, r_wo1, r_wm1 = sig_u(cw), sig_u(cw), sig_u(cw), sig_u(cw)
        r_hm1, r_ho1, r_hp, r_p = sig_u(rw2), sig_u(rw2), sig_u(rw2), sig_u(rw2)
        r_h = sig_u(rw2)
        r_tw0 = sig_b()
        rr = sig_u(rw2)             # output row
        jj = sig_u(cw)              # window in the row
        hq = sig_u(cw)              # head columns of the upcoming row read so far
        lo = sig_u(rw2)             # oldest real row still held (reader's map)
        rsl = sig_u(rw2)            # its ring slot
        q = sig_u(cw)               # jj + r_hc: the column a window reads (register)
        tailw = sig_b()             # jj + r_hc >= r_w: the window's new column is right padding (register)
        first, lastj, lastr, uex = (sig_b() for _ in range(4))
        # rows the window / head reads need, kept in registers beside rr:
        # nr0 = min(rr + r_hc, r_hm1), nr1 = min(rr + r_hc + 1, r_hm1)
        nr0, nr1 = sig_u(rw2), sig_u(rw2)
        lim = sig_u(rw2)            # lo + nfull, kept in a register
        ok0, oku = sig_b(), sig_b()
        can_win, can_head, wf, hf = sig_b(), sig_b(), sig_b(), sig_b()
        nxt = sig_b()               # the RAM read is for padded row rr + 1 (else row rr)
        rdad = sig_u(ab)
        rden = sig_b()
        g_off = sig_u(rw2)
        # ring slot of padded row rr + i (mod R; only rows inside the map are used) and its
        # row mask (rr + i inside the map), i = 0..K, shifted down by one per output row
        tsl = [sig_u(sb) for _ in range(K + 1)]
        tmk = [sig_b() for _ in range(K + 1)]
        rk = sig_u(rw2)             # rr + K + 1: the row entering tmk[K] on the next row step
        mask0 = sig_u(K)
        dec = sig_u(rw2)
        fin_pop = sig_b()
        rowin = sig_b()             # the writer completes an input row this cycle

        @always_comb
        def rscan():
            first.next = jj == 0
            lastj.next = jj == r_wo1
            lastr.next = rr == r_ho1
            uex.next = jj == 0 or rr != r_ho1
            ok0.next = nr0 < lim
            if jj == 0:
                oku.next = nr0 < lim
            else:
                oku.next = nr1 < lim
            rowin.next = wfire and wcol == g_wm1

        @always_comb
        def rdec():
            cwin = ract and (jj != 0 or hq == r_hc) and (tailw or ok0)
            can_win.next = cwin
            can_head.next = (ract and hq != r_hc and uex and oku
                             and (not cwin or (tailw and jj != 0)))

        @always_comb
        def rfire():
            wf.next = en and can_win
            hf.next = en and can_head
            rden.next = (en and can_win and not tailw) or (en and can_head)
            if can_win and not tailw:
                rdad.next = q[ab:]
                nxt.next = False
            else:
                rdad.next = hq[ab:]
                nxt.next = jj != 0
            if lastr:
                dec.next = r_h - lo
            elif rr >= r_p:
                dec.next = 1
            else:
                dec.next = 0

        mparts = []
        for i in range(K):
            mb = sig_b()
            mparts.append(mb)

        @block
        def mask_bit(i, mb):
            a, b = tmk[i], tmk[i + 1]

            @always_comb
            def mk():
                if nxt:
                    mb.next = b
                else:
                    mb.next = a
            return mk
        mks = [mask_bit(i, mparts[i]) for i in range(K)]
        mcat = mparts[0] if K == 1 else ConcatSignal(*reversed(mparts))

        @always_comb
        def mcp():
            mask0.next = mcat

        # start-of-map values of the slot / mask tables (from registers only)
        tsl0 = [sig_u(sb) for _ in range(K + 1)]
        tmk0 = [sig_b() for _ in range(K + 1)]
        tsum = [sig_u(rw2) for _ in range(K + 1)]

        # (rsl + g_off + i) mod R, < 3R: the low sb bits minus 0, R or 2R (mod 2**sb)
        C1, C2 = (-R) % (1 << sb), (-2 * R) % (1 << sb)

        @block
        def tab0(i, ts, t0, m0):
            tl = sig_u(sb)

            @always_comb
            def sm():
                ts.next = rsl + g_off + i

            @always_comb
            def lo_():
                tl.next = ts[sb:]

            @always_comb
            def md():
                if ts >= 2 * R:
                    t0.next = tl + C2
                elif ts >= R:
                    t0.next = tl + C1
                else:
                    t0.next = tl
                m0.next = i >= g_p and i < g_hp
            return sm, lo_, md
        tab0s = [tab0(i, tsum[i], tsl0[i], tmk0[i]) for i in range(K + 1)]
        tkn, mkn = sig_u(sb), sig_b()

        @always_comb
        def tabn():
            if tsl[K] == R - 1:
                tkn.next = 0
            else:
                tkn.next = tsl[K] + 1
            mkn.next = rk >= r_p and rk < r_hp

        @block
        def tab_reg(i, t, m, t0, m0, tn, mn):
            @always_seq(clk.posedge, reset=rst)
            def st():
                if not ract and rpend:
                    t.next = t0
                    m.next = m0
                elif wf and lastj and not lastr:
                    t.next = tn
                    m.next = mn
            return st
        tabs = [tab_reg(i, tsl[i], tmk[i], tsl0[i], tmk0[i],
                        tsl[i + 1] if i < K else tkn, tmk[i + 1] if i < K else mkn) for i in range(K + 1)]

        # ---- control ----------------------------------------------------------------
        @always_seq(clk.posedge, reset=rst)
        def ctl():
            done.next = False
            if accept:
                row_err.next = False
                if cbad:
                    cfg_err.next = True
                    if fin_pop:
                        errq.next = True
                    else:
                        done.next = True
                else:
                    cfg_err.next = False
                    wbusy.next = True
                    rpend.next = True
                    wcol.next = 0
                    wrow.next = 0
                    g_w.next = we_c
                    g_wm1.next = we_c - 1
                    g_hc.next = K - 1 - pe_c
                    g_wo1.next = wsum - K
                    g_hm1.next = he_r - 1
                    g_h.next = he_r
                    g_hcr.next = K - 1 - pe_r
                    g_ho1.next = hsum - K
                    g_hp.next = he_r + pe_r
                    g_p.next = pe_r
                    g_off.next = R - pe_r
            elif errq and not fin_pop:
                errq.next = False
                done.next = True
            if fin_pop:
                done.next = True
            # writer
            if wfire:
                if s_axis_pix_tlast != (wcol == g_wm1):
                    row_err.next = True
                if wcol == g_wm1:
                    wcol.next = 0
                    if wslot == R - 1:
                        wslot.next = 0
                    else:
                        wslot.next = wslot + 1
                    if wrow == g_hm1:
                        wrow.next = 0
                        wbusy.next = False
                    else:
                        wrow.next = wrow + 1
                else:
                    wcol.next = wcol + 1
            # ring occupancy
            if wf and lastj:
                if wfire and wcol == g_wm1:
                    nfull.next = nfull + 1 - dec
                else:
                    nfull.next = nfull - dec
                if rsl + dec >= R:
                    rsl.next = rsl + dec - R
                else:
                    rsl.next = rsl + dec
            elif wfire and wcol == g_wm1:
                nfull.next = nfull + 1
            # lim = lo + nfull: a finished input row adds one; the end of a map drops its rows
            if wf and lastj and lastr:
                if rowin:
                    lim.next = lim + 1 - r_h
                else:
                    lim.next = lim - r_h
            elif rowin:
                lim.next = lim + 1
            # reader
            if not ract and rpend:
                ract.next = True
                rpend.next = False
                r_w.next = g_w
                r_hc.next = g_hc
                r_wo1.next = g_wo1
                r_hm1.next = g_hm1
                r_h.next = g_h
                r_wm1.next = g_wm1
                r_tw0.next = g_hc >= g_w
                q.next = g_hc
                tailw.next = g_hc >= g_w
                rk.next = K + 1
                if g_hcr > g_hm1:
                    nr0.next = g_hm1
                else:
                    nr0.next = g_hcr
                if g_hcr + 1 > g_hm1:
                    nr1.next = g_hm1
                else:
                    nr1.next = g_hcr + 1
                r_ho1.next = g_ho1
                r_hp.next = g_hp
                r_p.next = g_p
                rr.next = 0
                jj.next = 0
                hq.next = 0
                lo.next = 0
            if hf:
                hq.next = hq + 1
            if wf:
                if jj == 0:
                    hq.next = 0
                if lastj:
                    jj.next = 0
                    q.next = r_hc
                    tailw.next = r_tw0
                    if lastr:
                        ract.next = False
                        lo.next = 0
                    else:
                        rr.next = rr + 1
                        lo.next = lo + dec
                        rk.next = rk + 1
                        nr0.next = nr1
                        if nr1 != r_hm1:
                            nr1.next = nr1 + 1
                else:
                    jj.next = jj + 1
                    q.next = q + 1
                    tailw.next = q >= r_wm1

        # ---- ring of row RAMs: one process and one synchronous read each --------------
        rds = []
        rams = []

        @block
        def row_ram(s, rd):
            mem = [sig_u(W) for _ in range(depth)]

            @always(clk.posedge)
            def ram():
                if wfire and wslot == s:
                    mem[wadr].next = s_axis_pix_tdata
                if rden:
                    rd.next = mem[rdad]
            return ram

        for s in range(R):
            rd = sig_u(W)
            rds.append(rd)
            rams.append(row_ram(s, rd))

        # ---- stage 1: column select + mask, window assembly --------------------------
        v1w, v1h, t1, f1, last1, fin1, hz1 = (sig_b() for _ in range(7))
        m1 = sig_u(K)
        sel0 = [sig_u(sb) for _ in range(K)]
        sel1 = [sig_u(sb) for _ in range(K)]
        sls = [mux2(nxt, tsl[i], tsl[i + 1], sel0[i]) for i in range(K)]
        sregs = [slot_reg(clk, rst, en, sel0[i], sel1[i]) for i in range(K)]

        @always_seq(clk.posedge, reset=rst)
        def st1():
            if en:
                v1w.next = wf
                v1h.next = hf
                t1.next = tailw
                f1.next = first
                last1.next = lastj
                fin1.next = lastj and lastr
                hz1.next = hq >= r_w
                m1.next = mask0

        crow = [sig_u(W) for _ in range(K)]
        muxes = [slot_mux(sel1[i], rds, crow[i]) for i in range(K)]
        cparts = []

        @block
        def pix_mask(i, o):
            sl = crow[i]

            @always_comb
            def pm():
                if m1[i] and not hz1:
                    o.next = sl
                else:
                    o.next = 0
            return pm

        pms = []
        for i in range(K):
            o = sig_u(W)
            cparts.append(o)
            pms.append(pix_mask(i, o))
        col = cparts[0] if K == 1 else ConcatSignal(*reversed(cparts))   # window row i at [i*W]
        colw = sig_u(KW)
        hist = sig_u(HW)            # K-1 columns, column c (c = 0 oldest) at [c*K*W]
        nh = sig_u(HW)              # head columns of the upcoming row (left padding = zeros)
        hsel = sig_u(HW)

        @always_comb
        def wsel():
            if t1:
                colw.next = 0
            else:
                colw.next = col
            if f1:
                hsel.next = nh
            else:
                hsel.next = hist

        wparts = []
        for i in range(K - 1, -1, -1):
            wparts.append(colw((i + 1) * W, i * W))
            for c in range(K - 2, -1, -1):
                wparts.append(hsel(c * KW + (i + 1) * W, c * KW + i * W))
        win = ConcatSignal(*wparts)

        hnext, nhnext = sig_u(HW), sig_u(HW)
        if K > 2:
            @always_comb
            def shn():
                hnext.next = concat(colw, hsel[HW:KW])
                nhnext.next = concat(col, nh[HW:KW])
        else:
            @always_comb
            def shn():
                hnext.next = colw
                nhnext.next = col

        @always_seq(clk.posedge, reset=rst)
        def wreg():
            if en and v1w:
                hist.next = hnext
            if en:
                if v1w and f1:
                    nh.next = 0
                elif v1h:
                    nh.next = nhnext

        push = sig_b()
        fin_u = sig_u(1)
        mfin = sig_u(1)

        @always_comb
        def outc():
            push.next = en and v1w
            fin_u.next = fin1
            fin_pop.next = m_axis_win_tvalid and m_axis_win_tready and mfin[0]
            m_axis_win_tuser.next = mfin[0]

        ofifo = out_fifo2(clk, rst, win, last1, fin_u, push, en,
                          m_axis_win_tdata, m_axis_win_tvalid, m_axis_win_tready, m_axis_win_tlast, mfin)
        return (z1, z2, z3, z4, cfgc, cfgchk, whand, rscan, rdec, rfire, mks, mcp, tab0s, tabn, tabs, ctl,
                rams, sls, sregs, st1, muxes, pms, wsel, shn, wreg, outc, ofifo)

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
        latency="row-granular: the windows of an output row start once the last input row they cover "
                "is complete; the first is handed over (K-1-P) + 3 cycles after the handshake of that "
                "row's last pixel on an always-ready sink (leading-column reads, RAM read, window "
                "register, output FIFO; measured in `make bench`)",
        throughput="one window per cycle; padding costs no cycles. An output row of Wo windows takes "
                   "Wo + max(0, K-1-2P) cycles (the next row's K-1-P leading columns are read under "
                   "its P right-padding windows), and the input is taken at one pixel per cycle, so "
                   "with P = 0 a map is input-bound at about H*W cycles. The next map streams in while "
                   "the previous one drains, so maps started as soon as busy drops run back to back "
                   "(windows per cycle over whole maps measured in `make bench`).",
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
               f"Line storage: a ring of K+2 = {K + 2} row RAMs of {wd['depth']} x {W} bits, each "
               "written by the writer (one pixel per cycle) and read with a synchronous read by the "
               "reader (one column per window); padding is never stored.",
               "Back to back: a start is accepted while busy is low, i.e. as soon as the previous "
               "map's input is all in; its rows fill the free ring rows while the previous map's last "
               "windows are read. `done` pulses once per valid map when its last window (tuser) is "
               "accepted, in start order. The done of an invalid initiation is not ordered with the "
               "done of a map still draining (it may come first).",
               "An invalid initiation (width or height 0 or above its maximum, pad above MAX_PAD, or "
               "a padded map smaller than K in either direction: cfg_width + 2P < K or cfg_height + 2P < K, "
               "so a 1x1 map needs 2P >= K-1) sets `cfg_err`, pulses `done` and consumes nothing. "
               "`start` while `busy` is ignored; `cfg_err` and `row_err` refer to the latest start.",
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
