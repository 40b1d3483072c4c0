"""``maple_smart_memory`` core: the per-chain smart memory block of MAPLE (section 4.1,
Fig. 4(B)).  Bit-exact with ``golden.maple`` (selection order, tie rule, saturation).

Three operations on one input stream ``s_axis_in`` (tdata = {index, value}):

* selection store (OP=0): a filter (CMP, threshold entry and its slot) in front of a
  LIST of up to K entries.  While the LIST fills, every element is written (one per
  cycle).  Once full, an element that is not strictly better than the threshold is
  discarded in one cycle; a better one overwrites the threshold slot.  The paper's list
  scanner (k-1 stall cycles per replacement to find the new threshold) is replaced by a
  sorted shadow list: KMAX registers holding {slot, index, value} ordered worst first,
  one compare per position per cycle against the incoming element, updated by a one-cycle
  shift (fill: insert; replacement: drop the worst, insert) -- position 0 is always the
  threshold, so every element, replacements included, takes one cycle (no stall).
* min/max with index (OP=1): both extremes, one element per cycle.
* read-modify-write store (OP=2): ``mem[index] = sat(mem[index] + value)``, one element
  per cycle through a synchronous-read RAM whose read data is registered before the
  adder, with two write-forwarding registers (the last two writes: back-to-back updates
  of one address are exact).

A DUMP streams the LIST (slot order), the two extremes, or the RAM range BASE..BASE+LEN-1
out of ``m_axis_out`` through a 4-entry FIFO fed by credit (full rate, full backpressure,
no combinational path from ``m_axis_out_tready``).  Configuration and commands go through
an AXI4-Lite slave (register map in the datasheet below).
"""
from __future__ import annotations

from myhdl import always, always_comb, always_seq, block, concat, intbv

from rtl_gen.common.blocks import sat
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.params import Param, ParamSet, multiple_of_8, power_of_two
from rtl_gen.common.ports import make_factory

KIND = "maple_smart_memory"
AXIL_AW = 8          # AXI4-Lite byte address width
FIFO_DEPTH = 4

# operations, states, registers (word index = byte address / 4), error codes
OP_SEL, OP_MINMAX, OP_RMW = 0, 1, 2
S_IDLE, S_RUN, S_SCAN, S_DUMP = 0, 1, 2, 3
R_OP, R_K, R_CMP, R_BASE, R_LEN, R_CTRL, R_STATUS, R_STALLS, R_INS, R_COUNT = range(10)
E_K, E_OP, E_RANGE, E_BUSY, E_ADDR, E_REG = 1, 2, 3, 4, 5, 6

def log2(n: int) -> int:
    return n.bit_length() - 1


def widths(p: dict) -> dict:
    W, IDXW = p["W"], p["IDXW"]
    aw = log2(p["DEPTH"])
    return {"WD": W + IDXW, "SW": log2(p["KMAX"]), "AW": aw, "DW": aw + 1}


def _cross(p: dict) -> str | None:
    if p["KMAX"] > p["DEPTH"]:
        return f"parameter KMAX={p['KMAX']} must not exceed DEPTH={p['DEPTH']}"
    if p["IDXW"] < log2(p["DEPTH"]):
        return (f"parameter IDXW={p['IDXW']} must hold an RMW address: need IDXW >= "
                f"log2(DEPTH)={log2(p['DEPTH'])}")
    return None


PARAMS = ParamSet([
    Param("W", 32, "value width, signed two's complement (any Q format: values are compared and "
                   "added as raw words)", 8, 32, multiple_of_8),
    Param("IDXW", 16, "index width (unsigned); also the RMW address field", 8, 32, multiple_of_8),
    Param("KMAX", 16, "largest LIST size k", 2, 256, power_of_two),
    Param("DEPTH", 256, "read-modify-write RAM entries (block RAM, synchronous read)", 2, 1 << 16,
          power_of_two),
], [_cross])


# ------------------------------------------------------------------ small blocks
@block
def unpack(pk, v, i):
    """{index, value} -> signed value, unsigned index."""
    w = len(v)
    wd = len(pk)

    @always_comb
    def u():
        v.next = pk[w:].signed()
        i.next = pk[wd:w]

    return u


@block
def better(av, ai, bv, bi, largest, out):
    """``out`` = entry a strictly better than entry b: on equal values the smaller index
    wins; otherwise larger (``largest``) or smaller value wins.  ``largest`` is a signal
    or a Python bool (then the comparison is fixed at elaboration)."""
    if isinstance(largest, bool):
        if largest:
            @always_comb
            def c():
                if av == bv:
                    out.next = ai < bi
                else:
                    out.next = av > bv
        else:
            @always_comb
            def c():
                if av == bv:
                    out.next = ai < bi
                else:
                    out.next = av < bv
        return c

    @always_comb
    def c():
        if av == bv:
            out.next = ai < bi
        elif largest:
            out.next = av > bv
        else:
            out.next = av < bv

    return c


