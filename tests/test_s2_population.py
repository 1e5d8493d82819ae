"""S2: the population risk of linear(inf), its gradient, the reduced flow and the Bayes optimum,
against Monte Carlo and finite differences."""

import numpy as np
import pytest

from softlin.numpy_reference import sqrtm_sym as sqrtm  # the independent reference's Sigma^(1/2)
from symbolic.export import s1, s2

from helpers import fd_grad, gamma_w_np, spd


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
    R = s2.population_risk_fn()(U, v, S)
    assert abs(R - mc) < 5 * se, (R, mc, se)
    # a one-sample spot check of the predictor against an explicit Gamma_w
    assert np.isclose(f[0], v @ gamma_w_np(S, W[0]) @ U @ np.r_[Xq[0], 0], rtol=1e-12)


def test_limit_predictor(jax_x64):
    rng = np.random.default_rng(7)
    d = 3
    S, U, v, w, xq = spd(rng, d), rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=d), rng.normal(size=d)
    ref = v @ gamma_w_np(S, w) @ U @ np.r_[xq, 0]
    assert abs(s1.limit_predictor_fn()(U, v, S, w, xq) - ref) < 1e-12
    assert abs(float(s1.limit_predictor_fn("jax")(U, v, S, w, xq)) - ref) < 1e-12
    # softmax(L) -> linear(inf) at large L (small scores)
    L = 400_000
    Uc = 0.3 * U
    X = rng.normal(size=(L, d)) @ sqrtm(S)
    Z = np.c_[X, X @ w]
    s = Z @ (Uc @ np.r_[xq, 0])
    p = np.exp(s - s.max())
    p /= p.sum()
    f_soft = v @ (p @ Z)
    assert abs(f_soft - s1.limit_predictor_fn()(Uc, v, S, w, xq)) < 0.05 * (1 + abs(f_soft))


def test_risk_backends_and_gradient(jax_x64):
    jax = jax_x64
    rng = np.random.default_rng(3)
    for d in (2, 4):
        S, U, v = spd(rng, d), rng.normal(size=(d + 1, d + 1)), rng.normal(size=d + 1)
        rn, rj = s2.population_risk_fn("numpy"), s2.population_risk_fn("jax")
        assert abs(rn(U, v, S) - float(rj(U, v, S))) < 1e-12 * max(1, abs(rn(U, v, S)))
        gU, gv = s2.population_risk_grad_fn()(U, v, S)
        jgU, jgv = jax.jit(jax.grad(rj, argnums=(0, 1)))(U, v, S)
        assert np.allclose(gU, jgU, rtol=1e-10, atol=1e-10) and np.allclose(gv, jgv, rtol=1e-10, atol=1e-10)
        assert np.allclose(gU, fd_grad(lambda X: rn(X, v, S), U), rtol=1e-5, atol=1e-5)
        assert np.allclose(gv, fd_grad(lambda x: rn(U, x, S), v), rtol=1e-5, atol=1e-5)


def test_reduced_risk_and_flow():
    rng = np.random.default_rng(5)
    d = 3
    S, A, b = spd(rng, d), rng.normal(size=(d, d)), 0.8
    Rr = s2.reduced_risk_fn()
    dA, db = s2.reduced_flow_fn()(A, b, S)
    assert np.allclose(dA, -fd_grad(lambda X: Rr(X, b, S), A), atol=1e-6)
    assert np.isclose(db, -(Rr(A, b + 1e-6, S) - Rr(A, b - 1e-6, S)) / 2e-6, atol=1e-6)
    M = b * S @ A - np.eye(d)
    assert np.isclose(Rr(A, b, S), 0.5 * np.trace(M @ S @ M.T), rtol=1e-12)
    U = np.zeros((d + 1, d + 1))
    U[:d, :d], U[d, d] = A, 0.37
    v = np.r_[np.zeros(d), b]
    assert np.isclose(Rr(A, b, S), s2.population_risk_fn()(U, v, S), rtol=1e-12)
    # reduced flow == full gradient flow restricted to the blocks; off-block gradient is 0
    gU, gv = s2.population_risk_grad_fn()(U, v, S)
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
        U, v = s2.bayes_optimum_fn()(S)
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


