"""Numeric callables lambdified from the derived results (numpy or jax backends), fixed argument orders."""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from . import core
from .tools import lambdify, xnp


@functools.lru_cache(maxsize=None)
def lambdify_result(derivation_id: str, result_name: str, args: tuple, backend: str = "numpy"):
    """Lambdify results[result_name] of derivation `derivation_id` in the sympy `args` (a tuple)."""
    return lambdify(args, core.get(derivation_id).results[result_name], backend)


def _blocks(U, v, Sigma, backend):
    """(U, v, Sigma) -> (B_x, u, v_x, v_y, Sigma, d) as the S2 expressions take them (column vectors)."""
    n = Sigma.shape[-1]
    m = xnp(backend)
    U, v, Sigma = m.asarray(U), m.asarray(v), m.asarray(Sigma)
    return U[:n, :n], m.reshape(U[n, :n], (n, 1)), m.reshape(v[:n], (n, 1)), v[n], Sigma, n


def population_risk_fn(backend: str = "numpy"):
    """S2: (U (d+1,d+1), v (d+1,), Sigma (d,d)) -> R = E_{w,x_q} 1/2 (v^T Gamma_w U z_q - w^T x_q)^2, any d."""
    from .s2_population import RISK_ARGS
    f = lambdify_result("S2", "R", RISK_ARGS, backend)

    def risk(U, v, Sigma):
        return f(*_blocks(U, v, Sigma, backend))
    return risk


def population_risk_grad_fn(backend: str = "numpy"):
    """S2: (U, v, Sigma) -> (dR/dU (d+1,d+1), dR/dv (d+1,)) from the derived matrix-form gradient."""
    from .s2_population import RISK_ARGS
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


def limit_predictor_fn(backend: str = "numpy"):
    """S1: (U, v, Sigma, w (d,), xq (d,)) -> f = v^T Gamma_w U z_q, z_q = (x_q, 0)."""
    from .s1_tilt import matrix_symbols
    ms = matrix_symbols()
    f = lambdify_result("S1", "f_inf", (ms["v"], ms["Sigma"], ms["w"], ms["U"], ms["zq"]), backend)
    m = xnp(backend)

    def predict(U, v, Sigma, w, xq):
        U, v, Sigma, w, xq = (m.asarray(a) for a in (U, v, Sigma, w, xq))
        n = Sigma.shape[-1]
        zq = m.concatenate([m.reshape(xq, (n,)), m.zeros((1,), dtype=m.result_type(xq, float))]).reshape(n + 1, 1)
        return m.reshape(f(m.reshape(v, (n + 1, 1)), Sigma, m.reshape(w, (n, 1)), U, zq), ())
    return predict


def bayes_optimum_fn():
    """S2 / Remark 5.2: Sigma (d,d) -> (U* = blockdiag(Sigma^-1/c, 0), v* = c e_{d+1}), c = tr(Sigma^-2)^(1/4)."""
    from .s2_population import Sigma as S
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


def reduced_risk_fn(backend: str = "numpy"):
    """S2 block reduction: (A (d,d), b scalar, Sigma (d,d)) -> R(A, b) = 1/2 tr((b Sigma A - I) Sigma (b Sigma A - I)^T)."""
    from .s1_tilt import d
    from .s2_population import A, Sigma, b
    f = lambdify_result("S2", "R_reduced", (A, b, Sigma, d), backend)
    m = xnp(backend)
    return lambda A_, b_, S_: f(m.asarray(A_), b_, m.asarray(S_), S_.shape[-1])


def reduced_flow_fn(backend: str = "numpy"):
    """S2 block flow: (A, b, Sigma) -> (dA/dt = b S^2 - b^2 S^2 A S, db/dt = tr(A^T S^2) - b tr(A^T S^2 A S))."""
    from .s1_tilt import d
    from .s2_population import A, Sigma, b
    fA = lambdify_result("S2", "dA_dt", (A, b, Sigma, d), backend)
    fb = lambdify_result("S2", "db_dt", (A, b, Sigma, d), backend)
    m = xnp(backend)

    def flow(A_, b_, S_):
        A_, S_ = m.asarray(A_), m.asarray(S_)
        return fA(A_, b_, S_, S_.shape[-1]), fb(A_, b_, S_, S_.shape[-1])
    return flow


def euler_defect_fn(backend: str = "numpy"):
    """S4: softmax sample (U, v, z (L,d+1), zq (d+1,), yq) -> <U,dl/dU> - <v,dl/dv> = r (Cov_p(v.z, s) - f)."""
    from .s4_euler import f_, m_s, m_vs, y_q
    g = lambdify_result("S4", "softmax_defect", (f_, m_vs, m_s, y_q), backend)
    m = xnp(backend)

    def defect(U, v, z, zq, yq):
        U, v, z, zq = (m.asarray(a) for a in (U, v, z, zq))
        s = z @ (U @ zq)
        p = m.exp(s - m.max(s))
        p = p / m.sum(p)
        vz = z @ v
        return g(m.sum(p * vz), m.sum(p * vz * s), m.sum(p * s), yq)
    return defect


def beta_fn():
    """S5: lambda_max(M) -> beta = min(1/2, 1/(4 lambda_max)) (numpy)."""
    from .s5_threshold import lam
    beta = core.get("S5").results["beta"]
    return lambda lmax: float(beta.subs(lam, sp.Float(float(lmax), 17)))


def threshold_M(A, Sigma) -> float:
    """S5: lambda_max(M), M = Sigma^(1/2) A^T Sigma A Sigma^(1/2) (= Sigma^(1/2) A Sigma A Sigma^(1/2), A symmetric)."""
    A, Sigma = np.asarray(A, float), np.asarray(Sigma, float)
    ev, Q = np.linalg.eigh(Sigma)
    R = (Q * np.sqrt(ev)) @ Q.T
    M = R @ A.T @ Sigma @ A @ R
    return float(np.linalg.eigvalsh((M + M.T) / 2).max())


def exp_moment_fn():
    """S5: (A, Sigma) -> E_{x_q ~ N(0,Sigma)} exp(x_q^T A^T Sigma A x_q) = det(I - 2M)^(-1/2), inf if lambda_max >= 1/2."""
    from .s1_tilt import d
    M = sp.MatrixSymbol("M", d, d)
    expr = core.get("S5").results["E_exp_s"]

    def moment(A, Sigma):
        A, Sigma = np.asarray(A, float), np.asarray(Sigma, float)
        if threshold_M(A, Sigma) >= 0.5:
            return float("inf")
        ev, Q = np.linalg.eigh(Sigma)
        R = (Q * np.sqrt(ev)) @ Q.T
        Mn = R @ A.T @ Sigma @ A @ R
        Mn = (Mn + Mn.T) / 2
        val = expr.xreplace({M: sp.Matrix(Mn), d: Mn.shape[0]}).replace(
            lambda e: isinstance(e, sp.Determinant), lambda e: e.arg.as_explicit().det())
        return float(val)
    return moment


def parity_table(model: str) -> dict:
    """S3: model in {'linear_inf', 'linear_L', 'softmax_L'} -> {'U[i,j]' / 'v[i]': +1 (even) / -1 (odd)} at d = 2."""
    key = {"linear(inf)": "linear_inf", "linear(L)": "linear_L", "softmax(L)": "softmax_L"}.get(model, model)
    return {k: int(v) for k, v in core.get("S3").results[f"parity_{key}"].items()}
