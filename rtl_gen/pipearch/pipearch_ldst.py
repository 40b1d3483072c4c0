"""``pipearch_ldst`` core: the PipeArch Load and Store subroutines (PipeArch 6.2, opcodes
LOAD/STORE of ``golden.pipearch_isa``) as one AXI4 master.

* Load (read channels AR/R): ``ld_start`` with a line address and a line count issues
  INCR bursts of at most MAX_BURST lines that never cross a 4 KiB boundary.  A burst is
  issued only when the internal data FIFO has room for all of its lines (lines reserved
  by issued bursts + lines stored <= FIFO_DEPTH), so ``m_axi_rready`` is constant high
  and no read beat is ever dropped or overflows; up to OUTSTANDING bursts are in
  flight, which hides memory latency.  The lines leave in order on ``m_axis_ld``.
* Store (write channels AW/W/B): lines from ``s_axis_st`` go into a second FIFO; an AW
  is issued only when all lines of its burst are in the FIFO, so the W beats of a burst
  follow without bubbles; W beats of a burst are sent only once its AW is issued;
  ``st_done`` pulses after the last B response.
* Load and store run concurrently and independently; each has the PipeArch subroutine
  control protocol (``rtl_gen/pipearch/subroutine.py``).

``block_fn(p)`` is the MyHDL top for instantiation inside the PipeArch PU.
"""
from __future__ import annotations

from myhdl import always, always_comb, always_seq, block, concat, intbv

from rtl_gen.common.blocks import fit
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_u
from rtl_gen.common.params import Param, ParamError, ParamSet, power_of_two
from rtl_gen.common.ports import make_factory

from .subroutine import bits_for, field_bits

KIND = "pipearch_ldst"
W = 32              # word width of a line lane (PipeArch: 32-bit words)
PAGE = 4096         # AXI4 bursts must not cross a 4 KiB boundary
LQ = 4              # write-burst length queue (AW issued, W not finished)
CACHE = 3           # AxCACHE: normal non-cacheable bufferable


def log2(n: int) -> int:
    return n.bit_length() - 1


def _cross(p: dict) -> str | None:
    lb = 4 * p["LANES"]
    if p["MAX_BURST"] * lb > PAGE:
        return (f"parameter MAX_BURST={p['MAX_BURST']} too large for LANES={p['LANES']}: a burst of "
                f"MAX_BURST lines of {lb} bytes must fit in a 4 KiB page (at most {PAGE // lb})")
    if p["FIFO_DEPTH"] < p["MAX_BURST"]:
        return (f"parameter FIFO_DEPTH={p['FIFO_DEPTH']} must be >= MAX_BURST={p['MAX_BURST']} "
                "(a read burst is issued only when all its lines fit in the FIFO)")
    return None


PARAMS = ParamSet([
    Param("LANES", 16, "32-bit words per line; AXI data width = LANES*32 bits (one line per beat)",
          1, 32, power_of_two),
    Param("ADDR_W", 64, "AXI4 byte address width", 32, 64),
    Param("ID_W", 1, "AXI4 ID width (every transaction uses ID 0, so responses come in order)", 1, 16),
    Param("MAX_BURST", 64, "longest AXI4 burst in lines (beats), <= 256 and <= 4096/(4*LANES)", 1, 256),
    Param("FIFO_DEPTH", 128, "lines in each of the load and store data FIFOs (block RAM)", 2, 4096,
          power_of_two),
    Param("MAX_LINES", 1 << 20, "largest line count of one load or store", 1, 1 << 24),
    Param("OUTSTANDING", 8, "most bursts in flight per direction (AR without RLAST, AW without B)",
          1, 255),
], [_cross])


def widths(p: dict) -> dict:
    L = p["LANES"]
    lbytes = 4 * L
    LB = log2(lbytes)
    LAW = p["ADDR_W"] - LB
    PL = PAGE // lbytes
    P4W = log2(PL)
    FW = field_bits(p["MAX_LINES"])
    CW = max(FW, P4W + 1, 9)
    FDW = log2(p["FIFO_DEPTH"])
    OW = bits_for(p["OUTSTANDING"])
    return dict(L=L, LW=W * L, SB=lbytes, LB=LB, LAW=LAW, PL=PL, P4W=P4W, FW=FW, CW=CW, FDW=FDW, OW=OW)


