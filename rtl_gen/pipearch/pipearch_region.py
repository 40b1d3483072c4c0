"""``pipearch_region`` core: a PipeArch on-chip memory region (section 6.2.2) with its
ReadRegion / WriteRegion access modules (section 6.2.1, Table 3).

Storage is block RAM (``DEPTH`` lines of ``LANES*W`` bits, synchronous read, each RAM
written in exactly one process).  ``CONFIG`` selects the physical organisation:

* 0 ``regular``: one RAM with one write port and one read port.  All write channels
  share the write port and all read channels share the read port (fixed priority,
  lowest channel number first, decided every cycle).  The FIFO ring lives in the same RAM.
* 1 ``replicated``: one RAM copy per read channel.  Every write (BRAM or FIFO mode)
  goes to every copy through one shared write port (write channels arbitrated as
  above); each read channel owns its copy's read port, so all read channels run in
  parallel.  The FIFO is one queue as in ``regular`` (one write pointer, one read
  pointer, one occupancy): a pushed line is popped once, by whichever read channel pops
  it, from that channel's own copy.  FIFO-mode pops are arbitrated (fixed priority,
  one pop per cycle); BRAM-mode reads need no arbitration.
* 2 ``type_replicated``: a BRAM-mode RAM and a separate FIFO RAM, each with its own
  write and read port; a BRAM-mode and a FIFO-mode access (of either direction) run in
  the same cycle.  Channels in the same mode share that RAM's port (fixed priority).

Any 14-bit offset is legal and accesses may run past the end of the region: line
addresses are (offset + i) mod DEPTH (the offset register keeps the low log2(DEPTH)
bits, the address sum is truncated); the access check is exactly one of BRAM/FIFO,
length 1..DEPTH and iterations != 0.  ``fifo_clr`` empties the FIFO (pointers and occupancy to 0).

The golden model is ``golden/pipearch_region.py``.
"""
from __future__ import annotations


from myhdl import ConcatSignal, always, always_comb, always_seq, block

from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_u
from rtl_gen.common.params import Param, ParamSet, multiple_of_8, power_of_two
from rtl_gen.common.ports import keyword_block, make_factory

KIND = "pipearch_region"
CONFIG_NAMES = ("regular", "replicated", "type_replicated")
ITW = 16  # width of the iteration-count inputs


def log2(n: int) -> int:
    return int(n).bit_length() - 1


PARAMS = ParamSet([
    Param("LANES", 16, "words per line (LANES*W bits per line; 16x32 = the paper's 64 B line)", 1, 64),
    Param("W", 32, "word width in bits (data is not interpreted)", 8, 64, multiple_of_8),
    Param("DEPTH", 64, "lines per region (power of two)", 2, 1 << 14, power_of_two),
    Param("AMEM_DEPTH", 16, "entries of each channel's address memory (power of two)", 2, 1 << 14,
          power_of_two),
    Param("NR", 2, "read channels (ReadRegion modules, m_axis_rd<i>)", 1, 16),
    Param("NW", 2, "write channels (WriteRegion modules, s_axis_wr<j>)", 1, 8),
    Param("CONFIG", 0, "0 regular, 1 replicated, 2 type_replicated", 0, 2),
])


# ------------------------------------------------------------------ small blocks
@block
def ram(clk, we, waddr, wdata, re, raddr, q, depth):
    """Simple dual-port block RAM: one write port, one synchronous read port."""
    mem = [sig_u(len(wdata)) for _ in range(depth)]

    @always(clk.posedge)
    def port():
        if we:
            mem[waddr].next = wdata
        if re:
            q.next = mem[raddr]

    return port


@block
def mux2(sel, a, b, y):
    @always_comb
    def m():
        if sel:
            y.next = a
        else:
            y.next = b

    return m


@block
def grant_first(req, grant, taken):
    @always_comb
    def g():
        grant.next = req
        taken.next = req

    return g


@block
def grant_next(req, taken_in, grant, taken_out):
    @always_comb
    def g():
        grant.next = req and not taken_in
        taken_out.next = taken_in or req

    return g


@block
def grant_last(req, taken_in, grant):
    @always_comb
    def g():
        grant.next = req and not taken_in

    return g


