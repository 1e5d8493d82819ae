"""The three predictors (docs/maths.md#models) and their empirical risks; JAX, float64.

``softmax(L)``: ``f = v^T sum_{k<=L} softmax_k(z_k^T U z_q) z_k``;
``linear(L)``:  ``f = v^T Ghat_L U z_q``, ``Ghat_L = (1/L) sum_{k<=L} z_k z_k^T``;
``limit``:      ``f = v^T Gamma_w U z_q`` (Lemma 2.1, the ``L -> inf`` limit of both).

Array conventions: prompt tokens are stored transposed, ``zT`` (n_tasks, d+1, l_max), so that
the long prompt axis is the contiguous one, and a prompt length ``L <= l_max`` selects a prefix;
queries ``zq`` (n_tasks, n_query, d+1) with last entry 0;
targets ``yq`` (n_tasks, n_query).  The softmax risk carries a hand-derived, fused backward pass
(three softmax-weighted token moments per query); ``softmax_risk_autodiff`` is the plain
autodiff version kept as a test oracle.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._jax import jax, jnp
from .buffers import aligned_empty, handover
from .kernels.softmax_moments import softmax_moments
from .params import Params
from .tasks import Tasks

MODELS = ("softmax", "linear", "limit")


class PromptData(NamedTuple):
    """Data of the softmax model: ``zT`` (n, d+1, l_max), ``zq`` (n, Q, d+1), ``yq`` (n, Q), ``L`` (scalar).

    Only the first ``L`` tokens are used; ``L`` is data (not a static shape), so one compiled
    program serves every prompt length of a nested family.
    """

    zT: jax.Array
    zq: jax.Array
    yq: jax.Array
    L: jax.Array


class MomentData(NamedTuple):
    """Data of the linear models: second moment ``G`` (n, d+1, d+1), ``zq`` (n, Q, d+1), ``yq`` (n, Q)."""

    G: jax.Array
    zq: jax.Array
    yq: jax.Array


# --------------------------------------------------------------------------- data preparation
def gamma_w(sigma, w):
    """``Gamma_w = [[Sigma, Sigma w], [w^T Sigma, w^T Sigma w]]``; w (..., d) -> (..., d+1, d+1)."""
    sigma = jnp.asarray(sigma)
    w = jnp.asarray(w)
    sw = w @ sigma  # (..., d): (Sigma w)^T, Sigma symmetric
    wsw = jnp.sum(sw * w, axis=-1)
    top = jnp.concatenate([jnp.broadcast_to(sigma, sw.shape[:-1] + sigma.shape), sw[..., :, None]], -1)
    bottom = jnp.concatenate([sw, wsw[..., None]], -1)[..., None, :]
    return jnp.concatenate([top, bottom], axis=-2)


def query_tokens(tasks: Tasks) -> jax.Array:
    """Query tokens ``z_q = (x_q, 0)``; (n_tasks, n_query, d+1)."""
    xq = jnp.asarray(tasks.xq)
    return jnp.concatenate([xq, jnp.zeros(xq.shape[:-1] + (1,))], axis=-1)


def _check_L(tasks: Tasks, L) -> int:
    if L is None:
        raise ValueError("this model needs a prompt length L")
    if int(L) != L or not 1 <= L <= tasks.l_max:
        raise ValueError(f"L must be an integer in [1, l_max={tasks.l_max}], got {L!r}")
    return int(L)


def all_tokens(tasks: Tasks) -> np.ndarray:
    """Every prompt token ``z_l = (x_l, y_l)``, transposed; (n_tasks, d+1, l_max) numpy, written once
    into a 64-byte aligned buffer (no concatenated intermediate); antithetic partners ``(x, w)``,
    ``(x, -w)`` transposed once and their labels negated (the same bits as the plain formula)."""
    x, w = tasks.x, tasks.w
    n, l_max, d = x.shape
    zT = aligned_empty((n, d + 1, l_max))
    h = n // 2
    if tasks.antithetic:
        zT[:h, :d] = x[:h].transpose(0, 2, 1)
        zT[h:, :d] = zT[:h, :d]
        zT[:h, d] = np.einsum("tld,td->tl", x[:h], w[:h])
        zT[h:, d] = -zT[:h, d]
    else:
        zT[:, :d] = x.transpose(0, 2, 1)
        zT[:, d] = tasks.y
    return zT


def prompt_data(tasks: Tasks, L: int) -> PromptData:
    """The prompts (all ``l_max`` tokens, of which the first ``L`` are used), queries and targets."""
    L = _check_L(tasks, L)
    return PromptData(handover(all_tokens(tasks)), query_tokens(tasks), jnp.asarray(tasks.yq),
                      jnp.asarray(L, dtype=jnp.int64))


def with_length(data: PromptData, L: int) -> PromptData:
    """The same prompts at another length ``L <= l_max`` (no copy of the tokens)."""
    if int(L) != L or not 1 <= L <= data.zT.shape[-1]:
        raise ValueError(f"L must be an integer in [1, l_max={data.zT.shape[-1]}], got {L!r}")
    return data._replace(L=jnp.asarray(int(L), dtype=jnp.int64))


def prompt_moment(zT, L) -> jax.Array:
    """``Ghat_L = (1/L) sum_{k<=L} z_k z_k^T`` over the first ``L`` tokens (``L`` may be traced);
    zT (n, d+1, l) -> (n, d+1, d+1)."""
    keep = (jnp.arange(zT.shape[-1]) < L).astype(zT.dtype)
    return jnp.einsum("nil,njl->nij", zT * keep, zT) / L


def empirical_moment(tasks: Tasks, L: int) -> jax.Array:
    """:func:`prompt_moment` of the tasks' prompts at length ``L``; (n_tasks, d+1, d+1)."""
    L = _check_L(tasks, L)
    return prompt_moment(jnp.asarray(all_tokens(tasks)[:, :, :L]), L)