@block
def sl_cmp(x_pk, fill, thr_s, e, p, count, largest, out, W):
    """``out`` = sorted-list position ``p`` holds an entry (``p < count``) that the incoming
    element ``x_pk`` is strictly better than; an exact value+index tie is broken by the slot
    (the higher slot is the better: the scanner kept the lower slot as the threshold).  The
    newcomer's slot is ``count`` while the LIST fills (``fill``: above every entry's slot, so
    it wins the tie) and the threshold's ``thr_s`` once full; the tie is taken from the fill
    flag and ``thr_s`` directly, not through the slot multiplexer.  ``e`` = {slot, index,
    value}."""
    WD = len(x_pk)
    SW = len(thr_s)
    xv = sig_s(W)
    xi = sig_u(WD - W)
    ev = sig_s(W)
    ei = sig_u(WD - W)
    es = sig_u(SW)

    @always_comb
    def u():
        xv.next = x_pk[W:].signed()
        xi.next = x_pk[WD:W]
        ev.next = e[W:].signed()
        ei.next = e[WD:W]
        es.next = e[WD + SW:WD]

    @always_comb
    def c():
        if count <= p:
            out.next = False
        elif xv == ev:
            if xi == ei:
                out.next = fill or thr_s > es
            else:
                out.next = xi < ei
        elif largest:
            out.next = xv > ev
        else:
            out.next = xv < ev

    return u, c


@block
def sl_pos(clk, we, fill, x_e, c_lo, c_p, c_hi, s_lo, s_p, s_hi, first, last):
    """Sorted-list position p (worst first): ``c_*`` = x better than the entry at p-1, p,
    p+1; fill inserts x at the first position it does not beat (entries above move up),
    a replacement drops position 0 and inserts x (the entries x beats move down)."""
    if first:
        @always(clk.posedge)
        def r():
            if we:
                if fill:
                    if not c_p:
                        s_p.next = x_e
                elif c_p:
                    if c_hi:
                        s_p.next = s_hi
                    else:
                        s_p.next = x_e
    elif last:
        @always(clk.posedge)
        def r():
            if we:
                if fill:
                    if not c_p:
                        if c_lo:
                            s_p.next = x_e
                        else:
                            s_p.next = s_lo
                elif c_p:
                    s_p.next = x_e
    else:
        @always(clk.posedge)
        def r():
            if we:
                if fill:
                    if not c_p:
                        if c_lo:
                            s_p.next = x_e
                        else:
                            s_p.next = s_lo
                elif c_p:
                    if c_hi:
                        s_p.next = s_hi
                    else:
                        s_p.next = x_e
    return r


@block
def zext(x, y):
    """Zero-extend ``x`` into the wider ``y``."""
    k = len(y) - len(x)
    if k == 0:
        @always_comb
        def c():
            y.next = x
    else:
        @always_comb
        def c():
            y.next = concat(intbv(0)[k:], x)
    return c


# ------------------------------------------------------------------ ports
def ports_of(p: dict) -> list[Port]:
    W, IDXW = p["W"], p["IDXW"]
    WD = W + IDXW
    pk = f"{{index[{IDXW}], value[{W}]}}: value in bits [{W - 1}:0], index in [{WD - 1}:{W}]"
    ports = [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (then the RMW RAM is zeroed in the background, "
                              "STATUS.CLEARING, DEPTH cycles)"),
        Port("s_axil_awaddr", "in", AXIL_AW, "AXI4-Lite write address (byte address, word aligned: a misaligned write is ignored, error code 6)"),
        Port("s_axil_awvalid", "in", 1, ""),
        Port("s_axil_awready", "out", 1, "high with wready when awvalid and wvalid and no response pending"),
        Port("s_axil_wdata", "in", 32, ""),
        Port("s_axil_wstrb", "in", 4, "must be 0xF (a partial write is ignored, error code 6)"),
        Port("s_axil_wvalid", "in", 1, ""),
        Port("s_axil_wready", "out", 1, ""),
        Port("s_axil_bresp", "out", 2, "always OKAY (errors are reported in STATUS)"),
        Port("s_axil_bvalid", "out", 1, ""),
        Port("s_axil_bready", "in", 1, ""),
        Port("s_axil_araddr", "in", AXIL_AW, "AXI4-Lite read address (a misaligned read returns 0)"),
        Port("s_axil_arvalid", "in", 1, ""),
        Port("s_axil_arready", "out", 1, ""),
        Port("s_axil_rdata", "out", 32, "unknown registers read 0"),
        Port("s_axil_rresp", "out", 2, "always OKAY"),
        Port("s_axil_rvalid", "out", 1, ""),
        Port("s_axil_rready", "in", 1, ""),
        Port("s_axis_in_tdata", "in", WD, pk + " (RMW: index is the RAM address)"),
        Port("s_axis_in_tvalid", "in", 1, ""),
        Port("s_axis_in_tready", "out", 1, "high while armed (registered), except that "
                                           "an RMW element waits while its address is at or above "
                                           "the background clear's pointer"),
        Port("s_axis_in_tlast", "in", 1, "last element of the array: disarms the input"),
        Port("m_axis_out_tdata", "out", WD, pk + " (RMW: index is the RAM address)"),
        Port("m_axis_out_tvalid", "out", 1, ""),
        Port("m_axis_out_tready", "in", 1, ""),
        Port("m_axis_out_tlast", "out", 1, "on the last entry of a dump"),
    ]
    return ports


