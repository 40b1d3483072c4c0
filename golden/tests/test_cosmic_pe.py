"""golden.cosmic_pe: assembler validation, encoding, the instruction-level model against
independent per-op references, hazard semantics, and the SGD programs against golden.sgd."""
import numpy as np
import pytest

from golden import sgd as gsgd
from golden.cosmic_pe import (DONE_OFFSET, ERR_ILLEGAL, ERR_NL, HAZARD_DISTANCE, OPS, AsmError,
                              Assembler, Instr, PEConfig, PEModel, out_offset, pad_hazards,
                              result_latency, sgd_buffers, sgd_step_program)
from golden.fixedpoint import sigmoid_table

CFG = PEConfig()
SMALL = PEConfig(W=16, F=8, DATA_DEPTH=32, MODEL_DEPTH=16, INTERIM_DEPTH=16, SCHED_DEPTH=128, NL=0)


def run(cfg, text, data=None, model=None, interim=None, inputs=None):
    prog = Assembler(cfg).text(text).words()
    return PEModel(cfg, data, model, interim).run(prog, inputs)


def test_encode_decode_roundtrip_and_width():
    rng = np.random.default_rng(0)
    for cfg in (CFG, SMALL):
        assert cfg.instr_w == 4 + 1 + 3 + 3 + 4 * cfg.waw + 2 + 3
        for _ in range(200):
            f = {n: int(rng.integers(0, 1 << w)) for n, lsb, w in cfg.layout()}
            ins = Instr(**f)
            assert Instr.decode(ins.encode(cfg), cfg) == ins
    with pytest.raises(AsmError, match="field op"):
        Instr(op=16).encode(CFG)


@pytest.mark.parametrize("text,match", [
    ("foo D0 D1", "unknown opcode"),
    ("add D0", "operand b is missing"),
    ("add D0 D1", "one read port"),
    ("add D999 M0", "beyond DATA depth"),
    ("add X0 M0", "operand a="),
    ("pass D0 M1", "unary"),
    ("add D0 M0 -> I1 M2", "only one buffer write"),
    ("add D0 M0 -> I300", "beyond INTERIM depth"),
    ("add D0 M0 -> Q", "dst 'Q'"),
    ("add.clr D0 M0", "clr is only valid on mac"),
    ("add D0 M0 I0", "too many operands"),
])
def test_assembler_rejects_bad_fields(text, match):
    with pytest.raises(AsmError, match=match):
        Assembler(CFG).text(text)


def test_assembler_nl_absent_and_program_too_long():
    with pytest.raises(AsmError, match="no sigmoid unit"):
        Assembler(SMALL).op("sigmoid", "D0")
    asm = Assembler(SMALL).nop(SMALL.SCHED_DEPTH + 1)
    with pytest.raises(AsmError, match="schedule depth"):
        asm.words()
    with pytest.raises(AsmError, match="nop takes no"):
        Assembler(SMALL).op("nop", "D0")


def test_every_alu_op_matches_python_reference():
    fmt = CFG.fmt
    vals = [fmt.min_int, fmt.max_int, 0, -1, 1, fmt.one, -fmt.one, 3 * fmt.one + 5, fmt.min_int + 1]
    for a in vals:
        for b in vals:
            r = run(CFG, "add D0 M0 -> I0\nsub D0 M0 -> I1\nmul D0 M0 -> I2\nlt D0 M0 -> I3\n"
                         "gt D0 M0 -> I4\nmin D0 M0 -> I5\nmax D0 M0 -> I6\npass D0 -> I7\n"
                         "mac.clr D0 M0 -> I8", [a], [b])
            sat = lambda v: max(fmt.min_int, min(fmt.max_int, v))  # noqa: E731
            prod = sat((a * b + (1 << 15)) >> 16)
            exp = [sat(a + b), sat(a - b), prod, fmt.one * (a < b), fmt.one * (a > b), min(a, b),
                   max(a, b), a, prod]
            assert r.buffers[3][:9].tolist() == exp, (a, b)


