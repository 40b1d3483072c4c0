"""tablac.interp against the golden models: golden/sgd.py (linear, logistic, svm),
golden/cf.py and golden/mlp.py; the fixed-point primitives against golden.fixedpoint."""
import math

import numpy as np
import pytest

import tablac
from golden import sgd as gsgd
from golden.cf import cf_sgd
from golden.cosmic_pe import NL_ALL, nl_tables
from golden.fixedpoint import QFormat, pwl_fx
from golden.mlp import mlp_sgd
from tablac import interp
from tablac.dfg import PE_NAME

FMT = QFormat(32, 16)
LOSS = {"linear": "ridge", "logistic": "logistic", "svm": "svm"}


def prog(name, **over):
    return tablac.load(tablac.program_path(name), overrides=over)


@pytest.fixture(scope="module")
def glm():
    rng = np.random.default_rng(11)
    m, n = 48, 8
    A = rng.uniform(-1, 1, (m, n))
    xt = rng.normal(size=n)
    z = A @ xt
    labels = {"linear": z + 0.05 * rng.normal(size=m),
              "logistic": (rng.uniform(size=m) < 1 / (1 + np.exp(-z))).astype(float),
              "svm": np.where(z > 0, 1.0, -1.0)}
    order = np.array([rng.permutation(m) for _ in range(6)])
    return A, labels, order


# ---- primitives -----------------------------------------------------------------------
@pytest.mark.parametrize("fmt", [QFormat(32, 16), QFormat(16, 8)])
def test_fixed_primitives_equal_qformat(fmt):
    env = interp.fixed_env(fmt)
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.integers(fmt.min_int, fmt.max_int, 3000),
                        [fmt.min_int, fmt.max_int, 0, 1, -1, fmt.one, -fmt.one]])
    b = np.concatenate([rng.integers(fmt.min_int, fmt.max_int, 3000),
                        [fmt.max_int, fmt.min_int, -1, 1, fmt.one, fmt.one, 7]])
    sat, rnd = env["sat"], env["rnd"]
    got_add = [sat(int(x) + int(y)) for x, y in zip(a, b)]
    got_mul = [sat(rnd(int(x) * int(y))) for x, y in zip(a, b)]
    np.testing.assert_array_equal(got_add, fmt.add(a, b))
    np.testing.assert_array_equal(got_mul, fmt.mul(a, b))
    A, B = a[:3000].reshape(-1, 3), b[:3000].reshape(-1, 3)
    got_dot = [sat(rnd(sum(int(x) * int(y) for x, y in zip(r, s)))) for r, s in zip(A, B)]
    np.testing.assert_array_equal(got_dot, fmt.dot(A, B))
    tabs = nl_tables(fmt, NL_ALL)
    z = np.concatenate([rng.integers(fmt.min_int, fmt.max_int, 2000),
                        rng.integers(-20 * fmt.one, 20 * fmt.one, 2000)])
    for op, pe in PE_NAME.items():
        if op == "pass":
            continue
        got = [env["P_" + op](int(v)) for v in z]
        np.testing.assert_array_equal(got, pwl_fx(z, tabs[pe]), err_msg=op)


def test_evaluate_one_logistic_step_by_hand():
    g = prog("logistic", m=3)
    x, w, y = np.array([1.0, -2.0, 0.5]), np.array([0.25, 0.5, -1.0]), 1.0
    v = interp.evaluate(g, x, y, w)
    d = x @ w
    p = 1 / (1 + math.exp(-d))
    np.testing.assert_allclose(v[g.update["w"]], w - 0.05 * (p - y) * x, rtol=1e-15)
    q = interp.evaluate(g, x, y, w, fmt=FMT)
    assert q.dtype == np.int64
    np.testing.assert_allclose(FMT.to_float(q[g.update["w"]]), w - 0.05 * (p - y) * x, atol=1e-3)


