"""``pipearch_engine`` core: the PipeArch-PU computation engine (PipeArch 6.2, Fig. 4).

``NREGIONS`` ``pipearch_region`` instances, the compute subroutines named in ``SUBS``
(``dot_sigmoid``, ``sigmoid_delta``, ``scalar_engine``, ``multiply_subtract``, ``l2reg``,
each instantiated from its own generator), the region side of LOAD and STORE, and the
routing between them.  The instruction set is ``golden/pipearch_isa.py``.

Crossbar.  Every region has one ReadRegion module per subroutine read channel and one
WriteRegion module per write channel (global channel order of ``pipearch_isa``, absent
subroutines left out), so every channel can name any region.  An instruction starts its
channels' modules only in the regions named by its routing word; the data path needs no
select register:

* read channel: ``tvalid`` is the OR of that channel's module ``tvalid`` over the regions
  (only the started one can be valid), ``tdata`` the line of the valid one, ``tready``
  goes to every region's module (an idle module has nothing to pop);
* write channel: ``tdata``/``tvalid`` go to every region's module; only the started one
  requests its write port, and the subroutine's ``tready`` is the OR of the grants.

LOAD (broadcast): a line on ``s_axis_ld`` is accepted (``tready``) only when every region
of the mask can write it in this cycle, computed from registered state only (the
region's LOAD.out WriteRegion is busy and, in FIFO mode, its FIFO is not full; LOAD.out is
write channel 0, the highest priority on every write port, so it is granted whenever it
requests).  LOAD in amem mode: each line is taken when the address-memory loader is empty
and its LANES words (lane 0 first) are written to entries ``w7[15:0]`` onward of global
channel ``w7[20:16]`` of every region in the mask, one entry per cycle.

The golden models are ``golden.pipearch_region`` and ``golden.pipearch_ops`` (and the ISS,
``golden.pipearch_iss``, for whole programs).
"""
from __future__ import annotations

import inspect

from myhdl import ConcatSignal, always_comb, always_seq, block, concat, intbv

from golden import pipearch_isa as isa
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_u
from rtl_gen.common.params import Param, ParamError, ParamSet, multiple_of_8, power_of_two
from rtl_gen.common.blocks import fit
from rtl_gen.common.ports import keyword_block, make_factory, port_signals

from . import dot_sigmoid as m_dot
from . import l2reg as m_l2
from . import multiply_subtract as m_ms
from . import pipearch_region as m_reg
from . import scalar_engine as m_sc
from . import sigmoid_delta as m_sd
from .pipearch_region import copy_sig, mux_chain, or_all

KIND = "pipearch_engine"
ITW = 13          # w0[12:0]
LINES_W = 27      # length (14 bits) * iterations (13 bits)
SUB_NAMES = {isa.LOAD: "load", isa.STORE: "store", isa.DOTSIG: "dot_sigmoid",
             isa.SIGDELTA: "sigmoid_delta", isa.SCALAR: "scalar_engine",
             isa.MULTSUB: "multiply_subtract", isa.L2REG: "l2reg"}
COMPUTE = (isa.DOTSIG, isa.SIGDELTA, isa.SCALAR, isa.MULTSUB, isa.L2REG)
# core stream port of each channel, by (opcode, channel index)
CORE_PORT = {(isa.DOTSIG, 0): "s_axis_a", (isa.DOTSIG, 1): "s_axis_b", (isa.DOTSIG, 2): "m_axis_res",
             (isa.SIGDELTA, 0): "s_axis_z", (isa.SIGDELTA, 1): "s_axis_b", (isa.SIGDELTA, 2): "m_axis_y",
             (isa.SCALAR, 0): "s_axis_a", (isa.SCALAR, 1): "s_axis_b", (isa.SCALAR, 2): "m_axis_res",
             (isa.MULTSUB, 0): "s_axis_x", (isa.MULTSUB, 1): "s_axis_a", (isa.MULTSUB, 2): "s_axis_s",
             (isa.MULTSUB, 3): "m_axis_y",
             (isa.L2REG, 0): "s_axis_x", (isa.L2REG, 1): "s_axis_xold", (isa.L2REG, 2): "m_axis_y"}
CORE_MOD = {isa.DOTSIG: m_dot, isa.SIGDELTA: m_sd, isa.SCALAR: m_sc, isa.MULTSUB: m_ms, isa.L2REG: m_l2}


def log2(n: int) -> int:
    return int(n).bit_length() - 1


def _lanes_ok(v):
    return None if v in (1, 2, 4, 8, 16, 32) else "must be one of 1, 2, 4, 8, 16, 32"