def test_mac_chain_equals_dot_and_saturates_accumulator():
    fmt = CFG.fmt
    rng = np.random.default_rng(1)
    a = rng.integers(fmt.min_int, fmt.max_int, 40)
    b = rng.integers(fmt.min_int, fmt.max_int, 40)
    txt = "\n".join(f"mac{'.clr' if j == 0 else ''} D{j} M{j}" + (" -> I0" if j == 39 else "")
                    for j in range(40))
    r = run(CFG, txt, a, b)
    assert r.buffers[3][0] == int(fmt.dot(a, b))
    # ACC_GUARD=1: a 65-bit accumulator; min*min = 2**62 per product saturates it at
    # 2**64 - 1 after four products, the last mac then adds min*one
    cfg = PEConfig(ACC_GUARD=1)
    txt = "mac.clr D0 D0\n" + "mac D0 D0\n" * 5 + "mac D0 ONE -> I0"
    m = PEModel(cfg, [fmt.min_int])
    r = m.run(Assembler(cfg).text(txt).words())
    assert r.acc == (1 << 64) - 1 + fmt.min_int * fmt.one and r.buffers[3][0] == fmt.max_int


def test_nl_ops_use_the_shared_tables():
    from golden.fixedpoint import gaussian_table, log_table, pwl_fx, reciprocal_table, sigmoid_pwl
    fmt = CFG.fmt
    z = [fmt.to_fixed(v) for v in (-3.0, -0.5, 0.0, 0.75, 2.0, 9.0)]
    for op, t in (("sigmoid", sigmoid_pwl(fmt)), ("gauss", gaussian_table(fmt)),
                  ("recip", reciprocal_table(fmt)), ("log", log_table(fmt))):
        r = run(CFG, "\n".join(f"{op} D{i} -> I{i}" for i in range(len(z))), z)
        assert r.buffers[3][:len(z)].tolist() == pwl_fx(np.array(z), t).tolist()


def test_errors_suppress_writeback_and_are_sticky():
    m = PEModel(SMALL, [5], [7])
    words = [Instr(op=OPS["sigmoid"], src_a=0, wb=3, wa=0, out=7).encode(SMALL),
             Instr(op=15, src_a=0, wb=3, wa=1, out=7).encode(SMALL),
             Assembler(SMALL).instr("add", "D0", "M0", dst=["I2", "B"]).encode(SMALL)]
    r = m.run(words)
    assert r.err == ERR_ILLEGAL | ERR_NL
    assert r.buffers[3][:3].tolist() == [0, 0, 12]
    assert r.outputs["bus"] == [(2, 12)] and r.outputs["left"] == []


def test_hazard_semantics_with_and_without_bypass():
    txt = "add D0 ONE -> D0\n" * 6 + "pass D0 -> I0"
    one = CFG.fmt.one
    assert run(CFG, txt).buffers[3][0] == 6 * one          # sequential
    nb = PEConfig(BYPASS=0)
    r = run(nb, txt)
    # slot k sees writes of slots <= k-H (H = HAZARD_DISTANCE); an independent
    # reference: the value slot k writes is one more than what slot k-H wrote (or 0)
    H = HAZARD_DISTANCE
    wrote = []
    for k in range(6):
        wrote.append((wrote[k - H] if k >= H else 0) + one)
    seen = wrote[6 - H] if 6 >= H else 0
    assert r.buffers[1][0] == wrote[-1] and r.buffers[3][0] == seen
    assert (r.buffers[1][0], r.buffers[3][0]) != (6 * one, 6 * one)
    padded = pad_hazards(Assembler(nb).text(txt).instrs)
    assert len(padded) == 7 + 6 * (H - 1)
    r = PEModel(nb).run(padded)
    assert r.buffers[3][0] == 6 * one


