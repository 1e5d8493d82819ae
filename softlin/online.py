"""C5 online training (paper Sec. 6): every run of the experiment in one compiled loop, resumable.

The task law is :mod:`softlin.online_task`, the head's parametrisations :mod:`softlin.qkvo`, the
optimisers :mod:`softlin.optim`, checkpoints and interruption :mod:`softlin.checkpoint`.

Both parametrisations (``qkvo``, ``uv``) are evaluated through the shared moments of each step.

Batches (:mod:`softlin.stream`): with ``streams: shared`` every run, both models and every prompt
length, trains on the same batch of each step (run ``L`` on its first ``L`` tokens): each run is
still the paper's online SGD, and the runs share their random numbers.  ``streams: per_L`` gives
each prompt length its own stream (both models still share it).  On the CPU one C++ pass per prompt
draws the tokens and computes what every run's gradient needs (softmax moments, the linear runs'
prompt second moments at all their lengths).  ``chunk`` steps run per compiled call; between chunks
the state is checkpointed atomically and a restarted job resumes from it, bit for bit.
"""

from __future__ import annotations

import math
import os
import time
from functools import partial
from typing import NamedTuple

import numpy as np

from . import stream
from ._jax import jax, jnp
from .checkpoint import Stop, fingerprint, load_checkpoint, save_checkpoint
from .models import linear_output, prompt_moment, softmax_from_moments
from .online_task import TaskLaw
from .optim import OPTIMIZERS, SCHEDULES, Optimizer, opt_init, opt_update
from .params import Params
from .qkvo import as_uv, init_params

TRAINED_MODELS = ("softmax", "linear")  # the attention models C5 trains (softlin.models.MODELS adds "limit")
STREAMS = ("shared", "per_L")


# --------------------------------------------------------------------------- losses from a step's moments
def softmax_mse(p, m1, m2, zq, yq):
    """Mean squared error ``mean_n (f_n - y_q,n)^2`` of softmax attention (the authors' loss)."""
    uv = as_uv(p)
    return jnp.mean((softmax_from_moments(uv.U, uv.v, m1, m2, zq) - yq) ** 2)


def linear_mse(p, G, zq, yq):
    """Mean squared error of linear attention on the prompts' second moments ``G``."""
    return jnp.mean((linear_output(as_uv(p), G, zq) - yq) ** 2)


# --------------------------------------------------------------------------- the compiled loop
class Setup(NamedTuple):
    """Static settings of one training program (hashable: a jit static argument).  ``soft`` and
    ``lin`` are the prompt lengths of the softmax and linear runs (ascending within each restart,
    restarts one after the other)."""

    soft: tuple
    lin: tuple
    batch: int
    log_every: int
    f64: bool
    streams: str
    seed: int
    opt: Optimizer
    unroll: int = 1  # steps per loop iteration (an execution detail, not in the fingerprint)


class State(NamedTuple):
    params: dict  # {"softmax": stacked params (R_s, ...), "linear": (R_l, ...)}
    opt: dict
    step: jax.Array


def _calls(setup: Setup):
    """The kernel calls of one step: (stream id, softmax run indices, linear run indices)."""
    if setup.streams == "shared":
        return [(0, list(range(len(setup.soft))), list(range(len(setup.lin))))]
    Ls = sorted(set(setup.soft) | set(setup.lin))
    return [(L, [i for i, a in enumerate(setup.soft) if a == L],
             [i for i, a in enumerate(setup.lin) if a == L]) for L in Ls]


def _take(tree, idx):
    return jax.tree.map(lambda x: x[np.asarray(idx, np.int64)], tree)


def _concat(parts, order):
    """Concatenate per-call results and put them back in run order."""
    inv = np.argsort(np.concatenate(order)) if order else np.zeros(0, np.int64)
    return jax.tree.map(lambda *x: jnp.concatenate(x)[inv], *parts)


def losses_and_grads(params: dict, step, law: stream.Law, setup: Setup):
    """Every run's batch loss and gradient at ``step``: ({model: (R,)}, {model: grads})."""
    soft_v, soft_g, lin_v, lin_g, so, lo = [], [], [], [], [], []
    vg_soft = jax.vmap(jax.value_and_grad(softmax_mse), in_axes=(0, 0, 0, None, None))
    vg_lin = jax.vmap(jax.value_and_grad(linear_mse), in_axes=(0, 0, None, None))
    for sid, si, li in _calls(setup):
        ps = _take(params["softmax"], si) if si else None
        uv = jax.vmap(as_uv)(ps) if si else Params(jnp.zeros((0, law.d + 1, law.d + 1)),
                                                   jnp.zeros((0, law.d + 1)))
        lin_L = sorted({setup.lin[i] for i in li})  # restarts share a length's prompt moments
        data = stream.step_data(law, stream.stream_key(setup.seed, sid), step, setup.batch,
                                uv.U, uv.v, [setup.soft[i] for i in si], lin_L, setup.f64)
        if si:
            v, g = vg_soft(ps, data.m1, data.m2, data.zq, data.yq)
            soft_v.append(v), soft_g.append(g), so.append(si)
        if li:
            pos = [lin_L.index(setup.lin[i]) for i in li]
            G = data.G if pos == list(range(len(lin_L))) else data.G[np.asarray(pos)]
            v, g = vg_lin(_take(params["linear"], li), G, data.zq, data.yq)
            lin_v.append(v), lin_g.append(g), lo.append(li)
    out_v, out_g = {}, {}
    if so:
        out_v["softmax"], out_g["softmax"] = _concat(soft_v, so), _concat(soft_g, so)
    if lo:
        out_v["linear"], out_g["linear"] = _concat(lin_v, lo), _concat(lin_g, lo)
    return out_v, out_g


