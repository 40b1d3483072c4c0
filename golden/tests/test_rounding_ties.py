"""Rounding ties (exactly half an LSB, both signs, and at the saturation edges) at every
rounding point of the golden models the cores are compared with: QFormat.dot, the PWL
tables, the CoSMIC PE model (mul, mac), the FPDeep conv functions (tile, engine, FP
node, EB node, gradient, update) and the MAPLE chain model.  Each result is checked
against exact rational arithmetic (``fractions.Fraction``): round half toward +inf,
then saturate -- not against the model's own shift-and-add."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from golden import conv
from golden import maple_mapping as mm
from golden.cosmic_pe import Assembler, PEConfig, PEModel
from golden.fixedpoint import (DEFAULT, QFormat, gaussian_table, log_table, pwl_fx,
                               reciprocal_table, sigmoid_pwl)

FMTS = [DEFAULT, QFormat(16, 8)]


def ref_round(fmt, v) -> int:
    """``v`` (scale ``2**-2F``) rounded to a word: nearest, ties toward +inf, saturated."""
    q = math.floor(Fraction(int(v), 1 << fmt.F) + Fraction(1, 2))
    return max(fmt.min_int, min(fmt.max_int, q))


def tie_value(fmt, t) -> int:
    return (int(t) << fmt.F) + (1 << (fmt.F - 1))


def ties_both_signs(fmt, vals):
    h = 1 << (fmt.F - 1)
    ties = [int(v) for v in np.asarray(vals, dtype=object).ravel() if int(v) % (1 << fmt.F) == h]
    assert any(v > 0 for v in ties) and any(v < 0 for v in ties), "stimulus lacks ties of both signs"
    return ties


def tie_words(fmt, rng, j, shape, lim=1.0):
    """``+-odd * 2**(F-1-j)``: times ``+-odd * 2**j`` an exact tie."""
    s = fmt.F - 1 - j
    odd = 2 * rng.integers(0, max(1, int(lim * fmt.one) >> (s + 1)), size=shape) + 1
    return np.where(rng.random(shape) < 0.5, 1, -1) * (odd << s)


def test_ref_round_is_half_up():
    f = DEFAULT
    assert [ref_round(f, tie_value(f, t)) for t in (0, -1, 5, -6)] == [1, 0, 6, -5]
    assert ref_round(f, tie_value(f, f.max_int)) == f.max_int           # carries out: saturate
    assert ref_round(f, tie_value(f, f.min_int - 1)) == f.min_int       # lands on min_int


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_dot_ties(fmt):
    rng = np.random.default_rng(1)
    a = tie_words(fmt, rng, 3, (40, 1))
    b = np.where(rng.random((40, 1)) < 0.5, 1, -1) * (2 * rng.integers(0, 8, (40, 1)) + 1) << 3
    ints = rng.integers(-3, 4, (40, 4)) * fmt.one                        # products multiple of 2**F
    A = np.concatenate([a, rng.integers(-fmt.one, fmt.one, (40, 4))], axis=1)
    Bm = np.concatenate([b, ints], axis=1)
    exact = (A.astype(object) * Bm.astype(object)).sum(axis=1)
    ties_both_signs(fmt, exact)
    assert fmt.dot(A, Bm).tolist() == [ref_round(fmt, v) for v in exact]
    # edges: exact values half an LSB above max_int (carries out: saturates) and above
    # min_int - 1 (rounds up onto min_int)
    top = fmt.dot(np.array([fmt.max_int, 1 << (fmt.F - 1)]), np.array([fmt.one, 1]))
    assert top == fmt.max_int
    bot = fmt.dot(np.array([fmt.min_int, -(1 << (fmt.F - 1))]), np.array([fmt.one, 1]))
    assert bot == fmt.min_int                      # min_int - 1/2 LSB rounds up onto min_int


@pytest.mark.parametrize("make", [sigmoid_pwl, gaussian_table, reciprocal_table, log_table],
                         ids=lambda m: m.__name__)
def test_pwl_segment_ties(make):
    t = make(DEFAULT)
    F = DEFAULT.F
    off = np.arange(1 << t.shift, dtype=np.int64)
    zs, prods = [], []
    for idx, sl in enumerate(t.slope):
        hit = off[((int(sl) * off) & ((1 << F) - 1)) == (1 << (F - 1))]
        for o in hit[:2]:
            zs.append(t.lo + (idx << t.shift) + int(o))
            prods.append((idx, int(sl) * int(o)))
    assert zs, f"{t.name}: no segment product is a tie"
    got = pwl_fx(np.array(zs, dtype=np.int64), t).tolist()
    want = []
    for idx, p in prods:
        y = max(DEFAULT.min_int, min(DEFAULT.max_int, t.base[idx] + math.floor(Fraction(p, 1 << F) + Fraction(1, 2))))
        want.append(min(max(y, t.y_min), t.y_max))
    assert got == want
    if min(t.slope) < 0:
        assert any(p < 0 for _, p in prods), f"{t.name}: no negative segment tie"


def test_pe_mul_and_mac_ties():
    cfg = PEConfig(NL=0)
    fmt = cfg.fmt
    rng = np.random.default_rng(2)
    a = tie_words(fmt, rng, 5, (20,), lim=4.0)
    b = np.where(rng.random(20) < 0.5, 1, -1) * ((2 * rng.integers(0, 16, 20) + 1) << 5)
    # edges: 65537 * 2**13 times 65535 * 2**2 is (2**32 - 1) * 2**15, the tie above max_int;
    # 6700417 * 2**8 times -641 * 2**7 is -(2**32 + 1) * 2**15, the tie above min_int - 1
    a = np.concatenate([a, [65537 << 13, 6700417 << 8]])
    b = np.concatenate([b, [65535 << 2, -(641 << 7)]])
    n = len(a)
    prods = [int(x) * int(y) for x, y in zip(a, b)]
    ties_both_signs(fmt, prods)
    assert prods[-2] == tie_value(fmt, fmt.max_int) and prods[-1] == tie_value(fmt, fmt.min_int - 1)
    asm = Assembler(cfg)
    for i in range(n):
        asm.op("mul", f"D{i}", f"M{i}", dst=["B"])
    for i in range(n):                   # one-term mac chains: the same ties through the accumulator
        asm.op("mac", f"D{i}", f"M{i}", dst=["L"], clr=True)
    # a two-term chain: tie + a multiple of 2**F, both signs
    asm.op("mac", "D0", "M0", clr=True).op("mac", f"D{n}", "ONE", dst=["R"])
    asm.op("mac", "D1", "M1", clr=True).op("mac", f"D{n + 1}", "ONE", dst=["R"])
    data = np.concatenate([a, [-7 * fmt.one, 5 * fmt.one]])
    res = PEModel(cfg, data, b).run(asm.instrs)
    want = [ref_round(fmt, p) for p in prods]
    assert [v for _, v in res.outputs["bus"]] == want
    assert [v for _, v in res.outputs["left"]] == want
    chain = [prods[0] - 7 * fmt.one * fmt.one, prods[1] + 5 * fmt.one * fmt.one]
    assert [v for _, v in res.outputs["right"]] == [ref_round(fmt, v) for v in chain]
    assert want[-2] == fmt.max_int and want[-1] == fmt.min_int


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_conv_ties(fmt):
    rng = np.random.default_rng(3)
    F, K, C, O = fmt.F, 3, 2, 2
    j = 2
    # forward / fp_node / engine / tile: activations tie words, filters integer words but
    # one tie tap per output channel -> every exact output sum is a tie
    x = tie_words(fmt, rng, j, (C, 4, 5))
    w = rng.integers(-1, 2, (O, C, K, K)) * fmt.one
    for o in range(O):
        w[o, o % C, 1, 2] = int(rng.choice([-1, 1])) * ((2 * int(rng.integers(0, 4)) + 1) << j)
    b = rng.integers(-fmt.one, fmt.one, O)
    exact = conv.fp_node(x, w, None, False, fmt=fmt) + (b[:, None, None].astype(object) << F)
    ties_both_signs(fmt, exact)
    ref = np.vectorize(lambda v: ref_round(fmt, v), otypes=[np.int64])(exact)
    assert np.array_equal(conv.forward(x, w, b, fmt=fmt), ref)
    assert np.array_equal(conv.fp_node(x, w, None, True, b, False, fmt=fmt), ref)
    wins = np.stack([conv.sliding_windows(x[c], K) for c in range(C)], axis=2)      # (ho, wo, C, K, K)
    assert np.array_equal(np.moveaxis(conv.engine_beat(wins, w, fmt, b), -1, 0), ref)
    tile = conv.window_dot(wins[:, :, 0], w[0, 0], fmt)
    tile_exact = conv.window_dot(wins[:, :, 0], w[0, 0], fmt, exact=True)
    assert tile.tolist() == [[ref_round(fmt, v) for v in r] for r in tile_exact]
    # psum_in chosen so the last node's exact value is a tie at the edges and both signs
    ts = np.array([fmt.max_int, fmt.min_int - 1, -1, 0, 7, -8] * 4)[:O * 2 * 3].reshape(O, 2, 3)
    pe = conv.fp_node(x, w, None, False, fmt=fmt) + (b[:, None, None].astype(object) << F)
    ps = np.vectorize(lambda t: tie_value(fmt, t), otypes=[object])(ts) - pe
    got = conv.fp_node(x, w, ps, True, b, False, fmt=fmt)
    assert np.array_equal(got, np.vectorize(lambda t: ref_round(fmt, tie_value(fmt, t)), otypes=[np.int64])(ts))
    assert got.max() == fmt.max_int and got.min() == fmt.min_int
    # eb_node: errors tie words, filters integer words but one tie tap per input channel
    e = tie_words(fmt, rng, j, (O, 3, 3))
    we = rng.integers(-1, 2, (O, C, K, K)) * fmt.one
    for c in range(C):
        we[c % O, c, 0, 1] = int(rng.choice([-1, 1])) * ((2 * int(rng.integers(0, 4)) + 1) << j)
    ex = conv.eb_node(e, we, None, False, K - 1, fmt)
    ties_both_signs(fmt, ex)
    want = np.vectorize(lambda v: ref_round(fmt, v), otypes=[np.int64])(ex)
    assert np.array_equal(conv.eb_node(e, we, None, True, K - 1, fmt), want)
    assert np.array_equal(conv.backprop_error(e, we, K - 1, fmt), want)


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_param_gradient_and_update_ties(fmt):
    rng = np.random.default_rng(4)
    F, K, C, O = fmt.F, 3, 1, 2
    j = 1
    x = tie_words(fmt, rng, j, (C, 5, 5))
    e = rng.integers(-1, 2, (O, 3, 3)) * fmt.one
    for o in range(O):
        e[o, o, 2 - o] = int(rng.choice([-1, 1])) * ((2 * int(rng.integers(0, 4)) + 1) << j)
    acc, _ = conv.pg_sample_exact(x, e, K, 0, fmt)
    ties_both_signs(fmt, acc)
    gw, _ = conv.param_gradient(x, e, K, 0, fmt)
    assert gw.ravel().tolist() == [ref_round(fmt, v) for v in acc.ravel()]
    # update: lr_q = 2**(F-1) (0.5): lr_q * gsum is a tie for every odd gsum
    w = rng.integers(-fmt.one, fmt.one, (O, C, K, K))
    g = np.stack([gw, rng.integers(-fmt.one, fmt.one, gw.shape)])
    lr_q = 1 << (F - 1)
    gsum = g.astype(object).sum(axis=0)
    prods = gsum * lr_q
    ties_both_signs(fmt, prods)
    step = np.vectorize(lambda v: ref_round(fmt, v), otypes=[np.int64])(prods)
    want = np.clip(w - step, fmt.min_int, fmt.max_int)
    assert np.array_equal(conv.update(w, g, lr_q * 2 / fmt.one, fmt), want)


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_maple_chain_ties(fmt):
    cp = mm.ChainParams(W=fmt.W, F=fmt.F)
    rng = np.random.default_rng(5)
    n, d, m = 4, cp.LSD + 3, 2                                  # split mode: S partial sums
    A = rng.integers(-fmt.one, fmt.one, (n, d))
    A[:, 0] = tie_words(fmt, rng, 2, (n,))
    B = rng.integers(-2, 3, (d, m)) * fmt.one
    B[0] = [int(rng.choice([-1, 1])) * ((2 * int(rng.integers(0, 8)) + 1) << 2) for _ in range(m)]
    exact = A.astype(object) @ B.astype(object)
    ties_both_signs(fmt, exact)
    plan = mm.plan_matmul(n, d, m, "rmw", cp=cp)
    assert plan.S > 1
    model = mm.ChainModel(cp)
    for prog in plan.programs(A, B):
        model.run(prog)
    got = sorted(model.elements)
    assert [v for _, v in got] == [ref_round(fmt, v) for v in exact.ravel()]
