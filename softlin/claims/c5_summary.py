"""C5's metrics for the predeclared criteria (config ``c5.criteria``): the per-L table of test risks
(:mod:`softlin.claims.c5_eval`) and the loss logs turned into gaps, excesses, slopes and convergence
counts, each with its standard error (jackknife over blocks of test prompts, or over seeds)."""

from __future__ import annotations

import numpy as np

from .. import metrics
from .c5 import task_of
from .c5_convergence import convergence_summary, learning_time, run_convergence
from .c5_eval import PREDICTORS


def claim_metrics(R, Ls, noise: float, gap_constant: float | None = None) -> dict:
    """The criteria's quantities from a table of mean test risks ``R`` (n_L, len(PREDICTORS)) (columns
    :data:`PREDICTORS`): one function for every replication unit (:func:`with_se` jackknifes it over
    blocks of test prompts, or over seeds).

    Excesses over R_inf are paired with the Bayes-optimal predictor on the same test prompts
    (``R_m - R_limit_opt``: the same expectation R_m - noise, without the test set's own noise floor
    error).  ``gap_slope_top_third``: OLS slope of log(gap) on log(L) over the top third of L (NaN if a
    gap there is not positive); ``gap_L``: gap x L per L; ``gap_constant``: the first-order
    prediction of gap x L (S7), giving ``gap_L_over_predicted`` per L and at the largest L."""
    R = np.asarray(R, dtype=float)
    Ls = np.asarray(Ls)
    col = {p: i for i, p in enumerate(PREDICTORS)}
    soft, lin, opt = R[:, col["softmax"]], R[:, col["linear"]], R[:, col["limit_opt"]]
    gap = soft - lin
    rel = gap / lin
    third = max(1, len(Ls) // 3)
    out = {"gap_rel_at_Lmax": float(abs(rel[-1])), "gap_rel_at_Lmin": float(abs(rel[0])),
           "gap_abs_low_third": float(np.mean(np.abs(gap[:third]))),
           "gap_abs_high_third": float(np.mean(np.abs(gap[-third:])))}
    out["gap_shrink_ratio"] = out["gap_abs_high_third"] / max(out["gap_abs_low_third"], 1e-300)
    exc = {}
    for m, r in (("softmax", soft), ("linear", lin)):
        e = exc[m] = r - opt
        out[m] = {"excess_rel_at_Lmax": float(e[-1] / noise), "excess_rel_at_Lmin": float(e[0] / noise),
                  "excess_ratio": float(e[-1] / e[0]) if e[0] > 0 else float("nan"),
                  "R_at_Lmax": float(r[-1]), "R_at_Lmin": float(r[0]), "excess_L_at_Lmax": float(e[-1] * Ls[-1])}
    top = slice(len(Ls) - max(2, third), None)
    g = gap[top]
    out["gap_slope_top_third"] = (float(np.polyfit(np.log(Ls[top]), np.log(g), 1)[0]) if np.all(g > 0)
                                  else float("nan"))
    out["gap_L"] = {str(int(L)): float(x * L) for L, x in zip(Ls, gap)}
    out["gap_L_at_Lmax"] = float(gap[-1] * Ls[-1])
    out["gap_rel"] = {str(int(L)): float(x) for L, x in zip(Ls, rel)}
    out["excess_ratio_softmax_over_linear_at_Lmax"] = float(exc["softmax"][-1] / exc["linear"][-1])
    if gap_constant is not None:
        out["gap_L_over_predicted"] = {str(int(L)): float(x * L / gap_constant) for L, x in zip(Ls, gap)}
        out["gap_L_over_predicted_at_Lmax"] = float(gap[-1] * Ls[-1] / gap_constant)
    return out


NESTED = ("softmax", "linear")


def with_se(value: dict, se: dict, df: int) -> dict:
    """``value`` with every quantity's standard error and its degrees of freedom ``df`` beside it
    (``name_se``, ``name_df``; nested for softmax/linear)."""
    out = {}
    for k, v in value.items():
        if k in NESTED:
            out[k] = with_se(v, se[k], df)
        else:
            metrics.put(out, k, v, se[k], df)
    return out


def jackknifed_metrics(tables, Ls, noise: float, gap_constant: float | None = None) -> dict:
    """:func:`claim_metrics` of the mean of ``tables`` (n_rep, n_L, n_pred: independent replicates of
    equal weight, blocks of test prompts or seeds) with delete-one jackknife standard errors."""
    tables = np.asarray(tables, dtype=float)
    value, se = metrics.jackknife(lambda t: claim_metrics(np.mean(t, axis=0), Ls, noise, gap_constant), tables)
    return with_se(value, se, metrics.replicate_df(tables))


def prediction(cfg: dict) -> dict | None:
    """S7's first-order prediction for the task of ``cfg``: {c_star, K_soft_star, K_lin, gap_constant,
    ...} (symbolic.export.s7.first_order_gap); None if this checkout has no S7."""
    try:
        from symbolic.export.s7 import first_order_gap
    except ImportError:
        return None
    task = task_of(cfg)
    return first_order_gap(task.sigma_prompt, task.sigma_query, task.noise_var, task.w_var)


def _over_reference(blocks, i: int, m: str, tol: float) -> tuple[float, float, int]:
    """Paired (value, se, df) of R_m - (1 + tol) R_m_ref at L index ``i`` over the test blocks."""
    col = {p: k for k, p in enumerate(PREDICTORS)}
    d = blocks[:, i, col[m]] - (1 + tol) * blocks[:, i, col[f"{m}_ref"]]
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)), d.size - 1


