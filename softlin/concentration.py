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
* the pooled statistics with block standard errors and the log-log slopes over the L range live
  in :mod:`softlin.metrics` (:func:`~softlin.metrics.rms_over_blocks`, ...).

C1's and C2's measures (:func:`weighted_output_sq_gaps`, :func:`grad_gaps_per_query`) read every
prompt length of the nested family in one pass per probe
(:func:`softlin.kernels.softmax_prefix.softmax_moments_prefix`); :func:`grad_gaps` (C2's
trajectory) keeps one compiled program for every length, the prompts prepared once at ``l_max``
(:func:`softlin.models.prompt_data`) and the length as data (:func:`softlin.models.with_length`).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from . import importance, models, params, population
from ._jax import jax, jnp
from .buffers import handover
from .kernels.softmax_moments import softmax_moments
from .kernels.softmax_prefix import softmax_moments_prefix
from .params import Params
from .tasks import check_sigma, sample

BLOCK_SEED_STRIDE = 7919  # block b of a run with seed s uses seed s + BLOCK_SEED_STRIDE * b


# --------------------------------------------------------------------------- probes
def lambda_beta(A, sigma) -> tuple[float, float]:
    """``(lambda_max(M), beta)`` of docs/maths.md#threshold from the symbolic module (S5)."""
    from symbolic.export.s5 import beta_fn, threshold_M

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
    star_p, scales = star_scales(s, scaled_lambda)
    if star:
        add("star", "star", 1.0, star_p)
    for scale in scales:
        add(f"star_x{scale:.3f}", "scaled_star", scale, Params(scale * star_p.U, scale * star_p.v))
    return out


def star_scales(sigma, targets) -> tuple[Params, list[float]]:
    """``theta*`` (Remark 5.2) and, per target, the scale ``s`` with ``lambda_max(M) = target`` at
    ``A = s A*`` (``M`` scales as ``s^2``): the scaled ``theta*`` of C1 and of C2's sweep."""
    s = check_sigma(sigma)
    star = population.bayes_optimum(s)
    lam_star, _ = lambda_beta(star.U[: s.shape[0], : s.shape[0]], s)
    return star, [float(np.sqrt(target / lam_star)) for target in targets]


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


def softmax_output(p: Params, data: models.PromptData) -> jax.Array:
    """``softmax(L)`` outputs through the softmax-moment kernel (reads only the first L tokens);
    equal to :func:`softlin.models.softmax_predict` (checked in the tests)."""
    return _softmax_out(p.U, p.v, data.zT, data.zq, data.L)


@functools.partial(jax.jit, static_argnames="Ls")
def _output_sq_gap_terms(U, v, zT, zq, f_inf, w, Ls):
    """``w (f_softmax(L) - f_inf)^2`` at every L of ``Ls`` in one pass over the prompts
    (:func:`softlin.kernels.softmax_prefix.softmax_moments_prefix`); (n_L, n, Q).  ``zT``, ``zq`` may hold
    only the first half of antithetic tasks (``f_inf``, ``w`` every task's) when the scores do not read
    the labels: a partner's softmax weights are then its pair's, bit for bit, and its moments the
    same with the label's negated."""
    m1 = softmax_moments_prefix(U, v, zT, zq, Ls, second=False)[0]
    if zT.shape[0] != f_inf.shape[0]:
        m1 = jnp.concatenate([m1, m1 * jnp.ones(m1.shape[-1]).at[-1].set(-1.0)], axis=1)
    return w * (m1 @ v - f_inf) ** 2


def output_sq_gaps(probes: list[dict], tasks, Ls, tilts=None) -> np.ndarray:
    """Mean over tasks and queries of ``(f_softmax(L) - f_linear(inf))^2``; (n_probes, n_L)
    (:func:`weighted_output_sq_gaps`'s first value)."""
    return weighted_output_sq_gaps(probes, tasks, Ls, tilts)[0]