@block
def or_vec(v, y):
    @always_comb
    def o():
        y.next = v != 0

    return o


@block
def and2(a, b, y):
    @always_comb
    def o():
        y.next = a and b

    return o


@block
def and_not(a, b, y):
    @always_comb
    def o():
        y.next = a and not b

    return o


@block
def copy_sig(a, y):
    @always_comb
    def o():
        y.next = a

    return o


def or_all(sigs, insts):
    if len(sigs) == 1:
        return sigs[0]
    y = sig_b()
    insts.append((or_vec, (ConcatSignal(*sigs), y)))
    return y


def mux_chain(sels, vals, insts):
    """``vals[k]`` for the last ``sels[k]`` set (k >= 1), else ``vals[0]``."""
    cur = vals[0]
    for s, v in zip(sels[1:], vals[1:]):
        nxt = sig_u(len(v))
        insts.append((mux2, (s, v, cur, nxt)))
        cur = nxt
    return cur


def prio_grants(reqs, insts):
    """Fixed priority: the lowest-index requester wins."""
    n = len(reqs)
    gr = [sig_b() for _ in range(n)]
    if n == 1:
        insts.append((copy_sig, (reqs[0], gr[0])))
        return gr
    taken = sig_b()
    insts.append((grant_first, (reqs[0], gr[0], taken)))
    for k in range(1, n):
        if k == n - 1:
            insts.append((grant_last, (reqs[k], taken, gr[k])))
        else:
            t2 = sig_b()
            insts.append((grant_next, (reqs[k], taken, gr[k], t2)))
            taken = t2
    return gr


# ------------------------------------------------------------------ access module
@block
def access_ctl(clk, rst, start, access, iters, err_clr, fire, done_evt,
               busy, done, err, running, mfifo, line_last, final, addr_bram,
               amem_we, amem_addr, amem_data, depth, amem_depth):
    """Decode/validate the regionaccess word, count lines and iterations and produce
    the BRAM-mode line address (linear or through the address memory)."""
    AW, AMW = log2(depth), log2(amem_depth)
    LW = max(AW, AMW)
    a_len = sig_u(14)
    a_off = sig_u(AW)   # offset modulo DEPTH: its low log2(DEPTH) bits (any 14-bit offset is legal)
    off_hi_unused = sig_u(14 - AW) if AW < 14 else None  # the offset bits above them (*unused*: lint ignores it)
    a_ok = sig_b()
    off_r = sig_u(AW)
    len_r = sig_u(14)
    it_r = sig_u(ITW)
    lcnt = sig_u(14)
    icnt = sig_u(ITW)
    lin = sig_u(LW)
    lin_nxt = sig_u(LW)
    keep_r = sig_b()
    useam_r = sig_b()
    amra = sig_u(AMW)
    amq = sig_u(AW)
    sel = sig_u(AW)
    asum = sig_u(AW)
    amem = [sig_u(AW) for _ in range(amem_depth)]

    @always_comb
    def dec():
        a_len.next = access[30:16]
        a_off.next = access[AW:0]

    extra = []
    if AW < 14:  # offset taken modulo DEPTH: its upper bits are read by nothing
        @always_comb
        def offhi():
            off_hi_unused.next = access[14:AW]
        extra.append(offhi)

    if depth < (1 << 14):
        @always_comb
        def chk():
            a_ok.next = (access[31] != access[30]) and a_len != 0 and a_len <= depth \
                and iters != 0
    else:  # every 14-bit length fits
        @always_comb
        def chk():
            a_ok.next = (access[31] != access[30]) and a_len != 0 and iters != 0

    @always_comb
    def flags():
        line_last.next = lcnt == len_r - 1
        final.next = (lcnt == len_r - 1) and (icnt == it_r - 1)

    @always_comb
    def nxt():
        if start and not busy:
            lin_nxt.next = 0
        elif fire:
            if lcnt == len_r - 1 and not keep_r:
                lin_nxt.next = 0
            else:
                lin_nxt.next = lin + 1
        else:
            lin_nxt.next = lin

    @always_comb
    def amrac():
        amra.next = lin_nxt[AMW:]

    @always(clk.posedge)
    def amport():
        if amem_we:
            amem[amem_addr].next = amem_data
        amq.next = amem[amra]

    @always_comb
    def selc():
        if useam_r:
            sel.next = amq
        else:
            sel.next = lin[AW:]

    @always_comb
    def addc():
        asum.next = off_r + sel

    @always_comb
    def addo():
        addr_bram.next = asum

    @always_seq(clk.posedge, reset=rst)
    def seq():
        done.next = False
        lin.next = lin_nxt
        if err_clr:
            err.next = False
        if start and not busy:
            if a_ok:
                busy.next = True
                running.next = True
                mfifo.next = access[30]
                keep_r.next = access[15]
                useam_r.next = access[14]
                off_r.next = a_off
                len_r.next = a_len
                it_r.next = iters
                lcnt.next = 0
                icnt.next = 0
            else:
                err.next = True
                done.next = True
        if fire:
            if lcnt == len_r - 1:
                lcnt.next = 0
                if icnt == it_r - 1:
                    icnt.next = 0
                    running.next = False
                else:
                    icnt.next = icnt + 1
            else:
                lcnt.next = lcnt + 1
        if done_evt:
            busy.next = False
            done.next = True

    return dec, chk, flags, nxt, amrac, amport, selc, addc, addo, seq, *extra