# ---- golden/sgd.py -----------------------------------------------------------------------
@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("name", ["linear", "logistic", "svm"])
def test_glm_equals_golden_sgd(glm, name, threads):
    A, labels, order = glm
    g = prog(name, m=A.shape[1])
    mu = g.consts["mu"]
    b = labels[name]
    kw = dict(threads=threads, rounds=6, loss=LOSS[name], alpha=mu, lam2=0.0, order=order)
    ref_q = gsgd.parallel_sgd(A, b, fmt=FMT, **kw)
    ref_f = gsgd.parallel_sgd(A, b, **kw)
    got_q = interp.train(g, A, b, threads=threads, rounds=6, order=order, fmt=FMT)
    got_f = interp.train(g, A, b, threads=threads, rounds=6, order=order)
    # bit-true: the rounding points coincide (one exact dot, mu hoisted onto the residual)
    np.testing.assert_array_equal(got_q.model["w"], ref_q.x)
    assert np.any(ref_q.x != 0)
    # float64: the same arithmetic up to summation order
    np.testing.assert_allclose(got_f.model["w"], ref_f.x, rtol=0, atol=1e-12)
    if threads == 1:
        ref1 = gsgd.sgd(A, b, loss=LOSS[name], alpha=mu, lam2=0.0, epochs=6, order=order, fmt=FMT)
        np.testing.assert_array_equal(got_q.model["w"], ref1.x)


def _one_step(g, fmt, x, y, w):
    v = interp.evaluate(g, x, y, w, fmt=fmt, quantised=True)
    return v[g.update["w"]]


@pytest.mark.parametrize("name", ["linear", "logistic", "svm"])
def test_smaller_dot_group_single_step_bound(glm, name):
    """dot_group G < n: k = ceil(n/G) dots round k times instead of once, so
    |d_G - d_1| <= (k+1)/2 LSB.  Through the step (words, LSB = 1):
      linear:   |dw_j| <= |x_j| (mu (k+1)/2 + 1) + 1      (mul(mu, e) and mul(s, x_j) round)
      logistic: the same with (k+1)/2 replaced by L (k+1)/2 + 1, L = max PWL slope
      svm:      0 unless the margin test flips (|y d - 1| within (k+1)/2 + 1 LSB)."""
    A, labels, _ = glm
    n = A.shape[1]
    G = 3
    k = math.ceil(n / G)
    over = {"m": n, "mu": 0.25}   # a large step so that the dot's extra roundings show
    g1 = tablac.load(tablac.program_path(name), overrides=over)
    gG = tablac.load(tablac.program_path(name), overrides=over, dot_group=G)
    assert gG.ops_count()["dot"] == k - (1 if n % G == 1 else 0) and gG.ops_count()["add"] >= k - 1
    mu = g1.consts["mu"]
    L = max(nl_tables(FMT, NL_ALL)["sigmoid"].slope) / FMT.one
    rng = np.random.default_rng(2)
    worst, differs = 0.0, 0
    for s in range(A.shape[0]):
        w = FMT.to_fixed(rng.normal(size=n))
        xq, yq = FMT.to_fixed(A[s]), FMT.to_fixed(labels[name][s])
        a, b = _one_step(g1, FMT, xq, yq, w), _one_step(gG, FMT, xq, yq, w)
        xr = np.abs(A[s]) + FMT.lsb
        dd = (k + 1) / 2
        if name == "linear":
            bound = xr * (mu * dd + 1) + 1
        elif name == "logistic":
            bound = xr * (mu * (L * dd + 1) + 1) + 1
        else:
            d = FMT.dot(w, xq)
            margin = abs(int(FMT.mul(yq, d)) - FMT.one)
            bound = np.full(n, 0.0 if margin > dd + 1 else np.inf)
        diff = np.abs(a - b)
        assert np.all(diff <= bound), (s, diff, bound)
        worst = max(worst, float(np.max(diff)))
        differs += int(np.any(diff))
    if name == "linear":
        assert differs > 0   # the comparison can fail: grouping really changes the words


