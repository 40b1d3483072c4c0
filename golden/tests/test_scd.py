"""golden.scd: scikit-learn optima, partition behaviour, bit-true tracking."""
import warnings

import numpy as np
import pytest
from sklearn.linear_model import Lasso, LogisticRegression

from golden.fixedpoint import DEFAULT, QFormat, sigmoid_table
from golden.scd import TRACK_K, fixed_point_violation, objective, scd, tracking_bound

M, N = 120, 8


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (M, N))
    xt = np.array([1.5, -2.0, 0.0, 0.0, 0.7, 0.0, 0.0, -1.0])
    b = A @ xt + 0.05 * rng.normal(size=M)
    bl = (rng.uniform(size=M) < 1 / (1 + np.exp(-2 * A @ xt))).astype(float)
    return A, b, bl, rng


def corder(rng, epochs, parts, n=N):
    return np.array([[rng.permutation(n) for _ in range(parts)] for _ in range(epochs)])


def test_lasso_one_partition_matches_sklearn(data):
    A, b, _, rng = data
    lam1 = 0.05  # sklearn Lasso(alpha=lam1) minimises the same f
    w = Lasso(alpha=lam1, fit_intercept=False, tol=1e-12, max_iter=100000).fit(A, b).coef_
    r = scd(A, b, loss="lasso", alpha=3 / M, lam1=lam1, epochs=60, partition=M,
            coord_order=corder(rng, 60, 1))
    assert np.max(np.abs(r.x - w)) < 1e-6
    assert r.loss[-1] - objective(A, b, w, "lasso", lam1) < 1e-9
    assert np.array_equal(r.x == 0, w == 0)  # same sparsity pattern
    assert np.allclose(r.z, A @ r.x)  # one partition: z is never stale


def test_logistic_l1_matches_sklearn(data):
    A, _, bl, rng = data
    lam1 = 0.01  # f / lam1 = ||x||_1 + C sum CE with C = 1/(lam1 m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn 1.8+ deprecates penalty=
        w = LogisticRegression(penalty="l1", solver="liblinear", C=1 / (lam1 * M),
                               fit_intercept=False, tol=1e-10, max_iter=100000).fit(A, bl).coef_.ravel()
    # alpha = 12/M ~ 1/(max_j sum_i a_ij^2 / 4): the coordinate Lipschitz step
    r = scd(A, bl, loss="logistic", alpha=12 / M, lam1=lam1, epochs=200, partition=M,
            coord_order=corder(rng, 200, 1))
    assert np.max(np.abs(r.x - w)) < 1e-4
    assert r.loss[-1] - objective(A, bl, w, "logistic", lam1) < 1e-7


def test_multiple_partitions_with_refresh_reduce_loss(data):
    A, b, _, rng = data
    lam1 = 0.01
    w = Lasso(alpha=lam1, fit_intercept=False, tol=1e-12, max_iter=100000).fit(A, b).coef_
    fstar = objective(A, b, w, "lasso", lam1)
    f0 = objective(A, b, np.zeros(N), "lasso", lam1)
    for parts in (2, 4):
        P = M // parts
        r = scd(A, b, loss="lasso", alpha=1 / P, lam1=lam1, epochs=40, partition=P,
                coord_order=corder(rng, 40, parts), refresh_z=True)
        assert r.loss[-1] < 0.2 * f0
        assert r.loss[-1] - fstar < 1e-3 * f0
        # the last partition's z was refreshed on load and kept current; the others
        # are as of their own last turn
        assert np.allclose(r.z[-P:], A[-P:] @ r.x)


