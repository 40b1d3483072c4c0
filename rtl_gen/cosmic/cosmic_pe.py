"""``cosmic_pe`` core: the CoSMIC processing engine (CoSMIC section 5.1 "PE design",
Fig. 6; TABLA section 6.3).

Separate DATA / MODEL / INTERIM buffers (synchronous-read RAM, one read and one write
port each, all three read in the same cycle), a schedule memory holding a static
microcode program, an eight-stage pipeline

  1 read      the instruction (schedule memory output register) drives the three buffer
              read addresses
  2 register  buffer outputs (the RAM output registers)
  3 select    operand A and B multiplexers (buffers, zero, one); the bypass hit flags
              and port selects, priority-encoded and registered one-hot for stage 4
  4 execute 1 the operand multiplexer (forwarded results, the buffer operand, the
              left/right neighbour and bus input ports, read directly in this cycle);
              add sub lt gt min max pass complete here; the multiplier's four partial
              products and the nonlinear units' input compares are registered
  5 execute 2 the product (carry-save + one carry chain); the PWL segment select and
              slope/base ROM reads (registered)
  6 execute 3 mul rounds/saturates (complete); mac adds the product to the 72-bit
              accumulator (carry-select, one mac per cycle); the PWL slope x offset
              (the multiplier between registers)
  7 execute 4 mac rounds/saturates the accumulator; the PWL base + rounded product in
              one carry chain (complete)
  8 write back  in-order buffer write (a result completed earlier rides along and is
              forwarded from its pipeline register)

Outputs (left/right/bus) are written when the op completes: cycle k+5 for the
latency-1 ops, k+7 for mul, k+8 for mac and the nonlinear ops
(``golden.cosmic_pe.result_latency``/``out_offset``); every path is at most 20 logic
levels (issue 16; 46 with the single execute stage before),
and one instruction per cycle without interlocks.  The instruction set, its encoding
and the bit-true reference are in ``golden/cosmic_pe.py``.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always, always_comb, always_seq, block, concat, intbv

from golden.cosmic_pe import (DONE_OFFSET, HAZARD_DISTANCE, IN_OFFSET, NL_OPS, OPS,
                              PEConfig, _aw, nl_tables, result_latency)
from golden.fixedpoint import pwl_error_bound
from rtl_gen.common.blocks import round_sat, sat, sext
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.pipearch.split_mul import SPLIT_MUL_LATENCY, split_mul_reg
from rtl_gen.common.params import Param, ParamSet, multiple_of_8, power_of_two
from rtl_gen.common.ports import make_factory

KIND = "cosmic_pe"


def bits_for(n: int) -> int:
    return max(1, int(n).bit_length())


@block
def ram_1r1w(clk, we, wa, wd, ra, rd, depth):
    """Synchronous-read RAM (read-first on a same-address write): one process writes
    the array and the output register, so synthesis infers block RAM and the VHDL has
    a single driver."""
    mem = [sig_u(len(wd)) for _ in range(depth)]

    @always(clk.posedge)
    def ram():
        if we:
            mem[wa].next = wd
        rd.next = mem[ra]

    return ram


@block
def low_bits(x, y, n):
    """``y`` = the low ``n`` bits of ``x``, zero-extended to ``len(y)``."""
    k = len(y) - n
    if k == 0:
        @always_comb
        def c():
            y.next = x[n:]
    else:
        @always_comb
        def c():
            y.next = concat(intbv(0)[k:], x[n:])
    return c


@block
def round_sat_fast(v, y, shift):
    """``y = sat((v + 2**(shift-1)) >> shift)``, the same function as
    :func:`rtl_gen.common.blocks.round_sat`, with one ``len(y)+1``-bit carry chain instead
    of one over all of ``v >> shift``: the rounding bit is added to the low ``len(y)``
    bits of ``v >> shift``; the result is in range when the bits above them (compared
    with all-zeros / all-ones in parallel with the chain) plus that sum's carry are the
    sign extension of its top bit; otherwise it saturates toward the sign of ``v``."""
    wv, W = len(v), len(y)
    hw = wv - shift - W
    if shift == 0 or hw < 2:
        return round_sat(v, y, shift)
    lo = sig_u(W)
    rb = sig_u(1)
    s = sig_u(W + 1)
    hi = sig_u(hw)
    hin = sig_u(hw)
    neg = sig_b()
    nneg = sig_b()
    fill = ConcatSignal(*([nneg] * (W - 1)))

    @always_comb
    def parts():
        lo.next = v[shift + W:shift]
        rb.next = v[shift - 1]
        hi.next = v[wv:shift + W]
        neg.next = v[wv - 1]
        nneg.next = not v[wv - 1]

    @always_comb
    def inv():
        hin.next = ~hi

    @always_comb
    def inc():
        s.next = lo + rb

    @always_comb
    def outc():
        if (s[W] and hin == 0) or (not s[W] and ((hi == 0 and not s[W - 1]) or (hin == 0 and s[W - 1]))):
            y.next = s[W:].signed()
        else:
            y.next = concat(neg, fill).signed()

    return parts, inv, inc, outc


@block
def acc_csel(acc, clr, prod_e, acc_new, split):
    """``acc_new = sat((clr ? 0 : acc) + prod_e)`` (all ``len(acc)`` bits, signed) as a
    carry-select adder: the low ``split`` bits once, the high part twice (carry-in 0 and
    1, the latter as ``({ah, 1} + {ph, 1}) >> 1``), the low carry picks one."""
    A = len(acc)
    N0, N1 = split, len(acc) - split
    ai = sig_s(A)
    al, pl = sig_u(N0), sig_u(N0)
    ah, ph = sig_s(N1), sig_s(N1)
    slo = sig_u(N0 + 1)
    h0 = sig_s(N1 + 1)
    t1 = sig_s(N1 + 2)
    hs = sig_s(N1 + 1)
    full = sig_s(A + 1)

    @always_comb
    def gate():
        if clr:
            ai.next = 0
        else:
            ai.next = acc

    @always_comb
    def parts():
        al.next = ai[N0:]
        pl.next = prod_e[N0:]
        ah.next = ai[A:N0].signed()
        ph.next = prod_e[A:N0].signed()

    @always_comb
    def adds():
        slo.next = al + pl
        h0.next = ah + ph
        t1.next = concat(ah, True).signed() + concat(ph, True).signed()

    @always_comb
    def pick():
        if slo[N0]:
            hs.next = t1[N1 + 2:1].signed()
        else:
            hs.next = h0

    @always_comb
    def join():
        full.next = concat(hs, slo[N0:]).signed()

    return gate, parts, adds, pick, join, sat(full, acc_new)


def pwl_fold(table) -> bool:
    """True when :func:`pwl_pipe`'s folded last stages are exact for ``table``: for every
    segment (slope ``s``, base ``b``) and offset ``o`` the rounded product
    ``r = round(s * o, F)`` fits W bits and ``b + r`` stays within ``[y_min, y_max]``, so
    neither the W-bit saturations nor the output clamp of ``pwl_fx`` ever act, and
    ``y = b + (p >> F) + p[F-1]`` (``p = s * o``: one add with a carry in).  ``b + r`` is
    monotone in ``o``, so the two ends of each segment decide."""
    fmt = table.fmt
    F = fmt.F
    half = 1 << (F - 1)
    m = (1 << table.shift) - 1
    for b, s in zip(table.base, table.slope):
        for o in (0, m):
            r = (int(s) * o + half) >> F
            if not (fmt.min_int <= r <= fmt.max_int and table.y_min <= int(b) + r <= table.y_max):
                return False
    return True


def pwl_fold_eval(table, idx, off):
    """What :func:`pwl_pipe` computes, in NumPy (``idx``/``off`` arrays of segment index
    and offset), for the test that compares it with ``golden.fixedpoint.pwl_fx``."""
    import numpy as np
    F = table.fmt.F
    idx = np.asarray(idx, dtype=np.int64)
    p = np.asarray(table.slope, dtype=np.int64)[idx] * np.asarray(off, dtype=np.int64)
    return np.asarray(table.base, dtype=np.int64)[idx] + (p >> F) + ((p >> (F - 1)) & 1)


@block
def pwl_pipe(clk, rst, z, y, table):
    """``y = pwl_fx(z, table)`` (bit-exact with :func:`rtl_gen.common.nonlinear.pwl_comb`)
    over four stages: ``z`` in cycle c, ``y`` (combinational) in cycle c+3.

    1. ``z`` minus the domain's low end and ``z`` compared with both ends (registered);
    2. the clamp's selects (segment index and offset), the slope ROM (LUTs, sized to the
       table's slopes) and the base ROM (a block RAM may hold it: its output register is
       this stage's end, and nothing but the stage-3 register follows it), registered;
    3. the slope x offset product ``p`` (the multiplier between registers), registered;
    4. ``base + (p >> F) + p[F-1]`` (``base + round(p, F)``) in one carry chain.

    The fold (:func:`pwl_fold`: ``round(p, F)`` never saturates and the sum never leaves
    ``[y_min, y_max]``) holds for every table the parameter check lets through; the
    golden model's saturation and output clamp never act on those tables."""
    W = len(z)
    F = table.fmt.F
    sh = table.shift
    ib = table.index_bits
    ub = sh + ib
    lo, hi = table.lo, table.hi
    assert sh >= 1 and table.fmt.W == W
    assert table.fmt.min_int < lo and hi < table.fmt.max_int
    base_rom = tuple(int(b) for b in table.base)
    slope_rom = tuple(int(b) for b in table.slope)
    sw = max(2, max(abs(v) for v in slope_rom).bit_length() + 1)
    pw = max(sw + sh + 1, W + 1)
    assert pwl_fold(table), f"{table.name}: the PWL sum can saturate or need the clamp"
    zl = sig_s(W + 1)
    zl1 = sig_u(ub)
    ge1, lt1 = sig_b(), sig_b()
    idx_s, idx_b = sig_u(ib), sig_u(ib)
    off2, off3 = sig_u(sh), sig_u(sh)
    off3s = sig_s(sh + 1)
    slope_r, slope2, slope3 = sig_s(sw), sig_s(sw), sig_s(sw)
    base2, base3, base4 = sig_s(W), sig_s(W), sig_s(W)
    prod4 = sig_s(pw)
    q4 = sig_s(pw - F)
    qe = sig_s(W + 1)
    rb4 = sig_b()
    ta, tb, t4 = sig_s(W + 2), sig_s(W + 2), sig_s(W + 2)
    insts = []

    if lo < 0:
        nlo = -lo

        @always_comb
        def sub_lo():
            zl.next = z + nlo
    else:
        @always_comb
        def sub_lo():
            zl.next = z - lo

    zl_unused = sig_u(W + 1 - ub)    # z - lo above the offset/index bits (clamped instead)

    @always_comb
    def p1u():
        zl_unused.next = zl[W + 1:ub]

    @always_seq(clk.posedge, reset=rst)
    def p1():
        zl1.next = zl[ub:]
        ge1.next = z >= hi
        lt1.next = z < lo

    # stage 2: the clamp's selects (LUTs before the ROMs, so that Yosys cannot move a
    # register from a ROM address to its output, i.e. into stage 1); a z below the
    # domain reads segment 0 with its slope forced to 0 (a gate after the slope ROM,
    # which keeps that ROM in LUTs with a plain register after it: no block RAM read
    # port drives the multiplier)
    last = (hi - lo - 1) >> sh
    moff = (1 << sh) - 1

    @always_comb
    def clampz():
        if ge1:
            idx_s.next = last
            idx_b.next = last
            off2.next = moff
        elif lt1:
            idx_s.next = zl1[ub:sh]
            idx_b.next = 0
            off2.next = zl1[sh:]
        else:
            idx_s.next = zl1[ub:sh]
            idx_b.next = zl1[ub:sh]
            off2.next = zl1[sh:]

    @always_comb
    def p2rom():
        slope_r.next = slope_rom[int(idx_s)]

    @always_comb
    def p2romb():
        base2.next = base_rom[int(idx_b)]

    @always_comb
    def p2z():
        if lt1:
            slope2.next = 0
        else:
            slope2.next = slope_r

    @always_seq(clk.posedge, reset=rst)
    def p2():
        slope3.next = slope2
        off3.next = off2
        base3.next = base2

    insts += [sub_lo, p1u, p1, clampz, p2rom, p2romb, p2z, p2]

    # stage 3: the product (the multiplier between registers); the base passes
    @always_comb
    def p3o():
        off3s.next = concat(intbv(0)[1:], off3).signed()

    @always_seq(clk.posedge, reset=rst)
    def p3():
        prod4.next = slope3 * off3s
        base4.next = base3

    insts += [p3o, p3]

    # stage 4: base + (p >> F) + p[F-1] (= base + round(p, F)) in one carry chain
    @always_comb
    def p4q():
        q4.next = prod4[pw:F].signed()
        rb4.next = prod4[F - 1]

    insts.append(p4q)
    if pw - F < W + 1:
        insts.append(sext(q4, qe))
    else:
        qk = W + 1

        @always_comb
        def p4qt():
            qe.next = q4[qk:].signed()
        insts.append(p4qt)

    @always_comb
    def p4add():
        # ({base, rb} + {q, rb}) >> 1
        ta.next = concat(base4[W - 1], base4, rb4).signed()
        tb.next = concat(qe, rb4).signed()

    @always_comb
    def p4sum():
        t4.next = ta + tb

    # t4[0] (always 0), t4's top bit (the sum fits W bits) and the product bits below
    # the rounding bit
    unused = sig_u(F + 1)

    @always_comb
    def p4u():
        unused.next = concat(t4[W + 1], prod4[F - 1:], t4[0])

    @always_comb
    def p4():
        y.next = t4[W + 1:1].signed()

    insts += [p4add, p4sum, p4u, p4]
    return insts


