"""C4 — tractable infinite-prompt dynamics (Sec. 5, Remark 5.2): every computation of one setting.

The population flow of ``linear(inf)`` from the symbolic closed form (S2):

* gradient descent on it at the training step size (:func:`softlin.population.population_gradient_descent`);
* the gradient-flow ODE on the full ``(U, v)`` gradient (jax.grad of the closed-form risk),
  integrated with an adaptive solver (scipy ``solve_ivp``, DOP853 by default);
* the reduced block flow ``(A, b)`` from the symbolic module (S2), the same ODE on the block manifold;
* the task-sampled ``linear(inf)`` gradient descent (C3's protocol) beside them, and the gap
  between sampled and population trajectories against the number of tasks.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import metrics, params, population
from .._jax import jax
from ..params import Params
from ..records import Spec
from ..tasks import check_sigma
from .c4_boundary import Boundary, alpha_boundary, boundary_like
from .c4_flows import Along, Flow, along, block_of, ode_flow, reduced_flow, sampled_gd


# --------------------------------------------------------------------------- the record of one setting
class NTasks(NamedTuple):
    """The gap between task-sampled and population GD: ``n_tasks`` (k,), ``gap`` (k, n_seed)."""

    n_tasks: np.ndarray
    gap: np.ndarray


class AlphaSweep(NamedTuple):
    """The reduced flow from Eq. (9) at ``fractions`` (m,) of alpha_max: distance to theta* (m, n_t) at ``t``."""

    fractions: np.ndarray
    t: np.ndarray
    dist: np.ndarray


class Setting(NamedTuple):
    """Every C4 computation for one covariance (the record of rule c4_flow): times ``t`` (T,), the
    Eq. (9) scale, the population GD, ODE and task-sampled runs, the ODE against the reduced flow,
    the n_tasks scaling, the alpha sweep and the boundary alpha_c."""

    t: np.ndarray
    alpha: float
    alpha_max: float
    gd: Flow
    ode: Flow
    sampled: Along
    sampled_gap: np.ndarray
    ode_vs_reduced: np.ndarray
    ode_nfev: int
    reduced_nfev: int
    ntasks: NTasks
    sweep: AlphaSweep
    boundary: Boundary


SWEEP_POINTS = 201  # times of the alpha sweep, linspace(0, t_max)


def setting_like(cfg: dict, d: int) -> Setting:
    """The record template of :func:`run_setting` under ``cfg`` (c4_flow's config) in dimension ``d``."""
    f = np.float64
    T, D = cfg["steps"] // cfg["record_every"] + 1, d + 1
    along = Along(*(Spec((T,), f) for _ in range(4)))
    k, m = len(cfg["n_tasks"]["n_pairs"]), len(cfg["alpha_sweep"]["fractions"])
    return Setting(Spec((T,), f), Spec((), f), Spec((), f), Flow(Spec((T, D, D), f), Spec((T, D), f), along),
                   Flow(Spec((T, D, D), f), Spec((T, D), f), along), along, Spec((T,), f), Spec((T,), f),
                   Spec((), np.int64), Spec((), np.int64),
                   NTasks(Spec((k,), np.int64), Spec((k, cfg["n_tasks"]["n_seed"]), f)),
                   AlphaSweep(Spec((m,), f), Spec((SWEEP_POINTS,), f), Spec((m, SWEEP_POINTS), f)),
                   boundary_like())


def run_setting(sigma, cfg: dict, progress=print) -> Setting:
    """Every C4 computation for one covariance: the Eq. 9 flows, the n_tasks scaling, the alpha sweep."""
    s = check_sigma(sigma)
    lr, steps, every = cfg["lr"], cfg["steps"], cfg["record_every"]
    t = np.arange(0, steps + 1, every) * lr
    p0 = params.init_eq9(s)

    gd = jax.block_until_ready(
        population.population_gradient_descent(p0, s, lr=lr, steps=steps, record_every=every).params)
    ode, info = ode_flow(s, p0, t, cfg["ode"]["method"], cfg["ode"]["rtol"], cfg["ode"]["atol"])
    A0, b0 = block_of(p0)
    Ar, br, rinfo = reduced_flow(s, A0, float(b0), t, cfg["ode"]["method"], cfg["ode"]["rtol"],
                                 cfg["ode"]["atol"])
    progress(f"population GD, ODE ({info['nfev']} evaluations) and reduced flow done")
    Ao, bo = block_of(ode)
    ode_vs_reduced = np.sqrt(np.sum((Ao - Ar) ** 2, axis=(-2, -1)) + (bo - br) ** 2)
    gd_flow, ode_flow_ = (Flow(np.asarray(p.U), np.asarray(p.v), along(p, s)) for p in (gd, ode))

    # task-sampled GD: the C3 protocol, and the gap to population GD against n_tasks
    sc = cfg["sampled"]
    samp = sampled_gd(s, p0, sc["n_pairs"], sc["n_query"], sc["seed"], lr, steps, every)
    sampled_gap = np.asarray(metrics.theta_dist(samp, gd))
    nt = cfg["n_tasks"]
    if nt["steps"] > steps or nt["steps"] % every:
        raise ValueError("c4.n_tasks.steps must be a multiple of record_every and at most steps")
    n_ref = nt["steps"] // every + 1
    gaps = np.empty((len(nt["n_pairs"]), nt["n_seed"]))
    for i, n in enumerate(nt["n_pairs"]):
        for r in range(nt["n_seed"]):
            pr = sampled_gd(s, p0, n, nt["n_query"], nt["seed0"] + 101 * r + 7 * i, lr, nt["steps"], every)
            ref = Params(np.asarray(gd.U)[: n_ref], np.asarray(gd.v)[: n_ref])
            gaps[i, r] = float(np.max(metrics.theta_dist(pr, ref)))
    progress(f"n_tasks scaling over {nt['n_pairs']} pairs x {nt['n_seed']} seeds done")

    # alpha sweep: the reduced flow from init_eq9(sigma, f alpha_max) (block structure is exact)
    sw = cfg["alpha_sweep"]
    star = population.bayes_optimum(s)
    A_star, b_star = block_of(star)
    t_sw = np.linspace(0.0, sw["t_max"], SWEEP_POINTS)
    dists = []
    for f in sw["fractions"]:
        q0 = params.init_eq9(s, f * params.alpha_max(s))
        Aq, bq = block_of(q0)
        Aa, ba, _ = reduced_flow(s, Aq, float(bq), t_sw, sw["method"], sw["rtol"], sw["atol"])
        dists.append(np.sqrt(np.sum((Aa - A_star) ** 2, axis=(-2, -1)) + (ba - b_star) ** 2))
    progress(f"alpha sweep over {len(sw['fractions'])} values done")

    # the empirical boundary alpha_c beyond the admissible interval (scan, then bisection)
    bd = alpha_boundary(s, sw, cfg["alpha_boundary"], cfg["tol"], min(sw["fractions"]))
    where = (f"alpha_c / alpha_max in [{bd.lo:.4g}, {bd.hi:.4g}]" if bd.found
             else f"none up to {bd.lo:g} alpha_max")
    progress(f"alpha boundary: {where} ({bd.n_solves} reduced-flow solves)")
    return Setting(t=t, alpha=np.float64(params.init_eq9(s).v[-1]), alpha_max=np.float64(params.alpha_max(s)),
                   gd=gd_flow, ode=ode_flow_, sampled=along(samp, s), sampled_gap=sampled_gap,
                   ode_vs_reduced=ode_vs_reduced, ode_nfev=np.int64(info["nfev"]),
                   reduced_nfev=np.int64(rinfo["nfev"]),
                   ntasks=NTasks(2 * np.asarray(nt["n_pairs"], dtype=np.int64), gaps),
                   sweep=AlphaSweep(np.asarray(sw["fractions"], dtype=np.float64), t_sw, np.asarray(dists)),
                   boundary=bd)