def test_smaller_dot_group_ridge_trajectory_bound(glm):
    """Over S steps (exact map x -> x - mu (a.x - y) a is non-expansive for mu |a|^2 <= 2, no
    saturation): |x_G - x_1|_2 <= S [ (mu (k+1)/2 + 1) |a|max + sqrt(n) ] LSB."""
    A, labels, order = glm
    m, n = A.shape
    G = 2
    k = math.ceil(n / G)
    g1 = prog("linear", m=n)
    gG = tablac.load(tablac.program_path("linear"), overrides={"m": n}, dot_group=G)
    mu = g1.consts["mu"]
    assert mu * np.max(np.sum(A * A, axis=1)) <= 2
    r1 = interp.train(g1, A, labels["linear"], rounds=3, order=order[:3], fmt=FMT)
    rG = interp.train(gG, A, labels["linear"], rounds=3, order=order[:3], fmt=FMT)
    S = 3 * m
    amax = float(np.max(np.linalg.norm(A, axis=1)))
    bound = S * ((mu * (k + 1) / 2 + 1) * amax + math.sqrt(n))
    diff = np.linalg.norm((r1.model["w"] - rG.model["w"]).astype(float))
    assert 0 < diff <= bound, (diff, bound)


# ---- golden/cf.py and golden/mlp.py ------------------------------------------------------
@pytest.mark.parametrize("lam", [0.0, 0.1])
def test_reco_equals_golden_cf(lam):
    rng = np.random.default_rng(4)
    nu, ni, k, m = 6, 5, 3, 30
    users, items = rng.integers(0, nu, m), rng.integers(0, ni, m)
    r = rng.normal(size=m)
    U0, V0 = 0.5 * rng.normal(size=(nu, k)), 0.5 * rng.normal(size=(ni, k))
    order = np.array([rng.permutation(m) for _ in range(4)])
    g = prog("reco", nu=nu, ni=ni, k=k, lam=lam)
    data = {"ou": np.eye(nu)[users], "ov": np.eye(ni)[items]}
    mu = g.consts["mu"]
    ref_q = cf_sgd(users, items, r, U0, V0, alpha=mu, lam=lam, epochs=4, order=order, fmt=FMT)
    got_q = interp.train(g, data, r, {"U": U0, "V": V0}, rounds=4, order=order, fmt=FMT)
    np.testing.assert_array_equal(got_q.model["U"], ref_q.U)
    np.testing.assert_array_equal(got_q.model["V"], ref_q.V)
    ref_f = cf_sgd(users, items, r, U0, V0, alpha=mu, lam=lam, epochs=4, order=order)
    got_f = interp.train(g, data, r, {"U": U0, "V": V0}, rounds=4, order=order)
    np.testing.assert_allclose(got_f.model["U"], ref_f.U, atol=1e-12)
    np.testing.assert_allclose(got_f.model["V"], ref_f.V, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3, 1), (5, 4, 2)])
def test_backprop_equals_golden_mlp(shape):
    ni, nh, no = shape
    rng = np.random.default_rng(6)
    m = 24
    X = rng.normal(size=(m, ni))
    Y = (rng.uniform(size=(m, no)) < 0.5).astype(float)
    W1, W2 = 0.5 * rng.normal(size=(nh, ni)), 0.5 * rng.normal(size=(no, nh))
    order = np.array([rng.permutation(m) for _ in range(3)])
    g = prog("backprop", ni=ni, nh=nh, no=no)
    mu = g.consts["mu"]
    ref_q = mlp_sgd(X, Y, W1, W2, alpha=mu, epochs=3, order=order, fmt=FMT)
    got_q = interp.train(g, X, Y, {"W1": W1, "W2": W2}, rounds=3, order=order, fmt=FMT)
    np.testing.assert_array_equal(got_q.model["W1"], ref_q.W1)
    np.testing.assert_array_equal(got_q.model["W2"], ref_q.W2)
    ref_f = mlp_sgd(X, Y, W1, W2, alpha=mu, epochs=3, order=order)
    got_f = interp.train(g, X, Y, {"W1": W1, "W2": W2}, rounds=3, order=order)
    np.testing.assert_allclose(got_f.model["W1"], ref_f.W1, atol=1e-12)
    np.testing.assert_allclose(got_f.model["W2"], ref_f.W2, atol=1e-12)


