"""MAPLE smart-memory reductions (MAPLE section 4.1, Fig. 4(B)) and the workloads that use them.

The selection store keeps a LIST of up to ``k`` entries ``(index, value)`` and a filter
holding the current threshold (the worst entry of the LIST) and its slot.  This module
models it *exactly as the RTL core* ``maple_smart_memory`` does, so the hardware dump
can be compared beat by beat:

* Ordering key.  Entries are compared on ``(value, index)``: for ``largest`` a bigger
  value is better, for smallest a smaller value is better, and **on equal values the
  smaller index is better**.  When indices are the arrival positions (the usual case:
  an array streamed in order) this means the earlier-arriving element wins and a later
  equal element never displaces it.  An element identical to the threshold in both value
  and index is not better, so it is discarded.
* Fill.  While fewer than ``k`` entries are held, every element is written to the next
  free slot (slot 0, 1, ...).  The threshold is kept incrementally: the new element
  becomes the threshold when it is strictly worse than the current one.
* Replacement.  Once the LIST is full, an element strictly better than the threshold
  overwrites the threshold's slot; the scanner then walks slots ``0..k-1`` and takes the
  worst entry as the new threshold, keeping the lower slot on an exact (value, index)
  tie.  Any other element is discarded.
* Dump.  The LIST is read out in slot order ``0..n-1`` (``n = min(k, elements seen)``).

Min/max with index tracks both extremes with the same key (smaller index wins on equal
values) and dumps ``(min_index, min_value)`` then ``(max_index, max_value)``.

The read-modify-write store adds each value into the addressed entry, saturating to the
word width (no wrap-around), which is how the CNN mapping aggregates partial sums.

Values are integers (raw fixed-point words); the selection and min/max models do not
need the number format because they only compare.  Workload helpers use
:class:`golden.fixedpoint.QFormat` arithmetic bit-true.
"""
from __future__ import annotations

import numbers

import numpy as np

from .fixedpoint import QFormat


# ---------------------------------------------------------------------- validation
_I64 = np.iinfo(np.int64)


def _to_int64(a: np.ndarray, name: str) -> np.ndarray:
    """Integer array -> int64 without wrapping: uint64 values >= 2**63 (and Python ints
    beyond int64, which NumPy holds as object or uint64) raise, naming ``name``."""
    if a.size and a.dtype.kind == "u" and int(a.max()) > _I64.max:
        raise ValueError(f"{name} holds {int(a.max())}, beyond the signed 64-bit range the "
                         f"model (and the hardware's word widths) can hold")
    return a.astype(np.int64)


def _no_big_ints(v, name: str) -> None:
    """Python ints beyond int64 (NumPy would hold them as uint64, float64 or object)."""
    if isinstance(v, np.ndarray) and v.dtype != object:
        return
    big = [e for e in np.asarray(v, dtype=object).ravel().tolist()
           if isinstance(e, int) and not isinstance(e, bool) and not _I64.min <= e <= _I64.max]
    if big:
        raise ValueError(f"{name} holds {big[0]}, beyond the signed 64-bit range the model "
                         f"(and the hardware's word widths) can hold")


