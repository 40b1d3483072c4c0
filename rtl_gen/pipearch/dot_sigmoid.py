"""``dot_sigmoid`` core: PipeArch DotSigmoid (section 6.2.1, Fig. 5; Alg. 1 line 11).

For each of ``iterations`` vectors, the exact dot product of ``dimension`` lines of
``a`` and ``b`` (LANES words per line), rounded and saturated once to Q(W,F), then
optionally the piecewise-linear sigmoid.  Bit-exact with
``golden.pipearch_ops.dot_sigmoid``.

Pipeline (global stall on the registered not-full flag ``en`` of the output FIFO):
input register -> LANES full-width products in two stages (``split_mul_reg``: partial
products, then their sum) -> registered adder tree (one level per
stage, each level one bit wider) -> accumulator (exact, no wrap) -> one round+saturate
-> PWL sigmoid (bypassed by a matching delay when ``cfg_sigmoid`` is 0) -> 2-entry FIFO.
"""
from __future__ import annotations

from myhdl import always_comb, always_seq, block, concat

from golden.fixedpoint import QFormat, sigmoid_table
from rtl_gen.common.blocks import add_reg, out_fifo2, pass_reg, round_sat, sext
from rtl_gen.common.core import CoreDef, Datasheet, Port
from rtl_gen.common.hdl import sig_b, sig_s, sig_u
from rtl_gen.common.ports import make_factory
from rtl_gen.common.sigmoid import SIGMOID_LATENCY, sigmoid_pipe

from .split_mul import SPLIT_MUL_LATENCY, split_mul_reg
from .subroutine import bits_for, control, delay_flags, field_bits, make_params

KIND = "dot_sigmoid"


def widths(p: dict) -> dict:
    """Derived widths: product, adder-tree levels and output, accumulator."""
    L, W = p["LANES"], p["W"]
    levels = (L - 1).bit_length()          # ceil(log2(LANES))
    # |product| <= 2**(2W-2); MAX_DIM*LANES of them need bits_for(N) more magnitude bits;
    # one more bit is the headroom the rounding add needs (never wraps).
    aw = 2 * W + bits_for(p["MAX_DIM"] * L) + 1
    return {"levels": levels, "pw": 2 * W, "tw": 2 * W + levels, "aw": aw,
            "lat": SPLIT_MUL_LATENCY + levels + 1 + 1 + SIGMOID_LATENCY}


def ports_of(p: dict) -> list[Port]:
    L, W = p["LANES"], p["W"]
    dw, iw = field_bits(p["MAX_DIM"]), field_bits(p["MAX_ITER"])
    ports = [
        Port("clk", "in", 1, "clock, rising edge"),
        Port("rst", "in", 1, "synchronous active-high reset"),
        Port("start", "in", 1, "initiate (sampled with the cfg_* fields while busy is low)"),
        Port("cfg_dimension", "in", dw, "lines per iteration (vector length / LANES), 1..MAX_DIM"),
        Port("cfg_iterations", "in", iw, "iterations (dot products), 1..MAX_ITER"),
        Port("cfg_sigmoid", "in", 1, "1: apply the PWL sigmoid to each dot product, 0: identity"),
        Port("busy", "out", 1, "an initiation is in progress"),
        Port("done", "out", 1, "one-cycle pulse: last result accepted, or an invalid initiation"),
        Port("cfg_err", "out", 1, "last initiation was invalid (sticky until the next start)"),
    ]
    for n in ("a", "b"):
        ports += [Port(f"s_axis_{n}_tdata", "in", L * W, f"{n} line, lane i in bits [i*W +: W]"),
                  Port(f"s_axis_{n}_tvalid", "in", 1, ""),
                  Port(f"s_axis_{n}_tready", "out", 1, "")]
    ports += [Port("m_axis_res_tdata", "out", W, "one result per iteration, signed Q(W,F)"),
              Port("m_axis_res_tvalid", "out", 1, ""), Port("m_axis_res_tready", "in", 1, ""),
              Port("m_axis_res_tlast", "out", 1, "result of the last iteration")]
    return ports