def weighted_output_sq_gaps(probes: list[dict], tasks, Ls, tilts=None):
    """Per probe with tilt ``t`` (0: the tasks' own queries): the queries drawn from S5's proposal
    :func:`softlin.importance.tilted_queries` and the mean over tasks and queries of
    ``weight (f_softmax(L) - f_linear(inf))^2``, unbiased for the mean squared gap; (n_probes, n_L).
    Second value (n_probes, 2, 3): :func:`softlin.importance.sums` of the independent queries'
    weighted terms at ``L_max`` and of their weights (effective sample sizes).  One kernel call
    per probe covers every L (``Ls`` increasing); for antithetic tasks and a probe whose scores do not
    read the labels (``U[d, :d] = 0``, every C1 probe) it reads one prompt per pair."""
    tilts = np.zeros(len(probes)) if tilts is None else np.asarray(tilts, float)
    Ls = tuple(int(L) for L in Ls)
    d, h = tasks.d, tasks.n_distinct
    paired = [h < tasks.n_tasks and not params.scores_read_labels(pr["U"], d) for pr in probes]
    half = dataclasses.replace(tasks, x=tasks.x[:h], w=tasks.w[:h], xq=tasks.xq[:h])
    zT = {True: handover(models.all_tokens(half)) if any(paired) else None,
          False: None if all(paired) else handover(models.all_tokens(tasks))}
    zq = models.query_tokens(tasks)
    out = np.empty((len(probes), len(Ls)))
    diag = np.empty((len(probes), 2, 3))
    for i, pr in enumerate(probes):
        p = probe_params(pr)
        tk, log_w = importance.tilted_queries(tasks, np.asarray(pr["U"])[:d, :d], float(tilts[i]))
        w = np.exp(log_w)
        f_inf = _limit_out(p, models.model_data("limit", tk))
        zq_i = models.query_tokens(tk) if tilts[i] else zq
        terms = np.asarray(_output_sq_gap_terms(p.U, p.v, zT[paired[i]], zq_i[:h] if paired[i] else zq_i,
                                                f_inf, jnp.asarray(w), Ls))
        out[i] = terms.mean(axis=(1, 2))
        diag[i] = [importance.sums(importance.unit_terms(terms[-1])), importance.sums(importance.unit_terms(w))]
    return out, diag


def grad_gaps(plist: list[Params], tasks, Ls) -> np.ndarray:
    """``grad R_L^softmax(theta) - grad R_inf(theta)`` on the same tasks, flattened (U then v);
    (n_params, n_L, (d+1)^2 + d+1): the mean of the per-query differences (:func:`_per_query_grad_gaps`,
    every L in one pass of the prefix kernel), all parameters in one compiled call."""
    Ls = tuple(int(L) for L in Ls)
    zT, zq, yq = handover(models.all_tokens(tasks)), models.query_tokens(tasks), jnp.asarray(tasks.yq)
    G = models.model_data("limit", tasks).G
    Us = jnp.asarray(np.stack([np.asarray(p.U, float) for p in plist]))
    vs = jnp.asarray(np.stack([np.asarray(p.v, float) for p in plist]))
    return np.asarray(_pooled_grad_gaps(Us, vs, zT, zq, yq, G, Ls))


@functools.partial(jax.jit, static_argnames="Ls")
def _pooled_grad_gaps(Us, vs, zT, zq, yq, G, Ls):
    """:func:`grad_gaps` for stacked parameters Us (n_params, D, D), vs (n_params, D), one after the
    other (``lax.map``): (n_params, n_L, D^2 + D)."""
    def one(p):
        dU, dv = _per_query_grad_gaps(p[0], p[1], zT, zq, yq, G, Ls)
        return params.flatten(Params(_pair_mean(dU), _pair_mean(dv)), jnp)
    return jax.lax.map(one, (Us, vs))