def ports_of(p: dict) -> list[Port]:
    wd = widths(p)
    LW, LAW, FW, AW, IW, SB = wd["LW"], wd["LAW"], wd["FW"], p["ADDR_W"], p["ID_W"], wd["SB"]
    MAXL = p["MAX_LINES"]
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset: aborts both directions (reset the "
                             "AXI interconnect/memory with it: bursts in flight are forgotten)"),
        # ---- load control
        Port("ld_start", "in", 1, "start a load (sampled while `ld_busy` is low)"),
        Port("ld_addr", "in", LAW, f"first line address (byte address = line * {SB})"),
        Port("ld_lines", "in", FW, f"lines to load, 1..MAX_LINES={MAXL}; 0 or more is a cfg error"),
        Port("ld_busy", "out", 1, "load running"),
        Port("ld_done", "out", 1, "one-cycle pulse: the last line left on m_axis_ld (or a "
                                  "rejected start)"),
        Port("ld_cfg_err", "out", 1, "the last load start was invalid (nothing issued); "
                                     "cleared by the next start"),
        Port("ld_resp_err", "out", 1, "a read beat of the current/last load had RRESP != OKAY or "
                                      "RID != 0 (the data is still delivered); cleared by the next start"),
        Port("m_axis_ld_tdata", "out", LW, "loaded line: word i of the line in bits [32*i +: 32] "
                                           "(AXI byte order, little endian)"),
        Port("m_axis_ld_tvalid", "out", 1, ""),
        Port("m_axis_ld_tready", "in", 1, "full backpressure"),
        Port("m_axis_ld_tlast", "out", 1, "last line of the load"),
        # ---- store control
        Port("st_start", "in", 1, "start a store (sampled while `st_busy` is low)"),
        Port("st_addr", "in", LAW, f"first line address (byte address = line * {SB})"),
        Port("st_lines", "in", FW, f"lines to store, 1..MAX_LINES={MAXL}"),
        Port("st_busy", "out", 1, "store running"),
        Port("st_done", "out", 1, "one-cycle pulse after the last B response (or a rejected start)"),
        Port("st_cfg_err", "out", 1, "the last store start was invalid; cleared by the next start"),
        Port("st_resp_err", "out", 1, "a B response of the current/last store had BRESP != OKAY or "
                                      "BID != 0; cleared by the next start"),
        Port("s_axis_st_tdata", "in", LW, "line to store (same layout as m_axis_ld_tdata)"),
        Port("s_axis_st_tvalid", "in", 1, ""),
        Port("s_axis_st_tready", "out", 1, "high while lines of the running store are still "
                                           "expected and the store FIFO has room"),
        # ---- AXI4 master: read
        Port("m_axi_arid", "out", IW, "constant 0"),
        Port("m_axi_araddr", "out", AW, "burst byte address (line aligned)"),
        Port("m_axi_arlen", "out", 8, "beats - 1 (<= MAX_BURST - 1)"),
        Port("m_axi_arsize", "out", 3, f"constant log2({SB}) = {wd['LB']}"),
        Port("m_axi_arburst", "out", 2, "constant 1 (INCR)"),
        Port("m_axi_arlock", "out", 1, "constant 0"),
        Port("m_axi_arcache", "out", 4, f"constant {CACHE} (normal non-cacheable bufferable)"),
        Port("m_axi_arprot", "out", 3, "constant 0"),
        Port("m_axi_arqos", "out", 4, "constant 0"),
        Port("m_axi_arvalid", "out", 1, ""),
        Port("m_axi_arready", "in", 1, ""),
        Port("m_axi_rid", "in", IW, "must be 0 (else `ld_resp_err`)"),
        Port("m_axi_rdata", "in", LW, ""),
        Port("m_axi_rresp", "in", 2, "non-OKAY sets `ld_resp_err`"),
        Port("m_axi_rlast", "in", 1, "ends a burst (counts bursts in flight)"),
        Port("m_axi_rvalid", "in", 1, ""),
        Port("m_axi_rready", "out", 1, "constant high: FIFO space is reserved when AR is issued"),
        # ---- AXI4 master: write
        Port("m_axi_awid", "out", IW, "constant 0"),
        Port("m_axi_awaddr", "out", AW, "burst byte address (line aligned)"),
        Port("m_axi_awlen", "out", 8, "beats - 1 (<= MAX_BURST - 1)"),
        Port("m_axi_awsize", "out", 3, "constant as arsize"),
        Port("m_axi_awburst", "out", 2, "constant 1 (INCR)"),
        Port("m_axi_awlock", "out", 1, "constant 0"),
        Port("m_axi_awcache", "out", 4, f"constant {CACHE}"),
        Port("m_axi_awprot", "out", 3, "constant 0"),
        Port("m_axi_awqos", "out", 4, "constant 0"),
        Port("m_axi_awvalid", "out", 1, "issued only when the burst's lines are all in the store FIFO"),
        Port("m_axi_awready", "in", 1, ""),
        Port("m_axi_wdata", "out", LW, ""),
        Port("m_axi_wstrb", "out", SB, "constant all ones (whole lines)"),
        Port("m_axi_wlast", "out", 1, ""),
        Port("m_axi_wvalid", "out", 1, "only for bursts whose AW has been issued"),
        Port("m_axi_wready", "in", 1, ""),
        Port("m_axi_bid", "in", IW, "must be 0 (else `st_resp_err`)"),
        Port("m_axi_bresp", "in", 2, "non-OKAY sets `st_resp_err`"),
        Port("m_axi_bvalid", "in", 1, ""),
        Port("m_axi_bready", "out", 1, "constant high"),
    ]