def build(p):
    L, W, F = p["LANES"], p["W"], p["F"]
    wd = widths(p)
    levels, pw, aw = wd["levels"], wd["pw"], wd["aw"]
    table = sigmoid_table(QFormat(W, F))

    @block
    def dot_sigmoid(clk, rst, start, cfg_dimension, cfg_iterations, cfg_sigmoid, busy, done, cfg_err,
                    s_axis_a_tdata, s_axis_a_tvalid, s_axis_a_tready,
                    s_axis_b_tdata, s_axis_b_tvalid, s_axis_b_tready,
                    m_axis_res_tdata, m_axis_res_tvalid, m_axis_res_tready, m_axis_res_tlast):
        en = sig_b(True)
        fire = sig_b()
        running = sig_b()
        line_last = sig_b()
        is_final = sig_b()
        out_final_pop = sig_b()
        ctl = control(clk, rst, start, cfg_dimension, cfg_iterations, busy, done, cfg_err,
                      fire, line_last, None, is_final, out_final_pop, running,
                      p["MAX_DIM"], p["MAX_ITER"])

        # ---- input register -------------------------------------------------
        ar = sig_u(L * W)
        br = sig_u(L * W)
        use_sig = sig_b()
        v0 = sig_u(3)          # {final, line_last, valid}

        @always_comb
        def firec():
            fire.next = running and en and s_axis_a_tvalid and s_axis_b_tvalid
            s_axis_a_tready.next = running and en and s_axis_b_tvalid
            s_axis_b_tready.next = running and en and s_axis_a_tvalid

        @always_seq(clk.posedge, reset=rst)
        def inreg():
            if en:
                if fire:
                    ar.next = s_axis_a_tdata
                    br.next = s_axis_b_tdata
                v0.next = concat(is_final, line_last, fire)

        @always_seq(clk.posedge, reset=rst)
        def cfgreg():
            if start and not busy:
                use_sig.next = cfg_sigmoid

        # ---- products and adder tree (one registered level per stage) ----------
        prods = [sig_s(pw) for _ in range(L)]
        insts = []
        for i in range(L):
            insts.append(split_mul_reg(clk, rst, en, None, ar((i + 1) * W, i * W), br((i + 1) * W, i * W),
                                       prods[i]))
        level = prods
        w = pw
        while len(level) > 1:
            w += 1
            nxt = []
            for j in range(0, len(level) - 1, 2):
                y = sig_s(w)
                insts.append(add_reg(clk, rst, en, level[j], level[j + 1], y))
                nxt.append(y)
            if len(level) % 2:
                y = sig_s(w)
                insts.append(pass_reg(clk, rst, en, level[-1], y))
                nxt.append(y)
            level = nxt
        tsum = level[0]
        vt = sig_u(3)
        dly_t = delay_flags(clk, rst, en, v0, vt, SPLIT_MUL_LATENCY + levels)

        # ---- accumulator -------------------------------------------------------
        tsum_e = sig_s(aw)
        ext = sext(tsum, tsum_e)
        acc = sig_s(aw)
        acc_c = sig_s(aw)
        clear = sig_b(True)    # the next accumulated line starts a new dot product
        av = sig_b()           # acc holds a finished dot product
        afin = sig_b()         # ... of the last iteration

        @always_comb
        def accc():
            if clear:
                acc_c.next = tsum_e
            else:
                acc_c.next = acc + tsum_e

        @always_seq(clk.posedge, reset=rst)
        def accs():
            if en:
                if vt[0]:
                    acc.next = acc_c
                    clear.next = vt[1]
                av.next = vt[0] and vt[1]
                afin.next = vt[0] and vt[2]

        # ---- one rounding + saturation ------------------------------------------
        dr_c = sig_s(W)
        rs = round_sat(acc, dr_c, F)
        d1 = sig_s(W)
        rv = sig_u(2)          # {final, valid}

        @always_seq(clk.posedge, reset=rst)
        def rnd():
            if en:
                d1.next = dr_c
                rv.next = concat(afin, av)

        # ---- optional sigmoid; the identity path is delayed to match -----------
        sg = sig_s(W)
        sgp = sigmoid_pipe(clk, rst, en, d1, sg, table)
        dpack = sig_u(W + 2)
        dout = sig_u(W + 2)

        @always_comb
        def pack():
            dpack.next = concat(rv, d1[W:])

        dly_s = delay_flags(clk, rst, en, dpack, dout, SIGMOID_LATENCY)

        res = sig_u(W)
        push = sig_b()
        fin_u = sig_u(1)
        last_in = sig_b()
        mfin = sig_u(1)

        @always_comb
        def outc():
            if use_sig:
                res.next = sg[W:]
            else:
                res.next = dout[W:]
            push.next = en and dout[W]
            last_in.next = dout[W + 1]
            fin_u.next = dout[W + 1]
            out_final_pop.next = m_axis_res_tvalid and m_axis_res_tready and mfin[0]

        ofifo = out_fifo2(clk, rst, res, last_in, fin_u, push, en,
                          m_axis_res_tdata, m_axis_res_tvalid, m_axis_res_tready, m_axis_res_tlast, mfin)
        return (ctl, firec, inreg, cfgreg, insts, dly_t, ext, accc, accs, rs, rnd, sgp, pack,
                dly_s, outc, ofifo)

    ports = ports_of(p)
    return make_factory(dot_sigmoid, ports), ports


