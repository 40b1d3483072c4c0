"""Reference tests for golden.fixedpoint against plain Python-int arithmetic."""
import math

import numpy as np
import pytest

from golden.fixedpoint import (DEFAULT, QFormat, rshift_round, sigmoid_error_bound,
                               sigmoid_fx, sigmoid_table)

FMTS = [DEFAULT, QFormat(16, 8), QFormat(32, 0), QFormat(8, 7)]


def ref_round_shift(v: int, s: int) -> int:
    """Round to nearest, ties toward +inf, by exact rational arithmetic."""
    if s == 0:
        return v
    return math.floor(v / (1 << s) + 0.5) if abs(v) < 2**50 else (2 * v + (1 << s)) // (1 << (s + 1))


def ref_sat(fmt, v):
    return max(fmt.min_int, min(fmt.max_int, v))


def rand_words(rng, fmt, k):
    w = rng.integers(fmt.min_int, fmt.max_int, size=k, endpoint=True)
    w[:4] = [fmt.min_int, fmt.max_int, 0, -1]
    return w


def test_rounding_ties_toward_plus_inf():
    v = np.array([-5, -3, -1, 1, 3, 5])  # all exact halves after >> 1
    assert rshift_round(v, 1).tolist() == [-2, -1, 0, 1, 2, 3]
    assert rshift_round(np.array([-6, -2, 2, 6]), 2).tolist() == [-1, 0, 1, 2]  # +-0.5, +-1.5
    assert DEFAULT.to_fixed(0.5 * DEFAULT.lsb) == 1
    assert DEFAULT.to_fixed(-0.5 * DEFAULT.lsb) == 0
    assert DEFAULT.to_fixed(-1.5 * DEFAULT.lsb) == -1
    h = 1 << 15  # half an LSB of a product in Q.16
    assert DEFAULT.mul(np.int64(h), np.int64(1)) == 1 and DEFAULT.mul(np.int64(-h), np.int64(1)) == 0
    with pytest.raises(ValueError, match="shift"):
        rshift_round(3, -1)


def test_rshift_round_matches_reference():
    rng = np.random.default_rng(0)
    v = rng.integers(-2**62, 2**62, size=2000)
    for s in (0, 1, 5, 16, 31):
        got = rshift_round(v, s)
        ref = [(int(x) + ((1 << s) >> 1)) >> s if s else int(x) for x in v]
        assert got.tolist() == ref
        small = v[:200] >> 20
        assert rshift_round(small, s).tolist() == [ref_round_shift(int(x), s) for x in small]


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_saturation_both_rails(fmt):
    big = np.array([fmt.max_int, fmt.min_int])
    assert fmt.add(big, big).tolist() == [fmt.max_int, fmt.min_int]
    assert fmt.sub(big, big[::-1]).tolist() == [fmt.max_int, fmt.min_int]
    assert fmt.sat(np.array([2**40, -2**40, 7])).tolist() == [fmt.max_int, fmt.min_int, 7]
    assert fmt.sat(np.array(2**70, dtype=object)) == fmt.max_int
    assert fmt.sat(np.array([-2**80], dtype=object)).tolist() == [fmt.min_int]
    assert fmt.to_fixed(1e12, saturate=True) == fmt.max_int
    assert fmt.to_fixed(-1e12, saturate=True) == fmt.min_int


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_add_sub_mul_match_python_ints(fmt):
    rng = np.random.default_rng(1)
    a = rand_words(rng, fmt, 3000)
    b = rand_words(rng, fmt, 3000)[::-1].copy()
    assert fmt.add(a, b).tolist() == [ref_sat(fmt, int(x) + int(y)) for x, y in zip(a, b)]
    assert fmt.sub(a, b).tolist() == [ref_sat(fmt, int(x) - int(y)) for x, y in zip(a, b)]
    ref = [ref_sat(fmt, (int(x) * int(y) + ((1 << fmt.F) >> 1)) >> fmt.F) for x, y in zip(a, b)]
    assert fmt.mul(a, b).tolist() == ref
    # the extreme corner: min*min is the largest product (2**(2W-2)) and must not wrap
    assert fmt.mul(np.int64(fmt.min_int), np.int64(fmt.min_int)) == ref_sat(
        fmt, (fmt.min_int ** 2 + ((1 << fmt.F) >> 1)) >> fmt.F)


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_dot_exact_never_wraps(fmt):
    rng = np.random.default_rng(2)
    for n in (1, 3, 64):
        a = rand_words(rng, fmt, 50 * n).reshape(50, n) if n >= 4 else \
            rng.integers(fmt.min_int, fmt.max_int, size=(50, n), endpoint=True)
        b = rng.integers(fmt.min_int, fmt.max_int, size=(50, n), endpoint=True)
        got = fmt.dot(a, b)
        ref = [ref_sat(fmt, (sum(int(x) * int(y) for x, y in zip(ra, rb)) + ((1 << fmt.F) >> 1)) >> fmt.F)
               for ra, rb in zip(a, b)]
        assert got.tolist() == ref
    # all-min vectors: the exact sum exceeds int64 for W=32, F=0 and must saturate, not wrap
    v = np.full(8, fmt.min_int)
    assert int(fmt.dot(v, v)) == fmt.max_int
    assert int(fmt.dot(v, -v - 1)) == ref_sat(fmt, (8 * fmt.min_int * (-fmt.min_int - 1)
                                                    + ((1 << fmt.F) >> 1)) >> fmt.F)
    # cancellation: the exact sum is small although partial sums are huge
    # (``one`` is not a word of Q(8,7): use the largest word up to one)
    one = min(fmt.one, fmt.max_int)
    a = np.array([fmt.max_int, fmt.max_int, 1])
    b = np.array([fmt.max_int, -fmt.max_int, one])
    assert int(fmt.dot(a, b)) == ref_sat(fmt, (one + ((1 << fmt.F) >> 1)) >> fmt.F)


