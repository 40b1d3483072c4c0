"""``cosmic_pe`` core: the CoSMIC processing engine (CoSMIC section 5.1 "PE design",
Fig. 6; TABLA section 6.3).

Separate DATA / MODEL / INTERIM buffers (synchronous-read RAM, one read and one write
port each, all three read in the same cycle), a schedule memory holding a static
microcode program, a five-stage pipeline

  1 read      the instruction (schedule memory output register) drives the three buffer
              read addresses
  2 register  buffer outputs (the RAM output registers)
  3 select    operand A and B multiplexers (buffers, zero, one)
  4 execute   ALU (add sub mul mac lt gt min max pass) and the nonlinear unit;
              the bypass from stage 5 (and three retired write-backs) and the
              left/right neighbour and bus input ports feed this stage's operand
              multiplexer directly (a neighbour's stage-5 output register is a bypass
              source like the PE's own), so a neighbour reads a result one slot after
              its producer and the row bus register two slots after
  5 write back  buffer write, left/right/bus outputs

and one instruction per cycle without interlocks.  The instruction set, its encoding
and the bit-true reference are in ``golden/cosmic_pe.py``.
"""
from __future__ import annotations

from myhdl import always, always_comb, always_seq, block, concat, intbv

from golden.cosmic_pe import (HAZARD_DISTANCE, IN_OFFSET, NL_OPS, OPS,
                              OUT_OFFSET, PEConfig, _aw, nl_tables)
