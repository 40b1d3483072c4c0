"""Each PipeArch op against an independent pure-Python-int reference."""
import numpy as np
import pytest

from golden import pipearch_ops as ops
from golden.fixedpoint import DEFAULT, QFormat, sigmoid_fx, sigmoid_table

FMTS = [DEFAULT, QFormat(16, 8)]


def rnd(v, s):
    return (v + (1 << (s - 1))) >> s if s else v


def sat(fmt, v):
    return max(fmt.min_int, min(fmt.max_int, v))


def mul(fmt, a, b):
    return sat(fmt, rnd(int(a) * int(b), fmt.F))


def words(rng, fmt, shape, corners=True):
    w = rng.integers(fmt.min_int, fmt.max_int, size=shape, endpoint=True)
    if corners:
        flat = w.reshape(-1)
        flat[:3] = [fmt.min_int, fmt.max_int, 0]
    return w


def ref_sigmoid(tab, z):
    """Python-int evaluation of the PWL table, straight from the SigmoidTable docstring."""
    fmt = tab.fmt
    r = tab.x_range << fmt.F
    zc = max(-r, min(r - 1, int(z)))
    u = zc + r
    idx, off = u >> tab.shift, u & ((1 << tab.shift) - 1)
    y = tab.base[idx] + rnd(tab.slope[idx] * off, fmt.F)
    return max(0, min(fmt.one, y))


@pytest.mark.parametrize("fmt", FMTS, ids=str)
@pytest.mark.parametrize("lanes,dim", [(1, 7), (4, 3), (8, 1)])
def test_dot_sigmoid(fmt, lanes, dim):
    rng = np.random.default_rng(lanes * 10 + dim)
    it = 25
    a = words(rng, fmt, (it * dim, lanes))
    b = words(rng, fmt, (it * dim, lanes))
    a[-dim:] = fmt.min_int  # one iteration saturating at the top rail
    b[-dim:] = fmt.min_int
    tab = sigmoid_table(fmt, 32, 8)
    ref_dot = []
    for i in range(it):
        acc = sum(int(x) * int(y) for x, y in zip(a[i * dim:(i + 1) * dim].ravel(),
                                                   b[i * dim:(i + 1) * dim].ravel()))
        ref_dot.append(sat(fmt, rnd(acc, fmt.F)))
    got = ops.dot_sigmoid(fmt, a, b, dim, False)
    assert got.dtype == np.int64 and got.tolist() == ref_dot
    assert ref_dot[-1] == fmt.max_int
    got_s = ops.dot_sigmoid(fmt, a, b, dim, True, tab)
    assert got_s.tolist() == [ref_sigmoid(tab, v) for v in ref_dot]
    # default table is sigmoid_table(fmt)
    assert ops.dot_sigmoid(fmt, a, b, dim, True).tolist() == \
        [ref_sigmoid(sigmoid_table(fmt), v) for v in ref_dot]


