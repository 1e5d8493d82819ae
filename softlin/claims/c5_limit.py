"""S7's limit tested (docs/c5_limit.md): the reference family's ``gap x L`` by Monte Carlo and fits of
``gap x L = K - a/L - b/L^2`` per independent replicate, with a Student-t interval on their df.

The family (no training): on fresh prompts of C5's task, the softmax member ``c*`` of S7's family
``f = c sum_l e^{s_l} y_l / sum_l e^{s_l}``, ``s_l = x_l^T Sigma_p^-1 x_q / c``, and the linear class
optimum ``f = x_q^T P*(L) X^T y / L`` (S6), paired on the same prompts; the excess over the noise is
``(f - w^T x_q)^2`` (the query's label noise averaged out exactly).  numpy, float64.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .. import baselines, online_task

SUMS = ("soft", "lin", "gap")   # per L: sums over prompts of L (f - h)^2 for member c*, linear optimum, their difference


def _segment(rng, task: online_task.TaskLaw, w, m: int, n: int):
    """n more prompt tokens of m prompts: covariates (m, n, d) and labels (m, n) of ``y = w^T x + eps``."""
    x = rng.standard_normal((m, n, task.d)) @ task.root_prompt.T
    y = np.einsum("mnd,md->mn", x, w) + np.sqrt(task.noise_var) * rng.standard_normal((m, n))
    return x, y


def family_chunk(rng, task: online_task.TaskLaw, Ls, c_star: float, scan_t, scan_L_max: int, m: int):
    """One chunk of m prompts nested over Ls: ``sums`` (n_L, 3) of :data:`SUMS`, and for L <= scan_L_max the
    scan sums ``gh``, ``gg`` (n_scan_L, n_t) of ``g_t = sum e^{t s0} y / sum e^{t s0}`` (s0 = x^T Sigma_p^-1 x_q)
    against ``h = w^T x_q``, and ``hh`` = sum h^2."""
    d, Spi = task.d, np.linalg.inv(task.sigma_prompt)
    w = np.sqrt(task.w_var) * rng.standard_normal((m, d))
    xq = rng.standard_normal((m, d)) @ task.root_query.T
    h, a = (w * xq).sum(1), xq @ Spi.T
    ts = np.asarray(scan_t, float) / c_star
    n_scan = sum(L <= scan_L_max for L in Ls)
    sums, gh, gg = np.zeros((len(Ls), len(SUMS))), np.zeros((n_scan, ts.size)), np.zeros((n_scan, ts.size))
    De = Ne = np.zeros(m)
    Dt, Nt, xy = np.zeros((m, ts.size)), np.zeros((m, ts.size)), np.zeros((m, d))
    done = 0
    for i, L in enumerate(Ls):
        x, y = _segment(rng, task, w, m, L - done)
        s0 = np.einsum("mnd,md->mn", x, a)
        e = np.exp(s0 / c_star)
        De, Ne, xy = De + e.sum(1), Ne + (e * y).sum(1), xy + np.einsum("mnd,mn->md", x, y)
        if i < n_scan:
            et = np.exp(s0[..., None] * ts)
            Dt, Nt = Dt + et.sum(1), Nt + (et * y[..., None]).sum(1)
            g = Nt / Dt
            gh[i], gg[i] = (g * h[:, None]).sum(0), (g * g).sum(0)
        done = L
        P = baselines.linear_class_precond(L, task.sigma_prompt, task.noise_var, task.w_var)
        es, el = (c_star * Ne / De - h) ** 2, (((xq @ P) * xy).sum(1) / L - h) ** 2
        sums[i] = L * np.array([es.sum(), el.sum(), (es - el).sum()])
    return sums, gh, gg, float((h * h).sum())


def family_blocks(task: online_task.TaskLaw, cfg: dict, c_star: float, progress=None) -> dict:
    """Per block of ``cfg['block_prompts']`` prompts (independent streams of SeedSequence(cfg['seed'])):
    mean ``L x excess`` of member c*, linear optimum and their gap, (n_blocks, n_L) each, and the scan sums."""
    Ls, B, n, m = list(cfg["L"]), cfg["n_blocks"], cfg["block_prompts"], cfg["chunk"]
    if n % m or Ls != sorted(set(Ls)):
        raise ValueError("c5.limit: block_prompts must be a multiple of chunk and L strictly increasing")
    out = {k: np.zeros((B, len(Ls))) for k in SUMS}
    n_scan = sum(L <= cfg["scan_L_max"] for L in Ls)
    gh, gg, hh = np.zeros((B, n_scan, len(cfg["scan_t"]))), np.zeros((B, n_scan, len(cfg["scan_t"]))), np.zeros(B)
    for b, ss in enumerate(np.random.SeedSequence(cfg["seed"]).spawn(B)):
        rng = np.random.Generator(np.random.PCG64(ss))
        for _ in range(n // m):
            s, a, g, q = family_chunk(rng, task, Ls, c_star, cfg["scan_t"], cfg["scan_L_max"], m)
            for j, k in enumerate(SUMS):
                out[k][b] += s[:, j] / n
            gh[b], gg[b], hh[b] = gh[b] + a, gg[b] + g, hh[b] + q
        if progress:
            progress(f"family Monte Carlo: block {b + 1} / {B}")
    return {**out, "gh": gh, "gg": gg, "hh": hh, "n": n, "L": np.asarray(Ls)}


def best_member_cross_fit(gh, gg, hh, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per block and scanned L: the excess ``(hh - 2 c gh + c^2 gg) / n`` of the member (t, c) chosen on the other
    blocks (c = gh / gg, t minimising the excess there); (n_blocks, n_scan_L) excesses and the chosen t indices."""
    B = gh.shape[0]
    ex, idx = np.zeros(gh.shape[:2]), np.zeros(gh.shape[:2], int)
    for b in range(B):
        o = np.arange(B) != b
        GH, GG, HH = gh[o].sum(0), gg[o].sum(0), hh[o].sum()
        c = GH / GG
        k = np.argmin(HH - c * GH, axis=1)                      # excess x n at the least-squares c, per t
        r = np.arange(gh.shape[1])
        cb = c[r, k]
        ex[b] = (hh[b] - 2 * cb * gh[b, r, k] + cb ** 2 * gg[b, r, k]) / n
        idx[b] = k
    return ex, idx


