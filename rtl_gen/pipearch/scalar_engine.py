"""``scalar_engine`` core: PipeArch ScalarEngine (section 6.2, Table 2; Alg. 1 line 12,
Alg. 2 lines 12-13, Alg. 3 line 13).

One (a, b) pair of scalars per iteration, one 2W-bit result per iteration:

* SGD (``cfg_mode`` = 0): ``step = alpha * (a - b)`` (a = dot product, b = label);
  bit-exact with ``golden.pipearch_ops.scalar_sgd``; upper word 0.
* SCD (``cfg_mode`` = 1): the soft-threshold step of Alg. 2 with ``g = a``, ``x = b``:
  ``ag = alpha*g``; ``d = x - ag``; ``mu = ag + al`` if ``d > al``, ``ag - al`` if
  ``d < -al``, else ``x``; result ``{x - mu, mu}``; bit-exact with
  ``golden.pipearch_ops.scalar_scd``.

The scalar engine has no dimension: every iteration is exactly one pair (there is no
``cfg_dimension`` field).  Same control protocol and global-stall pipeline as the
other PipeArch subroutines (``subroutine.py``).
"""
from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat

from rtl_gen.common.blocks import out_fifo2, round_sat, sat, sext
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.params import ParamSet
from rtl_gen.common.ports import make_factory

from .subroutine import base_params, bits_for, check_fmt

KIND = "scalar_engine"
PIPE_STAGES = 4   # operand select, product, round/saturate, soft threshold
LATENCY = PIPE_STAGES + 2  # plus input register and output FIFO


@block
def engine_control(clk, rst, start, cfg_iterations, busy, done, cfg_err,
                   fire, is_final, out_final_pop, running, max_iter):
    """Iteration counter and the start/busy/done/cfg_err protocol (one pair per iteration)."""
    iw = len(cfg_iterations)
    it_r = sig_u(iw)
    icnt = sig_u(iw)

    it_bad = sig_b()

    @always_comb
    def flags():
        is_final.next = icnt == it_r - 1

    if max_iter < (1 << iw) - 1:
        @always_comb
        def chk():
            it_bad.next = cfg_iterations == 0 or cfg_iterations > max_iter
    else:  # every value of the field fits: a range compare would be constant (lint)
        @always_comb
        def chk():
            it_bad.next = cfg_iterations == 0

    @always_seq(clk.posedge, reset=rst)
    def seq():
        done.next = False
        if start and not busy:
            if it_bad:
                cfg_err.next = True
                done.next = True
            else:
                cfg_err.next = False
                busy.next = True
                running.next = True
                it_r.next = cfg_iterations
                icnt.next = 0
        if fire:
            if icnt == it_r - 1:
                icnt.next = 0
                running.next = False
            else:
                icnt.next = icnt + 1
        if out_final_pop:
            busy.next = False
            done.next = True

    return flags, chk, seq


def ports_of(p: dict) -> list[Port]:
    W = p["W"]
    iw = bits_for(p["MAX_ITER"])
    return [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset"),
        Port("start", "in", 1, "initiate (sampled with the cfg_* fields while busy is low)"),
        Port("cfg_iterations", "in", iw, "iterations (pairs), 1..MAX_ITER"),
        Port("cfg_mode", "in", 1, "0: SGD step, 1: SCD soft-threshold step"),
        Port("cfg_alpha", "in", W, "step size alpha, signed Q(W,F)"),
        Port("cfg_alpha_lambda", "in", W, "alpha*lambda1 (SCD threshold), signed Q(W,F)"),
        Port("busy", "out", 1, "an initiation is in progress"),
        Port("done", "out", 1, "one-cycle pulse: last result accepted, or an invalid initiation"),
        Port("cfg_err", "out", 1, "last initiation was invalid (sticky until the next start)"),
        Port("s_axis_a_tdata", "in", W, "SGD: dot product; SCD: gradient g (signed Q(W,F))"),
        Port("s_axis_a_tvalid", "in", 1, ""),
        Port("s_axis_a_tready", "out", 1, ""),
        Port("s_axis_b_tdata", "in", W, "SGD: label b; SCD: coordinate x_j (signed Q(W,F))"),
        Port("s_axis_b_tvalid", "in", 1, ""),
        Port("s_axis_b_tready", "out", 1, ""),
        Port("m_axis_res_tdata", "out", 2 * W,
             "[W-1:0]: step (SGD alpha*(a-b); SCD mu); [2W-1:W]: SCD new coordinate x-mu (0 in SGD)"),
        Port("m_axis_res_tvalid", "out", 1, ""),
        Port("m_axis_res_tready", "in", 1, ""),
        Port("m_axis_res_tlast", "out", 1, "result of the last iteration"),
    ]


