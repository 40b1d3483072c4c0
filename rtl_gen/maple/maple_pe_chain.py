"""``maple_pe_chain`` core: one MAPLE processing chain (section 4.1, Fig. 2 and 4(A)) --
M scalar PEs, an M-bank input local store, a private local store per PE, and the chain's
smart memory (the ``maple_smart_memory`` block, instantiated and flattened) -- driven by
the instruction set of ``golden.maple_mapping`` (after the paper's mapping pseudo-assembly).

Bit-exact with ``golden.maple_mapping.ChainModel``.

* One input stream ``s_axis_cmd`` of DBEAT 32-bit words per beat carries instructions
  (one per beat, in bits [31:0]); WRITE_A / WRITE_B / WRITE_BV are followed by their data
  beats (W-bit values in the low bits of each 32-bit word): WRITE_A packs DBEAT words per
  beat (DBEAT input-local-store banks written per cycle), WRITE_BV one word for each of
  DBEAT PEs per beat (their local stores written in the same cycle), WRITE_B one word.
* The input local store (ILS) is M single-port-write / synchronous-read RAM banks: one
  line of M words is read per step and travels along the chain (the M-word intra-chain
  bus): PE i takes lane ``(w mod M) | (i mod G)`` of it and forwards the line to PE i+1
  one cycle later (a systolic forward register per PE).
* PE i multiplies that word with word ``lsa + j`` of its private local store (RAM,
  synchronous read) and accumulates the full product exactly (2W + log2 LSD + log2 M + 1
  bits).  After the last step, a drain unit sums S accumulators per result exactly,
  rounds once (F bits, half up) and saturates to W bits (the ``fixedpoint.dot`` rule),
  and stores {index = SET_SM_ADDR + r, value} into the smart memory, with ``tlast`` on
  the final result of an instruction that asks for it.
* The sequencer programs the smart memory through its AXI4-Lite port (internal master:
  it polls STATUS until idle, then writes OP/K/CMP, CTRL, BASE/LEN) and the smart memory's
  dump stream is the core's ``m_axis_out``.
"""
from __future__ import annotations

from myhdl import ConcatSignal, Signal, always, always_comb, always_seq, block, concat, intbv, modbv

from golden import maple_mapping as ISA
from rtl_gen.common.blocks import round_sat, sext
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.params import Param, ParamSet, multiple_of_8, power_of_two
from rtl_gen.common.ports import make_factory
from rtl_gen.maple import maple_smart_memory as SM

KIND = "maple_pe_chain"

# sequencer states
(Q_FETCH, Q_WA, Q_WB, Q_HOLD, Q_WV) = range(5)
# smart-memory command engine states (its internal AXI4-Lite master)
(C_IDLE, C_AR, C_R, C_AW, C_B) = range(5)


def pe_extra(W: int) -> int:
    """Pipeline stages a PE adds to the plain RAM-read / multiply / accumulate: the store's
    read data is registered (1); a product wider than one 18x18 DSP block is split into
    four half-width partial products, their two non-overlapping halves and the middle sum,
    and the final sum (2 more)."""
    return 1 if W <= 18 else 3


def walk_delay(W: int) -> int:
    """Issue of the last step of a MULT_ACC_DUMP -> the drain walker reads PE 0's final
    accumulator (cycles)."""
    return 4 + pe_extra(W)


@block
def dstage(clk, rst, vi, si, ni, li, vo, so, no, lo):
    """One stage of the drain descriptor delay line."""
    @always_seq(clk.posedge, reset=rst)
    def r():
        vo.next = vi
        so.next = si
        no.next = ni
        lo.next = li
    return r


def result_queue_depth(M: int) -> int:
    """Entries of the result queue between the drain and the smart memory."""
    return 4 * M


def log2(n: int) -> int:
    return n.bit_length() - 1


def widths(p: dict) -> dict:
    W, M, LSD, IL = p["W"], p["M"], p["LSD"], p["ILS_LINES"]
    MW, LAW, LNW = log2(M), log2(LSD), log2(IL)
    return {"MW": MW, "LAW": LAW, "LNW": LNW, "IAW": LNW + MW,
            "ACCW": 2 * W + LAW + MW + 1, "WD": W + p["IDXW"]}


def _cross(p: dict) -> str | None:
    if p["F"] >= p["W"]:
        return f"parameter F={p['F']} must be below W={p['W']}"
    if p["KMAX"] > p["DEPTH"]:
        return f"parameter KMAX={p['KMAX']} must not exceed DEPTH={p['DEPTH']}"
    if p["IDXW"] < log2(p["DEPTH"]):
        return f"parameter IDXW={p['IDXW']} must hold an RMW address: need IDXW >= log2(DEPTH)"
    if p["DBEAT"] > p["M"]:       # 0 means M
        return f"parameter DBEAT={p['DBEAT']} must not exceed M={p['M']} (one beat fills at most one line)"
    if p["ILS_LINES"] * p["M"] > 1 << 16:
        return (f"parameters ILS_LINES*M={p['ILS_LINES'] * p['M']} exceed the 16-bit input "
                f"local-store address field")
    return None


PARAMS = ParamSet([
    Param("W", 32, "word width (signed fixed point)", 8, 32, multiple_of_8),
    Param("F", 16, "fraction bits (the result rounding shift)", 0, 31),
    Param("M", 4, "PEs in the chain", 2, 16, power_of_two),
    Param("LSD", 64, "words in each PE local store (RAM, synchronous read); also the largest "
                     "MULT_ACC_DUMP n", 2, 4096, power_of_two),
    Param("ILS_LINES", 64, "input local store lines of M words (M RAM banks)", 2, 4096, power_of_two),
    Param("IDXW", 16, "smart-memory index width", 8, 16, multiple_of_8),
    Param("KMAX", 16, "smart-memory LIST size", 2, 256, power_of_two),
    Param("DEPTH", 256, "smart-memory RMW RAM entries", 2, 1 << 14, power_of_two),
    Param("DBEAT", 0, "32-bit words per s_axis_cmd beat, 0 = M (the data path width: WRITE_A writes "
                      "DBEAT input-local-store words and WRITE_BV DBEAT PE local stores per cycle)",
          0, 16, lambda v: None if v == 0 or v & (v - 1) == 0 else "must be 0 (= M) or a power of two"),
], [_cross])


def dbeat(p: dict) -> int:
    """32-bit words per s_axis_cmd beat (the DBEAT parameter; 0 means M)."""
    return p["DBEAT"] or p["M"]


def sm_params(p: dict) -> dict:
    return {"W": p["W"], "IDXW": p["IDXW"], "KMAX": p["KMAX"], "DEPTH": p["DEPTH"]}


def _sm_block(p: dict):
    """The ``maple_smart_memory`` @block function (taken from its factory's closure, so the
    smart-memory generator is reused unchanged)."""
    fac, _ = SM.build(SM.PARAMS.resolve(sm_params(p)))
    cells = dict(zip(fac.__code__.co_freevars, (c.cell_contents for c in fac.__closure__)))
    return cells["top_fn"]


# ------------------------------------------------------------------ small blocks
@block
def ram_1w1r(clk, we, wa, wd, ra, rd, depth):
    """``depth`` x len(wd) RAM, one write port, synchronous read (block RAM), no reset."""
    mem = [sig_u(len(wd)) for _ in range(depth)]

    @always(clk.posedge)
    def ram():
        if we:
            mem[wa].next = wd
        rd.next = mem[ra]

    return ram