def test_stale_z_literal_alg2(data):
    """Documented behaviour of the paper's stale per-partition z: two partitions holding
    the same rows each drive their own view to x*, so the shared model goes to 2 x*."""
    A, b, _, rng = data
    lam1 = 0.01
    single = scd(A, b, loss="lasso", alpha=1 / M, lam1=lam1, epochs=200, partition=M,
                 coord_order=corder(rng, 200, 1))
    A2, b2 = np.vstack([A, A]), np.concatenate([b, b])
    r = scd(A2, b2, loss="lasso", alpha=1 / M, lam1=lam1, epochs=200, partition=M,
            coord_order=corder(rng, 200, 2))
    assert np.allclose(r.x, 2 * single.x, atol=1e-6)
    assert not np.allclose(r.z, A2 @ r.x)  # z_p = A_p (x0 + D_p), not A_p x
    # each z_p holds only its own share D_p of the model change: z_1 + z_2 = A (D_1 + D_2) = A x
    assert np.allclose(r.z[:M] + r.z[M:], A @ r.x)
    # one partition: refresh changes nothing mathematically (z = A x anyway); it only
    # re-rounds z (bit-true) or re-sums it (float), so results agree to rounding
    co = corder(rng, 3, 1)
    for fmt, tol in ((None, 1e-12), (DEFAULT, 1e-3)):
        a = scd(A, b, loss="lasso", alpha=1 / M, lam1=lam1, epochs=3, partition=M, coord_order=co, fmt=fmt)
        c = scd(A, b, loss="lasso", alpha=1 / M, lam1=lam1, epochs=3, partition=M, coord_order=co, fmt=fmt,
                refresh_z=True)
        assert np.max(np.abs(a.model_float - c.model_float)) < tol


def test_lasso_bit_true_tracks_float(data):
    A, b, _, rng = data
    lam1, alpha = 0.05, 3 / M
    co = corder(rng, 100, 1)  # 100 epochs: converged (the bound is for a converged run)
    rf = scd(A, b, loss="lasso", alpha=alpha, lam1=lam1, epochs=100, partition=M, coord_order=co)
    rq = scd(A, b, loss="lasso", alpha=alpha, lam1=lam1, epochs=100, partition=M, coord_order=co, fmt=DEFAULT)
    assert rq.x.dtype == np.int64 and rq.z.dtype == np.int64
    mu = np.linalg.eigvalsh(A.T @ A / M)[0]
    bound = tracking_bound(A, b, rq, loss="lasso", alpha=alpha, lam1=lam1, mu=mu)
    assert np.max(np.abs(rq.model_float - rf.x)) <= bound < 2e-3  # measured 3.9e-5, bound 1.5e-3
    assert np.array_equal(rq.x == 0, rf.x == 0)


def test_logistic_bit_true_tracks_float(data):
    A, _, bl, rng = data
    lam1, alpha = 0.01, 8 / M
    tab = sigmoid_table(DEFAULT)
    co = corder(rng, 200, 1)  # logistic converges more slowly
    rf = scd(A, bl, loss="logistic", alpha=alpha, lam1=lam1, epochs=200, partition=M, coord_order=co)
    rq = scd(A, bl, loss="logistic", alpha=alpha, lam1=lam1, epochs=200, partition=M, coord_order=co,
             fmt=DEFAULT, table=tab)
    s = 1 / (1 + np.exp(-A @ rf.x))
    mu = np.linalg.eigvalsh(A.T @ (A * (s * (1 - s))[:, None]) / M)[0]
    bound = tracking_bound(A, bl, rq, loss="logistic", alpha=alpha, lam1=lam1, mu=mu, table=tab)
    assert np.max(np.abs(rq.model_float - rf.x)) <= bound
    assert abs(rq.loss[-1] - rf.loss[-1]) < 1e-3


def test_multi_partition_bit_true_tracks_float(data):
    A, b, _, rng = data
    co = corder(rng, 5, 4)
    for refresh in (False, True):
        kw = dict(loss="lasso", alpha=1 / 30, lam1=0.01, epochs=5, partition=30, coord_order=co,
                  refresh_z=refresh)
        rf = scd(A, b, **kw)
        rq = scd(A, b, fmt=DEFAULT, **kw)
        assert np.max(np.abs(rq.model_float - rf.x)) < 1e-3
        assert np.max(np.abs(DEFAULT.to_float(rq.z) - rf.z)) < 1e-3


