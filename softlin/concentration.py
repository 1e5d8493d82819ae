"""Concentration of softmax(L) on linear(inf) at fixed parameters (C1 outputs, C2 gradients).

Shared by claims C1 and C2:

* :func:`probe_design` — the probe parameters (Eq. 9 init, ``theta*``, ``s theta*`` scaled to a
  target ``lambda_max(M)``), each with its ``lambda_max(M)`` and ``beta`` from the symbolic
  module (S5);
* :func:`task_blocks` — independent task blocks (one seed each, antithetic pairs, nested prompts),
  the unit of the standard errors;
* :func:`output_sq_gaps` / :func:`grad_gaps` — per block and prompt length, the mean squared gap
  ``softmax(L) - linear(inf)`` of the outputs, and the gradient difference vector, on the same tasks;
  :func:`grad_gaps_per_query` — the mean squared per-query gradient gap (C2's measure) and the
  pooled difference in one pass;
* :func:`rms_over_blocks`, :func:`norm_over_blocks`, :func:`fit_upper_half` — pooled statistics
  with block standard errors, and the log-log slope over the upper half of the L range.

One compiled program serves every prompt length: the prompts are prepared once at ``l_max``
(:func:`softlin.models.prompt_data`) and the length is data (:func:`softlin.models.with_length`).
"""

from __future__ import annotations

import numpy as np

from . import metrics, models, params
from ._jax import jax, jnp
from .fused import softmax_moments
from .params import Params
from .tasks import check_sigma, sample

BLOCK_SEED_STRIDE = 7919  # block b of a run with seed s uses seed s + BLOCK_SEED_STRIDE * b


# --------------------------------------------------------------------------- probes
def lambda_beta(A, sigma) -> tuple[float, float]:
    """``(lambda_max(M), beta)`` of SPEC section 4 from the symbolic module (S5)."""
    from symbolic.export import beta_fn, threshold_M

    lam = threshold_M(A, sigma)
    return lam, beta_fn()(lam)


def probe_design(sigma, eq9: bool = True, star: bool = True, scaled_lambda=(),
                 label: str = "") -> list[dict]:
    """Probe parameters at ``sigma``: Eq. (9) init, ``theta*`` and ``s theta*`` with ``s`` chosen so
    that ``lambda_max(M) = target`` for each target in ``scaled_lambda`` (``M`` scales as ``s^2``).

    Each probe is a JSON-friendly dict: name, kind, s, U, v (nested lists), lambda_max, beta.
    """
    s = check_sigma(sigma)
    d = s.shape[0]
    out = []

    def add(name, kind, scale, p):
        lam, beta = lambda_beta(np.asarray(p.U)[:d, :d], s)
        out.append(dict(name=f"{label}{name}", kind=kind, s=float(scale), U=np.asarray(p.U).tolist(),
                        v=np.asarray(p.v).tolist(), lambda_max=lam, beta=beta))

    if eq9:
        add("eq9", "eq9", 1.0, params.init_eq9(s))
    star_p = params.bayes_optimum(s)
    lam_star, _ = lambda_beta(star_p.U[:d, :d], s)
    if star:
        add("star", "star", 1.0, star_p)
    for target in scaled_lambda:
        scale = float(np.sqrt(target / lam_star))
        add(f"star_x{scale:.3f}", "scaled_star", scale, Params(scale * star_p.U, scale * star_p.v))
    return out


def probe_params(probe: dict) -> Params:
    return Params(jnp.asarray(probe["U"], dtype=jnp.float64), jnp.asarray(probe["v"], dtype=jnp.float64))


# --------------------------------------------------------------------------- tasks
def block_seed(seed: int, b: int) -> int:
    return int(seed) + BLOCK_SEED_STRIDE * int(b)


def task_blocks(seed: int, n_blocks: int, sigma, n_pairs: int, n_query: int, l_max: int,
                token_kind: str = "gauss"):
    """Yield ``n_blocks`` independent antithetic task sets (block ``b`` drawn with :func:`block_seed`)."""
    s = check_sigma(sigma)
    for b in range(n_blocks):
        yield sample(block_seed(seed, b), s.shape[0], s, n_pairs, n_query, l_max, token_kind)


# --------------------------------------------------------------------------- kernels (jitted once)
@jax.jit
def _softmax_out(U, v, zT, zq, L):
    return softmax_moments(U, v, zT, zq, L)[0] @ v


_limit_out = jax.jit(lambda p, data: models.linear_predict(p, data))
_softmax_vg = jax.jit(models.softmax_value_and_grad)
_linear_vg = jax.jit(models.linear_value_and_grad)


