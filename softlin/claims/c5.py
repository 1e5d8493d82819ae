"""C5 — the paper's Sec. 6 experiment: trained softmax vs linear attention across prompt lengths.

``train_run`` trains one (model, L) by online SGD (:mod:`softlin.online`); ``evaluate`` scores
every trained model and the baselines (:mod:`softlin.baselines`) on one fixed held-out test set
(nested prompts: the length-L test prompt is the first L tokens of the longest, same queries, same
prompts for both models); ``summarize`` turns the per-L table and the loss logs into the metrics
the predeclared criteria read.
"""

from __future__ import annotations

import numpy as np

from .. import baselines, online
from .._jax import jax, jnp
from ..params import Params

PREDICTORS = ("softmax", "linear", "ridge", "gd", "limit_opt", "softmax_at_inf", "linear_at_inf")
PAIRS = {"gap": ("softmax", "linear"), "softmax_minus_ridge": ("softmax", "ridge"),
         "linear_minus_ridge": ("linear", "ridge")}


def task_of(cfg: dict) -> online.Task:
    """The task law of the C5 config section."""
    return online.make_task(online.kms_sigma(cfg["d"], cfg["kms_rho"]), cfg["noise_var"],
                            cfg.get("w_var"), cfg["covariance_mode"])


def train_run(cfg: dict, model: str, Ls, checkpoint=None, code_version: str = "", progress=None) -> dict:
    """Online SGD of ``model`` at each prompt length of ``Ls`` (one compiled program for the group);
    numpy arrays for the job's ``.npz``, per-run ones with a leading axis over ``Ls``."""
    Ls = [int(L) for L in Ls]
    out = online.train(model, Ls, task_of(cfg), parametrisation=cfg["parametrisation"],
                       seed=cfg["seed"], init_seed=cfg["init_seed"], steps=cfg["steps"],
                       batch=cfg["batch"], lr=cfg["lr"], momentum=cfg["momentum"],
                       log_every=cfg["log_every"], chunk=cfg["chunk"],
                       sample_dtype=cfg["sample_dtype"], rng_impl=cfg["rng_impl"],
                       checkpoint=checkpoint, code_version=code_version, progress=progress)
    return {"L": np.asarray(Ls), "U": out["uv"].U, "v": out["uv"].v, "loss": out["loss"],
            "loss_step": out["loss_step"], "steps": out["step"], "steps_per_s": out["steps_per_s"],
            **{f"raw_{i}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(out["params"]))}}


def split_runs(job: dict) -> dict:
    """A training job's arrays (:func:`train_run`, read back) -> ``{L: that run's arrays}``."""
    shared = ("loss_step", "steps", "steps_per_s")
    return {int(L): {k: (v if k in shared else v[i]) for k, v in job.items() if k != "L"}
            for i, L in enumerate(job["L"])}


def _make_eval(task: online.Task, n: int, l_max: int):
    """A compiled chunk evaluation: squared errors (n_L, n_predictors, n) on one test batch."""
    sp = jnp.asarray(task.sigma_prompt)

    @jax.jit
    def chunk(key, Ls, soft: Params, lin: Params):
        b = online.sample_batch(key, n, l_max, task, jnp.float32)
        f_opt = baselines.limit_optimum_predict(b.w, b.zq)
        y = b.yq[:, 0]

        def per_L(args):
            L, ps, pl = args
            G = online.moment(b.zT, L)
            preds = (online.predict("softmax", ps, b, L), online.predict("linear", pl, b, L),
                     baselines.ridge_predict(G, b.zq, L, task.noise_var, task.w_var),
                     baselines.gd_predict(G, b.zq, sp), f_opt,
                     baselines.limit_predict(ps, b.w, b.zq, sp, task.noise_var),
                     baselines.limit_predict(pl, b.w, b.zq, sp, task.noise_var))
            return jnp.stack([(f - y) ** 2 for f in preds])

        return jax.lax.map(per_L, (Ls, soft, lin))

    return chunk


def evaluate(cfg: dict, Ls, soft: Params, lin: Params, progress=None) -> list[dict]:
    """Test risks (mean squared error, standard error over test prompts) per L.

    ``soft`` / ``lin``: trained (U, v) stacked over ``Ls``.  Also paired differences (same test
    prompts) with their standard errors, and the closed-form one-step GD risk.
    """
    task = task_of(cfg)
    ev = cfg["eval"]
    n, n_chunks = ev["chunk"], ev["n_test"] // ev["chunk"]
    l_max = max(Ls)
    fn = _make_eval(task, n, l_max)
    key = jax.random.key(ev["seed"], impl=cfg["rng_impl"])
    Ls_j = jnp.asarray(Ls, jnp.int64)
    soft = Params(jnp.asarray(soft.U), jnp.asarray(soft.v))
    lin = Params(jnp.asarray(lin.U), jnp.asarray(lin.v))
    s1 = np.zeros((len(Ls), len(PREDICTORS)))
    s2 = np.zeros_like(s1)
    d1 = {k: np.zeros(len(Ls)) for k in PAIRS}
    d2 = {k: np.zeros(len(Ls)) for k in PAIRS}
    idx = {p: i for i, p in enumerate(PREDICTORS)}
    for j in range(n_chunks):
        e = np.asarray(fn(jax.random.fold_in(key, j), Ls_j, soft, lin))  # (n_L, n_pred, n)
        s1 += e.sum(-1)
        s2 += (e ** 2).sum(-1)
        for k, (a, b) in PAIRS.items():
            diff = e[:, idx[a]] - e[:, idx[b]]
            d1[k] += diff.sum(-1)
            d2[k] += (diff ** 2).sum(-1)
        if progress and (j + 1) % max(1, n_chunks // 4) == 0:
            progress(f"evaluated {(j + 1) * n} / {n_chunks * n} test prompts")
    N = n * n_chunks

    def mean_se(a1, a2):
        m = a1 / N
        return m, np.sqrt(np.maximum(a2 / N - m ** 2, 0.0) / (N - 1))

    rows = []
    for i, L in enumerate(Ls):
        row = {"L": int(L), "n_test": N}
        for p in PREDICTORS:
            m, se = mean_se(s1[i, idx[p]], s2[i, idx[p]])
            row[f"R_{p}"], row[f"R_{p}_se"] = float(m), float(se)
        for k in PAIRS:
            m, se = mean_se(d1[k][i], d2[k][i])
            row[k], row[f"{k}_se"] = float(m), float(se)
        row["R_gd_closed"] = baselines.gd_risk_closed(L, task.sigma_prompt, task.sigma_query,
                                                      task.noise_var, task.w_var)
        row["R_inf_exact"] = task.noise_var
        rows.append(row)
    return rows


def plateau_drop(loss, frac: float) -> float:
    """Relative decrease of the logged loss over the last ``frac`` of training, from an OLS line:
    ``-slope * window / mean`` (positive: still falling)."""
    loss = np.asarray(loss, dtype=float)
    k = max(3, int(round(frac * loss.size)))
    y = loss[-k:]
    x = np.arange(k, dtype=float)
    slope = np.polyfit(x, y, 1)[0]
    return float(-slope * k / y.mean())


def summarize(rows: list[dict], losses: dict, cfg: dict) -> dict:
    """Metrics of the predeclared criteria (see config ``c5.criteria``)."""
    Ls = np.array([r["L"] for r in rows])
    noise = cfg["noise_var"]
    third = max(1, len(Ls) // 3)
    gap = np.array([r["gap"] for r in rows])
    rel_gap = gap / np.array([r["R_linear"] for r in rows])
    out = {"L": Ls.tolist(), "L_min": int(Ls[0]), "L_max": int(Ls[-1]),
           "gap_rel_at_Lmax": float(abs(rel_gap[-1])), "gap_rel_at_Lmin": float(abs(rel_gap[0])),
           "gap_abs_low_third": float(np.mean(np.abs(gap[:third]))),
           "gap_abs_high_third": float(np.mean(np.abs(gap[-third:])))}
    out["gap_shrink_ratio"] = out["gap_abs_high_third"] / max(out["gap_abs_low_third"], 1e-300)
    for m in ("softmax", "linear"):
        exc = np.array([r[f"R_{m}"] for r in rows]) - noise
        out[m] = {"excess_rel_at_Lmax": float(exc[-1] / noise), "excess_rel_at_Lmin": float(exc[0] / noise),
                  "excess_ratio": float(exc[-1] / exc[0]) if exc[0] > 0 else float("nan"),
                  "R_at_Lmax": rows[-1][f"R_{m}"], "R_at_Lmin": rows[0][f"R_{m}"]}
    drops = {k: plateau_drop(v, cfg["plateau_frac"]) for k, v in losses.items()}
    out["convergence"] = {"plateau_rel_drop": drops, "plateau_rel_drop_max": float(max(drops.values())),
                          "worst_run": max(drops, key=drops.get)}
    below = 0
    for r in rows:
        for k in ("softmax_minus_ridge", "linear_minus_ridge"):
            below += int(r[k] < -3 * r[f"{k}_se"])
    out["n_below_bayes_3se"] = below
    out["R_inf_test"] = float(np.mean([r["R_limit_opt"] for r in rows]))
    out["R_inf_exact"] = noise
    return out
