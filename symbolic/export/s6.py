"""S6 exported: C5's baselines: one GD step, the linear class optimum, the Bayes posterior, the infinite prompt
(:mod:`symbolic.s6_baselines`)."""
from __future__ import annotations

import functools

import numpy as np

from .. import s6_baselines  # noqa: F401  (S6: the derivation exported here)
from ..tools import xnp
from . import _batched, lambdify_result


def _s6(name, args, backend):
    return lambdify_result("S6", name, args, backend)


@functools.cache
def gd_risk_fn():
    """S6: (L, Sigma_p, Sigma_q, noise_var, w_var) -> E (f_GD - y_q)^2 of one preconditioned GD step (numpy float)."""
    from ..s6_baselines import GD_RISK_ARGS
    f = _s6("gd_risk", GD_RISK_ARGS, "numpy")

    def risk(L, sigma_prompt, sigma_query, noise_var, w_var):
        Sp, Sq = np.asarray(sigma_prompt, float), np.asarray(sigma_query, float)
        return float(f(L, Sp, Sq, float(noise_var), float(w_var), Sp.shape[0]))
    return risk


@functools.cache
def linear_class_risk_fn():
    """S6: (L, Sigma_p, Sigma_q, noise_var, w_var) -> min over P of E (x_q^T P h - y_q)^2: the linear-attention
    class optimum at prompt length L (numpy float)."""
    from ..s6_baselines import GD_RISK_ARGS
    f = _s6("linear_class_risk", GD_RISK_ARGS, "numpy")

    def risk(L, sigma_prompt, sigma_query, noise_var, w_var):
        Sp, Sq = np.asarray(sigma_prompt, float), np.asarray(sigma_query, float)
        return float(np.reshape(f(L, Sp, Sq, float(noise_var), float(w_var), Sp.shape[0]), ()))
    return risk


@functools.cache
def linear_class_precond_fn():
    """S6: (L, Sigma_p, noise_var, w_var) -> P*(L) (d, d), the preconditioner of the linear-attention class
    optimum x_q^T P* h at prompt length L (it does not depend on Sigma_q)."""
    from ..s6_baselines import GD_RISK_ARGS
    f = _s6("linear_class_P", GD_RISK_ARGS, "numpy")

    def precond(L, sigma_prompt, noise_var, w_var):
        Sp = np.asarray(sigma_prompt, float)
        return np.asarray(f(L, Sp, Sp, float(noise_var), float(w_var), Sp.shape[0]), float)
    return precond


@functools.cache
def gd_predict_fn(backend: str = "numpy"):
    """S6: (G_xy (n, d), x_q (n, d), Sigma_p (d, d)) -> x_q^T Sigma_p^-1 G_xy, (n,)."""
    from ..s6_baselines import GD_PREDICT_ARGS
    f = _s6("gd_predict", GD_PREDICT_ARGS, backend)
    m = xnp(backend)

    def one(gxy, xq, Sp):
        k = Sp.shape[-1]
        return m.reshape(f(m.reshape(gxy, (k, 1)), m.reshape(xq, (k, 1)), Sp, k), ())
    return _batched(one, backend, (0, 0, None))


@functools.cache
def bayes_fns(backend: str = "numpy"):
    """S6: {'predict', 'conditional_risk'}: (G_xx (n,d,d), G_xy (n,d), x_q (n,d), L, noise_var, w_var) -> (n,)."""
    from ..s6_baselines import BAYES_ARGS
    m = xnp(backend)
    out = {}
    for key, name in (("predict", "bayes_predict"), ("conditional_risk", "bayes_conditional_risk")):
        f = _s6(name, BAYES_ARGS, backend)

        def one(gxx, gxy, xq, L, s2, wv, _f=f):
            k = gxx.shape[-1]
            return m.reshape(_f(gxx, m.reshape(gxy, (k, 1)), m.reshape(xq, (k, 1)), L, s2, wv, k), ())
        out[key] = _batched(one, backend, (0, 0, 0, None, None, None))
    return out


@functools.cache
def gamma_w_noisy_fn(backend: str = "numpy"):
    """S6: (Sigma_p (d,d), w (n, d), noise_var) -> Cov(z | w) with label noise, (n, d+1, d+1)."""
    from ..s6_baselines import NOISY_GAMMA_ARGS
    f = _s6("Gamma_w_noisy", NOISY_GAMMA_ARGS, backend)
    m = xnp(backend)

    def one(Sp, w, s2):
        k = Sp.shape[-1]
        return m.reshape(f(Sp, m.reshape(w, (k, 1)), s2, k), (k + 1, k + 1))
    return _batched(one, backend, (None, 0, None))


@functools.cache
def limit_optimum_predict_fn(backend: str = "numpy"):
    """S6: (w (n, d), x_q (n, d)) -> the infinite-prompt optimum prediction w^T x_q, (n,)."""
    from ..s6_baselines import OPT_PREDICT_ARGS
    f = _s6("limit_optimum_predict", OPT_PREDICT_ARGS, backend)
    m = xnp(backend)

    def one(w, xq):
        k = w.shape[-1]
        return m.reshape(f(m.reshape(w, (k, 1)), m.reshape(xq, (k, 1))), ())
    return _batched(one, backend, (0, 0))


@functools.cache
def limit_optimum_risk_fn():
    """S6: (noise_var) -> the infinite-prompt optimum risk (both covariance modes): the noise variance."""
    from ..s6_baselines import s2
    f = _s6("limit_optimum_risk", (s2,), "numpy")
    return lambda noise_var: float(f(float(noise_var)))


@functools.cache
def limit_block_risk_fn():
    """S6: (A, b, Sigma_p, Sigma_q, noise_var, w_var) -> risk of the block-structured infinite-prompt predictor."""
    from ..s6_baselines import BLOCK_RISK_ARGS
    f = _s6("limit_block_risk", BLOCK_RISK_ARGS, "numpy")

    def risk(A, b, sigma_prompt, sigma_query, noise_var, w_var):
        Sp = np.asarray(sigma_prompt, float)
        return float(f(np.asarray(A, float), float(b), Sp, np.asarray(sigma_query, float), float(noise_var),
                       float(w_var), Sp.shape[0]))
    return risk