def _cross(p):
    n = p["NREGIONS"]
    for r in range(16):
        c = (p["CONFIGS"] >> (2 * r)) & 3
        if r >= n and c:
            return f"parameter CONFIGS=0x{p['CONFIGS']:x} names a configuration for region {r} >= NREGIONS={n}"
        if c == 3:
            return f"parameter CONFIGS=0x{p['CONFIGS']:x}: region {r} has configuration 3 (0..2 allowed)"
    if p["MAX_DIM"] > p["DEPTH"]:
        return f"parameter MAX_DIM={p['MAX_DIM']} exceeds DEPTH={p['DEPTH']} (a vector must fit a region)"
    if p["F"] >= p["W"]:
        return f"parameter F={p['F']} must be below W={p['W']}"
    if not (p["SUBS"] & 1):
        return "parameter SUBS must include LOAD (bit 0)"
    for op in COMPUTE:
        if p["SUBS"] >> (op - 0x10) & 1:
            try:
                CORE_MOD[op].CORE.resolve(core_params(p, op))
            except ParamError as e:
                return f"subroutine {SUB_NAMES[op]} rejects the engine parameters: {e}"
    if (p["SUBS"] >> (isa.SCALAR - 0x10) & 1) and p["LANES"] < 2:
        pass  # SCD mode then writes only lane 0 (x - mu); documented
    return None


PARAMS = ParamSet([
    Param("LANES", 4, "words per line (the paper's 64 B line is LANES=16: config lanes16)", 1, 32,
          _lanes_ok),
    Param("W", 32, "word width (Q(W,F) signed fixed point; the ISA uses 32)", 8, 32, multiple_of_8),
    Param("F", 16, "fraction bits", 1, 31),
    Param("NREGIONS", 4, "regions", 1, 16),
    Param("DEPTH", 256, "lines per region (power of two)", 2, 8192, power_of_two),
    Param("AMEM_DEPTH", 16, "entries of each channel's address memory in each region (power of two)",
          2, 1 << 14, power_of_two),
    Param("CONFIGS", 0, "region configurations, 2 bits per region (bits [2r+1:2r]): 0 regular, "
                        "1 replicated, 2 type_replicated", 0, (1 << 32) - 1),
    Param("MAX_DIM", 256, "largest dimension (lines per vector), <= DEPTH", 1, 8192),
    Param("MAX_ITER", 4096, "largest iteration count", 1, isa.ITER_MASK),
    Param("SUBS", 0x7F, "present subroutines, bit s = opcode 0x10+s (LOAD required)", 1, 0x7F),
], [_cross])


def core_params(p, op):
    names = {q.name for q in CORE_MOD[op].CORE.params.specs}
    return {k: p[k] for k in ("LANES", "W", "F", "MAX_DIM", "MAX_ITER") if k in names}


def present(p):
    return [op for op in isa.ALL_SUBROUTINES if p["SUBS"] >> (op - 0x10) & 1]


def channel_maps(p):
    """Region channel index of every present global channel: ({g: rd k}, {g: wr k})."""
    ops = present(p)
    rd, wr = {}, {}
    for g, (op, i) in enumerate(isa.GLOBAL_CHANNELS):
        if op not in ops:
            continue
        if isa.CHANNELS[op][i][1] == "r":
            rd[g] = len(rd)
        else:
            wr[g] = len(wr)
    return rd, wr


def gid(op, i):
    return isa.GLOBAL_CHANNELS.index((op, i))


def region_params(p, r):
    rd, wr = channel_maps(p)
    return {"LANES": p["LANES"], "W": p["W"], "DEPTH": p["DEPTH"], "AMEM_DEPTH": p["AMEM_DEPTH"],
            "NR": max(1, len(rd)), "NW": len(wr), "CONFIG": (p["CONFIGS"] >> (2 * r)) & 3}


def core_block(op, p):
    """The MyHDL block function of a subroutine core (its ``block_fn(p)`` when it has one)."""
    mod = CORE_MOD[op]
    cp = mod.CORE.resolve(core_params(p, op))
    if hasattr(mod, "block_fn"):
        return mod.block_fn(cp), mod.CORE.build(cp)[1]
    factory, ports = mod.CORE.build(cp)
    return inspect.getclosurevars(factory).nonlocals["top_fn"], ports


# ------------------------------------------------------------------ small blocks
@block
def and2(a, b, y):
    @always_comb
    def o():
        y.next = a and b

    return o


@block
def and3(a, b, c, y):
    @always_comb
    def o():
        y.next = a and b and c

    return o


@block
def bit_of(v, i, y):
    @always_comb
    def o():
        y.next = v[i]

    return o


@block
def lane_pick(line, sel1, y, w):
    """Lane 0 of ``line`` (lane 1 when ``sel1``)."""
    if len(line) >= 2 * w:
        @always_comb
        def o():
            if sel1:
                y.next = line[2 * w:w]
            else:
                y.next = line[w:]
    else:
        @always_comb
        def o():
            y.next = line[w:]

    return o


@block
def scalar_line(v, line):
    """A scalar line: ``v`` in lane 0, zeros elsewhere."""
    w = len(v)
    if len(line) > w:
        k = len(line) - w

        @always_comb
        def o():
            line.next = concat(intbv(0)[k:], v)
    else:
        @always_comb
        def o():
            line.next = v[w:]

    return o