@block
def line_fifo(clk, rst, din, wr, dout, ovalid, oready, total, DEPTH):
    """First-word-fall-through FIFO of DEPTH lines: a block RAM with a synchronous read
    port (registered ``ram_q``) and a two-entry output buffer.  ``total`` (registered)
    counts every line inside (RAM, read in flight, output buffer); the caller must not
    write when ``total == DEPTH``.  ``ovalid`` is a register output: no combinational
    path from ``oready``."""
    LW = len(din)
    AW = log2(DEPTH)
    mem = [sig_u(LW) for _ in range(DEPTH)]
    wp = sig_u(AW)
    rp = sig_u(AW)
    ram_cnt = sig_u(AW + 1)
    ram_q = sig_u(LW)
    rd_pend = sig_b()
    rd_en = sig_b()
    pop = sig_b()
    d0 = sig_u(LW)
    d1 = sig_u(LW)
    ocnt = sig_u(2)

    @always(clk.posedge)
    def ram_w():
        if wr:
            mem[wp].next = din

    @always(clk.posedge)
    def ram_r():
        if rd_en:
            ram_q.next = mem[rp]

    @always_comb
    def ctl():
        pop.next = ocnt != 0 and oready
        # a read issued now lands in the output buffer next cycle: it must have room then
        if ram_cnt == 0:
            rd_en.next = False
        elif ocnt == 0:
            rd_en.next = True
        elif ocnt == 1:
            rd_en.next = not rd_pend or (oready)
        else:
            rd_en.next = (not rd_pend) and oready

    @always_comb
    def outs():
        dout.next = d0
        ovalid.next = ocnt != 0

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if wr:
            wp.next = wp + 1
        if rd_en:
            rp.next = rp + 1
        rd_pend.next = rd_en
        if wr and not rd_en:
            ram_cnt.next = ram_cnt + 1
        elif rd_en and not wr:
            ram_cnt.next = ram_cnt - 1
        if wr and not pop:
            total.next = total + 1
        elif pop and not wr:
            total.next = total - 1
        if pop:
            d0.next = d1
        if rd_pend:
            if ocnt == 0 or (ocnt == 1 and pop):
                d0.next = ram_q
            else:
                d1.next = ram_q
        if rd_pend and not pop:
            ocnt.next = ocnt + 1
        elif pop and not rd_pend:
            ocnt.next = ocnt - 1

    return ram_w, ram_r, ctl, outs, seq


@block
def burst_len(ba, rem, blen, P4W, PL, MAXB):
    """``blen`` = min(rem, MAX_BURST, lines left before the 4 KiB page end of line ``ba``)."""
    CW = len(blen)
    lo = sig_u(CW)
    left = sig_u(CW)
    remx = sig_u(CW)
    @always_comb
    def lo_c():
        lo.next = concat(intbv(0)[CW - P4W:], ba[P4W:])

    @always_comb
    def left_c():
        left.next = PL - lo

    zr = fit(rem, remx)

    @always_comb
    def mn():
        if remx <= MAXB and remx <= left:
            blen.next = remx
        elif left <= MAXB:
            blen.next = left
        else:
            blen.next = MAXB

    return lo_c, left_c, zr, mn


