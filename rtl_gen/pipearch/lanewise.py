"""Lane-parallel PipeArch subroutines: ``l2reg``, ``multiply_subtract``, ``sigmoid_delta``.

Two line streams in, one line stream out, one operation per lane:

* ``sub_mul``:  ``y = sat(x - sat(round(k * v)))`` -- l2reg (``k`` = the
  ``cfg_reg`` field, ``2*alpha*lambda``) and multiply_subtract (``k`` from the scalar
  stream, one per iteration);
* ``sig_delta``: ``y = sat(S(z) - b)`` with ``S`` the PWL sigmoid or the identity.
"""
from __future__ import annotations

from myhdl import ConcatSignal, always_comb, always_seq, block, concat

from golden.fixedpoint import QFormat, sigmoid_table
from rtl_gen.common.blocks import out_fifo2, sat
from rtl_gen.common.core import Datasheet, Port
from rtl_gen.common.hdl import new_reset, sig_b, sig_s, sig_u
from rtl_gen.common.sigmoid import SIGMOID_LATENCY, sigmoid_pipe

from .split_mul import SPLIT_MUL_LATENCY, split_mul_reg
from .subroutine import control, delay_flags, field_bits

SUB_MUL_LATENCY = SPLIT_MUL_LATENCY + 1


@block
def lane_sub_mul(clk, rst, en, x_u, v_u, k_u, kz, y):
    """``y = sat(x - sat(round(k*v)))`` over SUB_MUL_LATENCY enabled cycles.

    ``k_u`` and its zero flag ``kz`` come from this lane's ``factor_reg`` (the zero test
    is registered, off the product path; Yosys' ``synth_ecp5`` merges the identical
    per-lane copies into one register, and the factor's fan-out to the 64 multipliers
    fits the cycle once the product is split: 119 MHz, README).  Stages: partial products, their sum with the rounding half
    (``split_mul_reg``), then saturate, subtract and saturate."""
    W = len(y)
    F = lane_sub_mul.F
    x = sig_s(W)
    x1 = sig_s(W)
    x2 = sig_s(W)
    p2 = sig_s(2 * W)
    q = sig_s(2 * W)
    kv = sig_s(W)
    d = sig_s(W + 1)

    @always_comb
    def cast():
        x.next = x_u.signed()

    # k == 0 registers zero partial products whatever v holds: the same value as k*v for
    # every defined v, and v may be a region line the program never wrote (an L2REG with
    # cfg_reg = 0 is the PipeArch copy idiom, golden/pipearch_programs.py's LRMF gather
    # reads such a line as x_old), so an unknown v does not reach y in a 4-state
    # simulation (it did: X written to memory by a Store on Icarus).  A synchronous
    # clear of the partial-product registers, no DSP or adder change.
    # The rounding half rides in the product's sum (stage 2): p2 = k*v + 2**(F-1), so
    # round(k*v) = p2 >> F, the repository rule (ties toward +inf) without an adder in
    # stage 3.  |k*v| <= 2**(2W-2), so p2 fits 2W signed bits.
    mul = split_mul_reg(clk, rst, en, kz, k_u, v_u, p2, bias=(1 << (F - 1)) if F else 0)

    @always_seq(clk.posedge, reset=rst)
    def xdl():
        if en:
            x1.next = x
            x2.next = x1

    @always_comb
    def shr():
        q.next = p2 >> F

    rs = sat(q, kv)

    @always_comb
    def subc():
        d.next = x2 - kv

    yc = sig_s(W)
    st = sat(d, yc)

    yr = sig_s(W)

    @always_seq(clk.posedge, reset=rst)
    def s3():
        if en:
            yr.next = yc

    @always_comb
    def outc():
        y.next = yr

    return cast, mul, xdl, shr, rs, subc, st, s3, outc


@block
def factor_reg(clk, rst, load, d_u, k, kz):
    """One lane's copy of the factor ``k`` and its zero flag ``kz``, loaded on ``load``."""
    @always_seq(clk.posedge, reset=rst)
    def st():
        if load:
            k.next = d_u
            kz.next = d_u == 0

    return st


