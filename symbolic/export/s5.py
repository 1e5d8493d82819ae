"""S5 exported: the concentration threshold lambda_max(M), the exponent beta, the MGF of the quadratic form
(:mod:`symbolic.s5_threshold`)."""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from .. import s5_threshold  # noqa: F401  (S5: the derivation exported here)
from . import lambdify_result


@functools.cache
def beta_fn():
    """S5: lambda_max(M) -> beta = min(1/2, 1/(4 lambda_max)) (numpy), the derived piecewise exponent."""
    from ..s5_threshold import lam
    f = lambdify_result("S5", "beta", (lam,), "numpy")
    return lambda lmax: float(f(float(lmax)))


def _s5_args():
    from ..s1_tilt import d
    return sp.MatrixSymbol("A", d, d), sp.MatrixSymbol("Sigma", d, d), d


def threshold_M(A, Sigma) -> float:
    """S5: lambda_max(M), M = Sigma^(1/2) A^T Sigma A Sigma^(1/2): the lambdified largest eigenvalue of the similar
    matrix A^T Sigma A Sigma (the MGF's first pole is t* = 1 / (2 lambda_max))."""
    A_, S_, d_ = _s5_args()
    f = lambdify_result("S5", "lambda_max", (A_, S_), "numpy")
    return float(f(np.asarray(A, float), np.asarray(Sigma, float)))


@functools.cache
def mgf_quadratic_form_fn():
    """S5: (t, K (d,d), Sigma (d,d)) -> E_{x ~ N(0, Sigma)} exp(t x^T K x) = det(I - 2 t Sigma K)^(-1/2) below the pole."""
    _, S_, d_ = _s5_args()
    t, K = sp.Symbol("t", real=True), sp.MatrixSymbol("K", d_, d_)
    f = lambdify_result("S5", "mgf_quadratic_form", (t, K, S_, d_), "numpy")
    return lambda t_, K_, Sigma: float(f(float(t_), np.asarray(K_, float), np.asarray(Sigma, float), np.shape(Sigma)[0]))


@functools.cache
def exp_moment_fn():
    """S5: (A, Sigma) -> E_{x_q ~ N(0,Sigma)} exp(x_q^T A^T Sigma A x_q) = det(I - 2M)^(-1/2), inf if lambda_max >= 1/2."""
    A_, S_, d_ = _s5_args()
    f = lambdify_result("S5", "E_exp_s", (A_, S_, d_), "numpy")

    def moment(A, Sigma):
        A, Sigma = np.asarray(A, float), np.asarray(Sigma, float)
        if threshold_M(A, Sigma) >= 0.5:
            return float("inf")
        return float(f(A, Sigma, Sigma.shape[0]))
    return moment


@functools.cache
def importance_tilt_term_fn():
    """S5: (lambda_i, t) -> lambda_i / (1 - 2 t lambda_i), one eigenvalue's term of the stationarity
    equation sum_i lambda_i / (1 - 2 t lambda_i) = log L_max of the query proposal's tilt (issue 31)."""
    from ..s5_threshold import T  # noqa: F401  (the derivation's symbols)
    lm, t = sp.Symbol("lambda", real=True), sp.Symbol("t", real=True)
    f = lambdify_result("S5", "importance_tilt_term", (lm, t), "numpy")
    return lambda lam, t_: np.asarray(f(np.asarray(lam, float), float(t_)), float)


def importance_tilt(eigenvalues, L_max: float) -> float:
    """S5: the query proposal's tilt t = min(1, root in (0, 1 / (2 lambda_max)) of
    sum_i lambda_i / (1 - 2 t lambda_i) = log L_max), by bisection (the sum increases in t);
    eigenvalues (d,) of M."""
    lam = np.asarray(eigenvalues, float)
    term = importance_tilt_term_fn()
    T_ = float(np.log(L_max))
    if lam.max() <= 0 or np.sum(term(lam, 0.0)) >= T_:
        return 0.0
    lo, hi = 0.0, min(1.0, 0.5 / lam.max())
    if hi == 1.0 and 2 * lam.max() < 1 and np.sum(term(lam, 1.0)) <= T_:
        return 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if np.sum(term(lam, mid)) > T_ else (mid, hi)
    return lo