def test_sum_aggregation_and_loss_callback(glm):
    A, labels, order = glm
    text = tablac.program_path("linear").read_text().replace("/ n;", ";")
    g = tablac.compile(text, overrides={"m": A.shape[1], "n": 2})
    assert g.aggregate == {"w": ("sum", 2)}
    seen = []
    r = interp.train(g, A, labels["linear"], rounds=1, order=order[:1], fmt=FMT,
                     loss=lambda mdl: seen.append(mdl["w"].copy()) or 1.5)
    gm = prog("linear", m=A.shape[1], n=2)
    rm = interp.train(gm, A, labels["linear"], rounds=1, order=order[:1], fmt=FMT)
    # sum of two thread models = 2 x their mean up to the mean's rounding (<= 1 LSB)
    assert np.max(np.abs(r.model["w"] - 2 * rm.model["w"])) <= 1
    assert r.loss == [1.5] and np.allclose(seen[0], FMT.to_float(r.model["w"]))


@pytest.mark.parametrize("kw,msg", [
    (dict(threads=5), "does not divide"),
    (dict(rounds=0), "positive"),
    (dict(order=np.zeros((1, 48), dtype=int)), "permutation"),
])
def test_train_validation(glm, kw, msg):
    A, labels, _ = glm
    g = prog("linear", m=A.shape[1])
    args = dict(rounds=1)
    args.update(kw)
    with pytest.raises(ValueError, match=msg):
        interp.train(g, A, labels["linear"], **args)


def test_programs_approach_closed_form_and_sklearn():
    """Trained through the DFG interpreter: linear regression reaches the least-squares
    solution, logistic regression scikit-learn's unregularised optimum (bit-true run)."""
    from sklearn.linear_model import LogisticRegression
    rng = np.random.default_rng(21)
    m, n = 160, 4
    A = rng.uniform(-1, 1, (m, n))
    xt = np.array([1.0, -2.0, 0.5, 1.5])
    b = A @ xt + 0.05 * rng.normal(size=m)
    order = np.array([rng.permutation(m) for _ in range(400)])
    g = prog("linear", m=n, mu=0.02)
    r = interp.train(g, A, b, rounds=150, order=order[:150], fmt=FMT)
    xs = np.linalg.lstsq(A, b, rcond=None)[0]
    assert np.max(np.abs(FMT.to_float(r.model["w"]) - xs)) < 0.02
    bl = (rng.uniform(size=m) < 1 / (1 + np.exp(-2 * A @ xt))).astype(float)
    g = prog("logistic", m=n, mu=0.05)
    r = interp.train(g, A, bl, rounds=400, order=order, fmt=FMT, threads=4)
    sk = LogisticRegression(C=1e6, fit_intercept=False, max_iter=10000).fit(A, bl).coef_[0]
    assert np.max(np.abs(FMT.to_float(r.model["w"]) - sk)) < 0.05 * np.max(np.abs(sk))


def test_program_without_labels():
    g = tablac.compile("m = 2; model_input x[m]; model w[m]; gradient g[m]; iterator i[0:1];"
                       " learning_rate = 0.5; g[i] = w[i] - x[i];")
    v = interp.evaluate(g, np.array([1.0, 2.0]), None, np.array([3.0, 5.0]))
    np.testing.assert_array_equal(v[g.update["w"]], [2.0, 3.5])
    r = interp.train(g, np.array([[1.0, 2.0], [3.0, 4.0]]), None, rounds=1)
    # w = w - 0.5 (w - x): (0, 0) -> (0.5, 1) -> (0.5 + 1.25, 1 + 1.5)
    np.testing.assert_array_equal(r.model["w"], [1.75, 2.5])