@block
def scd_line(res, mode, line, w):
    """Scalar engine result ``{x - mu, step}`` to a line: SGD lane 0 = step; SCD lane 0 =
    x - mu, lane 1 = mu; other lanes 0."""
    L = len(line) // w
    if L >= 2:
        lo = sig_u(2 * w)

        @always_comb
        def o():
            if mode:
                lo.next = concat(res[w:], res[2 * w:w])
            else:
                lo.next = concat(intbv(0)[w:], res[w:])

        if L == 2:
            @always_comb
            def o2():
                line.next = lo
        else:
            k = len(line) - 2 * w

            @always_comb
            def o2():
                line.next = concat(intbv(0)[k:], lo)

        return o, o2

    @always_comb
    def o1():
        if mode:
            line.next = res[2 * w:w]
        else:
            line.next = res[w:]

    return o1


@block
def chan_ok(w1, acc, w6, ok, c, kind, depth, nreg):
    """Channel ``c`` of a subroutine instruction: its region exists, its access word
    passes the region's check (one of BRAM/FIFO, length 1..DEPTH; any 14-bit offset,
    taken modulo DEPTH: an access may wrap past the end), and the length rule (vector:
    = w6, scalar: 1) holds."""
    ln = sig_u(14)
    lo, hi = 4 * c, 4 * c + 4

    @always_comb
    def dec():
        ln.next = acc[30:16]

    if nreg < 16:
        @always_comb
        def reg_ok_c():
            reg_ok.next = w1[hi:lo] < nreg
    else:
        @always_comb
        def reg_ok_c():
            reg_ok.next = True
    reg_ok = sig_b()

    if kind == "vector":
        @always_comb
        def chk():
            ok.next = reg_ok and (acc[31] != acc[30]) and ln != 0 and ln <= depth \
                and w6[32:14] == 0 and w6[14:0] == ln
    elif kind == "scalar":
        @always_comb
        def chk():
            ok.next = reg_ok and (acc[31] != acc[30]) and ln == 1
    else:
        @always_comb
        def chk():
            ok.next = reg_ok and (acc[31] != acc[30]) and ln != 0 and ln <= depth

    return dec, reg_ok_c, chk


@block
def range_ok(v, lo, hi, ok):
    """``lo <= v <= hi`` (``hi`` omitted from the compare when every value fits)."""
    if hi >= (1 << len(v)) - 1:
        @always_comb
        def o():
            ok.next = v >= lo
    else:
        @always_comb
        def o():
            ok.next = v >= lo and v <= hi

    return o


@block
def load_ok(w1, acc0, w7, ok, depth, nreg, chans):
    """LOAD: a nonempty region mask within NREGIONS; normal mode: a legal access word;
    amem mode: a present global channel id."""
    rom = tuple(1 if g in chans else 0 for g in range(32))
    mhi = sig_u(max(1, 16 - nreg))
    ln = sig_u(14)
    chid = sig_u(5)
    pres = sig_b()

    @always_comb
    def romc():
        pres.next = rom[int(chid)]

    @always_comb
    def dec():
        ln.next = acc0[30:16]
        chid.next = w7[21:16]
        if nreg < 16:
            mhi.next = w1[16:nreg]
        else:
            mhi.next = 0

    @always_comb
    def chk():
        if w1[16:0] == 0 or mhi != 0:
            ok.next = False
        elif w1[24]:
            ok.next = pres
        else:
            ok.next = (acc0[31] != acc0[30]) and ln != 0 and ln <= depth

    return romc, dec, chk


@block
def issue_ctl(clk, rst, start, busy, ok, core_err, go, err):
    """Accept ``start`` while idle: ``go`` (comb.) when every check passes, else pulse
    ``err`` in the next cycle; ``core_err`` (a core's done with cfg_err) also pulses it."""
    @always_comb
    def g():
        go.next = start and not busy and ok

    @always_seq(clk.posedge, reset=rst)
    def s():
        err.next = (start and not busy and not ok) or core_err

    return g, s


@block
def flag_reg(clk, rst, load, d, q):
    @always_seq(clk.posedge, reset=rst)
    def s():
        if load:
            q.next = d

    return s


@block
def xfer_info(clk, rst, go, amem, acc, iters, w6, pulse, lines, addr):
    """LOAD/STORE facts for the AXI master: ``pulse`` one cycle after an accepted
    start, ``lines`` and ``addr`` (= w6) held until the next one."""
    k = len(lines) - len(iters)
    @always_seq(clk.posedge, reset=rst)
    def s():
        pulse.next = go
        if go:
            addr.next = w6
            if amem:
                lines.next = concat(intbv(0)[k:], iters)
            else:
                lines.next = acc[30:16] * iters

    return s


@block
def load_ctl(clk, rst, go, w1, acc0, lmask, lfifo):
    """Latch the broadcast mask (normal LOAD) and the FIFO-mode bit."""
    n = len(lmask)

    @always_seq(clk.posedge, reset=rst)
    def s():
        if go:
            if w1[24]:
                lmask.next = 0
            else:
                lmask.next = w1[n:0]
            lfifo.next = acc0[30]

    return s


@block
def q_full(fifo_count, depth, y):
    """The region's FIFO (one queue in every configuration) holds DEPTH lines."""
    @always_comb
    def o():
        y.next = fifo_count == depth

    return o


@block
def can_take(busy, lfifo, full, y):
    """Region's LOAD.out WriteRegion writes a valid line this cycle (LOAD.out is write
    channel 0: the first in every write-port priority order)."""
    @always_comb
    def o():
        y.next = busy and (not lfifo or not full)

    return o


