"""golden.sgd: convergence to closed-form / scikit-learn optima, bit-true tracking."""
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from golden.fixedpoint import DEFAULT, QFormat, sigmoid_table
from golden.sgd import average_fx, objective, parallel_sgd, sgd, tracking_bound

M, N = 200, 5


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (M, N))
    xt = rng.normal(size=N)
    b = A @ xt + 0.05 * rng.normal(size=M)
    bl = (rng.uniform(size=M) < 1 / (1 + np.exp(-A @ xt))).astype(float)
    order = np.array([rng.permutation(M) for _ in range(300)])
    return A, b, bl, order


def orders(rng, e, m):
    return np.array([rng.permutation(m) for _ in range(e)])


def test_ridge_converges_to_closed_form(data):
    # E[update] = -alpha*((A^T A/m + 2 lam2 I) x - A^T b/m)  =>  fixed point below
    A, b, _, order = data
    lam2 = 0.01
    xs = np.linalg.solve(A.T @ A / M + 2 * lam2 * np.eye(N), A.T @ b / M)
    r = sgd(A, b, loss="ridge", alpha=0.005, lam2=lam2, epochs=300, order=order)
    assert np.max(np.abs(r.x - xs)) < 5e-3
    assert r.loss[-1] - objective(A, b, xs, "ridge", lam2) < 1e-5
    assert len(r.loss) == 300 and r.x.dtype == np.float64


def test_ridge_minibatch(data):
    A, b, _, order = data
    lam2 = 0.01
    xs = np.linalg.solve(A.T @ A / M + 2 * lam2 * np.eye(N), A.T @ b / M)
    r = sgd(A, b, loss="ridge", alpha=0.05, lam2=lam2, epochs=300, order=order, batch=8)
    assert np.max(np.abs(r.x - xs)) < 5e-3
    rq = sgd(A, b, loss="ridge", alpha=0.05, lam2=lam2, epochs=5, order=order[:5], batch=8, fmt=DEFAULT)
    rf = sgd(A, b, loss="ridge", alpha=0.05, lam2=lam2, epochs=5, order=order[:5], batch=8)
    assert np.max(np.abs(rq.model_float - rf.x)) < 1e-3


def test_logistic_reaches_sklearn_optimum(data):
    A, _, bl, order = data
    lam2 = 0.005
    # f = mean CE + lam2 ||x||^2  ==  2 lam2 * (0.5||x||^2 + C * sum CE), C = 1/(2 lam2 m)
    w = LogisticRegression(C=1 / (2 * lam2 * M), fit_intercept=False, tol=1e-12,
                           max_iter=10000).fit(A, bl).coef_.ravel()
    r = sgd(A, bl, loss="logistic", alpha=0.02, lam2=lam2, epochs=200, order=order[:200])
    assert np.max(np.abs(r.x - w)) < 0.03
    assert r.loss[-1] - objective(A, bl, w, "logistic", lam2) < 1e-4


def test_svm_loss_decreases(data):
    A, _, bl, order = data
    bs = 2 * bl - 1
    lam2 = 0.005
    r = sgd(A, bs, loss="svm", alpha=0.05, lam2=lam2, epochs=20, order=order[:20])
    assert r.loss[-1] < 0.8 * objective(A, bs, np.zeros(N), "svm", lam2)
    assert min(r.loss[5:]) < r.loss[0]
    rq = sgd(A, bs, loss="svm", alpha=0.05, lam2=lam2, epochs=20, order=order[:20], fmt=DEFAULT)
    assert abs(rq.loss[-1] - r.loss[-1]) < 0.01


def test_ridge_bit_true_tracks_float(data):
    A, b, _, order = data
    lam2, alpha = 0.01, 0.01
    rf = sgd(A, b, loss="ridge", alpha=alpha, lam2=lam2, epochs=20, order=order[:20])
    rq = sgd(A, b, loss="ridge", alpha=alpha, lam2=lam2, epochs=20, order=order[:20], fmt=DEFAULT)
    assert rq.x.dtype == np.int64 and rq.fmt == DEFAULT
    mu = np.linalg.eigvalsh(A.T @ A / M + 2 * lam2 * np.eye(N))[0]
    bound = tracking_bound(A, alpha, lam2, DEFAULT, mu, rf.x)
    dev = np.max(np.abs(rq.model_float - rf.x))
    assert dev <= bound
    assert bound < 0.1  # the bound itself is meaningful (about 3500 LSB here)
    assert np.allclose(rq.loss, rf.loss, rtol=1e-3, atol=1e-4)


