"""C4 — tractable infinite-prompt dynamics (Sec. 5, Remark 5.2).

The population flow of ``linear(inf)`` from the symbolic closed form (S2):

* gradient descent on it at the training step size (:func:`softlin.train.population_gradient_descent`);
* the gradient-flow ODE on the full ``(U, v)`` gradient (jax.grad of the closed-form risk),
  integrated with an adaptive solver (scipy ``solve_ivp``, DOP853 by default);
* the reduced block flow ``(A, b)`` from the symbolic module (S2), the same ODE on the block manifold;
* the task-sampled ``linear(inf)`` gradient descent (C3's protocol) beside them, and the gap
  between sampled and population trajectories against the number of tasks.
"""

from __future__ import annotations

import numpy as np

from .. import metrics, models, params, train
from .._jax import jax, jnp
from ..params import Params
from ..tasks import check_sigma, sample


# --------------------------------------------------------------------------- flows
@jax.jit
def _neg_grad_flat(y, sigma):
    """``-grad R_pop`` at the flattened ``theta`` (:func:`softlin.params.flatten`)."""
    g = jax.grad(models.population_risk_kernel)(params.unflatten(y, sigma.shape[0] + 1), sigma)
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

    from symbolic.export import reduced_flow_fn

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


_pop_risk_batch = jax.jit(jax.vmap(models.population_risk_kernel, in_axes=(0, None)))


def along(p: Params, sigma) -> dict:
    """Population risk, distance to theta*, off-block mass, conservation defect per record."""
    s = check_sigma(sigma)
    star = params.bayes_optimum(s)
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
        train.population_gradient_descent(p0, s, lr=lr, steps=steps, record_every=every).params)
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
    star = params.bayes_optimum(s)
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
    return out


# --------------------------------------------------------------------------- metrics
def summarize(name: str, label: str, r: dict, tol: float, gd_tol: float) -> tuple[dict, list[dict]]:
    """Per-setting summary (final distances, defects, n_tasks slope) and alpha-table rows."""
    n_tasks = np.asarray(r["ntasks_n_tasks"], dtype=np.float64)
    gap_mean = r["ntasks_gap"].mean(axis=1)
    slope, se, _ = metrics.ols_slope(np.log10(n_tasks), np.log10(gap_mean))
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
        ntasks_slope=slope, ntasks_slope_se=se, ntasks_n_tasks=n_tasks.tolist(),
        ntasks_gap_mean=gap_mean.tolist(),
        ntasks_gap_se=(r["ntasks_gap"].std(axis=1, ddof=1) / np.sqrt(r["ntasks_gap"].shape[1])).tolist()
        if r["ntasks_gap"].shape[1] > 1 else [0.0] * len(gap_mean))
    rows = []
    for f, dist in zip(r["alpha_fractions"], r["alpha_dist"]):
        hit = np.nonzero(dist < tol)[0]
        rows.append(dict(setting=name, label=label, alpha_fraction=float(f),
                         alpha=float(f * r["alpha_max"]), admissible=bool(0 < f < 1),
                         dist_final=float(dist[-1]), converged=bool(dist[-1] < tol),
                         t_reach=float(r["alpha_t"][hit[0]]) if hit.size else float("nan")))
    return summ, rows


def aggregate(summaries: dict, alpha_rows: list[dict]) -> dict:
    adm = [r for r in alpha_rows if r["admissible"]]
    beyond = [r for r in alpha_rows if not r["admissible"]]
    s = list(summaries.values())
    return dict(
        ode_dist_final_max=max(x["ode_dist_final"] for x in s),
        gd_dist_final_max=max(x["gd_dist_final"] for x in s),
        ode_conservation_max=max(x["ode_conservation_max"] for x in s),
        gd_conservation_max=max(x["gd_conservation_max"] for x in s),
        ode_vs_reduced_max=max(x["ode_vs_reduced_max"] for x in s),
        offblock_max=max(max(x["ode_offblock_max"], x["gd_offblock_max"]) for x in s),
        ntasks_slope_min=min(x["ntasks_slope"] for x in s),
        ntasks_slope_max=max(x["ntasks_slope"] for x in s),
        alpha_admissible_n=len(adm), alpha_admissible_converged=sum(r["converged"] for r in adm),
        alpha_admissible_unconverged=sum(not r["converged"] for r in adm),
        alpha_admissible_dist_max=max(r["dist_final"] for r in adm),
        alpha_beyond_n=len(beyond), alpha_beyond_converged=sum(r["converged"] for r in beyond),
        alpha_all_converged=bool(all(r["converged"] for r in alpha_rows)))


def alpha_table_md(rows: list[dict]) -> str:
    """The alpha-sweep table as Markdown (for the verdict page)."""
    lines = ["## Where the population flow reaches theta* (alpha sweep, reduced flow)", "",
             "| setting | alpha / alpha_max | alpha | admissible | final distance | converged | t to reach tol |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['alpha_fraction']:g} | {r['alpha']:.4g} | {r['admissible']} | "
                     f"{r['dist_final']:.3g} | {r['converged']} | {r['t_reach']:.3g} |")
    return "\n".join(lines) + "\n"