@block
def all_ready(lmask, cans, y):
    """every masked region can take the line (and the mask is not empty)."""
    n = len(lmask)

    @always_comb
    def o():
        ok = lmask != 0
        for r in range(n):
            if lmask[r] and not cans[r]:
                ok = False
        y.next = ok

    return o


@block
def amem_loader(clk, rst, go, w1, w7, iters, tdata, tvalid, tready, ready_n,
                we, addr, data, busy, amask, chid, lanes, w):
    """LOAD in amem mode: take a line when empty, write its lanes one per cycle."""
    n = len(amask)
    AMW = len(addr)
    AW = len(data)
    LW = len(tdata)
    sh = sig_u(LW)
    hold = sig_b()
    lane = sig_u(max(1, (lanes - 1).bit_length()))
    rem = sig_u(ITW)
    run = sig_b()
    ent = sig_u(AMW)

    @always_comb
    def rdy():
        tready.next = (run and not hold) or ready_n

    @always_comb
    def outs():
        we.next = hold
        addr.next = ent
        data.next = sh[AW:]
        busy.next = run or hold

    @always_seq(clk.posedge, reset=rst)
    def s():
        if go and w1[24]:
            run.next = True
            rem.next = iters
            amask.next = w1[n:0]
            chid.next = w7[21:16]
            ent.next = w7[AMW:]
        elif run and not hold and tvalid:
            sh.next = tdata
            hold.next = True
            lane.next = 0
            if rem == 1:
                run.next = False
            rem.next = rem - 1
        if hold:
            sh.next = sh >> w
            ent.next = ent + 1
            if lane == lanes - 1:
                hold.next = False
            else:
                lane.next = lane + 1

    return rdy, outs, s


@block
def amem_sel(we, amask, chid, y, r, g):
    @always_comb
    def o():
        y.next = we and amask[r] and chid == g

    return o


@block
def or_reduce(v, y):
    @always_comb
    def o():
        y.next = v != 0

    return o


# ------------------------------------------------------------------ ports
def port_list(p: dict) -> list[Port]:
    L, W = p["LANES"], p["W"]
    LW = L * W
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (engine, regions' channels and FIFO "
                             "pointers, subroutines; region RAM contents are kept)"),
        Port("fifo_clr", "in", 1, "synchronous: empty every region's FIFO (pointers and occupancy to 0, "
                                  "RAM kept); assert only while sub_busy is 0 (for the PU top to pulse on START)"),
        Port("sub_start", "in", 7, "one-cycle issue pulse, bit s = opcode 0x10+s (one bit per cycle)"),
        Port("sub_iters", "in", ITW, "iterations (w0[12:0]), valid with sub_start"),
        Port("sub_w1", "in", 32, "routing word w1 (region fields/mask and flags; the register-add bits "
                                 "are not used: the access words are already effective)"),
        Port("sub_acc0", "in", 32, "effective access word of channel 0 (w2 + registers)"),
        Port("sub_acc1", "in", 32, "effective access word of channel 1 (w3 + registers)"),
        Port("sub_acc2", "in", 32, "effective access word of channel 2 (w4 + registers)"),
        Port("sub_acc3", "in", 32, "effective access word of channel 3 (w5 + registers)"),
        Port("sub_w6", "in", 32, "w6: dimension / alpha / LOAD-STORE line address"),
        Port("sub_w7", "in", 32, "w7: alpha*lambda1 / c / amem target"),
        Port("sub_busy", "out", 7, "bit s: subroutine 0x10+s running (see busy semantics)"),
        Port("sub_err", "out", 7, "bit s: one-cycle pulse, the cycle after an issue of subroutine "
                                  "0x10+s was rejected (nothing started; sub_busy stays low)"),
        Port("s_axis_ld_tdata", "in", LW, "LOAD line from the Load AXI master, lane i in [i*W +: W]"),
        Port("s_axis_ld_tvalid", "in", 1, ""),
        Port("s_axis_ld_tready", "out", 1, "registered-state only: never depends on tvalid"),
        Port("m_axis_st_tdata", "out", LW, "STORE line for the Store AXI master"),
        Port("m_axis_st_tvalid", "out", 1, ""),
        Port("m_axis_st_tready", "in", 1, ""),
        Port("m_axis_st_tlast", "out", 1, "last line of every iteration of the STORE access"),
        Port("ld_go", "out", 1, "one-cycle pulse the cycle after a LOAD was accepted"),
        Port("ld_lines", "out", LINES_W, "lines the LOAD moves (length*iterations, amem mode: "
                                         "iterations), held from ld_go"),
        Port("ld_addr", "out", 32, "w6 of that LOAD (line address), held from ld_go"),
        Port("st_go", "out", 1, "one-cycle pulse the cycle after a STORE was accepted"),
        Port("st_lines", "out", LINES_W, "lines the STORE moves (length*iterations), held from st_go"),
        Port("st_addr", "out", 32, "w6 of that STORE, held from st_go"),
    ]