def softmax_output(p: Params, data: models.PromptData) -> jax.Array:
    """``softmax(L)`` outputs through the fused moment kernel (reads only the first L tokens);
    equal to :func:`softlin.models.softmax_predict` (checked in the tests)."""
    return _softmax_out(p.U, p.v, data.zT, data.zq, data.L)


def output_sq_gaps(probes: list[dict], tasks, Ls) -> np.ndarray:
    """Mean over tasks and queries of ``(f_softmax(L) - f_linear(inf))^2``; (n_probes, n_L)."""
    data = models.prompt_data(tasks, max(Ls))
    lim = models.model_data("limit", tasks)
    out = np.empty((len(probes), len(Ls)))
    for i, pr in enumerate(probes):
        p = probe_params(pr)
        f_inf = _limit_out(p, lim)
        for j, L in enumerate(Ls):
            f_L = softmax_output(p, models.with_length(data, L))
            out[i, j] = float(jnp.mean((f_L - f_inf) ** 2))
    return out


def flat_grad(g: Params) -> np.ndarray:
    return np.concatenate([np.asarray(g.U).ravel(), np.asarray(g.v).ravel()])


def grad_gaps(plist: list[Params], tasks, Ls) -> np.ndarray:
    """``grad R_L^softmax(theta) - grad R_inf(theta)`` on the same tasks, flattened (U then v);
    (n_params, n_L, (d+1)^2 + d+1)."""
    data = models.prompt_data(tasks, max(Ls))
    lim = models.model_data("limit", tasks)
    D = tasks.d + 1
    out = np.empty((len(plist), len(Ls), D * D + D))
    for i, p in enumerate(plist):
        p = Params(jnp.asarray(p.U), jnp.asarray(p.v))
        g_inf = flat_grad(_linear_vg(p, lim)[1])
        for j, L in enumerate(Ls):
            out[i, j] = flat_grad(_softmax_vg(p, models.with_length(data, L))[1]) - g_inf
    return out


@jax.jit
def _per_query_grads(U, v, zT, zq, yq, L, G):
    """Per (task, query) gradients of ``l = 1/2 (f - y_q)^2`` for softmax(L) and linear(inf):
    ``(gU_L, gv_L, gU_inf, gv_inf)``, shapes (n, Q, D, D) and (n, Q, D)."""
    m1, m2 = softmax_moments(U, v, zT, zq, L)
    f = m1 @ v
    r = f - yq
    gv_L = r[..., None] * m1                                   # dl/dv = r m1
    gU_L = (r[..., None] * (m2 - f[..., None] * m1))[..., :, None] * zq[..., None, :]
    a = zq @ U.T                                               # U z_q
    Ga = jnp.einsum("njk,nqk->nqj", G, a)                      # Gamma_w U z_q
    r_inf = Ga @ v - yq
    gv_inf = r_inf[..., None] * Ga                             # dl/dv = r Gamma_w U z_q
    Gv = jnp.einsum("nji,j->ni", G, v)                         # Gamma_w^T v
    gU_inf = (r_inf[..., None] * Gv[:, None, :])[..., :, None] * zq[..., None, :]
    return gU_L, gv_L, gU_inf, gv_inf


def grad_gaps_per_query(plist: list[Params], tasks, Ls):
    """Per-query gradient gaps on the same tasks: for each parameter and L,

    * ``msq_U``, ``msq_v`` (n_params, n_L): mean over tasks and queries of
      ``||grad l_L - grad l_inf||^2`` (U and v parts), ``l = 1/2 (f - y_q)^2`` of one prompt and
      query: the squared per-query L2 gap whose root Prop. 3.4 bounds; its expectation does not
      depend on how many tasks a block holds;
    * ``diff`` (n_params, n_L, (d+1)^2 + d+1): the mean of the per-query differences, i.e.
      ``grad R_L - grad R_inf`` of the pooled risk (partners summed first, as the risks do).
    """
    data = models.prompt_data(tasks, max(Ls))
    lim = models.model_data("limit", tasks)
    D = tasks.d + 1
    n, Q = np.asarray(tasks.yq).shape
    msq_U = np.empty((len(plist), len(Ls)))
    msq_v = np.empty((len(plist), len(Ls)))
    diff = np.empty((len(plist), len(Ls), D * D + D))
    for i, p in enumerate(plist):
        U, v = jnp.asarray(p.U), jnp.asarray(p.v)
        for j, L in enumerate(Ls):
            gU_L, gv_L, gU_inf, gv_inf = _per_query_grads(U, v, data.zT, data.zq, data.yq,
                                                          jnp.asarray(int(L), dtype=jnp.int64), lim.G)
            dU = np.asarray(gU_L - gU_inf)
            dv = np.asarray(gv_L - gv_inf)
            msq_U[i, j] = float(np.mean(np.sum(dU ** 2, axis=(-2, -1))))
            msq_v[i, j] = float(np.mean(np.sum(dv ** 2, axis=-1)))
            mU = np.asarray(models.pair_sum(jnp.sum(jnp.asarray(dU), axis=1))) / (n * Q)
            mv = np.asarray(models.pair_sum(jnp.sum(jnp.asarray(dv), axis=1))) / (n * Q)
            diff[i, j] = np.concatenate([mU.ravel(), mv.ravel()])
    return msq_U, msq_v, diff