def build(p):
    W, F = p["W"], p["F"]

    @block
    def scalar_engine(clk, rst, start, cfg_iterations, cfg_mode, cfg_alpha, cfg_alpha_lambda,
                      busy, done, cfg_err,
                      s_axis_a_tdata, s_axis_a_tvalid, s_axis_a_tready,
                      s_axis_b_tdata, s_axis_b_tvalid, s_axis_b_tready,
                      m_axis_res_tdata, m_axis_res_tvalid, m_axis_res_tready, m_axis_res_tlast):
        en = sig_b(True)
        fire = sig_b()
        running = sig_b()
        is_final = sig_b()
        out_final_pop = sig_b()
        ctl = engine_control(clk, rst, start, cfg_iterations, busy, done, cfg_err,
                             fire, is_final, out_final_pop, running, p["MAX_ITER"])

        mode_r = sig_b()
        alpha_r = sig_s(W)
        al_r = sig_s(W)
        nal_r = sig_s(W + 1)   # -alpha_lambda, exact
        # widen to W+1 bits BEFORE negating: -(-2**(W-1)) needs W+1 bits.  Negating the
        # W-bit port and then widening wraps in the VHDL conversion (resize(-x, W+1)).
        al_e = sig_s(W + 1)
        ext_al = sext(cfg_alpha_lambda, al_e)

        @always_seq(clk.posedge, reset=rst)
        def cfgreg():
            if start and not busy:
                mode_r.next = cfg_mode
                alpha_r.next = cfg_alpha.signed()
                al_r.next = cfg_alpha_lambda.signed()
                nal_r.next = -al_e

        @always_comb
        def firec():
            fire.next = running and en and s_axis_a_tvalid and s_axis_b_tvalid
            s_axis_a_tready.next = running and en and s_axis_b_tvalid
            s_axis_b_tready.next = running and en and s_axis_a_tvalid

        # ---- S0: input register ----------------------------------------------
        a0 = sig_s(W)
        b0 = sig_s(W)
        v0 = sig_u(2)          # {final, valid}

        @always_seq(clk.posedge, reset=rst)
        def inreg():
            if en:
                if fire:
                    a0.next = s_axis_a_tdata.signed()
                    b0.next = s_axis_b_tdata.signed()
                v0.next = concat(is_final, fire)

        # ---- S1: multiplier operand: SGD sat(a - b), SCD g = a ------------------
        dab = sig_s(W + 1)
        dab_s = sig_s(W)

        @always_comb
        def subab():
            dab.next = a0 - b0

        st_ab = sat(dab, dab_s)
        m1 = sig_s(W)
        x1 = sig_s(W)
        v1 = sig_u(2)

        @always_seq(clk.posedge, reset=rst)
        def s1():
            if en:
                if mode_r:
                    m1.next = a0
                else:
                    m1.next = dab_s
                x1.next = b0
                v1.next = v0

        # ---- S2: full-width product alpha * operand ------------------------------
        p_c = sig_s(2 * W + 1)
        p2 = sig_s(2 * W + 1)
        x2 = sig_s(W)
        v2 = sig_u(2)

        @always_comb
        def mul():
            p_c.next = alpha_r * m1

        @always_seq(clk.posedge, reset=rst)
        def s2():
            if en:
                p2.next = p_c
                x2.next = x1
                v2.next = v1

        # ---- S3: round + saturate: ag = alpha*g (SGD: the step) -------------------
        ag_c = sig_s(W)
        rs = round_sat(p2, ag_c, F)
        ag3 = sig_s(W)
        x3 = sig_s(W)
        v3 = sig_u(2)

        @always_seq(clk.posedge, reset=rst)
        def s3():
            if en:
                ag3.next = ag_c
                x3.next = x2
                v3.next = v2

        # ---- S4: soft threshold (SCD) ---------------------------------------------
        dx = sig_s(W + 1)
        dx_s = sig_s(W)
        pa = sig_s(W + 1)
        pa_s = sig_s(W)
        ma = sig_s(W + 1)
        ma_s = sig_s(W)

        @always_comb
        def arith():
            dx.next = x3 - ag3
            pa.next = ag3 + al_r
            ma.next = ag3 - al_r

        st_dx = sat(dx, dx_s)
        st_pa = sat(pa, pa_s)
        st_ma = sat(ma, ma_s)
        dx_e = sig_s(W + 1)
        ext_dx = sext(dx_s, dx_e)
        mu4 = sig_s(W)
        x4 = sig_s(W)
        v4 = sig_u(2)
        mode4 = sig_b()

        @always_seq(clk.posedge, reset=rst)
        def s4():
            if en:
                if not mode_r:
                    mu4.next = ag3
                elif dx_s > al_r:
                    mu4.next = pa_s
                elif dx_e < nal_r:
                    mu4.next = ma_s
                else:
                    mu4.next = x3
                x4.next = x3
                v4.next = v3
                mode4.next = mode_r

        # ---- new coordinate x - mu, into the output FIFO ----------------------------
        nx = sig_s(W + 1)
        nx_s = sig_s(W)

        @always_comb
        def subx():
            nx.next = x4 - mu4

        st_nx = sat(nx, nx_s)
        res = sig_u(2 * W)
        push = sig_b()
        last_in = sig_b()
        fin_u = sig_u(1)
        mfin = sig_u(1)
        zero_w = sig_u(W)

        @always_comb
        def outc():
            if mode4:
                res.next = concat(nx_s[W:], mu4[W:])
            else:
                res.next = concat(zero_w, mu4[W:])
            push.next = en and v4[0]
            last_in.next = v4[1]
            fin_u.next = v4[1]
            out_final_pop.next = m_axis_res_tvalid and m_axis_res_tready and mfin[0]

        ofifo = out_fifo2(clk, rst, res, last_in, fin_u, push, en,
                          m_axis_res_tdata, m_axis_res_tvalid, m_axis_res_tready, m_axis_res_tlast, mfin)
        return (ctl, ext_al, cfgreg, firec, inreg, subab, st_ab, s1, mul, s2, rs, s3, arith, st_dx, st_pa,
                st_ma, ext_dx, s4, subx, st_nx, outc, ofifo)

    ports = ports_of(p)
    return make_factory(scalar_engine, ports), ports


