"""Scalar diagnostics of parameters and fitted power laws (numpy; batched over leading axes)."""

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