@block
def read_channel(clk, rst, start, access, iters, err_clr, busy, done, err,
                 amem_we, amem_addr, amem_data,
                 m_tdata, m_tvalid, m_tready, m_tlast,
                 grant, req, addr_o, mfifo, qptr, q_nempty, rdata, depth, amem_depth):
    """ReadRegion: issues one RAM read per granted cycle into a two-entry output buffer
    (a read is issued only when its line is sure to find a free entry)."""
    AW = log2(depth)
    running = sig_b()
    line_last = sig_b()
    final = sig_b()
    addr_bram = sig_u(AW)
    done_evt = sig_b()
    inflight = sig_b()
    inf_last = sig_b()
    inf_final = sig_b()
    cnt = sig_u(2)
    d0 = sig_u(len(m_tdata))
    d1 = sig_u(len(m_tdata))
    l0, l1, f0, f1 = sig_b(), sig_b(), sig_b(), sig_b()
    pop = sig_b()
    can = sig_b()

    ctl = access_ctl(clk, rst, start, access, iters, err_clr, grant, done_evt,
                     busy, done, err, running, mfifo, line_last, final, addr_bram,
                     amem_we, amem_addr, amem_data, depth, amem_depth)

    @always_comb
    def popc():
        pop.next = cnt != 0 and m_tready
        can.next = cnt == 0 or (cnt == 1 and not inflight) or (cnt != 0 and m_tready)

    @always_comb
    def reqc():
        req.next = running and can and (q_nempty or not mfifo)
        done_evt.next = cnt != 0 and m_tready and f0

    @always_comb
    def addrc():
        if mfifo:
            addr_o.next = qptr
        else:
            addr_o.next = addr_bram

    @always_seq(clk.posedge, reset=rst)
    def buf():
        inflight.next = grant
        if grant:
            inf_last.next = line_last
            inf_final.next = final
        if pop:
            d0.next = d1
            l0.next = l1
            f0.next = f1
        if inflight:
            if cnt == 0 or (cnt == 1 and pop):
                d0.next = rdata
                l0.next = inf_last
                f0.next = inf_final
            else:
                d1.next = rdata
                l1.next = inf_last
                f1.next = inf_final
        if inflight and not pop:
            cnt.next = cnt + 1
        elif pop and not inflight:
            cnt.next = cnt - 1

    @always_comb
    def outs():
        m_tdata.next = d0
        m_tlast.next = l0
        m_tvalid.next = cnt != 0

    return ctl, popc, reqc, addrc, buf, outs


