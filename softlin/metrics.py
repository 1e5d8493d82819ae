"""Scalar diagnostics of parameters, fitted power laws and statistics over independent task blocks
(numpy; batched over leading axes), and the one uncertainty layer every claim uses.

Uncertainty (docs/maths.md#conventions): every quantity a criterion reads carries a standard
error from *independent replication*, never from residuals of correlated points (nested prompt
lengths):

* :func:`jackknife`: delete-one jackknife of any statistic over independent replicates on the
  leading axis (task blocks, seeds);
* :func:`seed_mean`: mean over independent seeds and the standard error of that mean;
* :func:`n_significant`: a count of changes (increases) that exceed ``z`` times their own error
  (a diagnostic; criteria read counts through :func:`put_count`);
* :func:`put`: store ``name``, ``name_se`` (``EXACT`` for a deterministic quantity) and
  ``name_df`` (degrees of freedom: :func:`replicate_df`, ``n - 1``) side by side, the form
  :mod:`softlin.verdict` reads; :func:`put_count` a count of rises with the rises' errors.
"""

from __future__ import annotations

import numpy as np


def theta_dist(p, q) -> np.ndarray:
    """``sqrt(||U_p - U_q||_F^2 + ||v_p - v_q||^2)``; leading axes broadcast."""
    dU = np.asarray(p.U) - np.asarray(q.U)
    dv = np.asarray(p.v) - np.asarray(q.v)
    return np.sqrt(np.sum(dU ** 2, axis=(-2, -1)) + np.sum(dv ** 2, axis=-1))


def offblock_mass(p) -> tuple[np.ndarray, np.ndarray]:
    """Frobenius norms of the off-block parts: ``(||(U[d,:d], U[:d,d])||, ||v[:d]||)``."""
    U, v = np.asarray(p.U), np.asarray(p.v)
    d = U.shape[-1] - 1
    mu = np.sqrt(np.sum(U[..., d, :d] ** 2, axis=-1) + np.sum(U[..., :d, d] ** 2, axis=-1))
    mv = np.sqrt(np.sum(v[..., :d] ** 2, axis=-1))
    return mu, mv


def conservation_defect(p) -> np.ndarray:
    """``||U||_F^2 - ||v||^2`` (conserved by gradient flow of bilinear predictors)."""
    U, v = np.asarray(p.U), np.asarray(p.v)
    return np.sum(U ** 2, axis=(-2, -1)) - np.sum(v ** 2, axis=-1)