@block
def bank_wr(we, wlane, wline, wline1, wleft, tdata, b, W, DBEAT, out_we, out_l, out_d):
    """Input-local-store bank ``b`` during a WRITE_A beat: it takes word ``o = (b - wptr)
    mod M`` of the beat (address wptr + o) when ``o < DBEAT`` and ``o < wleft`` (the words
    left, at most M)."""
    MW = len(wlane)
    OT = tuple((b - lane) % (1 << MW) for lane in range(1 << MW))    # o by wptr's lane
    o = sig_u(MW + 1)
    picks = {j: sig_u(W) for j in range(DBEAT)}
    muxes = [pick_chain(None if j == 0 else picks[j - 1], o, j, tdata, 32 * j, 32 * j + W, picks[j])
             for j in range(DBEAT)]
    last = picks[DBEAT - 1]

    @always_comb
    def c2():
        o.next = OT[int(wlane)]

    @always_comb
    def c3():
        out_we.next = we and o < DBEAT and o < wleft
        if b >= wlane:
            out_l.next = wline
        else:
            out_l.next = wline1
        out_d.next = last

    return muxes, c2, c3


@block
def pe_wr(ls_we, lpe, lv_we, vgrp, tdata, i, W, DBEAT, out_we, out_d):
    """PE ``i``'s local-store write: WRITE_B (its own or the broadcast id, word 0 of the
    beat) or WRITE_BV (group i div DBEAT of the beat's PEs, word i mod DBEAT)."""
    g = i // DBEAT
    lo = 32 * (i % DBEAT)
    hi = lo + W

    @always_comb
    def c():
        out_we.next = (ls_we and (lpe == i or lpe == ISA.BCAST)) or (lv_we and vgrp == g)
        if lv_we:
            out_d.next = tdata[hi:lo]
        else:
            out_d.next = tdata[W:]

    return c


@block
def pick_chain(prev, sel, b, src, lo, hi, out):
    """``out = src[hi:lo]`` when ``sel == b`` else ``prev`` (zero for the first link): one
    link of a lane multiplexer written without arrays of signals."""
    if prev is None:
        @always_comb
        def c():
            if sel == b:
                out.next = src[hi:lo]
            else:
                out.next = 0
    else:
        @always_comb
        def c():
            if sel == b:
                out.next = src[hi:lo]
            else:
                out.next = prev
    return c


@block
def pe(clk, rst, idx, line_in, v_in, f_in, lane_in, lsa_in, gmask,
       ls_wei, ls_wa, ls_wd,
       line_out, v_out, f_out, lane_out, lsa_out, acc, W, LSD, fwd):
    """One PE: lane select from the forwarded line, private local store, multiply,
    exact accumulate; forwards the line and the step control to the next PE."""
    MW = len(lane_in)
    ACCW = len(acc)
    lane = sig_u(MW)
    M = len(line_in) // W
    picks = {b: sig_u(W) for b in range(M)}   # a dict, not a list: no HDL array
    a_sel = sig_s(W)
    a_r = sig_s(W)
    a_r2 = sig_s(W)
    ls_q = sig_u(W)
    b_r = sig_s(W)
    v1 = sig_b()
    f1 = sig_b()
    v2 = sig_b()
    f2 = sig_b()
    v3 = sig_b()
    f3 = sig_b()
    v4 = sig_b()
    f4 = sig_b()
    v5 = sig_b()
    f5 = sig_b()
    # the W x W product in two stages: four half-width partial products (one MULT18X18D
    # each for W <= 32), then their sum; the halves of a and b: hi signed, lo unsigned
    H = W // 2
    a_hi = sig_s(W - H)
    a_lo = sig_s(H + 1)
    b_hi = sig_s(W - H)
    b_lo = sig_s(H + 1)
    a_lo_u = sig_u(H)
    b_lo_u = sig_u(H)
    p_hh = sig_s(2 * (W - H))
    p_hl = sig_s(W - H + H + 1)
    p_lh = sig_s(W - H + H + 1)
    p_ll = sig_u(2 * H)
    p_hl_e = sig_s(W + 2)
    p_lh_e = sig_s(W + 2)
    mid = sig_s(W + 2)                 # a_hi b_lo + a_lo b_hi
    mid_e = sig_s(2 * W - H)
    mid_sh = sig_s(2 * W)
    outer = sig_s(2 * W)               # a_hi b_hi 2^2H + a_lo b_lo: the two do not overlap
    outer_c = sig_s(2 * W)
    prod = sig_s(2 * W)
    prod_e = sig_s(ACCW)

    @always_comb
    def sel():
        lane.next = lane_in | (gmask & idx)

    muxes = [pick_chain(None if b == 0 else picks[b - 1], lane, b, line_in, b * W, (b + 1) * W, picks[b])
             for b in range(M)]

    last_pick = picks[M - 1]

    @always_comb
    def pick():
        a_sel.next = last_pick.signed()

    @always_comb
    def halves():
        a_hi.next = a_r2[W:H].signed()
        a_lo.next = concat(False, a_r2[H:]).signed()
        b_hi.next = b_r[W:H].signed()
        b_lo.next = concat(False, b_r[H:]).signed()
        a_lo_u.next = a_r2[H:]
        b_lo_u.next = b_r[H:]

    @always_comb
    def parts():
        outer_c.next = concat(p_hh, p_ll).signed()
        mid_sh.next = concat(mid_e, intbv(0)[H:]).signed()

    ext_parts = [sext(p_hl, p_hl_e), sext(p_lh, p_lh_e), sext(mid, mid_e)] if pe_extra(W) == 3 else []

    store = ram_1w1r(clk, ls_wei, ls_wa, ls_wd, lsa_in, ls_q, LSD)
    ext = sext(prod, prod_e)

    @always_seq(clk.posedge, reset=rst)
    def fwd_regs():
        line_out.next = line_in
        v_out.next = v_in
        f_out.next = f_in
        lane_out.next = lane_in
        lsa_out.next = lsa_in

    @always_seq(clk.posedge, reset=rst)
    def seq():
        a_r.next = a_sel
        v1.next = v_in
        f1.next = f_in
        # the store's read data is registered before the multiplier (no RAM-to-DSP path)
        a_r2.next = a_r
        b_r.next = ls_q.signed()
        v2.next = v1
        f2.next = f1
        p_hh.next = a_hi * b_hi
        p_hl.next = a_hi * b_lo
        p_lh.next = a_lo * b_hi
        p_ll.next = a_lo_u * b_lo_u
        v3.next = v2
        f3.next = f2
        outer.next = outer_c
        mid.next = p_hl_e + p_lh_e
        v4.next = v3
        f4.next = f3
        prod.next = outer + mid_sh
        v5.next = v4
        f5.next = f4
        if v5:
            if f5:
                acc.next = prod_e
            else:
                acc.next = acc + prod_e

    @always_seq(clk.posedge, reset=rst)
    def seq_n():
        a_r.next = a_sel
        v1.next = v_in
        f1.next = f_in
        # the store's read data is registered before the multiplier (no RAM-to-DSP path)
        a_r2.next = a_r
        b_r.next = ls_q.signed()
        v2.next = v1
        f2.next = f1
        prod.next = a_r2 * b_r
        v3.next = v2
        f3.next = f2
        if v3:
            if f3:
                acc.next = prod_e
            else:
                acc.next = acc + prod_e

    insts = [sel, muxes, pick, store, ext]
    insts += [halves, parts, ext_parts, seq] if pe_extra(W) == 3 else [seq_n]
    if fwd:
        insts.append(fwd_regs)
    return insts


