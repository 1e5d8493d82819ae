"""C4 — tractable infinite-prompt dynamics (Sec. 5, Remark 5.2).

The population flow of ``linear(inf)`` from the symbolic closed form (S2):

* gradient descent on it at the training step size (:func:`softlin.population.population_gradient_descent`);
* the gradient-flow ODE on the full ``(U, v)`` gradient (jax.grad of the closed-form risk),
  integrated with an adaptive solver (scipy ``solve_ivp``, DOP853 by default);
* the reduced block flow ``(A, b)`` from the symbolic module (S2), the same ODE on the block manifold;
* the task-sampled ``linear(inf)`` gradient descent (C3's protocol) beside them, and the gap
  between sampled and population trajectories against the number of tasks.
"""

from __future__ import annotations

import numpy as np

from .. import metrics, params, population, train, verdict
from .._jax import jax, jnp
from ..params import Params
from ..tasks import check_sigma, sample


# --------------------------------------------------------------------------- flows
@jax.jit
def _neg_grad_flat(y, sigma):
    """``-grad R_pop`` at the flattened ``theta`` (:func:`softlin.params.flatten`)."""
    g = jax.grad(population.population_risk_kernel)(params.unflatten(y, sigma.shape[0] + 1), sigma)
    return -params.flatten(g, jnp)