def _int_vec(v, name: str, allow_empty: bool = False) -> np.ndarray:
    _no_big_ints(v, name)
    a = np.asarray(v)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
        raise ValueError(f"{name} must be an integer array, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    return _to_int64(a, name)


def _pair(values, indices, allow_empty: bool = False):
    v = _int_vec(values, "values", allow_empty)
    i = _int_vec(indices, "indices", allow_empty)
    if v.shape != i.shape:
        raise ValueError(f"indices has shape {i.shape}, expected {v.shape} (one index per value)")
    if i.size and i.min() < 0:
        raise ValueError(f"indices must be >= 0 (they are unsigned in hardware), got {int(i.min())}")
    return v, i


def _pos_int(v, name: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or int(v) <= 0:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def _fmt(fmt) -> QFormat:
    if not isinstance(fmt, QFormat):
        raise ValueError(f"fmt must be a QFormat, got {type(fmt).__name__}")
    return fmt


def _fixed(v, name: str, fmt: QFormat, ndim: int) -> np.ndarray:
    _no_big_ints(v, name)
    a = np.asarray(v)
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must be an integer (fixed-point) array, got dtype {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} must not be empty")
    a = _to_int64(a, name)
    if not fmt.in_range(a):
        raise ValueError(f"{name} holds a value outside {fmt}")
    return a


# ---------------------------------------------------------------------- ordering key
def better(a_val: int, a_idx: int, b_val: int, b_idx: int, largest: bool) -> bool:
    """True when entry ``a`` is strictly better than ``b`` (the documented tie rule)."""
    if a_val == b_val:
        return a_idx < b_idx
    return a_val > b_val if largest else a_val < b_val


def selection_trace(values, indices, k, largest=True) -> dict:
    """Run the selection store on one array; returns the dump and the event counts.

    Keys: ``indices``, ``values`` (the LIST in dump order), ``fills`` (elements written
    while the LIST was not full), ``replacements`` (insertions into a full LIST, each
    followed by a scan), ``discards``."""
    v, ix = _pair(values, indices)
    k = _pos_int(k, "k")
    largest = bool(largest)
    slots: list[tuple[int, int]] = []   # (value, index) per slot
    thr = 0                              # slot of the threshold
    fills = reps = discards = 0
    for val, idx in zip(v.tolist(), ix.tolist()):
        if len(slots) < k:
            if not slots or better(slots[thr][0], slots[thr][1], val, idx, largest):
                thr = len(slots)         # the newcomer is strictly worse: new threshold
            slots.append((val, idx))
            fills += 1
        elif better(val, idx, slots[thr][0], slots[thr][1], largest):
            slots[thr] = (val, idx)
            reps += 1
            w = 0                        # scanner: worst entry, lower slot on exact ties
            for s in range(1, k):
                if better(slots[w][0], slots[w][1], slots[s][0], slots[s][1], largest):
                    w = s
            thr = w
        else:
            discards += 1
    return {"indices": np.array([s[1] for s in slots], dtype=np.int64),
            "values": np.array([s[0] for s in slots], dtype=np.int64),
            "fills": fills, "replacements": reps, "discards": discards}


def topk(values, indices, k, largest=True):
    """The selection store's LIST after streaming ``values`` (with ``indices``).

    Returns ``(indices, values)`` int64 arrays in the hardware dump order (slot order,
    see the module docstring); the set is the ``min(k, n)`` best elements under the
    (value, smaller-index-wins) key."""
    t = selection_trace(values, indices, k, largest)
    return t["indices"], t["values"]


def min_max_with_index(values, indices):
    """``((min_index, min_value), (max_index, max_value))`` with the smaller index winning
    a tie on value, for both extremes (the hardware dump order: min, then max)."""
    v, ix = _pair(values, indices)
    mn = (int(v[0]), int(ix[0]))
    mx = mn
    for val, idx in zip(v.tolist()[1:], ix.tolist()[1:]):
        if better(val, idx, mn[0], mn[1], largest=False):
            mn = (val, idx)
        if better(val, idx, mx[0], mx[1], largest=True):
            mx = (val, idx)
    return (mn[1], mn[0]), (mx[1], mx[0])


def rmw_accumulate(mem, addrs, values, fmt: QFormat):
    """``mem[a] = sat(mem[a] + v)`` for each ``(a, v)`` in order; returns the new memory
    (the input is not modified).  Saturation to ``fmt.W`` bits happens at every add."""
    fmt = _fmt(fmt)
    m = _fixed(mem, "mem", fmt, 1).copy()
    a = _int_vec(addrs, "addrs")
    v = _fixed(values, "values", fmt, 1)
    if a.shape != v.shape:
        raise ValueError(f"addrs has shape {a.shape}, expected {v.shape} (one address per value)")
    if a.min() < 0 or a.max() >= m.size:
        bad = int(a[(a < 0) | (a >= m.size)][0])
        raise ValueError(f"addrs holds {bad}, outside the memory range 0..{m.size - 1}")
    lo, hi = fmt.min_int, fmt.max_int
    for ai, vi in zip(a.tolist(), v.tolist()):
        m[ai] = min(max(int(m[ai]) + vi, lo), hi)
    return m


# ---------------------------------------------------------------------- workloads
def sq_dist(x, refs, fmt: QFormat):
    """Bit-true squared distance of each row of ``x`` (N, D) to each row of ``refs`` (R, D):
    ``d = dot(sat(x - r), sat(x - r))`` with the repository dot rule (exact sum of
    products, one round and saturation).  Returns (N, R)."""
    diff = fmt.sub(x[:, None, :], refs[None, :, :])
    return fmt.dot(diff, diff)


def kmeans_assign(points, means, fmt: QFormat):
    """Index of the nearest mean for each point (K-means assignment step), bit-true.

    Returns ``(assign, dist)``: ``assign[n]`` is the mean with the smallest squared
    distance (smaller mean index on a tie, as the min/max store resolves it) and
    ``dist[n]`` that distance."""
    fmt = _fmt(fmt)
    p = _fixed(points, "points", fmt, 2)
    m = _fixed(means, "means", fmt, 2)
    if p.shape[1] != m.shape[1]:
        raise ValueError(f"means has {m.shape[1]} columns, points has {p.shape[1]}")
    d = sq_dist(p, m, fmt)
    idx = np.arange(m.shape[0], dtype=np.int64)
    out_i = np.empty(p.shape[0], dtype=np.int64)
    out_d = np.empty(p.shape[0], dtype=np.int64)
    for n in range(p.shape[0]):
        (i, v), _ = min_max_with_index(d[n], idx)
        out_i[n], out_d[n] = i, v
    return out_i, out_d


def topk_recommend(M, U, k, fmt: QFormat):
    """Top ``k`` items per user from the scores ``M U^T`` (semantic-search / recommender
    ranking), scores by the golden fixed-point dot.

    ``M`` is (items, D), ``U`` is (users, D).  Returns ``(idx, val)`` of shape
    (users, min(k, items)) in the selection store's dump order (item index = row of M)."""
    fmt = _fmt(fmt)
    M = _fixed(M, "M", fmt, 2)
    U = _fixed(U, "U", fmt, 2)
    if M.shape[1] != U.shape[1]:
        raise ValueError(f"U has {U.shape[1]} columns, M has {M.shape[1]}")
    k = _pos_int(k, "k")
    scores = fmt.dot(M[None, :, :], U[:, None, :])          # (users, items)
    items = np.arange(M.shape[0], dtype=np.int64)
    n = min(k, M.shape[0])
    oi = np.empty((U.shape[0], n), dtype=np.int64)
    ov = np.empty((U.shape[0], n), dtype=np.int64)
    for u in range(U.shape[0]):
        oi[u], ov[u] = topk(scores[u], items, k, largest=True)
    return oi, ov


def glvq_closest_farthest(x, refs, fmt: QFormat):
    """GLVQ step: the closest and the farthest reference vector to ``x`` (D,) among
    ``refs`` (R, D) by bit-true squared distance.  Returns
    ``((i_closest, d_closest), (i_farthest, d_farthest))``."""
    fmt = _fmt(fmt)
    xv = _fixed(x, "x", fmt, 1)
    r = _fixed(refs, "refs", fmt, 2)
    if r.shape[1] != xv.shape[0]:
        raise ValueError(f"refs has {r.shape[1]} columns, x has {xv.shape[0]} elements")
    d = sq_dist(xv[None, :], r, fmt)[0]
    return min_max_with_index(d, np.arange(r.shape[0], dtype=np.int64))


def cnn_aggregate(partial_sums, addrs, fmt: QFormat, depth: int | None = None):
    """CNN partial-sum aggregation in the read-modify-write store: output pixel ``a``
    accumulates every partial sum addressed to it, saturating.  ``depth`` (default
    ``max(addrs) + 1``) is the memory size; the memory starts at zero."""
    fmt = _fmt(fmt)
    a = _int_vec(addrs, "addrs")
    depth = int(a.max()) + 1 if depth is None else _pos_int(depth, "depth")
    return rmw_accumulate(np.zeros(depth, dtype=np.int64), a, partial_sums, fmt)


# ---------------------------------------------------------------------- PE-chain workloads
# The PE chain (core ``maple_pe_chain``) only computes dot products.  A squared distance
# ||x - r||^2 = ||x||^2 - 2<x, r> + ||r||^2 is ranked through the score
# s(x, r) = 2<x, r> - ||r||^2 (||x||^2 is common to all r of one x): the nearest r has
# the largest score, the farthest the smallest.  The chain computes it as one dot product
# of augmented vectors x' = [x, 1.0] and r' = [sat(2 r), -||r||^2] where ||r||^2 is the
# bit-true dot(r, r) precomputed on the host.  Exactness: the product 1.0 * (-||r||^2) is
# exact, so s = sat(round(2 sum x r / 2^F) - ||r||^2): the ranking equals that of the
# bit-true distance except where two distances tie within the rounding (documented).
def distance_augment(x, refs, fmt: QFormat):
    """``(x', r')``: ``x`` (N, D) -> (N, D+1) with a 1.0 column; ``refs`` (R, D) ->
    (R, D+1) holding ``sat(2 r)`` and ``-dot(r, r)`` (saturated)."""
    fmt = _fmt(fmt)
    xa = _fixed(x, "x", fmt, 2)
    ra = _fixed(refs, "refs", fmt, 2)
    if xa.shape[1] != ra.shape[1]:
        raise ValueError(f"refs has {ra.shape[1]} columns, x has {xa.shape[1]}")
    nr = fmt.dot(ra, ra)
    xp = np.concatenate([xa, np.full((xa.shape[0], 1), fmt.one, dtype=np.int64)], axis=1)
    rp = np.concatenate([fmt.sat(2 * ra), fmt.sat(-nr)[:, None]], axis=1)
    return xp, rp


def distance_scores(x, refs, fmt: QFormat):
    """Bit-true scores ``s[n, r] = dot(x'[n], r'[r])`` (see :func:`distance_augment`)."""
    xp, rp = distance_augment(x, refs, fmt)
    return fmt.dot(xp[:, None, :], rp[None, :, :])


def kmeans_assign_scores(points, means, fmt: QFormat):
    """K-means assignment as the PE chain computes it: for each point the mean with the
    largest score (smaller mean index on a tie).  Returns ``(assign, score)``."""
    s = distance_scores(points, means, fmt)
    idx = np.arange(s.shape[1], dtype=np.int64)
    out_i = np.empty(s.shape[0], dtype=np.int64)
    out_s = np.empty(s.shape[0], dtype=np.int64)
    for n in range(s.shape[0]):
        _, (i, v) = min_max_with_index(s[n], idx)
        out_i[n], out_s[n] = i, v
    return out_i, out_s


def glvq_scores_closest_farthest(x, refs, fmt: QFormat):
    """GLVQ step as the PE chain computes it: ``((i_closest, s_max), (i_farthest, s_min))``
    over the scores of ``x`` (D,) against ``refs`` (R, D)."""
    s = distance_scores(np.asarray(x)[None, :], refs, fmt)[0]
    (imn, vmn), (imx, vmx) = min_max_with_index(s, np.arange(s.shape[0], dtype=np.int64))
    return (imx, vmx), (imn, vmn)