# ------------------------------------------------------------------ ports
def ports_of(p: dict) -> list[Port]:
    W, IDXW = p["W"], p["IDXW"]
    WD = W + IDXW
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (the smart memory then zeroes its RMW RAM)"),
        Port("s_axis_cmd_tdata", "in", 32 * dbeat(p),
             f"instruction (opcode [31:28], in [31:0]) or, after WRITE_A/WRITE_B/WRITE_BV, a data beat "
             f"of {dbeat(p)} 32-bit words (word j's value in [32j+{W - 1}:32j]; WRITE_B: word 0 only)"),
        Port("s_axis_cmd_tvalid", "in", 1, ""),
        Port("s_axis_cmd_tready", "out", 1, "high while fetching an instruction or taking data (registered state)"),
        Port("m_axis_out_tdata", "out", WD, f"smart-memory dump: {{index[{IDXW}], value[{W}]}}, value in "
                                            f"[{W - 1}:0], index in [{WD - 1}:{W}]"),
        Port("m_axis_out_tvalid", "out", 1, ""),
        Port("m_axis_out_tready", "in", 1, ""),
        Port("m_axis_out_tlast", "out", 1, "last beat of a dump"),
        Port("err", "out", 1, "sticky error (bad SET_PARALLEL_MODE or MULT_ACC_DUMP, smart-memory "
                              "error seen at a STATUS poll); cleared by reset"),
    ]


