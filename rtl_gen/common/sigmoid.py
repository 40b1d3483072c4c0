"""Pipelined piecewise-linear sigmoid; its table comes from golden.fixedpoint.sigmoid_table,
so hardware and golden model share one definition."""
from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat, intbv

from golden.fixedpoint import SigmoidTable

from .blocks import round_sat
from .hdl import sig_s, sig_u

SIGMOID_LATENCY = 4


@block
def sigmoid_pipe(clk, rst, en, z, y, table: SigmoidTable):
    """``y`` (signed W) = PWL sigmoid of signed ``z`` (W bits), SIGMOID_LATENCY enabled cycles later."""
    W = len(z)
    F = table.fmt.F
    r = table.r_int
    sh = table.shift
    ib = table.index_bits
    base_rom = tuple(table.base)
    slope_rom = tuple(table.slope)
    ub = sh + ib            # 2R == 2**(shift + index_bits)
    assert (1 << ub) == 2 * r
    u = sig_u(ub)           # zc + R, non-negative, < 2R
    zr = sig_s(W + 1)
    idx1 = sig_u(ib)
    off1 = sig_u(sh) if sh > 0 else sig_u(1)
    base2 = sig_s(W)
    slope2 = sig_s(W)
    off2 = sig_u(len(off1))
    base3 = sig_s(W)
    prod3 = sig_s(W + len(off1) + 1)
    prod_c = sig_s(W + len(off1) + 1)
    offs = sig_s(len(off1) + 1)
    rnd = sig_s(W)
    sumv = sig_s(W + 1)

    @always_comb
    def addr():
        zr.next = z + r

    @always_comb
    def clampz():
        if z >= r:
            u.next = 2 * r - 1
        elif z < -r:
            u.next = 0
        else:
            u.next = zr[ub:]

    @always_seq(clk.posedge, reset=rst)
    def st1():
        if en:
            idx1.next = u[sh + ib:sh]
            if sh > 0:
                off1.next = u[sh:]
            else:
                off1.next = 0

    @always_seq(clk.posedge, reset=rst)
    def st2():
        if en:
            base2.next = base_rom[int(idx1)]
            slope2.next = slope_rom[int(idx1)]
            off2.next = off1

    @always_comb
    def mk_off():
        offs.next = concat(intbv(0)[1:], off2).signed()

    @always_comb
    def mul():
        prod_c.next = slope2 * offs

    @always_seq(clk.posedge, reset=rst)
    def st3():
        if en:
            base3.next = base2
            prod3.next = prod_c

    rs = round_sat(prod3, rnd, F)

    @always_comb
    def addc():
        sumv.next = base3 + rnd

    one = 1 << F

    @always_seq(clk.posedge, reset=rst)
    def st4():
        if en:
            if sumv > one:
                y.next = one
            elif sumv < 0:
                y.next = 0
            else:
                y.next = sumv[W:].signed()

    return addr, clampz, st1, st2, mk_off, mul, st3, rs, addc, st4