@block
def lane_sig_delta(clk, rst, en, z_u, b_u, use_sig, y, table):
    """``y = sat(S(z) - b)``; ``S`` is the sigmoid when ``use_sig`` else the identity."""
    W = len(y)
    L = SIGMOID_LATENCY
    z = sig_s(W)
    s = sig_s(W)
    zb = sig_u(2 * W)
    zbd = sig_u(2 * W)
    zd = sig_s(W)
    bd = sig_s(W)

    @always_comb
    def cast():
        z.next = z_u.signed()
        zb.next = concat(z_u, b_u)

    sg = sigmoid_pipe(clk, rst, en, z, s, table)
    dl = delay_flags(clk, rst, en, zb, zbd, L)

    @always_comb
    def unpack():
        zd.next = zbd[2 * W:W].signed()
        bd.next = zbd[W:].signed()

    d = sig_s(W + 1)

    @always_comb
    def subc():
        if use_sig:
            d.next = s - bd
        else:
            d.next = zd - bd

    yc = sig_s(W)
    st = sat(d, yc)

    yr = sig_s(W)

    @always_seq(clk.posedge, reset=rst)
    def out():
        if en:
            yr.next = yc

    @always_comb
    def outc():
        y.next = yr

    return cast, sg, dl, unpack, subc, st, out, outc


def lanewise_ports(p: dict, kind: str) -> list[Port]:
    L, W = p["LANES"], p["W"]
    dw, iw = field_bits(p["MAX_DIM"]), field_bits(p["MAX_ITER"])
    names = {"l2reg": ("x", "xold"), "multiply_subtract": ("x", "a"), "sigmoid_delta": ("z", "b")}[kind]
    ports = [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset"),
        Port("start", "in", 1, "initiate (sampled with the cfg_* fields while busy is low)"),
        Port("cfg_dimension", "in", dw, "lines per iteration, 1..MAX_DIM"),
        Port("cfg_iterations", "in", iw, "iterations, 1..MAX_ITER"),
    ]
    if kind == "l2reg":
        ports.append(Port("cfg_reg", "in", W, "regularisation word 2*alpha*lambda2 (signed Q(W,F))"))
    if kind == "sigmoid_delta":
        ports.append(Port("cfg_sigmoid", "in", 1, "1: S = PWL sigmoid, 0: S = identity"))
    ports += [
        Port("busy", "out", 1, "an initiation is in progress"),
        Port("done", "out", 1, "one-cycle pulse: last output beat accepted, or an invalid initiation"),
        Port("cfg_err", "out", 1, "last initiation was invalid (sticky until the next start)"),
    ]
    for n in names:
        ports += [Port(f"s_axis_{n}_tdata", "in", L * W, f"{n} line, lane i in bits [i*W +: W]"),
                  Port(f"s_axis_{n}_tvalid", "in", 1, ""),
                  Port(f"s_axis_{n}_tready", "out", 1, "")]
    if kind == "multiply_subtract":
        ports += [Port("s_axis_s_tdata", "in", W, "scalar s of the current iteration (held for all its lines, "
                       "consumed with its last line)"),
                  Port("s_axis_s_tvalid", "in", 1, ""), Port("s_axis_s_tready", "out", 1, "")]
    ports += [Port("m_axis_y_tdata", "out", L * W, "result line"),
              Port("m_axis_y_tvalid", "out", 1, ""), Port("m_axis_y_tready", "in", 1, ""),
              Port("m_axis_y_tlast", "out", 1, "last line of an iteration")]
    return ports


