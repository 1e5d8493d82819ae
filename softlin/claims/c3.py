"""C3 — transfer of the optimisation analysis (Thm. 4.3 / 5.1): the seed log's protocol.

Three models from the same Eq. (9) initialisation on the same tasks: ``softmax(L)``,
``linear(L)`` and ``linear(inf)``.  Metrics per (setting, seed, L): the trajectory gaps
``D_inf = max_t ||theta_L^softmax(t) - theta_inf(t)||_F`` and ``D_linL`` (against ``linear(L)``),
held-out risks, distance to ``theta*``, off-block mass; seed averages and OLS slopes in log10-log10.
"""

from __future__ import annotations

import numpy as np

from .. import metrics, models, params, train
from .._jax import jax
from ..train import trajectory_arrays, trajectory_from

AVERAGED = ("D_inf_max", "D_linL_max", "R_pop_at_L", "R_pop_at_eval", "dist_bayes",
            "offblock_U", "offblock_v", "R_init", "theta_inf_norm")
FITTED = ("D_inf_max", "D_linL_max", "R_pop_at_L", "dist_bayes")


SEED_ORDER = "seedorder_"  # prefix of the trajectories trained without pair summation (C3d)


def train_setting(tasks, Ls, lr, steps, record_every, convention, progress=print,
                  seed_order: bool = False) -> dict:
    """All trajectories of one (setting, seed): ``limit`` once, ``softmax`` and ``linear`` per L.

    ``seed_order``: also train ``limit`` and ``softmax(L)`` with the tasks summed in the seed's
    order instead of pairing antithetic partners first (``train.gradient_descent(...,
    reduction="seed_order")``), stored with the prefix ``seedorder_``: the runs on which C3d
    measures how far a rounding-level asymmetry grows (the paired runs keep it at 0 by construction).
    Each progress line is printed once its arrays exist (``jax.device_get`` waits for JAX's
    asynchronous dispatch), so the log says where the job is.
    """
    p0 = params.init_eq9(tasks.sigma)
    reductions = ("pairs", "seed_order") if seed_order else ("pairs",)
    out = {}
    for red in reductions:
        pre = SEED_ORDER if red == "seed_order" else ""
        out.update(jax.device_get(trajectory_arrays(pre + "limit", train.gradient_descent(
            "limit", p0, tasks, lr=lr, steps=steps, record_every=record_every, convention=convention,
            reduction=red))))
    progress(f"linear(inf) done; {len(Ls)} prompt lengths to go")
    for i, L in enumerate(Ls):
        for model in ("softmax", "linear"):
            traj = train.gradient_descent(model, p0, tasks, L=L, lr=lr, steps=steps,
                                          record_every=record_every, convention=convention)
            out.update(jax.device_get(trajectory_arrays(f"{model}_L{L}", traj)))
        if seed_order:
            traj = train.gradient_descent("softmax", p0, tasks, L=L, lr=lr, steps=steps,
                                          record_every=record_every, convention=convention,
                                          reduction="seed_order")
            out.update(jax.device_get(trajectory_arrays(f"{SEED_ORDER}softmax_L{L}", traj)))
        progress(f"L={L} done ({i + 1}/{len(Ls)})")
    out["Ls"] = np.asarray(Ls)
    return out


def _offblock_max_along(traj, name) -> float:
    """Largest off-block mass (U or v part) over the recorded iterates and the final one."""
    rec, _, _, final = trajectory_from(traj, name)
    mu, mv = metrics.offblock_mass(rec)
    fu, fv = metrics.offblock_mass(final)
    return float(max(np.max(mu), np.max(mv), fu, fv))


