"""S2 exported: the population risk of linear(inf), its gradient, the Bayes optimum theta*, the block flow
(:mod:`symbolic.s2_population`)."""
from __future__ import annotations

import functools

import numpy as np

from .. import (
    core,
    s2_population,  # noqa: F401  (S2: the derivation exported here)
)
from ..tools import lambdify, xnp
from . import lambdify_result


def _blocks(U, v, Sigma, backend):
    """(U, v, Sigma) -> (B_x, u, v_x, v_y, Sigma, d) as the S2 expressions take them (column vectors)."""
    n = Sigma.shape[-1]
    m = xnp(backend)
    U, v, Sigma = m.asarray(U), m.asarray(v), m.asarray(Sigma)
    return U[:n, :n], m.reshape(U[n, :n], (n, 1)), m.reshape(v[:n], (n, 1)), v[n], Sigma, n


@functools.cache
def population_risk_fn(backend: str = "numpy"):
    """S2: (U (d+1,d+1), v (d+1,), Sigma (d,d)) -> R = E_{w,x_q} 1/2 (v^T Gamma_w U z_q - w^T x_q)^2, any d."""
    from ..s2_population import RISK_ARGS
    f = lambdify_result("S2", "R", RISK_ARGS, backend)

    def risk(U, v, Sigma):
        return f(*_blocks(U, v, Sigma, backend))
    return risk


@functools.cache
def population_risk_grad_fn(backend: str = "numpy"):
    """S2: (U, v, Sigma) -> (dR/dU (d+1,d+1), dR/dv (d+1,)) from the derived matrix-form gradient."""
    from ..s2_population import RISK_ARGS
    gs = {k: lambdify_result("S2", f"dR_d{k}", RISK_ARGS, backend) for k in ("B_x", "u", "v_x", "v_y")}
    m = xnp(backend)

    def grad(U, v, Sigma):
        a = _blocks(U, v, Sigma, backend)
        n = a[-1]
        gB, gu, gvx, gvy = (gs[k](*a) for k in ("B_x", "u", "v_x", "v_y"))
        top = m.concatenate([m.reshape(gB, (n, n)), m.reshape(gu, (1, n))], axis=0)
        gU = m.concatenate([top, m.zeros((n + 1, 1), dtype=top.dtype)], axis=1)
        gv = m.concatenate([m.reshape(gvx, (n,)), m.reshape(m.asarray(gvy, dtype=top.dtype), (1,))])
        return gU, gv
    return grad


@functools.cache
def bayes_optimum_fn():
    """S2 / Remark 5.2: Sigma (d,d) -> (U* = blockdiag(Sigma^-1/c, 0), v* = c e_{d+1}), c = tr(Sigma^-2)^(1/4)."""
    from ..s2_population import Sigma as S
    res = core.get("S2").results
    fA = lambdify((S,), res["U_star_A"], "numpy")
    fc = lambdify((S,), res["c"], "numpy")

    def optimum(Sigma):
        Sigma = np.asarray(Sigma, dtype=float)
        n = Sigma.shape[0]
        U = np.zeros((n + 1, n + 1))
        U[:n, :n] = fA(Sigma)
        v = np.zeros(n + 1)
        v[n] = fc(Sigma)
        return U, v
    return optimum


@functools.cache
def reduced_risk_fn(backend: str = "numpy"):
    """S2 block reduction: (A (d,d), b scalar, Sigma (d,d)) -> R(A, b) = 1/2 tr((b Sigma A - I) Sigma (b Sigma A - I)^T)."""
    from ..s1_tilt import d
    from ..s2_population import A, Sigma, b
    f = lambdify_result("S2", "R_reduced", (A, b, Sigma, d), backend)
    m = xnp(backend)
    return lambda A_, b_, S_: f(m.asarray(A_), b_, m.asarray(S_), S_.shape[-1])


@functools.cache
def reduced_flow_fn(backend: str = "numpy"):
    """S2 block flow: (A, b, Sigma) -> (dA/dt = b S^2 - b^2 S^2 A S, db/dt = tr(A^T S^2) - b tr(A^T S^2 A S))."""
    from ..s1_tilt import d
    from ..s2_population import A, Sigma, b
    fA = lambdify_result("S2", "dA_dt", (A, b, Sigma, d), backend)
    fb = lambdify_result("S2", "db_dt", (A, b, Sigma, d), backend)
    m = xnp(backend)

    def flow(A_, b_, S_):
        A_, S_ = m.asarray(A_), m.asarray(S_)
        return fA(A_, b_, S_, S_.shape[-1]), fb(A_, b_, S_, S_.shape[-1])
    return flow
