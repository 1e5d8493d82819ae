"""C4's metrics: per-setting summaries of the population flows (final distances, defects, the
n_tasks slope with its jackknife error over seeds, the boundary alpha_c), the alpha table, the
claim-level aggregates the criteria read, and the tables of the verdict page."""

from __future__ import annotations

import numpy as np

from .. import metrics, student, verdict
from .c4 import Setting
from .c4_boundary import boundary_kind


def ntasks_slope(n_tasks, gaps) -> tuple[float, float]:
    """Slope of ``log10(mean gap over seeds)`` against ``log10 n_tasks`` and its delete-one jackknife
    standard error over the independent seeds (``gaps`` (len(n_tasks), n_seed); a seed index is one
    replicate: its runs at every n_tasks are left out together)."""
    x = np.log10(np.asarray(n_tasks, dtype=np.float64))

    def stat(g):  # g (seeds, n_tasks)
        return metrics.ols_slope(x, np.log10(np.asarray(g).mean(axis=0)))[0]
    return metrics.jackknife(stat, np.asarray(gaps, dtype=np.float64).T)


def summarize(name: str, label: str, r: Setting, tol: float, gd_tol: float) -> tuple[dict, list[dict]]:
    """Per-setting summary (final distances, defects, n_tasks slope, alpha boundary) and alpha-table rows."""
    n_tasks = np.asarray(r.ntasks.n_tasks, dtype=np.float64)
    gaps = np.asarray(r.ntasks.gap, dtype=np.float64)
    gap_mean = gaps.mean(axis=1)
    slope, se = ntasks_slope(n_tasks, gaps)
    summ = dict(
        setting=name, label=label, alpha=float(r.alpha), alpha_max=float(r.alpha_max),
        t_max=float(r.t[-1]),
        ode_dist_final=float(r.ode.along.dist[-1]), gd_dist_final=float(r.gd.along.dist[-1]),
        sampled_dist_final=float(r.sampled.dist[-1]),
        ode_risk_final=float(r.ode.along.risk[-1]), gd_risk_final=float(r.gd.along.risk[-1]),
        risk_init=float(r.ode.along.risk[0]),
        ode_conservation_max=float(np.abs(r.ode.along.conservation).max()),
        gd_conservation_max=float(np.abs(r.gd.along.conservation).max()),
        sampled_conservation_max=float(np.abs(r.sampled.conservation).max()),
        ode_offblock_max=float(r.ode.along.offblock.max()), gd_offblock_max=float(r.gd.along.offblock.max()),
        ode_vs_reduced_max=float(np.max(r.ode_vs_reduced)),
        sampled_gap_max=float(r.sampled_gap.max()),
        ode_nfev=int(r.ode_nfev),
        ode_reaches_star=bool(r.ode.along.dist[-1] < tol), gd_reaches_star=bool(r.gd.along.dist[-1] < gd_tol),
        ntasks_slope=slope, ntasks_slope_se=se, ntasks_n_seed=int(gaps.shape[1]),
        ntasks_n_tasks=n_tasks.tolist(), ntasks_gap_mean=gap_mean.tolist(),
        ntasks_gap_se=(gaps.std(axis=1, ddof=1) / np.sqrt(gaps.shape[1])).tolist())
    b = r.boundary
    if b is not None:
        found = bool(b.found)
        summ.update(
            alpha_c_found=found, alpha_c_ratio=float(b.ratio),
            alpha_c_lo=float(b.lo), alpha_c_hi=float(b.hi),
            alpha_c=float(b.ratio) * float(r.alpha_max),
            alpha_c_dist_hi=float(b.dist_hi), alpha_c_risk_hi=float(b.risk_hi),
            alpha_c_conservation_hi=float(b.conservation_hi),
            alpha_c_dist_hi_check=float(b.dist_hi_check),
            alpha_c_kind=boundary_kind(found, bool(b.solver_ok_hi), float(b.risk_hi),
                                       float(b.dist_hi_check), tol),
            alpha_c_n_solves=int(b.n_solves),
            alpha_c_scan_f=np.asarray(b.scan_f, dtype=np.float64).tolist(),
            alpha_c_scan_dist=np.asarray(b.scan_dist, dtype=np.float64).tolist())
    rows = []
    for f, dist in zip(r.sweep.fractions, r.sweep.dist):
        hit = np.nonzero(dist < tol)[0]
        rows.append(dict(setting=name, label=label, alpha_fraction=float(f),
                         alpha=float(f * r.alpha_max), admissible=bool(0 < f < 1),
                         dist_final=float(dist[-1]), converged=bool(dist[-1] < tol),
                         t_reach=float(r.sweep.t[hit[0]]) if hit.size else float("nan")))
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
        alpha_admissible_dist_max=max((r["dist_final"] for r in adm), default=float("nan")),  # none: undefined
        alpha_beyond_n=len(beyond), alpha_beyond_converged=sum(r["converged"] for r in beyond),
        alpha_all_converged=bool(all(r["converged"] for r in alpha_rows)))
    for k in list(out):
        out[k + "_se"] = metrics.EXACT
    metrics.put(out, "ntasks_slope", {x["setting"]: x["ntasks_slope"] for x in s},
                {x["setting"]: x["ntasks_slope_se"] for x in s},
                {x["setting"]: x["ntasks_n_seed"] - 1 for x in s})  # jackknife over the seeds
    if all("alpha_c_ratio" in x for x in s):
        metrics.put(out, "alpha_c_ratio", {x["setting"]: x["alpha_c_ratio"] for x in s}, metrics.EXACT)
        out["alpha_c_found"] = {x["setting"]: x["alpha_c_found"] for x in s}
    return out


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
        m = student.multiplier(z, n - 1) if z > 0 else 0.0
        lo, hi = v - m * se, v + m * se
        decided = (band[0] <= lo and hi <= band[1]) or hi < band[0] or lo > band[1]
        need = "decided" if decided else f"{verdict.replication_to_decide(v, se, n, band, z, t_law=True):.0f}"
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