def ols_slope(x, y) -> tuple[float, float, float]:
    """Ordinary least squares ``y = slope x + intercept``: (slope, standard error of slope, intercept)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size < 3:
        raise ValueError("ols_slope needs two 1-d arrays of equal length >= 3")
    xm, ym = x.mean(), y.mean()
    sxx = np.sum((x - xm) ** 2)
    slope = np.sum((x - xm) * (y - ym)) / sxx
    intercept = ym - slope * xm
    resid = y - (slope * x + intercept)
    se = np.sqrt(np.sum(resid ** 2) / (x.size - 2) / sxx)
    return float(slope), float(se), float(intercept)


def n_increases(values) -> int:
    """Number of strict increases in a sequence."""
    return int(np.sum(np.diff(np.asarray(values)) > 0))


# --------------------------------------------------------------------------- block statistics (C1, C2)
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
    # each resample's mean as its block counts times the blocks (one product, no (n_boot, B, ...) copy)
    counts = np.zeros((n_boot, B))
    np.add.at(counts, (np.repeat(np.arange(n_boot), B), idx.ravel()), 1.0)
    means = (counts @ vecs.reshape(B, -1) / B).reshape((n_boot,) + vecs.shape[1:])
    boot = np.linalg.norm(means, axis=-1)
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
    s, se, _ = ols_slope(np.log10(Ls), np.log10(np.maximum(vals, 1e-300)))
    return s, se


def curve_summary(Ls, vals, se=None) -> dict:
    """Slopes (upper half and full range), increases, ratio last/first, relative s.e."""
    vals = np.asarray(vals, dtype=np.float64)
    up = upper_half(Ls)
    s_up, se_up = fit_slope(Ls, vals, up)
    s_all, se_all = fit_slope(Ls, vals)
    out = dict(slope=s_up, slope_se=se_up, slope_full=s_all, slope_full_se=se_all,
               fit_L=[int(L) for L in np.asarray(Ls)[up]], n_increases=n_increases(vals),
               first=float(vals[0]), last=float(vals[-1]), ratio=float(vals[-1] / vals[0]))
    if len(vals) >= 4:
        out["slope_last4"] = fit_slope(np.asarray(Ls)[-4:], vals[-4:])[0]
    if se is not None:
        rel = np.asarray(se, dtype=np.float64) / vals
        out["rel_se_max"] = float(rel.max())
        out["rel_se_last"] = float(rel[-1])
        out["last_over_se"] = float(vals[-1] / max(float(np.asarray(se)[-1]), 1e-300))
    return out


# --------------------------------------------------------------------------- the uncertainty layer
EXACT = "exact"


def _tree_map(fn, *trees):
    """``fn`` over the leaves of equal-structure trees of dicts / arrays / numbers."""
    if isinstance(trees[0], dict):
        return {k: _tree_map(fn, *(t[k] for t in trees)) for k in trees[0]}
    return fn(*trees)


def _to_py(x):
    x = np.asarray(x, dtype=np.float64)
    return float(x) if x.ndim == 0 else x


def jackknife(stat, samples):
    """Delete-one jackknife over the leading axis: ``(stat(samples), se)``.

    ``samples`` (n, ...): independent replicates (task blocks, seeds), or a tuple of such arrays
    sharing the leading axis; ``stat`` maps the same form with n or n - 1 replicates to a number,
    an array or a dict of them.  ``se = sqrt((n - 1) / n * sum_i (stat_(-i) - mean_i stat_(-i))^2)``
    (Efron & Stein), of the same structure as ``stat``'s value.  Needs n >= 2.
    """
    multi = isinstance(samples, tuple)
    arrs = tuple(np.asarray(a) for a in samples) if multi else (np.asarray(samples),)
    n = arrs[0].shape[0]
    if n < 2 or any(a.shape[0] != n for a in arrs):
        raise ValueError("jackknife needs >= 2 replicates on the leading axis of every array")

    def call(sub):
        return stat(sub if multi else sub[0])

    full = _tree_map(_to_py, call(arrs))
    return full, jackknife_se([call(tuple(np.delete(a, i, axis=0) for a in arrs)) for i in range(n)])


def jackknife_se(reps: list):
    """The delete-one jackknife standard error from the n replicates' statistics (pytrees of the
    same structure): ``sqrt((n - 1) / n * sum_i (stat_(-i) - mean_i stat_(-i))^2)``."""
    n = len(reps)

    def se(*leaves):
        r = np.stack([np.asarray(x, dtype=np.float64) for x in leaves])
        return _to_py(np.sqrt((n - 1) / n * np.sum((r - r.mean(axis=0)) ** 2, axis=0)))
    return _tree_map(se, *reps)


def jackknife_of_mean(of_mean, samples):
    """:func:`jackknife` of ``stat(b) = of_mean(b.mean(axis=0))`` in O(n): the delete-one means are
    ``(S - x_i) / (n - 1)``, ``S`` the sum over the n replicates (leading axis); the same values as
    the generic path up to rounding."""
    x = np.asarray(samples, dtype=np.float64)
    n = x.shape[0]
    if n < 2:
        raise ValueError("jackknife needs >= 2 replicates on the leading axis of every array")
    S = x.sum(axis=0)
    full = _tree_map(_to_py, of_mean(S / n))
    return full, jackknife_se([of_mean((S - x[i]) / (n - 1)) for i in range(n)])


def seed_mean(values) -> tuple:
    """Mean over independent seeds (leading axis) and its standard error ``std(ddof=1) / sqrt(n)``."""
    v = np.asarray(values, dtype=np.float64)
    if v.shape[0] < 2:
        raise ValueError("seed_mean needs at least 2 independent seeds")
    return _to_py(v.mean(axis=0)), _to_py(v.std(axis=0, ddof=1) / np.sqrt(v.shape[0]))


def n_significant(changes, se, z: float) -> float:
    """Number of ``changes`` (e.g. consecutive differences of a curve) larger than ``z`` times
    their own standard error: an increase counts only where the data show it.  NaN if any input is
    NaN (a count never hides a NaN)."""
    c, s = np.asarray(changes, dtype=np.float64), np.asarray(se, dtype=np.float64)
    if np.isnan(c).any() or np.isnan(s).any():
        return float("nan")
    return int(np.sum(c > z * s))


def put(out: dict, name: str, value, se, df=None) -> dict:
    """``out[name] = value``, ``out[name + "_se"] = se`` (a number, a dict like ``value``, or
    :data:`EXACT`) and ``out[name + "_df"] = df``, its degrees of freedom (a number or a dict like
    ``value``; :func:`replicate_df`), required for every standard error that is not exact (the
    decision rule refuses one without); returns ``out``."""
    if df is None and not (isinstance(se, str) and se == EXACT):
        raise ValueError(f"metric {name!r}: a standard error needs its degrees of freedom (df)")
    out[name] = value
    out[name + "_se"] = se
    if df is not None:
        out[name + "_df"] = df
    return out


def replicate_df(samples) -> int:
    """Degrees of freedom of a standard error from the independent replicates on the leading axis of
    ``samples`` (an array, or a tuple of arrays sharing it) by :func:`jackknife`, :func:`seed_mean` or
    a bootstrap over them: ``n - 1``."""
    first = samples[0] if isinstance(samples, tuple) else samples
    return int(np.shape(first)[0]) - 1


def put_count(out: dict, name: str, rises, rises_se, df) -> dict:
    """A count of rises ("at most k increases") as the decision rule reads it: ``out[name]`` the
    number of rises of the point estimate, ``name_rises`` / ``name_rises_se`` the rises and their
    standard errors (lists, or dicts of lists), ``name_df`` their degrees of freedom.  The rule
    counts a rise for a PASS unless its interval lies wholly below 0, and for a FAIL only where it
    lies wholly above (:func:`softlin.intervals.count_bounds`): the count is random, never exact."""
    def each(fn, x):
        return {k: fn(r) for k, r in x.items()} if isinstance(x, dict) else fn(x)

    def as_list(r):
        return np.asarray(r, dtype=np.float64).tolist()
    out[name] = each(lambda r: int(np.sum(np.asarray(r, dtype=np.float64) > 0)), rises)
    out[name + "_rises"] = each(as_list, rises)
    out[name + "_rises_se"] = each(as_list, rises_se)
    out[name + "_df"] = df
    return out
