"""golden.mlp: closed-form gradient vs finite differences, training, bit-true tracking."""
import numpy as np
import pytest

from golden.fixedpoint import QFormat, pwl_error_bound, sigmoid_pwl
from golden.mlp import mlp_forward, mlp_grad, mlp_loss, mlp_sgd

FMT = QFormat(32, 16)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    ni, nh, no = 5, 4, 2
    x, y = rng.normal(size=ni), np.array([1.0, 0.0])
    W1, W2 = rng.normal(size=(nh, ni)), rng.normal(size=(no, nh))
    g1, g2 = mlp_grad(x, y, W1, W2)
    h = 1e-6
    for W, g, which in ((W1, g1, 0), (W2, g2, 1)):
        num = np.zeros_like(W)
        for idx in np.ndindex(*W.shape):
            Wp, Wm = W.copy(), W.copy()
            Wp[idx] += h
            Wm[idx] -= h
            args_p = (Wp, W2) if which == 0 else (W1, Wp)
            args_m = (Wm, W2) if which == 0 else (W1, Wm)
            num[idx] = (mlp_loss(x[None], y[None], *args_p) - mlp_loss(x[None], y[None], *args_m)) / (2 * h)
        np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


@pytest.fixture(scope="module")
def teacher():
    rng = np.random.default_rng(5)
    m, ni, nh = 120, 4, 6
    X = np.concatenate([rng.normal(size=(m, ni - 1)), np.ones((m, 1))], axis=1)
    T1, T2 = 2 * rng.normal(size=(nh, ni)), 2 * rng.normal(size=(1, nh))
    S = T2 @ (1 / (1 + np.exp(-X @ T1.T))).T
    Y = (S.T > np.median(S)).astype(float)
    W1, W2 = 0.5 * rng.normal(size=(nh, ni)), 0.5 * rng.normal(size=(1, nh))
    order = np.array([rng.permutation(m) for _ in range(60)])
    return X, Y, W1, W2, order


def test_training_lowers_the_loss_and_classifies(teacher):
    X, Y, W1, W2, order = teacher
    r = mlp_sgd(X, Y, W1, W2, alpha=0.5, epochs=60, order=order)
    assert r.loss[-1] < 0.5 * mlp_loss(X, Y, W1, W2)
    _, P = mlp_forward(X, r.W1, r.W2)
    assert np.mean((P > 0.5) == (Y > 0.5)) > 0.9


def test_bit_true_tracks_float(teacher):
    X, Y, W1, W2, order = teacher
    f = mlp_sgd(X, Y, W1, W2, alpha=0.5, epochs=10, order=order[:10])
    q = mlp_sgd(X, Y, W1, W2, alpha=0.5, epochs=10, order=order[:10], fmt=FMT)
    assert q.W1.dtype == np.int64
    Q1, Q2 = q.weights_float()
    # the PWL sigmoid error (documented bound) dominates the per-step difference
    eps = pwl_error_bound(sigmoid_pwl(FMT))
    assert eps < 1e-3
    assert np.max(np.abs(Q1 - f.W1)) < 0.05 and np.max(np.abs(Q2 - f.W2)) < 0.05
    assert abs(q.loss[-1] - f.loss[-1]) < 0.01


def test_one_bit_true_step_by_hand():
    # W = 0: a = sig(0) = 1/2, p = 1/2, d2 = p - y; b = 0 so W1 does not move
    q = mlp_sgd([[1.0, 2.0]], [[1.0]], np.zeros((3, 2)), np.zeros((1, 3)), alpha=0.5, epochs=1,
                order=[[0]], fmt=FMT)
    np.testing.assert_array_equal(q.W1, 0)
    np.testing.assert_array_equal(FMT.to_float(q.W2), np.full((1, 3), -0.5 * (0.5 - 1.0) * 0.5))


@pytest.mark.parametrize("kw,msg", [
    (dict(Y=[[2.0]]), "0 or 1"),
    (dict(W1_0=np.ones((3, 5))), "columns but X"),
    (dict(W2_0=np.ones((1, 4))), "hidden units"),
    (dict(alpha=-1.0), "alpha"),
    (dict(epochs=0), "epochs"),
    (dict(X=[[np.inf, 1.0]]), "non-finite"),
    (dict(fmt="q16"), "fmt"),
])
def test_validation(kw, msg):
    args = dict(X=[[1.0, 2.0]], Y=[[1.0]], W1_0=np.ones((3, 2)), W2_0=np.ones((1, 3)),
                alpha=0.1, epochs=1, order=[[0]])
    args.update(kw)
    with pytest.raises(ValueError, match=msg):
        mlp_sgd(**args)