@block
def write_channel(clk, rst, start, access, iters, err_clr, busy, done, err,
                  amem_we, amem_addr, amem_data,
                  s_tvalid, s_tready,
                  grant, req, addr_o, mfifo, wptr, q_nfull, depth, amem_depth):
    """WriteRegion: a line is taken (``s_tready``) exactly in the cycle it is written."""
    AW = log2(depth)
    running = sig_b()
    line_last = sig_b()
    final = sig_b()
    addr_bram = sig_u(AW)
    done_evt = sig_b()

    ctl = access_ctl(clk, rst, start, access, iters, err_clr, grant, done_evt,
                     busy, done, err, running, mfifo, line_last, final, addr_bram,
                     amem_we, amem_addr, amem_data, depth, amem_depth)

    @always_comb
    def reqc():
        req.next = running and s_tvalid and (q_nfull or not mfifo)
        s_tready.next = grant
        done_evt.next = grant and final and line_last

    @always_comb
    def addrc():
        if mfifo:
            addr_o.next = wptr
        else:
            addr_o.next = addr_bram

    return ctl, reqc, addrc


@block
def fifo_queue(clk, rst, clr, push, pop, rptr, cnt, nempty, full, depth):
    """Read pointer and occupancy of the FIFO queue (``clr`` empties it)."""
    @always_seq(clk.posedge, reset=rst)
    def q():
        if clr:
            rptr.next = 0
            cnt.next = 0
        else:
            if pop:
                rptr.next = rptr + 1
            if push and not pop:
                cnt.next = cnt + 1
            elif pop and not push:
                cnt.next = cnt - 1

    @always_comb
    def f():
        nempty.next = cnt != 0
        full.next = cnt == depth

    return q, f


@block
def wptr_reg(clk, rst, clr, push, wptr):
    @always_seq(clk.posedge, reset=rst)
    def w():
        if clr:
            wptr.next = 0
        elif push:
            wptr.next = wptr + 1

    return w


# ------------------------------------------------------------------ top
def port_list(p: dict) -> list[Port]:
    L, W, D, NR, NW = p["LANES"], p["W"], p["DEPTH"], p["NR"], p["NW"]
    AW, AMW = log2(D), log2(p["AMEM_DEPTH"])
    ports = [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (channels and FIFO pointers; RAM "
                             "contents are kept)"),
        Port("err_clr", "in", 1, "clear every channel's sticky `err`"),
        Port("fifo_clr", "in", 1, "synchronous FIFO clear: write pointer, read pointer and occupancy "
                                  "to 0 (RAM contents kept); assert only while no channel is busy"),
        Port("fifo_count", "out", AW + 1, "FIFO occupancy in lines"),
    ]
    for kind, n in (("rd", NR), ("wr", NW)):
        for i in range(n):
            c = f"{kind}{i}"
            ports += [
                Port(f"{c}_start", "in", 1, "start the access (sampled with access/iters while busy is low)"),
                Port(f"{c}_access", "in", 32, "regionaccess word (Table 3)"),
                Port(f"{c}_iters", "in", ITW, "iterations, 1..65535"),
                Port(f"{c}_busy", "out", 1, "access in progress"),
                Port(f"{c}_done", "out", 1, "one-cycle pulse: access finished, or rejected"),
                Port(f"{c}_err", "out", 1, "sticky: an access word was rejected (cleared by err_clr/rst)"),
                Port(f"{c}_amem_we", "in", 1, "address memory write enable"),
                Port(f"{c}_amem_addr", "in", AMW, "address memory entry"),
                Port(f"{c}_amem_data", "in", AW, "line address stored in the entry"),
            ]
            if kind == "rd":
                ports += [Port(f"m_axis_rd{i}_tdata", "out", L * W, "line read from the region"),
                          Port(f"m_axis_rd{i}_tvalid", "out", 1, ""),
                          Port(f"m_axis_rd{i}_tready", "in", 1, ""),
                          Port(f"m_axis_rd{i}_tlast", "out", 1, "last line of an iteration")]
            else:
                ports += [Port(f"s_axis_wr{i}_tdata", "in", L * W, "line to write"),
                          Port(f"s_axis_wr{i}_tvalid", "in", 1, ""),
                          Port(f"s_axis_wr{i}_tready", "out", 1, "")]
    return ports


