"""Golden collaborative filtering (matrix factorisation) trained by SGD.

Ratings ``r`` of user ``u`` for item ``v`` are modelled as ``<U[u], V[v]>`` with user
factors ``U`` (nu, k) and item factors ``V`` (ni, k).  Per-sample objective::

    J = 0.5 * (<U[u], V[v]> - r)**2 + lam/2 * (|U[u]|^2 + |V[v]|^2)

One SGD step on sample ``(u, v, r)`` (both rows updated from the OLD values)::

    e    = <U[u], V[v]> - r
    U[u] = U[u] - alpha * (e * V[v] + lam * U[u])
    V[v] = V[v] - alpha * (e * U[u] + lam * V[v])

Bit-true path (``fmt`` a QFormat; ``alpha_q = to_fixed(alpha)``, ``lam_q = to_fixed(lam)``)
and its rounding points::

    e = sub(dot(U[u], V[v]), r)                      one rounding (exact dot)
    lam_q == 0:  s = mul(alpha_q, e)                 one rounding, once per sample
                 U[u][f] = sub(U[u][f], mul(s, V[v][f]))   one rounding per element
    lam_q != 0:  U[u][f] = sub(U[u][f], mul(alpha_q, add(mul(e, V[v][f]), mul(lam_q, U[u][f]))))
                 (three roundings per element), V likewise with U and V exchanged.

``loss[e]`` is the float64 data term ``0.5 * mean((<U[u],V[v]> - r)**2)`` over all samples
after epoch ``e`` (the regulariser is not included).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _validate as V
from .fixedpoint import QFormat


@dataclass
class CFResult:
    U: np.ndarray
    V: np.ndarray
    loss: list = field(default_factory=list)
    fmt: QFormat | None = None

    def factors_float(self):
        if self.fmt is None:
            return self.U, self.V
        return self.fmt.to_float(self.U), self.fmt.to_float(self.V)


def cf_loss(users, items, r, U, V) -> float:
    """Float64 ``0.5 * mean((<U[u], V[v]> - r)**2)``."""
    pred = np.sum(np.asarray(U)[users] * np.asarray(V)[items], axis=1)
    return float(0.5 * np.mean((pred - r) ** 2))


def _check(users, items, r, U0, V0, alpha, lam, epochs, order, fmt):
    r = V.finite_array(r, "r", 1)
    m = r.shape[0]
    U0 = V.finite_array(U0, "U0", 2)
    V0 = V.finite_array(V0, "V0", 2)
    if U0.shape[1] != V0.shape[1]:
        raise ValueError(f"U0 has {U0.shape[1]} factors but V0 has {V0.shape[1]}")
    users = V.int_array(users, "users", (m,))
    items = V.int_array(items, "items", (m,))
    if users.min() < 0 or users.max() >= U0.shape[0]:
        raise ValueError(f"users must index the {U0.shape[0]} rows of U0, got range "
                         f"[{users.min()}, {users.max()}]")
    if items.min() < 0 or items.max() >= V0.shape[0]:
        raise ValueError(f"items must index the {V0.shape[0]} rows of V0, got range "
                         f"[{items.min()}, {items.max()}]")
    alpha = V.real(alpha, "alpha", positive=True)
    lam = V.real(lam, "lam", nonneg=True)
    epochs = V.pos_int(epochs, "epochs")
    order = V.permutations(order, "order", (epochs, m))
    if fmt is not None and not isinstance(fmt, QFormat):
        raise ValueError(f"fmt must be a QFormat or None, got {type(fmt).__name__}")
    return users, items, r, U0, V0, alpha, lam, epochs, order


def cf_sgd(users, items, r, U0, V0, *, alpha: float, lam: float = 0.0, epochs: int, order,
           fmt: QFormat | None = None) -> CFResult:
    """SGD epochs over the ratings (module docstring).  ``users``/``items`` int (m,),
    ``r`` (m,), ``order`` int (epochs, m) of permutations.  ``fmt=None``: float64;
    a QFormat: bit-true, returning int64 words."""
    users, items, r, U0, V0, alpha, lam, epochs, order = _check(
        users, items, r, U0, V0, alpha, lam, epochs, order, fmt)
    losses = []
    if fmt is None:
        U, Vm = U0.copy(), V0.copy()
        for e in range(epochs):
            for s in order[e]:
                u, v = users[s], items[s]
                pu, qv = U[u].copy(), Vm[v].copy()
                err = pu @ qv - r[s]
                U[u] = pu - alpha * (err * qv + lam * pu)
                Vm[v] = qv - alpha * (err * pu + lam * qv)
            losses.append(cf_loss(users, items, r, U, Vm))
        return CFResult(U, Vm, losses, None)
    U = fmt.to_fixed(U0, "U0")
    Vm = fmt.to_fixed(V0, "V0")
    rq = fmt.to_fixed(r, "r")
    aq = V.nonzero_word(fmt.to_fixed(alpha, "alpha"), "alpha", fmt, alpha)
    lq = V.nonzero_word(fmt.to_fixed(lam, "lam"), "lam", fmt, lam)   # lam = 0.0: no regularisation
    for e in range(epochs):
        for s in order[e]:
            u, v = users[s], items[s]
            pu, qv = U[u].copy(), Vm[v].copy()
            err = fmt.sub(fmt.dot(pu, qv), rq[s])
            if lq == 0:
                st = fmt.mul(aq, err)
                U[u] = fmt.sub(pu, fmt.mul(st, qv))
                Vm[v] = fmt.sub(qv, fmt.mul(st, pu))
            else:
                U[u] = fmt.sub(pu, fmt.mul(aq, fmt.add(fmt.mul(err, qv), fmt.mul(lq, pu))))
                Vm[v] = fmt.sub(qv, fmt.mul(aq, fmt.add(fmt.mul(err, pu), fmt.mul(lq, qv))))
        losses.append(cf_loss(users, items, r, fmt.to_float(U), fmt.to_float(Vm)))
    return CFResult(U, Vm, losses, fmt)
