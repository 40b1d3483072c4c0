"""Golden one-hidden-layer perceptron trained by back-propagation SGD.

Network (no biases; append a constant-1 input feature for one): ``x`` (ni,) ->
``a = sigmoid(W1 x)`` (nh,) -> ``p = sigmoid(W2 a)`` (no,), targets ``y`` in {0, 1}
and the cross-entropy loss ``J = sum_o -y log p - (1-y) log(1-p)``.  Gradient
(closed form, :func:`mlp_grad`)::

    d2 = p - y                        dJ/d(W2 a)
    g2 = outer(d2, a)                 dJ/dW2
    d1 = (W2^T d2) * a * (1 - a)      dJ/d(W1 x)
    g1 = outer(d1, x)                 dJ/dW1

One SGD step: ``W2 -= alpha*g2``, ``W1 -= alpha*g1`` (both from the old weights).

Bit-true path (``fmt``; ``alpha_q = to_fixed(alpha)``; ``sig`` = ``pwl_fx`` with
``sigmoid_pwl(fmt)``, the CoSMIC PE's table) and its rounding points::

    z[h]  = dot(W1[h], x)             a[h] = sig(z[h])
    s[o]  = dot(W2[o], a)             p[o] = sig(s[o])
    d2[o] = sub(p[o], y[o])
    b[h]  = dot(d2, W2[:, h])         (one rounding for the sum over outputs)
    d1[h] = mul(b[h], mul(a[h], sub(one, a[h])))
    W2[o][h] = sub(W2[o][h], mul(mul(alpha_q, d2[o]), a[h]))
    W1[h][i] = sub(W1[h][i], mul(mul(alpha_q, d1[h]), x[i]))

``loss[e]`` is the float64 mean cross-entropy over the data after epoch ``e``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _validate as V
from .fixedpoint import QFormat, pwl_fx, sigmoid_pwl


def _sig(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


@dataclass
class MLPResult:
    W1: np.ndarray
    W2: np.ndarray
    loss: list = field(default_factory=list)
    fmt: QFormat | None = None

    def weights_float(self):
        if self.fmt is None:
            return self.W1, self.W2
        return self.fmt.to_float(self.W1), self.fmt.to_float(self.W2)


def mlp_forward(X, W1, W2):
    """Hidden activations (m, nh) and outputs (m, no), float64."""
    A = _sig(np.asarray(X) @ np.asarray(W1).T)
    return A, _sig(A @ np.asarray(W2).T)


def mlp_loss(X, Y, W1, W2) -> float:
    """Mean over samples of the summed output cross-entropy (overflow-free form)."""
    A = _sig(np.asarray(X) @ np.asarray(W1).T)
    S = A @ np.asarray(W2).T
    return float(np.mean(np.sum(np.logaddexp(0.0, S) - np.asarray(Y) * S, axis=1)))


def mlp_grad(x, y, W1, W2):
    """Closed-form gradient ``(g1, g2)`` of the loss of one sample (module docstring)."""
    x = np.asarray(x, dtype=np.float64)
    a = _sig(W1 @ x)
    p = _sig(W2 @ a)
    d2 = p - y
    d1 = (W2.T @ d2) * a * (1.0 - a)
    return np.outer(d1, x), np.outer(d2, a)


def _check(X, Y, W1_0, W2_0, alpha, epochs, order, fmt):
    X = V.finite_array(X, "X", 2)
    m, ni = X.shape
    W1_0 = V.finite_array(W1_0, "W1_0", 2)
    if W1_0.shape[1] != ni:
        raise ValueError(f"W1_0 has {W1_0.shape[1]} columns but X has {ni} features")
    nh = W1_0.shape[0]
    W2_0 = V.finite_array(W2_0, "W2_0", 2)
    if W2_0.shape[1] != nh:
        raise ValueError(f"W2_0 has {W2_0.shape[1]} columns but W1_0 has {nh} hidden units")
    Y = V.finite_array(Y, "Y", 2, (m, W2_0.shape[0]))
    if not np.all(np.isin(Y, (0.0, 1.0))):
        raise ValueError("Y (targets) must be 0 or 1")
    alpha = V.real(alpha, "alpha", positive=True)
    epochs = V.pos_int(epochs, "epochs")
    order = V.permutations(order, "order", (epochs, m))
    if fmt is not None and not isinstance(fmt, QFormat):
        raise ValueError(f"fmt must be a QFormat or None, got {type(fmt).__name__}")
    return X, Y, W1_0, W2_0, alpha, epochs, order


def mlp_sgd(X, Y, W1_0, W2_0, *, alpha: float, epochs: int, order,
            fmt: QFormat | None = None) -> MLPResult:
    """Back-propagation SGD epochs (module docstring).  ``X`` (m, ni), ``Y`` (m, no) in
    {0, 1}, ``W1_0`` (nh, ni), ``W2_0`` (no, nh), ``order`` int (epochs, m)."""
    X, Y, W1, W2, alpha, epochs, order = _check(X, Y, W1_0, W2_0, alpha, epochs, order, fmt)
    losses = []
    if fmt is None:
        W1, W2 = W1.copy(), W2.copy()
        for e in range(epochs):
            for s in order[e]:
                g1, g2 = mlp_grad(X[s], Y[s], W1, W2)
                W1 = W1 - alpha * g1
                W2 = W2 - alpha * g2
            losses.append(mlp_loss(X, Y, W1, W2))
        return MLPResult(W1, W2, losses, None)
    Xq, Yq = fmt.to_fixed(X, "X"), fmt.to_fixed(Y, "Y")
    W1, W2 = fmt.to_fixed(W1, "W1_0"), fmt.to_fixed(W2, "W2_0")
    aq = V.nonzero_word(fmt.to_fixed(alpha, "alpha"), "alpha", fmt, alpha)
    tab = sigmoid_pwl(fmt)
    for e in range(epochs):
        for s in order[e]:
            x, y = Xq[s], Yq[s]
            a = pwl_fx(fmt.dot(W1, x[None, :]), tab)          # (nh,)
            p = pwl_fx(fmt.dot(W2, a[None, :]), tab)          # (no,)
            d2 = fmt.sub(p, y)
            b = fmt.dot(W2.T, d2[None, :])                     # (nh,) one rounding each
            d1 = fmt.mul(b, fmt.mul(a, fmt.sub(fmt.one, a)))
            s2 = fmt.mul(aq, d2)
            s1 = fmt.mul(aq, d1)
            W2 = fmt.sub(W2, fmt.mul(s2[:, None], a[None, :]))
            W1 = fmt.sub(W1, fmt.mul(s1[:, None], x[None, :]))
        losses.append(mlp_loss(X, Y, fmt.to_float(W1), fmt.to_float(W2)))
    return MLPResult(W1, W2, losses, fmt)