@block
def mul2_csa(clk, rst, en, a_u, b_u, p):
    """``p = a * b`` (signed ``W`` x ``W``, ``len(p) == 2*W``) two enabled stages after
    ``a_u``/``b_u``, like :func:`rtl_gen.pipearch.split_mul.split_mul_reg` (the four
    half-width partial products registered straight out of their multipliers), but the
    second stage adds the three terms above bit ``W//2`` -- ``{ah*bh, al*bl}``,
    ``al*bh``, ``ah*bl`` -- through one carry-save level (sum and carry bit per column,
    which fits the LUT in front of each carry-chain bit) and one carry chain, instead
    of two chained adders.  ``W <= 18``: :func:`split_mul_reg` (one multiplier)."""
    W = len(a_u)
    if W <= 18:
        return split_mul_reg(clk, rst, en, None, a_u, b_u, p)
    LO = W // 2
    HI = W - LO
    HW = 2 * W - LO
    ac, bc = sig_u(W), sig_u(W)

    @always_comb
    def copy():
        ac.next = a_u
        bc.next = b_u

    alu, blu = sig_u(LO), sig_u(LO)
    al, bl = sig_s(LO + 1), sig_s(LO + 1)
    ah, bh = sig_s(HI), sig_s(HI)

    @always_comb
    def halves():
        alu.next = ac[LO:]
        blu.next = bc[LO:]
        al.next = concat(False, ac[LO:]).signed()
        bl.next = concat(False, bc[LO:]).signed()
        ah.next = ac[W:LO].signed()
        bh.next = bc[W:LO].signed()

    ll = sig_u(2 * LO)
    lh = sig_s(LO + 1 + HI)
    hl = sig_s(LO + 1 + HI)
    hh = sig_s(2 * HI)

    @always_seq(clk.posedge, reset=rst)
    def st1():
        if en:
            ll.next = alu * blu
            lh.next = al * bh
            hl.next = ah * bl
            hh.next = ah * bh

    lhe, hle = sig_s(HW), sig_s(HW)
    ta, tb, tc = sig_u(HW), sig_u(HW), sig_u(HW)
    xs, xc, mj = sig_u(HW), sig_u(HW), sig_u(HW - 1)
    hsum = sig_u(HW)     # modulo 2**HW (the product fits)

    @always_comb
    def terms():
        ta.next = concat(hh, ll[2 * LO:LO])
        tb.next = lhe[HW:]
        tc.next = hle[HW:]

    @always_comb
    def csa():
        xs.next = ta ^ tb ^ tc
        mj.next = (ta[HW - 1:] & tb[HW - 1:]) | (ta[HW - 1:] & tc[HW - 1:]) | (tb[HW - 1:] & tc[HW - 1:])

    @always_comb
    def shc():
        xc.next = concat(mj, False)

    @always_comb
    def cpa():
        hsum.next = xs + xc

    @always_seq(clk.posedge, reset=rst)
    def st2():
        if en:
            p.next = concat(hsum, ll[LO:]).signed()

    return copy, halves, st1, sext(lh, lhe), sext(hl, hle), terms, csa, shc, cpa, st2


