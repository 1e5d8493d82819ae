"""S6: C5's baselines (GD, linear class optimum, Bayes posterior, infinite prompt) against least squares and Monte Carlo."""

import numpy as np
import pytest

from softlin.numpy_reference import sqrtm_sym as sqrtm  # the independent reference's Sigma^(1/2)
from symbolic.export import s6

from helpers import fd_grad, gamma_w_np, spd


def _kms(d, rho=0.5):
    i = np.arange(d)
    return rho ** np.abs(i[:, None] - i[None, :])


def _c5_modes(d=5):
    """(label, prompt root, query root): the correct task and the authors' slip (lower Cholesky C applied twice)."""
    S = _kms(d)
    C = np.linalg.cholesky(S)
    return [("correct", sqrtm(S), sqrtm(S)), ("as_in_authors_code", C @ C, np.eye(d))]


def _c5_sample(rng, n, L, rp, rq, s2, wv):
    """numpy sampler of the C5 law (independent of softlin.online): X (n, L, d), y (n, L), xq, yq, w."""
    d = rp.shape[0]
    w = rng.normal(size=(n, d)) * np.sqrt(wv)
    X = rng.normal(size=(n, L, d)) @ rp.T
    y = np.einsum("nld,nd->nl", X, w) + rng.normal(size=(n, L)) * np.sqrt(s2)
    xq = rng.normal(size=(n, d)) @ rq.T
    yq = np.einsum("nd,nd->n", xq, w) + rng.normal(size=n) * np.sqrt(s2)
    return X, y, xq, yq, w


