"""golden.cf: planted low-rank recovery, bit-true tracking, input validation."""
import numpy as np
import pytest

from golden.cf import cf_loss, cf_sgd
from golden.fixedpoint import QFormat

FMT = QFormat(32, 16)


@pytest.fixture(scope="module")
def planted():
    rng = np.random.default_rng(7)
    nu, ni, k = 12, 10, 2
    Us, Vs = rng.normal(size=(nu, k)), rng.normal(size=(ni, k))
    R = Us @ Vs.T
    mask = rng.uniform(size=(nu, ni)) < 0.7
    users, items = np.nonzero(mask)
    held = np.argwhere(~mask)
    U0, V0 = 0.3 * rng.normal(size=(nu, k)), 0.3 * rng.normal(size=(ni, k))
    order = np.array([rng.permutation(len(users)) for _ in range(300)])
    return users, items, R[users, items], U0, V0, order, R, held


def test_recovers_planted_low_rank_matrix(planted):
    users, items, r, U0, V0, order, R, held = planted
    res = cf_sgd(users, items, r, U0, V0, alpha=0.05, epochs=300, order=order)
    assert res.loss[-1] < 1e-4 < res.loss[0]          # observed entries fitted
    pred = res.U @ res.V.T
    # unobserved entries of the rank-2 matrix are predicted (generalisation, not memorised)
    err = np.abs(pred[held[:, 0], held[:, 1]] - R[held[:, 0], held[:, 1]])
    assert np.median(err) < 0.1 * np.median(np.abs(R))


def test_bit_true_tracks_float(planted):
    users, items, r, U0, V0, order, _, _ = planted
    f = cf_sgd(users, items, r, U0, V0, alpha=0.05, lam=0.01, epochs=40, order=order[:40])
    q = cf_sgd(users, items, r, U0, V0, alpha=0.05, lam=0.01, epochs=40, order=order[:40], fmt=FMT)
    assert q.U.dtype == np.int64
    Uq, Vq = q.factors_float()
    # per step 3 roundings of LSB/2 per element; errors contract near the optimum
    assert np.max(np.abs(Uq - f.U)) < 200 * FMT.lsb
    assert np.max(np.abs(Vq - f.V)) < 200 * FMT.lsb
    assert abs(q.loss[-1] - f.loss[-1]) < 1e-3


def test_one_bit_true_step_by_hand():
    # one sample, lam = 0: e = dot - r; s = mul(alpha, e); U -= mul(s, V); V -= mul(s, U_old)
    U0, V0 = np.array([[0.5, -0.25]]), np.array([[1.0, 0.75]])
    q = cf_sgd([0], [0], [2.0], U0, V0, alpha=0.5, epochs=1, order=[[0]], fmt=FMT)
    e = 0.5 * 1.0 - 0.25 * 0.75 - 2.0                      # -1.6875, exact in Q16
    s = 0.5 * e
    np.testing.assert_array_equal(FMT.to_float(q.U), U0 - s * V0)
    np.testing.assert_array_equal(FMT.to_float(q.V), V0 - s * U0)
    assert cf_loss([0], [0], [2.0], U0, V0) == pytest.approx(0.5 * e * e)


@pytest.mark.parametrize("kw,msg", [
    (dict(users=[0, 5]), "users must index"),
    (dict(items=[-1, 0]), "items must index"),
    (dict(alpha=0.0), "alpha"),
    (dict(lam=-1.0), "lam"),
    (dict(order=[[0, 0]]), "permutation"),
    (dict(r=[1.0, np.nan]), "non-finite"),
    (dict(V0=np.ones((2, 3))), "factors"),
    (dict(alpha=1e-9, fmt=FMT), "quantises to 0"),
    (dict(lam=1e-9, fmt=FMT), r"lam = 1e-09 quantises to 0"),   # issue 11: used to vanish silently
])
def test_validation(kw, msg):
    args = dict(users=[0, 1], items=[1, 0], r=[1.0, 2.0], U0=np.ones((2, 2)), V0=np.ones((2, 2)),
                alpha=0.1, epochs=1, order=[[1, 0]])
    args.update(kw)
    with pytest.raises(ValueError, match=msg):
        cf_sgd(**args)


def test_zero_lambda_is_legal_bit_true():
    """issue 11: a regulariser of exactly 0.0 is no regularisation, not an error."""
    r = cf_sgd([0, 1], [1, 0], [1.0, 2.0], np.ones((2, 2)), np.ones((2, 2)), alpha=0.1, lam=0.0,
               epochs=1, order=[[1, 0]], fmt=FMT)
    assert r.U.dtype == np.int64