@pytest.mark.parametrize("kwargs,match", [
    (dict(loss="ridge"), "loss must be one of"),
    (dict(alpha=-1.0), "alpha must be > 0"),
    (dict(lam1=np.inf), "lam1 must be finite"),
    (dict(epochs=-1), "epochs must be a positive integer"),
    (dict(partition=0), "partition must be a positive integer"),
    (dict(partition=3), "partition = 3 does not divide the sample count m = 8"),
    (dict(coord_order=np.zeros((2, 2, 3), dtype=int)), r"coord_order\[0, 0\]|coord_order\[0\, 0\]|coord_order\[0, 0]"),
    (dict(coord_order=np.tile(np.arange(3), (2, 1, 1))), r"coord_order has shape \(2, 1, 3\), expected \(2, 2, 3\)"),
    (dict(b=np.zeros((8, 1))), "b must be 1-D"),
    (dict(b=np.full(8, np.nan)), "b contains a non-finite"),
    (dict(loss="logistic", b=-np.ones(8)), r"b \(labels\) must be 0 or 1"),
    (dict(x0=np.zeros(4)), r"x0 has shape \(4,\)"),
    (dict(b=np.full(8, 1e5), fmt=DEFAULT), "b = 100000.0 does not fit"),
    (dict(alpha=1e-7, fmt=DEFAULT), "alpha = 1e-07 quantises to 0"),
    (dict(refresh_z="yes"), "refresh_z must be a bool"),
])
def test_scd_validation(kwargs, match):
    base = dict(A=np.zeros((8, 3)), b=np.zeros(8), loss="lasso", alpha=0.1, lam1=0.0, epochs=2,
                partition=4, coord_order=np.tile(np.arange(3), (2, 2, 1)))
    base.update(kwargs)
    A, b = base.pop("A"), base.pop("b")
    with pytest.raises(ValueError, match=match):
        scd(A, b, **base)


def test_small_format_runs():
    rng = np.random.default_rng(4)
    A = rng.uniform(-1, 1, (16, 3))
    b = A @ np.array([0.5, -0.5, 0.0])
    r = scd(A, b, loss="lasso", alpha=0.25, lam1=0.01, epochs=10, partition=8,
            coord_order=corder(rng, 10, 2, 3), fmt=QFormat(16, 10), refresh_z=True)
    assert r.loss[-1] < 0.2 * objective(A, b, np.zeros(3), "lasso", 0.01)


def test_vanishing_threshold_word_raises_zero_is_legal():
    """issue 11: alpha*lam1*P rounding to the zero word used to drop the L1 term silently
    (alpha rounding to zero raised); now both raise, and lam1 = 0.0 stays legal."""
    rng = np.random.default_rng(3)
    A = rng.uniform(-1, 1, (8, 3))
    b = A @ np.array([0.5, 0.0, -0.25])
    kw = dict(loss="lasso", alpha=0.1, epochs=2, partition=4, coord_order=corder(rng, 2, 2, 3), fmt=DEFAULT)
    with pytest.raises(ValueError, match=r"alpha\*lam1\*partition = 4e-0?8 quantises to 0 in Q\(W=32,F=16\)"):
        scd(A, b, lam1=1e-7, **kw)
    r = scd(A, b, lam1=0.0, **kw)                    # no regularisation: legal
    assert r.x.dtype == np.int64
    scd(A, b, lam1=DEFAULT.lsb / 0.4, **kw)          # the word is exactly one LSB: legal


# ---- issue 11: the tracking bound after convergence, large lam1 * P ----------------------
def _lasso_problem(rng, m, n, noise=0.05):
    A = rng.uniform(-1, 1, (m, n))
    xt = 1.5 * rng.normal(size=n)
    xt[::2] = 0.0
    return A, A @ xt + noise * rng.normal(size=m)


def _old_bound(A, alpha, P, fmt, mu):
    """The bound this module documented before issue 11 (its threshold term was LSB)."""
    n, amax = A.shape[1], float(np.max(np.abs(A)))
    rnd = (P * amax + 3.0) / 2.0 * fmt.lsb * alpha * np.sqrt(n)
    return TRACK_K * (rnd + fmt.lsb) / (alpha * P * mu)


def _check_lasso_bound(A, b, lam1, alpha, epochs, rng, fmt=DEFAULT):
    m, n = A.shape
    co = corder(rng, epochs, 1, n)
    kw = dict(loss="lasso", alpha=alpha, lam1=lam1, epochs=epochs, partition=m, coord_order=co)
    rf = scd(A, b, **kw)
    rq = scd(A, b, fmt=fmt, **kw)
    # converged: at a fixed point or in a limit cycle of a few LSB
    assert np.max(fixed_point_violation(A, b, rq, loss="lasso", alpha=alpha, lam1=lam1)) <= 4
    mu = np.linalg.eigvalsh(A.T @ A / m)[0]
    bound = tracking_bound(A, b, rq, loss="lasso", alpha=alpha, lam1=lam1, mu=mu)
    dev = float(np.max(np.abs(rq.model_float - rf.x)))
    assert dev <= bound, (dev, bound)
    # the inequality itself (no safety factor) against the true optimum
    w = Lasso(alpha=lam1, fit_intercept=False, tol=1e-14, max_iter=200000).fit(A, b).coef_ \
        if lam1 > 0 else np.linalg.lstsq(A, b, rcond=None)[0]
    assert np.linalg.norm(rq.model_float - w) <= bound / TRACK_K + 1e-9
    return dev, bound, rf, rq, mu


