"""golden.maple against independent references: NumPy lexsort/argpartition with the
tie rule spelled out, float64 distances and plain Python accumulation."""
import numpy as np
import pytest

from golden import maple
from golden.fixedpoint import DEFAULT, QFormat


def ref_best(values, indices, k, largest):
    """The k best (value, index) pairs under the documented key, sorted best first.
    lexsort sorts by the last key first: primary value (negated for largest), then index."""
    v = np.asarray(values, dtype=np.int64)
    i = np.asarray(indices, dtype=np.int64)
    order = np.lexsort((i, -v if largest else v))
    return [(int(v[o]), int(i[o])) for o in order[:k]]


def as_sorted(idx, val, largest):
    pairs = list(zip(val.tolist(), idx.tolist()))
    return sorted(pairs, key=lambda p: ((-p[0] if largest else p[0]), p[1]))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_topk_set_matches_lexsort(seed, largest):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    k = int(rng.integers(1, 20))
    vals = rng.integers(-6, 7, size=n)            # many duplicates
    idx = np.arange(n) if seed % 2 else rng.integers(0, 10, size=n)  # arrival order / reused
    i, v = maple.topk(vals, idx, k, largest)
    assert len(i) == min(k, n)
    assert as_sorted(i, v, largest) == ref_best(vals, idx, k, largest)


def test_topk_matches_argpartition_on_distinct_values():
    rng = np.random.default_rng(5)
    vals = rng.permutation(1000)[:300] - 500
    k = 17
    i, v = maple.topk(vals, np.arange(300), k, True)
    part = np.argpartition(-vals, k - 1)[:k]
    assert set(i.tolist()) == set(part.tolist())
    assert set(v.tolist()) == set(vals[part].tolist())


def test_topk_tie_rule_and_dump_order():
    # equal values: the earlier (smaller index) element stays, a later equal one is discarded
    i, v = maple.topk([5, 5, 5, 5], [0, 1, 2, 3], 2, True)
    assert i.tolist() == [0, 1] and v.tolist() == [5, 5]
    # dump order is slot order: a replacement lands in the threshold's slot
    t = maple.selection_trace([1, 9, 3, 2, 7], [0, 1, 2, 3, 4], 2, True)
    assert t["indices"].tolist() == [4, 1] and t["values"].tolist() == [7, 9]
    assert (t["fills"], t["replacements"], t["discards"]) == (2, 2, 1)
    # stream shorter than k just fills in arrival order
    i, v = maple.topk([4, -2, 8], [7, 8, 9], 5, False)
    assert i.tolist() == [7, 8, 9] and v.tolist() == [4, -2, 8]
    # k = 1 keeps the single best; smallest
    i, v = maple.topk([3, 1, 1, 2], [0, 1, 2, 3], 1, False)
    assert i.tolist() == [1] and v.tolist() == [1]


def test_min_max_with_index():
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(1, 50))
        vals = rng.integers(-5, 6, size=n)
        idx = rng.permutation(n)
        (imn, vmn), (imx, vmx) = maple.min_max_with_index(vals, idx)
        assert vmn == vals.min() and vmx == vals.max()
        assert imn == idx[vals == vmn].min() and imx == idx[vals == vmx].min()
    assert maple.min_max_with_index([7], [3]) == ((3, 7), (3, 7))


def test_rmw_accumulate_saturates_and_orders():
    fmt = QFormat(16, 8)
    rng = np.random.default_rng(2)
    mem = rng.integers(-1000, 1000, size=32)
    addrs = rng.integers(0, 32, size=400)
    vals = rng.integers(fmt.min_int, fmt.max_int + 1, size=400)
    out = maple.rmw_accumulate(mem, addrs, vals, fmt)
    ref = [int(x) for x in mem]
    for a, x in zip(addrs, vals):
        ref[a] = min(max(ref[a] + int(x), fmt.min_int), fmt.max_int)
    assert out.tolist() == ref
    assert mem.tolist() != out.tolist()          # input untouched, output changed
    # saturation is per add, not at the end: +max, +max, -max = max - max = 0
    assert maple.rmw_accumulate([0], [0, 0, 0], [fmt.max_int] * 2 + [-fmt.max_int], fmt).tolist() == [0]


