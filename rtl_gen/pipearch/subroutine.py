"""Shared pieces of the PipeArch compute subroutines.

Control (every subroutine): ``start`` samples the initiation fields (``cfg_*``) while
``busy`` is low.  An invalid initiation (dimension or iterations of 0, or above the
generator maximum) sets ``cfg_err`` and pulses ``done`` without touching any stream.
Otherwise ``busy`` rises, the input streams are consumed for ``dimension`` lines x
``iterations``, and ``done`` pulses for one cycle in the cycle after the last output beat has been
accepted by the sink; ``start`` may be asserted again in the cycle after ``done``.
``start`` while ``busy`` is ignored.  ``cfg_err`` stays set until the next ``start``.

Data path: a global-stall pipeline.  Every stage advances when ``en`` (the registered
not-full flag of a two-entry output FIFO) is high, so the sink's ``tready`` never
reaches an input ``tready`` combinationally, and no beat is dropped or duplicated.
Input ``tlast`` is not used: lengths come from the initiation fields.  Output
``tlast`` marks the last beat of every iteration.
"""
from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat

from golden.fixedpoint import QFormat, sigmoid_table
from rtl_gen.common.hdl import sig_b, sig_u
from rtl_gen.common.params import Param, ParamSet, multiple_of_8


def base_params(lanes=16, w=32, f=16, max_dim=1024, max_iter=4096):
    return [
        Param("LANES", lanes, "words per line (LANES*W bits per beat)", 1, 64),
        Param("W", w, "word width, signed fixed point", 8, 32, multiple_of_8),
        Param("F", f, "fraction bits", 1, 30),
        Param("MAX_DIM", max_dim, "largest dimension (lines per iteration)", 1, 1 << 20),
        Param("MAX_ITER", max_iter, "largest iteration count", 1, 1 << 20),
    ]


def check_fmt(p: dict) -> str | None:
    if p["F"] >= p["W"]:
        return f"parameter F={p['F']} must be below W={p['W']}"
    return None


def check_sigmoid(p: dict) -> str | None:
    try:
        sigmoid_table(QFormat(p["W"], p["F"]))
    except ValueError as e:
        return f"parameters W={p['W']}, F={p['F']} cannot hold the sigmoid: {e}"
    return None


def make_params(extra=(), sigmoid=False, **kw) -> ParamSet:
    checks = [check_fmt] + ([check_sigmoid] if sigmoid else [])
    return ParamSet(base_params(**kw) + list(extra), checks)


def bits_for(n: int) -> int:
    return max(1, int(n).bit_length())


def field_bits(max_value: int) -> int:
    """Width of an initiation field: it can also hold ``max_value + 1``, so an over-range
    value is representable and the range check is never a constant comparison."""
    return bits_for(max_value + 1)


@block
def control(clk, rst, start, cfg_dimension, cfg_iterations, busy, done, cfg_err,
            fire, line_last, iter_last, final, out_final_pop, running, max_dim, max_iter):
    """Line/iteration counters and the start/busy/done/cfg_err protocol.

    ``fire`` (input) is a line accepted; ``iter_last`` (may be None)/``iter_last``/``final`` (outputs,
    combinational) describe the line being accepted.  ``out_final_pop`` (input) is the
    handshake of the very last output beat."""
    dw = len(cfg_dimension)
    iw = len(cfg_iterations)
    dim_r = sig_u(dw)
    it_r = sig_u(iw)
    lcnt = sig_u(dw)
    icnt = sig_u(iw)

    if iter_last is None:
        @always_comb
        def flags():
            line_last.next = lcnt == dim_r - 1
            final.next = (lcnt == dim_r - 1) and (icnt == it_r - 1)
    else:
        @always_comb
        def flags():
            line_last.next = lcnt == dim_r - 1
            iter_last.next = icnt == it_r - 1
            final.next = (lcnt == dim_r - 1) and (icnt == it_r - 1)

    @always_seq(clk.posedge, reset=rst)
    def seq():
        done.next = False
        if start and not busy:
            if cfg_dimension == 0 or cfg_dimension > max_dim or cfg_iterations == 0 \
                    or cfg_iterations > max_iter:
                cfg_err.next = True
                done.next = True
            else:
                cfg_err.next = False
                busy.next = True
                running.next = True
                dim_r.next = cfg_dimension
                it_r.next = cfg_iterations
                lcnt.next = 0
                icnt.next = 0
        if fire:
            if lcnt == dim_r - 1:
                lcnt.next = 0
                if icnt == it_r - 1:
                    icnt.next = 0
                    running.next = False
                else:
                    icnt.next = icnt + 1
            else:
                lcnt.next = lcnt + 1
        if out_final_pop:
            busy.next = False
            done.next = True

    return flags, seq


@block
def delay_flags(clk, rst, en, din, dout, depth):
    """``depth``-stage delay of a bit vector advancing on ``en``: one shift register in
    one process (a list of per-stage signals would become a multiply-driven VHDL array)."""
    w = len(din)
    if depth == 1:
        r1 = sig_u(w)

        @always_seq(clk.posedge, reset=rst)
        def st():
            if en:
                r1.next = din

        @always_comb
        def outc():
            dout.next = r1

        return st, outc
    sr = sig_u(w * depth)

    @always_seq(clk.posedge, reset=rst)
    def sh():
        if en:
            sr.next = concat(sr[w * (depth - 1):], din)

    @always_comb
    def outc():
        dout.next = sr[w * depth:w * (depth - 1)]

    return sh, outc
