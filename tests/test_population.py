"""The public population API (``population.population_risk``, ``population.bayes_optimum``,
``population.population_gradient_descent``) against independent sources: a Monte-Carlo estimate written
here in plain numpy, the sympy solution of S2, and a numpy loop on S2's derived gradient."""
import numpy as np
import pytest

from softlin import params as P
from softlin import population
from softlin.params import Params
from symbolic.export import s2

from helpers import random_params, spd, tree_allclose

RNG = np.random.default_rng(8675309)
SIGMAS = {"isotropic": np.eye(3), "anisotropic": np.diag([2.0, 1.0, 0.5]),
          "nondiagonal-d4": spd(RNG, 4), "nondiagonal-d3": spd(RNG, 3)}


def mc_population_risk(U, v, S, n, rng):
    """``E_{w ~ N(0, I), x_q ~ N(0, S)} 1/2 (v^T Gamma_w U z_q - w^T x_q)^2`` by sampling; (mean, s.e.)."""
    d = S.shape[0]
    W = rng.standard_normal((n, d))
    Xq = rng.standard_normal((n, d)) @ np.linalg.cholesky(S).T
    G = np.zeros((n, d + 1, d + 1))
    G[:, :d, :d] = S
    G[:, :d, d] = W @ S
    G[:, d, :d] = W @ S
    G[:, d, d] = np.einsum("ni,ij,nj->n", W, S, W)
    a = Xq @ U[:, :d].T                      # U z_q, z_q = (x_q, 0)
    f = np.einsum("j,njk,nk->n", v, G, a)
    loss = 0.5 * (f - np.einsum("ni,ni->n", W, Xq)) ** 2
    return loss.mean(), loss.std(ddof=1) / np.sqrt(n)


@pytest.mark.parametrize("d", [3, 4])
def test_population_risk_vs_monte_carlo_dense_params(rng, d):
    """Dense (not block-structured) parameters: the closed form lies within 4 s.e. of 400 000 samples."""
    S = spd(rng, d)
    p = random_params(rng, d, scale=0.5)
    R = float(population.population_risk(p, S))
    mc, se = mc_population_risk(np.asarray(p.U), np.asarray(p.v), S, 400_000, rng)
    assert abs(R - mc) < 4 * se, (R, mc, se)
    assert se < 0.02 * mc  # the check has teeth: the MC estimate is precise to 2 %


@pytest.mark.parametrize("name", SIGMAS)
def test_bayes_optimum_is_the_s2_solution(name):
    """``population.bayes_optimum`` equals the optimum sympy solved for (S2), and is a zero of the risk and its gradient
    (S2's closed forms, and independently a plain-numpy Monte Carlo with finite differences)."""
    S = SIGMAS[name]
    ps = population.bayes_optimum(S)
    U_sym, v_sym = s2.bayes_optimum_fn()(S)
    tree_allclose(ps, Params(U_sym, v_sym), rtol=1e-13)
    assert abs(float(population.population_risk(ps, S))) < 1e-13
    R, g = population.population_value_and_grad(Params(*map(np.asarray, ps)), S)
    assert max(np.max(np.abs(g.U)), np.max(np.abs(g.v))) < 1e-12
    # S2's own matrix-form gradient (derived by sympy, lambdified to numpy) agrees
    gU, gv = s2.population_risk_grad_fn()(ps.U, ps.v, S)
    assert max(np.max(np.abs(gU)), np.max(np.abs(gv))) < 1e-12
    # independent of S2: the plain-numpy Monte Carlo sees a zero residual sample by sample (R = 0), and its
    # central finite differences along random directions vanish (zero gradient)
    U0, v0 = np.asarray(ps.U), np.asarray(ps.v)
    mc, _ = mc_population_risk(U0, v0, S, 20_000, np.random.default_rng(3))
    assert mc < 1e-24
    rng, h = np.random.default_rng(4), 1e-7       # bilinear f: the central difference has an O(h^2) bias
    for _ in range(3):
        dU, dv = rng.standard_normal(U0.shape), rng.standard_normal(v0.shape)
        Rp = mc_population_risk(U0 + h * dU, v0 + h * dv, S, 20_000, np.random.default_rng(5))[0]
        Rm = mc_population_risk(U0 - h * dU, v0 - h * dv, S, 20_000, np.random.default_rng(5))[0]
        assert abs(Rp - Rm) / (2 * h) < 1e-9


@pytest.mark.parametrize("convention", ["standard", "seed"])
def test_population_gradient_descent_vs_numpy_loop_on_s2_gradient(convention):
    """The compiled population GD equals a plain loop on the numpy-lambdified S2 gradient (not JAX autodiff)."""
    S = SIGMAS["nondiagonal-d4"]
    lr, steps, every = 0.02, 60, 20
    traj = population.population_gradient_descent(P.init_eq9(S), S, lr=lr, steps=steps, record_every=every,
                                             convention=convention)
    grad, risk = s2.population_risk_grad_fn(), s2.population_risk_fn()
    U, v = (np.array(a, dtype=np.float64) for a in P.init_eq9(S))
    rec, losses = [], []
    n_updates = steps + (convention == "seed")
    for it in range(n_updates):
        if it % every == 0:
            rec.append((U.copy(), v.copy()))
            losses.append(risk(U, v, S))
        gU, gv = grad(U, v, S)
        U, v = U - lr * gU, v - lr * gv
    if convention == "standard":
        rec.append((U.copy(), v.copy()))
        losses.append(risk(U, v, S))
    tree_allclose(traj.params, Params(np.stack([r[0] for r in rec]), np.stack([r[1] for r in rec])),
                  rtol=1e-12)
    tree_allclose(traj.loss, np.array(losses), rtol=1e-12)
    tree_allclose(traj.final, Params(U, v), rtol=1e-12)
