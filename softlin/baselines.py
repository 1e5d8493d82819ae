"""C5 baselines on the same test prompts (paper Sec. 6): Bayes posterior mean, one-step
preconditioned GD, and the infinite-prompt limit; JAX, float64, batched over prompts.

All take the prompt's empirical second moment ``G = Ghat_L`` (n, D, D) of the tokens
``z = (x, y)`` (so ``X^T X = L G[:d, :d]`` and ``X^T y = L G[:d, d]``) and the query tokens
``zq`` (n, 1, D).
"""

from __future__ import annotations

import numpy as np

from ._jax import jnp
from . import models


def ridge_predict(G, zq, L, noise_var: float, w_var: float):
    """Bayes posterior mean under ``w ~ N(0, w_var I)``, noise ``noise_var`` (both known):
    ``w_hat = (X^T X + (noise_var / w_var) I)^{-1} X^T y``; prediction ``x_q^T w_hat``; (n,)."""
    d = G.shape[-1] - 1
    XtX = L * G[:, :d, :d] + (noise_var / w_var) * jnp.eye(d)
    Xty = L * G[:, :d, d]
    w_hat = jnp.linalg.solve(XtX, Xty[..., None])[..., 0]
    return jnp.sum(zq[:, 0, :d] * w_hat, axis=-1)


def gd_predict(G, zq, sigma_prompt):
    """One step of preconditioned GD from 0: ``x_q^T Sigma^{-1} (1/L) sum_l y_l x_l``; (n,)."""
    d = G.shape[-1] - 1
    P = jnp.linalg.inv(jnp.asarray(sigma_prompt))
    return jnp.einsum("ni,ij,nj->n", zq[:, 0, :d], P, G[:, :d, d])


def gd_risk_closed(L, sigma_prompt, sigma_query, noise_var: float, w_var: float) -> float:
    """Expected squared error of :func:`gd_predict` for Gaussian data (derived here):

    with ``h = (1/L) X^T y``, ``E[h | w] = S_p w`` and, by Isserlis,
    ``Cov(h | w) = (S_p w w^T S_p + (w^T S_p w + s2) S_p) / L``, so ``delta = S_p^{-1} h - w`` has
    covariance ``(w w^T + (w^T S_p w + s2) S_p^{-1}) / L``; the query (``S_q``) and its noise give

        E (f - y_q)^2 = s2 + (w_var tr S_q + (w_var tr S_p + s2) tr(S_q S_p^{-1})) / L.
    """
    Sp, Sq = np.asarray(sigma_prompt), np.asarray(sigma_query)
    return float(noise_var + (w_var * np.trace(Sq) + (w_var * np.trace(Sp) + noise_var)
                              * np.trace(Sq @ np.linalg.inv(Sp))) / L)


def limit_optimum_predict(w, zq):
    """The infinite-prompt optimum (Lemma 2.1 limit at its minimiser): ``f = w^T x_q``; its risk is
    exactly the noise variance, in both covariance modes; (n,)."""
    d = w.shape[-1]
    return jnp.sum(zq[:, 0, :d] * w, axis=-1)


def gamma_w_noisy(sigma_prompt, w, noise_var: float):
    """Token covariance given ``w`` with label noise: ``[[S, S w], [w^T S, w^T S w + s2]]``."""
    G = models.gamma_w(jnp.asarray(sigma_prompt), w)
    return G.at[..., -1, -1].add(noise_var)


def limit_predict(params, w, zq, sigma_prompt, noise_var: float):
    """Trained (U, v) at an infinite prompt: ``v^T Gamma_w U z_q`` (both models' L -> inf limit)."""
    G = gamma_w_noisy(sigma_prompt, w, noise_var)
    return models.linear_predict(params, models.MomentData(G, zq, jnp.zeros(zq.shape[:2])))[:, 0]
