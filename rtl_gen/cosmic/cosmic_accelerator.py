"""``cosmic_accelerator`` core: the assembled CoSMIC multi-threaded template accelerator
(CoSMIC sections 3, 5.1, 5.2; TABLA section 6) that runs what ``tablac`` emits.

Structure (the cycle-level reference is :mod:`tablac.machine`, its docstring is the spec):

* ``ROWS x COLS`` ``cosmic_pe`` instances (one shared PE configuration); thread ``t``
  owns rows ``[t*RPT, (t+1)*RPT)`` (``RPT = ROWS / THREADS``), i.e. physical PEs
  ``[t*P, (t+1)*P)`` with ``P = RPT*COLS``;
* links: PE ``g``'s ``left_in`` is PE ``g-1``'s ``right_out`` and its ``right_in`` PE
  ``g+1``'s ``left_out`` inside a row, 0 at the row ends;
* one row bus register per row, written at the end of the cycle in which a PE of the row
  has ``bus_out_valid`` (two writers in one cycle: error ``E_BUS``), cleared at every PE
  start;
* a tree bus per thread over its rows, ``d = tree_depth(RPT)`` register stages: a tree
  program (one word per cycle of the PE run, shared by all threads: for every destination
  row an op pass/add/mul and its source rows) folds the bus writes of the source rows of
  that cycle left to right (saturating add or rounding multiply) and writes the
  destination row's bus register ``d`` cycles later;
* ``cosmic_memory_schedule_unit`` (Memory Schedule queue, Thread Index Table, AXI4 master)
  whose ``m_axis_pe`` beats are fanned out to the PEs: lane ``i`` of a beat for PE ``p``
  goes to PE ``p+i``, into the DATA buffer during training and the MODEL buffer during a
  model load, at consecutive addresses from 0 (a write pointer per PE, reset by every
  start of the unit);
* the PEs are ``cosmic_pe`` with ``DBUF=1`` (double-buffered DATA): during training the
  unit delivers sample ``n+1`` into the shadow DATA banks while the PEs compute sample
  ``n`` (``m_axis_pe_tready`` is held low for a beat of a thread whose complete sample
  waits);
* the threads run MIMD (``thread_ctl``, one per thread): a thread's sample is complete
  when its transfers of the walk (one ``tlast`` per queue entry) are in, and its PEs
  start as soon as it is complete and they are idle (``done`` ``PROG_LEN+5`` cycles
  later), in the ``done`` cycle of its previous sample when the data is there; each
  thread has its own cycle count into the shared tree program and clears its own row
  buses (``tablac.machine.thread_starts`` is the start rule);
* a controller that sequences model load, samples (one unit START per sample, issued as
  soon as the unit's previous walk has ended, overlapping the PEs' compute), the on-chip
  aggregation after every round
  (``golden.sgd.average_fx`` word by word over the threads through the PE read-back and
  load ports) and the rounds, with an AXI4-Lite host interface.
"""
from __future__ import annotations

import inspect

from myhdl import ConcatSignal, always, always_comb, always_seq, block, concat, intbv

from golden.cosmic_pe import NL_OPS, OPS, PEConfig
from rtl_gen.common.blocks import fit, round_sat, sat, sext
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.params import Param, ParamError, ParamSet, power_of_two
from rtl_gen.common.ports import make_factory

from . import cosmic_memory_schedule_unit as m_msu
from . import cosmic_pe as m_pe

KIND = "cosmic_accelerator"

# host register map (byte offsets); 0x0000-0x0FFF is the memory schedule unit's map
MSU_WINDOW = 0x1000
R_CTRL, R_STATUS, R_PROG_LEN, R_SAMPLES, R_ROUNDS, R_AGG_LEN = 0x00, 0x04, 0x08, 0x0C, 0x10, 0x14
R_CYCLES, R_SAMPLE_CNT, R_ROUND_CNT = 0x18, 0x1C, 0x20
R_LD_PE, R_LD_SEL, R_LD_ADDR, R_LD_HI, R_LD_LO = 0x24, 0x28, 0x2C, 0x30, 0x34
R_RB_PE, R_RB_SEL, R_RB_ADDR, R_RB_DATA = 0x38, 0x3C, 0x40, 0x44
R_ERR_INFO, R_SHAPE, R_COMPUTE_CYC, R_LOAD_CYC, R_AGG_CYC = 0x48, 0x4C, 0x50, 0x54, 0x58
# CTRL bits
C_LOAD_MODEL, C_TRAIN, C_ERRCLR, C_AGGREGATE = 1, 2, 4, 8
# error codes (STATUS[7:4])
E_PE, E_SLOT, E_LINK, E_OP, E_MSU, E_TABLE, E_BUSY, E_BUS, E_REG, E_PEERR, E_WRENT = range(1, 12)
ERRORS = {
    E_PE: "a load names a PE that does not exist (LD_PE >= PEs per thread, aggregation "
          "entry PE >= PEs per thread)",
    E_SLOT: "a buffer/schedule/table slot that does not exist: load address beyond the "
            "target's depth, a microcode address field beyond its buffer, PROG_LEN 0 or "
            "> SCHED_DEPTH, AGG_LEN > AGG_DEPTH, SAMPLES or ROUNDS 0, or a delivery that "
            "overflows a PE buffer (run aborted)",
    E_LINK: "microcode reads or writes a neighbour link that does not exist (left at "
            "column 0, right at the last column)",
    E_OP: "microcode with an illegal opcode (14, 15) or a nonlinear function the PEs lack",
    E_MSU: "the memory schedule unit reports an error (its code in STATUS[11:8]: 1 PE index, "
           "2 size 0, 3 queue overflow, 4 busy/empty queue, 5 bad register/entry, 7 AXI "
           "error); checked at the start and at the end of every command",
    E_TABLE: "Thread Index Table: PE_OFFSET[t] != t * P (threads would overlap or leave "
             "their rows)",
    E_BUSY: "a command, a load or an MSU-window write while a command runs, or a command "
            "while the error flag is set",
    E_BUS: "two writers of one row bus in a cycle, or a tree-bus source row without a "
           "bus write in the entry's cycle (run aborted after the sample)",
    E_REG: "unknown register, read-only register written, a partial write (WSTRB != 0xF), or "
           "START written into the unit's CTRL (only the accelerator starts the unit)",
    E_PEERR: "a PE raised err during a run (run aborted after the sample); no host input "
             "causes it (loads and PROG_LEN are checked first): it reports a schedule "
             "memory corrupted after loading",
    E_WRENT: "LOAD_MODEL or TRAIN while the unit's queue holds a write entry (PEs -> memory, "
             "its STATUS.WRQ): the accelerator does not hand PE data to the unit (the model "
             "is read back through RB_*), so the command is refused at its start instead of "
             "waiting for write data for ever; CLEAR the queue and push read entries",
}
# controller states
(S_IDLE, S_CHK, S_TBL_MEM, S_TBL_OFF, S_ROUND, S_MSU_GO, S_POLL, S_RUN, S_DRAIN,
 S_AGG_A, S_AGG_B, S_AGG_C, S_RND_END, S_FIN) = range(14)
# internal AXI4-Lite master states
I_IDLE, I_W, I_B, I_AR, I_R = range(5)


def clog2(n: int) -> int:
    return max(1, (int(n) - 1).bit_length())


def log2(n: int) -> int:
    return int(n).bit_length() - 1


def tree_depth(rows: int) -> int:
    """Register stages of a thread's tree bus (== ``tablac.schedule.tree_depth``)."""
    return max(1, (rows - 1).bit_length()) if rows > 1 else 1


def pe_params(p: dict) -> dict:
    return dict(W=p["W"], F=p["F"], DATA_DEPTH=p["DATA_DEPTH"], MODEL_DEPTH=p["MODEL_DEPTH"],
                INTERIM_DEPTH=p["INTERIM_DEPTH"], SCHED_DEPTH=p["SCHED_DEPTH"], NL=p["NL"],
                BYPASS=1, ACC_GUARD=8, DBUF=1)


def msu_params(p: dict) -> dict:
    return dict(W=p["W"], LANES=p["COLS"], NPE=p["ROWS"] * p["COLS"], NTHREADS=p["THREADS"],
                QDEPTH=p["QDEPTH"], ADDR_W=32, MAXBURST=p["MAXBURST"], PREFETCH=p["PREFETCH"])


def _cross(p: dict) -> str | None:
    if p["ROWS"] % p["THREADS"]:
        return (f"parameter THREADS={p['THREADS']} must divide ROWS={p['ROWS']} (each thread "
                "owns whole rows, CoSMIC 5.2)")
    rpt = p["ROWS"] // p["THREADS"]
    if rpt * (2 + rpt) > 64:
        return (f"ROWS/THREADS = {rpt} rows per thread: at most 6 (a tree-bus program word, "
                "RPT*(2+RPT) bits, is loaded as one 64-bit LD_HI:LD_LO word)")
    if p["ROWS"] * p["COLS"] < 2:
        return "the accelerator needs at least 2 PEs (ROWS*COLS >= 2)"
    if p["F"] >= p["W"]:
        return f"parameter F={p['F']} must be below W={p['W']}"
    for name, ps, sub in (("cosmic_pe", m_pe.CORE.params, pe_params(p)),
                          ("cosmic_memory_schedule_unit", m_msu.PARAMS, msu_params(p))):
        try:
            ps.resolve(sub)
        except ParamError as e:
            return f"{name} (instantiated with {sub}): {e}"
    return None


def _w(v):
    return None if v in (8, 16, 32) else "must be 8, 16 or 32 (memory schedule unit word)"


def _cols(v):
    return None if v in (2, 4, 8) else "must be 2, 4 or 8 (memory beat of COLS words)"