def datasheet(p):
    wd = widths(p)
    W, F = p["W"], p["F"]
    return Datasheet(
        summary="`res = S(sat(round(sum over dimension lines and LANES lanes of a*b)))` per "
                "iteration, `S` the PWL sigmoid (`cfg_sigmoid`=1) or the identity: the DotSigmoid "
                "subroutine of PipeArch (section 6.2.1, Fig. 5; Alg. 1 line 11, Alg. 2 line 11, "
                "Alg. 3 line 12).",
        latency=f"{wd['lat'] + 2} cycles from the handshake of an iteration's last input line to the "
                f"handshake of its result on an always-ready sink (input register, "
                f"{SPLIT_MUL_LATENCY} product stages (partial products, their sum), "
                f"{wd['levels']} adder-tree level(s), accumulator, round/saturate, "
                f"{SIGMOID_LATENCY} sigmoid stages -- also taken with the sigmoid off -- and the "
                f"output FIFO)",
        throughput="one input line (a and b together) per cycle when both inputs are valid and the "
                   "output FIFO is not full, across iterations and back-to-back initiations "
                   "(measured in `make bench`)",
        fields=[("cfg_dimension", str(field_bits(p["MAX_DIM"])), "lines per dot product"),
                ("cfg_iterations", str(field_bits(p["MAX_ITER"])), "dot products (results)"),
                ("cfg_sigmoid", "1", "apply the PWL sigmoid to each result")],
        notes=["Arithmetic is bit-exact with `golden.pipearch_ops.dot_sigmoid`: LANES full-width "
               f"({2 * W}-bit) products, an adder tree widening one bit per level "
               f"({wd['tw']} bits out), an exact {wd['aw']}-bit accumulator (MAX_DIM*LANES products "
               f"plus a rounding guard bit: it cannot wrap), then one round to nearest (ties toward "
               f"+inf) of {F} fraction bits and one saturation to {W} bits.",
               "The sigmoid is the shared PWL table of `golden.fixedpoint.sigmoid_table` "
               "(64 segments over +-8); its error bound is documented there.",
               "Input `tlast` is not used; lengths come from the initiation fields. "
               "Output `tlast` is set on the result of the last iteration only.",
               "Backpressure: a two-entry output FIFO with a registered not-full flag stalls the "
               "whole pipeline; no combinational path from `m_axis_res_tready` to an input `tready`.",
               "An invalid initiation (a field of 0 or above its maximum) sets `cfg_err`, pulses "
               "`done` and consumes nothing.  `start` while `busy` is ignored."])


CORE = CoreDef(
    name=KIND, family="pipearch",
    description="PipeArch DotSigmoid subroutine: exact dot product, one round/saturate, optional PWL sigmoid",
    params=make_params(sigmoid=True),
    build=build, datasheet=datasheet,
    configs={"default": {}, "small": {"LANES": 4, "W": 16, "F": 8, "MAX_DIM": 64, "MAX_ITER": 64}},
    generator="rtl_gen/pipearch/dot_sigmoid.py",
)