# ------------------------------------------------------------------ the core
def build(p):
    W, IDXW, KMAX, DEPTH = p["W"], p["IDXW"], p["KMAX"], p["DEPTH"]
    wd = widths(p)
    WD, SW, AW, DW = wd["WD"], wd["SW"], wd["AW"], wd["DW"]

    @block
    def maple_smart_memory(clk, rst,
                           s_axil_awaddr, s_axil_awvalid, s_axil_awready,
                           s_axil_wdata, s_axil_wstrb, s_axil_wvalid, s_axil_wready,
                           s_axil_bresp, s_axil_bvalid, s_axil_bready,
                           s_axil_araddr, s_axil_arvalid, s_axil_arready,
                           s_axil_rdata, s_axil_rresp, s_axil_rvalid, s_axil_rready,
                           s_axis_in_tdata, s_axis_in_tvalid, s_axis_in_tready, s_axis_in_tlast,
                           m_axis_out_tdata, m_axis_out_tvalid, m_axis_out_tready, m_axis_out_tlast):
        # ---- registers ------------------------------------------------------------
        state = sig_u(3, S_IDLE)
        clearing = sig_b(True)           # RAM being zeroed in the background (after reset, CLEAR)
        op_r = sig_u(2, OP_SEL)
        k_r = sig_u(DW, KMAX)
        cmp_r = sig_b(True)
        base_r = sig_u(DW, 0)
        len_r = sig_u(DW, DEPTH)
        err = sig_b()
        err_code = sig_u(4)
        bvalid_r = sig_b()
        rvalid_r = sig_b()
        rdata_r = sig_u(32)
        count = sig_u(DW)
        not_full = sig_b(True)           # count < k_r, registered (updated with count and k_r)
        have = sig_b()
        min_pk = sig_u(WD)
        max_pk = sig_u(WD)
        smin = sig_u(WD)                 # the extremes as a DUMP found them (dumped from here)
        smax = sig_u(WD)
        bg = sig_b()                     # min/max dump of smin/smax while re-armed (DUMP + START)
        rearm = sig_b()                  # this dump ends armed (DUMP + START, selection / RMW)
        pend = sig_b()                   # a DUMP + START waiting for the store to be idle
        ins = sig_u(32)
        ins_p = sig_b()                  # an insertion of the last cycle, added to ins in this one
        clr_i = sig_u(AW)
        dump_i = sig_u(DW)
        dump_n = sig_u(DW)
        inflight = sig_b()
        p_last = sig_b()
        p_idx = sig_u(IDXW)
        sel_rd = sig_u(WD)
        wp = sig_u(2)
        rp = sig_u(2)
        fcnt = sig_u(3)
        r1_valid = sig_b()
        r1_addr = sig_u(AW)
        r1_val = sig_s(W)
        r2_valid = sig_b()
        r2_addr = sig_u(AW)
        r2_val = sig_s(W)
        ram_q = sig_s(W)                 # the RAM read data, registered (no RAM-to-adder path)
        fw_valid = sig_b()               # the last two RAM writes (forwarded to the adder)
        fw_addr = sig_u(AW)
        fw_data = sig_s(W)
        fw2_valid = sig_b()
        fw2_addr = sig_u(AW)
        fw2_data = sig_s(W)

        # ---- memories (each written by exactly one process, no reset) ----------------
        lst = [sig_u(WD) for _ in range(KMAX)]
        ram = [sig_u(W) for _ in range(DEPTH)]
        fifo = [sig_u(WD + 1) for _ in range(FIFO_DEPTH)]

        # ---- combinational ------------------------------------------------------------
        fire = sig_b()
        fire_nr = sig_b()               # fire without the RMW clear hold (equal outside RMW)
        in_v = sig_s(W)
        in_i = sig_u(IDXW)
        in_addr = sig_u(AW)
        in_bad = sig_b()
        thr_v = sig_s(W)
        thr_i = sig_u(IDXW)
        nb = sig_b()      # new element strictly better than the threshold
        nf_inc = sig_b()  # count + 1 < k_r: not_full after this fill
        cnt_slot = sig_u(SW)
        lst_we = sig_b()
        lst_wa = sig_u(SW)
        thr_pk = sig_u(WD)               # the threshold: sorted-list position 0
        thr_s = sig_u(SW)
        x_e = sig_u(WD + SW)             # the incoming element with the slot it would take
        mn_v = sig_s(W)
        mn_i = sig_u(IDXW)
        mx_v = sig_s(W)
        mx_i = sig_u(IDXW)
        nmin = sig_b()
        nmax = sig_b()
        dump_slot = sig_u(SW)
        dump_addr = sig_u(AW)        # RAM address of the next dump beat (BASE + dump_i)
        dump_addr_x = sig_u(IDXW)
        sel_src = sig_u(WD)
        issue = sig_b()
        pop = sig_b()
        ram_ra = sig_u(AW)
        ram_rd = sig_u(W)
        ram_we = sig_b()
        ram_wa = sig_u(AW)
        ram_wd = sig_u(W)
        rd_s = sig_s(W)
        old = sig_s(W)
        sum_w = sig_s(W + 1)
        sum_sat = sig_s(W)
        push_d = sig_u(WD + 1)
        head = sig_u(WD + 1)
        aw_go = sig_b()
        ar_go = sig_b()
        waddr = sig_u(AXIL_AW - 2)
        raddr = sig_u(AXIL_AW - 2)
        wmis = sig_b()
        rmis = sig_b()
        idle_ok = sig_b()
        pend_go = sig_b()
        fast_re = sig_b()           # min/max: a queued DUMP + START runs at the array's tlast
        rmw_hold = sig_b()          # an RMW element ahead of the clear pointer waits
        clr_go = sig_b()            # the clear writes this cycle (the RMW write has the port first)
        busy_s = sig_b()
        armed_s = sig_b()
        blsum = sig_u(DW + 1)
        status32 = sig_u(32)
        op32 = sig_u(32)
        k32 = sig_u(32)
        base32 = sig_u(32)
        len32 = sig_u(32)
        count32 = sig_u(32)
        ins_view = sig_u(32)             # INS as read: ins plus the pending increment

        insts = [unpack(s_axis_in_tdata, in_v, in_i), unpack(thr_pk, thr_v, thr_i),
                 better(in_v, in_i, thr_v, thr_i, cmp_r, nb),
                 unpack(min_pk, mn_v, mn_i), unpack(max_pk, mx_v, mx_i),
                 better(in_v, in_i, mn_v, mn_i, False, nmin),
                 better(in_v, in_i, mx_v, mx_i, True, nmax),
                 sat(sum_w, sum_sat),
                 zext(op_r, op32), zext(k_r, k32), zext(base_r, base32), zext(len_r, len32),
                 zext(count, count32), zext(dump_addr, dump_addr_x)]

        @always_comb
        def axil_c():
            aw_go.next = s_axil_awvalid and s_axil_wvalid and not bvalid_r
            ar_go.next = s_axil_arvalid and not rvalid_r
            waddr.next = s_axil_awaddr[AXIL_AW:2]
            raddr.next = s_axil_araddr[AXIL_AW:2]
            wmis.next = s_axil_awaddr[2:] != 0
            rmis.next = s_axil_araddr[2:] != 0

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
        def status_c():
            busy_s.next = (not (state == S_IDLE or state == S_RUN)) or fcnt != 0 or inflight or r1_valid \
                or r2_valid or bg or pend
            clr_go.next = clearing and not r2_valid
            armed_s.next = state == S_RUN or state == S_SCAN
            idle_ok.next = state == S_IDLE and fcnt == 0 and not inflight and not r1_valid and not r2_valid \
                and not bg and not pend
            pend_go.next = pend and state == S_IDLE and fcnt == 0 and not inflight and not r1_valid \
                and not r2_valid and not bg
            fast_re.next = pend and op_r == OP_MINMAX and fcnt == 0 and not inflight and not bg
            blsum.next = base_r + len_r

        @always_comb
        def ins_c():
            if ins_p:
                ins_view.next = ins + 1
            else:
                ins_view.next = ins

        @always_comb
        def status_w():
            status32.next = concat(intbv(0)[23:], pend, err_code, clearing, err, armed_s, busy_s)

        @always_comb
        def in_c():
            s_axis_in_tready.next = state == S_RUN and not rmw_hold
            fire.next = s_axis_in_tvalid and state == S_RUN and not rmw_hold
            fire_nr.next = s_axis_in_tvalid and state == S_RUN
            in_addr.next = s_axis_in_tdata[W + AW:W]
            nf_inc.next = count + 1 < k_r
            cnt_slot.next = count[SW:]

        if IDXW > AW:
            @always_comb
            def bad_c():
                in_bad.next = s_axis_in_tdata[WD:W + AW] != 0
        else:
            @always_comb
            def bad_c():
                in_bad.next = s_axis_in_tdata[W] and False

        @always_comb
        def hold_c():
            rmw_hold.next = clearing and op_r == OP_RMW and s_axis_in_tdata[W + AW:W] >= clr_i

        # ---- sorted shadow list (worst first): the threshold without a scan ----------
        sl = {q: sig_u(WD + SW) for q in range(KMAX)}   # dicts, not lists: no HDL arrays
        slc = {q: sig_b() for q in range(KMAX)}
        for q in range(KMAX):
            insts.append(sl_cmp(s_axis_in_tdata, not_full, thr_s, sl[q], q, count, cmp_r, slc[q], W))
        for q in range(KMAX):
            insts.append(sl_pos(clk, lst_we, not_full, x_e, slc[q - 1] if q else None, slc[q],
                                slc[q + 1] if q < KMAX - 1 else None, sl[q - 1] if q else None, sl[q],
                                sl[q + 1] if q < KMAX - 1 else None, q == 0, q == KMAX - 1))
        sl0 = sl[0]

        @always_comb
        def thr_c():
            thr_pk.next = sl0[WD:]
            thr_s.next = sl0[WD + SW:WD]
            x_e.next = concat(lst_wa, s_axis_in_tdata)

        @always_comb
        def sel_c():
            lst_we.next = fire_nr and op_r == OP_SEL and (not_full or nb)
            if not_full:
                lst_wa.next = cnt_slot
            else:
                lst_wa.next = thr_s

        @always(clk.posedge)
        def lst_ram():
            if lst_we:
                lst[lst_wa].next = s_axis_in_tdata

        @always_comb
        def scan_idx():
            dump_slot.next = dump_i[SW:]

        # ---- read-modify-write RAM (synchronous read) and its adder --------------------
        @always_comb
        def ram_c():
            if state == S_DUMP:
                ram_ra.next = dump_addr
            else:
                ram_ra.next = in_addr
            if clr_go:
                ram_we.next = True
                ram_wa.next = clr_i
                ram_wd.next = 0
            else:
                ram_we.next = r2_valid
                ram_wa.next = r2_addr
                ram_wd.next = sum_sat[W:]

        @always(clk.posedge)
        def rmw_ram():
            if ram_we:
                ram[ram_wa].next = ram_wd
            ram_rd.next = ram[ram_ra]

        @always_comb
        def rmw_c():
            rd_s.next = ram_q
            if fw_valid and fw_addr == r2_addr:
                old.next = fw_data
            elif fw2_valid and fw2_addr == r2_addr:
                old.next = fw2_data
            else:
                old.next = rd_s

        @always_comb
        def rmw_add():
            sum_w.next = old + r2_val

        # ---- dump: credit-fed 4-entry FIFO ---------------------------------------------
        @always_comb
        def dump_c():
            issue.next = (state == S_DUMP or bg) and dump_i != dump_n and \
                (fcnt < 3 or (fcnt == 3 and not inflight)) and \
                not (clearing and op_r == OP_RMW and dump_addr >= clr_i)
            pop.next = fcnt != 0 and m_axis_out_tready
            if op_r == OP_SEL:
                sel_src.next = lst[dump_slot]
            elif dump_i == 0:
                sel_src.next = smin
            else:
                sel_src.next = smax

        @always_comb
        def push_c():
            if op_r == OP_RMW:
                push_d.next = concat(p_last, p_idx, ram_rd)
            else:
                push_d.next = concat(p_last, sel_rd)

        @always(clk.posedge)
        def fifo_ram():
            if inflight:
                fifo[wp].next = push_d

        @always_comb
        def fifo_rd():
            head.next = fifo[rp]

        @always_comb
        def out_c():
            m_axis_out_tdata.next = head[WD:]
            m_axis_out_tlast.next = head[WD]
            m_axis_out_tvalid.next = fcnt != 0

        # ---- the controller ---------------------------------------------------------------
        @always_seq(clk.posedge, reset=rst)
        def main():
            # input stream
            r1_valid.next = fire and op_r == OP_RMW and not in_bad
            r1_addr.next = in_addr
            r1_val.next = in_v
            r2_valid.next = r1_valid
            r2_addr.next = r1_addr
            r2_val.next = r1_val
            ram_q.next = ram_rd.signed()
            # the insertion counter: the element's decision is registered first (no compare
            # into the 32-bit increment); resets below clear the pending one
            ins_p.next = False
            if ins_p:
                ins.next = ins + 1
            # selection and min/max take fire_nr (fire without the RMW clear hold, which is
            # false outside RMW): the clear pointer's compare stays off their registers
            if fire_nr and op_r != OP_RMW:
                if op_r == OP_SEL:
                    if not_full:
                        count.next = count + 1
                        not_full.next = nf_inc
                        ins_p.next = True
                    elif nb:
                        ins_p.next = True
                elif op_r == OP_MINMAX:
                    if not have or nmin:
                        min_pk.next = s_axis_in_tdata
                    if not have or nmax:
                        max_pk.next = s_axis_in_tdata
                    if not have or nmin or nmax:
                        ins_p.next = True
                    have.next = True
            if fire and op_r == OP_RMW:
                if in_bad:
                    err.next = True
                    err_code.next = E_ADDR
                else:
                    ins_p.next = True
            if fire and s_axis_in_tlast and not fast_re:
                state.next = S_IDLE
            if fire_nr and s_axis_in_tlast:
                if fast_re:         # (min/max only: fire_nr is fire)
                    # the queued DUMP + START at once: the extremes (this element included)
                    # copied for the background dump, the store stays armed
                    pend.next = False
                    dump_i.next = 0
                    dump_n.next = 2
                    rearm.next = True
                    bg.next = True
                    if not have or nmin:
                        smin.next = s_axis_in_tdata
                    else:
                        smin.next = min_pk
                    if not have or nmax:
                        smax.next = s_axis_in_tdata
                    else:
                        smax.next = max_pk
                    count.next = 0
                    not_full.next = True
                    have.next = False
                    ins.next = 0
                    ins_p.next = False
            # RAM clear, in the background: one word per cycle the RMW write leaves free
            if clr_go:
                if clr_i == DEPTH - 1:
                    clr_i.next = 0
                    clearing.next = False
                else:
                    clr_i.next = clr_i + 1
            # write forwarding follows the RAM write port
            if ram_we:
                fw_valid.next = True
                fw_addr.next = ram_wa
                fw_data.next = ram_wd.signed()
                fw2_valid.next = fw_valid
                fw2_addr.next = fw_addr
                fw2_data.next = fw_data
            # dump issue and FIFO
            inflight.next = issue
            if issue:
                dump_i.next = dump_i + 1
                dump_addr.next = dump_addr + 1
                p_last.next = dump_i == dump_n - 1
                p_idx.next = dump_addr_x
                sel_rd.next = sel_src
            if (state == S_DUMP or bg) and dump_i == dump_n and not inflight and fcnt == 0:
                bg.next = False
                if state == S_DUMP:
                    if rearm:
                        state.next = S_RUN
                        count.next = 0
                        not_full.next = True
                        have.next = False
                        ins.next = 0
                        ins_p.next = False
                    else:
                        state.next = S_IDLE
            if inflight:
                if wp == FIFO_DEPTH - 1:
                    wp.next = 0
                else:
                    wp.next = wp + 1
            if pop:
                if rp == FIFO_DEPTH - 1:
                    rp.next = 0
                else:
                    rp.next = rp + 1
            if inflight and not pop:
                fcnt.next = fcnt + 1
            elif pop and not inflight:
                fcnt.next = fcnt - 1
            # AXI4-Lite read
            if ar_go:
                rvalid_r.next = True
                if rmis:
                    rdata_r.next = 0
                elif raddr == R_OP:
                    rdata_r.next = op32
                elif raddr == R_K:
                    rdata_r.next = k32
                elif raddr == R_CMP:
                    rdata_r.next = concat(intbv(0)[31:], cmp_r)
                elif raddr == R_BASE:
                    rdata_r.next = base32
                elif raddr == R_LEN:
                    rdata_r.next = len32
                elif raddr == R_STATUS:
                    rdata_r.next = status32
                elif raddr == R_STALLS:
                    rdata_r.next = 0        # no scanner stalls (sorted insertion)
                elif raddr == R_INS:
                    rdata_r.next = ins_view
                elif raddr == R_COUNT:
                    rdata_r.next = count32
                else:
                    rdata_r.next = 0
            elif rvalid_r and s_axil_rready:
                rvalid_r.next = False
            # a queued DUMP + START: dump, then armed (min/max at once: the extremes are dumped
            # from their copy while the next array streams in)
            if pend_go:
                pend.next = False
                dump_i.next = 0
                smin.next = min_pk
                smax.next = max_pk
                rearm.next = True
                if op_r == OP_MINMAX:
                    bg.next = True
                    state.next = S_RUN
                    count.next = 0
                    not_full.next = True
                    have.next = False
                    ins.next = 0
                    ins_p.next = False
                else:
                    state.next = S_DUMP
                if op_r == OP_SEL:
                    dump_n.next = count
                elif op_r == OP_MINMAX:
                    if have:
                        dump_n.next = 2
                    else:
                        dump_n.next = 0
                else:
                    dump_n.next = len_r
                    dump_addr.next = base_r[AW:]
            # AXI4-Lite write (after the stream logic: a command wins)
            if aw_go:
                bvalid_r.next = True
                if s_axil_wstrb != 15 or wmis:
                    err.next = True
                    err_code.next = E_REG
                elif waddr == R_CTRL:
                    if s_axil_wdata[3]:
                        err.next = False
                        err_code.next = 0
                    if s_axil_wdata[1]:
                        if idle_ok or state == S_RUN:
                            state.next = S_IDLE
                            pend.next = False
                            clearing.next = True
                            clr_i.next = 0
                            count.next = 0
                            not_full.next = True
                            have.next = False
                            ins.next = 0
                            ins_p.next = False
                        else:
                            err.next = True
                            err_code.next = E_BUSY
                    elif s_axil_wdata[0] and not s_axil_wdata[2]:
                        if idle_ok:
                            state.next = S_RUN
                            count.next = 0
                            not_full.next = True
                            have.next = False
                            ins.next = 0
                            ins_p.next = False
                        else:
                            err.next = True
                            err_code.next = E_BUSY
                    elif s_axil_wdata[0] and s_axil_wdata[2]:
                        # DUMP + START: queued (one), executed once the store is idle
                        if pend:
                            err.next = True
                            err_code.next = E_BUSY
                        elif op_r == OP_RMW and blsum > DEPTH:
                            err.next = True
                            err_code.next = E_RANGE
                        else:
                            pend.next = True
                    elif s_axil_wdata[2]:
                        if not idle_ok:
                            err.next = True
                            err_code.next = E_BUSY
                        elif op_r == OP_RMW and blsum > DEPTH:
                            err.next = True
                            err_code.next = E_RANGE
                        else:
                            dump_i.next = 0
                            smin.next = min_pk
                            smax.next = max_pk
                            rearm.next = False
                            state.next = S_DUMP
                            if op_r == OP_SEL:
                                dump_n.next = count
                            elif op_r == OP_MINMAX:
                                if have:
                                    dump_n.next = 2
                                else:
                                    dump_n.next = 0
                            else:
                                dump_n.next = len_r
                                dump_addr.next = base_r[AW:]
                elif waddr <= R_LEN:
                    if not idle_ok:
                        err.next = True
                        err_code.next = E_BUSY
                    elif waddr == R_OP:
                        if s_axil_wdata > OP_RMW:
                            err.next = True
                            err_code.next = E_OP
                        else:
                            op_r.next = s_axil_wdata[2:]
                    elif waddr == R_K:
                        if s_axil_wdata == 0 or s_axil_wdata > KMAX:
                            err.next = True
                            err_code.next = E_K
                        else:
                            k_r.next = s_axil_wdata[DW:]
                            not_full.next = count < s_axil_wdata[DW:]
                    elif waddr == R_CMP:
                        cmp_r.next = s_axil_wdata[0]
                    elif waddr == R_BASE:
                        if s_axil_wdata >= DEPTH:
                            err.next = True
                            err_code.next = E_RANGE
                        else:
                            base_r.next = s_axil_wdata[DW:]
                    else:
                        if s_axil_wdata == 0 or s_axil_wdata > DEPTH:
                            err.next = True
                            err_code.next = E_RANGE
                        else:
                            len_r.next = s_axil_wdata[DW:]
                else:
                    err.next = True
                    err_code.next = E_REG
            elif bvalid_r and s_axil_bready:
                bvalid_r.next = False

        return (insts, axil_c, axil_o, status_c, ins_c, status_w, in_c, bad_c, hold_c, thr_c, sel_c, lst_ram, scan_idx,
                ram_c, rmw_ram, rmw_c, rmw_add, dump_c, push_c,
                fifo_ram, fifo_rd, out_c, main)

    ports = ports_of(p)
    return make_factory(maple_smart_memory, ports), ports


