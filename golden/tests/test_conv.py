"""golden.conv against SciPy (forward, back-propagation), finite differences (gradient),
ICP partial sums, and the bit-true tracking bound."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import signal

from golden import conv
from golden.fixedpoint import QFormat

FMT = QFormat(32, 16)
SEED = 20261122


def rng(k=0):
    return np.random.default_rng(SEED + k)


def ref_forward(x, w, b, pad, stride=1):
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    out = []
    for o in range(w.shape[0]):
        acc = sum(signal.correlate(xp[c], w[o, c], mode="valid") for c in range(x.shape[0]))
        out.append(acc[::stride, ::stride] + (0.0 if b is None else b[o]))
    return np.array(out)


@pytest.mark.parametrize("K,pad,stride", [(3, 0, 1), (3, 1, 1), (5, 2, 1), (5, 0, 2), (1, 0, 1), (3, 2, 2)])
def test_forward_matches_scipy(K, pad, stride):
    r = rng(K * 10 + pad + stride)
    x = r.normal(size=(3, 9, 8))
    w = r.normal(size=(4, 3, K, K))
    b = r.normal(size=4)
    np.testing.assert_allclose(conv.forward(x, w, b, stride, pad), ref_forward(x, w, b, pad, stride), atol=1e-12)


@pytest.mark.parametrize("K,pad", [(3, 0), (3, 1), (5, 2), (5, 4), (2, 1)])
def test_backprop_matches_scipy_full_convolution(K, pad):
    r = rng(100 + K + pad)
    x = r.normal(size=(3, 8, 7))
    w = r.normal(size=(2, 3, K, K))
    e = r.normal(size=conv.forward(x, w, pad=pad).shape)
    got = conv.backprop_error(e, w, pad)
    assert got.shape == x.shape
    # Eq. 2 with scipy: full convolution (kernel flipped by convolve), cropped by pad
    ref = np.zeros(x.shape)
    for c in range(3):
        full = sum(signal.convolve(e[o], w[o, c], mode="full") for o in range(2))
        ref[c] = full[pad:pad + x.shape[1], pad:pad + x.shape[2]]
    np.testing.assert_allclose(got, ref, atol=1e-12)
    # and it is the adjoint of forward: <forward(x), e> == <x, backprop(e)>
    assert np.isclose(np.sum(conv.forward(x, w, pad=pad) * e), np.sum(x * got))


def test_fpdeep_padding_example():
    """FPDeep 4.3: a 3x3 error map of a K=3, pad=0 layer is padded to 7x7 and gives 5x5."""
    e = rng(7).normal(size=(1, 3, 3))
    w = rng(8).normal(size=(1, 1, 3, 3))
    assert conv.pad_map(e, 3 - 1 - 0).shape == (1, 7, 7)
    assert conv.backprop_error(e, w, 0).shape == (1, 5, 5)


@pytest.mark.parametrize("K,pad", [(3, 0), (3, 1), (5, 2)])
def test_param_gradient_finite_differences(K, pad):
    r = rng(200 + K + pad)
    x = r.normal(size=(2, 7, 6))
    w = r.normal(size=(3, 2, K, K))
    b = r.normal(size=3)
    t = r.normal(size=conv.forward(x, w, b, 1, pad).shape)

    def loss(w_, b_):
        return 0.5 * np.sum((conv.forward(x, w_, b_, 1, pad) - t) ** 2)

    e = conv.forward(x, w, b, 1, pad) - t          # dL/dy
    dw, db = conv.param_gradient(x, e, K, pad)
    eps = 1e-6
    num = np.zeros_like(w)
    for idx in np.ndindex(w.shape):
        wp, wm = w.copy(), w.copy()
        wp[idx] += eps
        wm[idx] -= eps
        num[idx] = (loss(wp, b) - loss(wm, b)) / (2 * eps)
    np.testing.assert_allclose(dw, num, rtol=1e-6, atol=1e-6)
    numb = np.array([(loss(w, b + eps * np.eye(3)[o]) - loss(w, b - eps * np.eye(3)[o])) / (2 * eps)
                     for o in range(3)])
    np.testing.assert_allclose(db, numb, rtol=1e-6, atol=1e-6)
    # the error w.r.t. the input is the back-propagated error
    dx = conv.backprop_error(e, w, pad)
    idx = (1, 3, 2)
    xp, xm = x.copy(), x.copy()
    xp[idx] += eps
    xm[idx] -= eps
    lp = 0.5 * np.sum((conv.forward(xp, w, b, 1, pad) - t) ** 2)
    lm = 0.5 * np.sum((conv.forward(xm, w, b, 1, pad) - t) ** 2)
    assert np.isclose(dx[idx], (lp - lm) / (2 * eps), rtol=1e-5, atol=1e-6)


def test_update_mini_batch_average():
    r = rng(300)
    w = r.normal(size=(2, 3, 3, 3))
    g = r.normal(size=(4, 2, 3, 3, 3))
    np.testing.assert_allclose(conv.update(w, g, 0.1), w - 0.1 * g.mean(axis=0))
    wq = FMT.to_fixed(w)
    gq = FMT.to_fixed(g)
    got = FMT.to_float(conv.update(wq, gq, 0.1, FMT))
    ref = FMT.to_float(wq) - 0.1 * FMT.to_float(gq).mean(axis=0)
    # lr/batch quantised (<= LSB/2 relative to sum|g|) + one rounding + the subtraction (exact)
    bound = FMT.lsb / 2 * (1 + np.abs(FMT.to_float(gq)).sum(axis=0))
    assert np.all(np.abs(got - ref) <= bound)


@pytest.mark.parametrize("fmt", [None, FMT, QFormat(16, 8)])
@pytest.mark.parametrize("parts", [1, 2, 3, 5])
def test_icp_partials_sum_to_full(fmt, parts):
    r = rng(400 + parts)
    x = r.normal(size=(5, 6, 6))
    w = r.normal(size=(3, 5, 3, 3)) * 0.5
    b = r.normal(size=3)
    if fmt is not None:
        x, w, b = fmt.to_fixed(x), fmt.to_fixed(w), fmt.to_fixed(b)
    y, partials = conv.icp_forward(x, w, parts, b, 1, 1, fmt)
    assert len(partials) == parts
    full = conv.forward(x, w, b, 1, 1, fmt)
    if fmt is None:
        np.testing.assert_allclose(y, full, atol=1e-12)
        np.testing.assert_allclose(sum(partials) + b[:, None, None], full, atol=1e-12)
    else:
        assert np.array_equal(y, full)
        assert all(p.dtype == object for p in partials)  # exact wide integers, no rounding


def test_bit_true_on_grid_is_float_rounded_once():
    fmt = QFormat(16, 8)
    r = rng(500)
    xq = r.integers(-600, 600, size=(3, 7, 7))
    wq = r.integers(-300, 300, size=(2, 3, 3, 3))
    y = conv.forward(xq, wq, None, 1, 1, fmt)
    yf = conv.forward(fmt.to_float(xq), fmt.to_float(wq), None, 1, 1)
    sat = (y == fmt.max_int) | (y == fmt.min_int)
    d = np.abs(fmt.to_float(y) - yf)
    assert np.all(d[~sat] <= fmt.lsb / 2)
    assert np.all(np.abs(yf[sat]) >= fmt.max_real)


@pytest.mark.parametrize("fmt", [FMT, QFormat(16, 8)])
def test_bit_true_tracks_float_within_bound(fmt):
    r = rng(600 + fmt.W)
    x = r.uniform(-2, 2, size=(4, 8, 8))
    w = r.uniform(-0.5, 0.5, size=(3, 4, 3, 3))
    b = r.uniform(-1, 1, size=3)
    y = fmt.to_float(conv.forward(x, w, b, 1, 1, fmt))
    yf = conv.forward(x, w, b, 1, 1)
    assert np.all(np.abs(y - yf) <= conv.tracking_bound(x, w, b, 1, 1, fmt))
    e = r.uniform(-1, 1, size=yf.shape)
    eb = fmt.to_float(conv.backprop_error(e, w, 1, fmt))
    assert np.max(np.abs(eb - conv.backprop_error(e, w, 1))) < 40 * fmt.lsb
    dw, db = conv.param_gradient(x, e, 3, 1, fmt)
    dwf, dbf = conv.param_gradient(x, e, 3, 1)
    assert np.max(np.abs(fmt.to_float(dw) - dwf)) < 300 * fmt.lsb
    assert np.max(np.abs(fmt.to_float(db) - dbf)) < 100 * fmt.lsb


def test_bit_true_saturates():
    fmt = QFormat(16, 8)
    x = np.full((2, 3, 3), fmt.max_int)
    w = np.full((1, 2, 3, 3), fmt.max_int)
    assert np.all(conv.forward(x, w, fmt=fmt) == fmt.max_int)
    assert np.all(conv.forward(x, -w, fmt=fmt) == fmt.min_int)
    assert np.all(conv.relu(conv.forward(x, -w, fmt=fmt), fmt) == 0)


def test_window_dot_and_sliding_windows():
    fmt = QFormat(16, 8)
    r = rng(700)
    m = r.integers(-1000, 1000, size=(5, 6))
    wk = r.integers(-1000, 1000, size=(3, 3))
    win = conv.sliding_windows(m, 3, 1)
    assert win.shape == (5, 6, 3, 3)
    assert np.array_equal(win[0, 0], np.pad(m, 1)[:3, :3])
    y = conv.forward(m[None], wk[None, None], None, 1, 1, fmt)[0]
    assert np.array_equal(conv.window_dot(win, wk, fmt), y)
    ex = conv.window_dot(win, wk, fmt, exact=True)
    assert np.array_equal(fmt.sat((ex.astype(object) + 128) >> 8), y)
    one = conv.sliding_windows(np.array([[7]]), 3, 1)
    assert one.shape == (1, 1, 3, 3) and one[0, 0, 1, 1] == 7 and one.sum() == 7


@pytest.mark.parametrize("call,match", [
    (lambda: conv.forward(np.zeros((2, 4, 4)), np.zeros((1, 3, 3, 3))), "axis 1 must be 2"),
    (lambda: conv.forward(np.zeros((2, 4, 4)), np.zeros((1, 2, 3, 2))), "square"),
    (lambda: conv.forward(np.zeros((2, 4, 4)), np.zeros((1, 2, 3, 3)), pad=3), "pad"),
    (lambda: conv.forward(np.zeros((2, 2, 2)), np.zeros((1, 2, 5, 5)), pad=1), "smaller than the kernel"),
    (lambda: conv.forward(np.full((1, 3, 3), np.nan), np.zeros((1, 1, 3, 3))), "non-finite"),
    (lambda: conv.forward(np.zeros((1, 3, 3)), np.zeros((1, 1, 3, 3)), stride=0), "stride"),
    (lambda: conv.forward(np.zeros((3, 3)), np.zeros((1, 1, 3, 3))), "x must be 3-D"),
    (lambda: conv.forward(np.full((1, 3, 3), 1e6), np.zeros((1, 1, 3, 3)), fmt=QFormat(16, 8)), "does not fit"),
    (lambda: conv.forward(np.full((1, 3, 3), 1 << 20), np.zeros((1, 1, 3, 3), int), fmt=QFormat(16, 8)), "outside"),
    (lambda: conv.forward(np.zeros((1, 3, 3)), np.zeros((1, 1, 3, 3)), fmt="q"), "fmt"),
    (lambda: conv.backprop_error(np.zeros((2, 3, 3)), np.zeros((1, 1, 3, 3))), "axis 0 must be 2"),
    (lambda: conv.param_gradient(np.zeros((1, 5, 5)), np.zeros((1, 4, 4)), 3), "axis 1 must be 3"),
    (lambda: conv.param_gradient(np.zeros((1, 5, 5)), np.zeros((1, 3, 3)), 0), "K"),
    (lambda: conv.update(np.zeros(3), np.zeros((2, 4)), 0.1), "axis 1 must be 3"),
    (lambda: conv.update(np.zeros(3), np.zeros((2, 3)), -1.0), "lr"),
    (lambda: conv.update(np.zeros(3, int), np.zeros((2, 3), int), 1e-9, QFormat(16, 8)), "quantises to 0"),
    (lambda: conv.icp_forward(np.zeros((2, 4, 4)), np.zeros((1, 2, 3, 3)), 3), "parts"),
])
def test_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------- engines and FP nodes
def test_engine_beat_matches_forward():
    from golden.conv import engine_beat, forward, sliding_windows
    fmt = QFormat(16, 8)
    rng = np.random.default_rng(7)
    x = rng.integers(-600, 600, (3, 5, 6))
    w = rng.integers(-300, 300, (2, 3, 3, 3))
    b = rng.integers(-2000, 2000, 2)
    wins = np.stack([sliding_windows(x[c], 3, 1) for c in range(3)], axis=2)   # (Ho, Wo, C, K, K)
    got = engine_beat(wins, w, fmt, bias=b)
    assert np.array_equal(np.moveaxis(got, -1, 0), forward(x, w, b, pad=1, fmt=fmt))
    ex = engine_beat(wins, w, fmt, exact=True)
    assert np.array_equal(fmt.sat(((ex + (1 << 7)) >> 8).astype(object)), np.moveaxis(forward(x, w, None, pad=1, fmt=fmt), 0, -1))


@pytest.mark.parametrize("parts", [1, 2, 3])
def test_fp_node_chain_equals_forward(parts):
    from golden.conv import forward, fp_node, icp_forward
    fmt = QFormat(16, 8)
    rng = np.random.default_rng(parts)
    x = rng.integers(-3000, 3000, (6, 7, 5))
    w = rng.integers(-1500, 1500, (3, 6, 3, 3))
    b = rng.integers(-8000, 8000, 3)
    groups = np.array_split(np.arange(6), parts)
    ps = None
    for k, g in enumerate(groups):
        last = k == parts - 1
        ps = fp_node(x[g], w[:, g], ps, last, b, True, 1, fmt, psum_bits=48)
    y = forward(x, w, b, pad=1, fmt=fmt)
    assert np.array_equal(ps, np.maximum(y, 0))
    ps_nr = None
    for k, g in enumerate(groups):
        ps_nr = fp_node(x[g], w[:, g], ps_nr, k == parts - 1, b, False, 1, fmt, psum_bits=48)
    assert np.array_equal(ps_nr, icp_forward(x, w, parts, b, pad=1, fmt=fmt)[0])
    # float reference: same chain in float64 tracks forward(None)
    xf, wf = x / 256.0, w / 256.0
    psf = None
    for k, g in enumerate(groups):
        psf = fp_node(xf[g], wf[:, g], psf, k == parts - 1, b / 256.0, True, 1, None)
    assert np.allclose(psf, np.maximum(forward(xf, wf, b / 256.0, pad=1), 0))


def test_fp_node_psum_saturates_and_validates():
    from golden.conv import fp_node
    fmt = QFormat(8, 4)
    x = np.full((1, 3, 3), 127)
    w = np.full((1, 1, 3, 3), 127)
    ps = fp_node(x, w, None, False, fmt=fmt, psum_bits=16)
    assert int(ps[0, 0, 0]) == (1 << 15) - 1
    with pytest.raises(ValueError, match="psum_in"):
        fp_node(x, w, np.zeros((1, 2, 2)), True, fmt=fmt)


def test_eb_node_chain_equals_backprop_error():
    from golden.conv import backprop_error, eb_node
    rng = np.random.default_rng(11)
    fmt = QFormat(16, 8)
    for K, pad, parts in ((3, 0, 2), (3, 1, 3), (5, 2, 2), (2, 1, 1)):
        e = rng.integers(-3000, 3000, (6, 5, 4))
        w = rng.integers(-1500, 1500, (6, 3, K, K))
        ref = backprop_error(e, w, pad, fmt)
        ps = None
        groups = np.array_split(np.arange(6), parts)
        for k, g in enumerate(groups):
            ps = eb_node(e[g], w[g], ps, k == parts - 1, pad, fmt, psum_bits=48)
        assert np.array_equal(ps, ref)
        ef, wf = e / 256.0, w / 256.0
        psf = None
        for k, g in enumerate(groups):
            psf = eb_node(ef[g], wf[g], psf, k == parts - 1, pad)
        assert np.allclose(psf, backprop_error(ef, wf, pad))


def test_eb_node_validates_and_saturates():
    from golden.conv import eb_node
    fmt = QFormat(8, 4)
    e = np.full((1, 3, 3), 127)
    w = np.full((1, 1, 3, 3), 127)
    ps = eb_node(e, w, None, False, 0, fmt, psum_bits=16)
    assert int(ps.max()) == (1 << 15) - 1
    with pytest.raises(ValueError, match="pad"):
        eb_node(e, w, pad=3, fmt=fmt)
    with pytest.raises(ValueError, match="psum_in"):
        eb_node(e, w, np.zeros((1, 2, 2)), True, fmt=fmt)


def test_pg_hardware_order_equals_param_gradient_and_update():
    from golden.conv import param_gradient, pg_minibatch, pg_sample_exact, update
    from golden.fixedpoint import rshift_round
    rng = np.random.default_rng(5)
    fmt = QFormat(16, 8)
    for K, pad, B in ((3, 0, 2), (3, 1, 3), (5, 2, 1), (2, 0, 2)):
        xs = [rng.integers(-2000, 2000, (2, 6, 5)) for _ in range(B)]
        es = [rng.integers(-2000, 2000, (3, 6 + 2 * pad - K + 1, 5 + 2 * pad - K + 1)) for _ in range(B)]
        w = rng.integers(-3000, 3000, (3, 2, K, K))
        b = rng.integers(-3000, 3000, 3)
        acc, esum = pg_sample_exact(xs[0], es[0], K, pad, fmt)
        dw, db = param_gradient(xs[0], es[0], K, pad, fmt)
        assert np.array_equal(fmt.sat(rshift_round(acc, fmt.F)), dw)
        assert np.array_equal(fmt.sat(esum), db)
        grads = [param_gradient(x, e, K, pad, fmt) for x, e in zip(xs, es)]
        w2, b2, gsw, gsb = pg_minibatch(xs, es, w, b, 0.05, K, pad, fmt)
        assert np.array_equal(w2, update(w, np.stack([g[0] for g in grads]), 0.05, fmt))
        assert np.array_equal(b2, update(b, np.stack([g[1] for g in grads]), 0.05, fmt))
        assert np.array_equal(gsw, sum(g[0].astype(object) for g in grads))
        # float64 path tracks the float reference
        xf = [x / 256.0 for x in xs]
        ef = [e / 256.0 for e in es]
        wf2, _, _, _ = pg_minibatch(xf, ef, w / 256.0, b / 256.0, 0.05, K, pad)
        ref = update(w / 256.0, np.stack([param_gradient(x, e, K, pad)[0] for x, e in zip(xf, ef)]), 0.05)
        assert np.allclose(wf2, ref)
    with pytest.raises(ValueError, match="samples"):
        pg_minibatch([], [], w, b, 0.1, 3, 0, fmt)


@pytest.mark.parametrize("parts", [1, 2, 3, 4])
@pytest.mark.parametrize("fmt", [None, QFormat(16, 8)])
def test_icp_chain_minibatch_equals_full_layer_training(parts, fmt):
    """A chain of training nodes over a mini-batch = full-layer forward (+ReLU),
    backprop_error, and one SGD step with the averaged param_gradient."""
    rng = np.random.default_rng(parts)
    B, C, O, K, H, Wd, pad, lr = 3, 4, 2, 3, 5, 4, 1, 0.125
    xs = [rng.uniform(-2, 2, size=(C, H, Wd)) for _ in range(B)]
    es = [rng.uniform(-1, 1, size=(O, H, Wd)) for _ in range(B)]
    w = rng.uniform(-1, 1, size=(O, C, K, K))
    b = rng.uniform(-1, 1, size=O)
    if fmt is not None:
        xs, es = [fmt.to_fixed(x) for x in xs], [fmt.to_fixed(e) for e in es]
        w, b = fmt.to_fixed(w), fmt.to_fixed(b)
    r = conv.icp_chain_minibatch(xs, es, w, b, lr, parts, pad, True, fmt)
    same = (np.testing.assert_array_equal if fmt is not None
            else lambda a, b_: np.testing.assert_allclose(a, b_, rtol=0, atol=1e-12))
    for x, e, y, ein in zip(xs, es, r["y"], r["e_in"]):
        same(y, conv.relu(conv.forward(x, w, b, pad=pad, fmt=fmt), fmt))
        same(ein, conv.backprop_error(e, w, pad, fmt))
    grads = [conv.param_gradient(x, e, K, pad, fmt) for x, e in zip(xs, es)]
    wn = conv.update(w, np.stack([g[0] for g in grads]), lr, fmt)
    bn = conv.update(b, np.stack([g[1] for g in grads]), lr, fmt)
    same(r["w_new"], wn)
    same(r["b_new"], bn)
    with pytest.raises(ValueError, match="parts"):
        conv.icp_chain_minibatch(xs, es, w, b, lr, C + 1, pad, True, fmt)


@pytest.mark.parametrize("node", ["fp", "eb"])
def test_node_psum_in_is_validated(node):
    """issue 11: psum_in used to be cast blindly (floats truncated or kept as float objects
    in the bit-true sum, NaN accepted on the float path, values beyond the psum link)."""
    from golden.conv import eb_node, fp_node
    fmt = QFormat(8, 4)
    a = np.full((1, 3, 3), 5)
    w = np.full((1, 1, 3, 3), 3)

    def call(ps, f=fmt, last=True, **kw):
        if node == "fp":
            return fp_node(a, w, ps, last, fmt=f, **kw)
        return eb_node(a, w, ps, last, 0, f, **kw)

    shape = call(None, last=False, psum_bits=16).shape
    ok = np.full(shape, 7, dtype=np.int64)
    ref = call(ok, last=False, psum_bits=16)
    assert np.array_equal(call(ok.astype(object), last=False, psum_bits=16), ref)
    with pytest.raises(ValueError, match="psum_in must hold exact integers.*float64"):
        call(np.full(shape, 7.5))
    with pytest.raises(ValueError, match=r"psum_in must hold exact integers.*7\.5"):
        call(np.full(shape, 7.5, dtype=object))
    with pytest.raises(ValueError, match="psum_in must hold exact integers.*True"):
        call(np.full(shape, True, dtype=object))
    with pytest.raises(ValueError, match="psum_in = 32768 does not fit the 16-bit psum link"):
        call(np.full(shape, 1 << 15, dtype=np.int64), last=False, psum_bits=16)
    with pytest.raises(ValueError, match="psum_in contains a non-finite"):
        call(np.full(shape, np.nan), f=None)
    with pytest.raises(ValueError, match="psum_in must be a numeric array"):
        call(np.full(shape, "1"), f=None)
    with pytest.raises(ValueError, match=r"psum_in has shape"):
        call(np.zeros((1, 2, 2), dtype=np.int64))