@block
def region_impl(s, p):
    """The region for parameters ``p``; ``s`` maps port names to signals."""
    D, AMD, NR, NW, CFG = p["DEPTH"], p["AMEM_DEPTH"], p["NR"], p["NW"], p["CONFIG"]
    AW = log2(D)
    LW = p["LANES"] * p["W"]
    clk, rst, clr = s["clk"], s["rst"], s["fifo_clr"]
    insts = []

    wptr = sig_u(AW)
    rptr = sig_u(AW)
    qcnt = sig_u(AW + 1)
    nempty = sig_b()
    qfull = sig_b()
    q_nfull = sig_b()

    # ---- channels
    rreq = [sig_b() for _ in range(NR)]
    rgrant = [sig_b() for _ in range(NR)]
    raddr = [sig_u(AW) for _ in range(NR)]
    rfifo = [sig_b() for _ in range(NR)]
    rdata = [sig_u(LW) for _ in range(NR)]
    wreq = [sig_b() for _ in range(NW)]
    wgrant = [sig_b() for _ in range(NW)]
    waddr = [sig_u(AW) for _ in range(NW)]
    wfifo = [sig_b() for _ in range(NW)]
    for i in range(NR):
        c = f"rd{i}"
        insts.append(read_channel(
            clk, rst, s[f"{c}_start"], s[f"{c}_access"], s[f"{c}_iters"], s["err_clr"],
            s[f"{c}_busy"], s[f"{c}_done"], s[f"{c}_err"],
            s[f"{c}_amem_we"], s[f"{c}_amem_addr"], s[f"{c}_amem_data"],
            s[f"m_axis_rd{i}_tdata"], s[f"m_axis_rd{i}_tvalid"], s[f"m_axis_rd{i}_tready"],
            s[f"m_axis_rd{i}_tlast"],
            rgrant[i], rreq[i], raddr[i], rfifo[i], rptr, nempty, rdata[i], D, AMD))
    for j in range(NW):
        c = f"wr{j}"
        insts.append(write_channel(
            clk, rst, s[f"{c}_start"], s[f"{c}_access"], s[f"{c}_iters"], s["err_clr"],
            s[f"{c}_busy"], s[f"{c}_done"], s[f"{c}_err"],
            s[f"{c}_amem_we"], s[f"{c}_amem_addr"], s[f"{c}_amem_data"],
            s[f"s_axis_wr{j}_tvalid"], s[f"s_axis_wr{j}_tready"],
            wgrant[j], wreq[j], waddr[j], wfifo[j], wptr, q_nfull, D, AMD))

    # ---- arbitration groups: (members, mode filter None/"bram"/"fifo")
    def filtered(reqs, modes, flt):
        if flt is None:
            return list(reqs)
        out = []
        for r, m in zip(reqs, modes):
            y = sig_b()
            insts.append((and2 if flt == "fifo" else and_not, (r, m, y)))
            out.append(y)
        return out

    wdata_all = [s[f"s_axis_wr{j}_tdata"] for j in range(NW)]
    wflt = [None] if CFG != 2 else ["bram", "fifo"]
    wports = []  # (we, waddr, wdata) per write group
    wg_grants = []
    for flt in wflt:
        g = prio_grants(filtered(wreq, wfifo, flt), insts)
        wg_grants.append(g)
        wports.append((or_all(g, insts), mux_chain(g, waddr, insts), mux_chain(g, wdata_all, insts)))
    for j in range(NW):
        gj = or_all([wg[j] for wg in wg_grants], insts)
        insts.append(copy_sig(gj, wgrant[j]))

    rports = []  # (re, raddr) per RAM
    if CFG == 1:
        # own read port per copy: BRAM-mode reads go unarbitrated; FIFO pops (one shared
        # queue) are arbitrated by fixed priority, one pop per cycle
        bram_g = filtered(rreq, rfifo, "bram")
        fifo_g = prio_grants(filtered(rreq, rfifo, "fifo"), insts)
        for i in range(NR):
            insts.append((or_vec, (ConcatSignal(bram_g[i], fifo_g[i]), rgrant[i])))
            rports.append((rgrant[i], raddr[i]))
    else:
        rgroups = [None] if CFG == 0 else ["bram", "fifo"]
        rg_grants = []
        for flt in rgroups:
            g = prio_grants(filtered(rreq, rfifo, flt), insts)
            rg_grants.append(g)
            rports.append((or_all(g, insts), mux_chain(g, raddr, insts)))
        for i in range(NR):
            insts.append(copy_sig(or_all([g[i] for g in rg_grants], insts), rgrant[i]))

    # ---- RAMs: (write group, read group)
    qs = []
    for k, (re, ra) in enumerate(rports):
        wk = 0 if CFG != 2 else k
        we, wa, wd = wports[wk]
        qk = sig_u(LW)
        insts.append(ram(clk, we, wa, wd, re, ra, qk, D))
        qs.append(qk)
    for i in range(NR):
        if CFG == 0:
            insts.append(copy_sig(qs[0], rdata[i]))
        elif CFG == 1:
            insts.append(copy_sig(qs[i], rdata[i]))
        else:
            insts.append(mux2(rfifo[i], qs[1], qs[0], rdata[i]))

    # ---- FIFO pointers and occupancy
    wpush = []
    for j in range(NW):
        y = sig_b()
        insts.append(and2(wgrant[j], wfifo[j], y))
        wpush.append(y)
    push = or_all(wpush, insts)
    insts.append(wptr_reg(clk, rst, clr, push, wptr))
    pops = []
    for i in range(NR):
        y = sig_b()
        insts.append(and2(rgrant[i], rfifo[i], y))
        pops.append(y)
    insts.append(fifo_queue(clk, rst, clr, push, or_all(pops, insts), rptr, qcnt, nempty, qfull, D))
    insts.append(_not(qfull, q_nfull))
    insts.append(copy_sig(qcnt, s["fifo_count"]))
    return [i[0](*i[1]) if isinstance(i, tuple) else i for i in insts]


