"""C2's per-query gradient gaps with the task vector integrated out exactly (issue 31, estimator
``task_integral``; docs/c1c2_uncertainty.md, "the task vector integrated out").

At every C2 probe ``U``'s label row is 0 (Eq. (9) and ``theta*`` are block-diagonal, the sweep scales
``theta*``), so a token's score ``x_l^T A x_q`` does not involve ``w`` and the softmax weights are
those of the covariates alone.  With ``b = v_x + v_y w`` and the softmax moments of the covariates,
``m1 = E_a[x]`` (d) and ``m2 = E_a[x x^T]`` (d, d), every quantity of the gradient gap is a
polynomial in ``w`` (``y_l = w^T x_l``, ``Gamma_w`` of docs/maths.md):

* ``f_L = b^T m1``, ``E_a[z] = (m1, w^T m1)``, ``E_a[(v.z) z] = (m2 b, w^T m2 b)``;
* ``grad_U l_L = r (E_a[(v.z) z] - f_L E_a[z]) z_q^T``, ``grad_v l_L = r E_a[z]``, ``r = f_L - w^T x_q``;
* ``f_inf = b^T Sigma A x_q``, ``grad_U l_inf = r_inf (Sigma b, w^T Sigma b) z_q^T``,
  ``grad_v l_inf = r_inf (Sigma A x_q, w^T Sigma A x_q)``.

The squared U gap has degree 6 in ``w`` and the squared v gap degree 4, so the product Gauss-Hermite
rule with 4 nodes per coordinate (exact to degree 7) gives ``E_w`` of both exactly for
``w ~ N(0, I_d)``: each prompt and query yields the task average itself, not one draw of it.  The
prompt's covariates and the queries come from :func:`softlin.tasks.sample` (the ``w`` it draws is not
used; antithetic partners share covariates, so one prompt per pair), the queries from S5's proposal
with their weights as in :func:`softlin.concentration.grad_gaps_per_query`, and the moments from one
pass of the prefix kernel over tokens ``(x, x_i x_j for i <= j)``.
"""

from __future__ import annotations

import functools

import numpy as np

from . import importance, params
from ._jax import jax, jnp
from .buffers import aligned_empty, handover
from .kernels.softmax_prefix import softmax_moments_prefix
from .params import Params

GH_NODES = 4  # per coordinate: exact for polynomials of degree <= 7 in each coordinate of w


@functools.lru_cache(maxsize=None)
def gauss_hermite(d: int, n: int = GH_NODES) -> tuple[np.ndarray, np.ndarray]:
    """Product Gauss-Hermite rule for ``E f(w)``, ``w ~ N(0, I_d)``: nodes (n^d, d) and weights (n^d,)
    summing to 1 (probabilists' Hermite polynomials)."""
    x, wt = np.polynomial.hermite_e.hermegauss(n)
    wt = wt / wt.sum()
    grids = np.meshgrid(*([x] * d), indexing="ij")
    wgrid = np.meshgrid(*([wt] * d), indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=-1), np.prod([g.ravel() for g in wgrid], axis=0)


def check_label_free(U, d: int) -> None:
    """Raise unless ``U``'s label row is 0 (the scores must not read the labels)."""
    if params.scores_read_labels(U, d):
        raise ValueError(f"task_integral needs U's label row to be 0 (scores free of w); got {np.asarray(U)[d, :d].tolist()}")


def moment_tokens(x: np.ndarray) -> np.ndarray:
    """Tokens ``(x, x_i x_j for i <= j)`` transposed for the prefix kernel; x (n, l_max, d) ->
    (n, d + d(d+1)/2, l_max), 64-byte aligned (read by JAX without a copy: :mod:`softlin.buffers`)."""
    n, l_max, d = x.shape
    iu, ju = np.triu_indices(d)
    out = aligned_empty((n, d + len(iu), l_max))
    xt = x.transpose(0, 2, 1)
    out[:, :d] = xt
    out[:, d:] = xt[:, iu] * xt[:, ju]
    return out


@functools.partial(jax.jit, static_argnames="Ls")
def _covariate_moments(A, zT, xq, Ls):
    """Softmax moments of the covariates at every L of ``Ls``: ``m1`` (n_L, n, Q, d) and ``m2``
    (n_L, n, Q, d, d), the weights ``exp(x_l^T A x_q)`` over the first L tokens."""
    n, K, _ = zT.shape
    d = xq.shape[-1]
    U = jnp.zeros((K, K)).at[:d, :d].set(A)
    zq = jnp.concatenate([xq, jnp.zeros(xq.shape[:-1] + (K - d,))], axis=-1)
    m, _ = softmax_moments_prefix(U, jnp.zeros(K), zT, zq, Ls, second=False)
    iu, ju = np.triu_indices(d)
    m2 = jnp.zeros(m.shape[:-1] + (d, d)).at[..., iu, ju].set(m[..., d:]).at[..., ju, iu].set(m[..., d:])
    return m[..., :d], m2


