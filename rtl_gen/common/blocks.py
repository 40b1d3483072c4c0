"""Reusable MyHDL blocks written so the converted Verilog is Verilator -Wall clean.

Lint-clean idioms used throughout (Verilator warns on width changes):
* widening an assignment by more than a carry bit goes through :func:`sext`;
* products are assigned to a signal of the full product width (or wider);
* add/sub may grow by one bit; rounding shifts happen in the operand width, so the
  operand must carry one headroom bit (``round_sat`` asserts it at elaboration).
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block, concat, intbv

from .hdl import sig_b, sig_s, sig_u


def swidth(sig) -> int:
    return len(sig)


@block
def sext(x, xe):
    """Sign-extend signed ``x`` into the wider signed ``xe``."""
    wx, wxe = len(x), len(xe)
    k = wxe - wx
    assert k >= 1, "sext needs a strictly wider output"
    ones = (1 << k) - 1
    sgn = sig_u(k)

    @always_comb
    def fill():
        if x[wx - 1]:
            sgn.next = ones
        else:
            sgn.next = 0

    @always_comb
    def cat():
        xe.next = concat(sgn, x).signed()

    return fill, cat


@block
def sat(v, y):
    """Saturate signed ``v`` (wider) to the range of signed ``y``.

    Range check on the bits above ``y``'s sign bit (all equal = in range), so no
    constant wider than the operands appears in the Verilog."""
    wv, wy = len(v), len(y)
    k = wv - wy + 1
    assert k >= 2, "sat needs a strictly wider input"
    hi = sig_u(k)
    hin = sig_u(k)
    nsign = sig_b()
    fill = ConcatSignal(*([nsign] * (wy - 1))) if wy > 2 else nsign

    @always_comb
    def top_bits():
        hi.next = v[wv:wy - 1]

    @always_comb
    def inv():
        hin.next = ~hi

    @always_comb
    def fillc():
        nsign.next = not v[wv - 1]

    @always_comb
    def clamp():
        if hi == 0 or hin == 0:
            y.next = v[wy:].signed()
        else:
            y.next = concat(v[wv - 1], fill).signed()

    return top_bits, inv, fillc, clamp


@block
def round_sat(v, y, shift):
    """``y = saturate((v + 2**(shift-1)) >> shift)``: the repository rounding rule.

    Computed as ``(v >>> shift) + v[shift-1]`` (identical for two's complement), with the
    rounding bit zero-extended to ``v``'s width so no unsized constant widens the sum.
    ``v`` must have at least one bit of headroom above its largest value."""
    wv = len(v)
    r = sig_s(wv)
    if shift == 0:
        @always_comb
        def rnd():
            r.next = v
    else:
        t = sig_s(wv)
        rb = sig_s(wv)

        @always_comb
        def shf():
            t.next = v >> shift
            rb.next = concat(intbv(0)[wv - 1:], v[shift - 1]).signed()

        @always_comb
        def rnd():
            r.next = t + rb

    s = sat(r, y)
    if shift == 0:
        return rnd, s
    return shf, rnd, s


@block
def out_fifo2(clk, rst, din, din_last, din_user, push, not_full,
              m_tdata, m_tvalid, m_tready, m_tlast, m_user):
    """Two-entry output FIFO.  ``not_full`` is registered, so a pipeline stalled on it
    has no combinational path from ``m_tready`` back to its own ``tready``."""
    w = len(din)
    wu = len(din_user)
    d0 = sig_u(w)
    d1 = sig_u(w)
    l0 = sig_b()
    l1 = sig_b()
    u0 = sig_u(wu)
    u1 = sig_u(wu)
    cnt = sig_u(2)

    @always_seq(clk.posedge, reset=rst)
    def seq():
        pop = cnt != 0 and m_tready
        if pop:
            d0.next = d1
            l0.next = l1
            u0.next = u1
        if push:
            if cnt == 0 or (cnt == 1 and pop):
                d0.next = din
                l0.next = din_last
                u0.next = din_user
            else:
                d1.next = din
                l1.next = din_last
                u1.next = din_user
        if push and not pop:
            cnt.next = cnt + 1
            not_full.next = cnt == 0
        elif pop and not push:
            cnt.next = cnt - 1
            not_full.next = True
        else:
            not_full.next = cnt != 2

    @always_comb
    def outs():
        m_tdata.next = d0
        m_tlast.next = l0
        m_user.next = u0
        m_tvalid.next = cnt != 0

    return seq, outs


# ---- adder-tree cells (dot products in PipeArch, MAPLE, FPDeep) --------------------
@block
def mul_reg(clk, rst, en, a_u, b_u, p):
    """``p = a * b`` (signed, full width), registered on ``en``."""
    W = len(a_u)
    a = sig_s(W)
    b = sig_s(W)

    @always_comb
    def cast():
        a.next = a_u.signed()
        b.next = b_u.signed()

    @always_seq(clk.posedge, reset=rst)
    def st():
        if en:
            p.next = a * b

    return cast, st


@block
def add_reg(clk, rst, en, a, b, y):
    """``y = a + b`` registered on ``en``; ``y`` is one bit wider than ``a`` and ``b``."""
    @always_seq(clk.posedge, reset=rst)
    def st():
        if en:
            y.next = a + b

    return st


@block
def pass_reg(clk, rst, en, a, y):
    """``y = a`` sign-extended by one bit, registered on ``en`` (odd tree element)."""
    ae = sig_s(len(y))
    sx = sext(a, ae)

    @always_seq(clk.posedge, reset=rst)
    def st():
        if en:
            y.next = ae

    return sx, st


@block
def fit(src, dst):
    """``dst`` = the low ``len(dst)`` bits of unsigned ``src``, or ``src`` zero-extended."""
    n = len(dst)
    if len(src) > n:
        @always_comb
        def o():
            dst.next = src[n:]
    elif len(src) == n:
        @always_comb
        def o():
            dst.next = src
    else:
        k = n - len(src)

        @always_comb
        def o():
            dst.next = concat(intbv(0)[k:], src)

    return o
