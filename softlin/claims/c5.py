"""C5 — the paper's Sec. 6 experiment: trained softmax vs linear attention across prompt lengths.

``train_run`` trains both models at a group of prompt lengths on one batch stream
(:mod:`softlin.online`); evaluation, convergence and the criteria's metrics live in
:mod:`softlin.claims.c5_eval`, so that changing them does not retrain.
"""

from __future__ import annotations

import numpy as np

from .. import online
from .._jax import jax


def task_of(cfg: dict) -> online.TaskLaw:
    """The task law of the C5 config section."""
    return online.make_task(online.kms_sigma(cfg["d"], cfg["kms_rho"]), cfg["noise_var"],
                            cfg.get("w_var"), cfg["covariance_mode"])


def optimizer_of(cfg: dict) -> online.Optimizer:
    """The optimiser of the C5 config section (``optimizer``: name, lr, momentum, schedule, ...)."""
    o = cfg["optimizer"]
    return online.Optimizer(o["name"], float(o["lr"]), float(o.get("momentum", 0.0)),
                            float(o.get("beta1", 0.9)), float(o.get("beta2", 0.999)),
                            float(o.get("eps", 1e-8)), o.get("schedule", "constant"), int(cfg["steps"]))


def train_run(cfg: dict, Ls, checkpoint=None, code_version: str = "", progress=None) -> dict:
    """Online training of every model at each prompt length of ``Ls`` (one compiled program, one
    batch stream); flat numpy arrays for the job's ``.npz`` (per model ``{model}_U``, ``_v``,
    ``_loss``, ``_raw{i}``, leading axis over ``Ls``)."""
    out = online.train(task_of(cfg), Ls, cfg["models"], parametrisation=cfg["parametrisation"],
                       seed=cfg["seed"], init_seed=cfg["init_seed"], steps=cfg["steps"],
                       batch=cfg["batch"], optimizer=optimizer_of(cfg), streams=cfg["streams"],
                       log_every=cfg["log_every"], chunk=cfg["chunk"],
                       sample_dtype=cfg["sample_dtype"], checkpoint=checkpoint,
                       code_version=code_version, progress=progress)
    arrays = {"L": out["L"], "loss_step": out["loss_step"], "steps": out["step"],
              "steps_per_s": out["steps_per_s"]}
    for m in cfg["models"]:
        r = out[m]
        arrays.update({f"{m}_U": r["uv"].U, f"{m}_v": r["uv"].v, f"{m}_loss": r["loss"],
                       **{f"{m}_raw{i}": np.asarray(x)
                          for i, x in enumerate(jax.tree.leaves(r["params"]))}})
    return arrays


def split_runs(job: dict, models) -> dict:
    """A training job's arrays (:func:`train_run`, read back) -> ``{(model, L): that run's arrays}``."""
    out = {}
    for m in models:
        for i, L in enumerate(job["L"]):
            out[m, int(L)] = {"U": job[f"{m}_U"][i], "v": job[f"{m}_v"][i],
                              "loss": job[f"{m}_loss"][i], "loss_step": job["loss_step"],
                              "steps_per_s": float(job["steps_per_s"])}
    return out