def summarize(rows: list[dict], losses: dict, loss_step, cfg: dict, init_seeds: dict | None = None,
              blocks=None, z: float = 2.0, gap_constant: float | None = None) -> dict:
    """Metrics of the criteria (see config ``c5.criteria``) with test-sampling standard errors: the
    delete-one jackknife over ``blocks`` (:func:`evaluate_with_blocks`: blocks of independent test
    prompts; one training run, so only the test set is replicated).  ``init_seeds``: the restart each
    run (``softmax_L10``, ...) was kept from.  Per-run convergence reads the loss in the schedule's
    log points and decides at ``z`` (the drop in the schedule's time, cfg ``optimizer`` and ``steps``,
    is a diagnostic)."""
    Ls = np.array([r["L"] for r in rows])
    noise = cfg["noise_var"]
    out = {"L": Ls.tolist(), "L_min": int(Ls[0]), "L_max": int(Ls[-1]), "replication": "test prompts",
           "n_blocks": int(len(blocks))}
    out.update(jackknifed_metrics(blocks, Ls, noise, gap_constant))
    if gap_constant is not None:
        out["predicted_gap_constant"], out["predicted_gap_constant_se"] = float(gap_constant), metrics.EXACT
    x = None
    if "optimizer" in cfg and "steps" in cfg:
        from .c5 import optimizer_of
        x = learning_time(optimizer_of(cfg), loss_step)
    by_L = {int(r["L"]): (i, r) for i, r in enumerate(rows)}
    runs = {}
    conv = cfg["convergence"]
    for k, v in losses.items():
        m, L = k.split("_L")
        i, r = by_L[int(L)]
        runs[k] = run_convergence(v, loss_step, conv, r[f"R_{m}"], r[f"R_{m}_ref"], z=z,
                                  over_reference=_over_reference(blocks, i, m, conv["reference_tol"]),
                                  x_learning=x)
        # the rule before issue 24 (point estimates; flat required), for the record
        old = run_convergence(v, loss_step, conv, r[f"R_{m}"], r[f"R_{m}_ref"], z=0.0)
        old["converged"] = old["flat"] == "holds" and old["within_reference"] == "holds"
        runs[k]["converged_by_old_rule"] = old["converged"]
        runs[k]["rel_drop_end_old_rule"] = old["rel_drop_end"]
        if init_seeds is not None:
            runs[k]["init_seed"] = init_seeds[k]
    out["convergence"] = convergence_summary(runs)
    col = {p: k for k, p in enumerate(PREDICTORS)}
    # a NaN (a diverged run, a NaN risk) makes the count NaN: a count that skips it (NaN < x is
    # False) would read as a clean result
    below = 0.0
    for i in range(len(Ls)):
        for m in ("softmax", "linear"):
            d = blocks[:, i, col[m]] - blocks[:, i, col["ridge"]]
            mean, se = float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))
            below += float("nan") if not (np.isfinite(mean) and np.isfinite(se)) else int(mean < -3 * se)
    out["n_below_bayes_3se"] = below if np.isnan(below) else int(below)
    out["n_below_bayes_3se_se"] = metrics.EXACT
    out["R_inf_test"] = float(np.mean([r["R_limit_opt"] for r in rows]))
    out["R_inf_exact"] = noise
    return out