def fit_limit(L, gap_L) -> np.ndarray:
    """OLS of ``gap x L = K - a/L - b/L^2`` on one replicate's points: (K, a, b)."""
    x = 1.0 / np.asarray(L, float)
    A = np.column_stack([np.ones_like(x), -x, -x ** 2])
    return np.linalg.lstsq(A, np.asarray(gap_L, float), rcond=None)[0]


def limit_estimate(L, replicates, L_range, z: float, reference: float) -> dict:
    """K from one fit per independent replicate (rows of ``replicates``, (n, n_L)) over ``L_range`` (inclusive):
    mean, s.e. = sd / sqrt(n), df = n - 1, the Student-t multiplier at the two-sided level of z, the interval and
    its reading against ``reference``."""
    L = np.asarray(L)
    keep = (L >= L_range[0]) & (L <= L_range[1])
    fits = np.array([fit_limit(L[keep], r[keep]) for r in np.atleast_2d(replicates)])
    n = fits.shape[0]
    if n < 2:
        raise ValueError("limit_estimate: an error from replication needs at least 2 replicates")
    K, se = float(fits[:, 0].mean()), float(fits[:, 0].std(ddof=1) / np.sqrt(n))
    t = float(stats.t.ppf(stats.norm.cdf(z), n - 1))
    lo, hi = K - t * se, K + t * se
    reading = ("not resolved" if t * se > 0.25 * reference else
               "consistent with S7" if lo <= reference <= hi else "differs from S7")
    return {"K": K, "se": se, "df": n - 1, "t": t, "level": float(2 * stats.norm.cdf(z) - 1), "interval": [lo, hi],
            "reference": float(reference), "reading": reading, "n_points": int(keep.sum()),
            "L_range": [int(L_range[0]), int(L_range[1])], "per_replicate_K": fits[:, 0].tolist(),
            "a": float(fits[:, 1].mean()), "b": float(fits[:, 2].mean())}


def mean_se(rows) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error (sd / sqrt(n)) over independent replicates (rows), per column."""
    r = np.atleast_2d(np.asarray(rows, float))
    return r.mean(0), r.std(0, ddof=1) / np.sqrt(r.shape[0])