# ------------------------------------------------------------------ engine
@block
def engine_impl(s, p):
    L, W = p["LANES"], p["W"]
    LW = L * W
    NRG, D, AMD = p["NREGIONS"], p["DEPTH"], p["AMEM_DEPTH"]
    AW, AMW = log2(D), log2(AMD)
    clk, rst = s["clk"], s["rst"]
    rdmap, wrmap = channel_maps(p)
    ops = present(p)
    insts = []

    def add(fn, *args):
        insts.append((fn, args))

    # shared region inputs
    iters16 = sig_u(m_reg.ITW)
    add(fit, s["sub_iters"], iters16)
    accs = [s[f"sub_acc{c}"] for c in range(4)]
    zero1 = sig_b()
    pass  # zero1 stays undriven: a constant 0
    am_we = sig_b()
    am_addr = sig_u(AMW)
    am_data = sig_u(AW)
    am_mask = sig_u(NRG)
    am_chid = sig_u(5)

    # region signal dicts
    regs = []
    for r in range(NRG):
        rp = region_params(p, r)
        ports = m_reg.port_list(rp)
        sig = {}
        for pt in ports:
            if pt.name in ("clk", "rst", "fifo_clr"):
                sig[pt.name] = s[pt.name]
            elif pt.name == "err_clr":
                sig[pt.name] = zero1
            elif pt.name.endswith("_amem_addr"):
                sig[pt.name] = am_addr
            elif pt.name.endswith("_amem_data"):
                sig[pt.name] = am_data
            elif pt.name.endswith("_iters"):
                sig[pt.name] = iters16
            else:
                sig.update(port_signals([pt]))
        if not rdmap:  # region needs one read channel: an idle dummy
            pass  # sig["rd0_start"] stays undriven: a constant 0
            pass  # sig["rd0_access"] stays undriven: a constant 0
            pass  # sig["rd0_amem_we"] stays undriven: a constant 0
            pass  # sig["m_axis_rd0_tready"] stays undriven: a constant 0
        regs.append((rp, sig))

    # amem write enables per (region, channel)
    for kind, cmap in (("rd", rdmap), ("wr", wrmap)):
        for g, k in cmap.items():
            for r in range(NRG):
                add(amem_sel, am_we, am_mask, am_chid, regs[r][1][f"{kind}{k}_amem_we"], r, g)

    busy_bits = [None] * 7
    err_bits = [None] * 7
    unused = []

    for op in isa.ALL_SUBROUTINES:
        si = op - 0x10
        if op not in ops:
            b0, e0 = sig_b(), sig_b()
            pass  # b0 stays undriven: a constant 0
            pass  # e0 stays undriven: a constant 0
            busy_bits[si], err_bits[si] = b0, e0
            continue
        start = sig_b()
        add(bit_of, s["sub_start"], si, start)
        busy = sig_b()
        err = sig_b()
        ok = sig_b()
        go = sig_b()
        core_err = sig_b()
        busy_bits[si], err_bits[si] = busy, err
        chans = isa.CHANNELS[op]
        chan_busy = []
        # ---- checks
        oks = []
        if op == isa.LOAD:
            o = sig_b()
            add(load_ok, s["sub_w1"], accs[0], s["sub_w7"], o, D, NRG, set(rdmap) | set(wrmap))
            oks.append(o)
        else:
            for c, (_, _, kind) in enumerate(chans):
                o = sig_b()
                add(chan_ok, s["sub_w1"], accs[c], s["sub_w6"], o, c, kind, D, NRG)
                oks.append(o)
        o = sig_b()
        add(range_ok, s["sub_iters"], 1, p["MAX_ITER"], o)
        oks.append(o)
        if op in (isa.DOTSIG, isa.SIGDELTA, isa.MULTSUB, isa.L2REG):
            o = sig_b()
            add(range_ok, s["sub_w6"], 1, p["MAX_DIM"], o)
            oks.append(o)
        allok = sig_b()
        insts.append((and_all, (ConcatSignal(*oks), allok)))
        add(copy_sig, allok, ok)

        # ---- region channel starts
        def route_starts(c, kind_rw, k):
            bs = []
            for r in range(NRG):
                sig = regs[r][1]
                pre = f"{kind_rw}{k}"
                if op == isa.LOAD:
                    sel = sig_b()
                    add(load_route, go, s["sub_w1"], r, sel)
                else:
                    sel = sig_b()
                    add(route_eq, go, s["sub_w1"], c, r, sel)
                add(copy_sig, sel, sig[f"{pre}_start"])
                add(copy_sig, accs[c], sig[f"{pre}_access"])
                bs.append(sig[f"{pre}_busy"])
                unused.extend([sig[f"{pre}_done"], sig[f"{pre}_err"]])
            return bs

        core_sigs = None
        if op in COMPUTE:
            fn, cports = core_block(op, p)
            core_sigs = port_signals([pt for pt in cports if pt.name not in ("clk", "rst")])
            core_sigs["clk"], core_sigs["rst"] = clk, rst
            add(copy_sig, go, core_sigs["start"])
            if "cfg_dimension" in core_sigs:
                add(fit, s["sub_w6"], core_sigs["cfg_dimension"])
            add(fit, s["sub_iters"], core_sigs["cfg_iterations"])
            flag = sig_b()
            if op != isa.L2REG:
                add(bit_of, s["sub_w1"], 24, flag)
            if "cfg_sigmoid" in core_sigs:
                add(copy_sig, flag, core_sigs["cfg_sigmoid"])
            if op == isa.SCALAR:
                add(copy_sig, flag, core_sigs["cfg_mode"])
                add(fit, s["sub_w6"], core_sigs["cfg_alpha"])
                add(fit, s["sub_w7"], core_sigs["cfg_alpha_lambda"])
            if op == isa.L2REG:
                add(fit, s["sub_w7"], core_sigs["cfg_reg"])
            flag_r = None
            if op in (isa.SCALAR, isa.MULTSUB):
                flag_r = sig_b()
                add(flag_reg, clk, rst, go, flag, flag_r)
            insts.append((fn, (), core_sigs))
            add(and2, core_sigs["done"], core_sigs["cfg_err"], core_err)
            chan_busy.append(core_sigs["busy"])

            for c, (_, rw, kind) in enumerate(chans):
                g = gid(op, c)
                cp = CORE_PORT[(op, c)]
                if rw == "r":
                    k = rdmap[g]
                    chan_busy += route_starts(c, "rd", k)
                    vals = [regs[r][1][f"m_axis_rd{k}_tvalid"] for r in range(NRG)]
                    datas = [regs[r][1][f"m_axis_rd{k}_tdata"] for r in range(NRG)]
                    unused.extend(regs[r][1][f"m_axis_rd{k}_tlast"] for r in range(NRG))
                    line = mux_chain(vals, datas, insts)
                    add(or_any, ConcatSignal(*vals) if NRG > 1 else vals[0], core_sigs[f"{cp}_tvalid"])
                    for r in range(NRG):
                        add(copy_sig, core_sigs[f"{cp}_tready"], regs[r][1][f"m_axis_rd{k}_tready"])
                    if kind == "scalar":
                        sel1 = flag_r if op == isa.MULTSUB else zero1
                        add(lane_pick, line, sel1, core_sigs[f"{cp}_tdata"], W)
                    else:
                        add(copy_sig, line, core_sigs[f"{cp}_tdata"])
                else:
                    k = wrmap[g]
                    chan_busy += route_starts(c, "wr", k)
                    wline = sig_u(LW)
                    if op == isa.SCALAR:
                        add(scd_line, core_sigs[f"{cp}_tdata"], flag_r, wline, W)
                    elif kind == "scalar":
                        add(scalar_line, core_sigs[f"{cp}_tdata"], wline)
                    else:
                        add(copy_sig, core_sigs[f"{cp}_tdata"], wline)
                    rdys = []
                    for r in range(NRG):
                        add(copy_sig, wline, regs[r][1][f"s_axis_wr{k}_tdata"])
                        add(copy_sig, core_sigs[f"{cp}_tvalid"], regs[r][1][f"s_axis_wr{k}_tvalid"])
                        rdys.append(regs[r][1][f"s_axis_wr{k}_tready"])
                    add(or_any, ConcatSignal(*rdys) if NRG > 1 else rdys[0], core_sigs[f"{cp}_tready"])
                    unused.append(core_sigs[f"{cp}_tlast"])
        elif op == isa.LOAD:
            k = wrmap[gid(op, 0)]
            chan_busy += route_starts(0, "wr", k)
            lmask = sig_u(NRG)
            lfifo = sig_b()
            add(load_ctl, clk, rst, go, s["sub_w1"], accs[0], lmask, lfifo)
            cans = []
            for r in range(NRG):
                rp, sig = regs[r]
                cn = sig_b()
                full = sig_b()
                add(q_full, sig["fifo_count"], D, full)
                add(can_take, sig[f"wr{k}_busy"], lfifo, full, cn)
                cans.append(cn)
            ready_n = sig_b()
            add(all_ready, lmask, ConcatSignal(*reversed(cans)) if NRG > 1 else _vec1(cans[0], insts),
                ready_n)
            for r in range(NRG):
                sig = regs[r][1]
                add(copy_sig, s["s_axis_ld_tdata"], sig[f"s_axis_wr{k}_tdata"])
                mr = sig_b()
                add(bit_of, lmask, r, mr)
                add(and3, s["s_axis_ld_tvalid"], ready_n, mr, sig[f"s_axis_wr{k}_tvalid"])
                unused.append(sig[f"s_axis_wr{k}_tready"])
            am_busy = sig_b()
            add(amem_loader, clk, rst, go, s["sub_w1"], s["sub_w7"], s["sub_iters"],
                s["s_axis_ld_tdata"], s["s_axis_ld_tvalid"], s["s_axis_ld_tready"], ready_n,
                am_we, am_addr, am_data, am_busy, am_mask, am_chid, L, W)
            chan_busy.append(am_busy)
            pass  # core_err stays undriven: a constant 0
            add(xfer_info, clk, rst, go, _bit(s["sub_w1"], 24, insts), accs[0], s["sub_iters"],
                s["sub_w6"], s["ld_go"], s["ld_lines"], s["ld_addr"])
        else:  # STORE
            k = rdmap[gid(op, 0)]
            chan_busy += route_starts(0, "rd", k)
            vals = [regs[r][1][f"m_axis_rd{k}_tvalid"] for r in range(NRG)]
            datas = [regs[r][1][f"m_axis_rd{k}_tdata"] for r in range(NRG)]
            lasts = [regs[r][1][f"m_axis_rd{k}_tlast"] for r in range(NRG)]
            add(copy_sig, mux_chain(vals, datas, insts), s["m_axis_st_tdata"])
            add(copy_sig, mux_chain(vals, lasts, insts), s["m_axis_st_tlast"])
            add(or_any, ConcatSignal(*vals) if NRG > 1 else vals[0], s["m_axis_st_tvalid"])
            for r in range(NRG):
                add(copy_sig, s["m_axis_st_tready"], regs[r][1][f"m_axis_rd{k}_tready"])
            pass  # core_err stays undriven: a constant 0
            add(xfer_info, clk, rst, go, zero1, accs[0], s["sub_iters"],
                s["sub_w6"], s["st_go"], s["st_lines"], s["st_addr"])
        add(or_any, ConcatSignal(*chan_busy) if len(chan_busy) > 1 else chan_busy[0], busy)
        add(issue_ctl, clk, rst, start, busy, ok, core_err, go, err)

    if isa.LOAD not in ops:  # not reachable (LOAD is required); keeps the ports driven
        raise ParamError("SUBS must include LOAD")
    if isa.STORE not in ops:
        pass  # s["m_axis_st_tdata"] stays undriven: a constant 0
        pass  # s["m_axis_st_tvalid"] stays undriven: a constant 0
        pass  # s["m_axis_st_tlast"] stays undriven: a constant 0
        pass  # s["st_go"] stays undriven: a constant 0
        pass  # s["st_lines"] stays undriven: a constant 0
        pass  # s["st_addr"] stays undriven: a constant 0
        unused.append(s["m_axis_st_tready"])
    add(copy_sig, ConcatSignal(*reversed(busy_bits)), s["sub_busy"])
    add(copy_sig, ConcatSignal(*reversed(err_bits)), s["sub_err"])
    unused_sink = ConcatSignal(*unused)  # noqa: F841  (named *unused*: Verilator -Wall ignores it)
    unused_sig = sig_u(len(unused_sink))
    add(copy_sig, unused_sink, unused_sig)

    out = []
    for r in range(NRG):
        rp, sig = regs[r]
        out.append(m_reg.region_impl(sig, rp))
    for item in insts:
        if len(item) == 3:
            out.append(item[0](**item[2]))
        else:
            fn, args = item
            out.append(fn(*args))
    return out