def model_data(model: str, tasks: Tasks, L=None):
    """The arrays a model's risk needs: PromptData for softmax, MomentData for linear/limit."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; expected one of {MODELS}")
    if model == "softmax":
        return prompt_data(tasks, L)
    G = empirical_moment(tasks, L) if model == "linear" else gamma_w(tasks.sigma, tasks.w)
    return MomentData(G, query_tokens(tasks), jnp.asarray(tasks.yq))


def check_params(params: Params, d: int) -> Params:
    U, v = jnp.asarray(params.U), jnp.asarray(params.v)
    if U.shape != (d + 1, d + 1) or v.shape != (d + 1,):
        raise ValueError(f"params must have U ({d + 1}, {d + 1}) and v ({d + 1},), "
                         f"got {U.shape} and {v.shape}")
    return Params(U, v)


# --------------------------------------------------------------------------- kernels
def softmax_predict(params: Params, data: PromptData) -> jax.Array:
    """``f = v^T sum_{k<=L} softmax_k(z_k^T U z_q) z_k``; (n, Q)."""
    a = data.zq @ params.U.T
    s = jnp.einsum("nqj,njl->nql", a, data.zT)
    s = jnp.where(jnp.arange(data.zT.shape[-1]) < data.L, s, -jnp.inf)
    p = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("nql,njl->nqj", p, data.zT) @ params.v


def linear_output(params: Params, G, zq) -> jax.Array:
    """``f = v^T G U z_q``; G (n, d+1, d+1), zq (n, ..., d+1) -> (n, ...)."""
    return jnp.einsum("j,njk,n...k->n...", params.v, G, zq @ params.U.T)


def linear_predict(params: Params, data: MomentData) -> jax.Array:
    """:func:`linear_output` for ``G = Ghat_L`` (linear) or ``Gamma_w`` (limit); (n, Q)."""
    return linear_output(params, data.G, data.zq)


def softmax_score_grad(f, m1, m2) -> jax.Array:
    """``df/da = m2 - f m1`` at ``a = U z_q`` (so ``df/dU = (m2 - f m1) z_q^T``, ``df/dv = m1``), from
    the softmax moments ``m1 = E_p[z]``, ``m2 = E_p[(v.z) z]``; f (...), m1, m2 (..., d+1)."""
    return m2 - f[..., None] * m1


def pair_sum(x):
    """Sum over the task axis 0, adding antithetic partners ``i`` and ``n/2 + i`` first.

    With tasks stacked ``[w; -w]`` the off-block gradient contributions of partners are exact
    negatives at block-structured parameters, so this order cancels them exactly (docs/maths.md#parity)
    instead of leaving a rounding-level asymmetry that gradient descent can amplify.
    """
    n = x.shape[0]
    if n % 2 == 0:
        x = x[: n // 2] + x[n // 2:]
    return jnp.sum(x, axis=0)


SEED_BLOCK = 16  # tasks per block in the seed-order reduction


def seed_order_sum(x, block: int = SEED_BLOCK):
    """Sum over the task axis 0 *without* pairing antithetic partners, in the seed script's order:
    blocks of ``block`` consecutive tasks (stacked ``[w; -w]``) summed, the block sums accumulated
    one after another (``((B0 + B1) + B2) + ...``, as the loop of the seed log's / the numpy
    reference's ``softmax_loss_grad``).

    The off-block contributions of partners still cancel in exact arithmetic but not in rounding:
    this is the order in which the seed log's run let a rounding-level asymmetry grow (C3d measures
    how far).  The order within a block is XLA's.
    """
    n = x.shape[0]
    total = jnp.sum(x[:block], axis=0)
    for t0 in range(block, n, block):
        total = total + jnp.sum(x[t0:t0 + block], axis=0)
    return total


def _half_mse(f, yq, reduce=pair_sum):
    return 0.5 * reduce(jnp.sum((f - yq) ** 2, axis=1)) / f.size


def softmax_risk_autodiff(params: Params, data: PromptData) -> jax.Array:
    """Empirical softmax risk ``mean 1/2 (f - y_q)^2`` differentiated by plain autodiff (oracle)."""
    return _half_mse(softmax_predict(params, data), data.yq)


def linear_risk(params: Params, data: MomentData) -> jax.Array:
    """Empirical risk ``mean 1/2 (v^T G U z_q - y_q)^2`` of the linear models."""
    return _half_mse(linear_predict(params, data), data.yq)


def _softmax_moments(params: Params, data: PromptData):
    """Softmax-weighted token moments per query: ``m1 = E_p[z]``, ``m2 = E_p[(v.z) z]``; (n, Q, d+1)."""
    return softmax_moments(params.U, params.v, data.zT, data.zq, data.L)


def _make_softmax_risk(reduce):
    """The empirical softmax risk with the fused moment gradient, tasks reduced by ``reduce``."""

    @jax.custom_vjp
    def risk(params: Params, data: PromptData) -> jax.Array:
        m1, _ = _softmax_moments(params, data)
        return _half_mse(m1 @ params.v, data.yq, reduce)

    def fwd(params, data):
        m1, m2 = _softmax_moments(params, data)
        f = m1 @ params.v
        r = f - data.yq
        return _half_mse(f, data.yq, reduce), (r, f, m1, m2, data)

    def bwd(res, g):
        # dL/dv = r m1;  dL/da = r (m2 - f m1);  dL/dU = dL/da z_q^T  (a = U z_q)
        r, f, m1, m2, data = res
        scale = g / r.size
        gv = scale * reduce(jnp.einsum("nq,nqj->nj", r, m1))
        da = r[..., None] * softmax_score_grad(f, m1, m2)
        gU = scale * reduce(jnp.einsum("nqi,nqj->nij", da, data.zq))
        return Params(gU, gv), jax.tree.map(jnp.zeros_like, data)

    risk.defvjp(fwd, bwd)
    return risk


@jax.custom_vjp
def softmax_from_moments(U, v, m1, m2, zq):
    """Softmax attention's prediction ``f = v^T E_p[z]`` from the moments at ``(U, v)``; (n,).

    ``m1 = E_p[z]``, ``m2 = E_p[(v.z) z]`` (n, D) must be those of ``(U, v)``; the gradient is
    :func:`softmax_score_grad` (``p`` depends on ``U`` through ``s_l = z_l^T U z_q``); one query per task.
    """
    return m1 @ v


def _softmax_from_moments_fwd(U, v, m1, m2, zq):
    f = m1 @ v
    return f, (f, m1, m2, zq)


def _softmax_from_moments_bwd(res, ct):
    f, m1, m2, zq = res
    gU = jnp.einsum("n,ni,nj->ij", ct, softmax_score_grad(f, m1, m2), zq)
    return gU, ct @ m1, jnp.zeros_like(m1), jnp.zeros_like(m2), jnp.zeros_like(zq)


softmax_from_moments.defvjp(_softmax_from_moments_fwd, _softmax_from_moments_bwd)


softmax_risk = _make_softmax_risk(pair_sum)
softmax_risk.__doc__ = "Empirical softmax risk ``mean 1/2 (f - y_q)^2`` with the fused moment gradient (partners summed first)."
softmax_risk_seed_order = _make_softmax_risk(seed_order_sum)
softmax_risk_seed_order.__doc__ = "As :func:`softmax_risk`, tasks summed in the seed's order (:func:`seed_order_sum`)."


def softmax_value_and_grad(params: Params, data: PromptData):
    """(risk, gradient) of the softmax model, fused; the gradient is a Params."""
    return jax.value_and_grad(softmax_risk)(params, data)


def linear_value_and_grad(params: Params, data: MomentData):
    """(risk, gradient) of the linear / limit models by autodiff (the risk is a cheap bilinear form)."""
    return jax.value_and_grad(linear_risk)(params, data)


def softmax_value_and_grad_seed_order(params: Params, data: PromptData):
    """(risk, gradient) of the softmax model, fused, tasks summed in the seed's order (no pairing)."""
    return jax.value_and_grad(softmax_risk_seed_order)(params, data)


def linear_value_and_grad_seed_order(params: Params, data: MomentData):
    """(risk, gradient) of the linear / limit models, hand-derived, tasks summed in the seed's order:
    ``gv = mean r G U z_q``, ``gU = mean r (G v) z_q^T`` (``G`` symmetric)."""
    a = data.zq @ params.U.T                               # U z_q        (n, Q, D)
    Ga = jnp.einsum("njk,nqk->nqj", data.G, a)             # G U z_q      (n, Q, D)
    f = Ga @ params.v
    r = f - data.yq
    N = r.size
    Gv = jnp.einsum("nji,j->ni", data.G, params.v)         # G^T v        (n, D)
    gv = seed_order_sum(jnp.einsum("nq,nqj->nj", r, Ga)) / N
    gU = seed_order_sum(jnp.einsum("ni,nqj->nij", Gv, r[..., None] * data.zq)) / N
    return _half_mse(f, data.yq, seed_order_sum), Params(gU, gv)


VALUE_AND_GRAD = {"softmax": softmax_value_and_grad, "linear": linear_value_and_grad,
                  "limit": linear_value_and_grad}
# the same gradients without the pair summation (C3d: how far rounding lets the off-block mass grow)
VALUE_AND_GRAD_SEED_ORDER = {"softmax": softmax_value_and_grad_seed_order,
                             "linear": linear_value_and_grad_seed_order,
                             "limit": linear_value_and_grad_seed_order}
_PREDICT = {"softmax": softmax_predict, "linear": linear_predict, "limit": linear_predict}
_RISK = {"softmax": softmax_risk, "linear": linear_risk, "limit": linear_risk}


# --------------------------------------------------------------------------- public API
_predict_jit = jax.jit(lambda model, p, data: _PREDICT[model](p, data), static_argnums=0)
_risk_jit = jax.jit(lambda model, p, data: _RISK[model](p, data), static_argnums=0)
_vg_jit = jax.jit(lambda model, p, data: VALUE_AND_GRAD[model](p, data), static_argnums=0)


def predict(model: str, params: Params, tasks: Tasks, L=None) -> jax.Array:
    """Predictions of ``model`` in {"softmax", "linear", "limit"} at prompt length L; (n_tasks, n_query)."""
    data = model_data(model, tasks, L)
    return _predict_jit(model, check_params(params, tasks.d), data)


def risk(model: str, params: Params, tasks: Tasks, L=None) -> jax.Array:
    """Empirical risk ``mean over tasks and queries of 1/2 (f - y_q)^2``; scalar."""
    data = model_data(model, tasks, L)
    return _risk_jit(model, check_params(params, tasks.d), data)


def risk_of(model: str, params: Params, data) -> jax.Array:
    """Empirical risk on prebuilt data (``model_data`` / ``with_length``): reuse one data set for many L."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; expected one of {MODELS}")
    return _risk_jit(model, Params(jnp.asarray(params.U), jnp.asarray(params.v)), data)


def risk_and_grad(model: str, params: Params, tasks: Tasks, L=None):
    """(empirical risk, its gradient as Params)."""
    data = model_data(model, tasks, L)
    return _vg_jit(model, check_params(params, tasks.d), data)


def grad(model: str, params: Params, tasks: Tasks, L=None) -> Params:
    """Gradient of :func:`risk` with respect to ``(U, v)``."""
    return risk_and_grad(model, params, tasks, L)[1]