def test_kmeans_and_glvq_against_float():
    fmt = DEFAULT
    rng = np.random.default_rng(3)
    pts = rng.integers(-20, 21, size=(40, 3)).astype(np.float64)
    means = rng.integers(-20, 21, size=(6, 3)).astype(np.float64)
    a, d = maple.kmeans_assign(fmt.to_fixed(pts), fmt.to_fixed(means), fmt)
    fd = ((pts[:, None, :] - means[None]) ** 2).sum(-1)
    assert a.tolist() == fd.argmin(1).tolist()           # argmin takes the first on a tie
    assert np.allclose(fmt.to_float(d), fd.min(1))
    (ic, dc), (ifar, dfar) = maple.glvq_closest_farthest(fmt.to_fixed(pts[0]), fmt.to_fixed(means), fmt)
    assert ic == fd[0].argmin() and ifar == fd[0].argmax()
    assert np.isclose(fmt.to_float(dc), fd[0].min()) and np.isclose(fmt.to_float(dfar), fd[0].max())


def test_topk_recommend_against_float():
    fmt = DEFAULT
    rng = np.random.default_rng(4)
    M = rng.integers(-8, 9, size=(30, 4)).astype(np.float64)
    U = rng.integers(-8, 9, size=(3, 4)).astype(np.float64)
    i, v = maple.topk_recommend(fmt.to_fixed(M), fmt.to_fixed(U), 5, fmt)
    s = U @ M.T
    for u in range(3):
        ref = ref_best(fmt.to_fixed(s[u]), np.arange(30), 5, True)
        assert as_sorted(i[u], v[u], True) == ref
        assert np.allclose(fmt.to_float(v[u]), s[u][i[u]])


def test_cnn_aggregate_against_float():
    fmt = QFormat(32, 8)
    rng = np.random.default_rng(6)
    ps = rng.normal(0, 4, size=200)
    addrs = rng.integers(0, 10, size=200)
    q = fmt.to_fixed(ps)
    out = maple.cnn_aggregate(q, addrs, fmt, depth=12)
    ref = np.bincount(addrs, weights=fmt.to_float(q), minlength=12)
    assert np.allclose(fmt.to_float(out), ref)
    assert out[10] == 0 and out[11] == 0


@pytest.mark.parametrize("call,match", [
    (lambda: maple.topk([1, 2], [0], 1), "indices has shape"),
    (lambda: maple.topk([1.5], [0], 1), "integer array"),
    (lambda: maple.topk([1], [0], 0), "k must be a positive"),
    (lambda: maple.topk([], [], 1), "must not be empty"),
    (lambda: maple.topk([1], [-1], 1), "indices must be >= 0"),
    (lambda: maple.min_max_with_index([[1]], [[0]]), "1-D"),
    (lambda: maple.rmw_accumulate([0, 0], [2], [1], DEFAULT), "outside the memory range"),
    (lambda: maple.rmw_accumulate([0], [0], [1 << 40], DEFAULT), "outside"),
    (lambda: maple.rmw_accumulate([0], [0], [1], "Q16"), "fmt must be a QFormat"),
    (lambda: maple.kmeans_assign(np.zeros((2, 3), int), np.zeros((2, 2), int), DEFAULT), "columns"),
])
def test_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_values_at_or_above_2_63_raise_instead_of_wrapping():
    """issue 11: uint64 values >= 2**63 used to wrap to negative int64 and win a
    smallest-k selection (or lose a largest-k one)."""
    big = np.array([2 ** 63, 5, 2 ** 64 - 1], dtype=np.uint64)
    for fn in (lambda: maple.topk(big, np.arange(3), 1, largest=False),
               lambda: maple.topk([2 ** 63, 5], [0, 1], 1),
               lambda: maple.min_max_with_index(big, np.arange(3))):
        with pytest.raises(ValueError, match="values holds (9223372036854775808|18446744073709551615)"):
            fn()
    with pytest.raises(ValueError, match="indices holds 18446744073709551615"):
        maple.topk([1, 2], np.array([0, 2 ** 64 - 1], dtype=np.uint64), 1)
    with pytest.raises(ValueError, match="values holds 36893488147419103232"):
        maple.topk([2 ** 65, 1], [0, 1], 1)
    with pytest.raises(ValueError, match="mem holds"):   # the fixed-point inputs too
        maple.rmw_accumulate(np.array([2 ** 64 - 1], dtype=np.uint64), [0], [1], DEFAULT)
    # unsigned values below 2**63 are fine and compare as unsigned
    ix, v = maple.topk(np.array([2 ** 63 - 1, 5], dtype=np.uint64), [0, 1], 1)
    assert ix.tolist() == [0] and v.tolist() == [2 ** 63 - 1]
