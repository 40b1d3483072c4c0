"""Golden SGD for L2-regularised GLMs (PipeArch Alg. 1) and CoSMIC parallel SGD.

Objective (PipeArch Eq. 1, L2 part only)::

    f(x) = (1/m) sum_i J(<x, a_i>, b_i) + lam2 * ||x||_2^2

    ridge     J = 0.5 * (<x,a> - b)^2                     b real
    logistic  J = -b log s(<x,a>) - (1-b) log(1 - s(<x,a>))   b in {0, 1}
    svm       J = max(0, 1 - b <x,a>)                      b in {-1, +1}

Update rule, per mini-batch ``B`` (``batch`` consecutive indices of the epoch's order)::

    x_t   = x
    dot_k = S(<x_t, a_k>)                  S = sigmoid (logistic) or identity
    s_k   = (alpha/batch) * (dot_k - b_k)                   ridge / logistic
    s_k   = -(alpha/batch) * b_k  if b_k*dot_k < 1 else 0   svm (hinge sub-gradient)
    x     = x_t - sum_k s_k a_k            (one multiply-subtract per k, in batch order)
    x     = x - 2*alpha*lam2 * x_t

i.e. ``x <- x - alpha * (mean_k grad J_k(x_t) + 2 lam2 x_t)``: a step of size ``alpha``
on ``f``.  The fixed point of the expected update (batch size does not matter) for
ridge is therefore::

    (A^T A / m + 2 lam2 I) x* = A^T b / m

which is the minimiser of ``f``.  For logistic the minimiser of ``f`` equals
scikit-learn's ``LogisticRegression(C=1/(2*lam2*m), fit_intercept=False)``
(multiply ``f`` by ``1/(2 lam2)``).

Bit-true path (``fmt`` a QFormat).  Data and hyper-parameters are quantised once::

    A_q = to_fixed(A), b_q = to_fixed(b), x = to_fixed(x0) (or 0)
    alpha_q = to_fixed(alpha / batch),  c_q = to_fixed(2 * alpha * lam2)

(either word raises ``ValueError`` when a non-zero value rounds to the zero word;
``lam2 = 0.0`` gives ``c_q = 0``, no regularisation)

and every mini-batch is composed only of :mod:`golden.pipearch_ops`, in this order
(single-lane layout: a vector of n words is n lines of one lane, dimension = n)::

    dots = dot_sigmoid(fmt, x_t, a_k, n, use_sigmoid=(loss == "logistic"), table)
           (all k of the batch in one call: one iteration per sample)
    s    = scalar_sgd(fmt, dots, b_q[k], alpha_q)                      ridge / logistic
    s_k  = sub(0, mul(alpha_q, b_k)) if mul(b_k, dot_k) < one else 0   svm
    x    = x_t;  for k in batch: x = multiply_subtract(fmt, x, s_k, a_k)
    x    = l2reg(fmt, x, x_t, c_q)

Tracking bound (bit-true vs float64, same inputs and order).  The two paths differ by

* rounding: each op rounds once to the nearest LSB (<= LSB/2): per mini-batch the dot
  (folded into one rounding), the scalar engine, ``batch`` multiply-subtracts and the
  l2reg add at most ``(batch + 3)/2`` LSB per coordinate, i.e. ``r = sqrt(n) (batch+3)/2 LSB``
  in 2-norm;
* hyper-parameter quantisation: the bit-true run is exact SGD with step
  ``alpha' = batch*alpha_q`` and ridge ``2 lam2' = c_q / alpha'``; the shift of the
  regulariser moves the optimum by ``|2 lam2' - 2 lam2| ||x*|| / mu``;
* logistic only: the PWL sigmoid error ``eps_s = sigmoid_error_bound(table)`` is a
  gradient error of at most ``eps_s * max|a| * sqrt(n)``, moving the optimum by that
  over ``mu``.

``mu`` is the curvature of ``f`` near the optimum (smallest eigenvalue of
``A^T A/m + 2 lam2 I`` for ridge; of ``A^T diag(s'(A x*)) A/m + 2 lam2 I`` for
logistic).  The update contracts errors by ``(1 - alpha*mu)`` per step, so the
rounding accumulates to at most ``r / (alpha*mu)``.  Once both runs are near the
optimum (transient differences decayed), the documented bound is::

    max_j |x_fixed_j - x_float_j| <= TRACK_K * ( r/(alpha*mu)
                                                + |2lam2' - 2lam2| ||x*|| / mu
                                                + eps_s max|a| sqrt(n) / mu )

with safety factor ``TRACK_K = 2`` (:func:`tracking_bound`).  This is an engineering
bound (linearised around the optimum), not a theorem; it is pessimistic because
rounding errors mostly cancel -- on the test problems (200x5, 20 epochs, Q32.16) the
measured deviation is 7.1e-4 for ridge (bound 5.2e-2; the quantised ``2*alpha*lam2`` term
alone predicts ~8e-4) and 7.8e-4 for logistic (bound 0.16).  For svm the hinge test ``b*dot < 1`` can flip between the paths on samples
at the margin, so svm trajectories are compared through the loss only.

Parallel SGD (:func:`parallel_sgd`) is CoSMIC Eq. 3a/3b, see its docstring.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _validate as V
from . import pipearch_ops as ops
from .fixedpoint import QFormat, SigmoidTable, sigmoid_error_bound

LOSSES = ("ridge", "logistic", "svm")
TRACK_K = 2.0


@dataclass
class SGDResult:
    """``x``: float64 model (float path) or int64 fixed-point words (bit-true path).

    ``loss[e]`` is the float64 objective after epoch (or round) ``e`` evaluated on the
    full data set from the (dequantised) model."""

    x: np.ndarray
    loss: list = field(default_factory=list)
    fmt: QFormat | None = None

    @property
    def model_float(self) -> np.ndarray:
        return np.asarray(self.x, dtype=np.float64) if self.fmt is None else self.fmt.to_float(self.x)


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free logistic


def objective(A, b, x, loss: str, lam2: float) -> float:
    """Float64 value of ``f(x)`` (see the module docstring)."""
    z = np.asarray(A, dtype=np.float64) @ np.asarray(x, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if loss == "ridge":
        data = 0.5 * np.mean((z - b) ** 2)
    elif loss == "logistic":
        data = np.mean(np.logaddexp(0.0, z) - b * z)
    elif loss == "svm":
        data = np.mean(np.maximum(0.0, 1.0 - b * z))
    else:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    return float(data + lam2 * np.dot(x, x))


def tracking_bound(A, alpha: float, lam2: float, fmt: QFormat, mu: float, x_ref,
                   batch: int = 1, table: SigmoidTable | None = None) -> float:
    """The documented bound on ``max|x_fixed - x_float|`` (module docstring).

    ``mu``: curvature of the objective near the optimum; ``x_ref``: the float64
    solution (its norm scales the hyper-parameter quantisation term); ``table``: pass
    it for logistic to include the PWL sigmoid error."""
    A = np.asarray(A, dtype=np.float64)
    n = A.shape[1]
    r = np.sqrt(n) * (batch + 3) / 2.0 * fmt.lsb
    alpha_eff = batch * float(fmt.to_float(fmt.to_fixed(alpha / batch)))
    two_lam_eff = float(fmt.to_float(fmt.to_fixed(2.0 * alpha * lam2))) / alpha_eff
    hyper = abs(two_lam_eff - 2.0 * lam2) * float(np.linalg.norm(x_ref))
    sig = 0.0
    if table is not None:
        sig = sigmoid_error_bound(table) * float(np.max(np.abs(A))) * np.sqrt(n)
    return TRACK_K * (r / (alpha * mu) + (hyper + sig) / mu)


def _check_common(A, b, loss, alpha, lam2, batch, x0, fmt, table):
    A = V.finite_array(A, "A", 2)
    m, n = A.shape
    b = V.finite_array(b, "b", 1)
    if b.shape[0] != m:
        raise ValueError(f"b has {b.shape[0]} entries but A has {m} rows")
    V.choice(loss, "loss", LOSSES)
    V.labels(b, loss)
    alpha = V.real(alpha, "alpha", positive=True)
    lam2 = V.real(lam2, "lam2", nonneg=True)
    batch = V.pos_int(batch, "batch")
    x0 = np.zeros(n) if x0 is None else V.finite_array(x0, "x0", 1, (n,))
    table = V.fmt_and_table(fmt, table, need_table=(loss == "logistic"))
    return A, b, alpha, lam2, batch, x0, table


def _epoch_float(A, b, x, order, loss, alpha, lam2, batch):
    """One epoch over ``order`` in float64; returns the new model."""
    c = 2.0 * alpha * lam2
    a_b = alpha / batch
    for chunk in order.reshape(-1, batch):
        xt = x
        Ak = A[chunk]
        dots = Ak @ xt
        if loss == "logistic":
            dots = _sigmoid(dots)
        if loss == "svm":
            s = np.where(b[chunk] * dots < 1.0, -a_b * b[chunk], 0.0)
        else:
            s = a_b * (dots - b[chunk])
        x = xt.copy()
        for k in range(batch):
            x = x - s[k] * Ak[k]
        x = x - c * xt
    return x


def _epoch_fixed(fmt, Aq, bq, x, order, loss, alpha_q, c_q, batch, table):
    """One epoch over ``order`` composed of pipearch_ops only; ``x`` is (n, 1) words."""
    n = Aq.shape[1]
    use_sig = loss == "logistic"
    for chunk in order.reshape(-1, batch):
        xt = x
        a_lines = Aq[chunk].reshape(batch * n, 1)
        dots = ops.dot_sigmoid(fmt, np.tile(xt, (batch, 1)), a_lines, n, use_sig, table)
        bk = bq[chunk]
        if loss == "svm":
            margin = fmt.mul(bk, dots)
            step = fmt.sub(0, fmt.mul(alpha_q, bk))
            s = np.where(margin < fmt.one, step, 0).astype(np.int64)
        else:
            s = ops.scalar_sgd(fmt, dots, bk, alpha_q)
        x = xt
        for k in range(batch):
            x = ops.multiply_subtract(fmt, x, s[k], a_lines[k * n:(k + 1) * n])
        x = ops.l2reg(fmt, x, xt, c_q)
    return x


class _Prepared:
    """Quantised/validated state shared by sgd() and parallel_sgd()."""

    def __init__(self, A, b, loss, alpha, lam2, batch, x0, fmt, table):
        (self.A, self.b, self.alpha, self.lam2, self.batch, x0,
         self.table) = _check_common(A, b, loss, alpha, lam2, batch, x0, fmt, table)
        self.loss, self.fmt = loss, fmt
        self.m, self.n = self.A.shape
        if fmt is None:
            self.x0 = x0
        else:
            self.Aq = fmt.to_fixed(self.A, name="A")
            self.bq = fmt.to_fixed(self.b, name="b")
            self.x0 = fmt.to_fixed(x0, name="x0").reshape(self.n, 1)
            self.alpha_q = V.nonzero_word(fmt.to_fixed(self.alpha / self.batch, name="alpha/batch"),
                                          "alpha/batch", fmt, self.alpha / self.batch)
            self.c_q = V.nonzero_word(fmt.to_fixed(2.0 * self.alpha * self.lam2, name="2*alpha*lam2"),
                                      "2*alpha*lam2", fmt, 2.0 * self.alpha * self.lam2)

    def epoch(self, x, order, rows=slice(None)):
        """One epoch over local ``order`` of the samples ``rows``."""
        if self.fmt is None:
            return _epoch_float(self.A[rows], self.b[rows], x, order, self.loss,
                                self.alpha, self.lam2, self.batch)
        return _epoch_fixed(self.fmt, self.Aq[rows], self.bq[rows], x, order, self.loss,
                            self.alpha_q, self.c_q, self.batch, self.table)

    def as_float(self, x):
        return x if self.fmt is None else self.fmt.to_float(x).reshape(self.n)

    def result(self, x, losses):
        if self.fmt is not None:
            x = np.asarray(x, dtype=np.int64).reshape(self.n)
        return SGDResult(x=x, loss=losses, fmt=self.fmt)

    def objective(self, x):
        return objective(self.A, self.b, self.as_float(x), self.loss, self.lam2)


def sgd(A, b, *, loss: str, alpha: float, lam2: float, epochs: int, order,
        batch: int = 1, x0=None, fmt: QFormat | None = None,
        table: SigmoidTable | None = None) -> SGDResult:
    """Mini-batch SGD (PipeArch Alg. 1).  See the module docstring for the rule.

    ``A`` (m, n), ``b`` (m,), ``order`` int (epochs, m), each row a permutation of
    ``range(m)``; ``batch`` must divide ``m``.  ``fmt=None`` runs float64 with the exact
    sigmoid (``table`` ignored); a QFormat runs the bit-true model (``table`` defaults to
    ``sigmoid_table(fmt)`` and must be built for ``fmt``)."""
    P = _Prepared(A, b, loss, alpha, lam2, batch, x0, fmt, table)
    epochs = V.pos_int(epochs, "epochs")
    if P.m % P.batch:
        raise ValueError(f"batch = {P.batch} does not divide the sample count m = {P.m}")
    order = V.permutations(order, "order", (epochs, P.m))
    x = P.x0
    losses = []
    for e in range(epochs):
        x = P.epoch(x, order[e])
        losses.append(P.objective(x))
    return P.result(x, losses)


def average_fx(fmt: QFormat, parts) -> np.ndarray:
    """Bit-true average of ``T`` fixed-point models (rows of ``parts``).

    ``avg = sat(floor((S + T//2) / T))`` with ``S`` the exact integer sum: round to
    nearest, exact halves (possible only for even ``T``) toward +inf -- the same tie rule
    as :func:`golden.fixedpoint.rshift_round`, which it equals when ``T`` is a power of two.
    """
    parts = np.asarray(parts, dtype=np.int64)
    T = parts.shape[0]
    s = np.sum(parts.astype(object), axis=0)
    avg = (s + T // 2) // T  # Python floor division of exact integers
    return fmt.sat(np.asarray(avg, dtype=object))


def parallel_sgd(A, b, *, threads: int, rounds: int, loss: str, alpha: float, lam2: float,
                 order, batch: int = 1, x0=None, fmt: QFormat | None = None,
                 table: SigmoidTable | None = None) -> SGDResult:
    """CoSMIC parallelised SGD (CoSMIC Eq. 3a/3b) built on :func:`sgd`'s epoch.

    The ``m`` samples are split into ``threads`` contiguous sub-partitions
    ``D_j = rows [j*m/T, (j+1)*m/T)`` (``threads`` must divide ``m``, and ``batch`` must
    divide ``m/threads``).  ``order`` is int (rounds, m), each row a permutation of
    ``range(m)``; thread ``j`` visits its own samples in the order they appear in
    ``order[r]``.  Per round ``r``:

    * Eq. 3a: ``theta_j = SGD(D_j, theta^(r), f)`` -- every thread runs one epoch of
      :func:`sgd` over its ``m/T`` samples (CoSMIC's per-thread mini-batch ``b`` is
      therefore ``m/T`` samples between aggregations), all from the same ``theta^(r)``;
    * Eq. 3b: ``theta^(r+1) = sum_j theta_j / T`` -- float64 mean, or bit-true
      :func:`average_fx` (exact sum, round half toward +inf, saturate).

    ``loss[r]`` is the objective after round ``r``.  With ``threads=1`` this is exactly
    ``sgd(..., epochs=rounds)``.
    """
    P = _Prepared(A, b, loss, alpha, lam2, batch, x0, fmt, table)
    threads = V.pos_int(threads, "threads")
    rounds = V.pos_int(rounds, "rounds")
    if P.m % threads:
        raise ValueError(f"threads = {threads} does not divide the sample count m = {P.m}")
    sub = P.m // threads
    if sub % P.batch:
        raise ValueError(f"batch = {P.batch} does not divide the per-thread sample count {sub}")
    order = V.permutations(order, "order", (rounds, P.m))
    x = P.x0
    losses = []
    for r in range(rounds):
        parts = []
        for j in range(threads):
            lo = j * sub
            mine = order[r][(order[r] >= lo) & (order[r] < lo + sub)] - lo
            parts.append(P.epoch(x, mine, slice(lo, lo + sub)))
        if fmt is None:
            x = np.mean(parts, axis=0)
        else:
            x = average_fx(fmt, parts)
        losses.append(P.objective(x))
    return P.result(x, losses)