def seed_rows(traj, eval_tasks, sigma, Ls, eval_L, setting, token_kind, seed):
    """Per-L metric rows of one seed (the seed log's per-L lines) and the ``theta_inf`` summary."""
    inf_rec, inf_loss, _, inf_final = trajectory_from(traj, "limit")
    star = params.bayes_optimum(sigma)
    ob_inf = metrics.offblock_mass(inf_final)
    theta_inf_norm = float(np.sqrt(np.sum(inf_final.U ** 2) + np.sum(inf_final.v ** 2)))
    info = dict(setting=setting, token_kind=token_kind, seed=seed, R_init=float(inf_loss[0]),
                R_final=float(inf_loss[-1]), theta_inf_norm=theta_inf_norm,
                offblock_inf_U=float(ob_inf[0]), offblock_inf_v=float(ob_inf[1]),
                dist_bayes_inf=float(metrics.theta_dist(inf_final, star)))
    seed_order = f"{SEED_ORDER}limit_U" in traj
    if seed_order:
        _, _, _, so_final = trajectory_from(traj, f"{SEED_ORDER}limit")
        ob_so = metrics.offblock_mass(so_final)
        info.update(offblock_seed_order_inf_U=float(ob_so[0]), offblock_seed_order_inf_v=float(ob_so[1]),
                    offblock_seed_order_inf_along=_offblock_max_along(traj, f"{SEED_ORDER}limit"))
    eval_data = models.prompt_data(eval_tasks, int(eval_L))
    rows = []
    for L in Ls:
        s_rec, s_loss, _, s_final = trajectory_from(traj, f"softmax_L{L}")
        l_rec, _, _, _ = trajectory_from(traj, f"linear_L{L}")
        d_inf = metrics.theta_dist(s_rec, inf_rec)
        d_lin = metrics.theta_dist(s_rec, l_rec)
        ob = metrics.offblock_mass(s_final)
        rows.append(dict(
            setting=setting, token_kind=token_kind, seed=seed, L=int(L),
            D_inf_max=float(d_inf.max()), D_inf_final=float(d_inf[-1]),
            D_linL_max=float(d_lin.max()), D_linL_final=float(d_lin[-1]),
            R_train_final=float(s_loss[-1]),
            R_pop_at_L=float(models.risk_of("softmax", s_final, models.with_length(eval_data, L))),
            R_pop_at_eval=float(models.risk_of("softmax", s_final, eval_data)),
            R_init=info["R_init"], dist_bayes=float(metrics.theta_dist(s_final, star)),
            offblock_U=float(ob[0]), offblock_v=float(ob[1]), theta_inf_norm=theta_inf_norm))
        if seed_order:
            _, _, _, so_final = trajectory_from(traj, f"{SEED_ORDER}softmax_L{L}")
            ob_so = metrics.offblock_mass(so_final)
            rows[-1].update(offblock_seed_order_U=float(ob_so[0]), offblock_seed_order_v=float(ob_so[1]),
                            offblock_seed_order_along=_offblock_max_along(traj, f"{SEED_ORDER}softmax_L{L}"))
    return rows, info