@partial(jax.jit, static_argnames=("setup", "n_logs"))
def run_chunk(state: State, law: stream.Law, setup: Setup, n_logs: int):
    """``n_logs * log_every`` SGD steps of every run; returns the new state and the mean batch loss
    of every ``log_every`` steps per run, ``{model: (R, n_logs)}``."""
    upd = jax.vmap(lambda p, g, s, t: opt_update(setup.opt, p, g, s, t), in_axes=(0, 0, 0, None))

    def one_step(_, carry):
        st, acc = carry
        loss, grads = losses_and_grads(st.params, st.step, law, setup)
        params, opt = {}, {}
        for m in st.params:
            params[m], opt[m] = upd(st.params[m], grads[m], st.opt[m], st.step)
        return State(params, opt, st.step + 1), {m: acc[m] + loss[m] for m in acc}

    def log_block(st, _):
        zero = {m: jnp.zeros(len(setup.soft if m == "softmax" else setup.lin)) for m in st.params}
        st, acc = jax.lax.fori_loop(0, setup.log_every, one_step, (st, zero), unroll=setup.unroll)
        return st, {m: a / setup.log_every for m, a in acc.items()}

    st, losses = jax.lax.scan(log_block, state, None, length=n_logs)
    return st, {m: x.T for m, x in losses.items()}


def stack_runs(trees):
    """Pytrees of equal structure -> one pytree whose leaves gain a leading run axis (len(trees), ...)."""
    return jax.tree.map(lambda *x: jnp.stack(x), *trees)