# ------------------------------------------------------------------ the core
def build(p):
    W, F, M, LSD, IL, IDXW = p["W"], p["F"], p["M"], p["LSD"], p["ILS_LINES"], p["IDXW"]
    DBEAT = dbeat(p)
    NG = M // DBEAT                    # WRITE_BV beats per local-store address
    ILW = IL * M
    wd = widths(p)
    MW, LAW, LNW, IAW, ACCW, WD = wd["MW"], wd["LAW"], wd["LNW"], wd["IAW"], wd["ACCW"], wd["WD"]
    LAT = M + 3 + pe_extra(W)   # last step issued -> every PE's store read and accumulate done
    RQ = result_queue_depth(M)
    RQW = log2(RQ)
    SPW = max(IAW + 8, 16 + MW + 1)    # the engine's input-local-store read window span
    SPL = max(LAW + 8, 17)             # ... and its local-store read window span
    SPL_FULL = (1 << SPL) - 1          # a Python constant (MyHDL writes 1 << n as a VHDL shift of an integer)
    QW = log2(LAT) + 1
    sm_fn = _sm_block(p)
    AXW = SM.AXIL_AW
    GM_TAB = tuple((1 << t) - 1 if t <= MW else 0 for t in range(16))
    GV_TAB = tuple(1 << t if t <= MW else 1 for t in range(16))
    RA_TAB = tuple(M >> t if t <= MW else 1 for t in range(16))

    @block
    def maple_pe_chain(clk, rst, s_axis_cmd_tdata, s_axis_cmd_tvalid, s_axis_cmd_tready,
                       m_axis_out_tdata, m_axis_out_tvalid, m_axis_out_tready, m_axis_out_tlast,
                       err):
        # ---- smart memory and its internal AXI4-Lite master ---------------------------
        awaddr = sig_u(AXW)
        awvalid = sig_b()
        awready = sig_b()
        wdata = sig_u(32)
        wstrb = sig_u(4, 15)
        wready = sig_b()
        bresp = sig_u(2)
        bvalid = sig_b()
        bready = sig_b(True)
        araddr = sig_u(AXW, 4 * SM.R_STATUS)
        arvalid = sig_b()
        arready = sig_b()
        rdata = sig_u(32)
        rresp = sig_u(2)
        rvalid = sig_b()
        rready = sig_b(True)
        sm_tdata = sig_u(WD)
        sm_tvalid = sig_b()
        sm_tready = sig_b()
        sm_tlast = sig_b()
        sm = sm_fn(clk, rst, awaddr, awvalid, awready, wdata, wstrb, awvalid, wready,
                   bresp, bvalid, bready, araddr, arvalid, arready, rdata, rresp, rvalid, rready,
                   sm_tdata, sm_tvalid, sm_tready, sm_tlast,
                   m_axis_out_tdata, m_axis_out_tvalid, m_axis_out_tready, m_axis_out_tlast)

        # ---- sequencer registers ------------------------------------------------------
        state = sig_u(4, Q_FETCH)
        ir = sig_u(32)
        err_r = sig_b()
        gmask = sig_u(MW)
        smask = sig_u(MW)
        gval = sig_u(IAW, 1)
        lgg_r = sig_u(4, 0)                # log2 G (the input read window: n*G words per pass)
        rall = sig_u(7, M)
        sma = sig_u(IDXW)
        lsa = sig_u(LAW)
        ila = sig_u(IAW)
        cnt = sig_u(16)
        wptr = sig_u(IAW)
        lptr = sig_u(LAW)
        lpe = sig_u(8)
        vgrp = sig_u(max(1, log2(NG)))     # WRITE_BV: the beat's PE group
        wstep = sig_u(2)
        cs = sig_u(3, C_IDLE)
        cir = sig_u(32)                    # the smart-memory instruction being executed
        cq = sig_u(32)                     # the next one, waiting (one-entry queue)
        cq_v = sig_b()
        # MAC issue engine (runs while the sequencer fetches the next instructions)
        e_act = sig_b()
        nsteps = sig_u(16)
        j = sig_u(16)
        w = sig_u(IAW)
        lsa_c = sig_u(LAW)
        v0 = sig_b()
        f0 = sig_b()
        lane0 = sig_u(MW)
        lsa0 = sig_u(LAW)
        last_r = sig_b()
        nres = sig_u(7)
        e_sma = sig_u(IDXW)
        # MULT_ACC_RUN: passes left (this one included), this pass's start addresses, strides
        p_left = sig_u(7)
        p_ila = sig_u(IAW)
        p_lsa = sig_u(LAW)
        e_ist = sig_u(IAW)
        e_lst = sig_u(LAW)
        ist = sig_u(IAW)                   # SET_RUN_STRIDE (architectural)
        lst = sig_u(LAW)
        sp = sig_u(MW + 1, M)              # cycles since the last final step (saturates at M)
        quiet = sig_u(log2(LAT) + 1, LAT)  # cycles since the last step (saturates at LAT)
        reserved = sig_u(8)                # results committed and not yet taken by the smart memory
        # read windows of the engine's instruction (double buffering: a WRITE_A / WRITE_B /
        # WRITE_BV beat waits only while it writes a word the engine may still read)
        sp_pend = sig_b()                  # the spans of the instruction just handed over: two cycles,
        sp_pend2 = sig_b()                 # its products registered in the first (DSP output register)
        sp_adv = sig_b()                   # a pass advanced in the first
        h_np1 = sig_u(7)                   # its passes - 1
        prod_i = sig_u(SPW)                # (passes - 1) * ila_stride
        prod_l = sig_u(SPL)                # (passes - 1) * lsa_stride
        iw_span = sig_u(SPW)               # input local store: [p_ila, p_ila + iw_span] (mod ILW)
        ls_lo = sig_u(LAW)                 # local store: [ls_lo, ls_lo + ls_span] (mod LSD)
        ls_span = sig_u(SPL)
        pv_lo = sig_u(LAW)                 # the previous instruction's local-store window, kept
        pv_span = sig_u(SPL)               # LAT cycles after the hand-over (steps still in the PEs)
        pq = sig_u(QW, LAT)
        # drain descriptor delay line (final step issued -> walker start)
        d1_v = sig_b()
        d1_sma = sig_u(IDXW)
        d1_nres = sig_u(7)
        d1_last = sig_b()
        # d2 .. d<WALK_DELAY-1>: one dstage each (below); the walker starts from the last
        dl = (d1_v, d1_sma, d1_nres, d1_last)
        dstages = []
        for _ in range(walk_delay(W) - 2):
            nxt = (sig_b(), sig_u(IDXW), sig_u(7), sig_b())
            dstages.append(dstage(clk, rst, *dl, *nxt))
            dl = nxt
        dl_v, dl_sma, dl_nres, dl_last = dl
        # drain walker: one PE per cycle, in step with the final accumulators
        wk_act = sig_b()
        wk_sma = sig_u(IDXW)
        wk_nres = sig_u(7)
        wk_last = sig_b()
        pe_i = sig_u(MW)
        r_i = sig_u(7)
        r_x = sig_u(IDXW)
        gsum = sig_s(ACCW)
        s2_v = sig_b()
        s2_acc = sig_s(ACCW)
        s2_idx = sig_u(IDXW)
        s2_last = sig_b()
        # result queue to the smart memory
        rq = [sig_u(WD + 1) for _ in range(RQ)]
        rq_wp = sig_u(RQW)
        rq_rp = sig_u(RQW)
        rq_cnt = sig_u(RQW + 1)
        rq_head = sig_u(WD + 1)
        rq_wd = sig_u(WD + 1)
        out_val = sig_u(W)
        gm_c = sig_u(MW)
        sm_c2 = sig_u(MW)
        gv_c = sig_u(IAW)
        ra_c = sig_u(7)

        # ---- combinational ------------------------------------------------------------
        fire = sig_b()
        xw = sig_u(32)                     # the instruction executing now (ir when held)
        cmd_free = sig_b()
        cmd_done = sig_b()
        sm_go = sig_b()
        ok = sig_b()
        go = sig_b()
        mac_bad = sig_b()
        e_last = sig_b()
        e_ok = sig_b()
        e_fin = sig_b()
        eng_free = sig_b()
        span_i_c = sig_u(SPW)
        span_l_c = sig_u(SPL)
        d_i = Signal(modbv(0)[IAW:])       # (wptr - window start) mod ILW, and mod LSD below
        d_ix = sig_u(SPW)
        d_c = Signal(modbv(0)[LAW:])
        d_cx = sig_u(SPL)
        d_p = Signal(modbv(0)[LAW:])
        d_px = sig_u(SPL)
        e_istx = sig_u(SPW)
        ils_conf = sig_b()                 # this WRITE_A beat would write a word the engine may still read
        ls_conf = sig_b()                  # this WRITE_B / WRITE_BV beat: a local-store word still read
        nsh = sig_u(16 + MW)
        nsw = sig_u(16 + MW)               # nsteps, widened for the shift by log2 G
        all_idle = sig_b()
        res_plus = sig_u(8)
        credit_ok = sig_b()
        pop = sig_b()                      # the smart memory takes the head result
        load = sig_b()                     # the queue RAM's oldest entry moves into the head register
        oh_v = sig_b()                     # head register (the smart memory's input, registered)
        oh_d = sig_u(WD + 1)
        c_op = sig_u(4)
        c_x16 = sig_u(16)
        c_n = sig_u(16)                    # MULT_ACC_DUMP / MULT_ACC_RUN fields
        c_lb = sig_b()
        c_nr = sig_u(7)
        c_np = sig_u(7)
        c_mac = sig_b()
        c_ds = sig_b()
        c_ls = sig_u(LAW)
        p_one = sig_b()
        e_done = sig_b()
        pn_ila = sig_u(IAW)
        pn_lsa = sig_u(LAW)
        sma_nx = sig_u(IDXW)
        nres_x = sig_u(IDXW)
        c_pe = sig_u(8)
        c_lgg = sig_u(4)
        c_lgs = sig_u(4)
        c_ia = sig_u(IAW)
        c_la = sig_u(LAW)
        ila_sum = sig_u(IAW)
        w_sum = sig_u(IAW)
        ils_we = sig_b()
        ils_lane = sig_u(MW)
        ils_wl = sig_u(LNW)
        ils_wl1 = sig_u(LNW)
        ils_wl1s = sig_u(LNW + 1)
        wleft = sig_u(MW + 1)              # WRITE_A words left, at most M
        ils_rl = sig_u(LNW)
        ls_we = sig_b()
        lv_we = sig_b()
        aw_a = sig_u(AXW)
        aw_d = sig_u(32)
        aw_last = sig_b()
        acc_sel = sig_s(ACCW)
        gsum_n = sig_s(ACCW)
        rs_val = sig_s(W)
        grp_first = sig_b()
        grp_end = sig_b()

        # ---- input local store: M banks -------------------------------------------------
        bank_q = {b: sig_u(W) for b in range(M)}   # dicts, not lists: no HDL arrays
        bank_we_s = {b: sig_b() for b in range(M)}
        bank_wl = {b: sig_u(LNW) for b in range(M)}
        bank_wd = {b: sig_u(W) for b in range(M)}
        insts = [sm, SM.zext(r_i, r_x), SM.zext(nres, nres_x), dstages,
                 SM.zext(d_i, d_ix), SM.zext(d_c, d_cx), SM.zext(d_p, d_px), SM.zext(e_ist, e_istx)]
        for b in range(M):
            insts.append(bank_wr(ils_we, ils_lane, ils_wl, ils_wl1, wleft, s_axis_cmd_tdata, b, W, DBEAT,
                                 bank_we_s[b], bank_wl[b], bank_wd[b]))
            insts.append(ram_1w1r(clk, bank_we_s[b], bank_wl[b], bank_wd[b], ils_rl, bank_q[b], IL))
        # ---- PE local-store writes (WRITE_B: one PE or all, one word; WRITE_BV: DBEAT PEs)
        pe_we = {i: sig_b() for i in range(M)}
        pe_wd = {i: sig_u(W) for i in range(M)}
        for i in range(M):
            insts.append(pe_wr(ls_we, lpe, lv_we, vgrp, s_axis_cmd_tdata, i, W, DBEAT, pe_we[i], pe_wd[i]))
        line_q = ConcatSignal(*[bank_q[b] for b in reversed(range(M))])

        # ---- PEs, chained ---------------------------------------------------------------
        lines = {i: sig_u(W * M) for i in range(M + 1)}
        lines[0] = line_q
        vs = {i: sig_b() for i in range(M + 1)}
        vs[0] = v0
        fs = {i: sig_b() for i in range(M + 1)}
        fs[0] = f0
        lanes = {i: sig_u(MW) for i in range(M + 1)}
        lanes[0] = lane0
        lsas = {i: sig_u(LAW) for i in range(M + 1)}
        lsas[0] = lsa0
        accs = {i: sig_s(ACCW) for i in range(M)}
        for i in range(M):
            insts.append(pe(clk, rst, i, lines[i], vs[i], fs[i], lanes[i], lsas[i], gmask,
                            pe_we[i], lptr, pe_wd[i],
                            lines[i + 1], vs[i + 1], fs[i + 1], lanes[i + 1], lsas[i + 1], accs[i],
                            W, LSD, i < M - 1))
        acc_pick = {i: sig_s(ACCW) for i in range(M)}
        for i in range(M):
            insts.append(pick_chain(None if i == 0 else acc_pick[i - 1], pe_i, i, accs[i], 0, ACCW,
                                    acc_pick[i]))
        ext_rs = round_sat(s2_acc, rs_val, F)
        insts.append(ext_rs)

        @always_comb
        def dec():
            fire.next = s_axis_cmd_tvalid and (state == Q_FETCH or (state == Q_WA and not ils_conf) or
                                               ((state == Q_WB or state == Q_WV) and not ls_conf))
            s_axis_cmd_tready.next = state == Q_FETCH or (state == Q_WA and not ils_conf) or \
                ((state == Q_WB or state == Q_WV) and not ls_conf)
            if state == Q_HOLD:
                xw.next = ir
            else:
                xw.next = s_axis_cmd_tdata[32:]
            err.next = err_r

        @always_comb
        def dec2():
            c_op.next = xw[32:28]
            c_x16.next = xw[16:]
            c_pe.next = xw[24:16]
            c_lgg.next = xw[4:]
            c_lgs.next = xw[8:4]
            c_ia.next = xw[IAW:]
            c_la.next = xw[LAW:]
            c_ls.next = xw[16 + LAW:16]

        @always_comb
        def dec3():
            c_mac.next = c_op == ISA.MULT_ACC_DUMP or c_op == ISA.MULT_ACC_RUN
            if c_op == ISA.MULT_ACC_RUN:
                c_n.next = concat(intbv(0)[3:], xw[13:])
                c_lb.next = xw[13]
                c_nr.next = xw[21:14]
                c_np.next = xw[28:21]
            else:
                c_n.next = xw[16:]
                c_lb.next = xw[16]
                c_nr.next = xw[24:17]
                c_np.next = 1

        @always_comb
        def ds_c():
            c_ds.next = cir[32:28] == ISA.SM_CTRL and cir[0] and cir[2] and not cir[1]

        @always_comb
        def run_c():
            p_one.next = p_left == 1
            e_done.next = e_fin and p_left == 1
            pn_ila.next = p_ila + e_ist
            pn_lsa.next = p_lsa + e_lst
            sma_nx.next = e_sma + nres_x

        @always_comb
        def eng_c():
            e_last.next = j == nsteps - 1
            res_plus.next = reserved + nres
            eng_free.next = not e_act or e_done
            all_idle.next = not e_act and quiet == LAT and reserved == 0
            pop.next = oh_v and sm_tready
            load.next = rq_cnt != 0 and (not oh_v or (oh_v and sm_tready))
            cmd_done.next = cs == C_IDLE or (cs == C_B and bvalid and aw_last)
            cmd_free.next = not cq_v or cs == C_IDLE or (cs == C_B and bvalid and aw_last)
            awaddr.next = aw_a
            wdata.next = aw_d

        @always_comb
        def win_c():
            nsw.next = concat(intbv(0)[MW:], nsteps)
            nsh.next = nsw << lgg_r
            d_i.next = wptr - p_ila
            d_c.next = lptr - ls_lo
            d_p.next = lptr - pv_lo

        @always_comb
        def win_c2():
            span_i_c.next = prod_i + nsh - 1
            span_l_c.next = prod_l + nsteps - 1

        @always_comb
        def win_c3():
            ils_conf.next = e_act and (sp_pend or sp_pend2 or d_ix <= iw_span or d_i >= ILW - DBEAT + 1)
            ls_conf.next = ((e_act or quiet != LAT) and (sp_pend or sp_pend2 or d_cx <= ls_span)) or \
                (pq != LAT and d_px <= pv_span)

        @always_comb
        def eng_c2():
            credit_ok.next = res_plus <= RQ
            mac_bad.next = c_n == 0 or c_n > LSD or c_nr > rall or c_np == 0

        @always_comb
        def eng_c3():
            e_ok.next = e_act and (not e_last or (sp == M and credit_ok))
            e_fin.next = e_act and e_last and sp == M and credit_ok

        @always_comb
        def ok_c():
            # what an instruction waits for before it executes (held in ir meanwhile)
            if c_mac:
                ok.next = eng_free or mac_bad
            elif c_op == ISA.SET_PARALLEL_MODE:
                ok.next = all_idle
            elif c_op == ISA.SET_SM_REDUCTION or c_op == ISA.SM_CTRL or c_op == ISA.DUMP_SM:
                ok.next = cmd_free
            else:
                ok.next = True

        @always_comb
        def go_c():
            go.next = ok and (state == Q_HOLD or (state == Q_FETCH and s_axis_cmd_tvalid))
            sm_go.next = ok and (state == Q_HOLD or (state == Q_FETCH and s_axis_cmd_tvalid)) and \
                (c_op == ISA.SET_SM_REDUCTION or c_op == ISA.SM_CTRL or c_op == ISA.DUMP_SM)

        @always_comb
        def tabs():
            gm_c.next = GM_TAB[int(c_lgg)]
            sm_c2.next = GM_TAB[int(c_lgs)]
            gv_c.next = GV_TAB[int(c_lgg)]
            ra_c.next = RA_TAB[int(c_lgs)]

        @always_comb
        def addr_c():
            ila_sum.next = ila + c_ia
            w_sum.next = w + gval
            ils_we.next = fire and state == Q_WA
            ls_we.next = fire and state == Q_WB
            lv_we.next = fire and state == Q_WV
            ils_lane.next = wptr[MW:]
            ils_wl.next = wptr[IAW:MW]
            ils_wl1s.next = wptr[IAW:MW] + 1
            ils_rl.next = w[IAW:MW]

        @always_comb
        def addr_c2():
            ils_wl1.next = ils_wl1s[LNW:]
            if cnt >= M:
                wleft.next = M
            else:
                wleft.next = cnt[MW + 1:]

        @always_comb
        def axw_c():
            aw_last.next = False
            aw_a.next = 4 * SM.R_CTRL
            aw_d.next = 0
            if cir[32:28] == ISA.SET_SM_REDUCTION:
                if wstep == 0:
                    aw_a.next = 4 * SM.R_OP
                    aw_d.next = concat(intbv(0)[30:], cir[2:])
                elif wstep == 1:
                    aw_a.next = 4 * SM.R_K
                    aw_d.next = concat(intbv(0)[16:], cir[24:8])
                else:
                    aw_a.next = 4 * SM.R_CMP
                    aw_d.next = concat(intbv(0)[31:], cir[2])
                    aw_last.next = True
            elif cir[32:28] == ISA.SM_CTRL:
                aw_d.next = concat(intbv(0)[28:], cir[4:])
                aw_last.next = True
            else:  # DUMP_SM
                if cir[14:] != 0 and wstep == 0:
                    aw_a.next = 4 * SM.R_BASE
                    aw_d.next = concat(intbv(0)[18:], cir[28:14])
                elif cir[14:] != 0 and wstep == 1:
                    aw_a.next = 4 * SM.R_LEN
                    aw_d.next = concat(intbv(0)[18:], cir[14:])
                else:
                    aw_d.next = 4
                    aw_last.next = True

        @always_comb
        def drain_c():
            grp_first.next = (pe_i & smask) == 0
            grp_end.next = (pe_i & smask) == smask

        acc_last = acc_pick[M - 1]

        @always_comb
        def drain_c2():
            acc_sel.next = acc_last

        @always_comb
        def drain_c3():
            if grp_first:
                gsum_n.next = acc_sel
            else:
                gsum_n.next = gsum + acc_sel

        @always_comb
        def rs_c():
            out_val.next = rs_val[W:]

        @always_comb
        def rq_c():
            rq_wd.next = concat(s2_last, s2_idx, out_val)

        @always(clk.posedge)
        def rq_ram():
            if s2_v:
                rq[rq_wp].next = rq_wd

        @always_comb
        def rq_rd():
            rq_head.next = rq[rq_rp]

        @always_comb
        def sm_c():
            sm_tdata.next = oh_d[WD:]
            sm_tlast.next = oh_d[WD]
            sm_tvalid.next = oh_v

        @always_seq(clk.posedge, reset=rst)
        def main():
            # ---- MAC issue engine: one step per cycle; the final step waits for the walker
            # spacing (M cycles) and for room in the result queue
            v0.next = False
            f0.next = False
            if e_ok:
                v0.next = True
                f0.next = j == 0
                lane0.next = w[MW:]
                lsa0.next = lsa_c
                w.next = w_sum
                if lsa_c == LSD - 1:
                    lsa_c.next = 0
                else:
                    lsa_c.next = lsa_c + 1
                j.next = j + 1
                quiet.next = 0
            elif quiet != LAT:
                quiet.next = quiet + 1
            # read windows: the spans of the instruction handed over last cycle, then shrinking
            # (input local store) as its passes advance
            if pq != LAT:
                pq.next = pq + 1
            # (passes advance at most once in two cycles: the final-step spacing is M >= 2)
            if sp_pend:
                sp_pend.next = False
                sp_pend2.next = True
                prod_i.next = h_np1 * e_ist
                prod_l.next = h_np1 * e_lst
                sp_adv.next = e_fin and not p_one
            elif sp_pend2:
                sp_pend2.next = False
                ls_span.next = span_l_c
                if sp_adv or (e_fin and not p_one):
                    iw_span.next = span_i_c - e_istx
                else:
                    iw_span.next = span_i_c
            elif e_fin and not p_one:
                iw_span.next = iw_span - e_istx
            if e_fin:
                sp.next = 1
                if p_one:
                    e_act.next = False
                else:
                    # MULT_ACC_RUN: the next pass starts in the next cycle, advanced by the strides
                    p_left.next = p_left - 1
                    j.next = 0
                    w.next = pn_ila
                    p_ila.next = pn_ila
                    lsa_c.next = pn_lsa
                    p_lsa.next = pn_lsa
                    e_sma.next = sma_nx
            elif sp != M:
                sp.next = sp + 1
            # ---- drain: descriptor delay line, walker, round + saturate, result queue
            d1_v.next = e_fin
            d1_sma.next = e_sma
            d1_nres.next = nres
            d1_last.next = last_r and p_one
            s2_v.next = False
            if wk_act:
                gsum.next = gsum_n
                if grp_end:
                    s2_v.next = True
                    s2_acc.next = gsum_n
                    s2_idx.next = wk_sma + r_x
                    s2_last.next = wk_last and r_i == wk_nres - 1
                    if r_i == wk_nres - 1:
                        wk_act.next = False
                    else:
                        r_i.next = r_i + 1
                        pe_i.next = pe_i + 1
                else:
                    pe_i.next = pe_i + 1
            if dl_v:
                wk_act.next = True
                pe_i.next = 0
                r_i.next = 0
                wk_sma.next = dl_sma
                wk_nres.next = dl_nres
                wk_last.next = dl_last
            if s2_v:
                if rq_wp == RQ - 1:
                    rq_wp.next = 0
                else:
                    rq_wp.next = rq_wp + 1
            if load:
                oh_d.next = rq_head
                if rq_rp == RQ - 1:
                    rq_rp.next = 0
                else:
                    rq_rp.next = rq_rp + 1
            if load:
                oh_v.next = True
            elif pop:
                oh_v.next = False
            if s2_v and not load:
                rq_cnt.next = rq_cnt + 1
            elif load and not s2_v:
                rq_cnt.next = rq_cnt - 1
            if e_fin and pop:
                reserved.next = res_plus - 1
            elif e_fin:
                reserved.next = res_plus
            elif pop:
                reserved.next = reserved - 1
            # ---- sequencer: fetch; an instruction that must wait is held in ir (Q_HOLD)
            if state == Q_FETCH or state == Q_HOLD:
                if state == Q_FETCH and fire:
                    ir.next = s_axis_cmd_tdata[32:]
                    if not ok:
                        state.next = Q_HOLD
                if go:
                    state.next = Q_FETCH
                    if c_op == ISA.SET_PARALLEL_MODE:
                        if c_lgg <= MW and c_lgs <= c_lgg:
                            gmask.next = gm_c
                            gval.next = gv_c
                            lgg_r.next = c_lgg
                            smask.next = sm_c2
                            rall.next = ra_c
                        else:
                            err_r.next = True
                    elif c_op == ISA.SET_SM_REDUCTION or c_op == ISA.SM_CTRL or c_op == ISA.DUMP_SM:
                        pass    # handed to the smart-memory command engine (below)
                    elif c_op == ISA.SET_SM_ADDR:
                        sma.next = c_x16[IDXW:]
                    elif c_op == ISA.SET_PE_LS_ADDR:
                        lsa.next = c_la
                    elif c_op == ISA.SET_INPUT_LS_ADDR:
                        ila.next = c_ia
                    elif c_op == ISA.INC_INPUT_LS_ADDR:
                        ila.next = ila_sum
                    elif c_op == ISA.WRITE_A:
                        cnt.next = c_x16
                        wptr.next = ila
                        if c_x16 != 0:
                            state.next = Q_WA
                    elif c_op == ISA.WRITE_B:
                        cnt.next = c_x16
                        lptr.next = lsa
                        lpe.next = c_pe
                        if c_x16 != 0:
                            state.next = Q_WB
                    elif c_op == ISA.WRITE_BV:
                        cnt.next = c_x16
                        lptr.next = lsa
                        vgrp.next = 0
                        if c_x16 != 0:
                            state.next = Q_WV
                    elif c_op == ISA.SET_RUN_STRIDE:
                        ist.next = c_ia
                        lst.next = c_ls
                    elif c_mac:
                        if mac_bad:
                            err_r.next = True
                        else:
                            # hand over to the issue engine (it may be issuing its final step now)
                            e_act.next = True
                            nsteps.next = c_n
                            last_r.next = c_lb
                            if c_nr == 0:
                                nres.next = rall
                            else:
                                nres.next = c_nr
                            j.next = 0
                            w.next = ila
                            lsa_c.next = lsa
                            e_sma.next = sma
                            p_left.next = c_np
                            p_ila.next = ila
                            p_lsa.next = lsa
                            e_ist.next = ist
                            e_lst.next = lst
                            sp_pend.next = True
                            sp_pend2.next = False
                            h_np1.next = c_np - 1
                            ls_lo.next = lsa
                            pv_lo.next = ls_lo
                            if sp_pend or sp_pend2:
                                pv_span.next = SPL_FULL          # not known yet: the whole store
                            else:
                                pv_span.next = ls_span
                            pq.next = 0
            elif state == Q_WA:
                if fire:
                    wptr.next = wptr + DBEAT
                    cnt.next = cnt - DBEAT
                    if cnt <= DBEAT:
                        state.next = Q_FETCH
            elif state == Q_WV:
                if fire:
                    if vgrp == NG - 1:
                        vgrp.next = 0
                        if lptr == LSD - 1:
                            lptr.next = 0
                        else:
                            lptr.next = lptr + 1
                        cnt.next = cnt - 1
                        if cnt == 1:
                            state.next = Q_FETCH
                    else:
                        vgrp.next = vgrp + 1
            elif state == Q_WB:
                if fire:
                    if lptr == LSD - 1:
                        lptr.next = 0
                    else:
                        lptr.next = lptr + 1
                    cnt.next = cnt - 1
                    if cnt == 1:
                        state.next = Q_FETCH
            # ---- smart-memory command engine: poll STATUS until idle and not armed, then
            # write the registers; runs while the sequencer fetches on (results reach the
            # smart memory only once a START has armed it, in program order)
            if cs == C_AR:
                if arready:
                    arvalid.next = False
                    cs.next = C_R
            elif cs == C_R:
                if rvalid:
                    # STATUS [31:2] = {PENDING, code, CLEARING, error}: PENDING and CLEARING
                    # are no error
                    if (rdata[32:2] & 0x3FFFFFBD) != 0 or rresp != 0:
                        err_r.next = True
                    # a DUMP + START (SM_CTRL) needs only that none is queued: the smart memory
                    # queues it and runs it at the current array's tlast; the rest need idle
                    if (c_ds and not rdata[8]) or (not c_ds and rdata[2:] == 0):
                        awvalid.next = True
                        cs.next = C_AW
                    else:
                        arvalid.next = True
                        cs.next = C_AR
            elif cs == C_AW:
                if awready and wready:
                    awvalid.next = False
                    cs.next = C_B
            elif cs == C_B:
                if bvalid:
                    if bresp != 0:
                        err_r.next = True
                    if aw_last:
                        cs.next = C_IDLE
                    else:
                        wstep.next = wstep + 1
                        awvalid.next = True
                        cs.next = C_AW
            # in program order: the queued instruction first, then the one fetched now
            if cmd_done and cq_v:
                cir.next = cq
                wstep.next = 0
                arvalid.next = True
                cs.next = C_AR
                cq_v.next = sm_go
                cq.next = xw
            elif cmd_done and sm_go:
                cir.next = xw
                wstep.next = 0
                arvalid.next = True
                cs.next = C_AR
            elif sm_go:
                cq_v.next = True
                cq.next = xw

        return (insts, dec, dec2, dec3, ds_c, run_c, eng_c, win_c, win_c2, win_c3, eng_c2, eng_c3, ok_c, go_c, tabs, addr_c, addr_c2, axw_c,
                drain_c,
                drain_c2, drain_c3, rs_c, rq_c, rq_ram, rq_rd, sm_c, main)

    ports = ports_of(p)
    return make_factory(maple_pe_chain, ports), ports