@jax.jit
def _integrated_terms(m1, m2, xq, sigma, A, v, nodes, wts):
    """``E_w ||grad_U l_L - grad_U l_inf||^2``, ``E_w ||grad_v ...||^2`` (n_L, n, Q) and ``E_w`` of the
    differences (n_L, n, Q, D, D), (n_L, n, Q, D), exactly by the Gauss-Hermite rule (module doc)."""
    d = xq.shape[-1]
    vx, vy = v[:d], v[d]
    b = vx + vy * nodes                                        # (K, d)
    f = jnp.einsum("...i,ki->...k", m1, b)                     # (n_L, n, Q, K)
    yq = jnp.einsum("nqi,ki->nqk", xq, nodes)
    r = f - yq
    wm1 = jnp.einsum("...i,ki->...k", m1, nodes)
    m2b = jnp.einsum("...ij,kj->...ki", m2, b)                 # (n_L, n, Q, K, d)
    wm2b = jnp.einsum("...ki,ki->...k", m2b, nodes)
    m1k = jnp.broadcast_to(m1[..., None, :], m2b.shape)
    uL = r[..., None] * jnp.concatenate([m2b - f[..., None] * m1k, (wm2b - f * wm1)[..., None]], -1)
    sa = jnp.einsum("ij,nqj->nqi", sigma @ A, xq)              # Sigma A x_q (n, Q, d)
    f_inf = jnp.einsum("nqi,ki->nqk", sa, b)
    r_inf = f_inf - yq
    sb = b @ sigma                                             # (K, d): (Sigma b)^T
    Gv = jnp.concatenate([sb, jnp.sum(sb * nodes, -1, keepdims=True)], -1)   # (K, D)
    uU = uL - r_inf[..., None] * Gv                            # (n_L, n, Q, K, D)
    q2 = jnp.sum(xq * xq, -1)                                  # |z_q|^2 = |x_q|^2
    tU = jnp.einsum("...k,k->...", jnp.sum(uU * uU, -1), wts) * q2
    gv_L = r[..., None] * jnp.concatenate([m1k, wm1[..., None]], -1)
    Ga = jnp.concatenate([jnp.broadcast_to(sa[:, :, None, :], r_inf.shape + (d,)),
                          jnp.einsum("nqi,ki->nqk", sa, nodes)[..., None]], -1)
    dv = gv_L - r_inf[..., None] * Ga
    tv = jnp.einsum("...k,k->...", jnp.sum(dv * dv, -1), wts)
    zq = jnp.concatenate([xq, jnp.zeros(xq.shape[:-1] + (1,))], -1)
    mU = jnp.einsum("lnqkj,k,nqi->lnqji", uU, wts, zq)
    mv = jnp.einsum("...kj,k->...j", dv, wts)
    return tU, tv, mU, mv


def per_query_terms(p: Params, zT, xq, sigma, Ls) -> tuple[np.ndarray, ...]:
    """Per (length, prompt, query), unweighted: ``E_w`` of the squared U and v gaps (n_L, n, Q) and of the
    differences (n_L, n, Q, D, D), (n_L, n, Q, D); ``zT`` the prompts' :func:`moment_tokens`, ``xq``
    (n, Q, d) their queries, ``sigma`` (d, d) the covariates' covariance."""
    d = xq.shape[-1]
    check_label_free(p.U, d)
    A = jnp.asarray(np.asarray(p.U)[:d, :d])
    xq = jnp.asarray(xq)
    m1, m2 = _covariate_moments(A, zT, xq, tuple(int(L) for L in Ls))
    nodes, wts = (jnp.asarray(a) for a in gauss_hermite(d))
    return tuple(np.asarray(a) for a in _integrated_terms(m1, m2, xq, jnp.asarray(sigma), A, jnp.asarray(p.v),
                                                          nodes, wts))


def grad_gaps_task_integral(plist: list[Params], tasks, Ls, tilts=None, with_terms: bool = False,
                            prompts=None, prompt_weights=None):
    """:func:`softlin.concentration.grad_gaps_per_query`'s ``(msq_U, msq_v, diff[, terms])`` with ``w``
    integrated out (module doc): per parameter and L the mean over the prompts (one per antithetic
    pair) and their queries of the weighted ``E_w`` terms; ``diff`` the mean of ``E_w`` of the
    differences; ``terms`` the :func:`softlin.importance.sums` of the weighted U and v terms at
    ``L_max`` and of the weights, one entry per independent (prompt, query).  ``prompts`` (h, l_max, d)
    and ``prompt_weights`` (h,): covariates drawn from another law than the tasks' and their weights
    ``p / q`` (:mod:`softlin.planted`), in place of the tasks' own covariates."""
    tilts = np.zeros(len(plist)) if tilts is None else np.asarray(tilts, float)
    Ls = tuple(int(L) for L in Ls)
    d = tasks.d
    h = tasks.n_distinct                                            # one prompt per antithetic pair
    zT = handover(moment_tokens(tasks.x[:h] if prompts is None else prompts))
    pw = np.ones(h) if prompt_weights is None else np.asarray(prompt_weights, float)
    msq_U = np.empty((len(plist), len(Ls)))
    msq_v = np.empty((len(plist), len(Ls)))
    diff = np.empty((len(plist), len(Ls), (d + 1) ** 2 + d + 1))
    terms = np.empty((len(plist), 3, 3))
    for i, p in enumerate(plist):
        tk, log_w = importance.tilted_queries(tasks, np.asarray(p.U)[:d, :d], float(tilts[i]))
        w = np.exp(log_w[:h])
        if prompt_weights is not None:
            w = w * pw[:, None]
        tU, tv, mU, mv = per_query_terms(p, zT, tk.xq[:h], tasks.sigma, Ls)
        tU, tv = w * tU, w * tv
        msq_U[i] = tU.mean(axis=(1, 2))
        msq_v[i] = tv.mean(axis=(1, 2))
        diff[i] = params.flatten(Params((mU * w[..., None, None]).mean(axis=(1, 2)),
                                        (mv * w[..., None]).mean(axis=(1, 2))))
        terms[i] = [importance.sums(x.ravel()) for x in (tU[-1], tv[-1], w)]
    return (msq_U, msq_v, diff, terms) if with_terms else (msq_U, msq_v, diff)