def _bit(v, i, insts):
    y = sig_b()
    insts.append((bit_of, (v, i, y)))
    return y


def _vec1(b, insts):
    y = sig_u(1)
    insts.append((copy_sig, (b, y)))
    return y


@block
def and_all(v, y):
    full = (1 << len(v)) - 1     # a Python constant: VHDL has no shift_left on integers

    @always_comb
    def o():
        y.next = v == full

    return o


@block
def or_any(v, y):
    @always_comb
    def o():
        y.next = v != 0

    return o


@block
def route_eq(go, w1, c, r, y):
    lo, hi = 4 * c, 4 * c + 4

    @always_comb
    def o():
        y.next = go and w1[hi:lo] == r

    return o


@block
def load_route(go, w1, r, y):
    """normal (non-amem) LOAD: start region r's LOAD.out when its mask bit is set."""
    @always_comb
    def o():
        y.next = go and w1[r] and not w1[24]

    return o


def block_fn(p: dict):
    """The engine as a MyHDL block with one keyword argument per port (``port_list(p)``)."""
    p = PARAMS.resolve(p)
    return keyword_block(KIND, [pt.name for pt in port_list(p)], engine_impl, p)


def build(p):
    ports = port_list(p)
    return make_factory(block_fn(p), ports), ports


def datasheet(p: dict) -> Datasheet:
    rd, wr = channel_maps(p)
    cfgs = ", ".join(m_reg.CONFIG_NAMES[(p["CONFIGS"] >> (2 * r)) & 3] for r in range(p["NREGIONS"]))
    return Datasheet(
        summary=f"The PipeArch-PU computation engine (PipeArch 6.2, Fig. 4): {p['NREGIONS']} regions "
                f"of {p['DEPTH']} lines x {p['LANES']}x{p['W']} bits ({cfgs}), each with {len(rd)} "
                f"ReadRegion and {len(wr)} WriteRegion modules (one per subroutine channel, full "
                "crossbar), the compute subroutines named in SUBS and the region side of LOAD "
                "(broadcast or address-memory mode) and STORE.  Instructions arrive decoded on the "
                "`sub_*` issue interface (driven by `pipearch_rm`); semantics: `golden/pipearch_isa.py`, "
                "reference: `golden.pipearch_iss` (`Machine.golden_subroutine`).",
        latency="a subroutine's channels and core start at the clock edge that samples `sub_start`; "
                "`sub_busy[s]` is high from the next cycle",
        throughput="one line per cycle per channel when every region port it uses is its own: two "
                   "subroutines on disjoint regions run concurrently at full rate; channels sharing "
                   "a regular region's read (or write) port share its one line per cycle (DOTSIG with "
                   "a and b in one regular region: 1/2); LOAD broadcast: one line per cycle to any "
                   "number of regions; LOAD amem mode: one address-memory entry per cycle",
        fields_title="Issue interface (fields valid in the `sub_start` cycle)",
        fields=[("sub_start", "7", "one-cycle pulse, bit s = opcode 0x10+s; ignored while sub_busy[s]"),
                ("sub_iters", "13", "iterations (w0[12:0])"),
                ("sub_w1", "32", "routing word: [4k+3:4k] region of channel k (LOAD: [15:0] region "
                                 "mask), [31:24] flags; [23:16] unused (access words are effective)"),
                ("sub_acc0..3", "32", "effective access words of channels 0..3 (w2..w5 + registers)"),
                ("sub_w6 / sub_w7", "32", "as in the ISA table (dimension, alpha, c, amem target, "
                                          "LOAD/STORE line address)")],
        notes=[
            "Busy: `sub_busy[s]` is the OR of the subroutine core's `busy` and the `busy` of every "
            "ReadRegion/WriteRegion module of its channels (and, for LOAD amem mode, the address-memory "
            "loader).  It is high from the cycle after an accepted `sub_start` until the core has "
            "handed over its last result and every channel module has moved its last line (a write "
            "channel's last line is in the region RAM when `sub_busy` falls).  There is no separate "
            "done pulse: done is the falling edge of `sub_busy[s]`.",
            "Checks at issue (combinational, in the `sub_start` cycle): every used channel's region "
            "< NREGIONS; its access word legal for the region (exactly one of BRAM/FIFO, length "
            "1..DEPTH; any effective offset 0..16383 is legal and taken modulo DEPTH, and "
            "offset + length > DEPTH is legal: the addresses wrap modulo DEPTH; an effective offset "
            "outside 0..16383 is rejected by the issuer, `pipearch_rm`); vector channels' length = w6 (dimension), scalar channels' "
            "length = 1; iterations 1..MAX_ITER; dimension 1..MAX_DIM; LOAD: non-empty mask within "
            "NREGIONS, amem mode a present global channel.  A failing issue starts nothing, leaves "
            "`sub_busy` low and pulses `sub_err[s]` for one cycle in the next cycle; so does a core "
            "raising cfg_err (cannot happen after these checks).",
            "Scalars: a scalar read channel takes lane 0 of its line (MULTSUB s: lane 1 with flag "
            "[24]); DOTSIG writes its result in lane 0 with the other lanes 0; SCALAR writes lane 0 = "
            "step (SGD) or lane 0 = x - mu, lane 1 = mu (SCD; with LANES = 1 only x - mu).",
            "LOAD broadcast: `s_axis_ld_tready` is computed from registered state only (every "
            "masked region's LOAD.out module busy and, in FIFO mode, its FIFO not full), so there is "
            "no path from any ready to a valid; every masked region writes the same line in the "
            "same cycle.  LOAD amem mode writes all regions of the mask (the ISA names one); entry "
            "addresses wrap modulo AMEM_DEPTH; each entry keeps the low log2(DEPTH) bits of its word.",
            "STORE: `m_axis_st` carries the lines of the STORE access; `tlast` marks the last line of "
            "every iteration (the Store AXI master counts lines itself, from `st_lines`).",
            "LOAD/STORE main-memory side: `ld_go`/`st_go` pulse the cycle after an accepted LOAD/STORE "
            "with `ld_lines`/`st_lines` (length x iterations; amem mode: iterations) and "
            "`ld_addr`/`st_addr` (= sub_w6, which the issuer passes with R[rb] already added when "
            "w1[25] is set) held until the next one; the PU top starts its AXI master from them.",
            "Hazards between concurrent subroutines are the program's (PipeArch 6.3); concurrent "
            "accesses to one region are arbitrated by the region (fixed priority, global channel "
            "order), FIFO-mode producer/consumer pairs overlap freely.",
            "Reset clears the engine, the regions' channels and FIFO pointers and the subroutines; "
            "region RAM and address-memory contents are kept.",
            "`fifo_clr` (one cycle, only while every `sub_busy` bit is 0) empties every region's "
            "FIFO: write/read pointers and occupancy to 0, RAM contents kept, so the next push lands "
            "at line 0 (for the PU top to pulse on START: the ISS empties every region FIFO there).",
            "Every region has one FIFO queue, also in the replicated configuration: a line pushed once "
            "is popped once, by whichever read channel pops it (LOAD broadcast stalls while a masked "
            "FIFO-mode region's queue is full).",
        ])


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch-PU computation engine: regions, subroutines and their crossbar, "
                "LOAD broadcast/amem side, STORE side",
    params=PARAMS, build=build, datasheet=datasheet,
    configs={
        "default": {},
        "lanes16": {"LANES": 16},
        "small": {"LANES": 4, "NREGIONS": 4, "DEPTH": 32, "AMEM_DEPTH": 8, "MAX_DIM": 32,
                  "MAX_ITER": 64, "CONFIGS": (2 << 4) | (1 << 6)},
    },
    generator="rtl_gen/pipearch/pipearch_engine.py",
)
