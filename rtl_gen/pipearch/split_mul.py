"""Two-stage signed multiplier for the PipeArch lane datapaths (issue 16, ECP5 timing).

``p = a * b`` (signed ``W`` x ``W``, full width) over two registered, enabled stages:

1. the four partial products of the operands split at ``LO = W // 2`` bits --
   ``al*bl``, ``al*bh``, ``ah*bl``, ``ah*bh`` with ``al``/``bl`` the unsigned low halves and
   ``ah``/``bh`` the signed high halves -- each one MULT18X18D for ``W <= 34``, registered
   straight out of the multiplier;
2. their sum, ``{ah*bh, al*bl} + ((al*bh + ah*bl) << LO)`` (``al*bl < 2**(2*LO)``, so the
   outer two products are a concatenation, not an addition), plus an optional constant
   below ``2**LO`` (the rounding half of ``round_sat``) in the shifted term's zero bits.

A 32x32 product in one stage (four MULT18X18D and the carry chains of their partial-product
sum) was the critical path of ``l2reg``, ``multiply_subtract`` and ``dot_sigmoid``
(73-87 MHz on an LFE5UM-85F -8).  For ``W <= 18`` one multiplier already holds the whole
product: stage 1 is the product and stage 2 a copy, so the latency is the same in every
configuration.  ``clr`` (sampled with ``en``; ``None``: no clear) loads zero partial
products, whatever the operands hold (a 4-state unknown does not propagate).
"""
from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat, intbv

from rtl_gen.common.blocks import sext
from rtl_gen.common.hdl import sig_s, sig_u

SPLIT_MUL_LATENCY = 2
ONE_DSP = 18      # MULT18X18D: an 18x18 signed product in one block


@block
def split_mul_reg(clk, rst, en, clr, a_u, b_u, p, bias=0):
    """``p = a * b + bias`` (signed, ``len(p) == 2*W``) two enabled stages after
    ``a_u``/``b_u``.  ``bias`` is a constant, ``0 <= bias < 2**(W//2)`` (a rounding half:
    with W > 18 it fills the zero low bits of the shifted middle term, no extra adder);
    ``a*b + bias`` must fit ``2*W`` signed bits."""
    W = len(a_u)
    assert len(b_u) == W and len(p) == 2 * W
    assert 0 <= bias < 1 << (W // 2)
    if W <= ONE_DSP:
        a = sig_s(W)
        b = sig_s(W)
        p1 = sig_s(2 * W)

        @always_comb
        def cast():
            a.next = a_u.signed()
            b.next = b_u.signed()

        if clr is None:
            @always_seq(clk.posedge, reset=rst)
            def st1():
                if en:
                    p1.next = a * b
        else:
            @always_seq(clk.posedge, reset=rst)
            def st1():
                if en:
                    if clr:
                        p1.next = 0
                    else:
                        p1.next = a * b

        if bias == 0:
            @always_seq(clk.posedge, reset=rst)
            def st2():
                if en:
                    p.next = p1
        else:
            @always_seq(clk.posedge, reset=rst)
            def st2():
                if en:
                    p.next = p1 + bias

        return cast, st1, st2

    LO = W // 2
    HI = W - LO
    ac = sig_u(W)           # plain copies: the operands may be slices of wider signals,
    bc = sig_u(W)           # which Icarus does not let a second slice index

    @always_comb
    def copy():
        ac.next = a_u
        bc.next = b_u

    alu = sig_u(LO)         # unsigned low halves
    blu = sig_u(LO)
    al = sig_s(LO + 1)      # ... as non-negative signed (LO+1 bits)
    bl = sig_s(LO + 1)
    ah = sig_s(HI)
    bh = sig_s(HI)

    @always_comb
    def halves():
        alu.next = ac[LO:]
        blu.next = bc[LO:]
        al.next = concat(False, ac[LO:]).signed()
        bl.next = concat(False, bc[LO:]).signed()
        ah.next = ac[W:LO].signed()
        bh.next = bc[W:LO].signed()

    ll = sig_u(2 * LO)              # al*bl (unsigned)
    lh = sig_s(LO + 1 + HI)         # al*bh
    hl = sig_s(LO + 1 + HI)         # ah*bl
    hh = sig_s(2 * HI)              # ah*bh

    if clr is None:
        @always_seq(clk.posedge, reset=rst)
        def st1():
            if en:
                ll.next = alu * blu
                lh.next = al * bh
                hl.next = ah * bl
                hh.next = ah * bh
    else:
        @always_seq(clk.posedge, reset=rst)
        def st1():
            if en:
                if clr:
                    ll.next = 0
                    lh.next = 0
                    hl.next = 0
                    hh.next = 0
                else:
                    ll.next = alu * blu
                    lh.next = al * bh
                    hl.next = ah * bl
                    hh.next = ah * bh

    # mid = al*bh + ah*bl, one bit wider; placed at bit LO of the 2W-bit product
    lhe = sig_s(LO + HI + 2)
    hle = sig_s(LO + HI + 2)
    x1 = sext(lh, lhe)
    x2 = sext(hl, hle)
    mid = sig_s(LO + HI + 2)
    outer = sig_s(2 * W)            # {hh, ll[2*LO:]} = ah*bh << 2*LO + al*bl
    mid_sh = sig_s(LO + HI + 2 + LO)
    mid_e = sig_s(2 * W)

    @always_comb
    def midc():
        mid.next = lhe + hle

    @always_comb
    def outc():
        outer.next = concat(hh, ll).signed()
        mid_sh.next = concat(mid, intbv(bias)[LO:]).signed()

    assert len(mid_sh) < 2 * W
    x3 = sext(mid_sh, mid_e)

    @always_seq(clk.posedge, reset=rst)
    def st2():
        if en:
            p.next = outer + mid_e

    return copy, halves, st1, x1, x2, midc, outc, x3, st2
