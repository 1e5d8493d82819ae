"""Importance sampling of the query for C1/C2's mean squared gaps (issue 31, docs/c1c2_uncertainty.md).

The mean squared gap at a query is about ``(exp(s(x_q)) - 1) / L`` (docs/maths.md#threshold), so the
plain average over queries ``x_q ~ p = N(0, Sigma)`` (estimator ``blocks``) has an infinite variance
beyond ``lambda_max(M) = 1/4``: rare queries with a large score carry the measurement.  Estimator
``importance`` draws the queries from S5's tilted Gaussian ``q_t = p exp(t s) / mgf(t)``,
``N(0, (Sigma^-1 - 2 t K)^-1)`` with ``K = A^T Sigma A``, and weights each query's squared gap by
``p / q_t = mgf(t) exp(-t s)``: the same expectation, and at ``t = 1`` the weighted first-order term
is bounded.  The tilt ``t`` per probe is S5's (:func:`symbolic.export.s5.importance_tilt`), derived
from the probe's eigenvalues and ``L_max`` alone, never from measured gaps.  The proposal reuses the
task block's standard normals (common random numbers), so ``t = 0`` is the plain estimator exactly.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .tasks import Tasks, check_sigma, sqrtm_sym

ESTIMATORS = ("blocks", "importance", "task_integral", "plant")  # the last two: C2 only (softlin.task_integral, softlin.planted)
# a block holding more than this share of the mean square at L_max: its s.e. is a lower bound. Set to 0.5
# after issue 31's default runs (was 0.25): with the plain estimator shares 0.5-0.77 came with disjoint
# groups of blocks 4-10 s.e. apart; with importance sampling shares up to 0.37 came with groups agreeing
# and two task seeds at z RMS 0.85 (docs/c1c2_uncertainty.md, docs/criteria_history.md)
SHARE_MAX = 0.5


def score_form(A, sigma) -> np.ndarray:
    """``K = A^T Sigma A``: ``s(x_q) = x_q^T K x_q``, the variance of the log-weights at a query; (d, d)."""
    A, s = np.asarray(A, float), np.asarray(sigma, float)
    return A.T @ s @ A


def eigenvalues_M(A, sigma) -> np.ndarray:
    """Eigenvalues of ``M = Sigma^1/2 K Sigma^1/2`` (S5's matrix), ascending; (d,)."""
    r = sqrtm_sym(check_sigma(sigma))
    m = r @ score_form(A, sigma) @ r
    return np.linalg.eigvalsh((m + m.T) / 2)


def probe_tilt(probe: dict, sigma, token_kind: str, L_max: int, estimator: str) -> float:
    """The tilt ``t`` of a probe: S5's rule for ``importance`` and ``task_integral`` with Gaussian
    tokens, else 0 (plain queries)."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if estimator == "blocks" or token_kind != "gauss":
        return 0.0
    from symbolic.export.s5 import importance_tilt

    d = np.asarray(sigma).shape[0]
    return importance_tilt(eigenvalues_M(np.asarray(probe["U"])[:d, :d], sigma), L_max)


def tilted_queries(tasks: Tasks, A, t: float) -> tuple[Tasks, np.ndarray]:
    """The tasks with their queries moved to ``q_t`` (same standard normals) and the log-weights
    ``log p/q_t = log mgf(t) - t s(x_q)``; (tasks, (n_tasks, n_query)).  ``t = 0``: unchanged, 0."""
    n, Q = tasks.xq.shape[:2]
    if t == 0:
        return tasks, np.zeros((n, Q))
    if tasks.token_kind != "gauss":
        raise ValueError("importance sampling of the query needs Gaussian tokens")
    from symbolic.export.s5 import mgf_quadratic_form_fn

    sigma = tasks.sigma
    K = score_form(A, sigma)
    prec = np.linalg.inv(sigma) - 2 * t * K
    if np.linalg.eigvalsh((prec + prec.T) / 2).min() <= 0:
        raise ValueError(f"tilt t = {t} is beyond the pole 1 / (2 lambda_max(M)): no proposal")
    g = tasks.xq @ np.linalg.inv(sqrtm_sym(sigma))
    xq = g @ sqrtm_sym(np.linalg.inv((prec + prec.T) / 2))
    s = np.einsum("nqi,ij,nqj->nq", xq, K, xq)
    log_w = np.log(mgf_quadratic_form_fn()(t, K, sigma)) - t * s
    return dataclasses.replace(tasks, xq=xq), log_w


def unit_terms(terms) -> np.ndarray:
    """Per independent query (antithetic partners share their queries and prompts, so a pair's two
    terms are averaged): (n_tasks, Q) -> (n_tasks / 2 * Q,)."""
    a = np.asarray(terms, float)
    n = a.shape[0]
    return ((a[: n // 2] + a[n // 2:]) / 2).ravel() if n % 2 == 0 else a.ravel()


def sums(x) -> np.ndarray:
    """``(sum x, sum x^2, count)`` of a flat array: what :func:`kish_ess` pools over blocks; (3,)."""
    x = np.asarray(x, float)
    return np.array([x.sum(), np.sum(x * x), x.size])


def kish_ess(s) -> float:
    """Kish's effective sample size ``(sum x)^2 / sum x^2`` from :func:`sums` (summed over blocks)."""
    s = np.asarray(s, float)
    return float(s[..., 0] ** 2 / s[..., 1]) if s[..., 1] > 0 else 0.0


def largest_share(block_means) -> float:
    """The largest block's share of the pooled mean square (equal block sizes): ``max_b m_b / sum_b m_b``."""
    m = np.asarray(block_means, float)
    return float(m.max() / m.sum()) if m.sum() > 0 else 0.0