PARAMS = ParamSet([
    Param("W", 32, "word width, signed fixed point", 8, 32, _w),
    Param("F", 16, "fraction bits", 2, 30),
    Param("ROWS", 2, "rows of PEs", 1, 64),
    Param("COLS", 4, "PEs per row (= words per memory beat, the unit's LANES)", 2, 8, _cols),
    Param("THREADS", 2, "worker threads (power of two dividing ROWS); thread t owns rows "
                        "[t*ROWS/THREADS, (t+1)*ROWS/THREADS)", 1, 32, power_of_two),
    Param("DATA_DEPTH", 256, "PE DATA buffer words (power of two)", 2, 4096, power_of_two),
    Param("MODEL_DEPTH", 256, "PE MODEL buffer words (power of two)", 2, 4096, power_of_two),
    Param("INTERIM_DEPTH", 256, "PE INTERIM buffer words (power of two)", 2, 4096, power_of_two),
    Param("SCHED_DEPTH", 1024, "PE schedule memory instructions (power of two)", 2, 4096,
          power_of_two),
    Param("NL", 1, "nonlinear units of every PE: bit0 sigmoid, bit1 gaussian, bit2 reciprocal, "
                   "bit3 log", 0, 15),
    Param("QDEPTH", 16, "Memory Schedule queue entries", 2, 256, power_of_two),
    Param("AGG_DEPTH", 256, "aggregation table entries (model words averaged after a round)",
          2, 4096, power_of_two),
    Param("MAXBURST", 16, "longest AXI4 burst in beats", 1, 256),
    Param("PREFETCH", 64, "memory schedule unit prefetch buffer depth in beats", 2, 1024,
          power_of_two),
], [_cross])


def geometry(p: dict) -> dict:
    """Derived sizes shared by the generator, the datasheet and the testbench."""
    cfg = PEConfig.from_params(pe_params(p))
    N = p["ROWS"] * p["COLS"]
    T = p["THREADS"]
    RPT = p["ROWS"] // T
    P = RPT * p["COLS"]
    return dict(cfg=cfg, N=N, T=T, RPT=RPT, P=P, D=tree_depth(RPT), C=p["COLS"],
                TREE_DEPTH=2 * p["SCHED_DEPTH"], IW=cfg.instr_w,
                TRW=RPT * (2 + RPT))


def ports_of(p: dict) -> list[Port]:
    mp = {pt.name: pt for pt in m_msu.ports_of(msu_params(p))}
    ports = [Port("clk", "in", 1, "clock, rising edge"),
             Port("rst", "in", 1, "synchronous active-high reset (aborts a command, clears the "
                                  "registers; PE buffers, microcode, aggregation table, tree "
                                  "program and the Thread Index Table are kept)")]
    for n, d, w, desc in (
            ("s_axil_awaddr", "in", 13, "AXI4-Lite write address (byte): 0x0000-0x0FFF the "
                                        "memory schedule unit, 0x1000-0x1FFF the accelerator"),
            ("s_axil_awvalid", "in", 1, ""), ("s_axil_awready", "out", 1,
                                              "high with wready: awvalid and wvalid taken together"),
            ("s_axil_wdata", "in", 32, ""), ("s_axil_wstrb", "in", 4, "must be 0xF"),
            ("s_axil_wvalid", "in", 1, ""), ("s_axil_wready", "out", 1, ""),
            ("s_axil_bresp", "out", 2, "always OKAY (errors are reported in STATUS)"),
            ("s_axil_bvalid", "out", 1, ""), ("s_axil_bready", "in", 1, ""),
            ("s_axil_araddr", "in", 13, "AXI4-Lite read address"),
            ("s_axil_arvalid", "in", 1, ""), ("s_axil_arready", "out", 1, ""),
            ("s_axil_rdata", "out", 32, "unknown registers read 0"),
            ("s_axil_rresp", "out", 2, "always OKAY"),
            ("s_axil_rvalid", "out", 1, ""), ("s_axil_rready", "in", 1, "")):
        ports.append(Port(n, d, w, desc))
    ports += [pt for n, pt in mp.items() if n.startswith("m_axi_")]
    ports += [Port("busy", "out", 1, "a command runs (STATUS bit 0)"),
              Port("irq", "out", 1, "STATUS.done or STATUS.error (level)")]
    return ports


def _inner(factory):
    """The MyHDL block function behind a ``make_factory`` factory (sub-core instance)."""
    return inspect.getclosurevars(factory).nonlocals["top_fn"]


# ---------------------------------------------------------------------- glue blocks
@block
def pe_glue(clk, rst, g, G, bt_valid, bt_data, bt_lv, bt_dest, dsel, dptr_clr, derr_clr, d_err,
            h_ld, h_pe, h_sel, h_addr, h_data, a_we, a_pe, a_addr, a_data,
            ld_en, ld_sel, ld_addr, ld_data, shifted, lvs):
    """Load port of physical PE ``g``: memory-unit deliveries (lane ``g - tdest``, write
    pointer per PE, reset by ``dptr_clr``; an overflow sets ``d_err`` until ``derr_clr``), host loads (thread-relative PE ``h_pe`` of every thread) and
    aggregation write-backs (``a_pe`` of every thread)."""
    C, W, P, DD, MD = G["C"], G["W"], G["P"], G["DD"], G["MD"]
    grel = g % P
    OW = clog2(G["N"] + 1)
    PTW = clog2(max(DD, MD)) + 1
    off = sig_u(OW)
    hit = sig_b()
    word = sig_u(W)
    ptr = sig_u(PTW)
    lim = sig_u(PTW)
    LW = len(ld_data)
    AWD = len(ld_addr)

    @always_comb
    def offc():
        if bt_dest <= g:
            off.next = g - bt_dest
        else:
            off.next = C

    @always_comb
    def hitc():
        hit.next = False
        if bt_valid and off < C:
            if lvs[0]:
                hit.next = True

    @always_comb
    def lvc():
        lvs.next = bt_lv >> off

    ptr_a = sig_u(AWD)
    LWB = log2(W)
    shamt = sig_u(OW + LWB)
    word_x = sig_u(LW)
    ad_x = sig_u(LW)
    hd_x = sig_u(LW)
    aa_x = sig_u(AWD)
    ha_x = sig_u(AWD)
    fits = [fit(ptr, ptr_a), fit(word, word_x), fit(a_data, ad_x), fit(h_data, hd_x),
            fit(a_addr, aa_x), fit(h_addr, ha_x)]

    @always_comb
    def shamt_c():
        shamt.next = concat(off, intbv(0)[LWB:])

    @always_comb
    def shc():
        shifted.next = bt_data >> shamt

    @always_comb
    def wordc():
        word.next = shifted[W:]

    @always_comb
    def limc():
        if dsel == 2:
            lim.next = MD
        else:
            lim.next = DD

    @always_seq(clk.posedge, reset=rst)
    def pointer():
        if dptr_clr:
            ptr.next = 0
        elif hit and ptr < lim:
            ptr.next = ptr + 1
        if derr_clr:
            d_err.next = False
        elif hit and ptr >= lim:
            d_err.next = True

    @always_comb
    def port():
        ld_en.next = False
        ld_sel.next = 0
        ld_addr.next = 0
        ld_data.next = 0
        if hit:
            if ptr < lim:
                ld_en.next = True
            ld_sel.next = dsel
            ld_addr.next = ptr_a
            ld_data.next = word_x
        elif a_we and a_pe == grel:
            ld_en.next = True
            ld_sel.next = 2
            ld_addr.next = aa_x
            ld_data.next = ad_x
        elif h_ld and h_pe == grel and h_sel < 4:
            ld_en.next = True
            ld_sel.next = h_sel[2:]
            ld_addr.next = ha_x
            ld_data.next = hd_x

    return fits, offc, hitc, lvc, shamt_c, shc, wordc, limc, pointer, port


@block
def or_link(prev, mine, en, out):
    """``out = prev | (mine if en)`` -- one element of an and-or multiplexer chain."""
    @always_comb
    def c():
        if en:
            out.next = prev | mine
        else:
            out.next = prev
    return c


@block
def ge_const(x, k, y):
    @always_comb
    def c():
        y.next = x >= k
    return c


@block
def eq_const(x, k, y):
    @always_comb
    def c():
        y.next = x == k
    return c


@block
def err_link(prev, err, derr, out):
    @always_comb
    def c():
        out.next = prev or err != 0 or derr
    return c


@block
def bus_link(prev_any, prev_val, prev_dup, valid, val, out_any, out_val, out_dup):
    """Row-bus writer chain element: the writer's value, any writer, two writers."""
    @always_comb
    def c():
        out_any.next = prev_any or valid
        out_dup.next = prev_dup or (prev_any and valid)
        if valid:
            out_val.next = val
        else:
            out_val.next = prev_val
    return c


@block
def row_bus(clk, rst, any_w, val, dup, t_we, t_val, clear, busreg, err):
    """The row bus register: PE write or tree delivery; a clash or two writers flag err."""
    @always_seq(clk.posedge, reset=rst)
    def r():
        err.next = dup or (any_w and t_we)
        if clear:
            busreg.next = 0
        elif t_we:
            busreg.next = t_val
        elif any_w:
            busreg.next = val
    return r


@block
def fold_link(op, src, prev_v, prev_x, any_w, val, out_v, out_x, miss, F):
    """Tree-node fold element: ``acc (op) row value`` for a source row (left to right)."""
    W = len(val)
    a = sig_s(W)
    b = sig_s(W)
    s1 = sig_s(W + 1)
    p2 = sig_s(2 * W + 1)
    sa = sig_s(W)
    sm = sig_s(W)
    i_sat = sat(s1, sa)
    i_mul = round_sat(p2, sm, F)

    @always_comb
    def ops():
        a.next = prev_x.signed()
        b.next = val.signed()

    @always_comb
    def ar():
        s1.next = a + b
        p2.next = a * b

    @always_comb
    def c():
        miss.next = src and not any_w and op != 0
        out_v.next = prev_v
        out_x.next = prev_x
        if src and any_w:
            out_v.next = True
            if not prev_v:
                out_x.next = val
            elif op == 2:
                out_x.next = sa[W:]
            else:
                out_x.next = sm[W:]

    return i_sat, i_mul, ops, ar, c


@block
def tree_stage(clk, rst, iv, ix, ov, ox):
    @always_seq(clk.posedge, reset=rst)
    def r():
        ov.next = iv
        ox.next = ix
    return r