# --------------------------------------------------------------------------- block statistics
def rms_over_blocks(msq) -> tuple[np.ndarray, np.ndarray]:
    """RMS over equal-size blocks and its standard error (delta method).

    ``msq`` (n_blocks, ...) holds per-block mean squared gaps; RMS = sqrt(mean_b msq_b),
    s.e. = s.e.(mean_b msq_b) / (2 RMS), s.e.(mean) = std_b(ddof=1) / sqrt(n_blocks).
    """
    msq = np.asarray(msq, dtype=np.float64)
    B = msq.shape[0]
    if B < 2:
        raise ValueError("rms_over_blocks needs at least 2 independent blocks")
    rms = np.sqrt(msq.mean(axis=0))
    se = msq.std(axis=0, ddof=1) / np.sqrt(B) / (2 * rms)
    return rms, se


def norm_over_blocks(vecs, n_boot: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``||mean_b vec_b||`` over the last axis and its block-bootstrap standard error.

    ``vecs`` (n_blocks, ..., k): per-block difference vectors (equal block sizes, so their mean is
    the pooled difference).  Returns arrays of shape ``vecs.shape[1:-1]``.
    """
    vecs = np.asarray(vecs, dtype=np.float64)
    B = vecs.shape[0]
    if B < 2:
        raise ValueError("norm_over_blocks needs at least 2 independent blocks")
    val = np.linalg.norm(vecs.mean(axis=0), axis=-1)
    idx = np.random.default_rng(seed).integers(0, B, size=(n_boot, B))
    boot = np.linalg.norm(vecs[idx].mean(axis=1), axis=-1)
    return val, boot.std(axis=0, ddof=1)


def upper_half(Ls) -> np.ndarray:
    """Mask of the upper half of the L range in log scale (log2 L >= midpoint), at least 3 points."""
    lg = np.log2(np.asarray(Ls, dtype=np.float64))
    mask = lg >= 0.5 * (lg.min() + lg.max())
    if mask.sum() < 3:
        mask = np.zeros(lg.size, bool)
        mask[-3:] = True
    return mask


def fit_slope(Ls, vals, mask=None) -> tuple[float, float]:
    """OLS slope of log10(vals) on log10(L) (over ``mask``) and its standard error."""
    Ls = np.asarray(Ls, dtype=np.float64)
    vals = np.asarray(vals, dtype=np.float64)
    if mask is not None:
        Ls, vals = Ls[mask], vals[mask]
    s, se, _ = metrics.ols_slope(np.log10(Ls), np.log10(np.maximum(vals, 1e-300)))
    return s, se


def curve_summary(Ls, vals, se=None) -> dict:
    """Slopes (upper half and full range), increases, ratio last/first, relative s.e."""
    vals = np.asarray(vals, dtype=np.float64)
    up = upper_half(Ls)
    s_up, se_up = fit_slope(Ls, vals, up)
    s_all, se_all = fit_slope(Ls, vals)
    out = dict(slope=s_up, slope_se=se_up, slope_full=s_all, slope_full_se=se_all,
               fit_L=[int(L) for L in np.asarray(Ls)[up]], n_increases=metrics.n_increases(vals),
               first=float(vals[0]), last=float(vals[-1]), ratio=float(vals[-1] / vals[0]))
    if len(vals) >= 4:
        out["slope_last4"] = fit_slope(np.asarray(Ls)[-4:], vals[-4:])[0]
    if se is not None:
        rel = np.asarray(se, dtype=np.float64) / vals
        out["rel_se_max"] = float(rel.max())
        out["rel_se_last"] = float(rel[-1])
        out["last_over_se"] = float(vals[-1] / max(float(np.asarray(se)[-1]), 1e-300))
    return out
