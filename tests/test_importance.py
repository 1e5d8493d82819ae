"""Issue 31: the query proposal of S5 (tilt, weights) against numpy / scipy references and Monte Carlo."""
import numpy as np
import pytest
from scipy import optimize

from softlin import concentration as conc
from softlin import importance
from softlin import tasks as T
from softlin.claims import curves
from softlin.params import Params
from symbolic.export import s5

from helpers import spd


def _tilt_ref(lams, L):
    """Independent reference: brentq on sum_i lam_i / (1 - 2 t lam_i) = log L, capped at 1."""
    lams = np.asarray(lams)
    f = lambda t: np.sum(lams / (1 - 2 * t * lams)) - np.log(L)  # noqa: E731
    if f(0) >= 0:
        return 0.0
    hi = 0.5 / lams.max() * (1 - 1e-15)
    if hi > 1 and f(1.0) <= 0:
        return 1.0
    return optimize.brentq(f, 0, min(hi, 1.0), xtol=1e-14)


@pytest.mark.parametrize("lams", [[0.1, 0.1, 0.1], [0.45, 0.45, 0.45], [0.577] * 3, [1.0, 0.3, 0.05], [1.5, 1.5, 0.7]])
def test_tilt_solves_the_stationarity_equation(lams):
    t = s5.importance_tilt(lams, 2 ** 16)
    assert t == pytest.approx(_tilt_ref(lams, 2 ** 16), abs=1e-10)
    assert 0 < t <= 1 and 2 * t * max(lams) < 1


def test_tilt_zero_is_the_plain_sample():
    tk = T.sample(3, 3, np.diag([2.0, 1.0, 0.5]), 4, 3, 16)
    same, log_w = importance.tilted_queries(tk, np.eye(3), 0.0)
    assert same is tk and np.all(log_w == 0)


def test_proposal_law_and_weights_against_monte_carlo():
    """x_q ~ N(0, (Sigma^-1 - 2 t K)^-1) (sample covariance), E_q[w] = 1 and E_q[w exp(0.2 s)] =
    det(I - 0.4 M)^-1/2 (numpy eigenvalues), within 5 Monte Carlo standard errors."""
    rng = np.random.default_rng(31)
    S, A = spd(rng, 3), rng.normal(size=(3, 3))
    A *= np.sqrt(0.7 / importance.eigenvalues_M(A, S).max())       # lambda_max(M) = 0.7
    t = s5.importance_tilt(importance.eigenvalues_M(A, S), 2 ** 16)
    tk = T.sample(5, 3, S, 20000, 4, 1)
    tq, log_w = importance.tilted_queries(tk, A, t)
    K = A.T @ S @ A
    x = tq.xq[: tk.n_pairs].reshape(-1, 3)
    cov = np.linalg.inv(np.linalg.inv(S) - 2 * t * K)
    assert np.allclose(x.T @ x / len(x), cov, atol=5 * np.sqrt(2 * np.max(np.diag(cov)) ** 2 / len(x)))
    w = np.exp(log_w[: tk.n_pairs]).ravel()
    s = np.einsum("ni,ij,nj->n", x, K, x)
    r = np.linalg.eigvalsh(T.sqrtm_sym(S) @ K @ T.sqrtm_sym(S))
    for h, ref in ((np.ones_like(s), 1.0), (np.exp(0.2 * s), np.prod(1 - 0.4 * r) ** -0.5)):
        est = w * h
        assert abs(est.mean() - ref) < 5 * est.std() / np.sqrt(est.size)


def test_weighted_gap_has_the_plain_mean():
    """At lambda_max(M) = 0.1 (both estimators with finite variance) the weighted mean squared gap
    with t = 1 and the plain one, on independent blocks, agree within 4 combined standard errors."""
    S = np.diag([2.0, 1.0, 0.5])
    A = np.linalg.inv(S)
    A *= np.sqrt(0.1 / importance.eigenvalues_M(A, S).max())
    U = np.zeros((4, 4))
    U[:3, :3] = A
    probe = dict(U=U.tolist(), v=np.eye(4)[3].tolist())
    Ls = [8, 64]
    plain = np.array([conc.output_sq_gaps([probe], tk, Ls)[0] for tk in conc.task_blocks(1, 30, S, 16, 4, 64)])
    imp = np.array([conc.weighted_output_sq_gaps([probe], tk, Ls, [1.0])[0][0]
                    for tk in conc.task_blocks(2, 30, S, 16, 4, 64)])
    z = (plain.mean(0) - imp.mean(0)) / np.sqrt(plain.var(0, ddof=1) / 30 + imp.var(0, ddof=1) / 30)
    assert np.all(np.abs(z) < 4)
    # and the gradient gaps: the same at t = 0 as the plain call, bit for bit
    p = Params(U, np.eye(4)[3])
    tk = next(conc.task_blocks(3, 1, S, 4, 2, 64))
    a, b = conc.grad_gaps_per_query([p], tk, Ls), conc.grad_gaps_per_query([p], tk, Ls, [0.0], with_terms=True)
    assert all(np.array_equal(x, y) for x, y in zip(a, b[:3]))


def test_effective_sample_size_and_share():
    x = np.array([1.0, 1.0, 2.0, 0.0])
    assert importance.kish_ess(importance.sums(x)) == pytest.approx(16 / 6)
    assert importance.largest_share([1.0, 3.0]) == 0.75
    assert np.array_equal(importance.unit_terms(np.array([[1.0, 2.0], [3.0, 4.0]])), [2.0, 3.0])
    d = curves.estimator_diagnostics([1.0] * 8, 0.0, None, 0.3)
    assert d["se_lower_bound"] and d["df"] == 7 and d["estimator"] == "blocks"
    d = curves.estimator_diagnostics([1.0] * 7 + [10.0], 0.5, None, 0.3)
    assert d["se_lower_bound"] and d["estimator"] == "importance"
    assert not curves.estimator_diagnostics([1.0] * 8, 0.5, None, 0.3)["se_lower_bound"]


def test_capped_model_against_monte_carlo_and_its_asymptotic_slope():
    """exponent.capped_mean_square vs a Monte Carlo of min(kappa, expm1(lam u) / L), u ~ chi^2_3 (5 se);
    its finite-L slope is shallower than -beta near the threshold and tends to -beta at large L
    (within the logarithmic correction ~ 1 / (2 log L))."""
    from softlin.claims import exponent

    rng = np.random.default_rng(7)
    u = rng.chisquare(3, size=400_000)
    for lam, L, kappa in ((0.3, 1e3, 1.0), (0.8, 1e4, 0.25), (1.5, 1e4, 4.0)):
        x = np.minimum(kappa, np.expm1(lam * u) / L)
        assert abs(exponent.capped_mean_square(lam, L, kappa, 3) - x.mean()) < 5 * x.std() / np.sqrt(x.size)
    fit = 2.0 ** np.arange(10, 17)
    for lam in (0.6, 1.0):
        beta = min(0.5, 1 / (4 * lam))
        assert exponent.predicted_slope(lam, fit, 1.0, 3) > -beta + 0.02
        far = np.logspace(30, 34, 5)
        assert abs(exponent.predicted_slope(lam, far, 1.0, 3) + beta) < 1 / (2 * np.log(1e30)) + 0.01
    lo, hi = exponent.band(0.1, fit, (0.25, 4.0), 3)
    assert lo == pytest.approx(-0.5, abs=1e-3) and hi == pytest.approx(-0.5, abs=1e-3)
