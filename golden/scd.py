"""Golden partitioned SCD for L1-regularised GLMs (PipeArch Alg. 2).

Objective (PipeArch Eq. 1, L1 part)::

    f(x) = (1/m) sum_i J(<x, a_i>, b_i) + lam1 * ||x||_1

    lasso     J = 0.5 * (<x,a> - b)^2                         b real
    logistic  J = -b log s(<x,a>) - (1-b) log(1 - s(<x,a>))   b in {0, 1}

scikit-learn equivalents (``fit_intercept=False``): lasso is ``Lasso(alpha=lam1)``
(sklearn minimises ``1/(2m) ||b - A x||^2 + alpha ||x||_1``, the same function);
logistic is ``LogisticRegression(penalty="l1", C=1/(lam1*m))`` (``f / lam1``).

Algorithm (literally Alg. 2).  The ``m`` rows are split into ``m/P`` partitions of
``P = partition`` consecutive rows (``P`` must divide ``m``).  ``x = x0`` (default 0) and
``z = A x``.  Per epoch, per partition ``p`` (rows ``p*P .. p*P+P-1``), for ``j`` in
``coord_order[epoch, p]``::

    g        = sum_{i in p} (S(z_i) - b_i) * a_ij        S = sigmoid or identity
    ag       = alpha * g
    mu       = ag + al   if x_j - ag >  al
               ag - al   if x_j - ag < -al
               x_j       otherwise                  (soft threshold, T() of Alg. 2)
    x_j      = x_j - mu
    z_p      = z_p - mu * a_pj

Regulariser word.  ``g`` is a *sum* over the ``P`` rows of the partition, so one
coordinate step is a proximal step on ``sum_{i in p} J_i + (P*lam1) ||x||_1``, i.e. on
``P * (mean_{i in p} J_i + lam1 ||x||_1)``.  To make ``lam1`` mean the same thing as in
``f`` whatever the partition size, the threshold word is ``al = alpha * lam1 * P``
(PipeArch's ``alpha*lambda1`` with its ``lambda1`` = our ``lam1 * P``).  A step size
near ``1 / sum_{i in p} a_ij^2`` (exact coordinate minimisation for lasso) is
typical, e.g. ``alpha ~ 3/P`` for features uniform in [-1, 1].

Staleness of ``z`` with several partitions.  Exactly as in Alg. 2, ``z`` is a stored
per-partition vector: ``z_p`` is loaded, updated and stored *only while partition p is
processed*; it is never recomputed from ``x``.  Coordinate changes made while other
partitions run are not applied to ``z_p``.  Hence, with ``D_q`` the total change of
``x`` made during partition ``q``'s turns, ``z_p = A_p (x0 + D_p)`` rather than
``A_p x = A_p (x0 + sum_q D_q)``: each partition computes its gradients at its own
view of the model, while the soft threshold acts on the shared ``x``.  With one
partition ``z = A x`` always and the algorithm is plain cyclic/shuffled proximal
coordinate descent converging to ``argmin f``; with several partitions it is the
hardware's approximation and it does NOT minimise ``f``: at its fixed point every
partition's own view ``x0 + D_p`` is (close to) the optimum of that partition's data,
so the shared model is ``x ~ x0 + sum_p D_p`` -- e.g. for ``k`` partitions holding the
same rows, ``x -> k * x*``.  The loss can therefore rise above its starting value.
``refresh_z=True`` (an extension, not in Alg. 2) recomputes ``z_p = A_p x`` with one
DotSig pass whenever partition ``p`` is loaded; that is exact incremental proximal
coordinate descent over the partitions, whose loss does fall towards ``min f``
(with full coordinate steps it settles in a neighbourhood of ``argmin f`` whose size
grows with the disagreement between partitions).

Bit-true path (``fmt`` a QFormat).  ``A, b, x0`` are quantised with ``to_fixed``;
``alpha_q = to_fixed(alpha)``, ``al_q = to_fixed(alpha*lam1*P)`` (a non-zero value rounding
to the zero word raises ``ValueError``; ``lam1 = 0.0`` is legal).  ``z = A x0`` is one
``dot_sigmoid(use_sigmoid=False)`` call (``m`` iterations of dimension ``n``); then per
coordinate, using only :mod:`golden.pipearch_ops` (single lane, ``P`` lines)::

    delta     = sigmoid_delta(fmt, z_p, b_p, use_sigmoid, table)
    g         = dot_sigmoid(fmt, delta, a_pj, P, use_sigmoid=False)
    mu, x_j   = scalar_scd(fmt, g, x_j, alpha_q, al_q)
    z_p       = multiply_subtract(fmt, z_p, mu, a_pj)

Tracking bound (bit-true vs float64, one partition ``P = m``, after convergence).
Let ``ag_j = round(alpha_q*g_j)`` be what the next epoch would compute for coordinate
``j`` from the final state, and ``v_j`` (:func:`fixed_point_violation`, in words) the
distance of ``-ag_j`` to ``al_q * d|x_j|``: zero for every ``j`` exactly at a *fixed
point* (one more epoch changes nothing: every active coordinate has ``ag_j =
-al_q*sign(x_j)``, every zero one ``|ag_j| <= al_q``), a few LSB when the run ends in a
limit cycle.  The bit-true model is then the exact optimum of the lasso/logistic
objective with the *effective* threshold ``al_q/alpha_q`` instead of ``lam1*P``, up to a
gradient residual ``r_j`` (units of ``g``, a sum over ``P`` rows)::

    |r_j| <= v_j * LSB / alpha_q                      distance from a fixed point
             + |al_q/alpha_q - lam1*P|                  threshold word over step word
             + LSB / (2 alpha_q)                        rounding of alpha*g
             + E_j                                      error of the computed g_j

The threshold term is the one an earlier version of this docstring called "bounded by an
LSB": with ``al_q = alpha*lam1*P + e1`` and ``alpha_q = alpha + e2`` (``|e1|, |e2| <=
LSB/2``) it is ``|e1 - e2*lam1*P| / alpha_q <= LSB/2 * (1 + lam1*P) / alpha_q``, i.e. the
quantisation of ``alpha`` times the stationary gradient ``lam1*P``, which dominates for
large ``lam1*P`` (m = P = 512, lam1 = 0.2, alpha = 192.49/65536: 17135 LSB of ``g``
against 171 for the rounding of ``alpha*g``).  ``E_j`` compares the computed
``g_j = round(sum_i (S(z_i) - b_i) a_ij)`` with the exact float gradient at the bit-true
model: ``LSB/2`` (its rounding) ``+ sum_i |a_ij| c_i + LSB/2 * sum_i |S(a_i.x) - b_i|``
(the quantisation of ``a_ij``), where ``c_i`` bounds the error of one residual:
``|z_i - a_i.x| + LSB/2`` (quantised ``b``) for lasso, ``eps_s + |z_i - a_i.x| / 4`` (PWL
sigmoid error, sigmoid slope <= 1/4, exact 0/1 labels) for logistic, and
``|z_i - a_i.x| <= drift_i + LSB/2 * ||x||_1`` with ``drift_i = |z_i - A_q,i . x|`` the
rounding the stored ``z`` accumulated over the run (up to LSB/2 per multiply-subtract
with ``mu != 0``; 5..14 LSB on the problem above).  By strong convexity of the data
term (Hessian ``>= P*mu`` for the summed loss, ``mu`` the smallest eigenvalue of
``A^T A / m``, or of ``A^T diag(s'(A x*)) A / m`` for logistic) and monotonicity of the
L1 subdifferential, the distance of the bit-true model to the float optimum ``x*`` is::

    max_j |x_fixed_j - x*_j| <= ||x_fixed - x*||_2 <= sqrt(n) * max_j |r_j| / (P * mu)

:func:`tracking_bound` returns this times ``TRACK_K = 2``.  For lasso the inequality
itself is a theorem for any final state (the factor only absorbs a float run not yet
exactly at ``x*``); for logistic ``mu`` is the curvature near the optimum, so it is
linearised there and the factor is a safety margin.  The function computes ``v``,
``drift``, ``||x||_1`` and the residuals from the bit-true result; before convergence
``v`` is large and so is the bound (still true for lasso, but uninformative).
Measured: the problem above (512x8, 150 epochs, Q32.16) 1.60e-3 (bound 1.10e-2; the previous bound, 2.3e-4, was false); the test problems (120x8, one
partition, Q32.16) lasso 3.9e-5 after 100 epochs (bound 1.5e-3), logistic 7.1e-3 after
200 epochs (bound 0.38, dominated by the PWL sigmoid term, which it treats as worst case
on every row).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _validate as V
from . import pipearch_ops as ops
from .fixedpoint import QFormat, SigmoidTable, sigmoid_error_bound

LOSSES = ("lasso", "logistic")
TRACK_K = 2.0


@dataclass
class SCDResult:
    """``x``: float64 model (float path) or int64 words (bit-true path); ``z``: the
    stored per-row ``z`` vector at the end (same kind); ``loss[e]``: float64 ``f`` of
    the dequantised model after epoch ``e`` on the full data set."""

    x: np.ndarray
    z: np.ndarray
    loss: list = field(default_factory=list)
    fmt: QFormat | None = None

    @property
    def model_float(self) -> np.ndarray:
        return np.asarray(self.x, dtype=np.float64) if self.fmt is None else self.fmt.to_float(self.x)


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def objective(A, b, x, loss: str, lam1: float) -> float:
    """Float64 value of ``f(x)`` (module docstring)."""
    z = np.asarray(A, dtype=np.float64) @ np.asarray(x, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if loss == "lasso":
        data = 0.5 * np.mean((z - b) ** 2)
    elif loss == "logistic":
        data = np.mean(np.logaddexp(0.0, z) - b * z)
    else:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    return float(data + lam1 * np.sum(np.abs(x)))


def fixed_point_violation(A, b, result: "SCDResult", *, loss: str, alpha: float, lam1: float,
                          table: SigmoidTable | None = None) -> np.ndarray:
    """Per coordinate, in words, how far the final state of a bit-true one-partition run
    of :func:`scd` (``x`` and the stored ``z``) is from a fixed point of the update:
    with ``ag_j = round(alpha_q * g_j)`` computed from that state as the next epoch would,
    the distance of ``-ag_j`` to ``al_q * d|x_j|`` (``|ag_j + al_q|`` for ``x_j > 0``,
    ``|ag_j - al_q|`` for ``x_j < 0``, ``max(0, |ag_j| - al_q)`` for ``x_j = 0``).  All zero
    exactly when one more epoch, in any coordinate order, would change nothing; a run
    that ends in a limit cycle shows a few LSB."""
    fmt = result.fmt
    if fmt is None:
        raise ValueError("result must come from the bit-true path (fmt a QFormat)")
    A = V.finite_array(A, "A", 2)
    m, n = A.shape
    b = V.finite_array(b, "b", 1, (m,))
    use_sig = V.choice(loss, "loss", LOSSES) == "logistic"
    table = V.fmt_and_table(fmt, table, need_table=use_sig)
    if np.shape(result.z) != (m,) or np.shape(result.x) != (n,):
        raise ValueError(f"result holds x {np.shape(result.x)} and z {np.shape(result.z)}; "
                         f"expected one partition of A {A.shape}: x ({n},), z ({m},)")
    Aq = fmt.to_fixed(A, name="A")
    bq = fmt.to_fixed(b, name="b").reshape(m, 1)
    alpha_q = int(fmt.to_fixed(alpha, name="alpha"))
    al_q = int(fmt.to_fixed(alpha * lam1 * m, name="alpha*lam1*partition"))
    delta = ops.sigmoid_delta(fmt, np.asarray(result.z, dtype=np.int64).reshape(m, 1), bq, use_sig, table)
    out = np.zeros(n, dtype=np.int64)
    for j in range(n):
        g = ops.dot_sigmoid(fmt, delta, Aq[:, j].reshape(m, 1), m, False)
        ag = int(fmt.mul(alpha_q, g)[0])
        xj = int(result.x[j])
        out[j] = abs(ag + al_q) if xj > 0 else abs(ag - al_q) if xj < 0 else max(0, abs(ag) - al_q)
    return out


def tracking_bound(A, b, result: "SCDResult", *, loss: str, alpha: float, lam1: float,
                   mu: float, table: SigmoidTable | None = None) -> float:
    """The documented bound on ``max|x_fixed - x_float|`` (module docstring) for a
    bit-true ``result`` of :func:`scd` with one partition (``partition = m``); ``mu`` the
    curvature of ``f`` at the optimum; pass ``table`` for logistic (default
    ``sigmoid_table(fmt)``).  Meaningful after convergence: the measured
    :func:`fixed_point_violation` term is zero at a fixed point."""
    fmt = result.fmt
    if fmt is None:
        raise ValueError("result must come from the bit-true path (fmt a QFormat)")
    A = V.finite_array(A, "A", 2)
    m, n = A.shape
    b = V.finite_array(b, "b", 1, (m,))
    alpha = V.real(alpha, "alpha", positive=True)
    lam1 = V.real(lam1, "lam1", nonneg=True)
    mu = V.real(mu, "mu", positive=True)
    use_sig = V.choice(loss, "loss", LOSSES) == "logistic"
    table = V.fmt_and_table(fmt, table, need_table=use_sig)
    viol = fixed_point_violation(A, b, result, loss=loss, alpha=alpha, lam1=lam1, table=table)
    lsb, P = fmt.lsb, m
    alpha_q = int(fmt.to_fixed(alpha)) * lsb
    al_q = int(fmt.to_fixed(alpha * lam1 * P)) * lsb
    thr = abs(al_q / alpha_q - lam1 * P)          # <= LSB/2 * (1 + lam1*P) / alpha_q
    rho = lsb / (2.0 * alpha_q)
    # exact drift of the stored z from A_q x (Python ints, scale 2**-2F)
    Aq = fmt.to_fixed(A, name="A")
    xw = [int(v) for v in result.x]
    drift = np.array([abs((int(zi) << fmt.F) - sum(int(a) * xv for a, xv in zip(row, xw)))
                      for zi, row in zip(result.z, Aq)], dtype=np.float64) * lsb * lsb
    x = fmt.to_float(result.x)
    zerr = drift + lsb / 2.0 * float(np.sum(np.abs(x)))   # |z_i - a_i . x|
    if use_sig:
        c = sigmoid_error_bound(table) + zerr / 4.0
        resid = _sigmoid(A @ x) - b
    else:
        c = zerr + lsb / 2.0
        resid = A @ x - b
    col = np.abs(fmt.to_float(Aq))                           # |a_q,ij|
    e_g = lsb / 2.0 + col.T @ c + lsb / 2.0 * float(np.sum(np.abs(resid)))   # per coordinate
    r = viol * lsb / alpha_q + thr + rho + e_g
    return float(TRACK_K * np.sqrt(n) * np.max(r) / (P * mu))


def scd(A, b, *, loss: str, alpha: float, lam1: float, epochs: int, partition: int,
        coord_order, x0=None, fmt: QFormat | None = None,
        table: SigmoidTable | None = None, refresh_z: bool = False) -> SCDResult:
    """Partitioned stochastic coordinate descent (PipeArch Alg. 2), module docstring.

    ``A`` (m, n), ``b`` (m,), ``partition`` = rows per partition ``P`` (divides m),
    ``coord_order`` int (epochs, m/P, n), each ``[e, p]`` a permutation of ``range(n)``.
    ``fmt=None``: float64 with the exact sigmoid (``table`` ignored); a QFormat: the
    bit-true model (``table`` defaults to ``sigmoid_table(fmt)``).

    ``refresh_z=False`` (default) is the paper's stale per-partition ``z``;
    ``refresh_z=True`` recomputes ``z_p = A_p x`` when partition ``p`` is loaded (one
    extra DotSig pass over the partition's rows), which removes the staleness."""
    A = V.finite_array(A, "A", 2)
    m, n = A.shape
    b = V.finite_array(b, "b", 1)
    if b.shape[0] != m:
        raise ValueError(f"b has {b.shape[0]} entries but A has {m} rows")
    V.choice(loss, "loss", LOSSES)
    V.labels(b, loss)
    alpha = V.real(alpha, "alpha", positive=True)
    lam1 = V.real(lam1, "lam1", nonneg=True)
    epochs = V.pos_int(epochs, "epochs")
    P = V.pos_int(partition, "partition")
    if m % P:
        raise ValueError(f"partition = {P} does not divide the sample count m = {m}")
    nparts = m // P
    coord_order = V.permutations(coord_order, "coord_order", (epochs, nparts, n))
    x0 = np.zeros(n) if x0 is None else V.finite_array(x0, "x0", 1, (n,))
    if not isinstance(refresh_z, (bool, np.bool_)):
        raise ValueError(f"refresh_z must be a bool, got {refresh_z!r}")
    use_sig = loss == "logistic"
    table = V.fmt_and_table(fmt, table, need_table=use_sig)

    losses = []
    if fmt is None:
        x = x0.copy()
        z = A @ x
        al = alpha * lam1 * P
        for e in range(epochs):
            for p in range(nparts):
                rows = slice(p * P, p * P + P)
                Ap, bp = A[rows], b[rows]
                zp = Ap @ x if refresh_z else z[rows].copy()  # Load(zAddr, z_p)
                for j in coord_order[e, p]:
                    s = _sigmoid(zp) if use_sig else zp
                    g = float(np.dot(s - bp, Ap[:, j]))
                    ag = alpha * g
                    d = x[j] - ag
                    mu = ag + al if d > al else (ag - al if d < -al else x[j])
                    x[j] = x[j] - mu
                    zp = zp - mu * Ap[:, j]
                z[rows] = zp  # Store(z_p, zAddr)
            losses.append(objective(A, b, x, loss, lam1))
        return SCDResult(x=x, z=z, loss=losses, fmt=None)

    Aq = fmt.to_fixed(A, name="A")
    bq = fmt.to_fixed(b, name="b").reshape(m, 1)
    x = fmt.to_fixed(x0, name="x0")
    alpha_q = V.nonzero_word(fmt.to_fixed(alpha, name="alpha"), "alpha", fmt, alpha)
    al_q = V.nonzero_word(fmt.to_fixed(alpha * lam1 * P, name="alpha*lam1*partition"),
                          "alpha*lam1*partition", fmt, alpha * lam1 * P)
    # z = A x0: one DotSig pass, m iterations of dimension n (single lane)
    z = ops.dot_sigmoid(fmt, np.tile(x.reshape(1, n), (m, 1)).reshape(m * n, 1),
                        Aq.reshape(m * n, 1), n, False).reshape(m, 1)
    for e in range(epochs):
        for p in range(nparts):
            rows = slice(p * P, p * P + P)
            Ap, bp = Aq[rows], bq[rows]
            if refresh_z:  # z_p = A_p x: P iterations of dimension n
                zp = ops.dot_sigmoid(fmt, np.tile(x.reshape(1, n), (P, 1)).reshape(P * n, 1),
                                     Ap.reshape(P * n, 1), n, False).reshape(P, 1)
            else:
                zp = z[rows]
            for j in coord_order[e, p]:
                col = Ap[:, j].reshape(P, 1)
                delta = ops.sigmoid_delta(fmt, zp, bp, use_sig, table)
                g = ops.dot_sigmoid(fmt, delta, col, P, False)
                mu, xj = ops.scalar_scd(fmt, g, x[j:j + 1], alpha_q, al_q)
                x[j] = xj[0]
                zp = ops.multiply_subtract(fmt, zp, mu, col)
            z[rows] = zp
        losses.append(objective(A, b, fmt.to_float(x), loss, lam1))
    return SCDResult(x=x, z=z.reshape(m), loss=losses, fmt=fmt)
