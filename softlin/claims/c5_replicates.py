"""C5 over independent replicates (training stream, initialisation, test set): per-L risks and gaps
as mean +/- standard error across seeds, and the criteria's metrics with the jackknife over seeds.

Each replicate is a whole C5 run (:mod:`softlin.claims.c5_eval` on its own trained models and test
set); here only its per-L table (``c5_risks.csv``) and its metrics (convergence) are read.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import metrics
from .c5_eval import PREDICTORS
from .c5_summary import jackknifed_metrics

PER_L = ("R_softmax", "R_linear", "R_limit_opt", "R_softmax_ref", "R_linear_ref", "R_ridge", "gap", "gap_rel",
         "gap_L", "softmax_excess_L", "linear_excess_L")


def risk_tables(tables: list[pd.DataFrame]) -> np.ndarray:
    """(n_rep, n_L, len(PREDICTORS)) mean test risks of every replicate (the same L in each)."""
    L0 = tables[0]["L"].to_numpy()
    for t in tables[1:]:
        if not np.array_equal(t["L"].to_numpy(), L0):
            raise ValueError("replicates must share their prompt lengths")
    return np.stack([np.stack([t[f"R_{p}"].to_numpy(float) for p in PREDICTORS], axis=-1) for t in tables])


def per_L(tables: list[pd.DataFrame], names: list[str]) -> pd.DataFrame:
    """Per L: every quantity of :data:`PER_L` per replicate (``q@name``) and its mean and standard error
    across replicates (``q``, ``q_se``: :func:`softlin.metrics.seed_mean`)."""
    L = tables[0]["L"].to_numpy()
    out = {"L": L}
    for q in PER_L:
        vals = []
        for t in tables:
            if q == "gap_rel":
                v = t["gap"].to_numpy(float) / t["R_linear"].to_numpy(float)
            elif q == "gap_L":
                v = t["gap"].to_numpy(float) * L
            elif q.endswith("_excess_L"):
                m = q.split("_")[0]
                v = (t[f"R_{m}"].to_numpy(float) - t["R_limit_opt"].to_numpy(float)) * L
            else:
                v = t[q].to_numpy(float)
            vals.append(v)
        vals = np.stack(vals)
        for n, v in zip(names, vals):
            out[f"{q}@{n}"] = v
        out[q], out[f"{q}_se"] = metrics.seed_mean(vals)
    out["n_replicates"] = np.full(L.size, len(tables))
    return pd.DataFrame(out)


def aggregate(tables: list[pd.DataFrame], seed_metrics: list[dict], names: list[str], noise: float,
              gap_constant: float | None = None) -> dict:
    """The criteria's metrics across replicates: :func:`softlin.claims.c5_summary.claim_metrics` of the
    mean risk table with the delete-one jackknife over replicates; convergence and C5d counts summed
    over replicates (exact); each replicate's own headline numbers under ``per_replicate``."""
    R = risk_tables(tables)
    Ls = tables[0]["L"].to_numpy()
    out = {"L": Ls.tolist(), "L_min": int(Ls[0]), "L_max": int(Ls[-1]), "replication": "seeds",
           "n_replicates": len(tables), "replicates": list(names)}
    out.update(jackknifed_metrics(R, Ls, noise, gap_constant))
    if gap_constant is not None:
        out["predicted_gap_constant"], out["predicted_gap_constant_se"] = float(gap_constant), metrics.EXACT
    conv = {"n_runs": 0, "n_failed": 0, "n_undecided": 0, "n_unconverged": 0, "unconverged": [], "undecided": []}
    for n, m in zip(names, seed_metrics):
        c = m["convergence"]
        for k in ("n_runs", "n_failed", "n_undecided", "n_unconverged"):
            conv[k] += int(c[k])
        conv["unconverged"] += [f"{n}:{r}" for r in c["unconverged"]]
        conv["undecided"] += [f"{n}:{r}" for r in c["undecided"]]
    for k in ("n_runs", "n_failed", "n_undecided", "n_unconverged"):
        conv[f"{k}_se"] = metrics.EXACT
    out["convergence"] = conv
    out["n_below_bayes_3se"] = int(sum(m["n_below_bayes_3se"] for m in seed_metrics))
    out["n_below_bayes_3se_se"] = metrics.EXACT
    keys = ("gap_rel_at_Lmax", "gap_shrink_ratio", "gap_slope_top_third", "gap_L_at_Lmax",
            "gap_L_over_predicted_at_Lmax", "excess_ratio_softmax_over_linear_at_Lmax")
    out["per_replicate"] = {
        n: {**{k: m.get(k) for k in keys}, **{f"{k}_se": m.get(f"{k}_se") for k in keys},
            "softmax_excess_rel_at_Lmax": m["softmax"]["excess_rel_at_Lmax"],
            "linear_excess_rel_at_Lmax": m["linear"]["excess_rel_at_Lmax"],
            "n_unconverged": m["convergence"]["n_unconverged"], "train_seed": m.get("train_seed"),
            "init_seed": m.get("init_seed"), "eval_seed": m.get("eval_seed")}
        for n, m in zip(names, seed_metrics)}
    out["R_inf_exact"] = noise
    return out
