"""Combinational piecewise-linear function unit (the generalisation of ``sigmoid.py`` to
any :class:`golden.fixedpoint.PwlTable`: sigmoid, gaussian, log, reciprocal).

The table (base and slope ROMs, domain, output clamp) comes from the one generator
function in ``golden/fixedpoint.py`` that the golden model also evaluates, so the
hardware is bit-exact with ``golden.fixedpoint.pwl_fx`` by construction.  The ROMs are
small case statements (LUT ROM); one multiplier (``W x shift``) per unit.
"""
from __future__ import annotations

from myhdl import always_comb, block, concat, intbv

from golden.fixedpoint import PwlTable

from .blocks import round_sat, sat
from .hdl import sig_s, sig_u


@block
def pwl_comb(z, y, table: PwlTable):
    """``y`` (signed W) = ``pwl_fx(z, table)`` for signed ``z`` (W bits), combinationally."""
    W = len(z)
    F = table.fmt.F
    sh = table.shift
    ib = table.index_bits
    ub = sh + ib
    lo, hi = table.lo, table.hi
    assert sh >= 1 and table.fmt.W == W
    assert table.fmt.min_int < lo and hi < table.fmt.max_int
    base_rom = tuple(table.base)
    slope_rom = tuple(table.slope)
    zl = sig_s(W + 1)
    u = sig_u(ub)
    idx = sig_u(ib)
    off = sig_u(sh)
    offs = sig_s(sh + 1)
    base_c = sig_s(W)
    slope_c = sig_s(W)
    prod = sig_s(W + sh + 1)
    rnd = sig_s(W)
    sumv = sig_s(W + 1)
    ys = sig_s(W)
    y_min, y_max = table.y_min, table.y_max
    clamp_lo = y_min > table.fmt.min_int
    clamp_hi = y_max < table.fmt.max_int

    if lo < 0:
        nlo = -lo

        @always_comb
        def sub_lo():
            zl.next = z + nlo
    else:
        @always_comb
        def sub_lo():
            zl.next = z - lo

    span_m1 = hi - lo - 1

    @always_comb
    def clampz():
        if z >= hi:
            u.next = span_m1
        elif z < lo:
            u.next = 0
        else:
            u.next = zl[ub:]

    @always_comb
    def split():
        idx.next = u[ub:sh]
        off.next = u[sh:]

    @always_comb
    def rom():
        base_c.next = base_rom[int(idx)]
        slope_c.next = slope_rom[int(idx)]

    @always_comb
    def mk_off():
        offs.next = concat(intbv(0)[1:], off).signed()

    @always_comb
    def mul():
        prod.next = slope_c * offs

    rs = round_sat(prod, rnd, F)

    @always_comb
    def addc():
        sumv.next = base_c + rnd

    st = sat(sumv, ys)

    if clamp_lo and clamp_hi:
        @always_comb
        def outc():
            if ys > y_max:
                y.next = y_max
            elif ys < y_min:
                y.next = y_min
            else:
                y.next = ys
    elif clamp_hi:
        @always_comb
        def outc():
            if ys > y_max:
                y.next = y_max
            else:
                y.next = ys
    elif clamp_lo:
        @always_comb
        def outc():
            if ys < y_min:
                y.next = y_min
            else:
                y.next = ys
    else:
        @always_comb
        def outc():
            y.next = ys

    return sub_lo, clampz, split, rom, mk_off, mul, rs, addc, st, outc