def test_bound_holds_for_the_issue_configuration():
    """m = P = 512, lam1 = 0.2, alpha = 192.49/65536 (alpha's word 0.49 LSB off), 150
    epochs: measured 1.6e-3; the old bound (2.3e-4 here) was false, the derived one holds."""
    rng = np.random.default_rng(1)
    A, b = _lasso_problem(rng, 512, 8)
    alpha = 192.49 / 65536
    dev, bound, rf, rq, mu = _check_lasso_bound(A, b, 0.2, alpha, 150, rng)
    assert dev > _old_bound(A, alpha, 512, DEFAULT, mu)   # the defect of issue 11
    # the dominant term is LSB/2 * lam1 * P / alpha_q in units of g: check the bound is not
    # vacuous -- a float reference whose lam1 is 5 % off is caught
    other = scd(A, b, loss="lasso", alpha=alpha, lam1=0.21, epochs=150, partition=512,
                coord_order=corder(np.random.default_rng(2), 150, 1))
    assert np.max(np.abs(rq.model_float - other.x)) > bound


@pytest.mark.parametrize("seed", range(6))
def test_bound_holds_for_random_configurations(seed):
    rng = np.random.default_rng(100 + seed)
    m = int(rng.choice([32, 64, 128, 256]))
    n = int(rng.integers(2, 11))
    fmt = DEFAULT if seed % 2 == 0 else QFormat(24, 12)
    A, b = _lasso_problem(rng, m, n)
    lam1 = 0.0 if seed == 3 else float(rng.uniform(0.01, 0.3))
    # step between 0.3 and 1.2 over the coordinate curvature sum_i a_ij^2 (~ m/3)
    alpha = float(rng.uniform(0.9, 3.6)) / m
    _check_lasso_bound(A, b, lam1, alpha, 300, rng, fmt)


def test_fixed_point_violation_measures_convergence(data):
    A, b, _, _ = data
    kw = dict(loss="lasso", alpha=3 / M, lam1=0.05, partition=M)
    # Coordinate orders from their own generators: the module fixture's shared rng would
    # make them depend on which tests ran before in this worker (xdist order).  Six orders:
    # after 150 epochs some end at a fixed point (violation 0), others in a 1-LSB limit
    # cycle (fixed_point_violation's docstring); both kinds are among these seeds.
    fixed = []
    for seed in range(6):
        co = corder(np.random.default_rng(seed), 150, 1)
        early = scd(A, b, fmt=DEFAULT, epochs=2, coord_order=co[:2], **kw)
        late = scd(A, b, fmt=DEFAULT, epochs=150, coord_order=co, **kw)
        v_early = fixed_point_violation(A, b, early, loss="lasso", alpha=3 / M, lam1=0.05)
        v_late = fixed_point_violation(A, b, late, loss="lasso", alpha=3 / M, lam1=0.05)
        assert np.max(v_early) > 100 and np.max(v_late) <= 2
        # violation 0 exactly when one more epoch (here: a reversed order) changes nothing
        more = scd(A, b, fmt=DEFAULT, epochs=151, coord_order=np.concatenate([co, co[:1, :, ::-1]]),
                   **kw)
        assert np.array_equal(more.x, late.x) == (np.max(v_late) == 0)
        if np.max(v_late) == 0:
            fixed.append((co, early, late))
    assert 0 < len(fixed) < 6   # both outcomes exercised, so the equivalence is tested both ways
    co, early, late = fixed[0]
    # the violation enters the bound: far from convergence the bound is much larger
    mu = np.linalg.eigvalsh(A.T @ A / M)[0]
    assert tracking_bound(A, b, early, loss="lasso", alpha=3 / M, lam1=0.05, mu=mu) > \
        10 * tracking_bound(A, b, late, loss="lasso", alpha=3 / M, lam1=0.05, mu=mu)
    with pytest.raises(ValueError, match="bit-true path"):
        tracking_bound(A, b, scd(A, b, epochs=2, coord_order=co[:2], **kw), loss="lasso", alpha=3 / M,
                       lam1=0.05, mu=mu)