def test_result_latencies_with_bypass():
    """BYPASS=1: a result is forwarded from slot k + result_latency(op); earlier readers
    see the previous value; of several visible writes of a word the latest instruction's
    wins (an older, longer op completing later does not overwrite it), and so does the
    final buffer; outputs come in cycle k + out_offset(op), the later instruction first
    when two land in one cycle."""
    one = CFG.fmt.one
    two, three = 2 * one, 3 * one
    lm = result_latency("mul")
    assert lm > 1 and result_latency("add") == 1 and result_latency("mac") >= lm
    # a mul's consumer 1 .. lm slots later
    for d in range(1, lm + 2):
        txt = "mul D0 M0 -> I0\n" + "nop\n" * (d - 1) + "pass I0 -> I1"
        r = run(CFG, txt, data=[two], model=[three], interim=[one])
        assert r.buffers[3][1] == (6 * one if d >= lm else one), d
        assert r.buffers[3][0] == 6 * one
    # an older mul and a younger add of the same word: the add wins once visible, also
    # after the mul completes, and in the final buffer
    txt = "mul D0 M0 -> I0\nadd D0 ONE -> I0\n" + "\n".join(f"pass I0 -> M{j}" for j in range(lm + 2))
    r = run(CFG, txt, data=[two], model=[three], interim=[one])
    assert r.buffers[2][:lm + 2].tolist() == [three] * (lm + 2)
    assert r.buffers[3][0] == three
    # outputs: the mul's out cycle equals the add's two slots later; the add wins
    txt = "mul D0 M0 -> B\n" + "nop\n" * (lm - 2) + "add D0 ONE -> B"
    r = run(CFG, txt, data=[two], model=[three])
    assert r.outputs["bus"] == [(0, 6 * one), (lm - 1, three)]
    assert r.out_cycles["bus"] == [(out_offset("add") + lm - 1, three)]
    assert out_offset("mul") == out_offset("add") + lm - 1
    assert r.cycles == lm + DONE_OFFSET - 1 + 1
    # pad_hazards(None) pads exactly to the writer's latency
    prog = Assembler(CFG).text("mac.clr D0 M0 -> I0\npass I0 -> I1").instrs
    padded = pad_hazards(prog, None)
    assert len(padded) == 1 + result_latency("mac")
    assert PEModel(CFG, [two], [three]).run(padded).buffers[3][1] == 6 * one


def test_links_and_bus():
    inputs = np.array([[1, 2, 3], [10, 20, 30], [100, 200, 300]])
    r = run(CFG, "add L R -> B\nadd BUS L -> L R\npass R -> I3 B", inputs=inputs)
    assert r.outputs == {"left": [(1, 40)], "right": [(1, 40)], "bus": [(0, 3), (2, 200)]}


@pytest.mark.parametrize("loss", ["ridge", "logistic"])
@pytest.mark.parametrize("bypass", [1, 0])
def test_sgd_program_equals_golden_sgd(loss, bypass):
    cfg = PEConfig(BYPASS=bypass)
    fmt = cfg.fmt
    rng = np.random.default_rng(3)
    n = 8
    A = rng.normal(0, 1, (1, n))
    b = np.array([1.0 if loss == "logistic" else 0.7])
    x0 = rng.normal(0, 0.5, n)
    alpha, lam2 = 0.1, 0.01
    res = gsgd.sgd(A, b, loss=loss, alpha=alpha, lam2=lam2, epochs=1, order=[[0]], x0=x0,
                   fmt=fmt, table=sigmoid_table(fmt))
    prog = sgd_step_program(cfg, n, loss == "logistic")
    if not bypass:
        prog = pad_hazards(prog)
    d, m, i = sgd_buffers(fmt, fmt.to_fixed(A[0]), fmt.to_fixed(b[0]), fmt.to_fixed(x0),
                          fmt.to_fixed(alpha), fmt.to_fixed(2 * alpha * lam2), n)
    r = PEModel(cfg, d, m, i).run(prog)
    assert r.buffers[2][:n].tolist() == res.x.tolist()
    assert [v for _, v in r.outputs["bus"]] == res.x.tolist()
    assert not np.array_equal(res.x, fmt.to_fixed(x0))