@block
def _not(a, y):
    @always_comb
    def o():
        y.next = not a

    return o


def block_fn(p: dict, ports: list[Port]):
    """The top-level block with one argument per port (``keyword_block``)."""
    return keyword_block(KIND, [pt.name for pt in ports], region_impl, p)


def build(p):
    ports = port_list(p)
    return make_factory(block_fn(p, ports), ports), ports


def datasheet(p: dict) -> Datasheet:
    D, NR, NW, CFG = p["DEPTH"], p["NR"], p["NW"], p["CONFIG"]
    cname = CONFIG_NAMES[CFG]
    fields = [("[31]", "1", "BRAM mode (addressed)"),
              ("[30]", "1", "FIFO mode; exactly one of [31], [30] must be set"),
              ("[29:16]", "14", f"length: lines per iteration, 1..{D} (an access may run past the end: addresses wrap)"),
              ("[15]", "1", "keep count at iterations: 1 = iteration j continues at index j*length "
                            "(the position keeps advancing), 0 = every iteration restarts at index 0"),
              ("[14]", "1", "use the channel's address memory: index i goes to amem[i mod AMEM_DEPTH]"),
              ("[13:0]", "14", f"offset in lines, any value 0..16383, taken modulo {D} (DEPTH) and added to "
                              "the index (or to the address-memory entry)")]
    org = {0: "one RAM; one write and one read per cycle, channels time-shared by fixed priority "
              "(lowest number first, decided every cycle)",
           1: f"{NR} RAM copies, one per read channel; every write goes to all copies (one write per "
              "cycle, fixed priority); all read channels run in parallel; the FIFO is one queue "
              "(a pushed line is popped once, by whichever read channel pops it, from its own copy; "
              "FIFO pops are arbitrated by fixed priority, one per cycle)",
           2: "a BRAM-mode RAM and a FIFO RAM, each with one write and one read port; a BRAM-mode "
              "and a FIFO-mode access run in the same cycle; same-mode channels share by fixed priority"}[CFG]
    return Datasheet(
        summary=f"A PipeArch on-chip memory region in the **{cname}** configuration ({org}): "
                f"{D} lines of {p['LANES']}x{p['W']} bits with {NR} ReadRegion channels "
                f"(`m_axis_rd<i>`) and {NW} WriteRegion channels (`s_axis_wr<j>`), each started "
                "with a 32-bit regionaccess word (PipeArch Table 3) and an iteration count, each with "
                "its own address memory for sparse access patterns. Reference: "
                "`golden/pipearch_region.py`.",
        latency="a read channel's first line is valid 3 cycles after `start` (decode, RAM read, "
                "output buffer); a write channel accepts its first line 1 cycle after `start`",
        throughput="one line per cycle per channel when the channel owns its port (measured in "
                   "`make bench`); channels sharing a port share its one line per cycle",
        fields_title="regionaccess word (`<ch>_access`, sampled on `<ch>_start`)",
        fields_header=("bits", "width", "meaning"),
        fields=fields,
        notes=[
            "BRAM mode: line k of iteration j uses index i = j*length + k when keep-count is set, else "
            "i = k; the line address is (offset + i) mod DEPTH, or with use-address-memory "
            "(offset + amem[i mod AMEM_DEPTH]) mod DEPTH. Any 14-bit offset is legal (an offset >= DEPTH "
            "acts as offset mod DEPTH), and an access may run past the end of the region "
            "(offset mod DEPTH + length > DEPTH, or keep-count over several iterations): its addresses "
            "wrap modulo DEPTH, a ring buffer (and modulo AMEM_DEPTH for the address memory).",
            "FIFO mode ignores offset, keep-count and use-address-memory and moves length*iterations "
            "lines. A writer stalls (`tready` low) while the FIFO holds DEPTH lines; a reader stalls "
            "(`tvalid` low) while the FIFO is empty. `fifo_count` is the occupancy. There is one FIFO "
            "queue in every configuration: several FIFO-mode readers share it (each line goes to one "
            "of them, fixed priority per cycle). In the regular and replicated configurations the "
            "FIFO ring shares the RAM with BRAM mode: pushes overwrite lines and BRAM-mode writes "
            "into queued lines change them.",
            "`fifo_clr` (synchronous, one cycle) empties the FIFO: write pointer, read pointer and "
            "occupancy to 0, RAM contents kept, so the next push lands at line 0. Assert it only "
            "while no channel is busy (it wins over a push or pop in the same cycle).",
            "Rejected accesses: both or neither of BRAM/FIFO set, length 0 or > DEPTH, or "
            "iterations 0 (every offset 0..16383 is legal, and so is offset + length > DEPTH: the "
            "access wraps). The channel sets its sticky `err`, pulses `done`, stays idle and moves no "
            "data. `err` is cleared by `err_clr` or `rst`.",
            "Control per channel: `start` is sampled while `busy` is low (ignored while busy). "
            "Read channels pulse `done` in the cycle after their last line is accepted; write "
            "channels in the cycle after their last line is taken. `start` may follow `done` at once.",
            "Address memory: `<ch>_amem_we/addr/data` write entry `addr` (one per cycle, any time); "
            "load it before `start` (a write in the start cycle may not be seen by the first access).",
            "Read output `tlast` marks the last line of every iteration. Every output line is held "
            "while `tready` is low; an issued RAM read always has a free output-buffer entry, so "
            "backpressure never drops or duplicates a line.",
            "Arbitration on a shared port is fixed priority, re-decided every cycle: the lowest-numbered "
            "requesting channel wins, so a higher-numbered channel proceeds in the cycles the lower ones "
            "do not request (e.g. while their sinks stall or their sources bubble) and otherwise after "
            "they finish. A channel requests only when its line can move (read: output-buffer space and, "
            "in FIFO mode, a non-empty FIFO; write: a valid input line and, in FIFO mode, a non-full FIFO).",
            "Concurrent accesses to the same lines are not ordered beyond the arbitration rule: "
            "software orders producer/consumer pairs through `done` (BRAM mode) or the FIFO.",
            "Reset returns every channel and the FIFO pointers to idle/empty; RAM and address-memory "
            "contents are not cleared.",
        ])


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch on-chip memory region with ReadRegion/WriteRegion channels "
                "(regular, replicated, type-replicated; BRAM and FIFO mode; address memory)",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={
        "default": {},
        "replicated": {"LANES": 2, "W": 16, "DEPTH": 16, "AMEM_DEPTH": 8, "NR": 3, "NW": 2, "CONFIG": 1},
        "type_replicated": {"LANES": 2, "W": 16, "DEPTH": 16, "AMEM_DEPTH": 8, "NR": 2, "NW": 2,
                            "CONFIG": 2},
    },
    generator="rtl_gen/pipearch/pipearch_region.py",
)
