"""golden.lrmf: planted low-rank recovery and bit-true tracking."""
import numpy as np
import pytest

from golden.fixedpoint import DEFAULT
from golden.lrmf import LRMF_TRACK, lrmf, objective, schedule

m, u, d, SIGMA = 30, 40, 3, 0.05


@pytest.fixture(scope="module")
def planted():
    rng = np.random.default_rng(3)
    Mt = rng.normal(size=(m, d)) / d ** 0.25
    Ut = rng.normal(size=(u, d)) / d ** 0.25
    X = Mt @ Ut.T + SIGMA * rng.normal(size=(m, u))
    r, c = np.divmod(np.arange(m * u), u)
    perm = rng.permutation(m * u)
    ntr = int(0.8 * m * u)
    tr, te = perm[:ntr], perm[ntr:]
    M0 = rng.uniform(-0.5, 0.5, (m, d))
    eo = rng.permutation(ntr)
    return dict(r=r, c=c, X=X, tr=tr, te=te, M0=M0, eo=eo)


def run(p, epochs, fmt=None, **kw):
    tr = p["tr"]
    args = dict(m=m, u=u, d=d, alpha=0.05, lam=1e-4, epochs=epochs, tile=8, M0=p["M0"],
                entry_order=p["eo"], fmt=fmt)
    args.update(kw)
    return lrmf(p["r"][tr], p["c"][tr], p["X"].flat[tr], **args)


def test_heldout_rmse_reaches_noise_level(planted):
    p = planted
    res = run(p, 40)
    te = p["te"]
    held = np.sqrt(np.mean((res.predict(p["r"][te], p["c"][te]) - p["X"].flat[te]) ** 2))
    base = np.sqrt(np.mean(p["X"].flat[te] ** 2))
    # threshold: held-out RMSE below 1.5x the noise std (predicting 0 gives ~1.1)
    assert held < 1.5 * SIGMA < 0.1 * base
    assert res.rmse[-1] < 1.2 * SIGMA and res.rmse[-1] < res.rmse[0] / 10
    assert len(res.loss) == len(res.rmse) == 40 and res.loss[-1] < res.loss[0]
    M, U = res.model_float
    lo, rm = objective(p["r"][p["tr"]], p["c"][p["tr"]], p["X"].flat[p["tr"]], M, U, 1e-4)
    assert lo == res.loss[-1] and rm == res.rmse[-1]


def test_bit_true_tracks_float(planted):
    p = planted
    rf = run(p, 12)
    rq = run(p, 12, fmt=DEFAULT)
    assert rq.M.dtype == np.int64 and rq.U.dtype == np.int64
    dev = np.max(np.abs(rq.predict(p["r"], p["c"]) - rf.predict(p["r"], p["c"])))
    assert dev <= LRMF_TRACK
    assert abs(rq.rmse[-1] - rf.rmse[-1]) < 1e-3


def test_schedule_tiles_and_order():
    rows = np.array([0, 5, 1, 4, 2, 0])
    cols = np.array([4, 0, 1, 4, 0, 0])
    eo = np.array([5, 4, 3, 2, 1, 0])  # reverse input order
    seq = schedule(rows, cols, 6, 5, 3, eo)
    # tiles (row tile, col tile): k0 (0,1) k1 (1,0) k2 (0,0) k3 (1,1) k4 (0,0) k5 (0,0)
    assert seq.tolist() == [5, 4, 2, 0, 1, 3]


def test_partial_tiles_and_u_uses_updated_m():
    # one entry: check the update by hand, incl. U using the new M row (Alg. 3 line 15)
    M0 = np.array([[0.5, -0.25]])
    U0 = np.array([[0.25, 0.5]])
    alpha, lam = 0.1, 0.01
    res = lrmf([0], [0], [1.0], m=1, u=1, d=2, alpha=alpha, lam=lam, epochs=1, tile=4, M0=M0, U0=U0)
    e = alpha * (M0[0] @ U0[0] - 1.0)
    Mn = M0[0] - e * U0[0] - lam * M0[0]
    Un = U0[0] - e * Mn - lam * U0[0]
    assert np.allclose(res.M[0], Mn, rtol=0, atol=1e-15) and np.allclose(res.U[0], Un, rtol=0, atol=1e-15)
    rq = lrmf([0], [0], [1.0], m=1, u=1, d=2, alpha=alpha, lam=lam, epochs=1, tile=4, M0=M0, U0=U0,
              fmt=DEFAULT)
    assert np.max(np.abs(rq.model_float[1] - Un)) < 4 * DEFAULT.lsb
    # m, u not multiples of the tile; every entry is visited once per epoch
    rng = np.random.default_rng(0)
    rows, cols = rng.integers(0, 7, 20), rng.integers(0, 5, 20)
    r1 = lrmf(rows, cols, rng.normal(size=20), m=7, u=5, d=2, alpha=0.05, lam=0.0, epochs=2, tile=3,
              M0=rng.uniform(-1, 1, (7, 2)))
    assert np.all(np.isfinite(r1.M)) and len(r1.rmse) == 2


@pytest.mark.parametrize("kwargs,match", [
    (dict(m=0), "m must be a positive integer"),
    (dict(tile=0), "tile must be a positive integer"),
    (dict(epochs=1.5), "epochs must be a positive integer"),
    (dict(alpha=0.0), "alpha must be > 0"),
    (dict(lam=-0.1), "lam must be >= 0"),
    (dict(rows=[0, 3]), r"rows must lie in \[0, m=3\)"),
    (dict(cols=[-1, 0]), r"cols must lie in \[0, u=2\)"),
    (dict(rows=[0]), r"rows has shape \(1,\), expected \(2,\)"),
    (dict(vals=[1.0, np.nan]), "vals contains a non-finite"),
    (dict(M0=np.zeros((2, 2))), r"M0 has shape \(2, 2\), expected \(3, 2\)"),
    (dict(U0=np.zeros((2, 3))), r"U0 has shape \(2, 3\), expected \(2, 2\)"),
    (dict(entry_order=[0, 0]), "entry_order is not a permutation of range"),
    (dict(vals=[1.0, 5e4], fmt=DEFAULT), "vals = 50000.0 does not fit"),
    (dict(fmt=16), "fmt must be a QFormat"),
])
def test_lrmf_validation(kwargs, match):
    base = dict(rows=[0, 1], cols=[0, 1], vals=[1.0, 2.0], m=3, u=2, d=2, alpha=0.1, lam=0.0,
                epochs=1, tile=2, M0=np.zeros((3, 2)))
    base.update(kwargs)
    rows, cols, vals = base.pop("rows"), base.pop("cols"), base.pop("vals")
    with pytest.raises(ValueError, match=match):
        lrmf(rows, cols, vals, **base)


def test_vanishing_lambda_word_raises_zero_is_legal():
    """issue 11: lam rounding to the zero word used to switch the shrink off silently
    (alpha rounding to zero raised); now both raise, and lam = 0.0 stays legal."""
    kw = dict(m=3, u=2, d=2, alpha=0.1, epochs=1, tile=2, M0=np.full((3, 2), 0.5),
              U0=np.full((2, 2), 0.5), fmt=DEFAULT)
    with pytest.raises(ValueError, match=r"lam = 1e-06 quantises to 0 in Q\(W=32,F=16\)"):
        lrmf([0, 1], [0, 1], [1.0, 2.0], lam=1e-6, **kw)
    r = lrmf([0, 1], [0, 1], [1.0, 2.0], lam=0.0, **kw)
    assert r.M.dtype == np.int64
    lrmf([0, 1], [0, 1], [1.0, 2.0], lam=DEFAULT.lsb, **kw)