@block
def slice_of(x, lsb, y):
    """``y`` = bits ``[lsb +: len(y)]`` of ``x``."""
    n = len(y)

    @always_comb
    def c():
        y.next = x[lsb + n:lsb]
    return c


@block
def bit_of(x, i, y):
    @always_comb
    def c():
        y.next = x[i]
    return c


@block
def add_link(prev, x, out):
    """Thread-sum chain element: ``out = prev + sext(x)``."""
    xs = sig_s(len(x))
    xe = sig_s(len(out))
    i_s = sext(xs, xe)

    @always_comb
    def cs():
        xs.next = x.signed()

    @always_comb
    def c():
        out.next = prev + xe
    return i_s, cs, c


@block
def in_range(valid, x, lo, hi, y):
    """``y = valid and lo <= x < hi`` (constants lo, hi): a PE index in a thread's PEs."""
    top = 1 << len(x)
    if lo == 0 and hi >= top:
        @always_comb
        def c():
            y.next = valid
    elif lo == 0:
        @always_comb
        def c():
            y.next = valid and x < hi
    elif hi >= top:
        @always_comb
        def c():
            y.next = valid and x >= lo
    else:
        @always_comb
        def c():
            y.next = valid and x >= lo and x < hi
    return c


@block
def tree_rd(mem, cyc, busy, word, TD):
    """A thread's tree-program word: ``mem[cyc]`` while the thread's PEs run, else 0 (so
    words never loaded -- beyond the program, unknown in simulation -- are not read between
    samples, where a start cycle would take them into the bus-error flag)."""
    TW = clog2(TD)

    @always_comb
    def c():
        if busy and cyc < TD:
            word.next = mem[cyc[TW:]]
        else:
            word.next = 0
    return c


@block
def thread_ctl(clk, rst, run, cmd_clr, hit, last_n, walk_go, walk_end, busy, done, err, berr,
               hold, all_dec, full, start, nothing, bad_pe, bad_bus, has, cyc):
    """One thread's sample sequencing (MIMD, CoSMIC 5.2: every thread starts on its own as
    soon as its operands have arrived).  ``full``: a complete sample of the thread waits
    in its PEs' shadow DATA banks; it is closed when the thread's ``last_n``-th transfer
    of the walk (``hit``: a delivered ``tlast`` beat for one of its PEs) is in, or when
    the walk ends (transfers skipped by the unit).  ``start`` when full, the PEs idle and
    no run error (``hold``).  ``nothing``: the walk ended while the previous sample still
    waits and delivered nothing to this thread.  ``bad_pe``/``bad_bus``: the done cycle of
    a sample that raised a PE error or a bus error.  ``has``: a completed sample not yet
    counted in SAMPLE_CNT (``all_dec``: every thread has one).  ``cyc``: cycles since the
    thread's start (tree-program index)."""
    CYC_MAX = (1 << len(cyc)) - 1
    cnt = sig_u(len(last_n))
    got = sig_b()
    bus_bad = sig_b()
    closing = sig_b()
    pend = sig_u(3)

    @always_comb
    def comb():
        start.next = run and full and not busy and not hold
        closing.next = hit and cnt + 1 == last_n
        bad_pe.next = done and err
        bad_bus.next = done and bus_bad
        has.next = done or pend != 0

    @always_comb
    def comb2():
        nothing.next = walk_end and full and not got and not closing

    @always_seq(clk.posedge, reset=rst)
    def seq():
        if not run:
            full.next = False
            got.next = False
            cnt.next = 0
            bus_bad.next = False
        else:
            if berr:
                bus_bad.next = True
            if start:
                full.next = False
                bus_bad.next = berr
            if walk_go:
                got.next = False
                cnt.next = 0
            elif closing:
                full.next = True
                got.next = True
                cnt.next = 0
            elif hit:
                cnt.next = cnt + 1
            if walk_end and not got and not closing and not full:
                full.next = True
        if cmd_clr:
            pend.next = 0
        elif done and not all_dec:
            pend.next = pend + 1
        elif all_dec and not done:
            pend.next = pend - 1
        # cyc == k+5 in the cycle in which slot k's outputs are valid (the cycle numbering
        # of tablac.machine / the tree program): 0 in the cycle after the start edge,
        # saturating (the tree program reads 0 beyond its depth)
        if start:
            cyc.next = 0
        elif cyc != CYC_MAX:
            cyc.next = cyc + 1

    return comb, comb2, seq


@block
def and_link(prev, x, out):
    @always_comb
    def c():
        out.next = prev and x
    return c


