"""Golden tiled alternating SGD for low-rank matrix factorisation (PipeArch Alg. 3).

Find ``M`` (m, d) and ``U`` (u, d) with ``M U^T ~ X`` on the observed entries
``X[rows[k], cols[k]] = vals[k]``.

Schedule.  Rows of ``M`` and rows of ``U`` are cut into tiles of ``T = tile`` rows
(the last tile of each may be partial).  Per epoch, for each row tile ``t_m`` (rows
``t_m*T ..``), for each column tile ``t_u`` (columns ``t_u*T ..``), the observed entries
falling inside that tile are processed in the order they appear in ``entry_order`` (a
permutation of ``range(nnz)``; default input order).  Per entry ``(r, c, v)``::

    e    = <M_r, U_c>
    e    = alpha * (e - v)
    M_r' = M_r - e*U_c - lam*M_r
    U_c' = U_c - e*M_r' - lam*U_c      (uses the *updated* M row, Alg. 3 line 15)

``lam`` is the per-update shrink factor of Alg. 3 (it is not multiplied by
``alpha``).  One update is an SGD step of size ``alpha`` on
``0.5*(<M_r,U_c> - v)^2 + lam/(2 alpha) * (||M_r||^2 + ||U_c||^2)``.

Reported loss (float64 on the dequantised factors, after every epoch)::

    loss = 0.5 * sum_k (<M_rk, U_ck> - v_k)^2 + lam * (||M||_F^2 + ||U||_F^2)

i.e. PipeArch Eq. 3 with a factor 0.5 on the data term, and ``rmse`` =
``sqrt(mean_k (<M_rk, U_ck> - v_k)^2)`` on the training entries.  Note that the
update above is SGD on a frequency-weighted version of this (each row is shrunk
once per observed entry in it, by ``lam`` rather than ``alpha*lam``), so ``loss`` is a
monitor, not the exact function being minimised; ``rmse`` is the primary metric.

Bit-true path (``fmt`` a QFormat): ``M0, U0, vals`` are quantised with ``to_fixed``,
``alpha_q = to_fixed(alpha)``, ``lam_q = to_fixed(lam)`` (a non-zero value rounding to the
zero word raises ``ValueError``; ``lam = 0.0`` is legal); per entry, using only
:mod:`golden.pipearch_ops` (a row of ``d`` words is ``d`` lines of one lane)::

    e    = dot_sigmoid(fmt, M_r, U_c, d, use_sigmoid=False)
    e    = scalar_sgd(fmt, e, v_q, alpha_q)
    M_r' = l2reg(fmt, multiply_subtract(fmt, M_r, e, U_c), M_r, lam_q)
    U_c' = l2reg(fmt, multiply_subtract(fmt, U_c, e, M_r'), U_c, lam_q)

Tracking bound (bit-true vs float64).  Every op rounds once (<= LSB/2); one entry
update perturbs each touched word by at most ``2 LSB`` (dot and scalar rounding scaled
by ``|U|, |M| <= 1`` in the regime of interest, plus multiply-subtract and l2reg).
The matrix-factorisation dynamics are not contractive in all directions (the
factorisation is only unique up to an invertible d x d transform), so there is no
uniform-in-time bound; the documented check is on the *predictions*: after training,
``max_k |pred_fixed_k - pred_float_k| <= LRMF_TRACK`` = 1e-2 (about 650 LSB of
Q32.16) and the training RMSEs agree within ``1e-3`` -- measured on the test problem
(30x40, d=3, 960 entries, 12 epochs, Q32.16) at 1.3e-3 / 1.5e-5.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _validate as V
from . import pipearch_ops as ops
from .fixedpoint import QFormat

LRMF_TRACK = 1e-2


@dataclass
class LRMFResult:
    """``M`` (m, d) / ``U`` (u, d): float64 (float path) or int64 words (bit-true path);
    ``loss`` / ``rmse``: float64 per epoch on the training entries."""

    M: np.ndarray
    U: np.ndarray
    loss: list = field(default_factory=list)
    rmse: list = field(default_factory=list)
    fmt: QFormat | None = None

    @property
    def model_float(self):
        """``(M, U)`` as float64."""
        if self.fmt is None:
            return np.asarray(self.M, dtype=np.float64), np.asarray(self.U, dtype=np.float64)
        return self.fmt.to_float(self.M), self.fmt.to_float(self.U)

    def predict(self, rows, cols) -> np.ndarray:
        M, U = self.model_float
        return np.einsum("kd,kd->k", M[np.asarray(rows)], U[np.asarray(cols)])


def objective(rows, cols, vals, M, U, lam: float):
    """``(loss, rmse)`` in float64 (module docstring)."""
    err = np.einsum("kd,kd->k", M[rows], U[cols]) - vals
    loss = 0.5 * float(np.sum(err ** 2)) + lam * float(np.sum(M ** 2) + np.sum(U ** 2))
    return loss, float(np.sqrt(np.mean(err ** 2)))


def schedule(rows, cols, m: int, u: int, tile: int, entry_order) -> np.ndarray:
    """Entry indices in processing order: row tile, then column tile, then the rank of
    the entry in ``entry_order``."""
    rank = np.empty(len(entry_order), dtype=np.int64)
    rank[entry_order] = np.arange(len(entry_order))
    return np.lexsort((rank, cols // tile, rows // tile))


def lrmf(rows, cols, vals, *, m: int, u: int, d: int, alpha: float, lam: float,
         epochs: int, tile: int, M0, U0=None, entry_order=None,
         fmt: QFormat | None = None) -> LRMFResult:
    """Tiled alternating SGD for LRMF (PipeArch Alg. 3), module docstring.

    ``rows``/``cols`` int (nnz,) in ``[0, m)`` / ``[0, u)``, ``vals`` (nnz,) finite;
    ``M0`` (m, d) the initial ``M`` (Alg. 3 uses random values), ``U0`` (u, d) default 0;
    ``entry_order``: a permutation of ``range(nnz)`` (the same every epoch)."""
    m = V.pos_int(m, "m")
    u = V.pos_int(u, "u")
    d = V.pos_int(d, "d")
    epochs = V.pos_int(epochs, "epochs")
    tile = V.pos_int(tile, "tile")
    alpha = V.real(alpha, "alpha", positive=True)
    lam = V.real(lam, "lam", nonneg=True)
    vals = V.finite_array(vals, "vals", 1)
    nnz = vals.shape[0]
    rows = V.int_array(rows, "rows", (nnz,))
    cols = V.int_array(cols, "cols", (nnz,))
    if np.any((rows < 0) | (rows >= m)):
        raise ValueError(f"rows must lie in [0, m={m}), got {rows[(rows < 0) | (rows >= m)][0]}")
    if np.any((cols < 0) | (cols >= u)):
        raise ValueError(f"cols must lie in [0, u={u}), got {cols[(cols < 0) | (cols >= u)][0]}")
    M0 = V.finite_array(M0, "M0", 2, (m, d))
    U0 = np.zeros((u, d)) if U0 is None else V.finite_array(U0, "U0", 2, (u, d))
    entry_order = (np.arange(nnz) if entry_order is None
                   else V.permutations(entry_order, "entry_order", (nnz,)))
    if fmt is not None and not isinstance(fmt, QFormat):
        raise ValueError(f"fmt must be a QFormat or None, got {type(fmt).__name__}")
    seq = schedule(rows, cols, m, u, tile, entry_order)

    losses, rmses = [], []
    if fmt is None:
        M, U = M0.copy(), U0.copy()
        for _ in range(epochs):
            for k in seq:
                r, c = rows[k], cols[k]
                e = alpha * (float(M[r] @ U[c]) - vals[k])
                Mr_new = M[r] - e * U[c] - lam * M[r]
                U[c] = U[c] - e * Mr_new - lam * U[c]
                M[r] = Mr_new
            lo, rm = objective(rows, cols, vals, M, U, lam)
            losses.append(lo)
            rmses.append(rm)
        return LRMFResult(M=M, U=U, loss=losses, rmse=rmses, fmt=None)

    M = fmt.to_fixed(M0, name="M0")
    U = fmt.to_fixed(U0, name="U0")
    vq = fmt.to_fixed(vals, name="vals")
    alpha_q = V.nonzero_word(fmt.to_fixed(alpha, name="alpha"), "alpha", fmt, alpha)
    lam_q = V.nonzero_word(fmt.to_fixed(lam, name="lam"), "lam", fmt, lam)
    for _ in range(epochs):
        for k in seq:
            r, c = rows[k], cols[k]
            Mr = M[r].reshape(d, 1)
            Uc = U[c].reshape(d, 1)
            e = ops.dot_sigmoid(fmt, Mr, Uc, d, False)
            e = ops.scalar_sgd(fmt, e, vq[k], alpha_q)
            Mr_new = ops.l2reg(fmt, ops.multiply_subtract(fmt, Mr, e, Uc), Mr, lam_q)
            Uc_new = ops.l2reg(fmt, ops.multiply_subtract(fmt, Uc, e, Mr_new), Uc, lam_q)
            M[r] = Mr_new.reshape(d)
            U[c] = Uc_new.reshape(d)
        lo, rm = objective(rows, cols, vals, fmt.to_float(M), fmt.to_float(U), lam)
        losses.append(lo)
        rmses.append(rm)
    return LRMFResult(M=M, U=U, loss=losses, rmse=rmses, fmt=fmt)
