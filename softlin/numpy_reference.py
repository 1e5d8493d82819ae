"""Independent plain-numpy reference of the softlin kernels (docs/maths.md, sections 2-6); self-contained.

Written from docs/maths.md alone, with hand-derived gradients, in the style of the seed log's
``icl.py``: it imports nothing from softlin and no jax, so the tests can check the JAX kernels
against it.  Shapes: ``n`` tasks, ``Q`` queries, prompt length ``L``, ``D = d + 1``.
Parameters are plain arrays ``U`` (D, D), ``v`` (D,).  Losses are ``mean 1/2 (f - y_q)^2`` over
tasks and queries.
"""

from __future__ import annotations

import numpy as np


def sqrtm_sym(S):
    """Symmetric square root ``S^{1/2} = Q diag(sqrt(ev)) Q^T`` by eigh; (d, d)."""
    ev, Q = np.linalg.eigh(S)
    return Q @ np.diag(np.sqrt(ev)) @ Q.T


def gamma_w(Sigma, W):
    """``Gamma_w = [[S, S w], [w^T S, w^T S w]]`` (token law given w); W (n, d) -> (n, D, D)."""
    W = np.atleast_2d(W)
    n, d = W.shape
    G = np.empty((n, d + 1, d + 1))
    G[:, :d, :d] = Sigma
    G[:, :d, d] = W @ Sigma
    G[:, d, :d] = W @ Sigma
    G[:, d, d] = np.einsum("ti,ij,tj->t", W, Sigma, W)
    return G


class ICLTasks:
    """Antithetic ICL regression tasks (Eq. 7): X (n, L_max, d), W (n, d), Xq (n, Q, d), y, yq."""

    def __init__(self, d, Sigma, n_pairs, n_query, L_max, seed, token_kind="gauss"):
        """Seed protocol: default_rng(seed) draws W, prompt x, query x; stacked [w; -w]."""
        Sigma = np.asarray(Sigma, dtype=float)
        rng = np.random.default_rng(seed)
        W = rng.standard_normal((n_pairs, d))
        if token_kind == "gauss":
            R = sqrtm_sym(Sigma)
            X = rng.standard_normal((n_pairs, L_max, d)) @ R
            Xq = rng.standard_normal((n_pairs, n_query, d)) @ R
        elif token_kind == "rademacher":
            X = (rng.integers(0, 2, size=(n_pairs, L_max, d)) * 2 - 1).astype(float)
            Xq = (rng.integers(0, 2, size=(n_pairs, n_query, d)) * 2 - 1).astype(float)
        else:
            raise ValueError(f"unknown token_kind {token_kind!r}")
        self._set(np.concatenate([X, X]), np.concatenate([W, -W]), np.concatenate([Xq, Xq]), Sigma)

    @classmethod
    def from_arrays(cls, X, W, Xq, Sigma):
        """Wrap given arrays X (n, L, d), W (n, d), Xq (n, Q, d) (no sampling)."""
        self = cls.__new__(cls)
        self._set(np.asarray(X, float), np.asarray(W, float), np.asarray(Xq, float),
                  np.asarray(Sigma, float))
        return self

    def _set(self, X, W, Xq, Sigma):
        self.X, self.W, self.Xq, self.Sigma = X, W, Xq, Sigma
        self.d = W.shape[1]
        self.y = np.einsum("tld,td->tl", X, W)                       # (n, L_max)
        self.yq = np.einsum("tqd,td->tq", Xq, W)                     # (n, Q)
        self.Zq = np.concatenate([Xq, np.zeros(Xq.shape[:2] + (1,))], axis=2)  # (n, Q, D)
        self.Gamma = gamma_w(Sigma, W)                               # (n, D, D)

    def Z(self, L):
        """First L prompt tokens z_l = (x_l, y_l); (n, L, D)."""
        return np.concatenate([self.X[:, :L], self.y[:, :L, None]], axis=2)

    def Ghat(self, L):
        """Empirical second moment (1/L) sum_{l<=L} z_l z_l^T; (n, D, D)."""
        Z = self.Z(L)
        return np.einsum("tli,tlj->tij", Z, Z) / L


def alpha_max(Sigma):
    """Upper end of the Eq. (9) scale interval, sqrt(2) / (d^{1/4} ||Sigma||_op)."""
    return np.sqrt(2.0) / (Sigma.shape[0] ** 0.25 * np.linalg.norm(Sigma, 2))


def init_eq9(Sigma, alpha=None):
    """Eq. (9): U0 = alpha blockdiag(I/sqrt(d), 0), v0 = alpha e_D, alpha = alpha_max/2; (U, v)."""
    d = Sigma.shape[0]
    a = 0.5 * alpha_max(Sigma) if alpha is None else alpha
    U = np.zeros((d + 1, d + 1))
    U[:d, :d] = a * np.eye(d) / np.sqrt(d)
    v = np.zeros(d + 1)
    v[d] = a
    return U, v


def bayes_optimum(Sigma):
    """Remark 5.2: U* = blockdiag(Sigma^-1 / c, 0), v* = c e_D, c = tr(Sigma^-2)^{1/4}; (U, v)."""
    d = Sigma.shape[0]
    Si = np.linalg.inv(Sigma)
    c = np.trace(Si @ Si) ** 0.25
    U = np.zeros((d + 1, d + 1))
    U[:d, :d] = Si / c
    v = np.zeros(d + 1)
    v[d] = c
    return U, v


