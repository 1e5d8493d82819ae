"""C5 — the paper's Sec. 6 experiment: trained softmax vs linear attention across prompt lengths.

``train_run`` trains both models at a group of prompt lengths on one batch stream
(:mod:`softlin.online`); evaluation, convergence and the criteria's metrics live in
:mod:`softlin.claims.c5_eval`, so that changing them does not retrain.
"""

from __future__ import annotations

import numpy as np

from .. import online, online_task, optim
from .._jax import jax


def task_of(cfg: dict) -> online_task.TaskLaw:
    """The task law of the C5 config section."""
    return online_task.make_task(online_task.kms_sigma(cfg["d"], cfg["kms_rho"]), cfg["noise_var"],
                            cfg.get("w_var"), cfg["covariance_mode"])


def optimizer_of(cfg: dict) -> optim.Optimizer:
    """The optimiser of the C5 config section (``optimizer``: name, lr, momentum, schedule, ...)."""
    o = cfg["optimizer"]
    return optim.Optimizer(o["name"], float(o["lr"]), float(o.get("momentum", 0.0)),
                            float(o.get("beta1", 0.9)), float(o.get("beta2", 0.999)),
                            float(o.get("eps", 1e-8)), o.get("schedule", "constant"), int(cfg["steps"]),
                            int(o.get("warmup", 0)))


def train_run(cfg: dict, Ls, checkpoint=None, code_version: str = "", progress=None) -> dict:
    """Online training of every model at each prompt length of ``Ls`` from each initialisation
    ``init_seed + i``, ``i < restarts`` (one compiled program, one batch stream, one checkpoint),
    keeping per (model, L) the restart of lowest end loss (:func:`best_of_restarts`); flat numpy
    arrays for the job's ``.npz`` (per model ``{model}_U``, ``_v``, ``_loss``, ``_raw{i}``,
    ``_init_seed``, leading axis over ``Ls``; ``_end_loss`` (restarts, len(Ls)))."""
    R = int(cfg["restarts"])
    out = online.train(task_of(cfg), Ls, cfg["models"], parametrisation=cfg["parametrisation"],
                       seed=cfg["seed"], init_seed=int(cfg["init_seed"]), restarts=R, steps=cfg["steps"],
                       batch=cfg["batch"], optimizer=optimizer_of(cfg), streams=cfg["streams"],
                       log_every=cfg["log_every"], chunk=cfg["chunk"], sample_dtype=cfg["sample_dtype"],
                       checkpoint=checkpoint, code_version=code_version, progress=progress)
    n = len(out["L"])
    jobs = []
    for i in range(R):
        rows = slice(i * n, (i + 1) * n)
        arrays = {"L": out["L"], "loss_step": out["loss_step"], "steps": out["step"],
                  "steps_per_s": out["steps_per_s"]}
        for m in cfg["models"]:
            r = out[m]
            arrays.update({f"{m}_U": r["uv"].U[rows], f"{m}_v": r["uv"].v[rows], f"{m}_loss": r["loss"][rows],
                           f"{m}_init_seed": np.full(n, int(cfg["init_seed"]) + i),
                           **{f"{m}_raw{k}": np.asarray(x)[rows]
                              for k, x in enumerate(jax.tree.leaves(r["params"]))}})
        jobs.append(arrays)
    return best_of_restarts(jobs, cfg["models"], float(cfg["restart_select_frac"]))


def split_runs(job: dict, models) -> dict:
    """A training job's arrays (:func:`train_run`, read back) -> ``{(model, L): that run's arrays}``
    (``init_seed``: the restart kept; None in jobs written before restarts existed)."""
    out = {}
    for m in models:
        for i, L in enumerate(job["L"]):
            out[m, int(L)] = {"U": job[f"{m}_U"][i], "v": job[f"{m}_v"][i],
                              "loss": job[f"{m}_loss"][i], "loss_step": job["loss_step"],
                              "init_seed": int(job[f"{m}_init_seed"][i]) if f"{m}_init_seed" in job else None,
                              "steps_per_s": float(job["steps_per_s"])}
    return out


def end_loss(loss, frac: float):
    """Mean logged training loss over the last ``frac`` of the windows (at least one); (..., n_logs) -> (...)."""
    loss = np.asarray(loss)
    k = max(1, int(round(frac * loss.shape[-1])))
    return loss[..., -k:].mean(axis=-1)


def best_of_restarts(jobs: list, models, frac: float) -> dict:
    """Random restarts selected on training data only: for each (model, L), the arrays of the job
    (one per initialisation, same stream and lengths) whose :func:`end_loss` is lowest.  Adds
    ``{model}_restart`` (len(L),), the chosen job's index, and ``{model}_end_loss`` (n_jobs, len(L))."""
    first = jobs[0]
    for j in jobs[1:]:
        if not (np.array_equal(j["L"], first["L"]) and np.array_equal(j["loss_step"], first["loss_step"])):
            raise ValueError("restarts must share their prompt lengths and logging steps")
    out = {k: first[k] for k in ("L", "loss_step", "steps")}
    out["steps_per_s"] = float(np.mean([float(j["steps_per_s"]) for j in jobs]))
    for m in models:
        ends = np.stack([end_loss(j[f"{m}_loss"], frac) for j in jobs])
        pick = np.argmin(ends, axis=0)
        for k in first:
            if k.startswith(f"{m}_"):
                stack = np.stack([np.asarray(j[k]) for j in jobs])
                out[k] = stack[pick, np.arange(len(pick))]
        out[f"{m}_restart"], out[f"{m}_end_loss"] = pick, ends
    return out
