"""C4's flows (docs/maths.md#c4): the population gradient flow of ``linear(inf)`` as an ODE on the full
``(U, v)``, the reduced block flow ``(A, b)`` of S2, task-sampled gradient descent (C3's protocol),
and what each does along the way (risk, distance to theta*, off-block mass, conservation)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import metrics, params, population, train
from .._jax import jax, jnp
from ..params import Params
from ..tasks import check_sigma, sample


class Along(NamedTuple):
    """Along a trajectory, per record (T,): population risk, distance to theta*, off-block mass,
    conservation defect ``||U||_F^2 - ||v||^2``."""

    risk: np.ndarray
    dist: np.ndarray
    offblock: np.ndarray
    conservation: np.ndarray


class Flow(NamedTuple):
    """A trajectory of the population flow: ``U`` (T, D, D), ``v`` (T, D) and :class:`Along` it."""

    U: np.ndarray
    v: np.ndarray
    along: Along


@jax.jit
def _neg_grad_flat(y, sigma):
    """``-grad R_pop`` at the flattened ``theta`` (:func:`softlin.params.flatten`)."""
    g = jax.grad(population.population_risk_kernel)(params.unflatten(y, sigma.shape[0] + 1), sigma)
    return -params.flatten(g, jnp)


def ode_flow(sigma, p0: Params, t_eval, method: str = "DOP853", rtol: float = 1e-12,
             atol: float = 1e-14) -> tuple[Params, dict]:
    """Gradient flow ``d theta / dt = -grad R_pop(theta)`` on the full (U, v) from ``p0``."""
    from scipy.integrate import solve_ivp

    s = jnp.asarray(check_sigma(sigma))
    D = s.shape[0] + 1
    t_eval = np.asarray(t_eval, dtype=np.float64)
    sol = solve_ivp(lambda t, y: np.asarray(_neg_grad_flat(jnp.asarray(y), s)), (0.0, t_eval[-1]),
                    params.flatten(p0), method=method, t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return params.unflatten(np.asarray(sol.y.T), D), dict(nfev=int(sol.nfev), method=method, rtol=rtol, atol=atol)


def reduced_flow(sigma, A0, b0: float, t_eval, method: str = "DOP853", rtol: float = 1e-12,
                 atol: float = 1e-14) -> tuple[np.ndarray, np.ndarray, dict]:
    """The reduced block flow ``(dA/dt, db/dt)`` of the symbolic module (S2): (A (n_t, d, d), b (n_t,))."""
    from scipy.integrate import solve_ivp

    from symbolic.export.s2 import reduced_flow_fn

    s = check_sigma(sigma)
    d = s.shape[0]
    flow = reduced_flow_fn("numpy")

    def rhs(t, y):
        dA, db = flow(y[:-1].reshape(d, d), y[-1], s)
        return np.concatenate([np.asarray(dA, dtype=np.float64).ravel(), [float(db)]])

    t_eval = np.asarray(t_eval, dtype=np.float64)
    sol = solve_ivp(rhs, (0.0, t_eval[-1]), np.concatenate([np.asarray(A0, float).ravel(), [b0]]),
                    method=method, t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    Y = sol.y.T
    return Y[:, :-1].reshape(-1, d, d), Y[:, -1], dict(nfev=int(sol.nfev))


def block_of(p: Params) -> tuple[np.ndarray, np.ndarray]:
    """``(A, b)`` of block-structured parameters (leading axes kept)."""
    U, v = np.asarray(p.U), np.asarray(p.v)
    d = U.shape[-1] - 1
    return U[..., :d, :d], v[..., d]


_pop_risk_batch = jax.jit(jax.vmap(population.population_risk_kernel, in_axes=(0, None)))


def along(p: Params, sigma) -> Along:
    """Population risk, distance to theta*, off-block mass, conservation defect per record."""
    s = check_sigma(sigma)
    star = population.bayes_optimum(s)
    mu, mv = metrics.offblock_mass(p)
    risk = _pop_risk_batch(Params(jnp.asarray(p.U), jnp.asarray(p.v)), jnp.asarray(s))
    return Along(risk=np.asarray(risk), dist=np.asarray(metrics.theta_dist(p, star)),
                 offblock=np.maximum(np.asarray(mu), np.asarray(mv)),
                 conservation=np.asarray(metrics.conservation_defect(p)))


def sampled_gd(sigma, p0, n_pairs: int, n_query: int, seed: int, lr: float, steps: int,
               record_every: int, token_kind: str = "gauss") -> Params:
    """Task-sampled linear(inf) gradient descent (C3's protocol; prompts are not used: l_max = 1)."""
    s = check_sigma(sigma)
    tasks = sample(seed, s.shape[0], s, n_pairs, n_query, 1, token_kind)
    return train.gradient_descent("limit", p0, tasks, lr=lr, steps=steps,
                                  record_every=record_every).params


