"""Bit-true models of the PipeArch compute subroutines (PipeArch section 6.2, Table 2).

Each function is the exact arithmetic of one RTL core in ``rtl_gen/pipearch``.
The training algorithms in ``golden.sgd`` / ``golden.scd`` / ``golden.lrmf`` are
composed from these, so a chain of cores reproduces them bit for bit.

All operands are fixed-point integers of one :class:`~golden.fixedpoint.QFormat`.
"""
from __future__ import annotations

import numpy as np

from .fixedpoint import QFormat, SigmoidTable, sigmoid_fx, sigmoid_table

SCD_MODE = 1
SGD_MODE = 0


def _lines(v, lanes, name):
    v = np.asarray(v)
    if v.ndim != 2 or v.shape[1] != lanes:
        raise ValueError(f"{name} must be (lines, {lanes}), got shape {v.shape}")
    return v


def dot_sigmoid(fmt: QFormat, a, b, dimension: int, use_sigmoid: bool,
                table: SigmoidTable | None = None):
    """``a``, ``b``: (iterations * dimension, lanes).  One result per iteration:
    the exact dot product of ``dimension`` lines, rounded and saturated once,
    then optionally the PWL sigmoid."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"a and b must be equal 2-D (lines, lanes) arrays, got {a.shape} and {b.shape}")
    if dimension < 1 or a.shape[0] % dimension:
        raise ValueError(f"line count {a.shape[0]} is not a multiple of dimension {dimension}")
    it = a.shape[0] // dimension
    lanes = a.shape[1]
    d = fmt.dot(a.reshape(it, dimension * lanes), b.reshape(it, dimension * lanes))
    if use_sigmoid:
        d = sigmoid_fx(d, table or sigmoid_table(fmt))
    return np.asarray(d, dtype=np.int64)


def sigmoid_delta(fmt: QFormat, z, b, use_sigmoid: bool, table: SigmoidTable | None = None):
    """Per lane ``S(z) - b`` (``S`` the PWL sigmoid or the identity), saturated."""
    z = np.asarray(z, dtype=np.int64)
    s = sigmoid_fx(z, table or sigmoid_table(fmt)) if use_sigmoid else z
    return fmt.sub(s, b)


def scalar_sgd(fmt: QFormat, dot, b, alpha: int):
    """SGD mode of the scalar engine: ``alpha * (dot - b)``."""
    return fmt.mul(alpha, fmt.sub(dot, b))


def scalar_scd(fmt: QFormat, g, x, alpha: int, alpha_lambda: int):
    """SCD mode of the scalar engine: the soft-threshold step of PipeArch Alg. 2.

    ``ag = alpha*g``; ``d = x - ag``;
    ``mu = ag + al`` if ``d > al``, ``ag - al`` if ``d < -al``, else ``x``;
    returns ``(mu, x - mu)``.  ``al`` is ``alpha*lambda1`` given as one word.
    """
    g = np.asarray(g, dtype=np.int64)
    x = np.asarray(x, dtype=np.int64)
    ag = fmt.mul(alpha, g)
    d = fmt.sub(x, ag)
    mu = np.where(d > alpha_lambda, fmt.add(ag, alpha_lambda),
                  np.where(d < -alpha_lambda, fmt.sub(ag, alpha_lambda), x))
    return mu.astype(np.int64), fmt.sub(x, mu)


def multiply_subtract(fmt: QFormat, x, s, a):
    """Per lane ``x - s*a`` (``s`` one scalar, or one scalar per line)."""
    s = np.asarray(s, dtype=np.int64)
    if s.ndim == 1:
        s = s[:, None]
    return fmt.sub(x, fmt.mul(s, a))


def l2reg(fmt: QFormat, x, x_old, c: int):
    """Per lane ``x - c*x_old`` with ``c = 2*alpha*lambda2`` given as one word."""
    return fmt.sub(x, fmt.mul(c, x_old))