# ---------------------------------------------------------------------- top
def build(p):
    G0 = geometry(p)
    cfg = G0["cfg"]
    W, F, C, N, T, P, RPT, D = p["W"], p["F"], G0["C"], G0["N"], G0["T"], G0["P"], \
        G0["RPT"], G0["D"]
    ROWS = p["ROWS"]
    DD, MD, ID, SD = p["DATA_DEPTH"], p["MODEL_DEPTH"], p["INTERIM_DEPTH"], p["SCHED_DEPTH"]
    AGD = p["AGG_DEPTH"]
    TD = G0["TREE_DEPTH"]
    TRW = G0["TRW"]
    IW = G0["IW"]
    lay = {n: (lsb + w, lsb) for n, lsb, w in cfg.layout()}
    pe_ports = {pt.name: pt for pt in m_pe.ports_of(pe_params(p))}
    LDA = pe_ports["ld_addr"].width
    LDW = pe_ports["ld_data"].width
    LENW = pe_ports["cfg_len"].width
    RBA = pe_ports["rb_addr"].width
    PEW = clog2(N)
    PW = clog2(P)
    MAW = clog2(MD)
    AGW = 31
    ATW = clog2(AGD)
    TW = clog2(TD)
    TIW = clog2(T)
    LT = log2(T)
    LEN_LIM = 1 << LENW
    LC = log2(C)
    SUMW = W + LT + 1
    msu_fn = _inner(m_msu.build(msu_params(p))[0])
    pe_fn = _inner(m_pe.build(pe_params(p))[0])
    msu_ports = m_msu.ports_of(msu_params(p))
    msw = {pt.name: pt.width for pt in msu_ports}
    G = dict(C=C, W=W, P=P, DD=DD, MD=MD, N=N)
    # legality ROMs for the microcode check
    NLM = tuple(1 if any(c == OPS[n] and not (p["NL"] >> b) & 1 for n, b in NL_OPS.items())
                else 0 for c in range(16))
    BIN = tuple(1 if 1 <= c <= 8 else 0 for c in range(16))
    DEP = (0, DD, MD, ID)
    SHAPE = (ROWS & 0xFF) | (C << 8) | (T << 16) | (RPT << 24)

    @block
    def cosmic_accelerator(
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
            busy, irq):
        insts = []
        # ------------------------------------------------ memory schedule unit
        mi = {n: (sig_b() if w == 1 else sig_u(w)) for n, w in msw.items()
              if n.startswith("s_axil_") or n.startswith("m_axis_pe") or n.startswith("s_axis_pe")
              or n == "busy"}
        insts.append(msu_fn(
            clk, rst,
            mi["s_axil_awaddr"], mi["s_axil_awvalid"], mi["s_axil_awready"],
            mi["s_axil_wdata"], mi["s_axil_wstrb"], mi["s_axil_wvalid"], mi["s_axil_wready"],
            mi["s_axil_bresp"], mi["s_axil_bvalid"], mi["s_axil_bready"],
            mi["s_axil_araddr"], mi["s_axil_arvalid"], mi["s_axil_arready"],
            mi["s_axil_rdata"], mi["s_axil_rresp"], mi["s_axil_rvalid"], mi["s_axil_rready"],
            m_axi_arid, m_axi_araddr, m_axi_arlen, m_axi_arsize, m_axi_arburst, m_axi_arvalid,
            m_axi_arready,
            m_axi_rid, m_axi_rdata, m_axi_rresp, m_axi_rlast, m_axi_rvalid, m_axi_rready,
            m_axi_awid, m_axi_awaddr, m_axi_awlen, m_axi_awsize, m_axi_awburst, m_axi_awvalid,
            m_axi_awready,
            m_axi_wdata, m_axi_wstrb, m_axi_wlast, m_axi_wvalid, m_axi_wready,
            m_axi_bid, m_axi_bresp, m_axi_bvalid, m_axi_bready,
            mi["m_axis_pe_tdata"], mi["m_axis_pe_tkeep"], mi["m_axis_pe_tdest"],
            mi["m_axis_pe_tlast"], mi["m_axis_pe_tvalid"], mi["m_axis_pe_tready"],
            mi["s_axis_pe_tdata"], mi["s_axis_pe_tid"], mi["s_axis_pe_tvalid"],
            mi["s_axis_pe_tready"], mi["busy"]))
        # internal AXI4-Lite master towards the unit
        i_awaddr = sig_u(12)
        i_wdata = sig_u(32)
        i_awvalid = sig_b()
        i_arvalid = sig_b()
        msu_busy = mi["busy"]
        msu_s_axil_awaddr, msu_s_axil_awvalid, msu_s_axil_awready = (
            mi["s_axil_awaddr"], mi["s_axil_awvalid"], mi["s_axil_awready"])
        msu_s_axil_wdata, msu_s_axil_wstrb, msu_s_axil_wvalid, msu_s_axil_wready = (
            mi["s_axil_wdata"], mi["s_axil_wstrb"], mi["s_axil_wvalid"], mi["s_axil_wready"])
        msu_s_axil_bresp, msu_s_axil_bvalid, msu_s_axil_bready = (
            mi["s_axil_bresp"], mi["s_axil_bvalid"], mi["s_axil_bready"])
        msu_s_axil_araddr, msu_s_axil_arvalid, msu_s_axil_arready = (
            mi["s_axil_araddr"], mi["s_axil_arvalid"], mi["s_axil_arready"])
        msu_s_axil_rdata, msu_s_axil_rresp, msu_s_axil_rvalid, msu_s_axil_rready = (
            mi["s_axil_rdata"], mi["s_axil_rresp"], mi["s_axil_rvalid"], mi["s_axil_rready"])
        msu_m_axis_pe_tdata, msu_m_axis_pe_tkeep, msu_m_axis_pe_tdest = (
            mi["m_axis_pe_tdata"], mi["m_axis_pe_tkeep"], mi["m_axis_pe_tdest"])
        msu_m_axis_pe_tlast, msu_m_axis_pe_tvalid, msu_m_axis_pe_tready = (
            mi["m_axis_pe_tlast"], mi["m_axis_pe_tvalid"], mi["m_axis_pe_tready"])
        msu_s_axis_pe_tdata, msu_s_axis_pe_tid, msu_s_axis_pe_tvalid, msu_s_axis_pe_tready = (
            mi["s_axis_pe_tdata"], mi["s_axis_pe_tid"], mi["s_axis_pe_tvalid"],
            mi["s_axis_pe_tready"])

        acc_tready = sig_b()    # m_axis_pe_tready: low while a complete sample waits
        dlv_on = sig_b()        # deliveries are written into the PEs (not while draining)

        @always_comb
        def msu_axil():
            msu_s_axil_awaddr.next = i_awaddr
            msu_s_axil_awvalid.next = i_awvalid
            msu_s_axil_wdata.next = i_wdata
            msu_s_axil_wstrb.next = 15
            msu_s_axil_wvalid.next = i_awvalid
            msu_s_axil_bready.next = True
            msu_s_axil_araddr.next = i_awaddr
            msu_s_axil_arvalid.next = i_arvalid
            msu_s_axil_rready.next = True
            msu_m_axis_pe_tready.next = acc_tready
            msu_s_axis_pe_tdata.next = 0
            msu_s_axis_pe_tid.next = 0
            msu_s_axis_pe_tvalid.next = False
        insts.append(msu_axil)

        # ------------------------------------------------ delivered beat (registered)
        bt_valid = sig_b()
        bt_data = sig_u(C * W)
        bt_lv = sig_u(C)
        bt_dest = sig_u(PEW)
        bt_last = sig_b()
        lv_c = sig_u(C)
        kb = [sig_b() for _ in range(C)]
        for i in range(C):
            insts.append(bit_of(msu_m_axis_pe_tkeep, i * (W // 8), kb[i]))
        lv_cat = ConcatSignal(*reversed(kb))

        @always_comb
        def lvc():
            lv_c.next = lv_cat
        insts.append(lvc)

        @always_seq(clk.posedge, reset=rst)
        def beat():
            bt_valid.next = msu_m_axis_pe_tvalid and acc_tready and dlv_on
            bt_data.next = msu_m_axis_pe_tdata
            bt_lv.next = lv_c
            bt_dest.next = msu_m_axis_pe_tdest
            bt_last.next = msu_m_axis_pe_tlast
        insts.append(beat)

        # ------------------------------------------------ controller registers
        dsel = sig_u(2)
        dptr_clr = sig_b()
        derr_clr = sig_b()
        h_ld = sig_b()
        h_pe = sig_u(PW)
        h_sel = sig_u(3)
        h_addr = sig_u(16)
        h_data = sig_u(64)
        a_we = sig_b()
        a_pe = sig_u(PW)
        a_addr = sig_u(RBA)
        a_data = sig_u(W)
        # per thread: start, cycles since start, the first PE's busy/done
        thr_start = [sig_b() for _ in range(T)]
        thr_cyc = [sig_u(TW + 1) for _ in range(T)]
        prog_len = sig_u(LENW)
        rb_sel = sig_u(2)
        rb_addr = sig_u(RBA)

        # ------------------------------------------------ PEs
        pe_sig = []
        for g in range(N):
            s = dict(ld_en=sig_b(), ld_sel=sig_u(2), ld_addr=sig_u(LDA), ld_data=sig_u(LDW),
                     busy=sig_b(), done=sig_b(), err=sig_u(3), rb_data=sig_u(W),
                     left_in=sig_u(W), right_in=sig_u(W), bus_in=sig_u(W),
                     left_out=sig_u(W), left_out_valid=sig_b(), right_out=sig_u(W),
                     right_out_valid=sig_b(), bus_out=sig_u(W), bus_out_valid=sig_b(),
                     d_err=sig_b(), shifted=sig_u(C * W), lvs=sig_u(C))
            pe_sig.append(s)
        zero_w = sig_u(W)
        zero_b = sig_b()
        unused = []
        thr_busy = [pe_sig[t * P]["busy"] for t in range(T)]
        thr_done = [pe_sig[t * P]["done"] for t in range(T)]
        for g in range(N):
            s = pe_sig[g]
            c = g % C
            left = pe_sig[g - 1]["right_out"] if c > 0 else zero_w
            right = pe_sig[g + 1]["left_out"] if c < C - 1 else zero_w
            insts.append(pe_fn(clk, rst, thr_start[g // P], prog_len, s["busy"], s["done"], s["err"],
                               s["ld_en"], s["ld_sel"], s["ld_addr"], s["ld_data"],
                               rb_sel, rb_addr, s["rb_data"], left, right, s["bus_in"],
                               s["left_out"], s["left_out_valid"], s["right_out"],
                               s["right_out_valid"], s["bus_out"], s["bus_out_valid"]))
            insts.append(pe_glue(clk, rst, g, G, bt_valid, bt_data, bt_lv, bt_dest, dsel,
                                 dptr_clr, derr_clr, s["d_err"], h_ld, h_pe, h_sel, h_addr, h_data,
                                 a_we, a_pe, a_addr, a_data,
                                 s["ld_en"], s["ld_sel"], s["ld_addr"], s["ld_data"],
                                 s["shifted"], s["lvs"]))
            unused += [s["shifted"], s["lvs"], s["busy"], s["left_out_valid"],
                       s["right_out_valid"], s["bus_out_valid"]]
            if g % P:
                unused.append(s["done"])
            if c == 0:
                unused.append(s["left_out"])
            if c == C - 1:
                unused.append(s["right_out"])

        # error chains: per thread its PEs' err bits; delivery overflows of all PEs
        thr_err = []
        e_firsts = []
        for t in range(T):
            e_prev = sig_b()
            e_firsts.append(e_prev)
            for g in range(t * P, (t + 1) * P):
                e_nxt = sig_b()
                insts.append(err_link(e_prev, pe_sig[g]["err"], zero_b, e_nxt))
                e_prev = e_nxt
            thr_err.append(e_prev)
        d_prev = sig_b()
        d_first = d_prev
        for g in range(N):
            d_nxt = sig_b()
            insts.append(err_link(d_prev, zero_w, pe_sig[g]["d_err"], d_nxt))
            d_prev = d_nxt
        d_err_any = d_prev

        # host read-back chain (physical PE rb_pe)
        rb_pe = sig_u(PEW)
        r_prev = sig_u(W)
        r_first = r_prev
        for g in range(N):
            en = sig_b()
            r_nxt = sig_u(W)
            insts.append(eq_const(rb_pe, g, en))
            insts.append(or_link(r_prev, pe_sig[g]["rb_data"], en, r_nxt))
            r_prev = r_nxt
        rb_value = r_prev

        # aggregation: per thread the rb_data of PE a_sel, summed over the threads
        agg_pe_c = sig_u(PW)
        s_prev = sig_s(SUMW)
        s_first = s_prev
        for t in range(T):
            tv = sig_u(W)
            tv0 = tv
            for q in range(P):
                g = t * P + q
                en = sig_b()
                nx = sig_u(W)
                insts.append(eq_const(agg_pe_c, q, en))
                insts.append(or_link(tv, pe_sig[g]["rb_data"], en, nx))
                tv = nx
            s_nxt = sig_s(SUMW)
            insts.append(add_link(s_prev, tv, s_nxt))
            s_prev = s_nxt
        agg_sum = s_prev
        agg_avg = sig_u(W)
        agg_sum_op = sig_b()
        agg_sat = sig_s(W)
        insts.append(sat(agg_sum, agg_sat))
        agg_res = sig_u(W)

        @always_comb
        def aggres():
            if agg_sum_op:
                agg_res.next = agg_sat[W:]
            else:
                agg_res.next = agg_avg
        insts.append(aggres)
        HALF = T // 2

        sum2 = sig_s(SUMW)

        @always_comb
        def avgc():
            sum2.next = (agg_sum + HALF) >> LT

        sum2_hi = sig_u(SUMW - W)

        @always_comb
        def avgc2():
            agg_avg.next = sum2[W:]
            sum2_hi.next = sum2[SUMW:W]
        insts.append(avgc2)
        insts.append(avgc)

        # ------------------------------------------------ row buses and tree buses
        tree_ram = [sig_u(TRW) for _ in range(TD)]
        row_err = []
        row_any, row_val = [], []
        row_twe, row_tval = [], []
        for r in range(ROWS):
            pa, pv, pd = sig_b(), sig_u(W), sig_b()
            pa0, pv0, pd0 = pa, pv, pd
            for c in range(C):
                s = pe_sig[r * C + c]
                na, nv, nd = sig_b(), sig_u(W), sig_b()
                insts.append(bus_link(pa, pv, pd, s["bus_out_valid"], s["bus_out"], na, nv, nd))
                pa, pv, pd = na, nv, nd
            busreg = sig_u(W)
            er = sig_b()
            twe, tval = sig_b(), sig_u(W)
            insts.append(row_bus(clk, rst, pa, pv, pd, twe, tval, thr_start[r // RPT], busreg,
                                 er))
            for c in range(C):
                insts.append(copy_sig(busreg, pe_sig[r * C + c]["bus_in"]))
            row_err.append(er)
            row_any.append(pa)
            row_val.append(pv)
            row_twe.append(twe)
            row_tval.append(tval)
        # tree word: per destination row q, bits [q*(2+RPT) +: 2] op (0 none, 1 pass, 2 add,
        # 3 mul) and the next RPT bits its source rows
        # each thread reads the shared tree program at its own cycle count
        FW = 2 + RPT
        miss_lists = []
        for t in range(T):
            tword = sig_u(TRW)
            insts.append(tree_rd(tree_ram, thr_cyc[t], thr_busy[t], tword, TD))
            dst_ops, dst_srcs = [], []
            for q in range(RPT):
                o_, s_ = sig_u(2), sig_u(RPT)
                insts.append(slice_of(tword, q * FW, o_))
                insts.append(slice_of(tword, q * FW + 2, s_))
                dst_ops.append(o_)
                dst_srcs.append(s_)
            miss_list = []
            miss_lists.append(miss_list)
            for q in range(RPT):
                pv_, px_ = sig_b(), sig_u(W)
                for q2 in range(RPT):
                    r2 = t * RPT + q2
                    sb = sig_b()
                    insts.append(bit_of(dst_srcs[q], q2, sb))
                    nv, nx, ms = sig_b(), sig_u(W), sig_b()
                    insts.append(fold_link(dst_ops[q], sb, pv_, px_, row_any[r2], row_val[r2],
                                           nv, nx, ms, F))
                    miss_list.append(ms)
                    pv_, px_ = nv, nx
                vv = sig_b()
                insts.append(and_nz(pv_, dst_ops[q], vv))
                sv, sx = vv, px_
                for k in range(D):
                    nv, nx = sig_b(), sig_u(W)
                    insts.append(tree_stage(clk, rst, sv, sx, nv, nx))
                    sv, sx = nv, nx
                r = t * RPT + q
                insts.append(copy_sig(sv, row_twe[r]))
                insts.append(copy_sig(sx, row_tval[r]))
        # bus error per thread: a row error of its rows or a tree source without a writer
        # (op != 0)
        thr_berr = []
        b_firsts = []
        for t in range(T):
            b_prev = sig_b()
            b_firsts.append(b_prev)
            for er in row_err[t * RPT:(t + 1) * RPT] + miss_lists[t]:
                nb = sig_b()
                insts.append(err_link(b_prev, zero_w, er, nb))
                b_prev = nb
            thr_berr.append(b_prev)

        # ------------------------------------------------ tables (host written)
        agg_tab = [sig_u(AGW) for _ in range(AGD)]
        sv_mem = [sig_u(32) for _ in range(T)]
        sv_we = sig_b()
        sv_idx = sig_u(TIW)
        sv_data = sig_u(32)
        ai = sig_u(ATW + 1)
        t_idx = sig_u(TIW + 1)
        agg_entry = sig_u(AGW)
        sv_out = sig_u(32)

        @always(clk.posedge)
        def agg_w():
            if h_ld and h_sel == 4:
                agg_tab[h_addr[ATW:]].next = h_data[AGW:]

        @always(clk.posedge)
        def tree_w():
            if h_ld and h_sel == 5:
                tree_ram[h_addr[TW:]].next = h_data[TRW:]

        @always(clk.posedge)
        def sv_w():
            if sv_we:
                sv_mem[sv_idx].next = sv_data

        @always_comb
        def tabr():
            agg_entry.next = agg_tab[ai[ATW:]]
            sv_out.next = sv_mem[t_idx[TIW:]]
        insts += [agg_w, tree_w, sv_w, tabr]

        NTI = 1 << (TIW + 1)
        TBL_MEM = tuple(0x100 + 8 * (t % T) for t in range(NTI))
        TBL_OFF = tuple(0x104 + 8 * (t % T) for t in range(NTI))
        TBL_EXP = tuple((t % T) * P for t in range(NTI))
        tbl_mem_a = sig_u(12)
        tbl_off_a = sig_u(12)
        tbl_off_exp = sig_u(32)

        @always_comb
        def tbl_a():
            tbl_mem_a.next = TBL_MEM[t_idx]

        @always_comb
        def tbl_b():
            tbl_off_a.next = TBL_OFF[t_idx]

        @always_comb
        def tbl_c():
            tbl_off_exp.next = TBL_EXP[t_idx]
        insts += [tbl_a, tbl_b, tbl_c]

        @always_comb
        def aggdec():
            agg_pe_c.next = agg_entry[16 + PW:16]
            agg_sum_op.next = agg_entry[30]
        insts.append(aggdec)

        # ------------------------------------------------ host interface + controller
        awready = sig_b()
        bvalid_r = sig_b()
        arready = sig_b()
        rvalid_r = sig_b()
        rdata_r = sig_u(32)
        hwait = sig_b()         # host write/read waiting for an internal MSU access
        hwait_rd = sig_b()
        ist = sig_u(3)
        idone = sig_b()
        irdata = sig_u(32)
        cs = sig_u(4)
        cmd = sig_u(4)
        running = sig_b()
        done_f = sig_b()
        err_f = sig_b()
        err_code = sig_u(4)
        msu_code = sig_u(4)
        err_info = sig_u(32)
        samples = sig_u(32)
        rounds = sig_u(32)
        agg_len = sig_u(ATW + 1)
        cycles = sig_u(32)
        sample_cnt = sig_u(32)
        round_cnt = sig_u(32)
        compute_cyc = sig_u(32)
        load_cyc = sig_u(32)
        agg_cyc = sig_u(32)
        ld_pe = sig_u(16)
        ld_sel = sig_u(3)
        ld_addr = sig_u(16)
        ld_hi = sig_u(32)
        rb_pe_r = sig_u(16)
        rb_sel_r = sig_u(2)
        rb_addr_r = sig_u(16)
        agg_mode = sig_b()
        agg_addr_r = sig_u(RBA)
        pe_wait_ok = sig_b()
        # TRAIN run (S_RUN): unit STARTs of this round, a START in flight, a unit walk
        # running, the code of an aborted run, the unit's queue length (transfers per
        # thread and walk)
        walks = sig_u(32)
        st_pend = sig_b()
        walk_act = sig_b()
        ab_code = sig_u(4)
        fin_err = sig_b()
        qn = sig_u(log2(p["QDEPTH"]) + 1)
        run_c = sig_b()
        walk_end = sig_b()
        pe_hold = sig_b()
        bt_lastv = sig_b()
        # per thread (thread_ctl) and their or/and chains
        th = {k: [sig_b() for _ in range(T)] for k in (
            "hit", "blk", "full", "nothing", "bad_pe", "bad_bus", "has")}
        ch = {}
        for k in ("blk", "full", "nothing", "bad_pe", "bad_bus", "busy"):
            prev = sig_b()
            ch[k + "_first"] = prev
            src = thr_busy if k == "busy" else th[k]
            for t in range(T):
                nx = sig_b()
                insts.append(err_link(prev, zero_b, src[t], nx))
                prev = nx
            ch[k] = prev
        all_dec = sig_b()
        a_prev = th["has"][0]
        for t in range(1, T):
            nx = sig_b()
            insts.append(and_link(a_prev, th["has"][t], nx))
            a_prev = nx

        @always_comb
        def alldec():
            all_dec.next = a_prev
        insts.append(alldec)
        busy_any, full_any, blk_any = ch["busy"], ch["full"], ch["blk"]
        nothing_any, bad_pe_any, bad_bus_any = ch["nothing"], ch["bad_pe"], ch["bad_bus"]
        for t in range(T):
            insts.append(in_range(bt_lastv, bt_dest, t * P, (t + 1) * P, th["hit"][t]))
            insts.append(in_range(th["full"][t], msu_m_axis_pe_tdest, t * P, (t + 1) * P,
                                  th["blk"][t]))
            insts.append(thread_ctl(clk, rst, run_c, derr_clr, th["hit"][t], qn, dptr_clr,
                                    walk_end, thr_busy[t], thr_done[t], thr_err[t], thr_berr[t],
                                    pe_hold, all_dec, th["full"][t], thr_start[t],
                                    th["nothing"][t], th["bad_pe"][t], th["bad_bus"][t],
                                    th["has"][t], thr_cyc[t]))

        @always_comb
        def lastv():
            bt_lastv.next = bt_valid and bt_last
        insts.append(lastv)

        @always_comb
        def runc():
            # no start in the done cycle of a sample with an error (the run is aborted
            # there), nor after a delivery overflow
            pe_hold.next = bad_pe_any or bad_bus_any or d_err_any
            # a beat for a thread whose complete sample waits is held back
            acc_tready.next = not (cs == S_RUN and blk_any)
            dlv_on.next = cs != S_DRAIN
            run_c.next = cs == S_RUN
            walk_end.next = cs == S_RUN and walk_act and not msu_busy
        # microcode / load legality (combinational on the LD_LO write)
        mc = sig_u(IW)
        lchk = sig_u(4)
        aw_go = sig_b()
        ar_go = sig_b()
        waddr = sig_u(13)
        raddr = sig_u(13)
        ldepth = sig_u(16)
        status = sig_u(32)
        OPH, OPL = lay["op"]
        SAH, SAL = lay["src_a"]
        SBH, SBL = lay["src_b"]
        RDH, RDL = lay["ra_d"]
        RMH, RML = lay["ra_m"]
        RIH, RIL = lay["ra_i"]
        WBH, WBL = lay["wb"]
        WAH, WAL = lay["wa"]
        OUH, OUL = lay["out"]
        col = sig_u(LC)
        nlm_c = sig_b()
        bin_c = sig_b()
        op_c = sig_u(4)
        sa_c = sig_u(3)
        sb_c = sig_u(3)
        wb_c = sig_u(2)
        ou_c = sig_u(3)
        rd_c = sig_u(RDH - RDL)
        rm_c = sig_u(RMH - RML)
        ri_c = sig_u(RIH - RIL)
        wa_c = sig_u(WAH - WAL)
        rd_ge, rm_ge, ri_ge = sig_b(), sig_b(), sig_b()
        wd_ge, wm_ge, wi_ge = sig_b(), sig_b(), sig_b()
        for x_, k_, y_ in ((rd_c, DD, rd_ge), (rm_c, MD, rm_ge), (ri_c, ID, ri_ge),
                           (wa_c, DD, wd_ge), (wa_c, MD, wm_ge), (wa_c, ID, wi_ge)):
            if k_ < (1 << len(x_)):
                insts.append(ge_const(x_, k_, y_))

        r32 = {}
        for nm_, sg_ in (("prog_len", prog_len), ("ld_sel", ld_sel), ("agg_len", agg_len),
                         ("ld_pe", ld_pe), ("ld_addr", ld_addr), ("rb_pe_r", rb_pe_r),
                         ("rb_sel_r", rb_sel_r), ("rb_addr_r", rb_addr_r)):
            r32[nm_] = sig_u(32)
            insts.append(fit(sg_, r32[nm_]))
        prog_len_32, ld_sel_32, agg_len_32, ld_pe_32 = (r32[k] for k in (
            "prog_len", "ld_sel", "agg_len", "ld_pe"))
        ld_addr_32, rb_pe_r_32, rb_sel_r_32, rb_addr_r_32 = (r32[k] for k in (
            "ld_addr", "rb_pe_r", "rb_sel_r", "rb_addr_r"))

        mc64 = sig_u(64)

        @always_comb
        def mcc64():
            mc64.next = concat(ld_hi, s_axil_wdata)

        @always_comb
        def mcc():
            mc.next = mc64[IW:]

        @always_comb
        def fields():
            op_c.next = mc[OPH:OPL]
            sa_c.next = mc[SAH:SAL]
            sb_c.next = mc[SBH:SBL]
            wb_c.next = mc[WBH:WBL]
            ou_c.next = mc[OUH:OUL]
            rd_c.next = mc[RDH:RDL]
            rm_c.next = mc[RMH:RML]
            ri_c.next = mc[RIH:RIL]
            wa_c.next = mc[WAH:WAL]
            col.next = ld_pe[LC:]

        @always_comb
        def roms():
            nlm_c.next = NLM[op_c]

        @always_comb
        def roms2():
            bin_c.next = BIN[op_c]


        @always_comb
        def depthc():
            if ld_sel == 0:
                ldepth.next = SD
            elif ld_sel == 1:
                ldepth.next = DD
            elif ld_sel == 2:
                ldepth.next = MD
            elif ld_sel == 3:
                ldepth.next = ID
            elif ld_sel == 4:
                ldepth.next = AGD
            elif ld_sel == 5:
                ldepth.next = TD
            else:
                ldepth.next = 0

        @always_comb
        def check():
            # code of the first violated rule of a load (0: legal)
            lchk.next = 0
            if ld_sel < 4 and ld_pe >= P:
                lchk.next = E_PE
            elif ld_addr >= ldepth:
                lchk.next = E_SLOT
            elif ld_sel == 4 and s_axil_wdata[30:16] >= P:
                lchk.next = E_PE
            elif ld_sel == 4 and s_axil_wdata[16:] >= MD:
                lchk.next = E_SLOT
            elif ld_sel == 0 and op_c != 0:
                if op_c >= 14 or nlm_c:
                    lchk.next = E_OP
                elif (sa_c == 0 and rd_ge) or (sa_c == 1 and rm_ge) or (sa_c == 2 and ri_ge):
                    lchk.next = E_SLOT
                elif bin_c and ((sb_c == 0 and rd_ge) or (sb_c == 1 and rm_ge) or
                                (sb_c == 2 and ri_ge)):
                    lchk.next = E_SLOT
                elif (wb_c == 1 and wd_ge) or (wb_c == 2 and wm_ge) or (wb_c == 3 and wi_ge):
                    lchk.next = E_SLOT
                elif col == 0 and (sa_c == 3 or (bin_c and sb_c == 3) or ou_c[0]):
                    lchk.next = E_LINK
                elif col == C - 1 and (sa_c == 4 or (bin_c and sb_c == 4) or ou_c[1]):
                    lchk.next = E_LINK

        @always_comb
        def hs():
            aw_go.next = s_axil_awvalid and s_axil_wvalid and not bvalid_r and not hwait and \
                not hwait_rd
            ar_go.next = s_axil_arvalid and not rvalid_r and not hwait and not hwait_rd and \
                not (s_axil_awvalid and s_axil_wvalid)
            waddr.next = s_axil_awaddr
            raddr.next = s_axil_araddr

        @always_comb
        def outs():
            s_axil_awready.next = aw_go
            s_axil_wready.next = aw_go
            s_axil_arready.next = ar_go
            s_axil_bvalid.next = bvalid_r
            s_axil_bresp.next = 0
            s_axil_rvalid.next = rvalid_r
            s_axil_rresp.next = 0
            s_axil_rdata.next = rdata_r
            busy.next = running
            irq.next = done_f or err_f
            status.next = concat(intbv(0)[16:], cs, msu_code, err_code, intbv(0)[1:], err_f,
                                 done_f, running)
            rb_pe.next = rb_pe_r[PEW:]
            if agg_mode:
                rb_sel.next = 2
                rb_addr.next = agg_addr_r
            else:
                rb_sel.next = rb_sel_r
                rb_addr.next = rb_addr_r[RBA:]
        insts += [mcc64, mcc, fields, roms, roms2, depthc, check, hs, outs, runc]

        @always_seq(clk.posedge, reset=rst)
        def main():
            h_ld.next = False
            a_we.next = False
            dptr_clr.next = False
            derr_clr.next = False
            sv_we.next = False
            idone.next = False
            # ---- internal AXI4-Lite master
            if ist == I_W:
                if msu_s_axil_awready:
                    i_awvalid.next = False
                    ist.next = I_B
            elif ist == I_B:
                if msu_s_axil_bvalid:
                    ist.next = I_IDLE
                    idone.next = True
            elif ist == I_AR:
                if msu_s_axil_arready:
                    i_arvalid.next = False
                    ist.next = I_R
            elif ist == I_R:
                if msu_s_axil_rvalid:
                    ist.next = I_IDLE
                    idone.next = True
                    irdata.next = msu_s_axil_rdata
            # ---- counters
            if running:
                cycles.next = cycles + 1
                if busy_any:
                    compute_cyc.next = compute_cyc + 1
                elif cs == S_AGG_A or cs == S_AGG_B or cs == S_AGG_C:
                    agg_cyc.next = agg_cyc + 1
                elif cs != S_RND_END:
                    load_cyc.next = load_cyc + 1
            # a sample counts when every thread has completed it
            if running and all_dec:
                sample_cnt.next = sample_cnt + 1
            # ---- host side: proxied MSU accesses complete
            if hwait and idone:
                hwait.next = False
                bvalid_r.next = True
            if hwait_rd and idone:
                hwait_rd.next = False
                rvalid_r.next = True
                rdata_r.next = irdata
            if bvalid_r and s_axil_bready:
                bvalid_r.next = False
            if rvalid_r and s_axil_rready:
                rvalid_r.next = False
            # ---- host write
            if aw_go:
                if s_axil_wstrb != 15:
                    bvalid_r.next = True
                    err_f.next = True
                    err_code.next = E_REG
                elif waddr < MSU_WINDOW:
                    if running:
                        bvalid_r.next = True
                        err_f.next = True
                        err_code.next = E_BUSY
                    elif waddr[12:] == 0 and s_axil_wdata[0]:
                        bvalid_r.next = True
                        err_f.next = True
                        err_code.next = E_REG
                    else:
                        hwait.next = True
                        ist.next = I_W
                        i_awvalid.next = True
                        i_awaddr.next = waddr[12:]
                        i_wdata.next = s_axil_wdata
                else:
                    bvalid_r.next = True
                    if waddr[12:] == R_CTRL:
                        if s_axil_wdata[2]:
                            err_f.next = False
                            err_code.next = 0
                            msu_code.next = 0
                            err_info.next = 0
                        if s_axil_wdata[0] or s_axil_wdata[1] or s_axil_wdata[3]:
                            if running or (err_f and not s_axil_wdata[2]):
                                err_f.next = True
                                err_code.next = E_BUSY
                            elif prog_len == 0 or prog_len > SD or agg_len > AGD or \
                                    (s_axil_wdata[1] and (samples == 0 or rounds == 0)):
                                err_f.next = True
                                err_code.next = E_SLOT
                                err_info.next = 0xFFFF
                            else:
                                running.next = True
                                done_f.next = False
                                cmd.next = s_axil_wdata[4:]
                                cs.next = S_CHK
                                cycles.next = 0
                                derr_clr.next = True
                                sample_cnt.next = 0
                                round_cnt.next = 0
                                compute_cyc.next = 0
                                load_cyc.next = 0
                                agg_cyc.next = 0
                                t_idx.next = 0
                                ai.next = 0
                    elif running:
                        err_f.next = True
                        err_code.next = E_BUSY
                    elif waddr[12:] == R_PROG_LEN:
                        prog_len.next = s_axil_wdata[LENW:]
                        if s_axil_wdata >= LEN_LIM:
                            prog_len.next = 0
                    elif waddr[12:] == R_SAMPLES:
                        samples.next = s_axil_wdata
                    elif waddr[12:] == R_ROUNDS:
                        rounds.next = s_axil_wdata
                    elif waddr[12:] == R_AGG_LEN:
                        if s_axil_wdata > AGD:
                            err_f.next = True
                            err_code.next = E_SLOT
                        else:
                            agg_len.next = s_axil_wdata[ATW + 1:]
                    elif waddr[12:] == R_LD_PE:
                        ld_pe.next = s_axil_wdata[16:]
                    elif waddr[12:] == R_LD_SEL:
                        ld_sel.next = s_axil_wdata[3:]
                        if s_axil_wdata > 5:
                            ld_sel.next = 7
                    elif waddr[12:] == R_LD_ADDR:
                        ld_addr.next = s_axil_wdata[16:]
                        if s_axil_wdata >= 0x10000:
                            ld_addr.next = 0xFFFF
                    elif waddr[12:] == R_LD_HI:
                        ld_hi.next = s_axil_wdata
                    elif waddr[12:] == R_LD_LO:
                        if lchk != 0:
                            err_f.next = True
                            err_code.next = lchk
                            err_info.next = concat(ld_sel[3:], ld_pe[13:], ld_addr)
                        elif ld_sel > 5:
                            err_f.next = True
                            err_code.next = E_SLOT
                            err_info.next = concat(ld_sel[3:], ld_pe[13:], ld_addr)
                        else:
                            h_ld.next = True
                            h_pe.next = ld_pe[PW:]
                            h_sel.next = ld_sel
                            h_addr.next = ld_addr
                            h_data.next = concat(ld_hi, s_axil_wdata)
                            ld_addr.next = ld_addr + 1
                    elif waddr[12:] == R_RB_PE:
                        rb_pe_r.next = s_axil_wdata[16:]
                    elif waddr[12:] == R_RB_SEL:
                        rb_sel_r.next = s_axil_wdata[2:]
                    elif waddr[12:] == R_RB_ADDR:
                        rb_addr_r.next = s_axil_wdata[16:]
                    else:
                        err_f.next = True
                        err_code.next = E_REG
            # ---- host read
            if ar_go:
                if raddr < MSU_WINDOW:
                    if running:
                        rvalid_r.next = True
                        rdata_r.next = 0
                    else:
                        hwait_rd.next = True
                        ist.next = I_AR
                        i_arvalid.next = True
                        i_awaddr.next = raddr[12:]
                else:
                    rvalid_r.next = True
                    rdata_r.next = 0
                    if raddr[12:] == R_STATUS:
                        rdata_r.next = status
                    elif raddr[12:] == R_PROG_LEN:
                        rdata_r.next = prog_len_32
                    elif raddr[12:] == R_SAMPLES:
                        rdata_r.next = samples
                    elif raddr[12:] == R_ROUNDS:
                        rdata_r.next = rounds
                    elif raddr[12:] == R_AGG_LEN:
                        rdata_r.next = agg_len_32
                    elif raddr[12:] == R_CYCLES:
                        rdata_r.next = cycles
                    elif raddr[12:] == R_SAMPLE_CNT:
                        rdata_r.next = sample_cnt
                    elif raddr[12:] == R_ROUND_CNT:
                        rdata_r.next = round_cnt
                    elif raddr[12:] == R_LD_PE:
                        rdata_r.next = ld_pe_32
                    elif raddr[12:] == R_LD_SEL:
                        rdata_r.next = ld_sel_32
                    elif raddr[12:] == R_LD_ADDR:
                        rdata_r.next = ld_addr_32
                    elif raddr[12:] == R_LD_HI:
                        rdata_r.next = ld_hi
                    elif raddr[12:] == R_RB_PE:
                        rdata_r.next = rb_pe_r_32
                    elif raddr[12:] == R_RB_SEL:
                        rdata_r.next = rb_sel_r_32
                    elif raddr[12:] == R_RB_ADDR:
                        rdata_r.next = rb_addr_r_32
                    elif raddr[12:] == R_RB_DATA:
                        rdata_r.next = rb_value
                    elif raddr[12:] == R_ERR_INFO:
                        rdata_r.next = err_info
                    elif raddr[12:] == R_SHAPE:
                        rdata_r.next = SHAPE
                    elif raddr[12:] == R_COMPUTE_CYC:
                        rdata_r.next = compute_cyc
                    elif raddr[12:] == R_LOAD_CYC:
                        rdata_r.next = load_cyc
                    elif raddr[12:] == R_AGG_CYC:
                        rdata_r.next = agg_cyc
            # ---- controller
            if running:
                if cs == S_CHK:
                    # the unit's STATUS: a sticky error (e.g. a queue overflow) aborts
                    if ist == I_IDLE and not idone and not pe_wait_ok:
                        ist.next = I_AR
                        i_arvalid.next = True
                        i_awaddr.next = 0x004
                        pe_wait_ok.next = True
                    elif idone:
                        pe_wait_ok.next = False
                        if irdata[2]:
                            running.next = False
                            cs.next = S_IDLE
                            err_f.next = True
                            err_code.next = E_MSU
                            msu_code.next = irdata[8:4]
                        elif irdata[3] and (cmd[0] or cmd[1]):
                            running.next = False
                            cs.next = S_IDLE
                            err_f.next = True
                            err_code.next = E_WRENT
                        elif cmd[1]:
                            # the queue length (STATUS.QCOUNT): transfers per thread and walk
                            qn.next = irdata[16 + len(qn):16]
                            cs.next = S_TBL_MEM
                            t_idx.next = 0
                        elif cmd[0]:
                            dsel.next = 2
                            cs.next = S_MSU_GO
                        else:
                            cs.next = S_AGG_A
                            ai.next = 0
                elif cs == S_TBL_MEM or cs == S_TBL_OFF:
                    if ist == I_IDLE and not idone and not pe_wait_ok:
                        ist.next = I_AR
                        i_arvalid.next = True
                        if cs == S_TBL_MEM:
                            i_awaddr.next = tbl_mem_a
                        else:
                            i_awaddr.next = tbl_off_a
                        pe_wait_ok.next = True
                    elif idone:
                        pe_wait_ok.next = False
                        if cs == S_TBL_MEM:
                            sv_we.next = True
                            sv_idx.next = t_idx[TIW:]
                            sv_data.next = irdata
                            cs.next = S_TBL_OFF
                        elif irdata != tbl_off_exp:
                            running.next = False
                            cs.next = S_IDLE
                            err_f.next = True
                            err_code.next = E_TABLE
                            err_info.next = irdata
                        elif t_idx == T - 1:
                            t_idx.next = 0
                            dsel.next = 1
                            cs.next = S_ROUND
                        else:
                            t_idx.next = t_idx + 1
                            cs.next = S_TBL_MEM
                elif cs == S_ROUND:
                    # restore every thread's Mem Addr: each round reads the same region
                    if ist == I_IDLE and not idone and not pe_wait_ok:
                        ist.next = I_W
                        i_awvalid.next = True
                        i_awaddr.next = tbl_mem_a
                        i_wdata.next = sv_out
                        pe_wait_ok.next = True
                    elif idone:
                        pe_wait_ok.next = False
                        if t_idx == T - 1:
                            t_idx.next = 0
                            cs.next = S_RUN
                            walks.next = 0
                            st_pend.next = False
                            walk_act.next = False
                            ab_code.next = 0
                        else:
                            t_idx.next = t_idx + 1
                elif cs == S_MSU_GO:
                    if ist == I_IDLE and not idone and not pe_wait_ok:
                        ist.next = I_W
                        i_awvalid.next = True
                        i_awaddr.next = 0x000
                        i_wdata.next = 1
                        dptr_clr.next = True
                        pe_wait_ok.next = True
                    elif idone:
                        pe_wait_ok.next = False
                        cs.next = S_POLL
                elif cs == S_POLL:
                    # the unit's busy output: high from the cycle after START's response
                    # until every beat is delivered; its STATUS is read once per command
                    # (S_FIN), so a run error is reported at the end of the command
                    if not msu_busy:
                        if d_err_any:
                            running.next = False
                            cs.next = S_IDLE
                            err_f.next = True
                            err_code.next = E_SLOT
                        else:
                            cs.next = S_FIN
                elif cs == S_FIN:
                    if ist == I_IDLE and not idone and not pe_wait_ok:
                        ist.next = I_AR
                        i_arvalid.next = True
                        i_awaddr.next = 0x004
                        pe_wait_ok.next = True
                    elif idone:
                        pe_wait_ok.next = False
                        fin_err.next = False
                        running.next = False
                        cs.next = S_IDLE
                        if irdata[2] or fin_err:
                            err_f.next = True
                            err_code.next = E_MSU
                            msu_code.next = irdata[8:4]
                        else:
                            done_f.next = True
                if d_err_any and (cs == S_POLL or cs == S_MSU_GO):
                    err_info.next = 0xFFFE
                if cs == S_RUN:
                    # TRAIN, one round: the unit is started once per sample as soon as its
                    # previous walk has ended, so the next sample streams into the PEs'
                    # shadow DATA banks while they compute (a beat for a thread whose
                    # complete sample waits is held back: m_axis_pe_tready low).  The
                    # threads run MIMD (thread_ctl): each starts when its own sample is
                    # complete and its PEs are idle -- in the done cycle of its previous
                    # sample when the data is there.
                    if ist == I_IDLE and not idone and not st_pend and not walk_act and \
                            not msu_busy and walks < samples:
                        ist.next = I_W
                        i_awvalid.next = True
                        i_awaddr.next = 0x000
                        i_wdata.next = 1
                        dptr_clr.next = True      # the previous walk has ended
                        st_pend.next = True
                        walks.next = walks + 1
                    if st_pend and idone:
                        st_pend.next = False
                        walk_act.next = True
                    if walk_end:
                        # the walk ended: every beat of the sample is in the PEs; a thread
                        # whose previous sample still waits got nothing from it (the unit
                        # skipped every transfer or refused START: its code is read by
                        # S_FIN)
                        walk_act.next = False
                    if d_err_any:
                        ab_code.next = E_SLOT
                        err_info.next = 0xFFFE
                        cs.next = S_DRAIN
                    elif bad_pe_any or bad_bus_any:
                        if bad_pe_any:
                            ab_code.next = E_PEERR
                        else:
                            ab_code.next = E_BUS
                        err_info.next = sample_cnt
                        cs.next = S_DRAIN
                    elif nothing_any:
                        ab_code.next = E_MSU
                        cs.next = S_DRAIN
                    elif walks >= samples and not walk_act and not st_pend and \
                            not full_any and not busy_any:
                        cs.next = S_DRAIN
                elif cs == S_DRAIN:
                    # end of a round or an aborted run: wait until the unit and the PEs
                    # are idle (beats of an aborted run are taken and dropped)
                    if st_pend and idone:
                        st_pend.next = False
                    if not msu_busy and ist == I_IDLE and not idone and not st_pend and \
                            not busy_any:
                        walk_act.next = False
                        ab_code.next = 0
                        if ab_code == 0:
                            cs.next = S_AGG_A
                            ai.next = 0
                        elif ab_code == E_MSU:
                            fin_err.next = True
                            cs.next = S_FIN
                        else:
                            running.next = False
                            cs.next = S_IDLE
                            err_f.next = True
                            err_code.next = ab_code
                elif cs == S_AGG_A:
                    if ai >= agg_len or T == 1:
                        agg_mode.next = False
                        if cmd[1]:
                            cs.next = S_RND_END
                        else:
                            running.next = False
                            done_f.next = True
                            cs.next = S_IDLE
                    else:
                        agg_mode.next = True
                        agg_addr_r.next = agg_entry[RBA:]
                        cs.next = S_AGG_B
                elif cs == S_AGG_B:
                    cs.next = S_AGG_C
                elif cs == S_AGG_C:
                    a_we.next = True
                    a_pe.next = agg_pe_c
                    a_addr.next = agg_addr_r
                    a_data.next = agg_res
                    ai.next = ai + 1
                    cs.next = S_AGG_A
                elif cs == S_RND_END:
                    round_cnt.next = round_cnt + 1
                    if round_cnt + 1 < rounds:
                        cs.next = S_ROUND
                        t_idx.next = 0
                    else:
                        cs.next = S_FIN
        insts.append(main)
        unused_msu = sig_u(7 + len(msu_m_axis_pe_tkeep))

        @always_comb
        def msu_obs():
            # named ports of the internal link (the protocol checker finds them by name)
            unused_msu.next = concat(msu_s_axis_pe_tready, msu_s_axil_wready, msu_s_axil_rresp,
                                     msu_s_axil_bresp, msu_m_axis_pe_tlast, msu_m_axis_pe_tkeep)
        insts.append(msu_obs)
        unused += [unused_msu, sum2_hi, mc, mc64, cmd, agg_entry,
                   rd_c, rm_c, ri_c,
                   wa_c, h_data, h_addr]
        unused_sink = ConcatSignal(*unused)
        unused_sig = sig_u(len(unused_sink))   # named *unused*: Verilator -Wall waives it

        @always_comb
        def sink():
            unused_sig.next = unused_sink
        insts.append(sink)
        return insts

    ports = ports_of(p)
    return make_factory(cosmic_accelerator, ports), ports


@block
def zero1(s):
    """Drive a chain head with 0."""
    @always_comb
    def z():
        s.next = 0
    return z


@block
def copy_sig(a, b):
    @always_comb
    def c():
        b.next = a
    return c


@block
def and2(a, b, y):
    @always_comb
    def c():
        y.next = a and b
    return c


@block
def and_nz(v, op, y):
    @always_comb
    def c():
        y.next = v and op != 0
    return c


# ---------------------------------------------------------------------- datasheet
def datasheet(p):
    G = geometry(p)
    errs = "; ".join(f"{k} {v}" for k, v in ERRORS.items())
    return Datasheet(
        summary=(f"The assembled CoSMIC multi-threaded template accelerator: {p['ROWS']} rows x "
                 f"{p['COLS']} `cosmic_pe` ({G['N']} PEs), {G['T']} worker thread(s) of "
                 f"{G['RPT']} row(s) ({G['P']} PEs) each, neighbour links and a row bus in every "
                 f"row, a {G['D']}-stage tree bus per thread (pass/add/mul nodes), a "
                 "`cosmic_memory_schedule_unit` feeding the PE rows (one memory schedule shared "
                 "by the threads, Thread Index Table, model broadcast), on-chip aggregation of "
                 "the threads' models after every round (golden.sgd.average_fx) and an AXI4-Lite "
                 "host interface.  Runs what `tablac.codegen` emits; the cycle-level reference "
                 "is `tablac.machine`."),
        latency=("schedule length S = PROG_LEN + 8 cycles per sample: tablac's cycles per "
                 "sample (Compiled.stats['cycles_compute'], tablac.machine's compute_cycles), the "
                 "program's PROG_LEN issue slots plus the 8-stage pipeline of the last slot "
                 "(golden.cosmic_pe.DONE_OFFSET), "
                 "whose write-back (the model update the next sample reads) lands at the end of "
                 "cycle PROG_LEN+7 after the start edge.  The drain belongs to the schedule: "
                 "tablac compiles every sample as a closed program (accumulator, link and bus "
                 "registers start empty; the row buses are cleared at every start), so sample "
                 "n+1 cannot issue into sample n's pipeline.  Hardware per sample in steady "
                 "state: S + 1 cycles (the PEs' done cycle: a PE accepts the next start in the "
                 "cycle done is high), the next sample's unit START and delivery overlapping "
                 "the compute; the first sample of a round adds the unit START (an internal "
                 "AXI4-Lite write), the memory latency and its delivery (one beat per cycle); "
                 "aggregation 3 cycles per aggregation-table entry after every round.  "
                 "Measured without memory stalls (bench, Verilator, 8-PE default, steady "
                 "state): linear 31 cycles per sample per thread for S = 30 (1.033 S), "
                 "logistic 35 / 34, svm 32 / 31, reco 52 / 51, backprop 4-3-1 65 / 64 "
                 "(1.016 S); with 4 threads sharing the unit (t4) a sample's delivery (16 beats, "
                 "START, memory latency: 27 cycles) is shorter than every program's S + 1"),
        throughput=(f"{G['T']} samples (one per thread) per S + 1 cycles while the unit "
                    "delivers a sample (its beats, one of "
                    f"{p['COLS']} words per cycle, plus its START and the memory latency) "
                    "within the previous sample's compute; otherwise the delivery sets the "
                    "pace"),
        notes=[
            "Use: write microcode (LD_SEL 0, LD_HI then LD_LO per word), preloaded constants, "
            "the aggregation table and the tree program through the load registers; push the "
            "model broadcast entries into the unit's queue, set MODEL_ADDR, write CTRL.LOAD_MODEL; "
            "then CLEAR the queue, push the per-sample entries, write the Thread Index Table "
            "(MEM_ADDR[t], PE_OFFSET[t] = t*P), PROG_LEN, SAMPLES, ROUNDS, AGG_LEN and "
            "CTRL.TRAIN; read the model back through RB_PE/RB_SEL/RB_ADDR/RB_DATA.",
            "Delivery rule (tablac.codegen): lane i of a beat for PE p goes to PE p+i, at the "
            "PE's write pointer (reset by every start of the unit), DATA during TRAIN, MODEL "
            "during LOAD_MODEL.",
            "Overlap (TRAIN): the PEs are cosmic_pe with DBUF=1.  The controller starts the "
            "unit once per sample (SAMPLES STARTs per round), each START as soon as the "
            "previous walk has ended (the unit's busy output falls: every beat of that sample "
            "has been taken), so sample n+1 streams into the PEs' shadow DATA banks while "
            "they run sample n; a beat for a thread whose complete sample is not yet "
            "started is held back (m_axis_pe_tready low), so sample n+2 waits in the unit "
            "(its reads are prefetched).  The threads run MIMD: a thread's sample is "
            "complete when its transfers of the walk (one tlast per queue entry; the unit's "
            "STATUS.QCOUNT is read at the start of TRAIN) are in, or when the walk "
            "ends; its PEs start when its sample is complete and they are idle (never on a partly delivered sample: "
            "a memory stall makes them wait), swapping the banks, 2 cycles after the "
            "handshake of its last beat at the earliest (tablac.machine.thread_starts), "
            "without waiting for the other threads' data.  Each thread reads the tree "
            "program at its own cycle count.  SAMPLE_CNT counts the samples every thread "
            "has completed.  A DATA load while idle writes both banks, so preloaded DATA "
            "constants are seen by every sample.  Bit-exact with tablac.machine, which loads "
            "and computes one sample after the other (the overlap changes the timing only).",
            "Every round reads the same data region: TRAIN saves each thread's MEM_ADDR at the "
            "start and writes it back at the start of every round.",
            "Aggregation: for every table entry (pe, addr, op) the MODEL word of that PE of every "
            "thread is read back, summed exactly, averaged ((sum + T/2) >> log2 T, T a power of "
            "two, which equals golden.sgd.average_fx) or, for a sum entry, saturated, and "
            "written into every thread's PE.  "
            "With one thread there is no aggregation.",
            f"Error codes (STATUS[7:4]): {errs}.  Every error leaves the core idle; run errors "
            "abort the command at the end of the current sample (no further sample starts; "
            "the beats the unit still delivers are taken and dropped until it is idle), so "
            "bad input never hangs the core.",
            "Deviation from the paper: the tree bus folds each destination's source rows left "
            "to right in the entry's cycle (as tablac.machine does for pass/add/mul entries) and "
            "the remaining tree levels are register stages.  A tablac `expr` entry is "
            "representable when it is one operation over its rows (always with 2 rows per "
            "thread); nested expressions over 3 or more rows are not.",
            "Deviation: the model is read back through the host interface (RB_*), not written to "
            "memory by the unit.",
        ])


CORE = CoreDef(
    name=KIND, family="cosmic",
    description="CoSMIC multi-threaded accelerator: rows of cosmic_pe with links, row buses and "
                "a tree bus, fed by the memory schedule unit, with on-chip aggregation",
    params=PARAMS,
    build=build, datasheet=datasheet,
    configs={"default": {},
             "large": {"ROWS": 4, "COLS": 8, "THREADS": 4, "DATA_DEPTH": 64, "MODEL_DEPTH": 128,
                       "INTERIM_DEPTH": 64, "SCHED_DEPTH": 512, "NL": 1},
             # two rows per thread (tree bus with add/mul nodes), one thread (no aggregation)
             "tree": {"ROWS": 2, "COLS": 2, "THREADS": 1, "DATA_DEPTH": 64, "MODEL_DEPTH": 64,
                      "INTERIM_DEPTH": 64, "SCHED_DEPTH": 256, "NL": 1},
             # thread scaling on the default's budget of 8 PEs: 1 thread of 2 rows x 4, and
             # 4 threads of one row x 2 (the default is 2 threads of one row x 4)
             "t1": {"ROWS": 2, "COLS": 4, "THREADS": 1, "DATA_DEPTH": 64, "MODEL_DEPTH": 64,
                    "INTERIM_DEPTH": 64, "SCHED_DEPTH": 256, "NL": 1},
             "t4": {"ROWS": 4, "COLS": 2, "THREADS": 4, "DATA_DEPTH": 64, "MODEL_DEPTH": 64,
                    "INTERIM_DEPTH": 64, "SCHED_DEPTH": 256, "NL": 1}},
    generator="rtl_gen/cosmic/cosmic_accelerator.py",
)