def softmax_weights(Z, Zq, U):
    """p[t, q, l] = softmax_l(z_l^T U z_q), max-subtracted; Z (b, L, D), Zq (b, Q, D) -> (b, Q, L)."""
    S = (Zq @ U.T) @ Z.transpose(0, 2, 1)                       # s = (U z_q) . z_l
    E = np.exp(S - S.max(axis=2, keepdims=True))
    return E / E.sum(axis=2, keepdims=True)


def softmax_moments(Z, Zq, U, v):
    """m1 = E_p[z], m2 = E_p[(v.z) z] per task and query; two (b, Q, D)."""
    P = softmax_weights(Z, Zq, U)
    m1 = P @ Z
    m2 = (P * (Z @ v)[:, None, :]) @ Z
    return m1, m2


def predict_softmax(tasks, U, v, L):
    """f = v^T sum_l softmax_l(z_l^T U z_q) z_l; (n, Q)."""
    m1, _ = softmax_moments(tasks.Z(L), tasks.Zq, U, v)
    return m1 @ v


def predict_linear(tasks, U, v, G):
    """f = v^T G U z_q for per-task G (n, D, D) (Ghat_L or Gamma_w); (n, Q)."""
    return np.einsum("i,tij,jk,tqk->tq", v, G, U, tasks.Zq)


def softmax_loss_grad(tasks, U, v, L, block=16):
    """Softmax risk and hand-derived gradient: gv = mean r m1, gU = mean r (m2 - f m1) z_q^T."""
    n, Q = tasks.yq.shape
    Z = tasks.Z(L)
    loss, gU, gv = 0.0, np.zeros_like(U), np.zeros_like(v)
    for t0 in range(0, n, block):
        sl = slice(t0, t0 + block)
        Zq = tasks.Zq[sl]
        m1, m2 = softmax_moments(Z[sl], Zq, U, v)
        f = m1 @ v
        r = f - tasks.yq[sl]
        loss += 0.5 * np.sum(r ** 2)
        gv += np.einsum("bq,bqi->i", r, m1)
        gU += np.einsum("bq,bqi,bqj->ij", r, m2 - f[..., None] * m1, Zq)
    N = n * Q
    return loss / N, gU / N, gv / N


def linear_loss_grad(tasks, U, v, G):
    """Linear-attention risk for per-task G: gv = mean r G U z_q, gU = mean r (G^T v) z_q^T."""
    a = np.einsum("ij,tqj->tqi", U, tasks.Zq)               # U z_q
    Ga = np.einsum("tij,tqj->tqi", G, a)                     # G U z_q
    f = Ga @ v
    r = f - tasks.yq
    N = r.size
    Gv = np.einsum("tji,j->ti", G, v)                        # G^T v
    gv = np.einsum("tq,tqi->i", r, Ga) / N
    gU = np.einsum("tq,ti,tqj->ij", r, Gv, tasks.Zq) / N
    return 0.5 * np.sum(r ** 2) / N, gU, gv


def loss_grad(tasks, U, v, mode, L=None, G=None):
    """Dispatch: mode "softmax" (needs L) or "linear" (needs G)."""
    if mode == "softmax":
        return softmax_loss_grad(tasks, U, v, L)
    if mode == "linear":
        return linear_loss_grad(tasks, U, v, G)
    raise ValueError(f"unknown mode {mode!r}")


def train(tasks, U0, v0, mode, L=None, G=None, lr=0.01, steps=2500, record_every=20):
    """Seed loop: for it in 0..steps: evaluate, record (U, v, loss) if it % record_every == 0, update.

    Returns (U_final, v_final, hist); the final parameters have had steps + 1 updates.
    """
    U, v = np.array(U0, float), np.array(v0, float)
    hist = []
    for it in range(steps + 1):
        loss, gU, gv = loss_grad(tasks, U, v, mode, L, G)
        if it % record_every == 0:
            hist.append((U.copy(), v.copy(), float(loss)))
        U = U - lr * gU
        v = v - lr * gv
    return U, v, hist


def theta_dist(U1, v1, U2, v2):
    """sqrt(||U1 - U2||_F^2 + ||v1 - v2||^2)."""
    return float(np.sqrt(np.sum((U1 - U2) ** 2) + np.sum((v1 - v2) ** 2)))


def offblock_mass(U, v):
    """Off-block Frobenius norms: (||(U[d, :d], U[:d, d])||, ||v[:d]||)."""
    d = U.shape[0] - 1
    return (float(np.sqrt(np.sum(U[d, :d] ** 2) + np.sum(U[:d, d] ** 2))),
            float(np.linalg.norm(v[:d])))


def ols_slope(x, y):
    """OLS fit y = slope x + b: (slope, standard error of the slope, intercept)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    X = np.stack([x, np.ones_like(x)], axis=1)
    coef, res, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    cov = np.sum(resid ** 2) / (len(x) - 2) * np.linalg.inv(X.T @ X)
    return float(coef[0]), float(np.sqrt(cov[0, 0])), float(coef[1])
