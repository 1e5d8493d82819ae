"""S7 exported: C5's excess risks to first order in 1/L and the softmax - linear gap constant (:mod:`symbolic.s7_first_order`)."""
from __future__ import annotations

import functools

import numpy as np

from .. import s7_first_order  # noqa: F401  (S7: the derivation exported here)
from . import lambdify_result
from .s6 import linear_class_risk_fn


@functools.cache
def first_order_linear_fn():
    """S7: (Sigma_p, Sigma_q, noise_var, w_var) -> K_lin, with R_lin*(L) = noise_var + K_lin / L + O(1/L^2) for the
    linear-attention class optimum (S6's P*(L)); K_lin = w_var tr S_q + (w_var tr S_p + noise_var) tr(S_q S_p^-1)."""
    from ..s7_first_order import K_LIN_ARGS
    f = lambdify_result("S7", "K_lin", K_LIN_ARGS, "numpy")

    def k_lin(sigma_prompt, sigma_query, noise_var, w_var):
        Sp = np.asarray(sigma_prompt, float)
        return float(np.reshape(f(Sp, np.asarray(sigma_query, float), float(noise_var), float(w_var), Sp.shape[0]), ()))
    return k_lin


def softmax_blow_up_c2(sigma_prompt, sigma_query) -> float:
    """S7: K_soft(c) is finite iff c^2 > 2 lambda_max(Sigma_q Sigma_p^-1) (2 in the correct mode)."""
    M = np.asarray(sigma_query, float) @ np.linalg.inv(np.asarray(sigma_prompt, float))
    return float(2.0 * np.max(np.linalg.eigvals(M).real))


@functools.cache
def first_order_softmax_fn():
    """S7: (c, Sigma_p, Sigma_q, noise_var, w_var) -> K_soft(c), with R_soft(c, L) = noise_var + K_soft(c) / L + o(1/L)
    for the softmax reference family U = blockdiag(Sigma_p^-1 / c, 0), v = c e_(d+1); inf at or below the blow-up
    c^2 <= 2 lambda_max(Sigma_q Sigma_p^-1)."""
    from ..s7_first_order import K_SOFT_ARGS
    f = lambdify_result("S7", "K_soft", K_SOFT_ARGS, "numpy")

    def k_soft(c, sigma_prompt, sigma_query, noise_var, w_var):
        Sp, Sq = np.asarray(sigma_prompt, float), np.asarray(sigma_query, float)
        if float(c) ** 2 <= softmax_blow_up_c2(Sp, Sq) * (1 + 1e-12):
            return float("inf")
        return float(np.reshape(f(float(c), Sp, Sq, float(noise_var), float(w_var), Sp.shape[0]), ()))
    return k_soft


@functools.cache
def _correct_fns():
    from ..s7_first_order import CORRECT_ARGS, CORRECT_STAR_ARGS
    return (lambdify_result("S7", "K_soft_correct", CORRECT_ARGS, "numpy"),
            lambdify_result("S7", "c_star_correct", CORRECT_STAR_ARGS, "numpy"),
            lambdify_result("S7", "gap_constant_correct", CORRECT_STAR_ARGS, "numpy"))


def softmax_best_scale(sigma_prompt, sigma_query, noise_var, w_var) -> float:
    """S7: c* = argmin_c K_soft(c), by a bounded scalar minimisation of the lambdified K_soft over log(c^2) above the
    blow-up (any covariance mode); in the correct mode S7 also gives c* in closed form (``first_order_gap``)."""
    from scipy.optimize import minimize_scalar
    k = first_order_softmax_fn()
    lo = softmax_blow_up_c2(sigma_prompt, sigma_query)
    obj = lambda u: np.log(k(np.sqrt(lo * (1.0 + np.exp(u))), sigma_prompt, sigma_query, noise_var, w_var))  # noqa: E731
    r = minimize_scalar(obj, bounds=(-12.0, 8.0), method="bounded", options={"xatol": 1e-10})
    return float(np.sqrt(lo * (1.0 + np.exp(r.x))))


def first_order_gap(sigma_prompt, sigma_query, noise_var, w_var) -> dict:
    """S7: {'c_star', 'K_soft_star', 'K_lin', 'gap_constant' (= K_soft(c*) - K_lin), 'blow_up_c2', 'closed_form'}.
    In the correct mode (Sigma_p == Sigma_q) c* and the gap constant are the lambdified closed forms of S7 (the larger
    root of a quadratic in c^2); otherwise c* is found numerically (``softmax_best_scale``)."""
    Sp, Sq = np.asarray(sigma_prompt, float), np.asarray(sigma_query, float)
    k_lin = first_order_linear_fn()(Sp, Sq, noise_var, w_var)
    correct = Sp.shape == Sq.shape and np.allclose(Sp, Sq, rtol=0, atol=1e-14)
    if correct:
        _, fc, fg = _correct_fns()
        args = (float(np.trace(Sp)), float(noise_var), float(w_var), Sp.shape[0])
        c = float(fc(*args))
    else:
        c = softmax_best_scale(Sp, Sq, noise_var, w_var)
    k_soft = first_order_softmax_fn()(c, Sp, Sq, noise_var, w_var)
    return {"c_star": c, "K_soft_star": k_soft, "K_lin": k_lin, "gap_constant": k_soft - k_lin,
            "blow_up_c2": softmax_blow_up_c2(Sp, Sq), "closed_form": bool(correct)}


def first_order_risks(L, sigma_prompt, sigma_query, noise_var, w_var, c=None) -> dict:
    """S7 (+ S6): the predicted risks at prompt length(s) L (scalar or array): 'R_soft' = s2 + K_soft(c)/L (c = c* by
    default), 'R_lin' = s2 + K_lin/L, 'R_lin_exact' (S6's exact class-optimum risk), 'gap' = (K_soft - K_lin)/L and
    'gap_fraction' = gap / R_lin_exact (the first-order prediction of the measured gap as a fraction of R_linear)."""
    g = first_order_gap(sigma_prompt, sigma_query, noise_var, w_var)
    k_soft = g["K_soft_star"] if c is None else first_order_softmax_fn()(c, sigma_prompt, sigma_query, noise_var, w_var)
    Ls = np.atleast_1d(np.asarray(L, float))
    lin_exact = linear_class_risk_fn()
    r_exact = np.array([lin_exact(int(x), sigma_prompt, sigma_query, noise_var, w_var) for x in Ls])
    gap = (k_soft - g["K_lin"]) / Ls
    out = {"L": Ls, "R_soft": noise_var + k_soft / Ls, "R_lin": noise_var + g["K_lin"] / Ls,
           "R_lin_exact": r_exact, "gap": gap, "gap_fraction": gap / r_exact}
    if np.ndim(L) == 0:
        out = {k: float(v[0]) for k, v in out.items()}
    return out