def average_seeds(rows_by_seed: list[list[dict]]) -> list[dict]:
    """Seed means and standard errors (``std(ddof=1) / sqrt(n)``; 0 for a single seed) per L."""
    n = len(rows_by_seed)
    out = []
    for i, first in enumerate(rows_by_seed[0]):
        row = dict(setting=first["setting"], token_kind=first["token_kind"], L=first["L"], n_seed=n)
        for k in AVERAGED:
            vals = np.array([rows[i][k] for rows in rows_by_seed])
            row[k] = float(vals.mean())
            row[k + "_sem"] = float(vals.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
        out.append(row)
    return out


def offblock_summary(per_seed: list[dict], infos: list[dict]) -> dict:
    """C3d's numbers: off-block mass of the final iterates (as the seed log printed it), max over
    every run; ``limit_max`` / ``softmax_max`` for the paired runs (0 by construction),
    ``seed_order`` for the runs without pair summation (where rounding can grow), with the
    max over recorded iterates and the runs above 1e-12."""
    out = {"limit_max": max(max(i["offblock_inf_U"], i["offblock_inf_v"]) for i in infos),
           "softmax_max": max(max(r["offblock_U"], r["offblock_v"]) for r in per_seed)}
    if infos and "offblock_seed_order_inf_U" in infos[0]:
        fin = [max(r["offblock_seed_order_U"], r["offblock_seed_order_v"]) for r in per_seed]
        out["seed_order"] = {
            "limit_max": max(max(i["offblock_seed_order_inf_U"], i["offblock_seed_order_inf_v"]) for i in infos),
            "softmax_max": max(fin),
            "limit_max_along": max(i["offblock_seed_order_inf_along"] for i in infos),
            "softmax_max_along": max(r["offblock_seed_order_along"] for r in per_seed),
            "softmax_above_1e-12": [f"{r['setting']}/{r['token_kind']} seed {r['seed']} L={r['L']}: {x:.2g}"
                                    for r, x in zip(per_seed, fin) if x > 1e-12]}
    return out


def fit_block(rows: list[dict], label: str) -> dict:
    """Slopes (log10 value vs log10 L), increases, ratios: the seed's ``fit_block`` plus the controls' metrics."""
    logL = np.log10([r["L"] for r in rows])
    out = dict(config=label)
    for k in FITTED:
        vals = np.array([r[k] for r in rows])
        s, se, _ = metrics.ols_slope(logL, np.log10(np.maximum(vals, 1e-300)))
        out[f"slope_{k}"] = s
        out[f"slope_{k}_se"] = se
        out[f"monotone_{k}"] = bool(np.all(np.diff(vals) < 0))
        out[f"n_increases_{k}"] = metrics.n_increases(vals)
        out[f"{k}_first"] = float(vals[0])
        out[f"{k}_last"] = float(vals[-1])
        out[f"{k}_ratio"] = float(vals[-1] / vals[0])
    d_inf = np.array([r["D_inf_max"] for r in rows])
    if len(rows) >= 4:
        out["slope_last4_D_inf_max"] = metrics.ols_slope(logL[-4:], np.log10(d_inf[-4:]))[0]
    out["D_inf_max_small_over_large"] = float(d_inf[0] / d_inf[-1])
    out["D_inf_max_rel_to_theta"] = out["D_inf_max_last"] / rows[0]["theta_inf_norm"]
    out["R_pop_rel_to_init"] = out["R_pop_at_L_last"] / rows[0]["R_init"]
    out["offblock_softmax_max"] = float(max(max(r["offblock_U"], r["offblock_v"]) for r in rows))
    return out


# --------------------------------------------------------------------------- the metrics job
TABLE_COLUMNS = ("setting", "token_kind", "L", "n_seed", "D_inf_max", "D_inf_max_sem", "D_linL_max",
                 "D_linL_max_sem", "R_pop_at_L", "R_pop_at_L_sem", "R_pop_at_eval", "R_pop_at_eval_sem",
                 "dist_bayes", "dist_bayes_sem", "offblock_U", "offblock_v", "R_init", "theta_inf_norm")


def summarize_runs(runs, Ls, eval_L: int, protocol: dict, progress=print) -> dict:
    """C3's metrics from every (setting, seed): ``runs`` yields ``(run, traj, eval_tasks)`` with
    ``run = {"setting": resolved setting, "seed": int}``, ``traj`` the arrays of
    :func:`train_setting` and ``eval_tasks`` the held-out :class:`~softlin.tasks.Tasks` (consumed
    one at a time, so a generator keeps one run in memory).

    Returns ``{"table": rows, "per_seed": rows, "metrics": dict}``: the seed-averaged rows with the
    seed script's columns (``R_pop_at_eval`` named ``R_pop_at_<eval_L>``), the per-seed rows, and
    the fits per ``<label>_<token_kind>`` block, the theta_inf summaries and C3d's off-block numbers.
    """
    per_seed, infos, by_setting = [], [], {}
    for run, traj, eval_tasks in runs:
        st = run["setting"]
        rows, info = seed_rows(traj, eval_tasks, np.asarray(st["sigma"]), Ls, eval_L,
                               st["label"], st["token_kind"], run["seed"])
        per_seed += rows
        infos.append(info)
        by_setting.setdefault(st["name"], []).append(rows)
        progress(f"{st['name']} seed {run['seed']}: theta_inf R {info['R_init']:.3e} -> {info['R_final']:.3e}")
    averaged, fits = [], {}
    for rows_by_seed in by_setting.values():
        avg = average_seeds(rows_by_seed)
        averaged += avg
        label = f"{avg[0]['setting']}_{avg[0]['token_kind']}"
        fits[label] = fit_block(avg, label)
    col = f"R_pop_at_{eval_L}"
    rename = {"R_pop_at_eval": col, "R_pop_at_eval_sem": col + "_sem"}
    table = [{rename.get(k, k): row[k] for k in TABLE_COLUMNS} for row in averaged]
    per_seed_out = [{(col if k == "R_pop_at_eval" else k): v for k, v in row.items()} for row in per_seed]
    metrics_out = {"fits": fits, "infos": infos, "offblock": offblock_summary(per_seed, infos),
                   "protocol": protocol, "L": Ls}
    return {"table": table, "per_seed": per_seed_out, "metrics": metrics_out}