def block_fn(p):
    """The MyHDL @block top of this core for parameters ``p``."""
    p = PARAMS.resolve(p)
    wd = widths(p)
    L, LW, SB, LB, LAW = wd["L"], wd["LW"], wd["SB"], wd["LB"], wd["LAW"]
    PL, P4W, FW, CW, FDW, OW = wd["PL"], wd["P4W"], wd["FW"], wd["CW"], wd["FDW"], wd["OW"]
    MAXB, FD, MAXL, OUTST = p["MAX_BURST"], p["FIFO_DEPTH"], p["MAX_LINES"], p["OUTSTANDING"]
    del L

    @block
    def pipearch_ldst(
            clk, rst,
            ld_start, ld_addr, ld_lines, ld_busy, ld_done, ld_cfg_err, ld_resp_err,
            m_axis_ld_tdata, m_axis_ld_tvalid, m_axis_ld_tready, m_axis_ld_tlast,
            st_start, st_addr, st_lines, st_busy, st_done, st_cfg_err, st_resp_err,
            s_axis_st_tdata, s_axis_st_tvalid, s_axis_st_tready,
            m_axi_arid, m_axi_araddr, m_axi_arlen, m_axi_arsize, m_axi_arburst, m_axi_arlock,
            m_axi_arcache, m_axi_arprot, m_axi_arqos, m_axi_arvalid, m_axi_arready,
            m_axi_rid, m_axi_rdata, m_axi_rresp, m_axi_rlast, m_axi_rvalid, m_axi_rready,
            m_axi_awid, m_axi_awaddr, m_axi_awlen, m_axi_awsize, m_axi_awburst, m_axi_awlock,
            m_axi_awcache, m_axi_awprot, m_axi_awqos, m_axi_awvalid, m_axi_awready,
            m_axi_wdata, m_axi_wstrb, m_axi_wlast, m_axi_wvalid, m_axi_wready,
            m_axi_bid, m_axi_bresp, m_axi_bvalid, m_axi_bready):
        # ================================ load ================================
        ld_run = sig_b()
        ar_ba = sig_u(LAW)
        ar_rem = sig_u(FW)
        arvalid_r = sig_b()
        araddr_r = sig_u(LAW)
        arlen_r = sig_u(8)
        ld_resv = sig_u(FDW + 1)       # lines reserved in the FIFO (issued, not yet output)
        ar_out = sig_u(OW)             # read bursts without RLAST
        out_rem = sig_u(FW)            # lines still to leave on m_axis_ld
        ar_blen = sig_u(CW)
        ar_blen_f = sig_u(FDW + 1)
        ar_blen8 = sig_u(8)
        ar_blen_m1 = sig_u(8)
        ar_blen_a = sig_u(LAW)
        ar_need = sig_u(FDW + 2)
        ar_go = sig_b()
        rbeat = sig_b()
        rend = sig_b()
        ld_pop = sig_b()
        ldf_tot = sig_u(FDW + 1)
        ld_bad = sig_b()

        bl_ar = burst_len(ar_ba, ar_rem, ar_blen, P4W, PL, MAXB)
        ldf = line_fifo(clk, rst, m_axi_rdata, rbeat, m_axis_ld_tdata, m_axis_ld_tvalid,
                        m_axis_ld_tready, ldf_tot, FD)

        @always_comb
        def ld_c():
            ar_blen_f.next = ar_blen[FDW + 1:]
            ar_blen8.next = ar_blen[8:]

        z_ar = fit(ar_blen, ar_blen_a)

        @always_comb
        def ld_c1():
            ar_blen_m1.next = ar_blen8 - 1

        @always_comb
        def ld_c2():
            ar_need.next = ld_resv + ar_blen_f
            rbeat.next = m_axi_rvalid and ar_out != 0
            ld_pop.next = m_axis_ld_tvalid and m_axis_ld_tready
            ld_bad.next = ld_lines == 0 or ld_lines > MAXL

        @always_comb
        def ld_c3():
            ar_go.next = (ar_rem != 0 and (not arvalid_r or m_axi_arready) and ar_need <= FD
                          and ar_out < OUTST)
            rend.next = rbeat and m_axi_rlast

        @always_comb
        def ld_o():
            m_axi_arid.next = 0
            m_axi_araddr.next = concat(araddr_r, intbv(0)[LB:])
            m_axi_arlen.next = arlen_r
            m_axi_arsize.next = LB
            m_axi_arburst.next = 1
            m_axi_arlock.next = False
            m_axi_arcache.next = CACHE
            m_axi_arprot.next = 0
            m_axi_arqos.next = 0
            m_axi_arvalid.next = arvalid_r
            m_axi_rready.next = True
            m_axis_ld_tlast.next = out_rem == 1
            ld_busy.next = ld_run

        @always_seq(clk.posedge, reset=rst)
        def ld_seq():
            ld_done.next = False
            if ld_start and not ld_run:
                ld_resp_err.next = False
                if ld_bad:
                    ld_cfg_err.next = True
                    ld_done.next = True
                else:
                    ld_cfg_err.next = False
                    ld_run.next = True
                    ar_ba.next = ld_addr
                    ar_rem.next = ld_lines
                    out_rem.next = ld_lines
            if arvalid_r and m_axi_arready:
                arvalid_r.next = False
            if ar_go:
                arvalid_r.next = True
                araddr_r.next = ar_ba
                arlen_r.next = ar_blen_m1
                ar_ba.next = ar_ba + ar_blen_a
                ar_rem.next = ar_rem - ar_blen[FW:]
            if ar_go and not ld_pop:
                ld_resv.next = ld_resv + ar_blen_f
            elif ar_go and ld_pop:
                ld_resv.next = ld_resv + ar_blen_f - 1
            elif ld_pop:
                ld_resv.next = ld_resv - 1
            if ar_go and not rend:
                ar_out.next = ar_out + 1
            elif rend and not ar_go:
                ar_out.next = ar_out - 1
            if rbeat and (m_axi_rresp != 0 or m_axi_rid != 0):
                ld_resp_err.next = True
            if ld_pop:
                out_rem.next = out_rem - 1
                if out_rem == 1:
                    ld_run.next = False
                    ld_done.next = True

        # ================================ store ================================
        st_run = sig_b()
        in_rem = sig_u(FW)             # lines still to accept from s_axis_st
        st_avail = sig_u(FDW + 1)      # lines in the FIFO not yet claimed by an AW
        aw_ba = sig_u(LAW)
        aw_rem = sig_u(FW)
        awvalid_r = sig_b()
        awaddr_r = sig_u(LAW)
        awlen_r = sig_u(8)
        b_out = sig_u(OW)              # write bursts without B
        lq = [sig_u(8) for _ in range(LQ)]
        lq_wp = sig_u(2)
        lq_rp = sig_u(2)
        lq_cnt = sig_u(3)
        lq_head = sig_u(8)
        w_beat = sig_u(8)
        aw_blen = sig_u(CW)
        aw_blen_f = sig_u(FDW + 1)
        aw_blen8 = sig_u(8)
        aw_blen_m1 = sig_u(8)
        aw_blen_a = sig_u(LAW)
        aw_go = sig_b()
        in_hs = sig_b()
        w_ok = sig_b()
        wf_valid = sig_b()
        wf_ready = sig_b()
        whs = sig_b()
        w_end = sig_b()
        bhs = sig_b()
        stf_tot = sig_u(FDW + 1)
        st_bad = sig_b()
        st_fin = sig_b()
        st_tready = sig_b()

        bl_aw = burst_len(aw_ba, aw_rem, aw_blen, P4W, PL, MAXB)
        stf = line_fifo(clk, rst, s_axis_st_tdata, in_hs, m_axi_wdata, wf_valid, wf_ready, stf_tot, FD)

        @always(clk.posedge)
        def lq_ram():
            if aw_go:
                lq[lq_wp].next = aw_blen_m1

        @always_comb
        def st_c():
            aw_blen_f.next = aw_blen[FDW + 1:]
            aw_blen8.next = aw_blen[8:]
            lq_head.next = lq[lq_rp]
            st_tready.next = st_run and in_rem != 0 and stf_tot < FD
            st_bad.next = st_lines == 0 or st_lines > MAXL

        z_aw = fit(aw_blen, aw_blen_a)
        zs = sig_u(SB)

        @always_comb
        def st_c1():
            aw_blen_m1.next = aw_blen8 - 1
            zs.next = 0

        @always_comb
        def st_c2():
            in_hs.next = st_tready and s_axis_st_tvalid
            w_ok.next = lq_cnt != 0
            aw_go.next = (aw_rem != 0 and (not awvalid_r or m_axi_awready) and st_avail >= aw_blen_f
                          and b_out < OUTST and lq_cnt != LQ)
            bhs.next = m_axi_bvalid and b_out != 0
            st_fin.next = (st_run and aw_rem == 0 and not awvalid_r and lq_cnt == 0 and b_out == 0)

        @always_comb
        def st_c3():
            wf_ready.next = w_ok and m_axi_wready
            whs.next = w_ok and wf_valid and m_axi_wready

        @always_comb
        def st_c4():
            w_end.next = whs and w_beat == lq_head

        @always_comb
        def st_o():
            s_axis_st_tready.next = st_tready
            m_axi_awid.next = 0
            m_axi_awaddr.next = concat(awaddr_r, intbv(0)[LB:])
            m_axi_awlen.next = awlen_r
            m_axi_awsize.next = LB
            m_axi_awburst.next = 1
            m_axi_awlock.next = False
            m_axi_awcache.next = CACHE
            m_axi_awprot.next = 0
            m_axi_awqos.next = 0
            m_axi_awvalid.next = awvalid_r
            m_axi_wstrb.next = ~zs
            m_axi_wlast.next = w_beat == lq_head
            m_axi_wvalid.next = w_ok and wf_valid
            m_axi_bready.next = True
            st_busy.next = st_run

        @always_seq(clk.posedge, reset=rst)
        def st_seq():
            st_done.next = False
            if st_start and not st_run:
                st_resp_err.next = False
                if st_bad:
                    st_cfg_err.next = True
                    st_done.next = True
                else:
                    st_cfg_err.next = False
                    st_run.next = True
                    aw_ba.next = st_addr
                    aw_rem.next = st_lines
                    in_rem.next = st_lines
            if in_hs:
                in_rem.next = in_rem - 1
            if in_hs and not aw_go:
                st_avail.next = st_avail + 1
            elif in_hs and aw_go:
                st_avail.next = st_avail + 1 - aw_blen_f
            elif aw_go:
                st_avail.next = st_avail - aw_blen_f
            if awvalid_r and m_axi_awready:
                awvalid_r.next = False
            if aw_go:
                awvalid_r.next = True
                awaddr_r.next = aw_ba
                awlen_r.next = aw_blen_m1
                aw_ba.next = aw_ba + aw_blen_a
                aw_rem.next = aw_rem - aw_blen[FW:]
                lq_wp.next = lq_wp + 1
            if aw_go and not w_end:
                lq_cnt.next = lq_cnt + 1
            elif w_end and not aw_go:
                lq_cnt.next = lq_cnt - 1
            if whs:
                if w_end:
                    w_beat.next = 0
                    lq_rp.next = lq_rp + 1
                else:
                    w_beat.next = w_beat + 1
            if aw_go and not bhs:
                b_out.next = b_out + 1
            elif bhs and not aw_go:
                b_out.next = b_out - 1
            if bhs and (m_axi_bresp != 0 or m_axi_bid != 0):
                st_resp_err.next = True
            if st_fin:
                st_run.next = False
                st_done.next = True

        return (bl_ar, ldf, z_ar, ld_c, ld_c1, ld_c2, ld_c3, ld_o, ld_seq,
                bl_aw, stf, z_aw, lq_ram, st_c, st_c1, st_c2, st_c3, st_c4, st_o, st_seq)

    return pipearch_ldst


