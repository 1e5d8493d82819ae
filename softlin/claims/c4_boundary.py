"""C4's empirical boundary ``alpha_c``: the Eq. (9) scale beyond which the reduced population flow (S2)
no longer reaches theta* by ``t_max``, found by a scan and a bisection in ``log alpha``, and what the
flow does at the upper end of the bracket (docs/maths.md#c4)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import params, population
from ..records import Spec
from ..tasks import check_sigma
from .c4_flows import block_of, reduced_flow


class Boundary(NamedTuple):
    """Where the reduced flow from Eq. (9) stops reaching theta* (:func:`alpha_boundary`): the bracket
    ``[lo, hi]`` of ``alpha / alpha_max`` (``ratio`` its geometric mean; ``hi`` inf if none found),
    the end point at ``hi`` (distance, risk, conservation defect, whether the solver succeeded; the
    distance again at the tighter tolerances), the solves made and the scan (``scan_f``, ``scan_dist``)."""

    found: bool
    lo: float
    hi: float
    ratio: float
    n_solves: int
    dist_hi: float
    risk_hi: float
    conservation_hi: float
    solver_ok_hi: bool
    dist_hi_check: float
    scan_f: np.ndarray
    scan_dist: np.ndarray


def boundary_like() -> Boundary:
    """The record template of a :class:`Boundary` (the scan's length is known only from the file)."""
    f, i, b = np.float64, np.int64, np.bool_
    return Boundary(Spec((), b), Spec((), f), Spec((), f), Spec((), f), Spec((), i), Spec((), f),
                    Spec((), f), Spec((), f), Spec((), b), Spec((), f), Spec((None,), f), Spec((None,), f))


def reduced_risk(A, b, sigma) -> np.ndarray:
    """``R(A, b) = 1/2 tr((b S A - I) S (b S A - I)^T)`` (docs/maths.md#c4), leading axes kept."""
    S = np.asarray(sigma, dtype=np.float64)
    M = np.asarray(b)[..., None, None] * (S @ np.asarray(A)) - np.eye(S.shape[0])
    return 0.5 * np.einsum("...ij,jk,...ik->...", M, S, M)


def flow_end(sigma, f: float, t_max: float, method: str, rtol: float, atol: float) -> dict:
    """The reduced flow from ``init_eq9(sigma, f alpha_max)`` at ``t_max``: distance to theta*, risk,
    conservation defect ``||A||_F^2 - b^2`` (0 on the exact flow from Eq. 9) and whether the solver
    succeeded (a failure, overflow or a non-finite end point counts as a divergence)."""
    s = check_sigma(sigma)
    A_star, b_star = block_of(population.bayes_optimum(s))
    A0, b0 = block_of(params.init_eq9(s, f * params.alpha_max(s)))
    try:
        with np.errstate(over="raise", invalid="raise"):
            A, b, _ = reduced_flow(s, A0, float(b0), np.array([0.0, t_max]), method, rtol, atol)
        A, b = A[-1], float(b[-1])
        ok = bool(np.all(np.isfinite(A)) and np.isfinite(b))
    except (RuntimeError, FloatingPointError):
        ok = False
    if not ok:
        return dict(dist=float("inf"), risk=float("inf"), conservation=float("nan"), solver_ok=False)
    return dict(dist=float(np.sqrt(np.sum((A - A_star) ** 2) + (b - b_star) ** 2)),
                risk=float(reduced_risk(A, b, s)), conservation=float(np.sum(A ** 2) - b ** 2),
                solver_ok=True)


def alpha_boundary(sigma, sw: dict, bd: dict, tol: float, f_min: float) -> Boundary:
    """The empirical boundary ``alpha_c`` of the Eq. (9) scale beyond which the reduced flow no longer
    reaches theta* (distance < ``tol`` at ``sw["t_max"]``), as a multiple of alpha_max.

    Scan ``f = 1, g, g^2, ...`` up to ``bd["f_max"]`` (``g = bd["growth"]``); at the first ``f`` that
    does not converge, bisect ``n_bisect`` times in ``log f`` between it and the last one that did
    (``f_min``, the smallest swept fraction, if ``f = 1`` already fails; convergence is assumed
    monotone in ``f`` between the two).  The end point at the upper end ``hi`` is classified by the
    returned numbers (solver failure, risk, conservation defect), and re-integrated with the tighter
    ``bd["check_rtol"], bd["check_atol"]``: a flow that then reaches theta* failed at ``hi`` through
    the integrator (its drift off the conservation law), not by itself.  ``found`` False: every
    scanned ``f`` up to ``f_max`` converged (``lo = f_max``, ``hi`` = inf)."""
    args = (sw["t_max"], sw["method"], sw["rtol"], sw["atol"])
    n = 0

    def reaches(f):
        nonlocal n
        n += 1
        e = flow_end(sigma, f, *args)
        return e["dist"] < tol, e

    scan_f, scan_dist = [], []
    lo, hi, end_hi = f_min, None, None
    f = 1.0
    while f <= bd["f_max"] * (1 + 1e-12):
        ok, e = reaches(f)
        scan_f.append(f)
        scan_dist.append(e["dist"])
        if not ok:
            hi, end_hi = f, e
            break
        lo = f
        f *= bd["growth"]
    scan = dict(scan_f=np.asarray(scan_f, dtype=np.float64), scan_dist=np.asarray(scan_dist, dtype=np.float64))
    if hi is None:
        return Boundary(found=False, lo=lo, hi=float("inf"), ratio=lo, n_solves=n, dist_hi=float("nan"),
                        risk_hi=float("nan"), conservation_hi=float("nan"), solver_ok_hi=True,
                        dist_hi_check=float("nan"), **scan)
    for _ in range(bd["n_bisect"]):
        mid = float(np.sqrt(lo * hi))
        ok, e = reaches(mid)
        if ok:
            lo = mid
        else:
            hi, end_hi = mid, e
    check = flow_end(sigma, hi, sw["t_max"], sw["method"], bd["check_rtol"], bd["check_atol"])
    return Boundary(found=True, lo=lo, hi=hi, ratio=float(np.sqrt(lo * hi)), n_solves=n + 1,
                    dist_hi=end_hi["dist"], risk_hi=end_hi["risk"], conservation_hi=end_hi["conservation"],
                    solver_ok_hi=end_hi["solver_ok"], dist_hi_check=check["dist"], **scan)


def boundary_kind(found: bool, solver_ok: bool, risk: float, dist_check: float, tol: float) -> str:
    """What the flow does at the upper end of the boundary's bracket, in words."""
    if not found:
        return "none found"
    if not solver_ok:
        return "diverges (solver failure or overflow)"
    if not risk < tol ** 2:
        return "has not reached a global minimum by t_max (risk >= tol^2)"
    if dist_check < tol:
        return ("integrator: reaches a global minimum off theta* through its drift off the conservation "
                "law, and theta* itself at the tighter tolerances")
    return "reaches a global minimum other than theta* (at the tighter tolerances too)"