from golden.fixedpoint import pwl_error_bound
from rtl_gen.common.blocks import round_sat, sat, sext
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.nonlinear import pwl_comb
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
        v1, v2, v3, v4, v5 = (sig_b() for _ in range(5))
        l1, l2, l3, l4, l5 = (sig_b() for _ in range(5))
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
            if v5 and l5:
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
        res5 = sig_s(W)
        we5 = sig_b()
        wb5 = sig_u(2)
        wa5 = sig_u(AW)
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
                        we.next = we5 and wb5 == 1
                        wa.next = wa5[DAW:]
                        wd.next = res5[W:]
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
                        we.next = we5 and wb5 == code
                        wa.next = wa5[aw_:]
                        wd.next = res5[W:]
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
        cfields = (("sa", 3), ("sb", 3), ("op", 4), ("clr", 1)) + (
            (("ab", 2), ("aa", AW), ("bb", 2), ("ba", AW)) if BYPASS else ()) + (
            ("wb", 2), ("wa", AW), ("out", 3))
        CW = sum(w for _, w in cfields)
        cpos, pos = {}, CW
        for n_, w_ in cfields:
            cpos[n_] = (pos, pos - w_)
            pos -= w_
        ctl1, c2, c3, c4 = sig_u(CW), sig_u(CW), sig_u(CW), sig_u(CW)

        if BYPASS:
            @always_comb
            def mkctl():
                ctl1.next = concat(sa1, sb1, op1, clr1, abuf1, aad1, bbuf1, bad1, wb1, wam1, out1)
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

        @always_seq(clk.posedge, reset=rst)
        def st3():
            v4.next = v3
            l4.next = l3
            c4.next = c3
            opa4.next = opa_c
            opb4.next = opb_c

        # ---------------------------------------------------------- stage 4: execute
        fa, fb = sig_s(W), sig_s(W)
        fwa, fwb = sig_s(W), sig_s(W)     # operands after the bypass, before the link ports
        sa4, sb4 = sig_u(3), sig_u(3)
        op4 = sig_u(4)
        clr4 = sig_b()
        ab4, bb4, wb4 = sig_u(2), sig_u(2), sig_u(2)
        aa4, ba4, wa4 = sig_u(AW), sig_u(AW), sig_u(AW)
        out4 = sig_u(3)
        (P_OPH, P_OPL), (P_CL, P_CLB), (P_WBH, P_WBL), (P_WAH, P_WAL), (P_OUH, P_OUL) = (
            cpos[k] for k in ("op", "clr", "wb", "wa", "out"))
        (P_SAH, P_SAL), (P_SBH, P_SBL) = cpos["sa"], cpos["sb"]

        @always_comb
        def dec4():
            sa4.next = c4[P_SAH:P_SAL]
            sb4.next = c4[P_SBH:P_SBL]
            op4.next = c4[P_OPH:P_OPL]
            clr4.next = c4[P_CLB]
            wb4.next = c4[P_WBH:P_WBL]
            wa4.next = c4[P_WAH:P_WAL]
            out4.next = c4[P_OUH:P_OUL]

        if BYPASS:
            (P_ABH, P_ABL), (P_AAH, P_AAL), (P_BBH, P_BBL), (P_BAH, P_BAL) = (
                cpos[k] for k in ("ab", "aa", "bb", "ba"))

            @always_comb
            def dec4b():
                ab4.next = c4[P_ABH:P_ABL]
                aa4.next = c4[P_AAH:P_AAL]
                bb4.next = c4[P_BBH:P_BBL]
                ba4.next = c4[P_BAH:P_BAL]

            insts.append(dec4b)
        insts.append(dec4)
        if BYPASS:
            h1w, h2w, h3w = sig_b(), sig_b(), sig_b()
            h1b, h2b, h3b = sig_u(2), sig_u(2), sig_u(2)
            h1a, h2a, h3a = sig_u(AW), sig_u(AW), sig_u(AW)
            h1v, h2v, h3v = sig_s(W), sig_s(W), sig_s(W)

            @always_seq(clk.posedge, reset=rst)
            def hist():
                h1w.next = we5
                h1b.next = wb5
                h1a.next = wa5
                h1v.next = res5
                h2w.next = h1w
                h2b.next = h1b
                h2a.next = h1a
                h2v.next = h1v
                h3w.next = h2w
                h3b.next = h2b
                h3a.next = h2a
                h3v.next = h2v

            @block
            def forward(bsel, addr, raw, o):
                @always_comb
                def c():
                    if bsel != 0 and we5 and wb5 == bsel and wa5 == addr:
                        o.next = res5
                    elif bsel != 0 and h1w and h1b == bsel and h1a == addr:
                        o.next = h1v
                    elif bsel != 0 and h2w and h2b == bsel and h2a == addr:
                        o.next = h2v
                    elif bsel != 0 and h3w and h3b == bsel and h3a == addr:
                        o.next = h3v
                    else:
                        o.next = raw
                return c

            insts += [hist, forward(ab4, aa4, opa4, fwa), forward(bb4, ba4, opb4, fwb)]
        else:
            @always_comb
            def nofwd():
                fwa.next = opa4
                fwb.next = opb4
            insts.append(nofwd)

        @block
        def portsel(s, fw, o):
            """Operand codes 3-5: the link/bus input port, read in this stage."""
            @always_comb
            def c():
                if s == 3:
                    o.next = left_in.signed()
                elif s == 4:
                    o.next = right_in.signed()
                elif s == 5:
                    o.next = bus_in.signed()
                else:
                    o.next = fw
            return c

        insts += [portsel(sa4, fwa, fa), portsel(sb4, fwb, fb)]

        sum_ab, dif_ab = sig_s(W + 1), sig_s(W + 1)
        add_s, sub_s, mul_s, mac_s = (sig_s(W) for _ in range(4))
        prod = sig_s(2 * W)
        prod_e = sig_s(ACC)
        acc = sig_s(ACC)
        acc_in = sig_s(ACC)
        acc_sum = sig_s(ACC + 1)
        acc_new = sig_s(ACC)

        @always_comb
        def alu_arith():
            sum_ab.next = fa + fb
            dif_ab.next = fa - fb
            prod.next = fa * fb

        @always_comb
        def acc_sel():
            if clr4:
                acc_in.next = 0
            else:
                acc_in.next = acc

        @always_comb
        def acc_add():
            acc_sum.next = acc_in + prod_e

        insts += [sat(sum_ab, add_s), sat(dif_ab, sub_s), round_sat(prod, mul_s, F),
                  sext(prod, prod_e), sat(acc_sum, acc_new), round_sat(acc_new, mac_s, F)]

        ys = {}
        for name, opc in (("sigmoid", OP_SIG), ("gauss", OP_GAU), ("recip", OP_REC), ("log", OP_LOG)):
            y = sig_s(W)
            ys[name] = y
            if name in tables:
                insts.append(pwl_comb(fa, y, tables[name]))
            else:
                @block
                def absent(y):
                    @always_comb
                    def c():
                        y.next = fa   # unit not instantiated: the result is suppressed
                    return c
                insts.append(absent(y))
        y_sig, y_gau, y_rec, y_log = ys["sigmoid"], ys["gauss"], ys["recip"], ys["log"]

        res_c = sig_s(W)
        ill_c = sig_u(1)
        nlm_c = sig_u(1)
        ok4 = sig_b()

        @always_comb
        def resmux():
            if op4 == OP_ADD:
                res_c.next = add_s
            elif op4 == OP_SUB:
                res_c.next = sub_s
            elif op4 == OP_MUL:
                res_c.next = mul_s
            elif op4 == OP_MAC:
                res_c.next = mac_s
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
            elif op4 == OP_SIG:
                res_c.next = y_sig
            elif op4 == OP_GAU:
                res_c.next = y_gau
            elif op4 == OP_REC:
                res_c.next = y_rec
            elif op4 == OP_LOG:
                res_c.next = y_log
            else:
                res_c.next = fa

        @always_comb
        def legal():
            ill_c.next = ILL_ROM[int(op4)]
            nlm_c.next = NLM_ROM[int(op4)]

        @always_comb
        def okc():
            ok4.next = v4 and ill_c == 0 and nlm_c == 0 and op4 != 0

        @always_seq(clk.posedge, reset=rst)
        def st4():
            v5.next = v4
            l5.next = l4
            we5.next = ok4 and wb4 != 0
            wb5.next = wb4
            wa5.next = wa4
            res5.next = res_c
            left_out_valid.next = ok4 and out4[0]
            right_out_valid.next = ok4 and out4[1]
            bus_out_valid.next = ok4 and out4[2]
            if ok4 and out4[0]:
                left_out.next = res_c[W:]
            if ok4 and out4[1]:
                right_out.next = res_c[W:]
            if ok4 and out4[2]:
                bus_out.next = res_c[W:]
            if v4 and op4 == OP_MAC:
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

        insts += [ctl_c, sched, s_c, dec, rbreg, rbmux, mkctl, st1, st2, st3,
                  alu_arith, acc_sel, acc_add, resmux, legal, okc, st4]
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
                 "interlock), a five-stage pipeline (1 read buffers/links/bus, 2 register, 3 select "
                 "operands, 4 execute ALU/nonlinear, 5 write back buffer/neighbour/bus) with a "
                 "write-back-to-execute bypass, and a wide multiply-accumulator.  Bit-exact with "
                 "`golden.cosmic_pe.PEModel`; assemble programs with `golden.cosmic_pe.Assembler`."),
        latency=(f"instruction k (0-based) is in stage 1 in cycle k+1 after the edge that accepted "
                 f"`start`, reads its link/bus input ports in cycle k+{IN_OFFSET} (stage 4), its outputs are "
                 f"valid in cycle k+{OUT_OFFSET} and its buffer write lands at the end of that cycle; "
                 f"`done` is high in cycle cfg_len+{OUT_OFFSET}"),
        throughput="one instruction per cycle, always (no stalls); a dependent instruction may "
                   "follow its producer directly when BYPASS=1, and must be "
                   f"{HAZARD_DISTANCE} slots later when BYPASS=0",
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
            "combinational PWL evaluator in stage 4 (LUT ROM + one multiplier).  Inputs outside "
            "a domain are clamped to it.  Divide is `recip` then `mul`.",
            "An opcode whose function is not instantiated sets err bit1; an illegal opcode sets "
            "err bit0; both suppress the instruction's write-back (buffer and all outputs) and "
            "the program continues.  err is cleared by the next start.",
            "Hazards: BYPASS=1 forwards the stage-5 result and three retired write-backs into "
            "stage 4 (the paper's write-back-to-ALU bypass widened to the 4-slot read window), so "
            "every instruction sees every earlier write.  BYPASS=0 exposes the pipeline: a read "
            f"sees only writes of instructions at least {HAZARD_DISTANCE} slots earlier "
            "(golden.cosmic_pe.pad_hazards inserts the nops).  The accumulator never needs a bypass.",
            "Neighbour and bus links use fixed timing (the static schedule guarantees "
            "producer/consumer alignment): outputs are registers with a one-cycle `*_valid` "
            "strobe in the producing instruction's stage 5 (cycle k+5); inputs are read "
            f"combinationally by the consuming instruction's stage-4 operand multiplexer (cycle "
            f"s+{IN_OFFSET}), next to the bypass, so a neighbour link costs one slot (s >= k+1, "
            "like the PE's own bypass) and a bus register loaded from a PE output two "
            "(s >= k+2).",
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
        nl_tables(cfg.fmt, p["NL"])
    except ValueError as e:
        return f"parameters W={p['W']}, F={p['F']} cannot hold the nonlinear tables of NL={p['NL']}: {e}"
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
    description="CoSMIC processing engine: data/model/interim buffers, 5-stage microcoded ALU/nonlinear pipeline",
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