@pytest.mark.parametrize("mode", [0, 1])
def test_s6_gd_risk_against_monte_carlo(mode):
    """S6 one-step GD risk vs a numpy Monte Carlo of the C5 law (d = 5, both covariance modes), within 4 SE."""
    label, rp, rq = _c5_modes()[mode]
    rng = np.random.default_rng(60 + mode)
    L, s2, wv, n = 7, 0.1, 0.2, 200_000
    X, y, xq, yq, _ = _c5_sample(rng, n, L, rp, rq, s2, wv)
    Sp, Sq = rp @ rp.T, rq @ rq.T
    f = np.einsum("ni,ij,nj->n", xq, np.linalg.inv(Sp), np.einsum("nld,nl->nd", X, y) / L)
    e = (f - yq) ** 2
    closed = s6.gd_risk_fn()(L, Sp, Sq, s2, wv)
    assert abs(e.mean() - closed) < 4 * e.std() / np.sqrt(n), (label, e.mean(), closed)
    # the batched predictor equals the explicit numpy formula
    G_xy = np.einsum("nld,nl->nd", X[:50], y[:50]) / L
    assert np.allclose(s6.gd_predict_fn()(G_xy, xq[:50], Sp), f[:50], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", [0, 1])
def test_s6_linear_class_optimum_against_least_squares(mode):
    """S6 class optimum P*(L) vs the least-squares fit of y_q on the features vec(x_q h^T) of a numpy sample
    of the C5 law (d = 3), and R*(L) vs the Monte Carlo risk of x_q^T P* h (4 SE), both modes."""
    label, rp, rq = _c5_modes(3)[mode]
    rng = np.random.default_rng(90 + mode)
    L, s2, wv, n = 6, 0.1, 0.3, 400_000
    X, y, xq, yq, _ = _c5_sample(rng, n, L, rp, rq, s2, wv)
    Sp, Sq = rp @ rp.T, rq @ rq.T
    h = np.einsum("nld,nl->nd", X, y) / L
    F = np.einsum("ni,nj->nij", xq, h).reshape(n, -1)
    P_ls = np.linalg.lstsq(F, yq, rcond=None)[0].reshape(3, 3)
    P = s6.linear_class_precond_fn()(L, Sp, s2, wv)
    assert np.allclose(P_ls, P, atol=0.03), (label, P_ls, P)
    e = (np.einsum("ni,ij,nj->n", xq, P, h) - yq) ** 2
    closed = s6.linear_class_risk_fn()(L, Sp, Sq, s2, wv)
    assert abs(e.mean() - closed) < 4 * e.std() / np.sqrt(n), (label, e.mean(), closed)
    assert closed < s6.gd_risk_fn()(L, Sp, Sq, s2, wv)


def test_s6_bayes_posterior_against_numpy_and_monte_carlo():
    """Posterior mean == numpy.linalg.solve of the ridge system; the mean conditional Bayes risk == Monte Carlo
    risk of the posterior mean (4 SE), and it is below the GD risk."""
    label, rp, rq = _c5_modes(3)[1]
    rng = np.random.default_rng(70)
    L, s2, wv, n = 6, 0.3, 0.5, 30_000
    X, y, xq, yq, _ = _c5_sample(rng, n, L, rp, rq, s2, wv)
    Gxx, Gxy = np.einsum("nld,nle->nde", X, X) / L, np.einsum("nld,nl->nd", X, y) / L
    bf = s6.bayes_fns()
    k = 200
    ref = np.array([xq[i] @ np.linalg.solve(X[i].T @ X[i] + (s2 / wv) * np.eye(3), X[i].T @ y[i]) for i in range(k)])
    assert np.allclose(bf["predict"](Gxx[:k], Gxy[:k], xq[:k], L, s2, wv), ref, rtol=1e-10, atol=1e-12)
    f = np.einsum("nd,nd->n", xq, np.linalg.solve(L * Gxx + (s2 / wv) * np.eye(3), L * Gxy[..., None])[..., 0])
    e = (f - yq) ** 2
    cr = bf["conditional_risk"](Gxx, Gxy, xq, L, s2, wv)
    assert abs(e.mean() - cr.mean()) < 4 * np.sqrt(e.var() / n), (e.mean(), cr.mean())
    assert cr.mean() < s6.gd_risk_fn()(L, rp @ rp.T, rq @ rq.T, s2, wv)


def test_s6_infinite_prompt_against_monte_carlo():
    """Cov(z | w) with label noise vs sample covariance; the optimum w^T x_q has risk = noise variance; the
    block-structured risk vs Monte Carlo and minimal (FD gradient 0, value s2) at A = Sigma_p^-1 / b; both modes."""
    rng = np.random.default_rng(80)
    s2, wv, n = 0.1, 0.2, 400_000
    for label, rp, rq in _c5_modes(3):
        Sp, Sq = rp @ rp.T, rq @ rq.T
        w = rng.normal(size=3)
        x = rng.normal(size=(n, 3)) @ rp.T
        Z = np.c_[x, x @ w + rng.normal(size=n) * np.sqrt(s2)]
        emp, G = Z.T @ Z / n, s6.gamma_w_noisy_fn()(Sp, w[None], s2)[0]
        se = np.sqrt(np.var(Z[:, :, None] * Z[:, None, :], axis=0) / n)
        assert np.all(np.abs(emp - G) < 5 * se), label
        X, y, xq, yq, W = _c5_sample(rng, n, 1, rp, rq, s2, wv)
        e = (s6.limit_optimum_predict_fn()(W[:1000], xq[:1000]) - np.einsum("nd,nd->n", W[:1000], xq[:1000]))
        assert np.all(np.abs(e) < 1e-12)
        e2 = (np.einsum("nd,nd->n", W, xq) - yq) ** 2
        assert abs(e2.mean() - s6.limit_optimum_risk_fn()(s2)) < 4 * e2.std() / np.sqrt(n)
        rb = s6.limit_block_risk_fn()
        A, b = 0.3 * rng.normal(size=(3, 3)), 1.3
        f = b * np.einsum("ni,ij,jk,nk->n", W, Sp, A, xq)
        e3 = (f - yq) ** 2
        assert abs(e3.mean() - rb(A, b, Sp, Sq, s2, wv)) < 4 * e3.std() / np.sqrt(n), label
        Aopt = np.linalg.inv(Sp) / b
        assert np.isclose(rb(Aopt, b, Sp, Sq, s2, wv), s2, rtol=1e-10)
        assert np.allclose(fd_grad(lambda M: rb(M, b, Sp, Sq, s2, wv), Aopt), 0, atol=1e-7)


def test_s6_baselines_module_uses_lambdified_results(jax_x64):
    """softlin.baselines (jax) == the numpy lambdified S6 and the explicit numpy formulas."""
    from softlin import baselines
    rng = np.random.default_rng(90)
    d, n, L = 4, 20, 9
    S = spd(rng, d)
    X = rng.normal(size=(n, L, d)) @ sqrtm(S)
    w = rng.normal(size=(n, d))
    y = np.einsum("nld,nd->nl", X, w) + 0.3 * rng.normal(size=(n, L))
    Z = np.concatenate([X, y[..., None]], -1)
    G = np.einsum("nli,nlj->nij", Z, Z) / L
    zq = np.c_[rng.normal(size=(n, d)), np.zeros(n)][:, None, :]
    ridge = np.array([zq[i, 0, :d] @ np.linalg.solve(X[i].T @ X[i] + (0.1 / 0.2) * np.eye(d), X[i].T @ y[i]) for i in range(n)])
    assert np.allclose(np.asarray(baselines.ridge_predict(G, zq, L, 0.1, 0.2)), ridge, rtol=1e-10, atol=1e-12)
    gd = np.einsum("ni,ij,nj->n", zq[:, 0, :d], np.linalg.inv(S), np.einsum("nld,nl->nd", X, y) / L)
    assert np.allclose(np.asarray(baselines.gd_predict(G, zq, S)), gd, rtol=1e-10, atol=1e-12)
    assert np.allclose(np.asarray(baselines.limit_optimum_predict(w, zq)), np.sum(w * zq[:, 0, :d], -1), rtol=1e-13)
    Gn = np.asarray(baselines.gamma_w_noisy(S, w, 0.1))
    ref = gamma_w_np(S, w[0])
    ref[d, d] += 0.1
    assert Gn.shape == (n, d + 1, d + 1) and np.allclose(Gn[0], ref, rtol=1e-13)
    cr = np.asarray(baselines.bayes_conditional_risk(G, zq, L, 0.1, 0.2))
    V = [np.linalg.inv(X[i].T @ X[i] / 0.1 + np.eye(d) / 0.2) for i in range(n)]
    assert np.allclose(cr, [0.1 + zq[i, 0, :d] @ V[i] @ zq[i, 0, :d] for i in range(n)], rtol=1e-10)
    assert baselines.limit_optimum_risk(0.1) == pytest.approx(0.1, rel=1e-14)