@functools.partial(jax.jit, static_argnames="Ls")
def _per_query_grad_gaps(U, v, zT, zq, yq, G, Ls):
    """Per (length, task, query) gradient gaps of ``l = 1/2 (f - y_q)^2``, softmax(L) minus
    linear(inf), at every L of ``Ls`` in one pass over the prompts: ``(dU, dv)``, shapes
    (n_L, n, Q, D, D) and (n_L, n, Q, D)."""
    m1, m2 = softmax_moments_prefix(U, v, zT, zq, Ls)        # (n_L, n, Q, D)
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
    return gU_L - gU_inf, gv_L - gv_inf


def _pair_mean(x):
    """Mean over tasks (axis 1, antithetic partners added first as :func:`softlin.models.pair_sum`)
    and queries (axis 2); (n_L, n, Q, ...) -> (n_L, ...); numpy or traced jax arrays."""
    n, Q = x.shape[1:3]
    s = x.sum(axis=2)
    if n % 2 == 0:
        s = s[:, : n // 2] + s[:, n // 2:]
    return s.sum(axis=1) / (n * Q)


def grad_gaps_per_query(plist: list[Params], tasks, Ls, tilts=None, with_terms: bool = False):
    """Per-query gradient gaps on the same tasks: for each parameter and L,

    * ``msq_U``, ``msq_v`` (n_params, n_L): mean over tasks and queries of
      ``||grad l_L - grad l_inf||^2`` (U and v parts), ``l = 1/2 (f - y_q)^2`` of one prompt and
      query: the squared per-query L2 gap whose root Prop. 3.4 bounds; its expectation does not
      depend on how many tasks a block holds;
    * ``diff`` (n_params, n_L, (d+1)^2 + d+1): the mean of the per-query differences, i.e.
      ``grad R_L - grad R_inf`` of the pooled risk (partners summed first, as the risks do).

    ``tilts`` (n_params,): per parameter, the queries from S5's proposal with tilt ``t`` and every
    per-query term weighted by ``p / q_t`` (:mod:`softlin.importance`; 0 or None: the tasks' own
    queries).  ``with_terms``: also (n_params, 3, 3), :func:`softlin.importance.sums` of the
    independent queries' weighted U and v terms at ``L_max`` and of their weights.
    """
    tilts = np.zeros(len(plist)) if tilts is None else np.asarray(tilts, float)
    Ls = tuple(int(L) for L in Ls)
    zT, zq, yq = handover(models.all_tokens(tasks)), models.query_tokens(tasks), jnp.asarray(tasks.yq)
    D = tasks.d + 1
    msq_U = np.empty((len(plist), len(Ls)))
    msq_v = np.empty((len(plist), len(Ls)))
    diff = np.empty((len(plist), len(Ls), D * D + D))
    terms = np.empty((len(plist), 3, 3))
    for i, p in enumerate(plist):
        U, v = jnp.asarray(p.U), jnp.asarray(p.v)
        tk, log_w = importance.tilted_queries(tasks, np.asarray(p.U)[: D - 1, : D - 1], float(tilts[i]))
        w = np.exp(log_w)
        lim = models.model_data("limit", tk)
        zq_i, yq_i = (models.query_tokens(tk), jnp.asarray(tk.yq)) if tilts[i] else (zq, yq)
        dU, dv = (np.asarray(x) for x in _per_query_grad_gaps(U, v, zT, zq_i, yq_i, lim.G, Ls))
        tU = w * np.sum(dU ** 2, axis=(-2, -1))                # (n_L, n, Q)
        tv = w * np.sum(dv ** 2, axis=-1)
        msq_U[i] = tU.mean(axis=(1, 2))
        msq_v[i] = tv.mean(axis=(1, 2))
        if tilts[i]:
            dU, dv = dU * w[..., None, None], dv * w[..., None]
        mU, mv = _pair_mean(dU), _pair_mean(dv)
        diff[i] = params.flatten(Params(mU, mv))
        terms[i] = [importance.sums(importance.unit_terms(x)) for x in (tU[-1], tv[-1], w)]
    return (msq_U, msq_v, diff, terms) if with_terms else (msq_U, msq_v, diff)