def test_dot_sigmoid_rejects_bad_shapes():
    a = np.zeros((6, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="equal 2-D"):
        ops.dot_sigmoid(DEFAULT, a, a[:, :1], 3, False)
    with pytest.raises(ValueError, match="multiple of dimension"):
        ops.dot_sigmoid(DEFAULT, a, a, 4, False)
    with pytest.raises(ValueError, match="multiple of dimension"):
        ops.dot_sigmoid(DEFAULT, a, a, 0, False)


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_sigmoid_delta(fmt):
    rng = np.random.default_rng(5)
    z = words(rng, fmt, (200, 2))
    b = words(rng, fmt, (200, 2))
    b[0, 0] = fmt.max_int  # max - min saturates at the top rail, 0 - max at the bottom
    z[0, 0] = fmt.min_int
    tab = sigmoid_table(fmt)
    got = ops.sigmoid_delta(fmt, z, b, False)
    assert got.tolist() == [[sat(fmt, int(x) - int(y)) for x, y in zip(rz, rb)] for rz, rb in zip(z, b)]
    assert got[0, 0] == fmt.min_int
    got = ops.sigmoid_delta(fmt, z, b, True, tab)
    assert got.tolist() == [[sat(fmt, ref_sigmoid(tab, x) - int(y)) for x, y in zip(rz, rb)]
                            for rz, rb in zip(z, b)]
    assert np.array_equal(sigmoid_fx(z, tab), [[ref_sigmoid(tab, x) for x in r] for r in z])


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_scalar_sgd(fmt):
    rng = np.random.default_rng(6)
    d = words(rng, fmt, 300)
    b = words(rng, fmt, 300)[::-1].copy()
    for alpha in (fmt.one // 8, 3, fmt.max_int, fmt.min_int):
        got = ops.scalar_sgd(fmt, d, b, alpha)
        assert got.tolist() == [mul(fmt, alpha, sat(fmt, int(x) - int(y))) for x, y in zip(d, b)]


def ref_scalar_scd(fmt, g, x, alpha, al):
    ag = mul(fmt, alpha, g)
    d = sat(fmt, x - ag)
    if d > al:
        mu = sat(fmt, ag + al)
    elif d < -al:
        mu = sat(fmt, ag - al)
    else:
        mu = x
    return mu, sat(fmt, x - mu)


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_scalar_scd_branches(fmt):
    one = fmt.one
    alpha, al = one // 2, one // 4  # alpha = 0.5, alpha*lambda = 0.25
    # branch 1: x - ag > al  -> x_new = x - ag - al
    mu, x = ops.scalar_scd(fmt, np.array([one]), np.array([2 * one]), alpha, al)
    assert (int(mu[0]), int(x[0])) == (one // 2 + one // 4, 2 * one - one // 2 - one // 4)
    # branch 2: x - ag < -al -> x_new = x - ag + al
    mu, x = ops.scalar_scd(fmt, np.array([4 * one]), np.array([0]), alpha, al)
    assert (int(mu[0]), int(x[0])) == (2 * one - one // 4, -2 * one + one // 4)
    # branch 3: |x - ag| <= al -> mu = x, x_new = 0 (boundaries included)
    for g, xv in [(0, one // 8), (one, one // 2 + one // 4), (one, one // 4)]:
        mu, x = ops.scalar_scd(fmt, np.array([g]), np.array([xv]), alpha, al)
        assert (int(mu[0]), int(x[0])) == (xv, 0)
    # random + saturation corners against the reference
    rng = np.random.default_rng(7)
    g = words(rng, fmt, 500)
    xs = words(rng, fmt, 500)[::-1].copy()
    for a_, l_ in [(alpha, al), (fmt.max_int, fmt.max_int), (3, 0), (fmt.one, fmt.one * 2)]:
        mu, xn = ops.scalar_scd(fmt, g, xs, a_, l_)
        ref = [ref_scalar_scd(fmt, int(gg), int(xx), a_, l_) for gg, xx in zip(g, xs)]
        assert mu.tolist() == [r[0] for r in ref] and xn.tolist() == [r[1] for r in ref]


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_multiply_subtract(fmt):
    rng = np.random.default_rng(8)
    x = words(rng, fmt, (40, 4))
    a = words(rng, fmt, (40, 4))[::-1].copy()
    for s in (fmt.one // 3, fmt.max_int, fmt.min_int, -7):
        got = ops.multiply_subtract(fmt, x, s, a)
        assert got.tolist() == [[sat(fmt, int(xx) - mul(fmt, s, aa)) for xx, aa in zip(rx, ra)]
                                for rx, ra in zip(x, a)]
    s = words(rng, fmt, 40)  # one scalar per line
    got = ops.multiply_subtract(fmt, x, s, a)
    assert got.tolist() == [[sat(fmt, int(xx) - mul(fmt, ss, aa)) for xx, aa in zip(rx, ra)]
                            for rx, ra, ss in zip(x, a, s)]


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_l2reg(fmt):
    rng = np.random.default_rng(9)
    x = words(rng, fmt, (50, 2))
    xo = words(rng, fmt, (50, 2))[::-1].copy()
    for c in (fmt.one // 100, 0, fmt.max_int, fmt.min_int):
        got = ops.l2reg(fmt, x, xo, c)
        assert got.tolist() == [[sat(fmt, int(p) - mul(fmt, c, q)) for p, q in zip(rx, ro)]
                                for rx, ro in zip(x, xo)]
