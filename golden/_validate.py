"""Input checks shared by the golden training models.

Every check raises ``ValueError`` whose message names the offending argument, so
callers (and tests) can tell which input was wrong.
"""
from __future__ import annotations

import numbers

import numpy as np

from .fixedpoint import QFormat, SigmoidTable, sigmoid_table


def pos_int(v, name: str) -> int:
    """A strictly positive Python/NumPy integer (bools rejected)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if int(v) <= 0:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def real(v, name: str, *, positive: bool = False, nonneg: bool = False) -> float:
    """A finite real scalar, optionally > 0 or >= 0."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {v!r}")
    f = float(v)
    if not np.isfinite(f):
        raise ValueError(f"{name} must be finite, got {v!r}")
    if positive and not f > 0:
        raise ValueError(f"{name} must be > 0, got {v!r}")
    if nonneg and not f >= 0:
        raise ValueError(f"{name} must be >= 0, got {v!r}")
    return f


def finite_array(v, name: str, ndim: int, shape: tuple | None = None) -> np.ndarray:
    """A float64 array with ``ndim`` dimensions (and ``shape`` if given), all finite."""
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be a numeric array ({e})") from None
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if shape is not None and a.shape != tuple(shape):
        raise ValueError(f"{name} has shape {a.shape}, expected {tuple(shape)}")
    if any(s == 0 for s in a.shape):
        raise ValueError(f"{name} must not be empty, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains a non-finite value (NaN or inf)")
    return a


def int_array(v, name: str, shape: tuple) -> np.ndarray:
    """An integer-dtype array of exactly ``shape``."""
    a = np.asarray(v)
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array, got dtype {a.dtype}")
    if a.shape != tuple(shape):
        raise ValueError(f"{name} has shape {a.shape}, expected {tuple(shape)}")
    return a.astype(np.int64)


def permutations(v, name: str, shape: tuple) -> np.ndarray:
    """Integer array of ``shape`` whose last axis holds permutations of ``range(shape[-1])``."""
    a = int_array(v, name, shape)
    k = shape[-1]
    flat = a.reshape(-1, k)
    ref = np.arange(k)
    for i, row in enumerate(flat):
        if not np.array_equal(np.sort(row), ref):
            where = name
            if len(shape) > 1:
                where += str([int(t) for t in np.unravel_index(i, shape[:-1])])
            raise ValueError(f"{where} is not a permutation of range({k})")
    return a


def labels(b: np.ndarray, loss: str) -> None:
    """Labels inside the loss's domain: {0,1} for logistic, {-1,+1} for svm."""
    if loss == "logistic":
        ok = np.isin(b, (0.0, 1.0))
        if not np.all(ok):
            raise ValueError(f"b (labels) must be 0 or 1 for loss='logistic', got {b[~ok][0]!r}")
    elif loss == "svm":
        ok = np.isin(b, (-1.0, 1.0))
        if not np.all(ok):
            raise ValueError(f"b (labels) must be -1 or +1 for loss='svm', got {b[~ok][0]!r}")


def choice(v, name: str, allowed: tuple) -> str:
    if v not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {v!r}")
    return v


def fmt_and_table(fmt, table, need_table: bool):
    """Check ``fmt`` (None or QFormat) and return the sigmoid table to use (or None)."""
    if fmt is None:
        if table is not None and not isinstance(table, SigmoidTable):
            raise ValueError(f"table must be a SigmoidTable or None, got {type(table).__name__}")
        return None  # the float path uses the exact sigmoid; a table is ignored
    if not isinstance(fmt, QFormat):
        raise ValueError(f"fmt must be a QFormat or None, got {type(fmt).__name__}")
    if table is not None:
        if not isinstance(table, SigmoidTable):
            raise ValueError(f"table must be a SigmoidTable or None, got {type(table).__name__}")
        if table.fmt != fmt:
            raise ValueError(f"table was built for {table.fmt}, but fmt is {fmt}")
        return table
    return sigmoid_table(fmt) if need_table else None


def nonzero_word(q, name: str, fmt: QFormat, real_value: float) -> int:
    """A hyper-parameter word that must not quantise to zero.

    Used for every step size and regularisation word: a non-zero real that rounds to
    the zero word would silently switch the term off (no step, no regularisation).
    ``real_value == 0.0`` is legal and gives the zero word (e.g. no regularisation)."""
    q = int(q)
    if q == 0 and real_value != 0.0:
        raise ValueError(f"{name} = {real_value!r} quantises to 0 in {fmt} (LSB {fmt.lsb})")
    return q