def datasheet(p):
    W, F, M, LSD, IL, IDXW, KMAX, DEPTH = (p[k] for k in ("W", "F", "M", "LSD", "ILS_LINES", "IDXW",
                                                            "KMAX", "DEPTH"))
    D = dbeat(p)
    wd = widths(p)
    fields = [(f"0x{c:X} {name}", ops, meaning) for c, name, ops, meaning in ISA.OPCODES]
    return Datasheet(
        summary=f"One MAPLE processing chain (MAPLE section 4.1/4.2, Fig. 2, 4, 5): M={M} scalar "
                f"PEs with private {LSD}-word local stores, a {IL}x{M}-word input local store read "
                f"one M-word line per step and forwarded PE to PE, exact multiply-accumulate, and "
                f"the chain's smart memory (`maple_smart_memory`, KMAX={KMAX}, DEPTH={DEPTH}, "
                f"instantiated inside) receiving every result with its index. Programmed by an "
                f"instruction stream after the paper's mapping pseudo-assembly; the mapping tool "
                f"and an instruction-level model are `golden.maple_mapping`, bit-exact with this core.",
        latency=f"MULT_ACC_DUMP n: n issue cycles; PE i's accumulator is final {4 + pe_extra(W)} + i cycles after "
                f"the final step is issued and is read then by the drain walker (one PE per cycle, "
                f"S accumulators summed exactly); result r (r = 0..nres-1) is rounded, saturated and "
                f"in the {result_queue_depth(M)}-entry result queue {5 + pe_extra(W)} + (r+1)S cycles after the final "
                f"step, and enters the smart memory from there once it is armed (plus its stalls). "
                f"Smart-memory instructions poll its STATUS (2 cycles per poll) and write its "
                f"registers (2 cycles per write) on a command engine of their own",
        throughput=f"M={M} multiply-accumulates per cycle while a MULT_ACC_DUMP issues; the "
                   f"sequencer fetches the next instructions (one word per cycle) meanwhile and "
                   f"hands the next MULT_ACC_DUMP over in the cycle of the final step, the drain "
                   f"and the smart-memory commands run beside both: back-to-back passes of n >= "
                   f"max(4, M) steps (each with its 3 set-up words, or all in one MULT_ACC_RUN) "
                   f"keep every PE busy every cycle (the "
                   f"final step of a pass waits until M cycles after the previous final step and for "
                   f"room for its nres results in the result queue). Whole programs are bound by "
                   f"the instruction stream (one beat per cycle: an instruction, or DBEAT={D} data "
                   f"words for WRITE_A / WRITE_BV, one for WRITE_B) and by the "
                   f"smart memory (scanner stalls, per-array START/DUMP handshakes; its RAM clear "
                   f"after reset and CLEAR runs in the background, an RMW result waits only for an "
                   f"address the clear has not reached): README bench table. WRITE_A and WRITE_BV "
                   f"{D} words per cycle, WRITE_B one",
        fields=fields,
        fields_title=f"Instruction set (32-bit instruction in bits [31:0] of an s_axis_cmd beat: opcode "
                     f"[31:28], operand [27:0]; DBEAT={D} words per beat)",
        fields_header=("opcode", "operand fields", "meaning"),
        notes=[
            f"Data beats follow WRITE_A / WRITE_B / WRITE_BV on the same stream, each beat "
            f"{32 * D} bits = DBEAT={D} words of 32 bits, a word's value in its bits [{W - 1}:0] (two's "
            f"complement, Q{W - F}.{F}), its upper bits ignored: WRITE_A n packs DBEAT words per beat "
            f"(ceil(n/DBEAT) beats, addresses ila.. in order, the last beat's unused words ignored; "
            f"the DBEAT words of a beat go to DBEAT different input banks in one cycle, any "
            f"alignment); WRITE_BV n writes one word to every PE's local store at each of the "
            f"addresses lsa..lsa+n-1, address-major and PE-minor, DBEAT PEs per beat (n*M/DBEAT "
            f"beats); WRITE_B n (one PE or all, 255) takes word 0 of each of its n beats. An "
            f"instruction beat carries the instruction in bits [31:0], the rest ignored. DBEAT is "
            f"a generator parameter (0 = M, the default: one input-local-store line per beat; "
            f"1 = the original 32-bit stream); the mapping tool packs its programs for it "
            f"(`ChainParams.DBEAT`).",
            f"Input local store: {IL * M} words = {IL} lines x M={M} banks; word address a is "
            f"bank a mod M, line a div M. Addresses wrap modulo the store size (the mapping tool "
            f"never relies on it).",
            "Step j of MULT_ACC_DUMP reads line (ila + j*G) div M; PE i takes lane "
            "((ila + j*G) mod M) | (i mod G) and local-store word (lsa + j) mod LSD, so ila must "
            "be a multiple of G (the mapping tool aligns it). The line and the step control are "
            "forwarded through one register per PE: PE i works one cycle after PE i-1.",
            f"Accumulator {wd['ACCW']} bits (2W + log2 LSD + log2 M + 1): no overflow for "
            f"n <= LSD={LSD} steps and S <= M summed PEs; result r = sat_W(round_F(sum of the "
            f"accumulators of PEs r*S..r*S+S-1)), exactly `QFormat.dot`.",
            "Results go to the smart memory as {index = SET_SM_ADDR + r (mod 2^IDXW), value} in "
            "order r = 0..nres-1, tlast on the last when MULT_ACC_DUMP has last = 1; the smart "
            "memory's tie rule therefore sees indices in arrival order.",
            "Parallelism modes (SET_PARALLEL_MODE G, S): column (G=S=1, pm=1: PE i holds column "
            "i, every PE sees the same A word), split (G=S>1, pm=1/S: a column split over S PEs, "
            "the S partial dot products combined exactly before rounding), replicate (G=M: every "
            "PE holds the same column, or segment i mod S of it; M/S rows of A in flight, "
            "pm=M/S). All three are implemented and tested.",
            "Smart-memory instructions (SET_SM_REDUCTION, SM_CTRL, DUMP_SM) first poll its STATUS "
            "until neither busy nor armed (SM_CTRL DUMP|START: until no DUMP + START is queued "
            "there; the smart memory runs it at the array's tlast), then write its registers through the internal "
            "AXI4-Lite port (register map in `ip/maple_smart_memory/README.md`), in program "
            "order on a command engine (one executing, one queued; a third waits in the "
            "sequencer). Hence a DUMP_SM or a new START waits for the previous array's tlast and "
            "scans. Results wait in the result queue until a START arms the smart memory; "
            "without one (program error, never generated by the mapping tool) the queue fills "
            "and the chain stalls. Smart-memory errors (e.g. k > KMAX) stay inside the smart "
            "memory (its sticky STATUS error).",
            "err: sticky; set by SET_PARALLEL_MODE with S > G or G > M (mode kept), by "
            "MULT_ACC_DUMP with n = 0, n > LSD or nres > M/S (instruction skipped, nothing sent), "
            "and when a STATUS poll shows the smart memory's sticky error (e.g. k > KMAX, "
            "an RMW index >= DEPTH) or a response is not OKAY.",
            "Overlap (the paper's store latency hidden by the next vector operation): a "
            "MULT_ACC_DUMP goes to the issue engine and the sequencer fetches on; the results "
            "drain behind the wavefront into the result queue. An instruction that needs state "
            "still in use is held (s_axis_cmd_tready low) until it is free: MULT_ACC_DUMP until "
            "the engine issues its final step; a WRITE_A data beat while it would write a word "
            "of the engine's read window (input local store: from the current pass's first "
            "word to the final pass's last, [p_ila, p_ila + (passes-1)*ila_stride + n*G - 1] "
            "(a step reads G words from w = ila + j*G on, never below w; n*M before issue 16's "
            "K-means row loads) "
            "mod ILW, shrinking as the passes advance; the whole store in the two cycles after a "
            "hand-over); a WRITE_B / WRITE_BV beat while its local-store word is in the "
            "window of the engine's instruction ([lsa, lsa + (passes-1)*lsa_stride + n - 1] "
            "mod LSD, until its last step has passed every PE) or of the previous one for "
            "LAT cycles after the hand-over -- so loads into the other half of a store "
            "overlap the passes (double buffering, issue 16; the mapping tool alternates "
            "halves: `Plan.programs(buffer=...)`), SET_PARALLEL_MODE until every result is in the "
            "smart memory, a smart-memory instruction until the command queue has room. "
            "SET_SM_ADDR / SET_PE_LS_ADDR / SET_INPUT_LS_ADDR / SET_RUN_STRIDE are copied by "
            "MULT_ACC_DUMP / MULT_ACC_RUN when it is handed over, so they never wait.",
            "MULT_ACC_RUN (self-advancing MULT_ACC_DUMP): the issue engine runs its passes back to "
            "back, pass p+1 starting in the cycle after the final step of pass p (that final "
            "step waiting, as between two MULT_ACC_DUMPs, for the walker spacing and for room "
            "for its results), from ila + (p+1)*ila_stride, lsa + (p+1)*lsa_stride, with its "
            "results at sm_addr + (p+1)*R; only the final pass carries last. One instruction "
            "word replaces 4 per pass (3 set-up words and the MULT_ACC_DUMP); the mapping tool "
            "folds every run of passes with constant strides (and sm_addr advancing by the "
            "results per pass) into one (`Plan._passes`) and drops set-up words whose register "
            "already holds the value. The engine is free for the next MULT_ACC_DUMP / "
            "MULT_ACC_RUN at the final step of its final pass; WRITE_A waits until it is idle.",
            "Mapping tool (`golden.maple_mapping.plan_matmul`, `Plan.programs`): A (n x d) "
            "streams row-wise through the input local store, B (d x m) is held column-wise in "
            "the PE local stores; a column longer than LSD is split over S PEs. Reductions per "
            "column of C over the rows of A (top-k recommendation, GLVQ, SSI) use replicate "
            "mode, one smart-memory array per column; reductions per row of C (K-means) use "
            "column/split mode, one array per row; aggregation uses the RMW store at address "
            "i*m + j. Deviation from the paper's loop (A blocks outer, B blocks inner): one "
            "smart memory ranks one array at a time, so for per-column reductions the column "
            "is the outer loop and A is re-streamed per column when it does not fit the input "
            "local store (the plan says so in `notes`).",
            "Distances (K-means, GLVQ) are ranked by the dot product of augmented vectors "
            "x' = [x, 1.0] and r' = [2r, -||r||^2] (||r||^2 precomputed on the host), i.e. "
            "2<x,r> - ||r||^2: the nearest reference has the largest score (the max of the "
            "min/max dump), the farthest the smallest (`golden.maple.distance_augment`).",
            "Bus traffic (`golden.maple_mapping.bus_traffic`, bench_throughput): with the smart "
            "memory only A, B and the dumps cross the bus (bursts); without it every "
            "intermediate result is stored and reloaded (single transactions) before the "
            "reduction. Instruction words come from the separate instruction memory of "
            "section 4.1 and are reported apart.",
            f"Memories: each PE local store {LSD}x{W} and each input bank {IL}x{W} are one-write-port, "
            f"synchronous-read RAMs (block RAM inference), not reset.",
        ])


CORE = CoreDef(
    name=KIND, family="maple",
    description="MAPLE PE chain: M PEs with local stores, input local store, exact MAC, smart "
                "memory inside, instruction-stream programmed (mapping tool in golden.maple_mapping)",
    params=PARAMS,
    build=build, datasheet=datasheet,
    configs={"default": {},
             "small": {"W": 16, "F": 8, "M": 2, "LSD": 16, "ILS_LINES": 16, "IDXW": 8, "KMAX": 4,
                       "DEPTH": 32}},
    generator="rtl_gen/maple/maple_pe_chain.py",
)