def datasheet(p):
    W = p["W"]
    return Datasheet(
        summary="Scalar step of the PipeArch training loops, one (a, b) pair per iteration: "
                "SGD `step = alpha*(a - b)` (Alg. 1 line 12, Alg. 3 line 13) or the SCD soft "
                "threshold `mu = T(x_j, g)` with the coordinate update `x_j - mu` (Alg. 2 lines 12-13).",
        latency=f"{LATENCY} cycles from an input pair's handshake to its result's handshake on an "
                f"always-ready sink (input register, {PIPE_STAGES} pipeline stages, output FIFO); "
                "the same in both modes",
        throughput="one (a, b) pair per cycle when both inputs are valid and the output FIFO is not "
                   "full (measured in `make bench`)",
        fields=[("cfg_iterations", str(bits_for(p["MAX_ITER"])), "pairs (results)"),
                ("cfg_mode", "1", "0 = SGD, 1 = SCD"),
                ("cfg_alpha", str(W), "step size alpha, signed Q(W,F)"),
                ("cfg_alpha_lambda", str(W), "alpha*lambda1, signed Q(W,F) (SCD only)")],
        notes=["Arithmetic is bit-exact with `golden.pipearch_ops.scalar_sgd` / `scalar_scd` "
               "(round to nearest, ties toward +inf; every add, subtract and product saturates, "
               "never wraps; the thresholds compare against `alpha_lambda` and its exact negation).",
               f"`m_axis_res_tdata` bits [{W - 1}:0] hold the step (SGD) or `mu` (SCD); bits "
               f"[{2 * W - 1}:{W}] hold the new coordinate `sat(x - mu)` in SCD mode and 0 in SGD mode.",
               "There is no dimension field: each iteration consumes exactly one pair "
               "(one word from each input stream).",
               "Input `tlast` is not used. Output `tlast` is set on the result of the last iteration only.",
               "Backpressure: a two-entry output FIFO with a registered not-full flag stalls the "
               "whole pipeline; no combinational path from `m_axis_res_tready` to an input `tready`.",
               "An invalid initiation (iterations 0 or above MAX_ITER) sets `cfg_err`, pulses "
               "`done` and consumes nothing.  `start` while `busy` is ignored."])


def _params() -> ParamSet:
    keep = ("W", "F", "MAX_ITER")
    return ParamSet([q for q in base_params() if q.name in keep], [check_fmt])


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch ScalarEngine subroutine: SGD step alpha*(a-b) or SCD soft-threshold step",
    params=_params(),
    build=build, datasheet=datasheet,
    configs={"default": {}, "small": {"W": 16, "F": 8, "MAX_ITER": 64}},
    generator="rtl_gen/pipearch/scalar_engine.py",
)
