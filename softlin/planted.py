"""C2's per-query gradient gaps with the prompt's largest-score token importance-sampled (issue 31,
estimator ``plant``; docs/c1c2_uncertainty.md, "the planted token").

With the task vector integrated out (:mod:`softlin.task_integral`), C2's mean squares at probes with
``lambda_max(M) >= 1/4`` are carried by rare prompts: at a query with score scale
``kappa = |Sigma^1/2 A x_q|``, one token whose standardized score ``t = (Sigma^-1/2 x) . c_hat``
(``c_hat`` the unit whitened score direction) lies near ``t*(L) = log(L) / kappa + kappa / 2`` takes a
large share of the softmax of the first ``L`` tokens.  The estimator ``plant`` draws each prompt from the
defensive mixture ``q = (1 - EPS) p + EPS mean_c q_c`` over components ``c = (probe, query, L_k)``:
``q_c`` redraws one position ``J``, uniform in ``[0, L_k)``, from the score-tilted token law
``N(tau_c c_hat_query, I)`` (whitened), ``tau_c = min(t*(L_k), TAU_MAX)`` at the probe's own ``kappa``
snapped to a grid of step ``TAU_STEP``.  Its likelihood ratio is
``q / p = (1 - EPS) + EPS mean_c mean_{l < L_k} exp(tau_c t_l - tau_c^2 / 2)``, so every prompt's weight
``p / q <= 1 / (1 - EPS)`` is bounded and every length, probe and query stays unbiased.

One prompt serves every probe of a setting and its queries (as in ``task_integral``): the components
are the probes with ``lambda_max >= LAMBDA_PLANT`` (the heavy tail) and the prompt's queries, and the
direction of a query is that of the setting's plant probe with the largest ``lambda_max`` (for probes
that scale one ``A``, as C2's do, S5's tilted queries share their score direction, so one direction
serves them all; for others the estimator stays unbiased and gains less).  ``EPS``, the lengths
``L_k``, ``TAU_MAX`` and ``TAU_STEP`` were fixed by the study before this estimator's first run
(``bench/study_c2_planted_token.py``); ``tau`` comes from the queries alone.
"""

from __future__ import annotations

import numpy as np

from . import importance
from .task_integral import grad_gaps_task_integral
from .tasks import sqrtm_sym

EPS = 0.5            # the plain prompt law's share of the mixture: weights <= 1 / (1 - EPS)
N_LENGTHS = 4        # plant ranges L_k = L_max / 4^i, i < N_LENGTHS (2^10 .. 2^16 at the default)
TAU_MAX = 6.5        # largest standardized score planted
TAU_STEP = 0.25      # tau snapped to multiples of this (components at one query share their exponentials)
LAMBDA_PLANT = 0.25  # probes with lambda_max(M) >= 1/4 get components (infinite block variance beyond)
STREAM = 0x706C616E  # the plant's random stream beside the block's seed ("plan")


