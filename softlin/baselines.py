"""C5 baselines on the same test prompts (paper Sec. 6): Bayes posterior mean, one-step
preconditioned GD, and the infinite-prompt limit; JAX, float64, batched over prompts.  Every closed
form here is a lambdified result of the symbolic derivation S6 (``python -m symbolic show S6``).

All take the prompt's empirical second moment ``G = Ghat_L`` (n, D, D) of the tokens
``z = (x, y)`` (so ``X^T X = L G[:d, :d]`` and ``X^T y = L G[:d, d]``) and the query tokens
``zq`` (n, 1, D).
"""

from __future__ import annotations

from symbolic.export import s6

from . import models
from ._jax import jnp


def ridge_predict(G, zq, L, noise_var: float, w_var: float):
    """Bayes posterior mean under ``w ~ N(0, w_var I)``, noise ``noise_var`` (both known), symbolic S6:
    ``x_q^T (I / w_var + L G_xx / noise_var)^{-1} L G_xy / noise_var`` (= ridge with penalty
    ``noise_var / w_var``); (n,)."""
    d = G.shape[-1] - 1
    return s6.bayes_fns("jax")["predict"](G[:, :d, :d], G[:, :d, d], zq[:, 0, :d], L, noise_var, w_var)


def bayes_conditional_risk(G, zq, L, noise_var: float, w_var: float):
    """Expected squared error of :func:`ridge_predict` given the prompt and the query (symbolic S6):
    ``noise_var + x_q^T V x_q``, ``V`` the posterior covariance; its mean over test prompts is the Bayes risk; (n,)."""
    d = G.shape[-1] - 1
    return s6.bayes_fns("jax")["conditional_risk"](G[:, :d, :d], G[:, :d, d], zq[:, 0, :d], L, noise_var, w_var)


def gd_predict(G, zq, sigma_prompt):
    """One step of preconditioned GD from 0 (symbolic S6): ``x_q^T Sigma_p^{-1} (1/L) sum_l y_l x_l``; (n,)."""
    d = G.shape[-1] - 1
    return s6.gd_predict_fn("jax")(G[:, :d, d], zq[:, 0, :d], jnp.asarray(sigma_prompt))


def gd_risk_closed(L, sigma_prompt, sigma_query, noise_var: float, w_var: float) -> float:
    """Expected squared error of :func:`gd_predict` for Gaussian data, derived in symbolic S6 (Isserlis):

        E (f - y_q)^2 = s2 + (w_var tr S_q + (w_var tr S_p + s2) tr(S_p^{-1} S_q)) / L.
    """
    return s6.gd_risk_fn()(L, sigma_prompt, sigma_query, noise_var, w_var)


def linear_class_risk(L, sigma_prompt, sigma_query, noise_var: float, w_var: float) -> float:
    """The linear-attention class optimum at prompt length L (symbolic S6): ``min_P E (x_q^T P h - y_q)^2``,
    ``h = X^T y / L``, attained at :func:`linear_class_precond`."""
    return s6.linear_class_risk_fn()(L, sigma_prompt, sigma_query, noise_var, w_var)


def linear_class_precond(L, sigma_prompt, noise_var: float, w_var: float):
    """``P*(L) = ((tr Sigma_p + noise_var / w_var) / L I + (1 + 1/L) Sigma_p)^-1`` (symbolic S6), (d, d)."""
    return s6.linear_class_precond_fn()(L, sigma_prompt, noise_var, w_var)


def limit_optimum_predict(w, zq):
    """The infinite-prompt optimum (symbolic S6: ``v^T Gamma_w U z_q`` at ``U = blockdiag(Sigma_p^{-1}/c, 0)``,
    ``v = c e_D``): ``f = w^T x_q``; (n,)."""
    d = w.shape[-1]
    return s6.limit_optimum_predict_fn("jax")(w, zq[:, 0, :d])


def limit_optimum_risk(noise_var: float) -> float:
    """Risk of :func:`limit_optimum_predict` (symbolic S6): the noise variance, in both covariance modes."""
    return s6.limit_optimum_risk_fn()(noise_var)


def gamma_w_noisy(sigma_prompt, w, noise_var: float):
    """Token covariance given ``w`` with label noise (symbolic S6): ``[[S, S w], [w^T S, w^T S w + s2]]``;
    w (..., d) -> (..., d+1, d+1)."""
    w = jnp.asarray(w)
    d = w.shape[-1]
    flat = jnp.reshape(w, (-1, d))
    G = s6.gamma_w_noisy_fn("jax")(jnp.asarray(sigma_prompt, dtype=flat.dtype), flat, noise_var)
    return jnp.reshape(G, w.shape[:-1] + (d + 1, d + 1))


def limit_predict(params, w, zq, sigma_prompt, noise_var: float):
    """Trained (U, v) at an infinite prompt: ``v^T Gamma_w U z_q`` (both models' L -> inf limit)."""
    G = gamma_w_noisy(sigma_prompt, w, noise_var)
    return models.linear_predict(params, models.MomentData(G, zq, jnp.zeros(zq.shape[:2])))[:, 0]