def test_logistic_bit_true_tracks_float(data):
    A, _, bl, order = data
    lam2, alpha = 0.005, 0.05
    tab = sigmoid_table(DEFAULT)
    rf = sgd(A, bl, loss="logistic", alpha=alpha, lam2=lam2, epochs=20, order=order[:20])
    rq = sgd(A, bl, loss="logistic", alpha=alpha, lam2=lam2, epochs=20, order=order[:20],
             fmt=DEFAULT, table=tab)
    s = 1 / (1 + np.exp(-A @ rf.x))
    mu = np.linalg.eigvalsh(A.T @ (A * (s * (1 - s))[:, None]) / M + 2 * lam2 * np.eye(N))[0]
    dev = np.max(np.abs(rq.model_float - rf.x))
    assert dev <= tracking_bound(A, alpha, lam2, DEFAULT, mu, rf.x, table=tab)
    assert abs(rq.loss[-1] - rf.loss[-1]) < 1e-3


def test_bit_true_is_deterministic_and_format_generic(data):
    A, b, _, order = data
    f = QFormat(24, 14)
    kw = dict(loss="ridge", alpha=0.02, lam2=0.01, epochs=2, order=order[:2], fmt=f)
    r1, r2 = sgd(A, b, **kw), sgd(A, b, **kw)
    assert np.array_equal(r1.x, r2.x) and r1.loss == r2.loss


def test_parallel_threads1_equals_sgd(data):
    A, b, bl, order = data
    for loss, y, fmt in [("ridge", b, None), ("logistic", bl, None), ("ridge", b, DEFAULT),
                         ("logistic", bl, DEFAULT)]:
        kw = dict(loss=loss, alpha=0.05, lam2=0.01, order=order[:3], fmt=fmt)
        p = parallel_sgd(A, y, threads=1, rounds=3, **kw)
        s = sgd(A, y, epochs=3, **kw)
        assert np.array_equal(p.x, s.x) and p.loss == s.loss


def test_parallel_sgd_multi_thread(data):
    A, b, _, order = data
    lam2 = 0.01
    xs = np.linalg.solve(A.T @ A / M + 2 * lam2 * np.eye(N), A.T @ b / M)
    p = parallel_sgd(A, b, threads=4, rounds=100, loss="ridge", alpha=0.02, lam2=lam2,
                     order=order[:100])
    assert np.max(np.abs(p.x - xs)) < 1e-2
    # one round by hand: 4 independent epochs from the same start, then the mean
    o = order[0]
    parts = []
    for j in range(4):
        mine = o[(o >= 50 * j) & (o < 50 * j + 50)] - 50 * j
        parts.append(sgd(A[50 * j:50 * j + 50], b[50 * j:50 * j + 50], loss="ridge", alpha=0.02,
                         lam2=lam2, epochs=1, order=mine[None]).x)
    p1 = parallel_sgd(A, b, threads=4, rounds=1, loss="ridge", alpha=0.02, lam2=lam2, order=order[:1])
    assert np.allclose(p1.x, np.mean(parts, axis=0), rtol=0, atol=1e-15)
    pq = parallel_sgd(A, b, threads=4, rounds=3, loss="ridge", alpha=0.02, lam2=lam2,
                      order=order[:3], fmt=DEFAULT, batch=2)
    pf = parallel_sgd(A, b, threads=4, rounds=3, loss="ridge", alpha=0.02, lam2=lam2,
                      order=order[:3], batch=2)
    assert np.max(np.abs(pq.model_float - pf.x)) < 1e-3