def plant_lengths(Ls) -> np.ndarray:
    """The ranges ``L_k = L_max / 4^i`` (i < N_LENGTHS, at least ``min(Ls)``), increasing; (K,)."""
    L_max, L_min = max(Ls), min(Ls)
    return np.array(sorted(L_max // 4 ** i for i in range(N_LENGTHS) if L_max // 4 ** i >= L_min), np.int64)


def plant_probes(lambdas, token_kind: str) -> np.ndarray:
    """Indices of the probes that get components: Gaussian tokens, ``lambda_max >= LAMBDA_PLANT``."""
    if token_kind != "gauss":
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.asarray(lambdas, float) >= LAMBDA_PLANT)


def design(As, xqs, sigma, Lk, ref: int):
    """Per prompt the plant's query directions and grid indices of ``tau``: ``u`` (h, Q, d) with
    ``t = x . u`` the standardized score along the direction of probe ``ref``'s query, ``chat`` (h, Q, d)
    that direction (whitened), ``j`` (h, P, Q, K) the grid index of ``tau_c`` (``tau = j TAU_STEP``),
    from the plant probes' score matrices ``As`` (P, d, d) and their tilted queries ``xqs`` (P, h, Q, d)."""
    root = sqrtm_sym(np.asarray(sigma, float))
    c = np.einsum("phqi,pji,jk->phqk", xqs, As, root)               # Sigma^1/2 A x_q (P, h, Q, d)
    kappa = np.linalg.norm(c, axis=-1)                              # (P, h, Q)
    chat = c[ref] / kappa[ref][..., None]
    u = chat @ np.linalg.inv(root)
    logL = np.log(np.asarray(Lk, float))
    tau = np.minimum(logL / kappa[..., None] + kappa[..., None] / 2, TAU_MAX)      # (P, h, Q, K)
    j = np.rint(tau / TAU_STEP).astype(np.int64)
    return u, chat, np.moveaxis(j, 0, 1)


def likelihood_ratio(x, u, j, Lk, eps: float = EPS) -> np.ndarray:
    """``q / p`` of each prompt x (h, l_max, d) under the mixture (module doc); (h,).  Per prompt and
    query, each distinct ``tau`` of its components is evaluated once, over the tokens its longest
    ``L_k`` reads (one exponential per token there; a quarter of the prompt or less for most ``tau``)."""
    t = np.matmul(u, x.transpose(0, 2, 1))                          # standardized scores (h, Q, l_max)
    h, P, Q, K = j.shape
    ends = np.asarray(Lk)
    starts = np.concatenate([[0], ends[:-1]])
    M = np.empty((h, P, Q, K))                                      # each component's prefix mean
    buf = np.empty(int(ends[-1]))
    for a in range(h):
        for q in range(Q):
            jq = j[a, :, q, :]                                      # (P, K)
            for g in np.unique(jq):
                hit = np.nonzero(jq == g)
                n_k = int(hit[1].max()) + 1                         # the lengths L_0 .. L_{n_k - 1}
                tau = g * TAU_STEP
                e = buf[: ends[n_k - 1]]
                np.multiply(t[a, q, : ends[n_k - 1]], tau, out=e)
                e -= tau * tau / 2
                np.exp(e, out=e)                                    # exp(tau t_l - tau^2 / 2)
                prefix = np.cumsum(np.add.reduceat(e, starts[:n_k])) / ends[:n_k]
                M[a, hit[0], q, hit[1]] = prefix[hit[1]]
    return (1 - eps) + eps * M.reshape(h, -1).mean(axis=1)


def draw(x, chat, j, Lk, sigma, rng, eps: float = EPS) -> np.ndarray:
    """The prompts x (h, l_max, d) with one token planted in each with probability ``eps``: component
    ``(probe, query, L_k)`` uniform, position ``J`` uniform in ``[0, L_k)``, token
    ``Sigma^1/2 (tau c_hat + g)``, ``g ~ N(0, I)``; a copy.  Every prompt consumes the same draws."""
    h, P, Q, K = j.shape
    d = x.shape[-1]
    root = sqrtm_sym(np.asarray(sigma, float))
    plant = rng.random(h) < eps
    comp = rng.integers(0, P * Q * K, size=h)
    pos = rng.random(h)
    fresh = rng.standard_normal((h, d))
    out = np.array(x, dtype=np.float64, copy=True)
    for i in np.flatnonzero(plant):
        p, q, k = np.unravel_index(comp[i], (P, Q, K))
        J = int(pos[i] * Lk[k])
        out[i, J] = (j[i, p, q, k] * TAU_STEP * chat[i, q] + fresh[i]) @ root
    return out


def grad_gaps_plant(plist, tasks, Ls, tilts, with_terms: bool = False, *, seed: int, lambdas):
    """:func:`softlin.task_integral.grad_gaps_task_integral` on the block's prompts redrawn from the
    plant mixture (module doc) with their weights ``p / q``; ``seed`` the block's (the plant's stream
    is ``(seed, STREAM)``), ``lambdas`` the probes' ``lambda_max(M)``.  Without plant probes (bounded
    tokens, or every ``lambda_max < 1/4``) the same numbers as ``task_integral``."""
    tilts = np.asarray(tilts, float)
    idx = plant_probes(lambdas, tasks.token_kind)
    if len(idx) == 0:
        return grad_gaps_task_integral(plist, tasks, Ls, tilts, with_terms)
    d = tasks.d
    h = tasks.n_distinct
    As = np.stack([np.asarray(plist[i].U, float)[:d, :d] for i in idx])
    xqs = np.stack([importance.tilted_queries(tasks, As[n], float(tilts[i]))[0].xq[:h] for n, i in enumerate(idx)])
    Lk = plant_lengths(Ls)
    ref = int(np.argmax(np.asarray(lambdas, float)[idx]))
    u, chat, j = design(As, xqs, tasks.sigma, Lk, ref)
    x = draw(tasks.x[:h], chat, j, Lk, tasks.sigma, np.random.default_rng((int(seed), STREAM)))
    W = 1.0 / likelihood_ratio(x, u, j, Lk)
    return grad_gaps_task_integral(plist, tasks, Ls, tilts, with_terms, prompts=x, prompt_weights=W)