def datasheet(p):
    W, IDXW, KMAX, DEPTH = p["W"], p["IDXW"], p["KMAX"], p["DEPTH"]
    return Datasheet(
        summary="The smart memory block of a MAPLE processing chain (MAPLE section 4.1, Fig. 4(B)): "
                "a selection store (filter with CMP, threshold value and slot; a LIST of k "
                "entries; a sorted shadow list in place of the paper's list scanner), min/max with index, and a saturating "
                "read-modify-write store, programmed over AXI4-Lite and fed by one AXI4-Stream. "
                "Bit-exact with `golden.maple` (`topk`/`selection_trace`, `min_max_with_index`, "
                "`rmw_accumulate`).",
        latency="selection/min-max: an element is decided in the cycle it is accepted; RMW: the RAM "
                "entry is written 3 cycles after the element is accepted (forwarded, so the next "
                "element may hit the same address); DUMP: first beat 3 cycles after the AXI4-Lite "
                "write response of the DUMP command is issued",
        throughput=f"one element per cycle for fills, discards, replacements, min/max and RMW "
                   f"(the paper's list scanner stalled k-1 cycles per replacement; the sorted "
                   f"shadow list finds the next threshold in the same cycle, STALLS reads 0); "
                   f"DUMP one beat per cycle",
        notes=[
            f"Stream packing: `tdata = {{index, value}}`, value (signed, {W} bits) in the low bits, "
            f"index (unsigned, {IDXW} bits) above it; the same on `m_axis_out`.",
            "Ordering key (tie rule, as `golden.maple`): entries compare on value (larger is "
            "better with CMP=1, smaller with CMP=0); on equal values the smaller index is "
            "better.  An element is inserted into a full LIST only if strictly better than the "
            "threshold, so with indices in arrival order the earlier of two equal elements wins "
            "and a later equal element is discarded.",
            "Selection: fill writes slots 0,1,...; the threshold is the worst entry (the lowest "
            "slot on an exact value+index tie); a replacement overwrites the threshold's slot. "
            f"The threshold is position 0 of a sorted shadow list of KMAX={KMAX} registers "
            "{slot, index, value}, worst first (exact value+index ties: the lower slot first): "
            "every position compares itself with the incoming element in the same cycle (KMAX "
            "comparators) and the list shifts by one (fill: x inserted at the first position it "
            "does not beat; replacement: position 0 dropped, x inserted), so the new threshold "
            "is ready for the next element -- the same slot the paper's scanner (slots 0..k-1, "
            "k-1 stall cycles) would find, without its stall. DUMP emits the LIST in slot order (COUNT = min(k, elements) beats); an empty LIST "
            "dumps nothing.",
            "Min/max: the smaller index wins a tie for both extremes; DUMP emits "
            "{min index, min} then {max index, max} (tlast); nothing if no element arrived.",
            f"RMW: `mem[index] = sat(mem[index] + value)` to {W} bits; an index >= DEPTH "
            f"({DEPTH}) is dropped with error code 5.  START keeps the RAM (several arrays "
            "accumulate); CLEAR and reset zero it in the background, one word per cycle the RMW "
            "write leaves the RAM port free (DEPTH cycles when idle; STATUS.CLEARING, not BUSY): "
            "configuration, START, selection and min/max work meanwhile, an RMW element whose "
            "address the clear has not passed yet waits (`s_axis_in_tready` low; the clear "
            "pointer only grows, so it waits at most DEPTH cycles), and an RMW DUMP beat waits "
            "only while its address is at or above the clear's pointer (a range below the "
            "pointer dumps while the clear goes on).  DUMP emits BASE..BASE+LEN-1 with the address as index.",
            "An array is one START followed by elements up to tlast; the input is then disarmed "
            "until the next START.  Configuration writes and START/DUMP are accepted only when "
            "idle (not armed, not busy); CLEAR also aborts an armed store.  A rejected write "
            "keeps the previous configuration and sets the sticky error with its code.",
            "DUMP + START in one CTRL write: dump, then armed for the next array (as START) -- "
            "min/max at once (the two extremes are copied and dumped from the copy while the "
            "next array streams in; BUSY until that dump is out), selection and RMW once the "
            "dump is out.  It may be written while the store is armed or busy: it is queued "
            "(STATUS.PENDING, BUSY) and runs in the first cycle the store is idle (one cycle "
            "after the write when it already is) -- for min/max in the cycle of the array's "
            "tlast itself when the previous background dump is out (the store stays armed, "
            "no gap between arrays); a second one while one is queued is refused "
            "(code 4), CLEAR drops it.  `maple_pe_chain` writes it for the next row / column "
            "while the current array still streams in, so the store re-arms at its tlast.",
            "Memories: the LIST is KMAX registers (read by the dump through a mux) plus the "
            "KMAX-entry sorted shadow list, the RMW "
            f"store a {DEPTH}x{W} RAM with synchronous read (block RAM), neither reset.",
            "AXI4-Lite: AW and W are taken together (awready = wready = awvalid & wvalid & no "
            "pending response); one read in flight; responses are always OKAY.",
            f"The paper's LIST holds k entries with k up to the chain's need; here k <= KMAX={KMAX}.",
        ])


CORE = CoreDef(
    name=KIND, family="maple",
    description="MAPLE smart memory: top-k selection store (stall-free sorted insertion), min/max with index, "
                "saturating read-modify-write, AXI4-Lite programmed",
    params=PARAMS,
    build=build, datasheet=datasheet,
    configs={"default": {}, "small": {"W": 16, "IDXW": 8, "KMAX": 4, "DEPTH": 32}},
    generator="rtl_gen/maple/maple_smart_memory.py",
)
