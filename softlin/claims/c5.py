"""C5 — the paper's Sec. 6 experiment: trained softmax vs linear attention across prompt lengths.

``train_run`` trains both models at a group of prompt lengths on one batch stream
(:mod:`softlin.online`); evaluation (:mod:`softlin.claims.c5_eval`), convergence
(:mod:`~softlin.claims.c5_convergence`) and the criteria's metrics (:mod:`~softlin.claims.c5_summary`)
live apart, so that changing them does not retrain.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import online, online_task, optim, qkvo
from .._jax import jax
from ..records import Spec

OPTIMIZER_KEYS = ("name", "lr", "momentum", "beta1", "beta2", "eps", "schedule", "warmup")  # c5.optimizer


def task_of(cfg: dict) -> online_task.TaskLaw:
    """The task law of the C5 config section."""
    return online_task.make_task(online_task.kms_sigma(cfg["d"], cfg["kms_rho"]), cfg["noise_var"],
                            cfg.get("w_var"), cfg["covariance_mode"])


def optimizer_of(cfg: dict) -> optim.Optimizer:
    """The optimiser of the validated C5 config section (``optimizer``: every key of the schema's
    ``c5.optimizer``, whose defaults the validation fills in; ``steps``): a missing key is an error."""
    o = cfg["optimizer"]
    missing = [k for k in OPTIMIZER_KEYS if k not in o]
    if missing:
        raise KeyError(f"config key 'c5.optimizer' lacks {missing}: read the config through its schema "
                       "(workflow/schemas/config.schema.yaml holds the defaults)")
    return optim.Optimizer(o["name"], float(o["lr"]), float(o["momentum"]), float(o["beta1"]),
                           float(o["beta2"]), float(o["eps"]), o["schedule"], int(cfg["steps"]), int(o["warmup"]))


class Run(NamedTuple):
    """One model's runs at every prompt length of a job (leading axis over the lengths): the trained
    ``U``, ``v``, the logged ``loss`` (n_L, n_logs), the ``init_seed`` of its restart, the ``raw``
    parameters as trained (QKVO or Params); after :func:`best_of_restarts` also ``end_loss``
    (restarts, n_L) and the ``restart`` kept (n_L,) (None before)."""

    U: np.ndarray
    v: np.ndarray
    loss: np.ndarray
    init_seed: np.ndarray
    raw: object
    end_loss: np.ndarray | None = None
    restart: np.ndarray | None = None


class Job(NamedTuple):
    """A training job's record: its prompt lengths ``L``, the logging steps ``loss_step``, the
    ``steps`` done and ``runs`` ``{model: Run}`` (no wall-clock speed: a record is the same bits on
    every run; the speed goes to the job's log)."""

    L: np.ndarray
    loss_step: np.ndarray
    steps: np.ndarray
    runs: dict


def job_like(cfg: dict, Ls) -> Job:
    """The template of :func:`train_run`'s record (:mod:`softlin.records`) from the C5 config
    section (``d``, ``parametrisation``, ``models``, ``restarts``, ``steps``, ``log_every``)."""
    n, n_logs, D = len({int(L) for L in Ls}), int(cfg["steps"]) // int(cfg["log_every"]), int(cfg["d"]) + 1
    raw = jax.tree.map(lambda x: Spec((n,) + np.shape(x), np.float64), qkvo.init_params(cfg["parametrisation"], 0, cfg["d"]))
    run = Run(Spec((n, D, D), np.float64), Spec((n, D), np.float64), Spec((n, n_logs), np.float64),
              Spec((n,), np.int64), raw, Spec((int(cfg["restarts"]), n), np.float64), Spec((n,), np.int64))
    return Job(Spec((n,), np.int64), Spec((n_logs,), np.int64), Spec((), np.int64), {m: run for m in cfg["models"]})


def train_run(cfg: dict, Ls, checkpoint=None, code_version: str = "", progress=None) -> Job:
    """Online training of every model at each prompt length of ``Ls`` from each initialisation
    ``init_seed + i``, ``i < restarts`` (one compiled program, one batch stream, one checkpoint),
    keeping per (model, L) the restart of lowest end loss (:func:`best_of_restarts`): the job's
    :class:`Job` (numpy leaves, per model a :class:`Run` over the sorted lengths)."""
    R = int(cfg["restarts"])
    out = online.train(task_of(cfg), Ls, cfg["models"], parametrisation=cfg["parametrisation"],
                       seed=cfg["seed"], init_seed=int(cfg["init_seed"]), restarts=R, steps=cfg["steps"],
                       batch=cfg["batch"], optimizer=optimizer_of(cfg), streams=cfg["streams"],
                       log_every=cfg["log_every"], chunk=cfg["chunk"], sample_dtype=cfg["sample_dtype"],
                       checkpoint=checkpoint, code_version=code_version, progress=progress)
    if progress:
        progress(f"{out['steps_per_s']:.1f} joint steps/s after compilation")
    n = len(out["L"])
    jobs = []
    for i in range(R):
        rows = slice(i * n, (i + 1) * n)
        runs = {m: Run(out[m]["uv"].U[rows], out[m]["uv"].v[rows], out[m]["loss"][rows],
                       np.full(n, int(cfg["init_seed"]) + i), jax.tree.map(lambda x: np.asarray(x)[rows], out[m]["params"]))
                for m in cfg["models"]}
        jobs.append(Job(out["L"], out["loss_step"], np.asarray(out["step"]), runs))
    return best_of_restarts(jobs, cfg["models"], float(cfg["restart_select_frac"]))


def split_runs(job: Job, models) -> dict:
    """A training job (:func:`train_run`, or read back) -> ``{(model, L): that run's arrays}``
    (``init_seed``: the restart kept)."""
    out = {}
    for m in models:
        r = job.runs[m]
        for i, L in enumerate(job.L):
            out[m, int(L)] = {"U": r.U[i], "v": r.v[i], "loss": r.loss[i], "loss_step": job.loss_step,
                              "init_seed": int(r.init_seed[i])}
    return out


def end_loss(loss, frac: float):
    """Mean logged training loss over the last ``frac`` of the windows (at least one); (..., n_logs) -> (...)."""
    loss = np.asarray(loss)
    k = max(1, int(round(frac * loss.shape[-1])))
    return loss[..., -k:].mean(axis=-1)


def best_of_restarts(jobs: list, models, frac: float) -> Job:
    """Random restarts selected on training data only: for each (model, L), the run of the job
    (one per initialisation, same stream and lengths) whose :func:`end_loss` is lowest; each
    :class:`Run` gains ``restart`` (len(L),), the chosen job's index, and ``end_loss`` (n_jobs, len(L))."""
    first = jobs[0]
    for j in jobs[1:]:
        if not (np.array_equal(j.L, first.L) and np.array_equal(j.loss_step, first.loss_step)):
            raise ValueError("restarts must share their prompt lengths and logging steps")
    runs = {}
    for m in models:
        ends = np.stack([end_loss(j.runs[m].loss, frac) for j in jobs])
        pick = np.argmin(ends, axis=0)
        each = [j.runs[m]._replace(end_loss=None, restart=None) for j in jobs]
        chosen = jax.tree.map(lambda *x: np.stack([np.asarray(a) for a in x])[pick, np.arange(len(pick))], *each)
        runs[m] = chosen._replace(end_loss=ends, restart=pick)
    return first._replace(runs=runs)