def test_average_fx_rounding():
    f = QFormat(16, 8)
    parts = np.array([[1, -1, 3, 0, f.max_int], [2, -2, 4, 1, f.max_int]])  # sums 3,-3,7,1,2max
    assert average_fx(f, parts).tolist() == [2, -1, 4, 1, f.max_int]  # halves go up
    parts3 = np.array([[1, -1, 0], [0, 0, 0], [0, -1, 1]])  # sums 1,-2,1 -> /3 -> 0,-1,0
    assert average_fx(f, parts3).tolist() == [0, -1, 0]
    rng = np.random.default_rng(3)
    for T in (2, 3, 4, 5):
        p = rng.integers(f.min_int, f.max_int, size=(T, 200), endpoint=True)
        s = p.sum(axis=0)
        ref = [(2 * int(v) + T) // (2 * T) for v in s]  # floor(v/T + 1/2), exact
        assert average_fx(f, p).tolist() == ref


@pytest.mark.parametrize("kwargs,match", [
    (dict(loss="hinge"), "loss must be one of"),
    (dict(alpha=0.0), "alpha must be > 0"),
    (dict(alpha=np.nan), "alpha must be finite"),
    (dict(lam2=-1.0), "lam2 must be >= 0"),
    (dict(epochs=0), "epochs must be a positive integer"),
    (dict(batch=0), "batch must be a positive integer"),
    (dict(batch=3), r"batch = 3 does not divide the sample count m = 8"),
    (dict(order=np.zeros((2, 8), dtype=int)), r"order\[1\] is not a permutation|order\[0\] is not"),
    (dict(order=np.tile(np.arange(8), (3, 1))), r"order has shape \(3, 8\), expected \(2, 8\)"),
    (dict(order=np.tile(np.arange(8.0), (2, 1))), "order must be an integer array"),
    (dict(x0=np.zeros(2)), r"x0 has shape \(2,\), expected \(3,\)"),
    (dict(b=np.zeros(7)), "b has 7 entries but A has 8 rows"),
    (dict(A=np.full((8, 3), np.inf)), "A contains a non-finite"),
    (dict(A=np.zeros((8, 3, 1))), "A must be 2-D"),
    (dict(loss="logistic", b=np.full(8, 2.0)), r"b \(labels\) must be 0 or 1"),
    (dict(loss="svm", b=np.zeros(8)), r"b \(labels\) must be -1 or \+1"),
    (dict(A=np.full((8, 3), 1e6), fmt=DEFAULT), "A = 1000000.0 does not fit"),
    (dict(alpha=1e-9, fmt=DEFAULT), "alpha/batch = 1e-09 quantises to 0"),
    (dict(fmt="Q16"), "fmt must be a QFormat"),
    (dict(fmt=DEFAULT, table=sigmoid_table(QFormat(16, 8))), "table was built for"),
])
def test_sgd_validation(kwargs, match):
    base = dict(A=np.zeros((8, 3)), b=np.zeros(8), loss="ridge", alpha=0.1, lam2=0.0, epochs=2,
                order=np.tile(np.arange(8), (2, 1)))
    base.update(kwargs)
    A, b = base.pop("A"), base.pop("b")
    with pytest.raises(ValueError, match=match):
        sgd(A, b, **base)


def test_parallel_validation():
    A, b = np.zeros((8, 3)), np.zeros(8)
    o = np.tile(np.arange(8), (1, 1))
    with pytest.raises(ValueError, match="threads = 3 does not divide"):
        parallel_sgd(A, b, threads=3, rounds=1, loss="ridge", alpha=0.1, lam2=0.0, order=o)
    with pytest.raises(ValueError, match="batch = 4 does not divide the per-thread"):
        parallel_sgd(A, b, threads=4, rounds=1, loss="ridge", alpha=0.1, lam2=0.0, order=o, batch=4)
    with pytest.raises(ValueError, match="rounds must be a positive integer"):
        parallel_sgd(A, b, threads=2, rounds=0, loss="ridge", alpha=0.1, lam2=0.0, order=o)


def test_vanishing_regularisation_word_raises_zero_is_legal():
    """issue 11: 2*alpha*lam2 rounding to the zero word used to switch the ridge term off
    silently (alpha rounding to zero raised); now both raise, and lam2 = 0.0 stays legal."""
    A, b = np.ones((8, 3)) * 0.25, np.full(8, 0.5)
    kw = dict(loss="ridge", alpha=0.1, epochs=1, order=np.tile(np.arange(8), (1, 1)), fmt=DEFAULT)
    with pytest.raises(ValueError, match=r"2\*alpha\*lam2 = 2e-07 quantises to 0 in Q\(W=32,F=16\)"):
        sgd(A, b, lam2=1e-6, **kw)
    r0 = sgd(A, b, lam2=0.0, **kw)                   # no regularisation: legal
    r1 = sgd(A, b, lam2=0.5 / 0.2 * DEFAULT.lsb, **kw)  # c = exactly one LSB: legal
    assert r0.x.dtype == np.int64 and r1.x.dtype == np.int64