def ode_flow(sigma, p0: Params, t_eval, method: str = "DOP853", rtol: float = 1e-12,
             atol: float = 1e-14) -> tuple[Params, dict]:
    """Gradient flow ``d theta / dt = -grad R_pop(theta)`` on the full (U, v) from ``p0``."""
    from scipy.integrate import solve_ivp

    s = jnp.asarray(check_sigma(sigma))
    D = s.shape[0] + 1
    t_eval = np.asarray(t_eval, dtype=np.float64)
    sol = solve_ivp(lambda t, y: np.asarray(_neg_grad_flat(jnp.asarray(y), s)), (0.0, t_eval[-1]),
                    params.flatten(p0), method=method, t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return params.unflatten(np.asarray(sol.y.T), D), dict(nfev=int(sol.nfev), method=method, rtol=rtol, atol=atol)


def reduced_flow(sigma, A0, b0: float, t_eval, method: str = "DOP853", rtol: float = 1e-12,
                 atol: float = 1e-14) -> tuple[np.ndarray, np.ndarray, dict]:
    """The reduced block flow ``(dA/dt, db/dt)`` of the symbolic module (S2): (A (n_t, d, d), b (n_t,))."""
    from scipy.integrate import solve_ivp

    from symbolic.export.s2 import reduced_flow_fn

    s = check_sigma(sigma)
    d = s.shape[0]
    flow = reduced_flow_fn("numpy")

    def rhs(t, y):
        dA, db = flow(y[:-1].reshape(d, d), y[-1], s)
        return np.concatenate([np.asarray(dA, dtype=np.float64).ravel(), [float(db)]])

    t_eval = np.asarray(t_eval, dtype=np.float64)
    sol = solve_ivp(rhs, (0.0, t_eval[-1]), np.concatenate([np.asarray(A0, float).ravel(), [b0]]),
                    method=method, t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    Y = sol.y.T
    return Y[:, :-1].reshape(-1, d, d), Y[:, -1], dict(nfev=int(sol.nfev))


def block_of(p: Params) -> tuple[np.ndarray, np.ndarray]:
    """``(A, b)`` of block-structured parameters (leading axes kept)."""
    U, v = np.asarray(p.U), np.asarray(p.v)
    d = U.shape[-1] - 1
    return U[..., :d, :d], v[..., d]


_pop_risk_batch = jax.jit(jax.vmap(population.population_risk_kernel, in_axes=(0, None)))


def along(p: Params, sigma) -> dict:
    """Population risk, distance to theta*, off-block mass, conservation defect per record."""
    s = check_sigma(sigma)
    star = population.bayes_optimum(s)
    mu, mv = metrics.offblock_mass(p)
    risk = _pop_risk_batch(Params(jnp.asarray(p.U), jnp.asarray(p.v)), jnp.asarray(s))
    return dict(risk=np.asarray(risk), dist=np.asarray(metrics.theta_dist(p, star)),
                offblock=np.maximum(np.asarray(mu), np.asarray(mv)),
                conservation=np.asarray(metrics.conservation_defect(p)))


def sampled_gd(sigma, p0, n_pairs: int, n_query: int, seed: int, lr: float, steps: int,
               record_every: int, token_kind: str = "gauss") -> Params:
    """Task-sampled linear(inf) gradient descent (C3's protocol; prompts are not used: l_max = 1)."""
    s = check_sigma(sigma)
    tasks = sample(seed, s.shape[0], s, n_pairs, n_query, 1, token_kind)
    return train.gradient_descent("limit", p0, tasks, lr=lr, steps=steps,
                                  record_every=record_every).params


def run_setting(sigma, cfg: dict, progress=print) -> dict:
    """Every C4 computation for one covariance: the Eq. 9 flows, the n_tasks scaling, the alpha sweep."""
    s = check_sigma(sigma)
    lr, steps, every = cfg["lr"], cfg["steps"], cfg["record_every"]
    t = np.arange(0, steps + 1, every) * lr
    p0 = params.init_eq9(s)
    out = dict(t=t, alpha=params.init_eq9(s).v[-1], alpha_max=params.alpha_max(s))

    gd = jax.block_until_ready(
        population.population_gradient_descent(p0, s, lr=lr, steps=steps, record_every=every).params)
    ode, info = ode_flow(s, p0, t, cfg["ode"]["method"], cfg["ode"]["rtol"], cfg["ode"]["atol"])
    A0, b0 = block_of(p0)
    Ar, br, rinfo = reduced_flow(s, A0, float(b0), t, cfg["ode"]["method"], cfg["ode"]["rtol"],
                                 cfg["ode"]["atol"])
    progress(f"population GD, ODE ({info['nfev']} evaluations) and reduced flow done")
    Ao, bo = block_of(ode)
    out["ode_vs_reduced"] = np.sqrt(np.sum((Ao - Ar) ** 2, axis=(-2, -1)) + (bo - br) ** 2)
    out["ode_nfev"] = info["nfev"]
    out["reduced_nfev"] = rinfo["nfev"]
    for name, p in (("gd", gd), ("ode", ode)):
        for k, v in along(p, s).items():
            out[f"{name}_{k}"] = v
        out[f"{name}_U"], out[f"{name}_v"] = np.asarray(p.U), np.asarray(p.v)

    # task-sampled GD: the C3 protocol, and the gap to population GD against n_tasks
    sc = cfg["sampled"]
    samp = sampled_gd(s, p0, sc["n_pairs"], sc["n_query"], sc["seed"], lr, steps, every)
    for k, v in along(samp, s).items():
        out[f"sampled_{k}"] = v
    out["sampled_gap"] = np.asarray(metrics.theta_dist(samp, gd))
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
    out["ntasks_n_tasks"] = 2 * np.asarray(nt["n_pairs"])
    out["ntasks_gap"] = gaps
    progress(f"n_tasks scaling over {nt['n_pairs']} pairs x {nt['n_seed']} seeds done")

    # alpha sweep: the reduced flow from init_eq9(sigma, f alpha_max) (block structure is exact)
    sw = cfg["alpha_sweep"]
    star = population.bayes_optimum(s)
    A_star, b_star = block_of(star)
    t_sw = np.linspace(0.0, sw["t_max"], 201)
    dists = []
    for f in sw["fractions"]:
        q0 = params.init_eq9(s, f * params.alpha_max(s))
        Aq, bq = block_of(q0)
        Aa, ba, _ = reduced_flow(s, Aq, float(bq), t_sw, sw["method"], sw["rtol"], sw["atol"])
        dists.append(np.sqrt(np.sum((Aa - A_star) ** 2, axis=(-2, -1)) + (ba - b_star) ** 2))
    out["alpha_fractions"] = np.asarray(sw["fractions"], dtype=np.float64)
    out["alpha_t"] = t_sw
    out["alpha_dist"] = np.asarray(dists)
    progress(f"alpha sweep over {len(sw['fractions'])} values done")

    # the empirical boundary alpha_c beyond the admissible interval (scan, then bisection)
    bd = alpha_boundary(s, sw, cfg["alpha_boundary"], cfg["tol"], min(sw["fractions"]))
    out.update({f"boundary_{k}": v for k, v in bd.items()})
    where = (f"alpha_c / alpha_max in [{bd['lo']:.4g}, {bd['hi']:.4g}]" if bd["found"]
             else f"none up to {bd['lo']:g} alpha_max")
    progress(f"alpha boundary: {where} ({bd['n_solves']} reduced-flow solves)")
    return out


# --------------------------------------------------------------------------- alpha boundary
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


def alpha_boundary(sigma, sw: dict, bd: dict, tol: float, f_min: float) -> dict:
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
    out = dict(scan_f=np.asarray(scan_f), scan_dist=np.asarray(scan_dist), found=hi is not None)
    if hi is None:
        return dict(out, lo=lo, hi=float("inf"), ratio=lo, n_solves=n, dist_hi=float("nan"),
                    risk_hi=float("nan"), conservation_hi=float("nan"), solver_ok_hi=True,
                    dist_hi_check=float("nan"))
    for _ in range(bd["n_bisect"]):
        mid = float(np.sqrt(lo * hi))
        ok, e = reaches(mid)
        if ok:
            lo = mid
        else:
            hi, end_hi = mid, e
    check = flow_end(sigma, hi, sw["t_max"], sw["method"], bd["check_rtol"], bd["check_atol"])
    return dict(out, lo=lo, hi=hi, ratio=float(np.sqrt(lo * hi)), n_solves=n + 1,
                dist_hi=end_hi["dist"], risk_hi=end_hi["risk"], conservation_hi=end_hi["conservation"],
                solver_ok_hi=end_hi["solver_ok"], dist_hi_check=check["dist"])


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


# --------------------------------------------------------------------------- metrics
def ntasks_slope(n_tasks, gaps) -> tuple[float, float]:
    """Slope of ``log10(mean gap over seeds)`` against ``log10 n_tasks`` and its delete-one jackknife
    standard error over the independent seeds (``gaps`` (len(n_tasks), n_seed); a seed index is one
    replicate: its runs at every n_tasks are left out together)."""
    x = np.log10(np.asarray(n_tasks, dtype=np.float64))

    def stat(g):  # g (seeds, n_tasks)
        return metrics.ols_slope(x, np.log10(np.asarray(g).mean(axis=0)))[0]
    return metrics.jackknife(stat, np.asarray(gaps, dtype=np.float64).T)


def summarize(name: str, label: str, r: dict, tol: float, gd_tol: float) -> tuple[dict, list[dict]]:
    """Per-setting summary (final distances, defects, n_tasks slope, alpha boundary) and alpha-table rows."""
    n_tasks = np.asarray(r["ntasks_n_tasks"], dtype=np.float64)
    gaps = np.asarray(r["ntasks_gap"], dtype=np.float64)
    gap_mean = gaps.mean(axis=1)
    slope, se = ntasks_slope(n_tasks, gaps)
    summ = dict(
        setting=name, label=label, alpha=float(r["alpha"]), alpha_max=float(r["alpha_max"]),
        t_max=float(r["t"][-1]),
        ode_dist_final=float(r["ode_dist"][-1]), gd_dist_final=float(r["gd_dist"][-1]),
        sampled_dist_final=float(r["sampled_dist"][-1]),
        ode_risk_final=float(r["ode_risk"][-1]), gd_risk_final=float(r["gd_risk"][-1]),
        risk_init=float(r["ode_risk"][0]),
        ode_conservation_max=float(np.abs(r["ode_conservation"]).max()),
        gd_conservation_max=float(np.abs(r["gd_conservation"]).max()),
        sampled_conservation_max=float(np.abs(r["sampled_conservation"]).max()),
        ode_offblock_max=float(r["ode_offblock"].max()), gd_offblock_max=float(r["gd_offblock"].max()),
        ode_vs_reduced_max=float(np.max(r["ode_vs_reduced"])),
        sampled_gap_max=float(r["sampled_gap"].max()),
        ode_nfev=int(r["ode_nfev"]),
        ode_reaches_star=bool(r["ode_dist"][-1] < tol), gd_reaches_star=bool(r["gd_dist"][-1] < gd_tol),
        ntasks_slope=slope, ntasks_slope_se=se, ntasks_n_seed=int(gaps.shape[1]),
        ntasks_n_tasks=n_tasks.tolist(), ntasks_gap_mean=gap_mean.tolist(),
        ntasks_gap_se=(gaps.std(axis=1, ddof=1) / np.sqrt(gaps.shape[1])).tolist())
    if "boundary_found" in r:
        found = bool(r["boundary_found"])
        summ.update(
            alpha_c_found=found, alpha_c_ratio=float(r["boundary_ratio"]),
            alpha_c_lo=float(r["boundary_lo"]), alpha_c_hi=float(r["boundary_hi"]),
            alpha_c=float(r["boundary_ratio"]) * float(r["alpha_max"]),
            alpha_c_dist_hi=float(r["boundary_dist_hi"]), alpha_c_risk_hi=float(r["boundary_risk_hi"]),
            alpha_c_conservation_hi=float(r["boundary_conservation_hi"]),
            alpha_c_dist_hi_check=float(r["boundary_dist_hi_check"]),
            alpha_c_kind=boundary_kind(found, bool(r["boundary_solver_ok_hi"]), float(r["boundary_risk_hi"]),
                                       float(r["boundary_dist_hi_check"]), tol),
            alpha_c_n_solves=int(r["boundary_n_solves"]),
            alpha_c_scan_f=np.asarray(r["boundary_scan_f"], dtype=np.float64).tolist(),
            alpha_c_scan_dist=np.asarray(r["boundary_scan_dist"], dtype=np.float64).tolist())
    rows = []
    for f, dist in zip(r["alpha_fractions"], r["alpha_dist"]):
        hit = np.nonzero(dist < tol)[0]
        rows.append(dict(setting=name, label=label, alpha_fraction=float(f),
                         alpha=float(f * r["alpha_max"]), admissible=bool(0 < f < 1),
                         dist_final=float(dist[-1]), converged=bool(dist[-1] < tol),
                         t_reach=float(r["alpha_t"][hit[0]]) if hit.size else float("nan")))
    return summ, rows


def aggregate(summaries: dict, alpha_rows: list[dict]) -> dict:
    """Claim-level quantities, each with its standard error beside it (``name_se``): ``"exact"`` for
    the deterministic ones (ODE, population GD, reduced flow), the jackknife over seeds for the
    n_tasks slopes (a mapping ``{setting: slope}``)."""
    adm = [r for r in alpha_rows if r["admissible"]]
    beyond = [r for r in alpha_rows if not r["admissible"]]
    s = list(summaries.values())
    out = dict(
        ode_dist_final_max=max(x["ode_dist_final"] for x in s),
        gd_dist_final_max=max(x["gd_dist_final"] for x in s),
        ode_conservation_max=max(x["ode_conservation_max"] for x in s),
        gd_conservation_max=max(x["gd_conservation_max"] for x in s),
        ode_vs_reduced_max=max(x["ode_vs_reduced_max"] for x in s),
        offblock_max=max(max(x["ode_offblock_max"], x["gd_offblock_max"]) for x in s),
        alpha_admissible_n=len(adm), alpha_admissible_converged=sum(r["converged"] for r in adm),
        alpha_admissible_unconverged=sum(not r["converged"] for r in adm),
        alpha_admissible_dist_max=max(r["dist_final"] for r in adm),
        alpha_beyond_n=len(beyond), alpha_beyond_converged=sum(r["converged"] for r in beyond),
        alpha_all_converged=bool(all(r["converged"] for r in alpha_rows)))
    for k in list(out):
        out[k + "_se"] = metrics.EXACT
    metrics.put(out, "ntasks_slope", {x["setting"]: x["ntasks_slope"] for x in s},
                {x["setting"]: x["ntasks_slope_se"] for x in s})
    if all("alpha_c_ratio" in x for x in s):
        metrics.put(out, "alpha_c_ratio", {x["setting"]: x["alpha_c_ratio"] for x in s}, metrics.EXACT)
        out["alpha_c_found"] = {x["setting"]: x["alpha_c_found"] for x in s}
    return out


def needed_replication(value: float, se: float, n: int, band, z: float) -> float:
    """Replicates (seeds) at which ``value +/- z se`` would clear the nearer edge of ``band``, from
    ``se ~ 1/sqrt(n)``: ``n (z se / margin)^2`` (inf if the value sits on an edge)."""
    return verdict.replication_to_decide(value, se, n, band, z)


def boundary_md(summaries: dict, alpha_boundary: dict, sweep: dict) -> str:
    """The empirical alpha boundary per covariance as Markdown (for the verdict page)."""
    lines = ["## Where the flow stops reaching theta* (alpha_c, reduced flow)", "",
             f"Scan of alpha / alpha_max = 1, {alpha_boundary['growth']:g}, ... up to "
             f"{alpha_boundary['f_max']:g}, then {alpha_boundary['n_bisect']} bisection steps in log alpha; "
             f"converged: distance to theta* < tol at t = {sweep['t_max']:g}, DOP853 at rtol "
             f"{sweep['rtol']:g}, atol {sweep['atol']:g}; the upper end re-integrated at rtol "
             f"{alpha_boundary['check_rtol']:g}, atol {alpha_boundary['check_atol']:g}.", "",
             "| setting | alpha_max | alpha_c / alpha_max | bracket | at the upper end: distance, risk, "
             "||A||^2 - b^2 | distance at the tighter tolerances | what happens there |",
             "|---|---|---|---|---|---|---|"]
    for x in summaries.values():
        if "alpha_c_ratio" not in x:
            continue
        if x["alpha_c_found"]:
            lines.append(f"| {x['label']} | {x['alpha_max']:.4g} | {x['alpha_c_ratio']:.4g} | "
                         f"[{x['alpha_c_lo']:.4g}, {x['alpha_c_hi']:.4g}] | {x['alpha_c_dist_hi']:.3g}, "
                         f"{x['alpha_c_risk_hi']:.3g}, {x['alpha_c_conservation_hi']:.3g} | "
                         f"{x['alpha_c_dist_hi_check']:.3g} | {x['alpha_c_kind']} |")
        else:
            lines.append(f"| {x['label']} | {x['alpha_max']:.4g} | > {x['alpha_c_lo']:.4g} | none up to "
                         f"{x['alpha_c_lo']:.4g} | - | - | {x['alpha_c_kind']} |")
    return "\n".join(lines) + "\n"


def ntasks_md(summaries: dict, band, z: float) -> str:
    """The n_tasks slopes with their jackknife standard errors over seeds, and the seeds a slope whose
    interval straddles the band would need."""
    lines = ["## Gap between task-sampled and population GD against n_tasks (consistency check C4f)", "",
             "| setting | slope | jackknife s.e. over seeds | seeds | seeds needed to decide |",
             "|---|---|---|---|---|"]
    for x in summaries.values():
        v, se, n = x["ntasks_slope"], x["ntasks_slope_se"], x["ntasks_n_seed"]
        lo, hi = v - z * se, v + z * se
        decided = (band[0] <= lo and hi <= band[1]) or hi < band[0] or lo > band[1]
        need = "decided" if decided else f"{needed_replication(v, se, n, band, z):.0f}"
        lines.append(f"| {x['label']} | {v:.4g} | {se:.3g} | {n} | {need} |")
    return "\n".join(lines) + "\n"


def alpha_table_md(rows: list[dict]) -> str:
    """The alpha-sweep table as Markdown (for the verdict page)."""
    lines = ["## Where the population flow reaches theta* (alpha sweep, reduced flow)", "",
             "| setting | alpha / alpha_max | alpha | admissible | final distance | converged | t to reach tol |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['alpha_fraction']:g} | {r['alpha']:.4g} | {r['admissible']} | "
                     f"{r['dist_final']:.3g} | {r['converged']} | {r['t_reach']:.3g} |")
    return "\n".join(lines) + "\n"