def build_lanewise(p: dict, kind: str):
    L, W, F = p["LANES"], p["W"], p["F"]
    dw, iw = field_bits(p["MAX_DIM"]), field_bits(p["MAX_ITER"])
    table = sigmoid_table(QFormat(W, F)) if kind == "sigmoid_delta" else None
    lat = SUB_MUL_LATENCY if kind != "sigmoid_delta" else SIGMOID_LATENCY + 1
    lane_sub_mul.F = F

    @block
    def top(clk, rst, start, cfg_dimension, cfg_iterations, extra_cfg, busy, done, cfg_err,
            a_tdata, a_tvalid, a_tready, b_tdata, b_tvalid, b_tready,
            s_tdata, s_tvalid, s_tready,
            m_tdata, m_tvalid, m_tready, m_tlast):
        en = sig_b(True)
        fire = sig_b()
        running = sig_b()
        line_last = sig_b()
        iter_last = None
        final = sig_b()
        out_final_pop = sig_b()
        ctl = control(clk, rst, start, cfg_dimension, cfg_iterations, busy, done, cfg_err,
                      fire, line_last, iter_last, final, out_final_pop, running,
                      p["MAX_DIM"], p["MAX_ITER"])
        ar = sig_u(L * W)
        br = sig_u(L * W)
        kload = sig_b()
        use_sig = sig_b()
        v0 = sig_u(3)      # {final, line_last, valid} of the input register stage
        vout = sig_u(3)

        if kind == "multiply_subtract":
            @always_comb
            def firec():
                fire.next = running and en and a_tvalid and b_tvalid and s_tvalid
                a_tready.next = running and en and b_tvalid and s_tvalid
                b_tready.next = running and en and a_tvalid and s_tvalid
                s_tready.next = running and en and a_tvalid and b_tvalid and line_last
        else:
            @always_comb
            def firec():
                fire.next = running and en and a_tvalid and b_tvalid
                a_tready.next = running and en and b_tvalid
                b_tready.next = running and en and a_tvalid

        @always_seq(clk.posedge, reset=rst)
        def inreg():
            if en:
                if fire:
                    ar.next = a_tdata
                    br.next = b_tdata
                v0.next = concat(final, line_last, fire)

        # the factor: one copy per lane (factor_reg), loaded with the line for
        # multiply_subtract, at the initiation for l2reg
        if kind == "multiply_subtract":
            kdata = s_tdata

            @always_comb
            def kreg():
                kload.next = en and fire
        elif kind == "l2reg":
            kdata = extra_cfg

            @always_comb
            def kreg():
                kload.next = start and not busy
        else:
            @always_seq(clk.posedge, reset=rst)
            def kreg():
                if start and not busy:
                    use_sig.next = extra_cfg

        dly = delay_flags(clk, rst, en, v0, vout, lat)

        ylanes = [sig_u(W) for _ in range(L)]
        lanes = []
        for i in range(L):
            xa = ar((i + 1) * W, i * W)
            xb = br((i + 1) * W, i * W)
            if kind == "sigmoid_delta":
                lanes.append(lane_sig_delta(clk, rst, en, xa, xb, use_sig, ylanes[i], table))
            else:
                k_i = sig_u(W)
                kz_i = sig_b(True)
                lanes.append(factor_reg(clk, rst, kload, kdata, k_i, kz_i))
                lanes.append(lane_sub_mul(clk, rst, en, xa, xb, k_i, kz_i, ylanes[i]))
        ycat = ConcatSignal(*reversed(ylanes)) if L > 1 else ylanes[0]
        ybits = sig_u(L * W)
        push = sig_b()
        fin_u = sig_u(1)
        mfin = sig_u(1)

        @always_comb
        def pk():
            ybits.next = ycat[L * W:]
            push.next = en and vout[0]
            fin_u.next = vout[2]
            out_final_pop.next = m_tvalid and m_tready and mfin[0]

        ofifo = out_fifo2(clk, rst, ybits, vout(1), fin_u, push, en,
                          m_tdata, m_tvalid, m_tready, m_tlast, mfin)
        return ctl, firec, inreg, kreg, dly, lanes, pk, ofifo

    return top, lat


def datasheet_lanewise(p: dict, kind: str, lat: int, summary: str) -> Datasheet:
    fields = [("cfg_dimension", str(field_bits(p["MAX_DIM"])), "lines per iteration"),
              ("cfg_iterations", str(field_bits(p["MAX_ITER"])), "iterations")]
    if kind == "l2reg":
        fields.append(("cfg_reg", str(p["W"]), "2*alpha*lambda2, signed Q(W,F)"))
    if kind == "sigmoid_delta":
        fields.append(("cfg_sigmoid", "1", "apply the PWL sigmoid to z"))
    return Datasheet(
        summary=summary,
        latency=f"{lat + 2} cycles from an input beat to its output beat on an idle sink "
                f"(input register, {lat} pipeline stages, output FIFO)",
        throughput="one line per cycle when every input is valid and the sink is ready "
                   "(measured in `make bench`)",
        fields=fields,
        notes=["Arithmetic is bit-exact with `golden/pipearch_ops.py` "
               "(round to nearest, ties toward +inf; saturate, never wrap).",
               "Input `tlast` is not used; lengths come from the initiation fields. "
               "Output `tlast` marks the last line of each iteration.",
               "Backpressure: a two-entry output FIFO with a registered not-full flag stalls the "
               "whole pipeline; no combinational path from `m_axis_y_tready` to an input `tready`.",
               "An invalid initiation (a field of 0 or above its maximum) sets `cfg_err`, pulses "
               "`done` and consumes nothing.  `start` while `busy` is ignored."]
        + (["A factor of 0 (`cfg_reg` of l2reg, the scalar of multiply_subtract) gives "
            "`y = x` whatever the second line holds: the product register is cleared rather "
            "than loaded, so a line that was never written (unknown in a 4-state simulation) "
            "does not reach `y` (an L2REG with factor 0 is the PipeArch copy)."]
           if kind != "sigmoid_delta" else []))