def ports_of(p: dict) -> list[Port]:
    cfg = PEConfig.from_params(p)
    W = p["W"]
    IW = cfg.instr_w
    AW = cfg.waw
    SAW = _aw(p["SCHED_DEPTH"])
    LDA = max(AW, SAW)
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset (buffer and schedule contents are kept)"),
        Port("start", "in", 1, "run instructions 0..cfg_len-1 of the schedule memory (sampled while busy is low)"),
        Port("cfg_len", "in", bits_for(p["SCHED_DEPTH"]), "program length, 1..SCHED_DEPTH"),
        Port("busy", "out", 1, "a program is running (high from the start edge until done)"),
        Port("done", "out", 1, "one-cycle pulse: the last instruction has written back (or start had a bad cfg_len)"),
        Port("err", "out", 3, "sticky until the next start: bit0 illegal opcode, bit1 nonlinear "
                              "function not instantiated, bit2 bad cfg_len"),
        Port("ld_en", "in", 1, "load port write strobe (ignored while busy" +
             ("; a DATA load while busy fills the shadow bank)" if p.get("DBUF") else ")")),
        Port("ld_sel", "in", 2, "load target: 0 schedule memory, 1 DATA, 2 MODEL, 3 INTERIM"),
        Port("ld_addr", "in", LDA, "load address (low log2(depth) bits of the target used)"),
        Port("ld_data", "in", max(W, IW), f"load data: a {IW}-bit microcode word or a {W}-bit buffer word (low bits)"),
        Port("rb_sel", "in", 2, "read-back buffer: 1 DATA, 2 MODEL, 3 INTERIM (0 reads as zero)"),
        Port("rb_addr", "in", AW, "read-back address (used while no instruction is in stage 1)"),
        Port("rb_data", "out", W, "read-back word, valid the cycle after rb_sel/rb_addr"),
        Port("left_in", "in", W, "left neighbour link input (read by the instruction in stage 4, "
                                 "cycle k+4, combinationally: drive it from a register)"),
        Port("right_in", "in", W, "right neighbour link input (read in stage 4, like left_in)"),
        Port("bus_in", "in", W, "row bus input (read in stage 4, like left_in)"),
        Port("left_out", "out", W, "left neighbour link output (holds the last value written)"),
        Port("left_out_valid", "out", 1, "left_out written by the instruction in stage 5 (one cycle)"),
        Port("right_out", "out", W, "right neighbour link output"),
        Port("right_out_valid", "out", 1, "right_out written by the instruction in stage 5"),
        Port("bus_out", "out", W, "row bus output"),
        Port("bus_out_valid", "out", 1, "bus_out written by the instruction in stage 5"),
    ]


