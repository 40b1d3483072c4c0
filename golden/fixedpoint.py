"""The one number format of the repository: signed two's-complement fixed point.

A value is an integer ``q`` meaning ``q / 2**F``, held in ``W`` bits.  The rules,
shared by golden models and RTL generators (``rtl_gen`` imports this module):

* rounding: round to nearest, ties toward +inf -- add half an LSB, then shift
  arithmetically right (``(v + 2**(s-1)) >> s``);
* saturation: clamp to ``[-2**(W-1), 2**(W-1) - 1]``, never wrap;
* multiply: full-width product, round away ``F`` bits, saturate;
* dot product: exact sum of full-width products (Python integers, no
  overflow), then one rounding and one saturation.

Integers are carried in ``int64`` arrays where they fit, and in ``object``
arrays of Python ints where a sum of products could exceed 63 bits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_W = 32  # products of two W-bit words must fit in int64 (2W-2 magnitude bits)


def _as_int_array(v):
    a = np.asarray(v)
    if a.dtype == object:
        return a
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"fixed-point operand must be integer-valued, got dtype {a.dtype}")
    return a.astype(np.int64)


def rshift_round(v, s: int):
    """Round-to-nearest arithmetic right shift by ``s`` bits (ties toward +inf)."""
    if s < 0:
        raise ValueError(f"shift must be >= 0, got {s}")
    v = _as_int_array(v)
    if s == 0:
        return v
    return (v + (1 << (s - 1))) >> s


@dataclass(frozen=True)
class QFormat:
    """Signed fixed point with ``W`` word bits of which ``F`` are fraction bits."""

    W: int = 32
    F: int = 16

    def __post_init__(self):
        if not isinstance(self.W, int) or not 2 <= self.W <= MAX_W:
            raise ValueError(f"W (word width) must be an int in [2, {MAX_W}], got {self.W!r}")
        if not isinstance(self.F, int) or not 0 <= self.F < self.W:
            raise ValueError(f"F (fraction bits) must be an int in [0, W-1={self.W - 1}], got {self.F!r}")

    # ---- constants -------------------------------------------------------
    @property
    def min_int(self) -> int:
        return -(1 << (self.W - 1))

    @property
    def max_int(self) -> int:
        return (1 << (self.W - 1)) - 1

    @property
    def one(self) -> int:
        return 1 << self.F

    @property
    def lsb(self) -> float:
        return 2.0 ** -self.F

    @property
    def max_real(self) -> float:
        return self.max_int * self.lsb

    @property
    def min_real(self) -> float:
        return self.min_int * self.lsb

    def __str__(self):
        return f"Q(W={self.W},F={self.F})"

    # ---- conversion ------------------------------------------------------
    def to_fixed(self, x, name: str = "value", saturate: bool = False):
        """Quantise reals to integers (round to nearest, ties toward +inf).

        Raises ``ValueError`` naming ``name`` for a non-finite value, or for a value the
        format cannot hold unless ``saturate`` is set.
        """
        x = np.asarray(x, dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains a non-finite value (NaN or inf)")
        # One rounding, exactly: scaling by 2**F is exact in float64 (a power of two; only
        # overflow to inf is possible, and such a value does not fit anyway), and so is
        # ``s - floor(s)``.  Adding 0.5 before the floor would round a second time
        # (0.49999999999999994 LSB + 0.5 is 1.0 in float64).
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: s = inf, inf - inf = NaN
            s = x * float(self.one)
            q = np.floor(s)
            q = q + (s - q >= 0.5)  # tie (exactly half) goes up: toward +inf
        if not saturate:
            bad = (q > self.max_int) | (q < self.min_int)
            if np.any(bad):
                worst = float(x[bad].flat[0]) if x.ndim else float(x)
                raise ValueError(
                    f"{name} = {worst!r} does not fit {self} "
                    f"(range [{self.min_real}, {self.max_real}])")
        q = np.clip(q, self.min_int, self.max_int)
        return q.astype(np.int64)

    def to_float(self, q):
        return np.asarray(q, dtype=np.float64) * self.lsb

    # ---- arithmetic ------------------------------------------------------
    def sat(self, v):
        """Clamp integers to the W-bit range (works on int64 and object arrays)."""
        v = _as_int_array(v)
        if v.dtype == object:
            # Clamp element by element with Python ints: np.maximum/np.minimum on a
            # 0-d object array holding a value beyond int64 raises OverflowError.
            lo, hi = self.min_int, self.max_int
            flat = [min(max(int(e), lo), hi) for e in v.ravel()]
            out = np.array(flat, dtype=np.int64).reshape(v.shape)
            return out[()] if out.ndim == 0 else out  # 0-d -> np.int64, like np.clip
        return np.clip(v, self.min_int, self.max_int)

    def words(self, v, name: str = "operand"):
        """``v`` as an integer array after checking every element is a ``W``-bit word.

        The arithmetic below is defined on words of this format only: an operand outside
        ``[min_int, max_int]`` would make the int64 product wrap (``mul``) or give a
        result the hardware can never produce, so it raises ``ValueError`` naming it."""
        v = _as_int_array(v)
        if v.dtype == object:
            flat = v.ravel()
            bad = [e for e in flat if not isinstance(e, (int, np.integer)) or isinstance(e, bool)
                   or not self.min_int <= int(e) <= self.max_int]
        else:
            bad = v[(v < self.min_int) | (v > self.max_int)].ravel().tolist()
        if bad:
            raise ValueError(f"{name} = {bad[0]!r} is not a word of {self} "
                             f"(range [{self.min_int}, {self.max_int}])")
        return v

    def add(self, a, b):
        """Element-wise sum of two words, saturated (operands must be words)."""
        return self.sat(self.words(a, "a") + self.words(b, "b"))

    def sub(self, a, b):
        """Element-wise difference of two words, saturated (operands must be words)."""
        return self.sat(self.words(a, "a") - self.words(b, "b"))

    def mul(self, a, b):
        """Element-wise product: full width, round away F bits, saturate.  Operands must
        be words (``W <= 32``: the product of two words fits int64)."""
        return self.sat(rshift_round(self.words(a, "a") * self.words(b, "b"), self.F))

    def dot(self, a, b, axis: int = -1):
        """Exact sum of full-width products along ``axis``, then one round and saturate.
        Operands must be words."""
        a = self.words(a, "a").astype(object)
        b = self.words(b, "b").astype(object)
        acc = np.sum(a * b, axis=axis)
        return self.sat(rshift_round(np.asarray(acc, dtype=object), self.F))

    def in_range(self, q) -> bool:
        q = np.asarray(q)
        return bool(np.all((q >= self.min_int) & (q <= self.max_int)))


DEFAULT = QFormat(32, 16)


# ---- sigmoid: piecewise-linear table shared by golden/ and rtl_gen/ ------------
@dataclass(frozen=True)
class SigmoidTable:
    """Piecewise-linear sigmoid over ``[-x_range, x_range)`` in ``segments`` equal pieces.

    Bit-true evaluation (and the RTL) does:
      ``zc   = clamp(z, -R, R - 1)``          (``R = x_range * 2**F``)
      ``u    = zc + R``                        (unsigned, ``< 2R``)
      ``idx  = u >> shift``; ``off = u & (2**shift - 1)``
      ``y    = base[idx] + round(slope[idx] * off, F)``  then clamp to ``[0, 2**F]``.
    ``base`` is sigmoid at the segment start and ``slope`` the chord slope, both
    quantised to the format.
    """

    fmt: QFormat
    segments: int
    x_range: int
    shift: int
    base: tuple
    slope: tuple

    @property
    def index_bits(self) -> int:
        return int(math.log2(self.segments))

    @property
    def r_int(self) -> int:
        return self.x_range << self.fmt.F


def sigmoid_table(fmt: QFormat = DEFAULT, segments: int = 64, x_range: int = 8) -> SigmoidTable:
    if segments < 2 or segments & (segments - 1):
        raise ValueError(f"segments must be a power of two >= 2, got {segments}")
    if x_range < 1 or x_range & (x_range - 1):
        raise ValueError(f"x_range must be a power of two >= 1, got {x_range}")
    span_log2 = int(math.log2(2 * x_range)) - int(math.log2(segments))  # log2(segment width)
    shift = fmt.F + span_log2
    if shift < 0:
        raise ValueError(
            f"{fmt} has too few fraction bits for {segments} sigmoid segments over +-{x_range}: "
            f"need F >= {-span_log2}")
    if (x_range << fmt.F) > fmt.max_int:
        raise ValueError(f"{fmt} cannot hold the sigmoid input range +-{x_range}: need W - F - 1 > log2({x_range})")
    h = 2.0 ** span_log2
    xs = -x_range + h * np.arange(segments + 1)
    ys = 1.0 / (1.0 + np.exp(-xs))
    base = fmt.to_fixed(ys[:-1], "sigmoid base")
    slope = fmt.to_fixed((ys[1:] - ys[:-1]) / h, "sigmoid slope")
    return SigmoidTable(fmt, segments, x_range, shift,
                        tuple(int(v) for v in base), tuple(int(v) for v in slope))


def sigmoid_fx(z, table: SigmoidTable):
    """Bit-true sigmoid of fixed-point integers ``z`` using ``table``."""
    fmt = table.fmt
    z = _as_int_array(z)
    r = table.r_int
    zc = np.clip(z, -r, r - 1)
    u = zc + r
    idx = u >> table.shift
    off = u & ((1 << table.shift) - 1)
    base = np.asarray(table.base, dtype=np.int64)[idx]
    slope = np.asarray(table.slope, dtype=np.int64)[idx]
    y = base + rshift_round(slope * off, fmt.F)
    return np.clip(y, 0, fmt.one)


def sigmoid_error_bound(table: SigmoidTable) -> float:
    """Documented worst case of ``|sigmoid_fx(z) - sigmoid(z)|`` in real units.

    * chord error of a segment of width ``h``: ``h**2 / 8 * max|sigmoid''|`` (0.0963);
    * quantisation: base (1/2 LSB), slope times an offset below ``h`` (``h/2`` LSB) and
      the final rounding (1/2 LSB);
    * the tail: inputs beyond ``+-x_range`` are clamped, costing ``sigmoid(-x_range)``.
    """
    fmt = table.fmt
    h = 2.0 ** (table.shift - fmt.F)
    chord = h * h / 8.0 * 0.0963
    quant = (1.0 + h / 2.0) * fmt.lsb
    tail = 1.0 / (1.0 + math.exp(table.x_range))
    return chord + quant + tail


# ---- generic piecewise-linear tables: sigmoid, gaussian, log, reciprocal ---------
# (used by the CoSMIC PE nonlinear unit; rtl_gen/common/nonlinear.py evaluates the
# same tables in hardware, golden models call pwl_fx)
@dataclass(frozen=True)
class PwlTable:
    """Piecewise-linear ``f`` over ``[lo, hi)`` (fixed-point integers) in equal segments
    of ``2**shift`` LSBs.

    Bit-true evaluation (and the RTL, ``rtl_gen/common/nonlinear.py``):
      ``zc  = clamp(z, lo, hi - 1)``; ``u = zc - lo`` (unsigned, ``< hi - lo``);
      ``idx = u >> shift``; ``off = u & (2**shift - 1)``;
      ``y   = sat_W(base[idx] + round(slope[idx] * off, F))`` then clamp to ``[y_min, y_max]``.
    ``base`` is ``f`` at the segment start and ``slope`` the chord slope, both quantised.
    ``curvature`` is ``max |f''|`` over the domain (for :func:`pwl_error_bound`) and
    ``tail`` the documented worst error for inputs outside the domain (``inf`` when the
    function is only specified on its domain: such inputs are clamped to the domain).
    """

    name: str
    fmt: QFormat
    lo: int
    shift: int
    base: tuple
    slope: tuple
    y_min: int
    y_max: int
    curvature: float
    tail: float

    @property
    def segments(self) -> int:
        return len(self.base)

    @property
    def index_bits(self) -> int:
        return int(math.log2(self.segments))

    @property
    def hi(self) -> int:
        return self.lo + (self.segments << self.shift)

    @property
    def domain(self) -> tuple:
        return (self.lo * self.fmt.lsb, self.hi * self.fmt.lsb)


def _pwl_build(name, fmt: QFormat, f, lo_real: float, seg_log2: int, segments: int,
               curvature: float, tail: float, y_min=None, y_max=None) -> PwlTable:
    """A :class:`PwlTable` of ``f`` from ``lo_real`` over ``segments`` segments of width
    ``2**seg_log2``.  Raises ``ValueError`` when ``fmt`` cannot represent the domain."""
    if segments < 2 or segments & (segments - 1):
        raise ValueError(f"{name}: segments must be a power of two >= 2, got {segments}")
    shift = fmt.F + seg_log2
    if shift < 1:
        raise ValueError(f"{name}: {fmt} has too few fraction bits for segments of width "
                         f"2**{seg_log2}: need F >= {1 - seg_log2}")
    lo_q = lo_real * (1 << fmt.F)
    if lo_q != int(lo_q):
        raise ValueError(f"{name}: domain start {lo_real} is not representable in {fmt}")
    lo = int(lo_q)
    hi = lo + (segments << shift)
    if lo < fmt.min_int or hi > fmt.max_int:
        raise ValueError(f"{name}: {fmt} cannot hold the input domain [{lo_real}, "
                         f"{hi * fmt.lsb}): need more integer bits (W - F)")
    h = 2.0 ** seg_log2
    xs = lo_real + h * np.arange(segments + 1)
    ys = f(xs)
    if np.max(np.abs(ys)) >= fmt.max_real:
        raise ValueError(f"{name}: {fmt} cannot hold the output range (max |f| = {np.max(np.abs(ys))})")
    base = fmt.to_fixed(ys[:-1], f"{name} base")
    slope = fmt.to_fixed((ys[1:] - ys[:-1]) / h, f"{name} slope", saturate=True)
    y_min = fmt.min_int if y_min is None else int(y_min)
    y_max = fmt.max_int if y_max is None else int(y_max)
    return PwlTable(name, fmt, lo, shift, tuple(int(v) for v in base), tuple(int(v) for v in slope),
                    y_min, y_max, float(curvature), float(tail))


def pwl_fx(z, table: PwlTable):
    """Bit-true evaluation of ``table`` at fixed-point integers ``z``."""
    fmt = table.fmt
    z = _as_int_array(z)
    zc = np.clip(z, table.lo, table.hi - 1)
    u = zc - table.lo
    idx = u >> table.shift
    off = u & ((1 << table.shift) - 1)
    base = np.asarray(table.base, dtype=np.int64)[idx]
    slope = np.asarray(table.slope, dtype=np.int64)[idx]
    y = fmt.sat(base + rshift_round(slope * off, fmt.F))
    return np.clip(y, table.y_min, table.y_max)


def pwl_error_bound(table: PwlTable) -> float:
    """Documented worst case of ``|pwl_fx(z) - f(z)|`` (real units) for ``z`` in the
    domain: chord error ``h**2/8 * max|f''|`` plus quantisation of base (1/2 LSB), of the
    slope times an offset below ``h`` (``h/2`` LSB) and of the final rounding (1/2 LSB).
    For ``z`` outside the domain the input is clamped; add ``table.tail``."""
    h = 2.0 ** (table.shift - table.fmt.F)
    return h * h / 8.0 * table.curvature + (1.0 + h / 2.0) * table.fmt.lsb


def sigmoid_pwl(fmt: QFormat = DEFAULT, segments: int = 64, x_range: int = 8) -> PwlTable:
    """:func:`sigmoid_table` in the generic form: ``pwl_fx(z, sigmoid_pwl(fmt))`` equals
    ``sigmoid_fx(z, sigmoid_table(fmt))`` bit for bit (tested)."""
    t = sigmoid_table(fmt, segments, x_range)
    if t.shift < 1:
        raise ValueError(f"sigmoid: {fmt} has too few fraction bits for the PWL unit (segment shift 0)")
    return PwlTable("sigmoid", fmt, -t.r_int, t.shift, t.base, t.slope, 0, fmt.one,
                    0.0963, 1.0 / (1.0 + math.exp(x_range)))


def gaussian_table(fmt: QFormat = DEFAULT, segments: int = 128, x_range: int = 4) -> PwlTable:
    """Gaussian kernel ``exp(-x**2 / 2)`` over ``[-x_range, x_range)``; outputs in
    ``[0, 1]``.  ``max|f''| = 1`` (at 0); beyond the domain the clamped input costs at
    most ``exp(-x_range**2 / 2)``."""
    if x_range < 1 or x_range & (x_range - 1):
        raise ValueError(f"gaussian: x_range must be a power of two >= 1, got {x_range}")
    seg_log2 = int(math.log2(2 * x_range)) - int(math.log2(max(segments, 1)))
    return _pwl_build("gaussian", fmt, lambda x: np.exp(-0.5 * x * x), -float(x_range), seg_log2,
                      segments, 1.0, math.exp(-0.5 * x_range * x_range), 0, fmt.one)


def log_table(fmt: QFormat = DEFAULT, segments: int = 256, lo: float = 0.5, seg_log2: int = -4) -> PwlTable:
    """Natural logarithm over ``[lo, lo + segments * 2**seg_log2)`` (default ``[0.5, 16.5)``).
    ``max|f''| = 1/lo**2``.  Inputs below the domain (including ``x <= 0``, where ``log``
    is undefined) are clamped to ``lo``, inputs above to the last point: no bound outside."""
    if not lo > 0:
        raise ValueError(f"log: the domain start must be positive, got {lo}")
    return _pwl_build("log", fmt, np.log, lo, seg_log2, segments, 1.0 / (lo * lo), math.inf)


def reciprocal_table(fmt: QFormat = DEFAULT, segments: int = 256, lo: float = 1.0,
                     seg_log2: int = -4) -> PwlTable:
    """Reciprocal ``1/x`` over ``[lo, lo + segments * 2**seg_log2)`` (default ``[1, 17)``),
    outputs in ``[0, 1/lo]``; divide is ``a * recip(b)``.  ``max|f''| = 2/lo**3``.  Inputs
    outside the domain are clamped (no bound there)."""
    if not lo > 0:
        raise ValueError(f"reciprocal: the domain start must be positive, got {lo}")
    return _pwl_build("reciprocal", fmt, lambda x: 1.0 / x, lo, seg_log2, segments,
                      2.0 / lo ** 3, math.inf, 0, fmt.to_fixed(1.0 / lo, "1/lo"))
