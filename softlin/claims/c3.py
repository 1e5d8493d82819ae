"""C3 — transfer of the optimisation analysis (Thm. 4.3 / 5.1): the seed log's protocol.

Three models from the same Eq. (9) initialisation on the same tasks: ``softmax(L)``,
``linear(L)`` and ``linear(inf)``.  Metrics per (setting, seed, L): the trajectory gaps
``D_inf = max_t ||theta_L^softmax(t) - theta_inf(t)||_F`` and ``D_linL`` (against ``linear(L)``),
held-out risks, distance to ``theta*``, off-block mass; seed averages and OLS slopes in log10-log10.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import metrics, models, params, population, train
from .. import tasks as task_draws
from .._jax import jax
from ..train import Trajectory

AVERAGED = ("D_inf_max", "D_linL_max", "R_pop_at_L", "R_pop_at_eval", "dist_bayes",
            "offblock_U", "offblock_v", "R_init", "theta_inf_norm")
FITTED = ("D_inf_max", "D_linL_max", "R_pop_at_L", "dist_bayes")


class SeedOrderRuns(NamedTuple):
    """The runs trained without pair summation (C3d): ``limit`` and ``softmax`` ``{L: Trajectory}``."""

    limit: Trajectory
    softmax: dict


class Runs(NamedTuple):
    """All trajectories of one (setting, seed), the record of a ``c3_train`` job: ``limit``
    (linear(inf)), ``softmax`` and ``linear`` ``{L: Trajectory}``, ``seed_order`` (C3d; None without)."""

    limit: Trajectory
    softmax: dict
    linear: dict
    seed_order: SeedOrderRuns | None = None


def runs_like(cfg: dict) -> Runs:
    """The template of :func:`train_setting`'s record (:mod:`softlin.records`), from the C3 config
    section (``d``, ``L``, ``steps``, ``record_every``, ``offblock_seed_order``: what its shape depends on)."""
    t = train.trajectory_like(cfg["d"], cfg["steps"], cfg["record_every"])
    by_L = {int(L): t for L in cfg["L"]}
    return Runs(t, by_L, dict(by_L), SeedOrderRuns(t, dict(by_L)) if cfg["offblock_seed_order"] else None)


def training_tasks(setting: dict, seed: int, d: int, n_pairs: int, n_query: int, l_max: int):
    """One seed's training tasks (``setting``: a resolved C3 setting, its ``sigma`` and ``token_kind``):
    ``n_pairs`` antithetic pairs, ``n_query`` queries, prompts of ``l_max`` tokens (docs/maths.md#sampling);
    what ``c3_sample`` writes and C2e's trajectory job draws."""
    return task_draws.sample(int(seed), d, np.asarray(setting["sigma"]), n_pairs, n_query, l_max, setting["token_kind"])


def train_limit(tasks, lr, steps, record_every, convention, reduction: str = "pairs") -> Trajectory:
    """The linear(inf) run on ``tasks`` from Eq. (9) (``params.init_eq9``): the first run of
    :func:`train_setting`, and the trajectory C2e reads (it needs no prompt, so C2 trains it itself)."""
    return jax.device_get(train.gradient_descent("limit", params.init_eq9(tasks.sigma), tasks, lr=lr, steps=steps,
                                                 record_every=record_every, convention=convention,
                                                 reduction=reduction))


def train_setting(tasks, Ls, lr, steps, record_every, convention, progress=print,
                  seed_order: bool = False) -> Runs:
    """All trajectories of one (setting, seed): ``limit`` once, ``softmax`` and ``linear`` per L.

    ``seed_order``: also train ``limit`` and ``softmax(L)`` with the tasks summed in the seed's
    order instead of pairing antithetic partners first (``train.gradient_descent(...,
    reduction="seed_order")``), kept in ``Runs.seed_order``: the runs on which C3d
    measures how far a rounding-level asymmetry grows (the paired runs keep it at 0 by construction).
    Each progress line is printed once its arrays exist (``jax.device_get`` waits for JAX's
    asynchronous dispatch), so the log says where the job is.
    """
    p0 = params.init_eq9(tasks.sigma)

    def run(model, L=None, reduction="pairs"):
        return jax.device_get(train.gradient_descent(model, p0, tasks, L=L, lr=lr, steps=steps,
                                                     record_every=record_every, convention=convention,
                                                     reduction=reduction))
    limit = train_limit(tasks, lr, steps, record_every, convention)
    so_limit = train_limit(tasks, lr, steps, record_every, convention, "seed_order") if seed_order else None
    progress(f"linear(inf) done; {len(Ls)} prompt lengths to go")
    soft, lin, so_soft = {}, {}, {}
    for i, L in enumerate(Ls):
        soft[int(L)], lin[int(L)] = run("softmax", L), run("linear", L)
        if seed_order:
            so_soft[int(L)] = run("softmax", L, "seed_order")
        progress(f"L={L} done ({i + 1}/{len(Ls)})")
    return Runs(limit, soft, lin, SeedOrderRuns(so_limit, so_soft) if seed_order else None)


def _offblock_max_along(t: Trajectory) -> float:
    """Largest off-block mass (U or v part) over the recorded iterates and the final one."""
    mu, mv = metrics.offblock_mass(t.params)
    fu, fv = metrics.offblock_mass(t.final)
    return float(max(np.max(mu), np.max(mv), fu, fv))


# C3d: how fast the off-block mass grows at the end of training (runs without pair summation); the
# fit's settings (records, floor, grow_rate) are the config's c3.offblock_rate, defaults in the schema


def grow_fraction(n_grow: int, n: int) -> tuple[float, float]:
    """Agresti-Coull ("plus four") estimate of a binomial probability from ``n_grow`` of ``n`` and its
    standard error: ``p = (k + 2) / (n + 4)``, ``se = sqrt(p (1 - p) / (n + 4))`` (never 0, so
    0 of n seeds still carries an error).  The interval ``p +/- z se`` is calibrated on the normal
    law (its width comes from the binomial, not from a sample variance): its df is ``"inf"``."""
    p = (n_grow + 2.0) / (n + 4.0)
    return float(p), float(np.sqrt(p * (1.0 - p) / (n + 4.0)))


def growth_rate(steps, mass, n_records: int, floor: float) -> float:
    """Growth rate per step of ``mass`` at the end of a run: the OLS slope of ``ln max(mass, floor)``
    on the step over the last ``n_records`` records.

    A run whose mass stays below ``floor`` (rounding level) over those records has rate exactly 0;
    an exponential ``m_0 e^{r t}`` above the floor has rate ``r`` (``ln 7 / 20 = 0.097`` for 7x per
    20 steps).  The slope is fitted, not read from two points, so one record's rounding does not
    decide it."""
    steps = np.asarray(steps, dtype=np.float64)[-n_records:]
    y = np.log(np.maximum(np.asarray(mass, dtype=np.float64)[-n_records:], floor))
    if steps.size < 2:
        raise ValueError("growth_rate needs at least 2 records")
    x = steps - steps.mean()
    return float(np.sum(x * (y - y.mean())) / np.sum(x * x))


def peak_growth_rate(steps, mass, n_records: int, floor: float) -> float:
    """The largest :func:`growth_rate` over every window of ``n_records`` consecutive records: how
    fast the mass grew wherever it grew, also where it grew and then saturated before the end
    (0 for a run at rounding level throughout)."""
    steps = np.asarray(steps, dtype=np.float64)
    mass = np.asarray(mass, dtype=np.float64)
    return max(growth_rate(steps[i:i + n_records], mass[i:i + n_records], n_records, floor)
               for i in range(steps.size - n_records + 1))


def offblock_growth(t: Trajectory, n_records: int, floor: float) -> tuple[float, float]:
    """``(rate at the end, peak rate)`` of the off-block mass (the larger of the U and v parts) of run
    ``t``: :func:`growth_rate` over the last records and :func:`peak_growth_rate`."""
    mu, mv = metrics.offblock_mass(t.params)
    m = np.maximum(mu, mv)
    return growth_rate(t.step, m, n_records, floor), peak_growth_rate(t.step, m, n_records, floor)


def seed_rows(traj: Runs, eval_tasks, sigma, Ls, eval_L, setting, token_kind, seed, rate: dict):
    """Per-L metric rows of one seed (the seed log's per-L lines) and the ``theta_inf`` summary.

    ``rate``: ``{"records": n, "floor": f}`` of :func:`offblock_growth` (c3.offblock_rate)."""
    rate = {"n_records": rate["records"], "floor": rate["floor"]}
    inf_rec, inf_loss, _, inf_final = traj.limit
    star = population.bayes_optimum(sigma)
    ob_inf = metrics.offblock_mass(inf_final)
    theta_inf_norm = float(np.sqrt(np.sum(inf_final.U ** 2) + np.sum(inf_final.v ** 2)))
    info = dict(setting=setting, token_kind=token_kind, seed=seed, R_init=float(inf_loss[0]),
                R_final=float(inf_loss[-1]), theta_inf_norm=theta_inf_norm,
                offblock_inf_U=float(ob_inf[0]), offblock_inf_v=float(ob_inf[1]),
                dist_bayes_inf=float(metrics.theta_dist(inf_final, star)))
    so = traj.seed_order
    if so is not None:
        ob_so = metrics.offblock_mass(so.limit.final)
        info.update(offblock_seed_order_inf_U=float(ob_so[0]), offblock_seed_order_inf_v=float(ob_so[1]),
                    offblock_seed_order_inf_along=_offblock_max_along(so.limit),
                    **dict(zip(("offblock_seed_order_inf_rate", "offblock_seed_order_inf_peak_rate"),
                               offblock_growth(so.limit, **rate))))
    eval_data = models.prompt_data(eval_tasks, int(eval_L))
    rows = []
    for L in Ls:
        s_rec, s_loss, _, s_final = traj.softmax[int(L)]
        l_rec = traj.linear[int(L)].params
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
        if so is not None:
            ob_so = metrics.offblock_mass(so.softmax[int(L)].final)
            rows[-1].update(offblock_seed_order_U=float(ob_so[0]), offblock_seed_order_v=float(ob_so[1]),
                            offblock_seed_order_along=_offblock_max_along(so.softmax[int(L)]),
                            **dict(zip(("offblock_seed_order_rate", "offblock_seed_order_peak_rate"),
                                       offblock_growth(so.softmax[int(L)], **rate))))
    return rows, info


def average_seeds(rows_by_seed: list[list[dict]]) -> list[dict]:
    """Seed means and standard errors (``std(ddof=1) / sqrt(n)``; 0 for a single seed) per L."""
    n = len(rows_by_seed)
    keys = AVERAGED + tuple(k for k in SEED_ORDER_AVERAGED if k in rows_by_seed[0][0])
    out = []
    for i, first in enumerate(rows_by_seed[0]):
        row = dict(setting=first["setting"], token_kind=first["token_kind"], L=first["L"], n_seed=n)
        for k in keys:
            vals = np.array([rows[i][k] for rows in rows_by_seed])
            row[k] = float(vals.mean())
            row[k + "_sem"] = float(vals.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
        out.append(row)
    return out


SEED_ORDER_AVERAGED = ("offblock_seed_order_U", "offblock_seed_order_v", "offblock_seed_order_rate",
                       "offblock_seed_order_peak_rate")


def _mean_se(values) -> tuple[float, float]:
    """Mean over seeds and its standard error (NaN for a single seed: no replication, no error)."""
    v = np.asarray(values, dtype=np.float64)
    return metrics.seed_mean(v) if v.shape[0] >= 2 else (float(v.mean()), float("nan"))


def offblock_summary(per_seed: list[dict], infos: list[dict], grow_rate: float) -> dict:
    """C3d's numbers.

    Paired runs (antithetic partners summed first): ``limit_max`` / ``softmax_max``, the largest
    final off-block mass over every run, 0 by construction (``exact``).  Runs without pair
    summation (``seed_order``), keyed ``"<setting>_<token_kind> linear(inf)"`` and
    ``"<setting>_<token_kind> L=<L>"``, means over seeds with their standard errors across seeds:
    ``rate`` (growth rate per step at the end of training), ``peak_rate`` (the largest over the
    run, also where the mass grew and saturated before the end: :func:`offblock_growth`), ``final`` /
    ``limit_final`` (final mass, the seed log's quantity); for display the maxima over every run
    (``limit_max``, ``softmax_max``, ``*_along``: over the recorded iterates too) and ``runs``, one
    line per run whose mass grows or ends above 1e-12; C3d's statistic: ``n_grow`` (seeds whose
    peak rate exceeds ``grow_rate``) and ``grow_frac`` (:func:`grow_fraction`, with its standard
    error, read at the normal quantile: df ``"inf"``)."""
    out = {"limit_max": max(max(i["offblock_inf_U"], i["offblock_inf_v"]) for i in infos),
           "softmax_max": max(max(r["offblock_U"], r["offblock_v"]) for r in per_seed)}
    out["limit_max_se"] = out["softmax_max_se"] = metrics.EXACT
    if not infos or "offblock_seed_order_inf_U" not in infos[0]:
        return out

    def label(x):
        return f"{x['setting']}_{x['token_kind']}"
    groups: dict[str, dict[str, list]] = {}
    for i in infos:
        g = groups.setdefault(f"{label(i)} linear(inf)", {"final": [], "rate": [], "peak_rate": []})
        g["final"].append(max(i["offblock_seed_order_inf_U"], i["offblock_seed_order_inf_v"]))
        g["rate"].append(i["offblock_seed_order_inf_rate"])
        g["peak_rate"].append(i["offblock_seed_order_inf_peak_rate"])
    for r in per_seed:
        g = groups.setdefault(f"{label(r)} L={r['L']}", {"final": [], "rate": [], "peak_rate": []})
        g["final"].append(max(r["offblock_seed_order_U"], r["offblock_seed_order_v"]))
        g["rate"].append(r["offblock_seed_order_rate"])
        g["peak_rate"].append(r["offblock_seed_order_peak_rate"])
    so = {"rate": {}, "rate_se": {}, "rate_df": {}, "peak_rate": {}, "peak_rate_se": {}, "peak_rate_df": {},
          "limit_final": {}, "limit_final_se": {},
          "final": {}, "final_se": {}, "n_seed": {k: len(g["rate"]) for k, g in groups.items()},
          "n_grow": {}, "grow_frac": {}, "grow_frac_se": {}, "grow_frac_df": {}, "grow_rate": float(grow_rate)}
    for key, g in groups.items():
        n = len(g["peak_rate"])
        so["n_grow"][key] = int(np.sum(np.asarray(g["peak_rate"], dtype=np.float64) > grow_rate))
        so["grow_frac"][key], so["grow_frac_se"][key] = grow_fraction(so["n_grow"][key], n)
        so["grow_frac_df"][key] = "inf"   # Agresti-Coull: a normal-law interval
        so["rate"][key], so["rate_se"][key] = _mean_se(g["rate"])
        so["peak_rate"][key], so["peak_rate_se"][key] = _mean_se(g["peak_rate"])
        so["rate_df"][key] = so["peak_rate_df"][key] = n - 1
        fin = "limit_final" if key.endswith("linear(inf)") else "final"
        so[fin][key], so[fin + "_se"][key] = _mean_se(g["final"])
        so.setdefault(fin + "_df", {})[key] = n - 1
    fin = [max(r["offblock_seed_order_U"], r["offblock_seed_order_v"]) for r in per_seed]
    so.update({
        "limit_max": max(max(i["offblock_seed_order_inf_U"], i["offblock_seed_order_inf_v"]) for i in infos),
        "softmax_max": max(fin),
        "limit_max_along": max(i["offblock_seed_order_inf_along"] for i in infos),
        "softmax_max_along": max(r["offblock_seed_order_along"] for r in per_seed),
        "softmax_above_1e-12": [f"{label(r)} seed {r['seed']} L={r['L']}: {x:.2g}"
                                for r, x in zip(per_seed, fin) if x > 1e-12],
        "runs": [f"{label(r)} seed {r['seed']} L={r['L']}: rate at the end {r['offblock_seed_order_rate']:+.3g} "
                 f"per step, peak {r['offblock_seed_order_peak_rate']:+.3g}, final mass {x:.2g}"
                 for r, x in zip(per_seed, fin) if x > 1e-12 or r["offblock_seed_order_peak_rate"] > 0]})
    out["seed_order"] = so
    return out


def _fit_stat(logL, keys, arrays) -> dict:
    """The fitted quantities of one setting from per-seed arrays (seeds on the leading axis): the
    seed log's ``fit_block`` on the seed-mean curves (OLS slope of log10 value on log10 L, first,
    last, ratio, the last-four slope, relative distances), plus the consecutive differences."""
    m = {k: np.asarray(a).mean(axis=0) for k, a in zip(keys, arrays)}
    out = {}
    for k in FITTED:
        vals = m[k]
        out[f"slope_{k}"] = metrics.ols_slope(logL, np.log10(np.maximum(vals, 1e-300)))[0]
        out[f"{k}_first"] = float(vals[0])
        out[f"{k}_last"] = float(vals[-1])
        out[f"{k}_ratio"] = float(vals[-1] / vals[0])
        out[f"diff_{k}"] = np.diff(vals)
    d_inf = m["D_inf_max"]
    if len(logL) >= 4:
        out["slope_last4_D_inf_max"] = metrics.ols_slope(logL[-4:], np.log10(d_inf[-4:]))[0]
    out["D_inf_max_small_over_large"] = float(d_inf[0] / d_inf[-1])
    out["D_inf_max_rel_to_theta"] = float(d_inf[-1] / m["theta_inf_norm"])
    out["R_pop_rel_to_init"] = float(m["R_pop_at_L"][-1] / m["R_init"])
    return out


def fit_block(rows_by_seed: list[list[dict]], label: str, z: float) -> dict:
    """One setting's fits from its per-seed rows (``rows_by_seed[s][i]``: seed ``s``, ``i``-th L).

    Every fitted quantity (slopes, first / last / ratio, relative distances) is computed on the
    seed-mean curves, as the seed log did, with its standard error ``<name>_se`` from the
    delete-one-seed jackknife (NaN with one seed).  Also: ``slope_<k>_ols_se`` (the OLS
    residual error over the nested L the seed log printed: not a standard error of the slope, for
    the digits comparison only), ``n_increases_<k>`` (the seed log's count of increases of the mean
    curve, exact: read at ``z = 0`` only) and ``n_sig_increases_<k>`` (the trend test, a random
    count: the rises of the mean curve with their jackknife errors, :func:`softlin.metrics.put_count`,
    judged by the decision rule: for a PASS a rise counts unless it is significantly negative, for a
    FAIL only where significantly positive; at ``z = 0`` the plain count).  Every error carries
    ``<name>_df = n - 1``.  ``z`` is kept for callers."""
    n = len(rows_by_seed)
    Ls = [r["L"] for r in rows_by_seed[0]]
    logL = np.log10(Ls)
    keys = FITTED + ("R_init", "theta_inf_norm")
    arrays = tuple(np.array([[r[k] for r in rows] for rows in rows_by_seed]) for k in FITTED) + (
        np.array([rows[0]["R_init"] for rows in rows_by_seed]),
        np.array([rows[0]["theta_inf_norm"] for rows in rows_by_seed]))

    def stat(arrs):
        return _fit_stat(logL, keys, arrs)
    if n >= 2:
        val, se = metrics.jackknife(stat, arrays)
    else:
        val = metrics._tree_map(metrics._to_py, stat(arrays))
        se = metrics._tree_map(lambda x: np.full_like(np.asarray(x, dtype=np.float64), np.nan)
                               if np.ndim(x) else float("nan"), val)
    out = dict(config=label, n_seed=n, seeds=[int(rows[0]["seed"]) for rows in rows_by_seed], L=[int(L) for L in Ls])
    df = n - 1  # the delete-one-seed jackknife (0 with one seed: its errors are NaN, nothing to read)
    for k in FITTED:
        mean = np.asarray(arrays[FITTED.index(k)]).mean(axis=0)
        out[f"slope_{k}_ols_se"] = metrics.ols_slope(logL, np.log10(np.maximum(mean, 1e-300)))[1]
        metrics.put(out, f"n_increases_{k}", metrics.n_increases(mean), metrics.EXACT)
        diff, diff_se = np.asarray(val.pop(f"diff_{k}")), np.asarray(se.pop(f"diff_{k}"))
        metrics.put_count(out, f"n_sig_increases_{k}", diff, diff_se, df)
        out[f"diff_{k}"], out[f"diff_{k}_se"] = diff.tolist(), diff_se.tolist()
    for k, v in val.items():
        metrics.put(out, k, v, se[k], df)
    return out


def fit_all(per_seed: list[dict], z: float, seeds: dict | None = None) -> dict:
    """:func:`fit_block` of every ``<setting>_<token_kind>`` in the per-seed rows (in their order),
    over every seed or, with ``seeds = {label: [seed, ...]}``, over those seeds only."""
    by: dict[str, dict[int, list]] = {}
    for r in per_seed:
        lab = f"{r['setting']}_{r['token_kind']}"
        if seeds is not None and int(r["seed"]) not in seeds.get(lab, ()):
            continue
        by.setdefault(lab, {}).setdefault(int(r["seed"]), []).append(r)
    return {lab: fit_block(list(rows.values()), lab, z) for lab, rows in by.items()}


# --------------------------------------------------------------------------- the metrics job
TABLE_COLUMNS = ("setting", "token_kind", "L", "n_seed", "D_inf_max", "D_inf_max_sem", "D_linL_max",
                 "D_linL_max_sem", "R_pop_at_L", "R_pop_at_L_sem", "R_pop_at_eval", "R_pop_at_eval_sem",
                 "dist_bayes", "dist_bayes_sem", "offblock_U", "offblock_v", "R_init", "theta_inf_norm")


def summarize_runs(runs, Ls, eval_L: int, protocol: dict, progress=print, z: float = 2.0, *,
                   rate: dict) -> dict:
    """C3's metrics from every (setting, seed): ``runs`` yields ``(run, traj, eval_tasks)`` with
    ``run = {"setting": resolved setting, "seed": int}``, ``traj`` the :class:`Runs` of
    :func:`train_setting` and ``eval_tasks`` the held-out :class:`~softlin.tasks.Tasks` (consumed
    one at a time, so a generator keeps one run in memory).  ``z``: the decision rule's width (the
    trend tests count increases larger than ``z`` standard errors); ``rate``: C3d's growth-rate fit
    (c3.offblock_rate: ``{"records", "floor", "grow_rate"}``, :func:`offblock_growth`).

    Returns ``{"table": rows, "per_seed": rows, "metrics": dict}``: the seed-averaged rows with the
    seed script's columns (``R_pop_at_eval`` named ``R_pop_at_<eval_L>``; with the runs without
    pair summation also their seed-mean off-block mass and growth rate), the per-seed rows, and
    the fits per ``<label>_<token_kind>`` block (every value with its standard error across
    seeds), the theta_inf summaries and C3d's off-block numbers.
    """
    per_seed, infos, by_setting = [], [], {}
    for run, traj, eval_tasks in runs:
        st = run["setting"]
        rows, info = seed_rows(traj, eval_tasks, np.asarray(st["sigma"]), Ls, eval_L,
                               st["label"], st["token_kind"], run["seed"], rate)
        per_seed += rows
        infos.append(info)
        by_setting.setdefault(st["name"], []).append(rows)
        progress(f"{st['name']} seed {run['seed']}: theta_inf R {info['R_init']:.3e} -> {info['R_final']:.3e}")
    averaged, fits = [], {}
    for rows_by_seed in by_setting.values():
        avg = average_seeds(rows_by_seed)
        averaged += avg
        label = f"{avg[0]['setting']}_{avg[0]['token_kind']}"
        fits[label] = fit_block(rows_by_seed, label, z)
    col = f"R_pop_at_{eval_L}"
    rename = {"R_pop_at_eval": col, "R_pop_at_eval_sem": col + "_sem"}
    extra = [k + s for k in SEED_ORDER_AVERAGED if averaged and k in averaged[0] for s in ("", "_sem")]
    table = [{rename.get(k, k): row[k] for k in TABLE_COLUMNS + tuple(extra)} for row in averaged]
    per_seed_out = [{(col if k == "R_pop_at_eval" else k): v for k, v in row.items()} for row in per_seed]
    metrics_out = {"fits": fits, "infos": infos,
                   "offblock": offblock_summary(per_seed, infos, rate["grow_rate"]),
                   "protocol": protocol, "L": Ls, "z": z,
                   "offblock_rate": dict(rate)}
    return {"table": table, "per_seed": per_seed_out, "metrics": metrics_out}
