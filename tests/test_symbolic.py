"""Tests of symbolic/: every exported result against an independent numeric source (MC, FD, quadrature)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from softlin.numpy_reference import sqrtm_sym as sqrtm  # the independent reference's Sigma^(1/2)
from symbolic import export as E
from symbolic import get, to_json, to_markdown, write_all

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spd(rng, d):
    X = rng.normal(size=(d, d))
    return X @ X.T / d + 0.5 * np.eye(d)


def gamma_w(S, w):
    top = np.concatenate([S, (S @ w)[:, None]], axis=1)
    bot = np.concatenate([w @ S, [w @ S @ w]])[None, :]
    return np.concatenate([top, bot], axis=0)


def fd_grad(fun, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


@pytest.fixture(scope="module")
def jax_x64():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


@pytest.mark.parametrize("d", [3, 4])
def test_population_risk_vs_monte_carlo(d):
    rng = np.random.default_rng(1234 + d)
    S = spd(rng, d)
    U, v = 0.4 * rng.normal(size=(d + 1, d + 1)), 0.6 * rng.normal(size=d + 1)
    n = 200_000
    W = rng.normal(size=(n, d))
    Xq = rng.normal(size=(n, d)) @ sqrtm(S)
    SW = W @ S                                       # rows Sigma w
    Uz = Xq @ U[:, :d].T                             # U z_q
    # v^T Gamma_w (U z_q) with Gamma_w = [[S, S w], [w^T S, w^T S w]] written out blockwise
    top = Uz[:, :d] @ S + SW * Uz[:, d:]
    bot = np.einsum("ni,ni->n", SW, Uz[:, :d]) + np.einsum("ni,ni->n", SW, W) * Uz[:, d]
    f = top @ v[:d] + bot * v[d]
    loss = 0.5 * (f - np.einsum("ni,ni->n", W, Xq)) ** 2
    mc, se = loss.mean(), loss.std() / np.sqrt(n)
    R = E.population_risk_fn()(U, v, S)
    assert abs(R - mc) < 5 * se, (R, mc, se)
    # a one-sample spot check of the predictor against an explicit Gamma_w
    assert np.isclose(f[0], v @ gamma_w(S, W[0]) @ U @ np.r_[Xq[0], 0], rtol=1e-12)


def test_limit_predictor(jax_x64):
    rng = np.random.default_rng(7)
    d = 3
    S, U, v, w, xq = spd(rng, d), rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=d), rng.normal(size=d)
    ref = v @ gamma_w(S, w) @ U @ np.r_[xq, 0]
    assert abs(E.limit_predictor_fn()(U, v, S, w, xq) - ref) < 1e-12
    assert abs(float(E.limit_predictor_fn("jax")(U, v, S, w, xq)) - ref) < 1e-12
    # softmax(L) -> linear(inf) at large L (small scores)
    L = 400_000
    Uc = 0.3 * U
    X = rng.normal(size=(L, d)) @ sqrtm(S)
    Z = np.c_[X, X @ w]
    s = Z @ (Uc @ np.r_[xq, 0])
    p = np.exp(s - s.max())
    p /= p.sum()
    f_soft = v @ (p @ Z)
    assert abs(f_soft - E.limit_predictor_fn()(Uc, v, S, w, xq)) < 0.05 * (1 + abs(f_soft))


def test_risk_backends_and_gradient(jax_x64):
    jax = jax_x64
    rng = np.random.default_rng(3)
    for d in (2, 4):
        S, U, v = spd(rng, d), rng.normal(size=(d + 1, d + 1)), rng.normal(size=d + 1)
        rn, rj = E.population_risk_fn("numpy"), E.population_risk_fn("jax")
        assert abs(rn(U, v, S) - float(rj(U, v, S))) < 1e-12 * max(1, abs(rn(U, v, S)))
        gU, gv = E.population_risk_grad_fn()(U, v, S)
        jgU, jgv = jax.jit(jax.grad(rj, argnums=(0, 1)))(U, v, S)
        assert np.allclose(gU, jgU, rtol=1e-10, atol=1e-10) and np.allclose(gv, jgv, rtol=1e-10, atol=1e-10)
        assert np.allclose(gU, fd_grad(lambda X: rn(X, v, S), U), rtol=1e-5, atol=1e-5)
        assert np.allclose(gv, fd_grad(lambda x: rn(U, x, S), v), rtol=1e-5, atol=1e-5)


def test_reduced_risk_and_flow():
    rng = np.random.default_rng(5)
    d = 3
    S, A, b = spd(rng, d), rng.normal(size=(d, d)), 0.8
    Rr = E.reduced_risk_fn()
    dA, db = E.reduced_flow_fn()(A, b, S)
    assert np.allclose(dA, -fd_grad(lambda X: Rr(X, b, S), A), atol=1e-6)
    assert np.isclose(db, -(Rr(A, b + 1e-6, S) - Rr(A, b - 1e-6, S)) / 2e-6, atol=1e-6)
    M = b * S @ A - np.eye(d)
    assert np.isclose(Rr(A, b, S), 0.5 * np.trace(M @ S @ M.T), rtol=1e-12)
    U = np.zeros((d + 1, d + 1))
    U[:d, :d], U[d, d] = A, 0.37
    v = np.r_[np.zeros(d), b]
    assert np.isclose(Rr(A, b, S), E.population_risk_fn()(U, v, S), rtol=1e-12)
    # reduced flow == full gradient flow restricted to the blocks; off-block gradient is 0
    gU, gv = E.population_risk_grad_fn()(U, v, S)
    assert np.allclose(-gU[:d, :d], dA, atol=1e-12) and np.isclose(-gv[d], db, atol=1e-12)
    assert np.allclose(gU[d, :d], 0, atol=1e-12) and np.allclose(gU[:d, d], 0) and np.allclose(gv[:d], 0, atol=1e-12)


def test_bayes_optimum():
    """S2's theta* against independent sources: numpy's inverse / trace, and the numpy reference predictor on
    sampled (w, x_q) (residual 0 sample by sample, so R = 0 and the sampled risk is flat: FD gradient 0)."""
    from softlin import numpy_reference as ref
    rng = np.random.default_rng(11)
    sigmas = [np.eye(3), np.diag([2.0, 1.0, 0.5]), spd(rng, 4), spd(rng, 2)]
    for S in sigmas:
        d = S.shape[0]
        U, v = E.bayes_optimum_fn()(S)
        c = np.trace(np.linalg.matrix_power(np.linalg.inv(S), 2)) ** 0.25
        assert np.allclose(U[:d, :d], np.linalg.inv(S) / c, atol=1e-12) and np.isclose(v[d], c)
        assert np.isclose(np.linalg.norm(U), np.linalg.norm(v), rtol=1e-12)
        W = rng.normal(size=(500, d))
        Xq = rng.normal(size=(500, d)) @ sqrtm(S)

        def sampled_risk(U_, v_):
            G = ref.gamma_w(S, W)                                 # (n, d+1, d+1), numpy reference
            f = np.einsum("j,njk,nk->n", v_, G, np.c_[Xq, np.zeros(len(Xq))] @ U_.T)
            return 0.5 * np.mean((f - np.einsum("ni,ni->n", W, Xq)) ** 2)
        assert sampled_risk(U, v) < 1e-24
        assert np.allclose(fd_grad(lambda X: sampled_risk(X, v), U), 0, atol=1e-8)
        assert np.allclose(fd_grad(lambda x: sampled_risk(U, x), v), 0, atol=1e-8)


# --------------------------------------------------------------------------- S1: the Gaussian tilt
def _gh2(n_nodes=60):
    """2-d Gauss-Hermite (probabilists') nodes and weights for E f(g), g ~ N(0, I_2)."""
    g, wts = np.polynomial.hermite_e.hermegauss(n_nodes)
    G = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    return G, np.outer(wts, wts).ravel() / (2 * np.pi)


def test_s1_tilt_against_quadrature():
    """log M(a), tilted mean and covariance of N(mu, Gamma): scipy quad at d = 1, Gauss-Hermite at d = 2."""
    from scipy import integrate
    tf = E.tilt_fns()
    m, s, t = 0.3, 1.4, 0.7

    def dens(x):
        return np.exp(-(x - m) ** 2 / (2 * s ** 2)) / np.sqrt(2 * np.pi * s ** 2)

    lo, hi = m - 30 * s, m + 30 * s                     # the integrands are below 1e-150 outside
    M0, M1, M2 = (integrate.quad(lambda x: x ** k * np.exp(t * x) * dens(x), lo, hi, epsabs=1e-14, epsrel=1e-12,
                                 limit=200)[0] for k in (0, 1, 2))
    args = ([t], [m], [[s * s]])
    assert np.isclose(float(tf["log_mgf"](*args)), np.log(M0), rtol=1e-10)
    assert np.isclose(tf["tilted_mean"](*args)[0], M1 / M0, rtol=1e-10)
    assert np.isclose(tf["tilted_cov"](*args)[0, 0], M2 / M0 - (M1 / M0) ** 2, rtol=1e-8)
    rng = np.random.default_rng(31)
    G, wts = _gh2()
    for _ in range(3):
        Gam, mu, a = spd(rng, 2), rng.normal(size=2), 0.5 * rng.normal(size=2)
        Z = mu + G @ np.linalg.cholesky(Gam).T
        e = wts * np.exp(Z @ a)
        M0 = e.sum()
        mean = e @ Z / M0
        cov = (Z - mean).T @ ((Z - mean) * e[:, None]) / M0
        assert np.isclose(float(tf["log_mgf"](a, mu, Gam)), np.log(M0), rtol=1e-10)
        assert np.allclose(tf["tilted_mean"](a, mu, Gam), mean, rtol=1e-10, atol=1e-12)
        assert np.allclose(tf["tilted_cov"](a, mu, Gam), cov, rtol=1e-9, atol=1e-12)


def test_s1_tilted_mean_monte_carlo_d3():
    """Self-normalised importance average E[z e^{a^T z}] / E[e^{a^T z}] at d = 3, within 5 standard errors."""
    rng = np.random.default_rng(32)
    Gam, mu, a = spd(rng, 3), rng.normal(size=3), 0.3 * rng.normal(size=3)
    Z = mu + rng.normal(size=(400_000, 3)) @ np.linalg.cholesky(Gam).T
    p = np.exp(Z @ a - (Z @ a).max())
    p /= p.sum()
    est = p @ Z
    se = np.sqrt(np.sum(p[:, None] ** 2 * (Z - est) ** 2, axis=0))     # delta-method SE of a ratio estimator
    assert np.all(np.abs(est - E.tilt_fns()["tilted_mean"](a, mu, Gam)) < 5 * se)


@pytest.mark.parametrize("d", [3, 4])
def test_s1_kernel_linear_inf_equals_lambdified(d):
    """S1 check (docs/maths.md#s1): the kernel's linear(inf) prediction (softlin.models, "limit") == the lambdified S1 f_inf."""
    from softlin import models, tasks
    from softlin.params import Params
    rng = np.random.default_rng(40 + d)
    S = spd(rng, d)
    tk = tasks.sample(5 + d, d, S, n_pairs=3, n_query=4, l_max=2)
    U, v = rng.normal(size=(d + 1, d + 1)), rng.normal(size=d + 1)
    kern = np.asarray(models.predict("limit", Params(U, v), tk))
    f = E.limit_predictor_fn()
    lam = np.array([[f(U, v, S, tk.w[i], tk.xq[i, q]) for q in range(tk.xq.shape[1])] for i in range(tk.n_tasks)])
    assert np.allclose(kern, lam, rtol=1e-12, atol=1e-12 * np.abs(lam).max())


def _lambda_max_ref(A, S):
    """numpy reference: largest eigenvalue of the symmetric M = S^(1/2) A^T S A S^(1/2) (eigh)."""
    R = sqrtm(S)
    M = R @ A.T @ S @ A @ R
    return np.linalg.eigvalsh((M + M.T) / 2).max()


@pytest.mark.parametrize("d", [2, 3, 4])
def test_threshold_M_against_numpy_eigh(d):
    rng = np.random.default_rng(50 + d)
    for _ in range(3):
        S, A = spd(rng, d), rng.normal(size=(d, d))
        assert np.isclose(E.threshold_M(A, S), _lambda_max_ref(A, S), rtol=1e-10)


def test_mgf_quadratic_form_against_quadrature_and_monte_carlo():
    """det(I - 2 t Sigma K)^(-1/2) vs 2-d Gauss-Hermite quadrature (below the pole) and a d = 3 Monte Carlo."""
    rng = np.random.default_rng(2)
    mgf = E.mgf_quadratic_form_fn()
    S, A = spd(rng, 2), rng.normal(size=(2, 2))
    K = A.T @ S @ A
    lam = _lambda_max_ref(A, S)
    G, W = _gh2(80)
    X = G @ sqrtm(S)
    q = np.einsum("ni,ij,nj->n", X, K, X)
    for frac in (-0.5, 0.1, 0.25, 0.4):             # t = frac / lambda_max: 2 t lambda_max < 1 (the pole is 1/2)
        t = frac / lam
        assert np.isclose(mgf(t, K, S), np.sum(W * np.exp(t * q)), rtol=1e-8), frac
    S3, A3 = spd(rng, 3), rng.normal(size=(3, 3))
    K3 = A3.T @ S3 @ A3
    t = 0.2 / _lambda_max_ref(A3, S3)                # variance finite: 4 t lambda_max < 1
    X3 = rng.normal(size=(400_000, 3)) @ sqrtm(S3)
    e = np.exp(t * np.einsum("ni,ij,nj->n", X3, K3, X3))
    assert abs(e.mean() - mgf(t, K3, S3)) < 5 * e.std() / np.sqrt(e.size)


def test_exp_moment_below_and_above_threshold():
    rng = np.random.default_rng(2)
    S = spd(rng, 2)
    A0 = rng.normal(size=(2, 2))
    A = A0 * np.sqrt(0.2 / _lambda_max_ref(A0, S))     # lambda_max(M) = 0.2
    assert np.isclose(E.threshold_M(A, S), 0.2)
    K = A.T @ S @ A
    G, W = _gh2(80)
    X = G @ sqrtm(S)
    quad = np.sum(W * np.exp(np.einsum("ni,ij,nj->n", X, K, X)))
    assert np.isclose(E.exp_moment_fn()(A, S), quad, rtol=1e-8)
    assert E.exp_moment_fn()(A * 1.7, S) == np.inf     # lambda_max = 0.578 > 1/2


def _capped_mean_square(lam, L):
    """E[min(1, (exp(lam g^2) - 1) / L)], g ~ N(0, 1), by scipy quadrature (bulk below the cut, Gaussian tail above)."""
    from scipy import integrate, special
    gc = np.sqrt(np.log1p(L) / lam)

    def f(g):
        return np.expm1(lam * g * g) * np.exp(-g * g / 2) / np.sqrt(2 * np.pi) / L

    bulk = 2 * integrate.quad(f, 0, gc, epsabs=0, epsrel=1e-11, limit=200)[0]
    return bulk + special.erfc(gc / np.sqrt(2))


@pytest.mark.parametrize("lam", [0.25, 0.4, 1.0, 2.0])
def test_beta_against_numerical_exponent(lam):
    """The mean square of S5 decays as L^(-2 beta): the log-log slope of its quadrature over L = 1e10 .. 1e14
    (logarithmic factors make the finite-L slope differ by about 1 / (2 log L) ~ 0.02)."""
    Ls = np.logspace(10, 14, 5)
    ms = np.array([_capped_mean_square(lam, L) for L in Ls])
    slope = np.polyfit(np.log(Ls), np.log(ms), 1)[0]
    assert abs(slope - (-2 * E.beta_fn()(lam))) < 0.05, (lam, slope)


def test_beta_and_threshold_at_theta_star():
    beta = E.beta_fn()
    assert beta(0.25) == 0.5 and np.isclose(beta(1.0), 0.25) and np.isclose(beta(0.6), 1 / 2.4)
    for S, tr in ((np.eye(3), 3.0), (np.diag([2.0, 1.0, 0.5]), 5.25)):
        U, _ = E.bayes_optimum_fn()(S)
        lam = E.threshold_M(U[:3, :3], S)
        assert np.isclose(np.trace(np.linalg.inv(S) @ np.linalg.inv(S)), tr)
        assert np.isclose(lam, 1 / np.sqrt(tr)) and np.isclose(lam, _lambda_max_ref(U[:3, :3], S))
        assert (lam < 0.5) == (tr > 4)


# --------------------------------------------------------------------------- S6: C5 baselines
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
    closed = E.gd_risk_fn()(L, Sp, Sq, s2, wv)
    assert abs(e.mean() - closed) < 4 * e.std() / np.sqrt(n), (label, e.mean(), closed)
    # the batched predictor equals the explicit numpy formula
    G_xy = np.einsum("nld,nl->nd", X[:50], y[:50]) / L
    assert np.allclose(E.gd_predict_fn()(G_xy, xq[:50], Sp), f[:50], rtol=1e-12, atol=1e-12)


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
    P = E.linear_class_precond_fn()(L, Sp, s2, wv)
    assert np.allclose(P_ls, P, atol=0.03), (label, P_ls, P)
    e = (np.einsum("ni,ij,nj->n", xq, P, h) - yq) ** 2
    closed = E.linear_class_risk_fn()(L, Sp, Sq, s2, wv)
    assert abs(e.mean() - closed) < 4 * e.std() / np.sqrt(n), (label, e.mean(), closed)
    assert closed < E.gd_risk_fn()(L, Sp, Sq, s2, wv)


def test_s6_bayes_posterior_against_numpy_and_monte_carlo():
    """Posterior mean == numpy.linalg.solve of the ridge system; the mean conditional Bayes risk == Monte Carlo
    risk of the posterior mean (4 SE), and it is below the GD risk."""
    label, rp, rq = _c5_modes(3)[1]
    rng = np.random.default_rng(70)
    L, s2, wv, n = 6, 0.3, 0.5, 30_000
    X, y, xq, yq, _ = _c5_sample(rng, n, L, rp, rq, s2, wv)
    Gxx, Gxy = np.einsum("nld,nle->nde", X, X) / L, np.einsum("nld,nl->nd", X, y) / L
    bf = E.bayes_fns()
    k = 200
    ref = np.array([xq[i] @ np.linalg.solve(X[i].T @ X[i] + (s2 / wv) * np.eye(3), X[i].T @ y[i]) for i in range(k)])
    assert np.allclose(bf["predict"](Gxx[:k], Gxy[:k], xq[:k], L, s2, wv), ref, rtol=1e-10, atol=1e-12)
    f = np.einsum("nd,nd->n", xq, np.linalg.solve(L * Gxx + (s2 / wv) * np.eye(3), L * Gxy[..., None])[..., 0])
    e = (f - yq) ** 2
    cr = bf["conditional_risk"](Gxx, Gxy, xq, L, s2, wv)
    assert abs(e.mean() - cr.mean()) < 4 * np.sqrt(e.var() / n), (e.mean(), cr.mean())
    assert cr.mean() < E.gd_risk_fn()(L, rp @ rp.T, rq @ rq.T, s2, wv)


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
        emp, G = Z.T @ Z / n, E.gamma_w_noisy_fn()(Sp, w[None], s2)[0]
        se = np.sqrt(np.var(Z[:, :, None] * Z[:, None, :], axis=0) / n)
        assert np.all(np.abs(emp - G) < 5 * se), label
        X, y, xq, yq, W = _c5_sample(rng, n, 1, rp, rq, s2, wv)
        e = (E.limit_optimum_predict_fn()(W[:1000], xq[:1000]) - np.einsum("nd,nd->n", W[:1000], xq[:1000]))
        assert np.all(np.abs(e) < 1e-12)
        e2 = (np.einsum("nd,nd->n", W, xq) - yq) ** 2
        assert abs(e2.mean() - E.limit_optimum_risk_fn()(s2)) < 4 * e2.std() / np.sqrt(n)
        rb = E.limit_block_risk_fn()
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
    ref = gamma_w(S, w[0])
    ref[d, d] += 0.1
    assert Gn.shape == (n, d + 1, d + 1) and np.allclose(Gn[0], ref, rtol=1e-13)
    cr = np.asarray(baselines.bayes_conditional_risk(G, zq, L, 0.1, 0.2))
    V = [np.linalg.inv(X[i].T @ X[i] / 0.1 + np.eye(d) / 0.2) for i in range(n)]
    assert np.allclose(cr, [0.1 + zq[i, 0, :d] @ V[i] @ zq[i, 0, :d] for i in range(n)], rtol=1e-10)
    assert baselines.limit_optimum_risk(0.1) == pytest.approx(0.1, rel=1e-14)


def _softmax_pred(U, v, Z, zq):
    s = Z @ U @ zq
    p = np.exp(s - s.max())
    return v @ ((p / p.sum()) @ Z)


def test_euler_defect_softmax_fd():
    rng = np.random.default_rng(9)
    d, L = 3, 6
    U, v = rng.normal(size=(d + 1, d + 1)), rng.normal(size=d + 1)
    Z, zq, yq = rng.normal(size=(L, d + 1)), np.r_[rng.normal(size=d), 0.0], 0.4

    def loss(t):
        return 0.5 * (_softmax_pred(np.exp(t) * U, np.exp(-t) * v, Z, zq) - yq) ** 2

    fd = (loss(1e-5) - loss(-1e-5)) / 2e-5
    assert np.isclose(E.euler_defect_fn()(U, v, Z, zq, yq), fd, rtol=1e-6, atol=1e-8)
    # linear(L) is bilinear: the same rescaling leaves the loss unchanged
    G = Z.T @ Z / L

    def lin(t):
        return 0.5 * ((np.exp(-t) * v) @ G @ (np.exp(t) * U) @ zq - yq) ** 2

    assert abs((lin(1e-5) - lin(-1e-5)) / 2e-5) < 1e-8


def test_euler_defect_jax(jax_x64):
    rng = np.random.default_rng(19)
    U, v, Z, zq = rng.normal(size=(3, 3)), rng.normal(size=3), rng.normal(size=(4, 3)), np.r_[rng.normal(size=2), 0]
    assert np.isclose(float(E.euler_defect_fn("jax")(U, v, Z, zq, 0.1)), E.euler_defect_fn()(U, v, Z, zq, 0.1), rtol=1e-12)


def test_gd_step_conservation_linear_inf():
    rng = np.random.default_rng(4)
    d, lr = 3, 0.01
    S, U, v = spd(rng, d), rng.normal(size=(4, 4)), rng.normal(size=4)
    gU, gv = E.population_risk_grad_fn()(U, v, S)
    assert abs(np.sum(U * gU) - v @ gv) < 1e-9 * (1 + abs(v @ gv))          # Euler identity
    U1, v1 = U - lr * gU, v - lr * gv
    change = (np.sum(U1 ** 2) - v1 @ v1) - (np.sum(U ** 2) - v @ v)
    assert np.isclose(change, lr ** 2 * (np.sum(gU ** 2) - gv @ gv), rtol=1e-6, atol=1e-12)


def _model_loss(model, U, v, w, xq, X, S):
    zq = np.r_[xq, 0.0]
    Z = np.c_[X, X @ w]
    if model == "linear_inf":
        f = v @ gamma_w(S, w) @ U @ zq
    elif model == "linear_L":
        f = v @ (Z.T @ Z / len(Z)) @ U @ zq
    else:
        f = _softmax_pred(U, v, Z, zq)
    return 0.5 * (f - w @ xq) ** 2


@pytest.mark.parametrize("model", ["linear_inf", "linear_L", "softmax_L"])
def test_parity_table_numeric(model):
    rng = np.random.default_rng(21)
    d = 2
    S, w, xq, X = spd(rng, d), rng.normal(size=d), rng.normal(size=d), rng.normal(size=(5, d))
    U = np.zeros((d + 1, d + 1))
    U[:d, :d], U[d, d] = rng.normal(size=(d, d)), 0.3
    v = np.r_[np.zeros(d), 0.9]
    table = E.parity_table(model)
    assert len(table) == (d + 1) ** 2 + d + 1
    for sign, ww in ((1, w), (-1, -w)):
        gU = fd_grad(lambda P: _model_loss(model, P, v, ww, xq, X, S), U)
        gv = fd_grad(lambda p: _model_loss(model, U, p, ww, xq, X, S), v)
        if sign == 1:
            g_plus = {**{f"U[{i},{j}]": gU[i, j] for i in range(3) for j in range(3)}, **{f"v[{i}]": gv[i] for i in range(3)}}
        else:
            g_minus = {**{f"U[{i},{j}]": gU[i, j] for i in range(3) for j in range(3)}, **{f"v[{i}]": gv[i] for i in range(3)}}
    for name, par in table.items():
        assert np.isclose(g_minus[name], par * g_plus[name], atol=1e-6), (model, name)
        off = (name.startswith("v[") and name != "v[2]") or (name.startswith("U[") and (name[2] == "2") != (name[4] == "2"))
        assert par == (-1 if off else 1)


def test_rendering_and_write_all(tmp_path):
    der = get("S2")
    md = to_markdown(der)
    assert md.startswith("## S2") and "$$" in md
    js = to_json(der)
    json.dumps(js)
    assert "R" in js["results"] and "srepr" in js["results"]["R"]
    paths = write_all(str(tmp_path))
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted(f"S{i}.{e}" for i in range(1, 8) for e in ("md", "json"))
    json.loads((tmp_path / "S5.json").read_text())


def test_cli():
    def cli(*args):  # the installed package's command line
        return subprocess.run([sys.executable, "-m", "symbolic", *args], capture_output=True, text=True,
                              cwd=ROOT, check=True).stdout

    out = cli()
    assert all(f"S{i}" in out for i in range(1, 8))
    out = cli("show", "S2")
    assert "theta*" in out and "R_reduced" in out
    out = cli("markdown", "S5")
    assert "$$" in out
    out = cli("show", "S6")
    assert "gd_risk" in out and "posterior_mean" in out and "limit_optimum_risk" in out


def test_cache_hit_and_invalidation_on_source_change(tmp_path, monkeypatch):
    """A second call is served from disk; a change of symbolic/'s source is a miss (no stale result)."""
    from symbolic import cache
    monkeypatch.setenv("SOFTLIN_SYMBOLIC_CACHE", str(tmp_path))
    calls = []

    def derive():
        calls.append(1)
        return {"n": len(calls)}

    assert cache.cached_call("Sx", "1", derive) == {"n": 1}
    assert cache.cached_call("Sx", "1", derive) == {"n": 1} and len(calls) == 1
    monkeypatch.setattr(cache, "source_digest", lambda: "edited")
    assert cache.cached_call("Sx", "1", derive) == {"n": 2}


def test_processes_missing_one_cache_entry_at_once_compute_it_once(tmp_path):
    """Three processes started together on an empty cache (the jobs of a fresh workflow run): the
    derivation runs once, under the entry's lock, and every process gets its value."""
    script = (
        "import time, pathlib\n"
        "from symbolic import cache\n"
        f"log = pathlib.Path({str(tmp_path / 'calls')!r})\n"
        "def slow():\n"
        "    with open(log, 'a') as fh: fh.write('x')\n"
        "    time.sleep(1.0)\n"
        "    return {'value': 42}\n"
        "print(cache.cached_call('TEST', 'v1', slow)['value'])\n")
    env = {**os.environ, "SOFTLIN_SYMBOLIC_CACHE": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert outs == ["42"] * 3 and all(p.returncode == 0 for p in procs)
    assert (tmp_path / "calls").read_text() == "x"