def build(p):
    ports = ports_of(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p):
    wd = widths(p)
    SB, LW = wd["SB"], wd["LW"]
    MAXB, FD, OUTST = p["MAX_BURST"], p["FIFO_DEPTH"], p["OUTSTANDING"]
    return Datasheet(
        summary=("The PipeArch Load and Store subroutines (PipeArch 6.2; opcodes LOAD 0x10 and "
                 "STORE 0x11 of `golden.pipearch_isa`) as one AXI4 master.  Load reads "
                 "`ld_lines` lines from line address `ld_addr` and streams them in order on "
                 "`m_axis_ld`; Store takes `st_lines` lines from `s_axis_st` and writes them at "
                 "`st_addr`.  The read channels serve Load, the write channels serve Store; the "
                 f"two run concurrently and independently.  A line is {LW} bits ({SB} bytes), one "
                 "AXI beat."),
        latency=("load: ARVALID rises one cycle after the edge that samples `ld_start`; a read "
                 "beat accepted at edge n is valid on `m_axis_ld` after edge n+2 (FIFO empty, sink "
                 "ready); `ld_done` pulses in the cycle after the last line's handshake.  store: "
                 "store-and-forward per burst: AWVALID rises at the edge after the last line of "
                 "its burst entered the FIFO and its first W beat can be accepted at the next "
                 "edge, so the first W of a store waits for its first burst (up to MAX_BURST "
                 "lines) to be buffered; `st_done` pulses in the cycle after the last B "
                 "handshake"),
        throughput=(f"one line per cycle in each direction (both at once) while memory keeps up: "
                    f"bursts of up to MAX_BURST={MAXB} lines are issued back to back "
                    f"and up to OUTSTANDING={OUTST} are in flight, limited on loads by free FIFO "
                    f"space (FIFO_DEPTH={FD} lines), so a memory latency of up to about "
                    f"FIFO_DEPTH lines is hidden (load throughput is about FIFO_DEPTH / round-trip "
                    f"latency lines per cycle beyond that); a store's W stream is gapless once "
                    f"its first burst is buffered; see `make bench`"),
        fields=[("ld_addr / st_addr", str(wd["LAW"]), f"line address; byte address = line * {SB}"),
                ("ld_lines / st_lines", str(wd["FW"]),
                 f"line count 1..MAX_LINES={p['MAX_LINES']} (0 or larger: `*_cfg_err`)")],
        notes=[
            "Control (each direction, as the PipeArch subroutines): `*_start` is sampled while "
            "`*_busy` is low; an invalid count (0 or > MAX_LINES) sets `*_cfg_err` and pulses "
            "`*_done` in the next cycle without issuing anything; otherwise `*_busy` rises and "
            "`*_done` pulses once at the end.  `*_start` while busy is ignored; a new start may "
            "come in the cycle after `*_done`.",
            f"Bursts: INCR, size {SB} bytes, at most MAX_BURST={MAXB} beats, split so that no "
            "burst crosses a 4 KiB boundary (so a transfer starting anywhere is legal).  All "
            "transactions use ID 0, so responses come in order.  AxCACHE=3, AxLOCK/PROT/QOS=0.",
            f"Load flow control: a read burst is issued only when every line of it fits in the "
            f"{FD}-line FIFO together with all lines already reserved; hence `m_axi_rready` is "
            "constant high, no read beat is dropped, and the FIFO cannot overflow whatever "
            "the sink does.",
            "Store flow control: an AW is issued only when all lines of its burst are in the "
            "store FIFO (so the write channel is never held waiting for data); W beats of a "
            "burst are sent only after its AW; WSTRB is all ones.  `st_done` waits for every "
            "B response.",
            "Errors: any read beat with RRESP != OKAY (or RID != 0) sets `ld_resp_err`, any B "
            "with BRESP != OKAY (or BID != 0) sets `st_resp_err`; the transfer still runs to "
            "the end (the data of a failed read beat is delivered as the slave returned it), "
            "so nothing hangs.  The flags stay set until the next start of that direction.",
            "A store whose lines never arrive keeps `st_busy` high (the count is the contract); "
            "`rst` aborts both directions.  RLAST is used to count read bursts in flight; a "
            "slave that never sends RLAST stops further read issue after OUTSTANDING bursts.",
            f"Memories: two FIFOs of {FD} x {LW} bits, each one write process and one "
            "registered read process (block RAM), plus a two-entry output register stage; a "
            f"{LQ}-entry burst-length queue (LUT RAM).",
        ])


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch Load and Store subroutines: AXI4 master with bursts, outstanding "
                "reads bounded by FIFO space, AXI4-Stream line ports",
    params=PARAMS,
    build=build, datasheet=datasheet,
    configs={"default": {},
             "small": {"LANES": 4, "ADDR_W": 32, "ID_W": 4, "MAX_BURST": 16, "FIFO_DEPTH": 32,
                       "MAX_LINES": 1023, "OUTSTANDING": 4},
             "b256": {"LANES": 1, "ADDR_W": 40, "MAX_BURST": 256, "FIFO_DEPTH": 512,
                      "MAX_LINES": 4095, "OUTSTANDING": 3}},
    generator="rtl_gen/pipearch/pipearch_ldst.py",
)

__all__ = ["CORE", "PARAMS", "block_fn", "ParamError"]