# --------------------------------------------------------------------------- driver
def _eta(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def train(task: TaskLaw, Ls, models=TRAINED_MODELS, *, parametrisation: str = "qkvo", seed: int = 0,
          init_seed: int = 0, restarts: int = 1, steps: int, batch: int = 128, optimizer: Optimizer,
          streams: str = "shared", log_every: int, chunk: int,
          sample_dtype: str = "float32", checkpoint=None, code_version: str = "", progress=None,
          stop_after_chunks: int | None = None) -> dict:
    """Online training of each model in ``models`` at each prompt length in ``Ls`` (one program),
    from each initialisation ``init_seed + r``, ``r < restarts`` (random restarts: more runs on the
    same batches, which are drawn once per step for all of them).

    Returns ``{model: {"params", "uv", "loss"}}`` (leading axis over (restart, L), restart-major:
    run ``r len(Ls) + j`` is restart ``r`` at ``Ls[j]``; ``loss`` (restarts len(Ls),
    steps / log_every), the mean batch loss of each logged window) and ``loss_step`` (the last step
    of each window), ``step``, ``steps_per_s`` (joint steps of all runs per second, compilation
    excluded).  A checkpoint is resumed only if it was written with the same settings and
    ``code_version`` (the workflow passes a digest of the package files the job runs).
    ``stop_after_chunks`` (tests) simulates an interruption after that many chunks.
    """
    models = tuple(models)
    if not models or any(m not in TRAINED_MODELS for m in models):
        raise ValueError(f"models must be a non-empty subset of {TRAINED_MODELS}, got {models!r}")
    if streams not in STREAMS:
        raise ValueError(f"streams must be one of {STREAMS}, got {streams!r}")
    if sample_dtype not in ("float32", "float64"):
        raise ValueError(f"sample_dtype must be float32 or float64, got {sample_dtype!r}")
    Ls = tuple(sorted({int(L) for L in Ls}))
    if steps % chunk or chunk % log_every:
        raise ValueError(f"need log_every | chunk | steps, got {log_every}, {chunk}, {steps}")
    opt = optimizer._replace(steps=int(steps))
    if opt.name not in OPTIMIZERS or opt.schedule not in SCHEDULES:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, schedule one of {SCHEDULES}")
    # on an accelerator the loop's per-iteration overhead dominates: unroll (CPU: no gain, longer compiles)
    unroll = 1 if jax.default_backend() == "cpu" else math.gcd(int(log_every), 10)
    unroll = int(os.environ.get("SOFTLIN_UNROLL", unroll))  # 1: quicker compile for short runs
    if restarts < 1:
        raise ValueError(f"restarts must be >= 1, got {restarts}")
    runs = Ls * int(restarts)
    setup = Setup(runs if "softmax" in models else (), runs if "linear" in models else (), int(batch),
                  int(log_every), sample_dtype == "float64", streams, int(seed), opt, unroll)
    p0 = [init_params(parametrisation, init_seed + r, task.d) for r in range(int(restarts))]
    params = {m: stack_runs([p for p in p0 for _ in Ls]) for m in models}
    state = State(params, {m: opt_init(params[m]) for m in models}, jnp.asarray(0, jnp.int64))
    law = task.law()
    fp = fingerprint(task=[task.d, task.root_prompt.tolist(), task.root_query.tolist(),
                           task.noise_var, task.w_var], parametrisation=parametrisation,
                     init_seed=init_seed, restarts=int(restarts),
                     setup=setup._replace(opt=opt._asdict(), unroll=None), chunk=chunk, code_version=code_version)
    losses = {m: np.zeros((len(runs), 0)) for m in models}
    if checkpoint is not None:
        got = load_checkpoint(checkpoint, state, fp, report=progress)
        if got is not None and int(got[0].step) <= steps:
            state, losses = got
            if progress:
                progress(f"resumed from {checkpoint} at step {int(state.step)}")
    n_logs = chunk // log_every
    with Stop() as stop:
        state, losses, t_run, n_run = _loop(state, losses, law, setup, n_logs, steps, chunk, Ls, models,
                                            checkpoint, fp, progress, stop_after_chunks, stop)
    out = {"loss_step": np.arange(1, losses[models[0]].shape[1] + 1) * log_every,
           "step": int(state.step), "steps_per_s": (n_run / t_run) if n_run else float("nan"),
           "L": np.asarray(Ls)}
    for m in models:
        uv = jax.vmap(as_uv)(state.params[m])
        out[m] = {"params": jax.tree.map(np.asarray, state.params[m]),
                  "uv": Params(np.asarray(uv.U), np.asarray(uv.v)), "loss": losses[m]}
    return out


def _loop(state, losses, law, setup, n_logs, steps, chunk, Ls, models, checkpoint, fp, progress,
          stop_after_chunks, stop: Stop):
    """The chunks of :func:`train`, checkpointed after each; stops at once on SIGINT / SIGTERM."""
    done_chunks, t_run, n_run = 0, 0.0, 0
    while int(state.step) < steps:
        if stop.signum is not None:
            stop.stop(checkpoint, progress)
        t0 = time.perf_counter()
        state, lg = run_chunk(state, law, setup, n_logs)
        if stop.wait((state, lg)):  # the chunk's work is lost; the last checkpoint stays
            stop.stop(checkpoint, progress)
        lg = {m: np.asarray(x) for m, x in lg.items()}  # waits for the chunk: progress is work done
        dt = time.perf_counter() - t0
        if done_chunks > 0:  # the first call of this process includes compilation
            t_run += dt
            n_run += chunk
        losses = {m: np.concatenate([losses[m], lg[m]], axis=1) for m in models}
        done_chunks += 1
        if checkpoint is not None:
            save_checkpoint(checkpoint, state, losses, fp)
        if progress:
            step = int(state.step)
            rate = n_run / t_run if n_run else chunk / dt
            ends = np.concatenate([lg[m][:, -1] for m in models])  # every run's last logged loss
            progress(f"step {step}/{steps} ({rate:.1f} steps/s, ETA {_eta((steps - step) / rate)}): "
                     f"loss best {np.nanmin(ends):.4g}, worst {np.nanmax(ends):.4g} over {ends.size} runs")
            detail = getattr(progress, "detail", None)
            if detail is not None:  # every loss of every restart at every length: the log file only
                detail(f"step {step}: loss " + "; ".join(f"{m} " + " ".join(
                    f"L{L}:" + "/".join(f"{x:.4g}" for x in lg[m][j::len(Ls), -1]) for j, L in enumerate(Ls))
                    for m in models))
        if stop_after_chunks is not None and done_chunks >= stop_after_chunks:
            break
    return state, losses, t_run, n_run


# --------------------------------------------------------------------------- evaluation helpers
def predict_on_batch(model: str, uv: Params, b: stream.Batch, L):
    """Predictions (n,) of trained (U, v) on the first ``L`` tokens of a batch (test sets)."""
    from .kernels.softmax_moments import softmax_moments

    if model == "softmax":
        m1, _ = softmax_moments(uv.U, uv.v, b.zT, b.zq[:, None, :], jnp.asarray(L, jnp.int64))
        return m1[:, 0] @ uv.v
    return linear_output(uv, prompt_moment(b.zT, L), b.zq)