def test_to_fixed_and_to_float():
    f = DEFAULT
    x = np.array([0.0, 1.0, -1.0, 0.25, f.max_real, f.min_real])
    assert f.to_fixed(x).tolist() == [0, f.one, -f.one, f.one // 4, f.max_int, f.min_int]
    assert np.array_equal(f.to_float(f.to_fixed(x)), x)
    with pytest.raises(ValueError, match="weights contains a non-finite"):
        f.to_fixed([1.0, np.nan], name="weights")
    with pytest.raises(ValueError, match="step contains a non-finite"):
        f.to_fixed(np.inf, name="step")
    with pytest.raises(ValueError, match=r"bias = 40000\.0 does not fit"):
        f.to_fixed([1.0, 40000.0], name="bias")
    with pytest.raises(ValueError, match="does not fit"):
        f.to_fixed(f.min_real - f.lsb)
    with pytest.raises(TypeError):
        f.add(np.array([1.5]), np.array([1]))


@pytest.mark.parametrize("W,F", [(1, 0), (33, 16), (16, 16), (16, -1), (16.0, 8), (16, 8.0), ("16", 8)])
def test_qformat_rejects_bad_parameters(W, F):
    with pytest.raises(ValueError, match=r"\b[WF] \("):
        QFormat(W, F)


def test_qformat_constants():
    f = QFormat(16, 8)
    assert (f.min_int, f.max_int, f.one, f.lsb) == (-32768, 32767, 256, 1 / 256)
    assert f.max_real == 32767 / 256 and f.min_real == -128.0 and str(f) == "Q(W=16,F=8)"
    assert f.in_range([f.max_int, f.min_int]) and not f.in_range([f.max_int + 1])


@pytest.mark.parametrize("fmt,segments,x_range", [(DEFAULT, 64, 8), (DEFAULT, 256, 8),
                                                   (QFormat(16, 10), 32, 8), (QFormat(24, 16), 16, 4)])
def test_sigmoid_error_within_bound(fmt, segments, x_range):
    tab = sigmoid_table(fmt, segments, x_range)
    hi = min(fmt.max_int, (2 * x_range) << fmt.F)
    z = np.unique(np.concatenate([np.linspace(-hi, hi, 40001).astype(np.int64),
                                  np.array([fmt.min_int, fmt.max_int, 0, -1, 1])]))
    y = fmt.to_float(sigmoid_fx(z, tab))
    ref = 0.5 * (1.0 + np.tanh(0.5 * fmt.to_float(z)))
    err = np.max(np.abs(y - ref))
    assert err <= sigmoid_error_bound(tab)
    assert np.all(np.diff(sigmoid_fx(z, tab)) >= -1)  # monotone up to one LSB
    out = sigmoid_fx(z, tab)
    assert out.min() >= 0 and out.max() <= fmt.one


def test_sigmoid_table_rejects_bad_parameters():
    with pytest.raises(ValueError, match="segments"):
        sigmoid_table(DEFAULT, segments=48)
    with pytest.raises(ValueError, match="segments"):
        sigmoid_table(DEFAULT, segments=1)
    with pytest.raises(ValueError, match="x_range"):
        sigmoid_table(DEFAULT, x_range=3)
    with pytest.raises(ValueError, match="x_range"):
        sigmoid_table(DEFAULT, x_range=0)
    with pytest.raises(ValueError, match="fraction bits"):
        sigmoid_table(QFormat(16, 0), segments=64, x_range=8)
    with pytest.raises(ValueError, match="cannot hold the sigmoid input range"):
        sigmoid_table(QFormat(8, 6), segments=4, x_range=2)


# ---- generic PWL tables (CoSMIC PE nonlinear unit) -----------------------------
from golden.fixedpoint import (gaussian_table, log_table, pwl_error_bound, pwl_fx,  # noqa: E402
                               reciprocal_table, sigmoid_pwl)

_PWL_REFS = {
    "sigmoid": lambda x: 0.5 * (1.0 + np.tanh(0.5 * x)),
    "gaussian": lambda x: np.exp(-0.5 * x * x),
    "log": np.log,
    "reciprocal": lambda x: 1.0 / x,
}


@pytest.mark.parametrize("fmt", [DEFAULT, QFormat(16, 8), QFormat(24, 12), QFormat(32, 24)], ids=str)
@pytest.mark.parametrize("make", [sigmoid_pwl, gaussian_table, log_table, reciprocal_table],
                         ids=lambda f: f.__name__)
def test_pwl_error_within_bound_on_domain(fmt, make):
    try:
        tab = make(fmt)
    except ValueError:
        assert fmt.W - fmt.F - 1 < 5, f"{make.__name__} should fit {fmt}"  # only narrow integer parts fail
        return
    z = np.unique(np.linspace(tab.lo, tab.hi - 1, 50001).astype(np.int64))
    y = fmt.to_float(pwl_fx(z, tab))
    err = np.max(np.abs(y - _PWL_REFS[tab.name](fmt.to_float(z))))
    assert err <= pwl_error_bound(tab), (err, pwl_error_bound(tab))
    # outside the domain the input is clamped: the documented tail bounds the error
    if np.isfinite(tab.tail):
        zo = np.array([fmt.min_int, tab.lo - 1, tab.hi, fmt.max_int])
        err_o = np.max(np.abs(fmt.to_float(pwl_fx(zo, tab)) - _PWL_REFS[tab.name](fmt.to_float(zo))))
        assert err_o <= pwl_error_bound(tab) + tab.tail
    else:
        assert pwl_fx(np.array([fmt.min_int]), tab)[0] == pwl_fx(np.array([tab.lo]), tab)[0]
        assert pwl_fx(np.array([fmt.max_int]), tab)[0] == pwl_fx(np.array([tab.hi - 1]), tab)[0]


def test_sigmoid_pwl_equals_sigmoid_fx():
    for fmt in (DEFAULT, QFormat(16, 8), QFormat(24, 10)):
        z = np.concatenate([np.arange(-(9 << fmt.F), 9 << fmt.F, max(1, fmt.one // 64)),
                            [fmt.min_int, fmt.max_int]])
        assert pwl_fx(z, sigmoid_pwl(fmt)).tolist() == sigmoid_fx(z, sigmoid_table(fmt)).tolist()


def test_pwl_documented_bounds_are_small():
    assert pwl_error_bound(gaussian_table(DEFAULT)) < 6e-4
    assert pwl_error_bound(log_table(DEFAULT)) < 2.1e-3
    assert pwl_error_bound(reciprocal_table(DEFAULT)) < 1.1e-3
    assert gaussian_table(DEFAULT).domain == (-4.0, 4.0)
    assert log_table(DEFAULT).domain == (0.5, 16.5)
    assert reciprocal_table(DEFAULT).domain == (1.0, 17.0)


def test_pwl_tables_reject_bad_parameters():
    with pytest.raises(ValueError, match="segments"):
        gaussian_table(DEFAULT, segments=100)
    with pytest.raises(ValueError, match="x_range"):
        gaussian_table(DEFAULT, x_range=3)
    with pytest.raises(ValueError, match="positive"):
        log_table(DEFAULT, lo=0.0)
    with pytest.raises(ValueError, match="positive"):
        reciprocal_table(DEFAULT, lo=-1.0)
    with pytest.raises(ValueError, match="fraction bits"):
        log_table(QFormat(16, 2))
    with pytest.raises(ValueError, match="input domain"):
        reciprocal_table(QFormat(16, 12))
    with pytest.raises(ValueError, match="not representable"):
        log_table(QFormat(16, 8), lo=0.001, seg_log2=-4)


# ---- issue 11: to_fixed rounds once; operands outside the W-bit range raise ------------
def ref_to_fixed(fmt, x: float) -> int:
    """Round to nearest, ties toward +inf, by exact rational arithmetic."""
    from fractions import Fraction
    return math.floor(Fraction(x) * (1 << fmt.F) + Fraction(1, 2))


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_to_fixed_rounds_once_exactly(fmt):
    below_half = 0.49999999999999994            # largest double below 0.5
    assert below_half < 0.5 and below_half + 0.5 == 1.0  # why the old floor(x*2**F + 0.5) failed
    lsb = fmt.lsb
    assert fmt.to_fixed(below_half * lsb) == 0
    assert fmt.to_fixed(-below_half * lsb) == 0
    assert fmt.to_fixed(np.nextafter(1.5, 0) * lsb) == 1
    assert fmt.to_fixed(-(0.5 + 2 ** -53) * lsb) == -1    # just beyond -1/2: rounds away from 0
    # exact ties go toward +inf, both signs
    for k in (-3, -1, 0, 1, 2):
        assert fmt.to_fixed((k + 0.5) * lsb) == k + 1
    # random reals near ties and everywhere, compared with exact rational rounding
    rng = np.random.default_rng(11)
    k = rng.integers(fmt.min_int // 2, fmt.max_int // 2, size=400).astype(np.float64)
    near = np.concatenate([np.nextafter(k + 0.5, -np.inf), k + 0.5, np.nextafter(k + 0.5, np.inf),
                           rng.uniform(fmt.min_int, fmt.max_int, 400)]) * lsb
    got = fmt.to_fixed(near)
    assert got.tolist() == [ref_to_fixed(fmt, float(v)) for v in near]
    # a value that overflows the scale to inf still saturates / raises
    assert fmt.to_fixed(1e308, saturate=True) == fmt.max_int
    assert fmt.to_fixed(-1e308, saturate=True) == fmt.min_int
    with pytest.raises(ValueError, match="does not fit"):
        fmt.to_fixed(1e308)


@pytest.mark.parametrize("fmt", FMTS, ids=str)
def test_ops_reject_operands_outside_the_word_range(fmt):
    hi, lo = fmt.max_int + 1, fmt.min_int - 1
    for op in (fmt.add, fmt.sub, fmt.mul, fmt.dot):
        for bad in (hi, lo):
            with pytest.raises(ValueError, match=rf"a = {bad} is not a word of Q\(W={fmt.W}"):
                op(np.array([bad, 0]), np.array([1, 1]))
            with pytest.raises(ValueError, match=rf"b = {bad} is not a word"):
                op(np.int64(1), np.int64(bad))
        with pytest.raises(ValueError, match="is not a word"):  # object arrays too
            op(np.array([2 ** 70], dtype=object), np.array([1], dtype=object))
    # the case that used to wrap: a product of out-of-range int64 operands beyond 2**63
    with pytest.raises(ValueError, match="is not a word"):
        fmt.mul(np.int64(2 ** 40), np.int64(2 ** 40))
    # the rails themselves are words
    assert fmt.mul(np.int64(fmt.min_int), np.int64(fmt.max_int)) == fmt.sat(
        np.array((fmt.min_int * fmt.max_int + ((1 << fmt.F) >> 1)) >> fmt.F, dtype=object))
