"""``cosmic_memory_schedule_unit`` core: the programmable memory interface of the CoSMIC
template accelerator (CoSMIC section 5.1 "Memory interface", section 5.2).  Bit-exact
with ``golden.cosmic_msu`` (walk order, shifter alignment, broadcast, writes).

* Memory Schedule queue (QDEPTH entries {Base PE Index, RD/WR, Broadcast, Size}) and a
  Thread Index Table (one row per thread {Mem Addr, PE Offset}), loaded by the host
  over AXI4-Lite.
* Controller: for every schedule entry, every thread in turn (round-robin) moves Size
  words between its Mem Addr and physical PE Base + PE Offset, then Mem Addr advances by
  Size.  A broadcast read is fetched once from the shared MODEL_ADDR pointer and handed
  to every thread's PE.
* AXI4 master: beat-aligned INCR bursts of at most MAXBURST beats that never cross a
  4 KiB boundary; reads are issued only against free prefetch-buffer space (credits).
* Shifter: realigns memory beats so word 0 of a transfer lands in lane 0 (no padding of
  the data in memory); on writes the reverse shift plus WSTRB for partial beats.
* Prefetch buffer: PREFETCH memory beats; reads of the next transfers are issued while
  the current one drains, so a PE row gets a beat every cycle when memory keeps up.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always, always_comb, always_seq, block, concat, intbv

from rtl_gen.common.blocks import fit, out_fifo2
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_u
from rtl_gen.common.params import Param, ParamSet, power_of_two
from rtl_gen.common.ports import make_factory

KIND = "cosmic_memory_schedule_unit"
AXIL_AW = 12
SIZE_BITS, BASE_LSB, BASE_BITS, WR_BIT, BC_BIT = 16, 16, 12, 28, 29
NBW = 18          # beat-count arithmetic width (Size + alignment + rounding)
TGW = 13          # target PE arithmetic width (12-bit base + offset)
RI_DEPTH = 4      # read-transfer info FIFO

E_PE, E_SIZE, E_FULL, E_BUSY, E_REG, E_WRPE, E_RESP = 1, 2, 3, 4, 5, 6, 7
R_CTRL, R_STATUS, R_QCOUNT, R_QPUSH, R_MODEL, R_DELIV, R_CYCLES = range(7)
TBL_WORD = 0x100 // 4

def log2(n: int) -> int:
    return n.bit_length() - 1


def clog2(n: int) -> int:
    return max(1, (n - 1).bit_length())


def _w_check(v: int) -> str | None:
    return None if v in (8, 16, 32) else "must be 8, 16 or 32"


def _cross(p: dict) -> str | None:
    if p["PREFETCH"] < p["MAXBURST"]:
        return f"parameter PREFETCH={p['PREFETCH']} must be >= MAXBURST={p['MAXBURST']}"
    wb = log2(p["W"] // 8)
    if p["ADDR_W"] - wb < 17:
        return f"parameter ADDR_W={p['ADDR_W']} too small: need ADDR_W - log2(W/8) >= 17"
    return None


PARAMS = ParamSet([
    Param("W", 32, "word width in bits (one PE word)", 8, 32, _w_check),
    Param("LANES", 4, "words per memory beat = PEs in a row fed per cycle (AXI data width LANES*W)",
          2, 8, power_of_two),
    Param("NPE", 64, "physical PEs addressed by tdest/tid", 2, 4096),
    Param("NTHREADS", 4, "worker threads (Thread Index Table rows)", 1, 32),
    Param("QDEPTH", 16, "Memory Schedule queue entries", 2, 256, power_of_two),
    Param("ADDR_W", 32, "AXI4 byte address width", 18, 32),
    Param("MAXBURST", 16, "longest AXI4 burst in beats", 1, 256, power_of_two),
    Param("PREFETCH", 64, "prefetch buffer depth in memory beats", 2, 1024, power_of_two),
], [_cross])


@block
def burst_len(ba, nb, blen, P4W, MAXBURST):
    """``blen`` = min(nb, MAXBURST, beats left before the 4 KiB page end of ``ba``)."""
    w = len(nb)
    lo = sig_u(w)
    left = sig_u(w)
    P4K = 1 << P4W

    @always_comb
    def lo_c():
        lo.next = concat(intbv(0)[w - P4W:], ba[P4W:])

    @always_comb
    def left_c():
        left.next = P4K - lo

    @always_comb
    def mn():
        if nb <= MAXBURST and nb <= left:
            blen.next = nb
        elif left <= MAXBURST:
            blen.next = left
        else:
            blen.next = MAXBURST

    return lo_c, left_c, mn


@block
def burst_len_left(nb, left, blen, sel_left, MAXBURST):
    """``blen`` = min(nb, MAXBURST, left) with ``left`` (beats to the 4 KiB page end) kept
    in a register rather than derived from the address: the read issue decision and the
    prefetch counts hang off this cone (the ECP5 critical path of the core, issue 16).
    ``sel_left``: the burst ends at the page boundary (``blen == left < nb or MAXBURST``
    ties resolved as in ``burst_len``)."""
    @always_comb
    def mn():
        sel_left.next = False
        if nb <= MAXBURST and nb <= left:
            blen.next = nb
        elif left <= MAXBURST:
            blen.next = left
            sel_left.next = True
        else:
            blen.next = MAXBURST

    return mn


@block
def left_cmp(left, gt, k):
    """``gt = left > k`` (``k`` below 2**(len(left)-1))."""
    @always_comb
    def c():
        gt.next = left > k

    return c


@block
def lo_of(x_addr, x_lo, LL, P4W):
    """``x_lo`` = the beat address of word address ``x_addr`` within its 4 KiB page."""
    @always_comb
    def c():
        x_lo.next = concat(intbv(0)[1:], x_addr[LL + P4W:LL])

    return c


def ports_of(p: dict) -> list[Port]:
    W, L, AW = p["W"], p["LANES"], p["ADDR_W"]
    LW = L * W
    PEW = clog2(p["NPE"])
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (aborts a run; queue count, MODEL_ADDR "
                             "and error cleared; the Thread Index Table keeps its contents)"),
        Port("s_axil_awaddr", "in", AXIL_AW, "AXI4-Lite write address (byte address, word aligned)"),
        Port("s_axil_awvalid", "in", 1, ""),
        Port("s_axil_awready", "out", 1, "high with wready when awvalid and wvalid and no response pending"),
        Port("s_axil_wdata", "in", 32, ""),
        Port("s_axil_wstrb", "in", 4, "must be 0xF (a partial write is ignored, error code 5)"),
        Port("s_axil_wvalid", "in", 1, ""),
        Port("s_axil_wready", "out", 1, ""),
        Port("s_axil_bresp", "out", 2, "always OKAY (errors are reported in STATUS)"),
        Port("s_axil_bvalid", "out", 1, ""),
        Port("s_axil_bready", "in", 1, ""),
        Port("s_axil_araddr", "in", AXIL_AW, "AXI4-Lite read address"),
        Port("s_axil_arvalid", "in", 1, ""),
        Port("s_axil_arready", "out", 1, ""),
        Port("s_axil_rdata", "out", 32, "unknown registers read 0"),
        Port("s_axil_rresp", "out", 2, "always OKAY"),
        Port("s_axil_rvalid", "out", 1, ""),
        Port("s_axil_rready", "in", 1, ""),
        Port("m_axi_arid", "out", 1, "constant 0 (one ID: responses in order)"),
        Port("m_axi_araddr", "out", AW, "AXI4 read address (beat aligned)"),
        Port("m_axi_arlen", "out", 8, "beats - 1 (at most MAXBURST - 1)"),
        Port("m_axi_arsize", "out", 3, f"constant log2(LANES*W/8) = {log2(LW // 8)}"),
        Port("m_axi_arburst", "out", 2, "constant 1 (INCR)"),
        Port("m_axi_arvalid", "out", 1, ""),
        Port("m_axi_arready", "in", 1, ""),
        Port("m_axi_rid", "in", 1, "must be 0 (else error code 7)"),
        Port("m_axi_rdata", "in", LW, "read data, lane i = bits [i*W +: W]"),
        Port("m_axi_rresp", "in", 2, "non-OKAY sets error code 7 (data still used)"),
        Port("m_axi_rlast", "in", 1, "not needed (beats are counted)"),
        Port("m_axi_rvalid", "in", 1, ""),
        Port("m_axi_rready", "out", 1, "always high: the prefetch buffer space is reserved at AR issue"),
        Port("m_axi_awid", "out", 1, "constant 0"),
        Port("m_axi_awaddr", "out", AW, "AXI4 write address (beat aligned)"),
        Port("m_axi_awlen", "out", 8, "beats - 1"),
        Port("m_axi_awsize", "out", 3, "constant as arsize"),
        Port("m_axi_awburst", "out", 2, "constant 1 (INCR)"),
        Port("m_axi_awvalid", "out", 1, ""),
        Port("m_axi_awready", "in", 1, ""),
        Port("m_axi_wdata", "out", LW, ""),
        Port("m_axi_wstrb", "out", LW // 8, "byte strobes: partial first/last beats of an unaligned write"),
        Port("m_axi_wlast", "out", 1, ""),
        Port("m_axi_wvalid", "out", 1, ""),
        Port("m_axi_wready", "in", 1, ""),
        Port("m_axi_bid", "in", 1, "must be 0 (else error code 7)"),
        Port("m_axi_bresp", "in", 2, "non-OKAY sets error code 7"),
        Port("m_axi_bvalid", "in", 1, ""),
        Port("m_axi_bready", "out", 1, "always high"),
        Port("m_axis_pe_tdata", "out", LW, "PE-row beat: word k*LANES+i of a transfer in lane i; "
                                          "unused lanes of the last beat are zero"),
        Port("m_axis_pe_tkeep", "out", LW // 8, "byte mask of the valid words"),
        Port("m_axis_pe_tdest", "out", PEW, "physical PE index (Base PE Index + PE Offset)"),
        Port("m_axis_pe_tlast", "out", 1, "last beat of a transfer (for each PE of a broadcast)"),
        Port("m_axis_pe_tvalid", "out", 1, ""),
        Port("m_axis_pe_tready", "in", 1, ""),
        Port("s_axis_pe_tdata", "in", LW, "write data from the PEs, packed from lane 0 (word "
                                          "k*LANES+i of the transfer in lane i)"),
        Port("s_axis_pe_tid", "in", PEW, "source PE; must equal the transfer's PE (else code 6)"),
        Port("s_axis_pe_tvalid", "in", 1, ""),
        Port("s_axis_pe_tready", "out", 1, "high while a write transfer still needs beats"),
        Port("busy", "out", 1, "a run is in progress (STATUS bit 0)"),
    ]


def build(p):
    W, L, NPE, NT, QD = p["W"], p["LANES"], p["NPE"], p["NTHREADS"], p["QDEPTH"]
    ADDR_W, MAXB, PF = p["ADDR_W"], p["MAXBURST"], p["PREFETCH"]
    LW = L * W
    SB = LW // 8                 # strobe bits per beat
    LB = log2(SB)                # log2 beat bytes
    LL = log2(L)
    LWB = log2(W)
    WBY = W // 8
    WAW = ADDR_W - log2(WBY)     # word address width
    BAW = ADDR_W - LB            # beat address width
    PEW = clog2(NPE)
    TW = clog2(NT)
    QW = log2(QD)
    P4W = min(log2(4096 // SB), BAW)
    PFW = log2(PF)
    LMASK = tuple((1 << n) - 1 for n in range(L + 1)) + (0,) * ((1 << (LL + 1)) - L - 1)
    LOMASK = tuple(((1 << L) - 1) & ~((1 << n) - 1) for n in range(L))

    @block
    def cosmic_memory_schedule_unit(
            clk, rst,
            s_axil_awaddr, s_axil_awvalid, s_axil_awready,
            s_axil_wdata, s_axil_wstrb, s_axil_wvalid, s_axil_wready,
            s_axil_bresp, s_axil_bvalid, s_axil_bready,
            s_axil_araddr, s_axil_arvalid, s_axil_arready,
            s_axil_rdata, s_axil_rresp, s_axil_rvalid, s_axil_rready,
            m_axi_arid, m_axi_araddr, m_axi_arlen, m_axi_arsize, m_axi_arburst, m_axi_arvalid,
            m_axi_arready,
            m_axi_rid, m_axi_rdata, m_axi_rresp, m_axi_rlast, m_axi_rvalid, m_axi_rready,
            m_axi_awid, m_axi_awaddr, m_axi_awlen, m_axi_awsize, m_axi_awburst, m_axi_awvalid,
            m_axi_awready,
            m_axi_wdata, m_axi_wstrb, m_axi_wlast, m_axi_wvalid, m_axi_wready,
            m_axi_bid, m_axi_bresp, m_axi_bvalid, m_axi_bready,
            m_axis_pe_tdata, m_axis_pe_tkeep, m_axis_pe_tdest, m_axis_pe_tlast,
            m_axis_pe_tvalid, m_axis_pe_tready,
            s_axis_pe_tdata, s_axis_pe_tid, s_axis_pe_tvalid, s_axis_pe_tready,
            busy):
        # ---------------- memories (each written by one process, not reset) ----------------
        queue = [sig_u(30) for _ in range(QD)]
        # the table has 2**TW rows so that every TW-bit index is in range (the VHDL's
        # combinational reads by a register address, e.g. NTHREADS=1 or 3); rows >= NT are
        # never written (writes check t < NT) and read 0
        maddr = [sig_u(WAW) for _ in range(1 << TW)]
        offs = [sig_u(PEW) for _ in range(1 << TW)]
        pfb = [sig_u(LW) for _ in range(PF)]
        ri_mem = [sig_u(LL + SIZE_BITS + NBW + TGW + 1) for _ in range(RI_DEPTH)]

        # ---------------- registers ----------------
        running = sig_b()
        done_r = sig_b()
        err = sig_b()
        err_code = sig_u(4)
        wrq = sig_b()                # the queue holds a write entry (STATUS bit 3)
        qcount = sig_u(QW + 1)
        e_idx = sig_u(QW + 1)
        t_idx = sig_u(TW)
        model_addr = sig_u(WAW)
        deliv = sig_u(32)
        cycles = sig_u(32)
        bvalid_r = sig_b()
        rvalid_r = sig_b()
        rdata_r = sig_u(32)
        # burst splitter (one transfer at a time)
        sp_act = sig_b()
        sp_wr = sig_b()
        sp_ba = sig_u(BAW)
        sp_nb = sig_u(NBW)
        arvalid_r = sig_b()
        araddr_r = sig_u(ADDR_W)
        arlen_r = sig_u(8)
        awvalid_r = sig_b()
        awaddr_r = sig_u(ADDR_W)
        awlen_r = sig_u(8)
        pf_free = sig_u(PFW + 2, PF)  # PREFETCH - (reserved + stored beats)
        sp_left = sig_u(P4W + 1)     # beats from sp_ba to its 4 KiB page end, 1..2**P4W
        rd_out = sig_u(PFW + 2)      # beats requested, not yet returned
        pf_wp = sig_u(PFW)
        pf_rp = sig_u(PFW)
        pf_cnt = sig_u(PFW + 1)      # beats stored
        ri_wp = sig_u(2)
        ri_rp = sig_u(2)
        ri_cnt = sig_u(3)
        wb_out = sig_u(16)           # write bursts awaiting B
        rb_out = sig_u(16)           # read bursts awaiting rlast
        # read delivery (shifter)
        d_act = sig_b()
        d_s = sig_u(LL)
        d_wrem = sig_u(NBW)
        d_mrem = sig_u(NBW)
        d_pe = sig_u(TGW)
        d_bc = sig_b()
        d_rep = sig_u(TW)
        cur = sig_u(LW)
        cur_v = sig_b()
        # write path
        w_act = sig_b()
        w_s = sig_u(LL)
        w_first = sig_b()
        w_vrem = sig_u(NBW)
        w_inrem = sig_u(NBW)
        w_nb = sig_u(NBW)
        w_ba = sig_u(BAW)
        w_bleft = sig_u(NBW)
        w_pe = sig_u(PEW)
        w_prev = sig_u(LW)

        # ---------------- combinational ----------------
        ent = sig_u(30)
        ent_size = sig_u(SIZE_BITS)
        ent_base = sig_u(BASE_BITS)
        ent_wr = sig_b()
        ent_bc = sig_b()
        t_off = sig_u(PEW)
        t_off_x = sig_u(TGW)
        base_x = sig_u(TGW)
        tgt = sig_u(TGW)
        tgt_bad = sig_b()
        t_maddr = sig_u(WAW)
        x_addr = sig_u(WAW)
        x_s = sig_u(LL)
        x_s18 = sig_u(NBW)
        size18 = sig_u(NBW)
        nbsum = sig_u(NBW)
        x_nb = sig_u(NBW)
        size_w = sig_u(WAW)
        x_next = sig_u(WAW)
        walk_more = sig_b()
        rd_idle = sig_b()
        wr_idle = sig_b()
        can_rd = sig_b()
        can_wr = sig_b()
        sp_blen = sig_u(NBW)
        sp_sel_left = sig_b()
        sp_left_x = sig_u(NBW)
        sp_left_next = sig_u(P4W + 1)
        x_left = sig_u(P4W + 1)
        x_lo = sig_u(P4W + 1)
        left_gt_max = sig_b()
        # (a burst that is neither page-end nor MAXBURST long ends its transfer: sp_left
        # is then reloaded with the next one, its value after the burst does not matter)
        MAXB_L = min(MAXB, (1 << P4W) - 1)
        P4K = 1 << P4W          # a Python constant: MyHDL writes '1 << P4W' as VHDL shift_left(1, n)
        sp_blen8 = sig_u(8)
        sp_blen_m1 = sig_u(8)
        pf_fits = sig_b()
        blen_ba = sig_u(BAW)
        ni_sum = sig_u(NBW)
        x_ni = sig_u(NBW)
        blen_x = sig_u(PFW + 2)
        ri_push = sig_u(LL + SIZE_BITS + NBW + TGW + 1)
        ri_head = sig_u(LL + SIZE_BITS + NBW + TGW + 1)
        h_s = sig_u(LL)
        h_size = sig_u(SIZE_BITS)
        h_size18 = sig_u(NBW)
        h_nb = sig_u(NBW)
        h_pe = sig_u(TGW)
        h_bc = sig_b()
        head = sig_u(LW)
        pf_ne = sig_b()
        head_g = sig_u(LW)
        shamt = sig_u(LL + LWB)
        hshamt = sig_u(LL + 1 + LWB)
        d_sx = sig_u(LL + 1)
        d_ls = sig_u(LL + 1)
        d_nv = sig_u(LL + 1)
        o_raw = sig_u(LW)
        lmask = sig_u(L)
        dmask = ConcatSignal(*[lmask(ln) for ln in reversed(range(L)) for _ in range(W)])
        kmask = ConcatSignal(*[lmask(ln) for ln in reversed(range(L)) for _ in range(WBY)])
        o_data = sig_u(LW)
        o_dest = sig_u(TGW)
        o_skip = sig_b()
        b_off = sig_u(PEW)
        b_off_x = sig_u(TGW)
        o_fire = sig_b()
        o_push = sig_b()
        o_last = sig_b()
        o_nf = sig_b()
        o_user = sig_u(SB + PEW)
        o_dest_n = sig_u(PEW)
        po_user = sig_u(SB + PEW)
        po_valid = sig_b()
        po_data = sig_u(LW)
        po_last = sig_b()
        # write path comb
        w_in = sig_u(LW)
        w_prev_g = sig_u(LW)
        w_ls = sig_u(LL + 1)
        w_sx = sig_u(LL + 1)
        w_shamt = sig_u(LL + 1 + LWB)
        w_ishamt = sig_u(LL + LWB)
        w_nv = sig_u(LL + 1)
        w_lm = sig_u(L)
        w_hm = sig_u(L)
        w_lo = sig_u(L)
        w_data = sig_u(LW)
        w_strb = ConcatSignal(*[w_lm(ln) for ln in reversed(range(L)) for _ in range(WBY)])
        w_fire = sig_b()
        w_need = sig_b()
        w_nf = sig_b()
        w_blen = sig_u(NBW)
        w_lastb = sig_b()
        wo_valid = sig_b()
        # memory write ports
        ma_we = sig_b()
        ma_wa = sig_u(TW)
        ma_wd = sig_u(WAW)
        of_we = sig_b()
        of_wa = sig_u(TW)
        q_we = sig_b()
        q_wa = sig_u(QW)
        # AXI4-Lite
        aw_go = sig_b()
        ar_go = sig_b()
        waddr = sig_u(AXIL_AW - 2)
        raddr = sig_u(AXIL_AW - 2)
        wmis = sig_b()
        rmis = sig_b()
        w_tbl = sig_b()
        r_tbl = sig_b()
        w_t = sig_u(5)
        r_t = sig_u(5)
        r_maddr = sig_u(WAW)
        r_off = sig_u(PEW)
        r_maddr32 = sig_u(32)
        r_off32 = sig_u(32)
        model32 = sig_u(32)
        qcount32 = sig_u(32)
        status32 = sig_u(32)
        push_err = sig_u(4)
        idle_all = sig_b()

        insts = [
            fit(t_off, t_off_x), fit(ent_base, base_x), fit(x_s, x_s18), fit(ent_size, size18),
            fit(ent_size, size_w), fit(h_size, h_size18), fit(b_off, b_off_x),
            fit(sp_blen, blen_ba),
            fit(w_s, w_sx), fit(d_s, d_sx), fit(r_maddr, r_maddr32), fit(r_off, r_off32), fit(model_addr, model32),
            fit(qcount, qcount32),
            fit(sp_left, sp_left_x),
            burst_len_left(sp_nb, sp_left_x, sp_blen, sp_sel_left, MAXB),
            left_cmp(sp_left, left_gt_max, MAXB_L),
            lo_of(x_addr, x_lo, LL, P4W),
            burst_len(w_ba, w_nb, w_blen, P4W, MAXB),
            out_fifo2(clk, rst, o_data, o_last, o_user, o_push, o_nf,
                      po_data, po_valid, m_axis_pe_tready, po_last, po_user),
            out_fifo2(clk, rst, w_data, w_lastb, w_strb, w_fire, w_nf,
                      m_axi_wdata, wo_valid, m_axi_wready, m_axi_wlast, m_axi_wstrb),
        ]

        # ---------------- walker: the current (entry, thread) ----------------
        @always_comb
        def ent_rd():
            ent.next = queue[e_idx[QW:]]
            t_off.next = offs[t_idx]
            t_maddr.next = maddr[t_idx]

        @always_comb
        def ent_c():
            ent_size.next = ent[SIZE_BITS:]
            ent_base.next = ent[BASE_LSB + BASE_BITS:BASE_LSB]
            ent_wr.next = ent[WR_BIT]
            ent_bc.next = ent[BC_BIT]

        @always_comb
        def tgt_c():
            tgt.next = base_x + t_off_x
            if ent_bc:
                x_addr.next = model_addr
            else:
                x_addr.next = t_maddr

        @always_comb
        def tgt_c2():
            tgt_bad.next = tgt >= NPE and not ent_bc
            x_s.next = x_addr[LL:]
            nbsum.next = x_s18 + size18 + (L - 1)
            x_next.next = x_addr + size_w
            ni_sum.next = size18 + intbv(L - 1)[NBW:]

        @always_comb
        def nb_c():
            x_nb.next = nbsum >> LL
            x_ni.next = ni_sum >> LL

        @always_comb
        def idle_c():
            walk_more.next = running and e_idx != qcount
            rd_idle.next = ri_cnt == 0 and not d_act and pf_free == PF and rd_out == 0 and rb_out == 0
            wr_idle.next = not w_act and wb_out == 0 and not wo_valid
            idle_all.next = not sp_act and not arvalid_r and not awvalid_r and not po_valid

        @always_comb
        def can_c():
            can_rd.next = walk_more and not sp_act and ri_cnt < RI_DEPTH and wr_idle and not awvalid_r
            can_wr.next = walk_more and not sp_act and rd_idle and wr_idle and not arvalid_r \
                and not awvalid_r

        # ---------------- burst issue ----------------
        @always_comb
        def blen_c():
            sp_blen8.next = sp_blen[8:]
            blen_x.next = sp_blen[PFW + 2:]
            sp_blen_m1.next = sp_blen8 - 1
            pf_fits.next = blen_x <= pf_free
            # sp_left after a burst of sp_blen beats that does not end the transfer: a
            # page-end burst leaves sp_ba page aligned, any other one was MAXBURST long
            if sp_sel_left or not left_gt_max:
                sp_left_next.next = P4K
            else:
                sp_left_next.next = sp_left - MAXB_L
            x_left.next = P4K - x_lo

        # ---------------- read transfer info FIFO ----------------
        @always_comb
        def ri_c():
            if ent_bc:
                ri_push.next = concat(ent_bc, base_x, x_nb, ent_size, x_s)
            else:
                ri_push.next = concat(ent_bc, tgt, x_nb, ent_size, x_s)
            ri_head.next = ri_mem[ri_rp]

        @always_comb
        def ri_h():
            h_s.next = ri_head[LL:]
            h_size.next = ri_head[LL + SIZE_BITS:LL]
            h_nb.next = ri_head[LL + SIZE_BITS + NBW:LL + SIZE_BITS]
            h_pe.next = ri_head[LL + SIZE_BITS + NBW + TGW:LL + SIZE_BITS + NBW]
            h_bc.next = ri_head[LL + SIZE_BITS + NBW + TGW]

        @always(clk.posedge)
        def ri_ram():
            if can_rd and not ent_wr and not tgt_bad:
                ri_mem[ri_wp].next = ri_push

        # ---------------- prefetch buffer ----------------
        @always(clk.posedge)
        def pf_ram():
            if m_axi_rvalid and rd_out != 0:
                pfb[pf_wp].next = m_axi_rdata

        @always_comb
        def pf_c():
            head.next = pfb[pf_rp]
            pf_ne.next = pf_cnt != 0
            b_off.next = offs[d_rep]

        # ---------------- shifter and PE port ----------------
        @always_comb
        def sh_c():
            if pf_ne and d_mrem != 0 and d_s != 0:
                head_g.next = head
            else:
                head_g.next = 0
            shamt.next = concat(d_s, intbv(0)[LWB:])
            hshamt.next = concat(d_ls, intbv(0)[LWB:])
            if d_wrem >= L:
                d_nv.next = L
            else:
                d_nv.next = d_wrem[LL + 1:]

        @always_comb
        def sh_ls():
            d_ls.next = L - d_sx

        @always_comb
        def sh_c2():
            o_raw.next = (cur >> shamt) | (head_g << hshamt)

        @always_comb
        def rom_d():
            lmask.next = LMASK[d_nv]

        @always_comb
        def rom_wh():
            w_hm.next = LMASK[w_nv]

        @always_comb
        def rom_wl():
            w_lo.next = LOMASK[w_s]

        @always_comb
        def out_c():
            o_data.next = o_raw & dmask
            o_last.next = d_wrem <= L
            if d_bc:
                o_dest.next = d_pe + b_off_x
            else:
                o_dest.next = d_pe
            o_fire.next = d_act and cur_v and o_nf and (d_s == 0 or d_mrem == 0 or pf_ne)

        @always_comb
        def out_c2():
            o_skip.next = o_dest >= NPE
            o_dest_n.next = o_dest[PEW:]

        @always_comb
        def out_c3():
            o_push.next = o_fire and not o_skip
            o_user.next = concat(kmask, o_dest_n)

        @always_comb
        def pe_out():
            m_axis_pe_tdata.next = po_data
            m_axis_pe_tvalid.next = po_valid
            m_axis_pe_tlast.next = po_last
            m_axis_pe_tdest.next = po_user[PEW:]
            m_axis_pe_tkeep.next = po_user[SB + PEW:PEW]

        # ---------------- write path (PEs -> memory) ----------------
        @always_comb
        def w_c():
            w_need.next = w_inrem != 0
            if w_inrem != 0:
                w_in.next = s_axis_pe_tdata
            else:
                w_in.next = 0
            w_ls.next = L - w_sx

        @always_comb
        def w_c2():
            if w_s != 0:
                w_prev_g.next = w_prev
            else:
                w_prev_g.next = 0
            w_shamt.next = concat(w_ls, intbv(0)[LWB:])
            w_ishamt.next = concat(w_s, intbv(0)[LWB:])
            w_fire.next = w_act and w_nf and (not w_need or s_axis_pe_tvalid)
            s_axis_pe_tready.next = w_act and w_nf and w_need
            if w_vrem >= L:
                w_nv.next = L
            else:
                w_nv.next = w_vrem[LL + 1:]

        @always_comb
        def w_c3():
            w_data.next = (w_prev_g >> w_shamt) | (w_in << w_ishamt)
            if w_first:
                w_lm.next = w_hm & w_lo
            else:
                w_lm.next = w_hm
            if w_bleft == 0:
                w_lastb.next = w_blen == 1
            else:
                w_lastb.next = w_bleft == 1

        # ---------------- table / queue write ports ----------------
        @always_comb
        def tbl_c():
            ma_we.next = False
            ma_wa.next = t_idx
            ma_wd.next = x_next
            of_we.next = False
            of_wa.next = w_t[TW:]
            q_we.next = False
            q_wa.next = qcount[QW:]
            if aw_go and not running and s_axil_wstrb == 15 and not wmis:
                if w_tbl:
                    if s_axil_awaddr[2]:
                        of_we.next = s_axil_wdata < NPE
                    else:
                        ma_we.next = True
                        ma_wa.next = w_t[TW:]
                        ma_wd.next = s_axil_wdata[WAW:]
                elif waddr == R_QPUSH:
                    q_we.next = push_err == 0
            if (can_rd and not ent_wr or can_wr and ent_wr) and not ent_bc and not tgt_bad:
                ma_we.next = True

        @always(clk.posedge)
        def tbl_ram():
            if ma_we:
                maddr[ma_wa].next = ma_wd
            if of_we:
                offs[of_wa].next = s_axil_wdata[PEW:]
            if q_we:
                queue[q_wa].next = s_axil_wdata[30:]

        @always_comb
        def push_c():
            if s_axil_wdata[32:30] != 0 or (s_axil_wdata[WR_BIT] and s_axil_wdata[BC_BIT]):
                push_err.next = E_REG
            elif s_axil_wdata[BASE_LSB + BASE_BITS:BASE_LSB] >= NPE:
                push_err.next = E_PE
            elif s_axil_wdata[SIZE_BITS:] == 0:
                push_err.next = E_SIZE
            elif qcount == QD:
                push_err.next = E_FULL
            else:
                push_err.next = 0

        # ---------------- AXI4-Lite ----------------
        @always_comb
        def axil_c():
            aw_go.next = s_axil_awvalid and s_axil_wvalid and not bvalid_r
            ar_go.next = s_axil_arvalid and not rvalid_r
            waddr.next = s_axil_awaddr[AXIL_AW:2]
            raddr.next = s_axil_araddr[AXIL_AW:2]
            wmis.next = s_axil_awaddr[2:] != 0
            rmis.next = s_axil_araddr[2:] != 0
            w_t.next = s_axil_awaddr[8:3]
            r_t.next = s_axil_araddr[8:3]

        @always_comb
        def axil_c2():
            w_tbl.next = s_axil_awaddr[AXIL_AW:8] == 1 and w_t < NT
            r_tbl.next = s_axil_araddr[AXIL_AW:8] == 1 and r_t < NT
            r_maddr.next = maddr[r_t[TW:]]
            r_off.next = offs[r_t[TW:]]
            status32.next = concat(intbv(0)[15 - QW:], qcount, intbv(0)[8:], err_code, wrq, err,
                                   done_r, running)

        @always_comb
        def axil_o():
            s_axil_awready.next = aw_go
            s_axil_wready.next = aw_go
            s_axil_bvalid.next = bvalid_r
            s_axil_bresp.next = 0
            s_axil_arready.next = not rvalid_r
            s_axil_rvalid.next = rvalid_r
            s_axil_rresp.next = 0
            s_axil_rdata.next = rdata_r

        @always_comb
        def axi_o():
            m_axi_arvalid.next = arvalid_r
            m_axi_arid.next = False
            m_axi_awid.next = False
            m_axi_araddr.next = araddr_r
            m_axi_arlen.next = arlen_r
            m_axi_arsize.next = LB
            m_axi_arburst.next = 1
            m_axi_rready.next = True
            m_axi_awvalid.next = awvalid_r
            m_axi_awaddr.next = awaddr_r
            m_axi_awlen.next = awlen_r
            m_axi_awsize.next = LB
            m_axi_awburst.next = 1
            m_axi_wvalid.next = wo_valid
            m_axi_bready.next = True
            busy.next = running

        # ---------------- the controller ----------------
        @always_seq(clk.posedge, reset=rst)
        def main():
            pop = False
            # ---- walker
            if running:
                cycles.next = cycles + 1
            if walk_more and tgt_bad and (can_rd and not ent_wr or can_wr and ent_wr):
                err.next = True
                err_code.next = E_PE
            if (can_rd and not ent_wr) or (can_wr and ent_wr):
                if not tgt_bad:
                    sp_act.next = True
                    sp_wr.next = ent_wr
                    sp_ba.next = x_addr[WAW:LL]
                    sp_left.next = x_left
                    sp_nb.next = x_nb
                    if ent_bc:
                        model_addr.next = x_next
                if ent_bc or t_idx == NT - 1:
                    t_idx.next = 0
                    e_idx.next = e_idx + 1
                else:
                    t_idx.next = t_idx + 1
                if not ent_wr and not tgt_bad:
                    ri_wp.next = ri_wp + 1
                if ent_wr and not tgt_bad:
                    w_act.next = True
                    w_s.next = x_s
                    w_first.next = True
                    w_vrem.next = x_s18 + size18
                    w_inrem.next = x_ni
                    w_nb.next = x_nb
                    w_ba.next = x_addr[WAW:LL]
                    w_bleft.next = 0
                    w_pe.next = tgt[PEW:]
                    w_prev.next = 0
            if running and not walk_more and rd_idle and wr_idle and idle_all:
                running.next = False
                done_r.next = True
            # ---- burst issue
            if arvalid_r and m_axi_arready:
                arvalid_r.next = False
            if awvalid_r and m_axi_awready:
                awvalid_r.next = False
            if sp_act and not sp_wr and (not arvalid_r or m_axi_arready) and pf_fits:
                arvalid_r.next = True
                araddr_r.next = concat(sp_ba, intbv(0)[LB:])
                arlen_r.next = sp_blen_m1
                sp_ba.next = sp_ba + blen_ba
                sp_left.next = sp_left_next
                sp_nb.next = sp_nb - sp_blen
                if sp_nb == sp_blen:
                    sp_act.next = False
            if sp_act and sp_wr and (not awvalid_r or m_axi_awready):
                awvalid_r.next = True
                awaddr_r.next = concat(sp_ba, intbv(0)[LB:])
                awlen_r.next = sp_blen_m1
                sp_ba.next = sp_ba + blen_ba
                sp_left.next = sp_left_next
                sp_nb.next = sp_nb - sp_blen
                if sp_nb == sp_blen:
                    sp_act.next = False
            # ---- read data into the prefetch buffer
            issue_rd = sp_act and not sp_wr and (not arvalid_r or m_axi_arready) and pf_fits
            rbeat = m_axi_rvalid and rd_out != 0
            if rbeat:
                pf_wp.next = pf_wp + 1
                if m_axi_rresp != 0 or m_axi_rid:
                    err.next = True
                    err_code.next = E_RESP
            # ---- delivery
            if o_fire:
                if o_push:
                    deliv.next = deliv + 1
                else:
                    err.next = True
                    err_code.next = E_PE
                if d_bc and d_rep != NT - 1:
                    d_rep.next = d_rep + 1
                else:
                    d_rep.next = 0
                    if d_wrem > L:
                        d_wrem.next = d_wrem - L
                        if d_mrem != 0 and pf_ne:
                            pop = True
                            cur.next = head
                            d_mrem.next = d_mrem - 1
                        else:
                            cur_v.next = False
                    else:
                        tail = d_mrem != 0
                        if tail:
                            pop = True
                        if ri_cnt != 0:
                            ri_rp.next = ri_rp + 1
                            d_s.next = h_s
                            d_wrem.next = h_size18
                            d_pe.next = h_pe
                            d_bc.next = h_bc
                            if pf_ne and not tail:
                                pop = True
                                cur.next = head
                                cur_v.next = True
                                d_mrem.next = h_nb - 1
                            else:
                                cur_v.next = False
                                d_mrem.next = h_nb
                        else:
                            d_act.next = False
                            cur_v.next = False
                            d_mrem.next = 0
            elif not d_act and ri_cnt != 0:
                ri_rp.next = ri_rp + 1
                d_act.next = True
                d_s.next = h_s
                d_wrem.next = h_size18
                d_pe.next = h_pe
                d_bc.next = h_bc
                d_mrem.next = h_nb
                cur_v.next = False
                d_rep.next = 0
            elif d_act and not cur_v and d_mrem != 0 and pf_ne:
                pop = True
                cur.next = head
                cur_v.next = True
                d_mrem.next = d_mrem - 1
            if pop:
                pf_rp.next = pf_rp + 1
            # counts
            ri_in = (can_rd and not ent_wr) and not tgt_bad
            ri_outp = (o_fire and not (d_bc and d_rep != NT - 1) and d_wrem <= L and ri_cnt != 0) or \
                (not o_fire and not d_act and ri_cnt != 0)
            if ri_in and not ri_outp:
                ri_cnt.next = ri_cnt + 1
            elif ri_outp and not ri_in:
                ri_cnt.next = ri_cnt - 1
            if rbeat and not pop:
                pf_cnt.next = pf_cnt + 1
            elif pop and not rbeat:
                pf_cnt.next = pf_cnt - 1
            if issue_rd:
                if pop:
                    pf_free.next = pf_free + 1 - blen_x
                else:
                    pf_free.next = pf_free - blen_x
                if rbeat:
                    rd_out.next = rd_out + blen_x - 1
                else:
                    rd_out.next = rd_out + blen_x
            else:
                if pop:
                    pf_free.next = pf_free + 1
                if rbeat:
                    rd_out.next = rd_out - 1
            # ---- write path
            if w_fire:
                w_prev.next = w_in
                w_first.next = False
                if w_inrem != 0:
                    w_inrem.next = w_inrem - 1
                    if s_axis_pe_tid != w_pe:
                        err.next = True
                        err_code.next = E_WRPE
                if w_vrem > L:
                    w_vrem.next = w_vrem - L
                else:
                    w_vrem.next = 0
                w_ba.next = w_ba + 1
                w_nb.next = w_nb - 1
                if w_bleft == 0:
                    w_bleft.next = w_blen - 1
                else:
                    w_bleft.next = w_bleft - 1
                if w_nb == 1:
                    w_act.next = False
            issue_aw = sp_act and sp_wr and (not awvalid_r or m_axi_awready)
            bdone = m_axi_bvalid and wb_out != 0
            if bdone and (m_axi_bresp != 0 or m_axi_bid):
                err.next = True
                err_code.next = E_RESP
            rlastb = rbeat and m_axi_rlast
            if issue_rd and not rlastb:
                rb_out.next = rb_out + 1
            elif rlastb and not issue_rd:
                rb_out.next = rb_out - 1
            if issue_aw and not bdone:
                wb_out.next = wb_out + 1
            elif bdone and not issue_aw:
                wb_out.next = wb_out - 1
            # ---- AXI4-Lite read
            if ar_go:
                rvalid_r.next = True
                if rmis:
                    rdata_r.next = 0
                elif r_tbl:
                    if s_axil_araddr[2]:
                        rdata_r.next = r_off32
                    else:
                        rdata_r.next = r_maddr32
                elif raddr == R_STATUS:
                    rdata_r.next = status32
                elif raddr == R_QCOUNT:
                    rdata_r.next = qcount32
                elif raddr == R_MODEL:
                    rdata_r.next = model32
                elif raddr == R_DELIV:
                    rdata_r.next = deliv
                elif raddr == R_CYCLES:
                    rdata_r.next = cycles
                else:
                    rdata_r.next = 0
            elif rvalid_r and s_axil_rready:
                rvalid_r.next = False
            # ---- AXI4-Lite write
            if aw_go:
                bvalid_r.next = True
                if s_axil_wstrb != 15 or wmis:
                    err.next = True
                    err_code.next = E_REG
                elif waddr == R_CTRL:
                    if s_axil_wdata[2]:
                        err.next = False
                        err_code.next = 0
                    if s_axil_wdata[0]:
                        if running or qcount == 0:
                            err.next = True
                            err_code.next = E_BUSY
                        else:
                            running.next = True
                            done_r.next = False
                            e_idx.next = 0
                            t_idx.next = 0
                            deliv.next = 0
                            cycles.next = 0
                    elif s_axil_wdata[1]:
                        if running:
                            err.next = True
                            err_code.next = E_BUSY
                        else:
                            qcount.next = 0
                            wrq.next = False
                elif running and (waddr == R_QPUSH or waddr == R_MODEL or w_tbl):
                    err.next = True
                    err_code.next = E_BUSY
                elif waddr == R_QPUSH:
                    if push_err != 0:
                        err.next = True
                        err_code.next = push_err
                    else:
                        qcount.next = qcount + 1
                        if s_axil_wdata[WR_BIT]:
                            wrq.next = True
                elif waddr == R_MODEL:
                    model_addr.next = s_axil_wdata[WAW:]
                elif w_tbl:
                    if s_axil_awaddr[2] and s_axil_wdata >= NPE:
                        err.next = True
                        err_code.next = E_PE
                else:
                    err.next = True
                    err_code.next = E_REG
            elif bvalid_r and s_axil_bready:
                bvalid_r.next = False

        return (insts, ent_rd, ent_c, tgt_c, tgt_c2, nb_c, idle_c, can_c, blen_c, ri_c, ri_h, ri_ram,
                pf_ram, pf_c, sh_c, sh_ls, sh_c2, rom_d, rom_wh, rom_wl, out_c, out_c2, out_c3, pe_out,
                w_c, w_c2, w_c3, tbl_c, tbl_ram, push_c, axil_c, axil_c2, axil_o, axi_o, main)

    ports = ports_of(p)
    return make_factory(cosmic_memory_schedule_unit, ports), ports


def datasheet(p):
    W, L, NPE, NT, QD = p["W"], p["LANES"], p["NPE"], p["NTHREADS"], p["QDEPTH"]
    MAXB, PF = p["MAXBURST"], p["PREFETCH"]
    LW = L * W
    NT2 = 1 << clog2(NT)
    TBL_PAD = f" (stored as {NT2}, the rest read 0)" if NT2 != NT else ""
    return Datasheet(
        summary="The programmable memory interface of the CoSMIC template accelerator (CoSMIC "
                "section 5.1 'Memory interface', section 5.2): a Memory Schedule queue shared by all "
                "worker threads, a Thread Index Table (Mem Addr, PE Offset per thread), a controller "
                "that walks the schedule round-robin over the threads as an AXI4 master, a shifter "
                "that aligns data whose start is not on a memory beat, and a prefetch buffer that "
                "hides memory latency.  PEs never request data: the unit pushes each read to PE "
                "Base + PE Offset on `m_axis_pe` and collects writes from `s_axis_pe`.  Bit-exact "
                "with `golden.cosmic_msu` (`plan`, `run`).",
        latency="by construction: the first AR is valid 2 cycles after the AXI4-Lite write of "
                "START; a read beat accepted at edge n is in the prefetch buffer at n, in the shifter "
                "register at n+1 and valid on m_axis_pe after edge n+2 (output buffer empty); memory "
                "latency adds directly (not measured separately in the bench)",
        throughput=f"one PE-row beat ({L} words) per cycle while memory returns one beat per cycle "
                   f"(continuous across back-to-back transfers, including unaligned ones, which "
                   f"cost one extra memory beat when they straddle a beat); a broadcast beat is "
                   f"repeated for the {NT} threads (NTHREADS cycles per beat); writes one memory "
                   f"beat per cycle; a change between reads and writes drains the other direction "
                   f"first",
        notes=[
            "Walk: for each queue entry in order, threads 0..NTHREADS-1 each perform the entry's "
            "transfer (a broadcast entry is performed once, for all threads).  Mem Addr of the "
            "thread (MODEL_ADDR for a broadcast) advances by Size when the transfer is dispatched; "
            "a later START continues from the advanced pointers (next mini-batch).  A transfer "
            "whose PE (Base + PE Offset) is >= NPE is skipped with error code 1 and its pointer "
            "does not advance; for a broadcast only that thread's delivery is skipped.",
            f"Addresses: Mem Addr and MODEL_ADDR are word addresses ({W}-bit words); the AXI byte "
            f"address is word address * {W // 8}.  Reads/writes use INCR bursts of whole "
            f"{LW}-bit beats, at most MAXBURST={MAXB} beats, split so none crosses a 4 KiB "
            "boundary.  An unaligned read fetches the partly used first/last beats and the "
            "shifter drops the extra words; an unaligned write uses WSTRB so the words around the "
            "transfer are untouched.",
            f"Prefetch buffer: {PF} beats.  A read burst is issued only when its beats fit in the "
            "free space (credit), so `m_axi_rready` is constant high.  Reads for later transfers "
            "(up to 4 transfers ahead) are issued while earlier data is still being delivered.",
            "PE port `m_axis_pe`: word k*LANES+i of a transfer in lane i of beat k, `tkeep` marks "
            "the valid words of the last beat (the rest is zero), `tlast` the last beat, `tdest` "
            "the PE.  A broadcast beat goes to thread 0's PE, then thread 1's, ... before the "
            "next beat.  Full valid/ready; a two-entry output buffer with a registered not-full "
            "flag, so there is no combinational path from `m_axis_pe_tready`.",
            "Writes: the unit takes ceil(Size/LANES) beats from `s_axis_pe` (packed from lane 0, "
            "`tid` = the transfer's PE, checked: a mismatch sets code 6 but the data is written) "
            "and writes them at Mem Addr.  Reads wait for all write responses first and a write "
            "waits for all reads to be delivered, so read-after-write and write-after-read "
            "through memory are safe.",
            "Errors are sticky until ERRCLR; a rejected write changes nothing.  Configuration "
            "(QPUSH, MODEL_ADDR, the table) and START/CLEAR are refused while busy (code 4).",
            f"Memories: queue {QD}x30 (bits 31:30 of an entry are never stored), table {NT} rows{TBL_PAD}, prefetch buffer {PF}x{LW} (one write "
            "process each, combinational read: LUT RAM); none is reset.",
            "The paper's bus to the PE rows is pipelined and shared; here it is one AXI4-Stream "
            "with tdest, to be fanned out to the rows by the integration.",
            "Deviation from the paper: it does not say where a broadcast read comes from; here a "
            "shared MODEL_ADDR pointer (not a thread's Mem Addr) is used, so the model region is "
            "kept apart from every thread's data sub-partition.  Word addresses wrap at the top "
            "of the ADDR_W address space; a burst never wraps (the 4 KiB split comes first).",
        ])


CORE = CoreDef(
    name=KIND, family="cosmic",
    description="CoSMIC memory schedule unit: schedule queue, thread index table, AXI4 master "
                "with shifter and prefetch buffer feeding PE rows, AXI4-Lite programmed",
    params=PARAMS,
    build=build, datasheet=datasheet,
    configs={"default": {},
             "small": {"W": 16, "LANES": 2, "NPE": 12, "NTHREADS": 3, "QDEPTH": 4, "ADDR_W": 20,
                       "MAXBURST": 4, "PREFETCH": 8}},
    generator="rtl_gen/cosmic/cosmic_memory_schedule_unit.py",
)