def build(p):
    cfg = PEConfig.from_params(p)
    fmt = cfg.fmt
    W, F = p["W"], p["F"]
    AW = cfg.waw
    DAW, MAW, IAW = cfg.daw, cfg.maw, cfg.iaw
    SD = p["SCHED_DEPTH"]
    SAW = _aw(SD)
    LW = bits_for(SD)
    IW = cfg.instr_w
    ACC = cfg.acc_w
    BYPASS = p["BYPASS"]
    DBUF = p["DBUF"]
    tables = nl_tables(fmt, p["NL"])
    lay = {n: (lsb + w, lsb) for n, lsb, w in cfg.layout()}
    ONE = fmt.one
    ILL_ROM = tuple(1 if c >= 14 else 0 for c in range(16))
    LAT_ROM = tuple(result_latency(c) for c in range(16))
    assert all(LAT_ROM[OPS[n]] == 1 for n in ("add", "sub", "lt", "gt", "min", "max", "pass")) \
        and LAT_ROM[OPS["mul"]] == 3 and LAT_ROM[OPS["mac"]] == 4 \
        and all(LAT_ROM[OPS[n]] == 4 for n in NL_OPS) and DONE_OFFSET == IN_OFFSET + 4, \
        "golden.cosmic_pe.RESULT_LATENCY / DONE_OFFSET do not match this pipeline"
    assert SPLIT_MUL_LATENCY == 2
    NLM_ROM = tuple(1 if any(c == OPS[n] and n not in tables for n in NL_OPS) else 0 for c in range(16))
    OP_ADD, OP_SUB, OP_MUL, OP_MAC = OPS["add"], OPS["sub"], OPS["mul"], OPS["mac"]
    OP_LT, OP_GT, OP_MIN, OP_MAX = OPS["lt"], OPS["gt"], OPS["min"], OPS["max"]
    OP_SIG, OP_GAU, OP_REC, OP_LOG = OPS["sigmoid"], OPS["gauss"], OPS["recip"], OPS["log"]
    ops_ = (lay["op"], lay["clr"], lay["src_a"], lay["src_b"], lay["ra_d"], lay["ra_m"],
            lay["ra_i"], lay["wb"], lay["wa"], lay["out"])
    (OPH, OPL), (_, CLB), (SAH, SAL), (SBH, SBL), (RDH, RDL), (RMH, RML), (RIH, RIL), \
        (WBH, WBL), (WAH, WAL), (OUH, OUL) = ops_

    @block
    def cosmic_pe(clk, rst, start, cfg_len, busy, done, err,
                  ld_en, ld_sel, ld_addr, ld_data, rb_sel, rb_addr, rb_data,
                  left_in, right_in, bus_in,
                  left_out, left_out_valid, right_out, right_out_valid, bus_out, bus_out_valid):
        insts = []
        # ---------------------------------------------------------- scheduler
        running = sig_b()
        pc = sig_u(LW)
        lm1 = sig_u(LW)
        len_bad = sig_b()
        v1, v2, v3, v4, v5, v6, v7, v8 = (sig_b() for _ in range(8))
        l1, l2, l3, l4, l5, l6, l7, l8 = (sig_b() for _ in range(8))
        e_ill = sig_b()
        e_nl = sig_b()
        e_len = sig_b()
        go = sig_b()

        @always_comb
        def ctl_c():
            len_bad.next = cfg_len == 0 or cfg_len > SD
            go.next = start and not busy
            err.next = concat(e_len, e_nl, e_ill)

        @always_seq(clk.posedge, reset=rst)
        def sched():
            done.next = False
            v1.next = running
            l1.next = running and pc == lm1
            if running:
                if pc == lm1:
                    running.next = False
                else:
                    pc.next = pc + 1
            if v8 and l8:
                busy.next = False
                done.next = True
            if go:
                if len_bad:
                    done.next = True
                else:
                    busy.next = True
                    running.next = True
                    pc.next = 0
                    lm1.next = cfg_len - 1

        # schedule memory (synchronous read: its output register is the stage-1 instruction)
        s_we = sig_b()
        s_wa = sig_u(SAW)
        s_wd = sig_u(IW)
        s_ra = sig_u(SAW)
        ir = sig_u(IW)

        @always_comb
        def s_c():
            s_we.next = ld_en and ld_sel == 0 and not busy
            s_wa.next = ld_addr[SAW:]
            s_wd.next = ld_data[IW:]
            s_ra.next = pc[SAW:]

        insts.append(ram_1r1w(clk, s_we, s_wa, s_wd, s_ra, ir, SD))

        # ---------------------------------------------------------- stage 1: read
        op1 = sig_u(4)
        clr1 = sig_b()
        sa1 = sig_u(3)
        sb1 = sig_u(3)
        rad1 = sig_u(AW)
        ram1 = sig_u(AW)
        rai1 = sig_u(AW)
        wb1 = sig_u(2)
        wa1 = sig_u(AW)
        out1 = sig_u(3)

        @always_comb
        def dec():
            op1.next = ir[OPH:OPL]
            clr1.next = ir[CLB]
            sa1.next = ir[SAH:SAL]
            sb1.next = ir[SBH:SBL]
            rad1.next = ir[RDH:RDL]
            ram1.next = ir[RMH:RML]
            rai1.next = ir[RIH:RIL]
            wb1.next = ir[WBH:WBL]
            wa1.next = ir[WAH:WAL]
            out1.next = ir[OUH:OUL]

        # masked (per-buffer) addresses: the write-back address, and for the bypass
        # comparators the operands' buffer and address
        wad, wam, wai = sig_u(AW), sig_u(AW), sig_u(AW)
        insts += [low_bits(wa1, wad, DAW), low_bits(wa1, wam, MAW), low_bits(wa1, wai, IAW)]
        abuf1, bbuf1 = sig_u(2), sig_u(2)
        aad1, bad1, wam1 = sig_u(AW), sig_u(AW), sig_u(AW)

        @always_comb
        def wamask():
            if wb1 == 1:
                wam1.next = wad
            elif wb1 == 2:
                wam1.next = wam
            else:
                wam1.next = wai

        insts.append(wamask)
        if BYPASS:
            mad, mam, mai = sig_u(AW), sig_u(AW), sig_u(AW)
            insts += [low_bits(rad1, mad, DAW), low_bits(ram1, mam, MAW), low_bits(rai1, mai, IAW)]

            @block
            def opaddr(s, bsel, addr):
                @always_comb
                def c():
                    bsel.next = 0
                    addr.next = 0
                    if s == 0:
                        bsel.next = 1
                        addr.next = mad
                    elif s == 1:
                        bsel.next = 2
                        addr.next = mam
                    elif s == 2:
                        bsel.next = 3
                        addr.next = mai
                return c

            insts += [opaddr(sa1, abuf1, aad1), opaddr(sb1, bbuf1, bad1)]

        # buffers: read address from stage 1 (or the read-back port when stage 1 is
        # empty), write from stage 5 (or the load port while idle)
        rd_d, rd_m, rd_i = sig_u(W), sig_u(W), sig_u(W)
        res_w = sig_s(W)
        we_w = sig_b()
        wb_w = sig_u(2)
        wa_w = sig_u(AW)
        bufs = []
        if DBUF:
            # DATA in two banks: the program reads and writes bank ``bk``; a DATA load
            # writes the other bank while busy and both banks while idle; ``bk`` toggles
            # at every accepted start
            bk = sig_b()
            rd_d0, rd_d1 = sig_u(W), sig_u(W)

            @always_seq(clk.posedge, reset=rst)
            def bank():
                if go and not len_bad:
                    bk.next = not bk

            @block
            def dbufmux(we, wa, wd, ra, prog_side):
                @always_comb
                def c():
                    if prog_side:
                        we.next = we_w and wb_w == 1
                        wa.next = wa_w[DAW:]
                        wd.next = res_w[W:]
                    else:
                        we.next = ld_en and ld_sel == 1
                        wa.next = ld_addr[DAW:]
                        wd.next = ld_data[W:]
                    if v1:
                        ra.next = rad1[DAW:]
                    else:
                        ra.next = rb_addr[DAW:]
                return c

            ps0, ps1 = sig_b(), sig_b()

            @always_comb
            def bankside():
                ps0.next = busy and not bk
                ps1.next = busy and bk
                if bk:
                    rd_d.next = rd_d1
                else:
                    rd_d.next = rd_d0

            bufs += [bank, bankside]
            for ps, rdv in ((ps0, rd_d0), (ps1, rd_d1)):
                we, wa, wd, ra = sig_b(), sig_u(DAW), sig_u(W), sig_u(DAW)
                bufs += [dbufmux(we, wa, wd, ra, ps), ram_1r1w(clk, we, wa, wd, ra, rdv, cfg.DATA_DEPTH)]
        for code, (aw_, radr, rdv) in ((1, (DAW, rad1, rd_d)), (2, (MAW, ram1, rd_m)), (3, (IAW, rai1, rd_i))):
            if DBUF and code == 1:
                continue
            we = sig_b()
            wa = sig_u(aw_)
            wd = sig_u(W)
            ra = sig_u(aw_)

            @block
            def bufmux(we, wa, wd, ra, radr, code, aw_):
                @always_comb
                def c():
                    if busy:
                        we.next = we_w and wb_w == code
                        wa.next = wa_w[aw_:]
                        wd.next = res_w[W:]
                    else:
                        we.next = ld_en and ld_sel == code
                        wa.next = ld_addr[aw_:]
                        wd.next = ld_data[W:]
                    if v1:
                        ra.next = radr[aw_:]
                    else:
                        ra.next = rb_addr[aw_:]
                return c

            depth = cfg.depths[code]
            bufs += [bufmux(we, wa, wd, ra, radr, code, aw_), ram_1r1w(clk, we, wa, wd, ra, rdv, depth)]
        insts += bufs

        rbq = sig_u(2)

        @always_seq(clk.posedge, reset=rst)
        def rbreg():
            rbq.next = rb_sel

        @always_comb
        def rbmux():
            if rbq == 1:
                rb_data.next = rd_d
            elif rbq == 2:
                rb_data.next = rd_m
            elif rbq == 3:
                rb_data.next = rd_i
            else:
                rb_data.next = 0

        # ---------------------------------------------------------- pipeline control word
        # {sa, sb, op, clr, abuf, aaddr, bbuf, baddr, wb, waddr, out}, MSB first; stage 4
        # keeps the operand selects too (codes 3-5 pick the link/bus input ports there)
        # (without BYPASS the operand buffer/address fields are not carried)
        cfields = (("sa", 3), ("sb", 3)) + (
            (("ab", 2), ("aa", AW), ("bb", 2), ("ba", AW)) if BYPASS else ()) + (
            ("op", 4), ("clr", 1), ("wb", 2), ("wa", AW), ("out", 3))
        CW4 = 4 + 1 + 2 + AW + 3     # the low fields: what stage 4 on needs
        CW = sum(w for _, w in cfields)
        cpos, pos = {}, CW
        for n_, w_ in cfields:
            cpos[n_] = (pos, pos - w_)
            pos -= w_
        ctl1, c2, c3 = sig_u(CW), sig_u(CW), sig_u(CW)
        c4 = sig_u(CW4)

        if BYPASS:
            @always_comb
            def mkctl():
                ctl1.next = concat(sa1, sb1, abuf1, aad1, bbuf1, bad1, op1, clr1, wb1, wam1, out1)
        else:
            @always_comb
            def mkctl():
                ctl1.next = concat(sa1, sb1, op1, clr1, wb1, wam1, out1)

        @always_seq(clk.posedge, reset=rst)
        def st1():
            v2.next = v1
            l2.next = l1
            c2.next = ctl1

        # ---------------------------------------------------------- stage 2: register
        d3, m3, i3 = (sig_s(W) for _ in range(3))


        @always_seq(clk.posedge, reset=rst)
        def st2():
            v3.next = v2
            l3.next = l2
            c3.next = c2
            d3.next = rd_d.signed()
            m3.next = rd_m.signed()
            i3.next = rd_i.signed()

        # ---------------------------------------------------------- stage 3: select
        opa_c, opb_c, opa4, opb4 = (sig_s(W) for _ in range(4))

        @block
        def select(s, o):
            @always_comb
            def c():
                if s == 0:
                    o.next = d3
                elif s == 1:
                    o.next = m3
                elif s == 2:
                    o.next = i3
                elif s == 7:
                    o.next = ONE
                else:
                    o.next = 0      # zero; links and bus (3-5) are selected in stage 4
            return c

        sa3, sb3 = sig_u(3), sig_u(3)
        SA3H, SA3L = cpos["sa"]
        SB3H, SB3L = cpos["sb"]

        @always_comb
        def dec3():
            sa3.next = c3[SA3H:SA3L]
            sb3.next = c3[SB3H:SB3L]

        insts += [dec3, select(sa3, opa_c), select(sb3, opb_c)]

        # per-stage control of stages 4..8 (stage 4 decodes c4; 5..8 are registers)
        op4, op5, op6, op7 = (sig_u(4) for _ in range(4))
        clr4, clr5, clr6 = sig_b(), sig_b(), sig_b()
        wb4, wb5, wb6, wb7 = (sig_u(2) for _ in range(4))
        wa4, wa5, wa6, wa7 = (sig_u(AW) for _ in range(4))
        out4, out5, out6, out7 = (sig_u(3) for _ in range(4))
        ok4, ok5, ok6, ok7 = (sig_b() for _ in range(4))
        we4, we5, we6, we7 = (sig_b() for _ in range(4))
        # latency class of the op: 1 (add ... pass), 3 (mul), 4 (mac, nonlinear)
        sh4, sh5, mu4, mu5, mu6, lg4, lg5, lg6, lg7 = (sig_b() for _ in range(9))
        (P_OPH, P_OPL), (P_CL, P_CLB), (P_WBH, P_WBL), (P_WAH, P_WAL), (P_OUH, P_OUL) = (
            cpos[k] for k in ("op", "clr", "wb", "wa", "out"))

        @always_comb
        def dec4():
            op4.next = c4[P_OPH:P_OPL]
            clr4.next = c4[P_CLB]
            wb4.next = c4[P_WBH:P_WBL]
            wa4.next = c4[P_WAH:P_WAL]
            out4.next = c4[P_OUH:P_OUL]

        ill_c = sig_u(1)
        nlm_c = sig_u(1)
        lat_c = sig_u(3)

        @always_comb
        def legal():
            ill_c.next = ILL_ROM[int(op4)]
            nlm_c.next = NLM_ROM[int(op4)]

        @always_comb
        def latc():
            lat_c.next = LAT_ROM[int(op4)]

        @always_comb
        def okc():
            ok4.next = v4 and ill_c == 0 and nlm_c == 0 and op4 != 0
            we4.next = v4 and ill_c == 0 and nlm_c == 0 and op4 != 0 and wb4 != 0
            sh4.next = lat_c == 1
            mu4.next = lat_c == 3
            lg4.next = lat_c == 4

        insts += [dec4, legal, latc, okc]

        # operand sources of the stage-4 multiplexer, one-hot selects registered in
        # stage 3: with BYPASS the results of the instructions 1..3 slots ahead
        # (registers r5..r7, when their op has completed), 4 ahead (r8, the write-back
        # register), 5..7 ahead (three retired write-backs), then the buffer/constant
        # operand; the link and bus ports for operand codes 3-5.
        r5, r6, r7, r8 = (sig_s(W) for _ in range(4))
        if BYPASS:
            h1w, h2w = sig_b(), sig_b()
            h1b, h2b = sig_u(2), sig_u(2)
            h1a, h2a = sig_u(AW), sig_u(AW)
            h1v, h2v, h3v = sig_s(W), sig_s(W), sig_s(W)

            @always_seq(clk.posedge, reset=rst)
            def hist():
                h1w.next = we_w
                h1b.next = wb_w
                h1a.next = wa_w
                h1v.next = res_w
                h2w.next = h1w
                h2b.next = h1b
                h2a.next = h1a
                h2v.next = h1v
                h3v.next = h2v

            insts.append(hist)
            NS = 11
            srcs = (r5, r6, r7, res_w, h1v, h2v, h3v)
            # the entry each source holds next cycle: (write enable and complete, buffer, address)
            e5, e6, e7 = sig_b(), sig_b(), sig_b()

            @always_comb
            def ents():
                e5.next = we4 and sh4
                e6.next = we5 and sh5
                e7.next = we6 and not lg6

            insts.append(ents)
            ents_next = ((e5, wb4, wa4), (e6, wb5, wa5), (e7, wb6, wa6), (we7, wb7, wa7),
                         (we_w, wb_w, wa_w), (h1w, h1b, h1a), (h2w, h2b, h2a))
            ab3, bb3 = sig_u(2), sig_u(2)
            aa3, ba3 = sig_u(AW), sig_u(AW)
            (P_ABH, P_ABL), (P_AAH, P_AAL), (P_BBH, P_BBL), (P_BAH, P_BAL) = (
                cpos[k] for k in ("ab", "aa", "bb", "ba"))

            @always_comb
            def dec3b():
                ab3.next = c3[P_ABH:P_ABL]
                aa3.next = c3[P_AAH:P_AAL]
                bb3.next = c3[P_BBH:P_BBL]
                ba3.next = c3[P_BAH:P_BAL]

            insts.append(dec3b)

            @block
            def hitb(en, wb_, wa_, bsel, addr, h):
                @always_comb
                def c():
                    h.next = en and bsel != 0 and wb_ == bsel and wa_ == addr
                return c

            @block
            def onehot(s, hits, sel):
                """Priority (youngest complete write first) and the port codes as a
                one-hot vector: bits 0..6 the forwarding sources, 7 the buffer or
                constant operand, 8/9/10 left_in/right_in/bus_in."""
                h0, h1_, h2_, h3_, h4, h5, h6 = hits
                S0, S1, S2, S3, S4, S5, S6, S7, S8, S9, S10 = (1 << i for i in range(11))

                @always_comb
                def c():
                    if s == 3:
                        sel.next = S8
                    elif s == 4:
                        sel.next = S9
                    elif s == 5:
                        sel.next = S10
                    elif h0:
                        sel.next = S0
                    elif h1_:
                        sel.next = S1
                    elif h2_:
                        sel.next = S2
                    elif h3_:
                        sel.next = S3
                    elif h4:
                        sel.next = S4
                    elif h5:
                        sel.next = S5
                    elif h6:
                        sel.next = S6
                    else:
                        sel.next = S7
                return c

            sel_a_c, sel_b_c = sig_u(NS), sig_u(NS)
            for bsel, addr, s_, selc in ((ab3, aa3, sa3, sel_a_c), (bb3, ba3, sb3, sel_b_c)):
                hits = tuple(sig_b() for _ in range(7))
                insts += [hitb(en, wb_, wa_, bsel, addr, h) for (en, wb_, wa_), h in zip(ents_next, hits)]
                insts.append(onehot(s_, hits, selc))
        else:
            NS = 4
            srcs = ()

            @block
            def onehot(s, sel):
                S0, S1, S2, S3 = 1, 2, 4, 8
                @always_comb
                def c():
                    if s == 3:
                        sel.next = S1
                    elif s == 4:
                        sel.next = S2
                    elif s == 5:
                        sel.next = S3
                    else:
                        sel.next = S0
                return c

            sel_a_c, sel_b_c = sig_u(NS), sig_u(NS)
            insts += [onehot(sa3, sel_a_c), onehot(sb3, sel_b_c)]
        sel_a4, sel_b4 = sig_u(NS), sig_u(NS)

        @always_seq(clk.posedge, reset=rst)
        def st3():
            v4.next = v3
            l4.next = l3
            c4.next = c3[CW4:]
            opa4.next = opa_c
            opb4.next = opb_c
            sel_a4.next = sel_a_c
            sel_b4.next = sel_b_c

        # ---------------------------------------------------------- stage 4: execute 1
        fa, fb = sig_s(W), sig_s(W)
        fa_u, fb_u = sig_u(W), sig_u(W)

        @block
        def andmask(x, sel, i, m):
            @always_comb
            def c():
                if sel[i]:
                    m.next = x
                else:
                    m.next = 0
            return c

        @block
        def orall(ms, o):
            if len(ms) == 4:
                a0, a1, a2, a3 = ms

                @always_comb
                def c():
                    o.next = a0 | a1 | a2 | a3
            else:
                a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10 = ms

                @always_comb
                def c():
                    o.next = a0 | a1 | a2 | a3 | a4 | a5 | a6 | a7 | a8 | a9 | a10
            return c

        lin_s, rin_s, bin_s = sig_s(W), sig_s(W), sig_s(W)

        @always_comb
        def ports_s():
            lin_s.next = left_in.signed()
            rin_s.next = right_in.signed()
            bin_s.next = bus_in.signed()

        insts.append(ports_s)
        for raw, sel, o in ((opa4, sel_a4, fa), (opb4, sel_b4, fb)):
            order = srcs + (raw, lin_s, rin_s, bin_s)
            ms = tuple(sig_s(W) for _ in order)
            insts += [andmask(x, sel, i, m) for i, (x, m) in enumerate(zip(order, ms))]
            insts.append(orall(ms, o))

        @always_comb
        def unsg():
            fa_u.next = fa[W:]
            fb_u.next = fb[W:]

        insts.append(unsg)

        sum_ab, dif_ab = sig_s(W + 1), sig_s(W + 1)
        add_s, sub_s = sig_s(W), sig_s(W)

        @always_comb
        def alu_arith():
            sum_ab.next = fa + fb
            dif_ab.next = fa - fb

        insts += [alu_arith, sat(sum_ab, add_s), sat(dif_ab, sub_s)]

        res_c = sig_s(W)

        @always_comb
        def resmux():
            if op4 == OP_ADD:
                res_c.next = add_s
            elif op4 == OP_SUB:
                res_c.next = sub_s
            elif op4 == OP_LT:
                if fa < fb:
                    res_c.next = ONE
                else:
                    res_c.next = 0
            elif op4 == OP_GT:
                if fa > fb:
                    res_c.next = ONE
                else:
                    res_c.next = 0
            elif op4 == OP_MIN:
                if fa < fb:
                    res_c.next = fa
                else:
                    res_c.next = fb
            elif op4 == OP_MAX:
                if fa > fb:
                    res_c.next = fa
                else:
                    res_c.next = fb
            else:
                res_c.next = fa          # pass (and ops whose result comes later)

        # the multiplier: partial products registered in stage 4, the product in stage 5
        prod6 = sig_s(2 * W)
        insts += [resmux, mul2_csa(clk, rst, busy, fa_u, fb_u, prod6)]

        # the nonlinear units: four stages from stage 4, the value in stage 7
        ys = {}
        for name in ("sigmoid", "gauss", "recip", "log"):
            if name in tables:
                y = sig_s(W)
                ys[name] = y
                insts.append(pwl_pipe(clk, rst, fa, y, tables[name]))

        # ---------------------------------------------------------- stages 5..7
        @always_seq(clk.posedge, reset=rst)
        def pipe():
            v5.next = v4
            l5.next = l4
            v6.next = v5
            l6.next = l5
            v7.next = v6
            l7.next = l6
            v8.next = v7
            l8.next = l7
            op5.next = op4
            op6.next = op5
            op7.next = op6
            clr5.next = clr4
            clr6.next = clr5
            wb5.next = wb4
            wb6.next = wb5
            wb7.next = wb6
            wb_w.next = wb7
            wa5.next = wa4
            wa6.next = wa5
            wa7.next = wa6
            wa_w.next = wa7
            out5.next = out4
            out6.next = out5
            out7.next = out6
            ok5.next = ok4
            ok6.next = ok5
            ok7.next = ok6
            we5.next = we4
            we6.next = we5
            we7.next = we6
            we_w.next = we7
            sh5.next = sh4
            mu5.next = mu4
            mu6.next = mu5
            lg5.next = lg4
            lg6.next = lg5
            lg7.next = lg6

        insts.append(pipe)

        # stage 6: the accumulator (one mac per cycle: its carry-select add is the loop)
        # and the mul's rounding
        acc = sig_s(ACC)
        prod_e = sig_s(ACC)
        acc_new = sig_s(ACC)
        mul_s = sig_s(W)
        insts += [sext(prod6, prod_e), acc_csel(acc, clr6, prod_e, acc_new, ACC // 2),
                  round_sat_fast(prod6, mul_s, F)]

        # stage 7: the mac's rounding (of the accumulator register) and the nonlinear value
        mac_s = sig_s(W)
        insts.append(round_sat_fast(acc, mac_s, F))
        r7n, r8n = sig_s(W), sig_s(W)

        @always_comb
        def r7mux():
            if mu6:
                r7n.next = mul_s
            else:
                r7n.next = r6

        y_sig = ys.get("sigmoid", mac_s)
        y_gau = ys.get("gauss", mac_s)
        y_rec = ys.get("recip", mac_s)
        y_log = ys.get("log", mac_s)

        @always_comb
        def r8mux():
            if op7 == OP_SIG:
                r8n.next = y_sig
            elif op7 == OP_GAU:
                r8n.next = y_gau
            elif op7 == OP_REC:
                r8n.next = y_rec
            elif op7 == OP_LOG:
                r8n.next = y_log
            elif op7 == OP_MAC:
                r8n.next = mac_s
            else:
                r8n.next = r7

        @always_seq(clk.posedge, reset=rst)
        def st_res():
            r5.next = res_c
            r6.next = r5
            r7.next = r7n
            res_w.next = r8n
            if v6 and op6 == OP_MAC:
                acc.next = acc_new
            if v4 and ill_c == 1:
                e_ill.next = True
            if v4 and nlm_c == 1:
                e_nl.next = True
            if go:
                acc.next = 0
                e_ill.next = False
                e_nl.next = False
                e_len.next = len_bad

        # outputs: written when the op completes (stage 4, 6 or 7); of two completing
        # in one cycle the later instruction (the shorter latency) wins
        o4, o6, o7 = sig_u(3), sig_u(3), sig_u(3)

        @always_comb
        def outsel():
            if ok4 and sh4:
                o4.next = out4
            else:
                o4.next = 0
            if ok6 and mu6:
                o6.next = out6
            else:
                o6.next = 0
            if ok7 and lg7:
                o7.next = out7
            else:
                o7.next = 0

        @block
        def outreg(i, q, qv):
            @always_seq(clk.posedge, reset=rst)
            def r():
                qv.next = o4[i] or o6[i] or o7[i]
                if o4[i]:
                    q.next = res_c[W:]
                elif o6[i]:
                    q.next = mul_s[W:]
                elif o7[i]:
                    q.next = r8n[W:]
            return r

        insts += [r7mux, r8mux, st_res, outsel, outreg(0, left_out, left_out_valid),
                  outreg(1, right_out, right_out_valid), outreg(2, bus_out, bus_out_valid)]
        insts += [ctl_c, sched, s_c, dec, rbreg, rbmux, mkctl, st1, st2, st3]
        return insts

    ports = ports_of(p)
    return make_factory(cosmic_pe, ports), ports


def datasheet(p):
    cfg = PEConfig.from_params(p)
    W, F = p["W"], p["F"]
    AW = cfg.waw
    tabs = nl_tables(cfg.fmt, p["NL"])
    fields = []
    for name, lsb, w in cfg.layout():
        meaning = {
            "op": "0 nop, 1 add, 2 sub, 3 mul, 4 mac, 5 lt, 6 gt, 7 min, 8 max, 9 pass, 10 sigmoid, "
                  "11 gauss, 12 recip, 13 log; 14-15 illegal (err bit0, write-back suppressed)",
            "clr": "mac: start a new accumulation (acc := 0 before adding); ignored by other ops",
            "src_a": "operand A: 0 DATA[ra_d], 1 MODEL[ra_m], 2 INTERIM[ra_i], 3 left_in, 4 right_in, "
                     "5 bus_in, 6 zero, 7 one (2**F)",
            "src_b": "operand B (same codes; unary ops ignore it)",
            "ra_d": "DATA buffer read address (low log2(DATA_DEPTH) bits used)",
            "ra_m": "MODEL buffer read address",
            "ra_i": "INTERIM buffer read address",
            "wb": "write-back buffer: 0 none, 1 DATA, 2 MODEL, 3 INTERIM",
            "wa": "write-back address (low log2(depth) bits of the selected buffer)",
            "out": "outputs written in stage 5: bit0 left_out, bit1 right_out, bit2 bus_out",
        }[name]
        fields.append((f"{name} [{lsb + w - 1}:{lsb}]", str(w), meaning))
    nl_txt = ", ".join(f"{n} (domain [{t.domain[0]:g}, {t.domain[1]:g}), error <= "
                       f"{pwl_error_bound(t):.2g})"
                       for n, t in tabs.items()) or "none"
    return Datasheet(
        summary=("CoSMIC processing engine: DATA/MODEL/INTERIM buffers read in parallel, a static "
                 "microcode schedule (one instruction per cycle, no fetch from main memory, no "
                 "interlock), an eight-stage pipeline (1 read buffers, 2 register, 3 select "
                 "operands, 4-7 execute: simple ALU ops in 4, mul in 4-6, mac and the nonlinear "
                 "units in 4-7; 8 write back) with a bypass of every completed result into "
                 "stage 4, and a wide multiply-accumulator.  Bit-exact with "
                 "`golden.cosmic_pe.PEModel`; assemble programs with `golden.cosmic_pe.Assembler`."),
        latency=(f"instruction k (0-based) is in stage 1 in cycle k+1 after the edge that accepted "
                 f"`start`, reads its link/bus input ports in cycle k+{IN_OFFSET} (stage 4), its outputs are "
                 f"valid in cycle k+{IN_OFFSET}+L with L its op's result latency (1: add sub lt gt min max "
                 f"pass, 3: mul, 4: mac sigmoid gauss recip log), its buffer write lands at the end of "
                 f"cycle k+{DONE_OFFSET}; `done` is high in cycle cfg_len+{DONE_OFFSET}"),
        throughput="one instruction per cycle, always (no stalls); with BYPASS=1 a dependent "
                   "instruction may follow its producer L slots later (L = 1 for add and the "
                   "other simple ops, so a dependent add chain issues back to back), a mac "
                   "chain into the accumulator issues one term per cycle; with BYPASS=0 a "
                   f"reader must be {HAZARD_DISTANCE} slots after the writer",
        fields=fields,
        fields_title=f"Microcode word ({cfg.instr_w} bits, loaded with ld_sel=0)",
        notes=[
            f"Number format: signed Q({W},{F}); add/sub saturate; mul rounds the full product to "
            "nearest (ties toward +inf) and saturates; lt/gt give one (2**F) or 0.",
            f"mac: `acc := sat_{cfg.acc_w}((clr ? 0 : acc) + a*b)` with the exact {2 * W}-bit "
            f"product in a {cfg.acc_w}-bit saturating accumulator ({p['ACC_GUARD']} guard bits); the "
            "instruction's result is `sat(round(acc, F))`, so a chain of macs starting with clr "
            "equals one rounding of the exact dot product (QFormat.dot) for up to "
            f"2**{p['ACC_GUARD']} terms.  acc is cleared at start.",
            f"Nonlinear unit (NL={p['NL']}): {nl_txt}.  Tables come from golden/fixedpoint.py "
            "(sigmoid_pwl, gaussian_table, reciprocal_table, log_table); each unit is a "
            "PWL evaluator pipelined over stages 4-7 (domain compares; segment select and the "
            "slope and base ROM reads; the slope x offset multiply; base + rounded product in "
            "one add).  Inputs outside a domain are clamped to it; the tables never need "
            "the output clamp or saturation (checked by the generator).  Divide is `recip` "
            "then `mul`.",
            "An opcode whose function is not instantiated sets err bit1; an illegal opcode sets "
            "err bit0; both suppress the instruction's write-back (buffer and all outputs) and "
            "the program continues.  err is cleared by the next start.",
            "Hazards: BYPASS=1 forwards every completed result in stages 5-8 and three retired "
            "write-backs into stage 4 (the paper's write-back-to-ALU bypass widened to the "
            "7-slot window), so a read sees a write of an instruction at least L slots earlier "
            "(L its op's result latency); an earlier read sees the word's previous value, and of "
            "two visible writes the later instruction's wins.  BYPASS=0 exposes the pipeline: a read "
            f"sees only writes of instructions at least {HAZARD_DISTANCE} slots earlier "
            "(golden.cosmic_pe.pad_hazards inserts the nops; with distance=None it pads to the "
            "latencies).  The accumulator never needs a bypass: a mac chain issues one term per cycle.",
            "Neighbour and bus links use fixed timing (the static schedule guarantees "
            "producer/consumer alignment): outputs are registers with a one-cycle `*_valid` "
            f"strobe in cycle k+{IN_OFFSET}+L (when the op completes; of two writes of one port "
            "landing in one cycle the later instruction's wins); inputs are read "
            f"combinationally by the consuming instruction's stage-4 operand multiplexer (cycle "
            f"s+{IN_OFFSET}), next to the bypass, so a neighbour link costs L slots (s >= k+L, "
            "like the PE's own bypass) and a bus register loaded from a PE output L+1 "
            "(s >= k+L+1).",
            "Loading: while busy is low, `ld_en` writes `ld_data` to the schedule memory (ld_sel 0) "
            "or a buffer (1-3) at `ld_addr`, one word per cycle; ignored while busy.  Read-back: "
            "`rb_data` shows buffer `rb_sel` at the `rb_addr` of the previous cycle while no "
            "instruction is in stage 1.",
            "Memories: each buffer and the schedule memory is one synchronous-read RAM "
            "(one write port, one read port, read-first on a same-address write) written from a "
            "single process, so Vivado/Yosys infer block RAM (RAMB18/36 with the output register "
            "as stage 2) for depths >= 64 words; small depths (e.g. 16-32 words) map to LUTRAM "
            "with an output register, which is cheaper there.",
            "DBUF=1 (double-buffered DATA, for overlapping the delivery of the next sample "
            "with the current program): DATA is two banks of DATA_DEPTH words; the program "
            "reads and writes the active bank, a DATA load (ld_sel 1) while busy writes the "
            "other (shadow) bank, and a DATA load while idle writes both banks (so constants "
            "preloaded at configuration time are in both).  Every accepted start swaps the "
            "banks: the program started reads what was loaded before it, and loads during "
            "its run fill the bank of the next start.  Read-back shows the active bank.  "
            "Loads of the schedule, MODEL and INTERIM are still ignored while busy.  "
            f"DBUF={p['DBUF']} in this netlist.",
            "Reset clears the pipeline, the accumulator and err, not the buffers or the "
            "schedule (with DBUF=1 the active bank becomes bank 0).",
        ])


def _check(p: dict) -> str | None:
    if p["F"] >= p["W"]:
        return f"parameter F={p['F']} must be below W={p['W']}"
    cfg = PEConfig.from_params(p)
    try:
        tables = nl_tables(cfg.fmt, p["NL"])
    except ValueError as e:
        return f"parameters W={p['W']}, F={p['F']} cannot hold the nonlinear tables of NL={p['NL']}: {e}"
    for name, t in tables.items():
        if p["F"] >= 2 and t.shift >= 1 and not pwl_fold(t):
            return (f"parameters W={p['W']}, F={p['F']}: the {name} unit's segment sum can "
                    f"saturate or leave [y_min, y_max] (the PWL pipeline needs neither)")
    if p["F"] < 2:
        return f"parameter F={p['F']}: the PE needs F >= 2 (one = 2**F and rounding)"
    return None


def _params() -> ParamSet:
    return ParamSet([
        Param("W", 32, "word width, signed fixed point", 8, 32, multiple_of_8),
        Param("F", 16, "fraction bits", 1, 30),
        Param("DATA_DEPTH", 256, "DATA buffer words (power of two)", 2, 4096, power_of_two),
        Param("MODEL_DEPTH", 256, "MODEL buffer words (power of two)", 2, 4096, power_of_two),
        Param("INTERIM_DEPTH", 256, "INTERIM buffer words (power of two)", 2, 4096, power_of_two),
        Param("SCHED_DEPTH", 1024, "schedule memory instructions (power of two)", 2, 4096, power_of_two),
        Param("NL", 15, "nonlinear units: bit0 sigmoid, bit1 gaussian, bit2 reciprocal, bit3 log", 0, 15),
        Param("BYPASS", 1, "1: forward write-backs into the execute stage; 0: exposed pipeline", 0, 1),
        Param("ACC_GUARD", 8, "guard bits of the mac accumulator above the 2W-bit product", 1, 16),
        Param("DBUF", 0, "1: double-buffered DATA (a DATA load while busy fills the bank the "
                         "next start uses); 0: one DATA buffer, loads ignored while busy", 0, 1),
    ], [_check])


CORE = CoreDef(
    name=KIND, family="cosmic",
    description="CoSMIC processing engine: data/model/interim buffers, 8-stage microcoded ALU/nonlinear pipeline",
    params=_params(),
    build=build, datasheet=datasheet,
    configs={"default": {},
             "small": {"W": 16, "F": 8, "DATA_DEPTH": 32, "MODEL_DEPTH": 16, "INTERIM_DEPTH": 16,
                       "SCHED_DEPTH": 128, "NL": 0, "ACC_GUARD": 2},
             "dbuf": {"DBUF": 1, "DATA_DEPTH": 64, "MODEL_DEPTH": 64, "INTERIM_DEPTH": 64,
                      "SCHED_DEPTH": 256, "NL": 1},
             "nobypass": {"BYPASS": 0, "NL": 1, "SCHED_DEPTH": 256, "DATA_DEPTH": 64,
                          "MODEL_DEPTH": 64, "INTERIM_DEPTH": 64}},
    generator="rtl_gen/cosmic/cosmic_pe.py",
)
