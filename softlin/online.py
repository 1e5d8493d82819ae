"""C5 online training (paper Sec. 6): fresh batches drawn inside one compiled loop, resumable.

Task (the authors' public code): covariates ``x ~ N(0, Sigma)`` in dimension ``d``, task
``w ~ N(0, I/d)``, labels ``y = w^T x + eps``, ``eps ~ N(0, noise_var)`` (query target included),
prompt tokens ``z_l = (x_l, y_l)`` of size ``D = d + 1``, one query ``z_q = (x_q, 0)``.

Two parametrisations of one attention head, both evaluated by softlin's shared kernels:

* ``qkvo`` (the authors'): ``W_Q, W_K, W_V, W_O`` (D x D each, PyTorch ``nn.Linear`` layout
  ``y = W x``, no biases), scores ``(W_K z_l)^T (W_Q z_q) / sqrt(D)``, prediction the last
  coordinate of ``W_O sum_l p_l W_V z_l`` (softmax) or of ``W_O (1/L) sum_l s_l W_V z_l`` (linear:
  no softmax, scores divided by L).  It *is* the (U, v) model with

      U = W_K^T W_Q / sqrt(D),    v = (W_O W_V)^T e_D,

  since ``s_l = z_l^T W_K^T W_Q z_q / sqrt(D) = z_l^T U z_q`` and
  ``e_D^T W_O W_V m = v^T m`` for the attention output ``m``; so :func:`to_uv` maps and the shared
  kernels (``models.softmax_risk`` / ``fused.softmax_moments``, ``models.linear_predict`` with
  ``Ghat_L``) do the rest; gradients reach the four matrices through the map by autodiff.
* ``uv``: the (U, v) parameters of Sec. 5 trained directly (initialised at the image of the same
  QKVO initialisation, so both start from the same function).

Covariance modes: ``correct`` (prompt and query covariates ``Sigma^{1/2} g``) and
``as_in_authors_code`` (the public code's behaviour: the transform applied twice to the prompt,
``Sigma^{1/2} Sigma^{1/2} g = Sigma g``, and never to the query, ``x_q = g``).

Batches: step ``k`` uses ``jax.random.fold_in(key, k)``; one ``normal`` call of shape
(n, D, L + 2) per step gives covariates, noise and ``w`` (so any step's batch is reproducible
directly).  The loop runs ``chunk`` steps per compiled call, logging the mean batch loss of every
``log_every`` steps; between chunks the state (params, optimizer state, step, loss log) is
checkpointed atomically, and a restarted job resumes from it, bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import time
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ._jax import jax, jnp
from . import models
from .fused import softmax_moments
from .io import save_npz
from .params import Params
from .tasks import check_sigma, sqrtm_sym

MODELS = ("softmax", "linear")
PARAMETRISATIONS = ("qkvo", "uv")
COVARIANCE_MODES = ("correct", "as_in_authors_code")
RNG_IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")


# --------------------------------------------------------------------------- task
class Task(NamedTuple):
    """Resolved task law: covariance roots of prompt and query covariates, noise and prior scales."""

    d: int
    root_prompt: np.ndarray  # x_prompt = root_prompt @ g
    root_query: np.ndarray   # x_query = root_query @ g
    noise_var: float
    w_var: float

    @property
    def sigma_prompt(self) -> np.ndarray:
        return self.root_prompt @ self.root_prompt.T

    @property
    def sigma_query(self) -> np.ndarray:
        return self.root_query @ self.root_query.T


def kms_sigma(d: int, rho: float) -> np.ndarray:
    """Kac-Murdock-Szego covariance ``Sigma_ij = rho^|i-j|``."""
    i = np.arange(d)
    return float(rho) ** np.abs(i[:, None] - i[None, :])


def make_task(sigma, noise_var: float, w_var: float | None = None,
              covariance_mode: str = "correct") -> Task:
    """The C5 task law; ``w_var`` defaults to ``1/d``."""
    s = check_sigma(sigma)
    d = s.shape[0]
    if covariance_mode not in COVARIANCE_MODES:
        raise ValueError(f"covariance_mode must be one of {COVARIANCE_MODES}, got {covariance_mode!r}")
    root = sqrtm_sym(s)
    if covariance_mode == "correct":
        rp, rq = root, root
    else:  # the public code: transform applied twice to the prompt, never to the query
        rp, rq = root @ root, np.eye(d)
    return Task(d, rp, rq, float(noise_var), float(1.0 / d if w_var is None else w_var))


class Batch(NamedTuple):
    """One batch: tokens ``zT`` (n, D, L) (the kernels' transposed layout), ``zq`` (n, 1, D),
    targets ``yq`` (n, 1), tasks ``w`` (n, d)."""

    zT: jax.Array
    zq: jax.Array
    yq: jax.Array
    w: jax.Array


def sample_batch(key, n: int, L: int, task: Task, dtype=jnp.float32) -> Batch:
    """``n`` fresh prompts of length ``L`` from one ``normal`` call of shape (n, d + 1, L + 2).

    Layout of that call: rows ``:d`` of columns ``:L`` are the prompt covariates' standard normals,
    column ``L`` the query's, column ``L + 1`` the task; row ``d`` of columns ``:L + 1`` the label
    noise.  Normals are drawn in ``dtype`` (float32 by default: half the random bits) and used in
    float64.
    """
    d = task.d
    g = jax.random.normal(key, (n, d + 1, L + 2), dtype).astype(jnp.float64)
    rp = jnp.asarray(task.root_prompt)
    rq = jnp.asarray(task.root_query)
    xp = jnp.einsum("ij,njl->nil", rp, g[:, :d, :L])
    xq = g[:, :d, L] @ rq.T
    w = g[:, :d, L + 1] * np.sqrt(task.w_var)
    eps = g[:, d, :L + 1] * np.sqrt(task.noise_var)
    y = jnp.einsum("nd,ndl->nl", w, xp) + eps[:, :L]
    yq = jnp.sum(xq * w, axis=-1) + eps[:, L]
    zT = jnp.concatenate([xp, y[:, None, :]], axis=1)
    zq = jnp.concatenate([xq, jnp.zeros((n, 1))], axis=-1)[:, None, :]
    return Batch(zT, zq, yq[:, None], w)


def step_key(key, step):
    """The key of step ``step``: ``fold_in(key, step)`` (no replay of the stream needed)."""
    return jax.random.fold_in(key, step)


def root_key(seed: int, L: int, impl: str = "threefry2x32"):
    """Training stream of prompt length ``L``: shared by both models (common random numbers)."""
    return jax.random.fold_in(jax.random.key(int(seed), impl=impl), int(L))


# --------------------------------------------------------------------------- parametrisations
class QKVO(NamedTuple):
    """One attention head, PyTorch ``nn.Linear`` layout (out, in): ``W_Q, W_K, W_V, W_O`` (D, D)."""

    WQ: jax.Array
    WK: jax.Array
    WV: jax.Array
    WO: jax.Array


def torch_linear_init(rng: np.random.Generator, fan_out: int, fan_in: int) -> np.ndarray:
    """PyTorch ``nn.Linear`` default weight init, ``kaiming_uniform_(a=sqrt(5))``, written out:
    gain ``sqrt(2 / (1 + a^2)) = sqrt(1/3)``, bound ``gain sqrt(3 / fan_in) = 1 / sqrt(fan_in)``,
    i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``."""
    a = np.sqrt(5.0)
    gain = np.sqrt(2.0 / (1.0 + a * a))
    bound = gain * np.sqrt(3.0 / fan_in)
    return rng.uniform(-bound, bound, size=(fan_out, fan_in))


def init_qkvo(seed: int, d: int) -> QKVO:
    """The four D x D projections drawn in the order Q, K, V, O from ``numpy.default_rng(seed)``."""
    D = d + 1
    rng = np.random.default_rng(seed)
    return QKVO(*(jnp.asarray(torch_linear_init(rng, D, D)) for _ in range(4)))


def to_uv(p: QKVO) -> Params:
    """``U = W_K^T W_Q / sqrt(D)``, ``v = (W_O W_V)^T e_D``: the (U, v) model computing the same function."""
    D = p.WQ.shape[-1]
    return Params(p.WK.T @ p.WQ / jnp.sqrt(jnp.float64(D)), p.WV.T @ p.WO[-1])


def init_params(parametrisation: str, seed: int, d: int):
    """Initial parameters: QKVO (PyTorch default init) or its (U, v) image."""
    if parametrisation not in PARAMETRISATIONS:
        raise ValueError(f"parametrisation must be one of {PARAMETRISATIONS}, got {parametrisation!r}")
    p = init_qkvo(seed, d)
    return p if parametrisation == "qkvo" else to_uv(p)


def as_uv(p) -> Params:
    return to_uv(p) if isinstance(p, QKVO) else Params(*p)


# --------------------------------------------------------------------------- losses (shared kernels)
def prompt_data(b: Batch, L) -> models.PromptData:
    return models.PromptData(b.zT, b.zq, b.yq, jnp.asarray(L, jnp.int64))


def moment(zT, L):
    """``Ghat_L = (1/L) sum_{l<L} z_l z_l^T`` over the first ``L`` of the stored tokens; (n, D, D)."""
    # an elementwise product and one fused reduction: XLA's CPU batched dot is slow for
    # (6 x L) @ (L x 6) blocks (about 4x slower here at L = 1000, batch 128)
    keep = (jnp.arange(zT.shape[-1]) < L).astype(zT.dtype)
    zk = zT * keep
    return jnp.sum(zk[:, :, None, :] * zT[:, None, :, :], axis=-1) / L


def mse(model: str, p, b: Batch, L):
    """Mean squared error ``mean (f - y_q)^2`` of ``model`` on a batch (first ``L`` tokens)."""
    uv = as_uv(p)
    if model == "softmax":
        return 2.0 * models.softmax_risk(uv, prompt_data(b, L))
    return 2.0 * models.linear_risk(uv, models.MomentData(moment(b.zT, L), b.zq, b.yq))


def predict(model: str, p, b: Batch, L):
    """Predictions (n,) of a trained model on a batch, via the shared kernels."""
    uv = as_uv(p)
    if model == "softmax":
        m1, _ = softmax_moments(uv.U, uv.v, b.zT, b.zq, jnp.asarray(L, jnp.int64))
        return (m1 @ uv.v)[:, 0]
    return models.linear_predict(uv, models.MomentData(moment(b.zT, L), b.zq, b.yq))[:, 0]


# --------------------------------------------------------------------------- optimizer
class OptState(NamedTuple):
    velocity: object  # pytree like the params (zeros when momentum = 0)


def opt_init(p) -> OptState:
    return OptState(jax.tree.map(jnp.zeros_like, p))


def sgd_update(p, g, s: OptState, lr, momentum: float):
    """``torch.optim.SGD``: ``b <- momentum b + g``; ``p <- p - lr b`` (plain SGD at momentum 0)."""
    if momentum == 0.0:
        return jax.tree.map(lambda a, b: a - lr * b, p, g), s
    vel = jax.tree.map(lambda b, gg: momentum * b + gg, s.velocity, g)
    return jax.tree.map(lambda a, b: a - lr * b, p, vel), OptState(vel)


class State(NamedTuple):
    params: object
    opt: OptState
    step: jax.Array


class Schedule(NamedTuple):
    """Static training settings of one run (hashable: a jit static argument)."""

    model: str
    batch: int
    L_pad: int
    lr: float
    momentum: float
    log_every: int
    sample_dtype: str


@partial(jax.jit, static_argnames=("sched", "task_key", "n_logs"))
def run_chunk(state: State, key, Ls, task_arrays, sched: Schedule, task_key, n_logs: int):
    """``n_logs * log_every`` SGD steps of a group of runs (leading axis: one run per entry of ``Ls``).

    Run ``i`` trains on prompts of length ``Ls[i]`` drawn at the padded length ``L_pad`` (the
    kernels read only the first ``Ls[i]`` tokens); with one run and ``Ls[0] == L_pad`` nothing is
    padded.  ``key`` holds one key per run.  Returns the new state and the mean loss of every
    ``log_every`` steps, (n_runs, n_logs).
    """
    task = Task(task_key[0], task_arrays[0], task_arrays[1], task_key[1], task_key[2])
    dt = jnp.dtype(sched.sample_dtype)

    def loss_one(p, k, L):
        return mse(sched.model, p, sample_batch(k, sched.batch, sched.L_pad, task, dt), L)

    vg = jax.vmap(jax.value_and_grad(loss_one), in_axes=(0, 0, 0))

    def one_step(carry):
        st, acc = carry
        keys = jax.vmap(step_key, in_axes=(0, None))(key, st.step)
        loss, g = vg(st.params, keys, Ls)
        p, o = jax.vmap(lambda a, b, c: sgd_update(a, b, c, sched.lr, sched.momentum))(
            st.params, g, st.opt)
        return State(p, o, st.step + 1), acc + loss

    def log_block(st, _):
        st, acc = jax.lax.fori_loop(0, sched.log_every, lambda i, c: one_step(c),
                                    (st, jnp.zeros(Ls.shape, jnp.float64)))
        return st, acc / sched.log_every

    st, losses = jax.lax.scan(log_block, state, None, length=n_logs)
    return st, losses.T


def _task_static(task: Task):
    return (task.d, task.noise_var, task.w_var), (jnp.asarray(task.root_prompt), jnp.asarray(task.root_query))


def _stack(trees):
    return jax.tree.map(lambda *x: jnp.stack(x), *trees)


# --------------------------------------------------------------------------- checkpoints
def fingerprint(**settings) -> str:
    """Hash of everything a run's trajectory depends on except its length (so longer runs resume)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def save_checkpoint(path, state: State, losses: np.ndarray, fp: str) -> None:
    leaves = jax.tree.leaves((state.params, state.opt))
    save_npz(path, step=np.asarray(state.step), losses=losses, fingerprint=np.array(fp),
             **{f"leaf{i}": np.asarray(x) for i, x in enumerate(leaves)})


def load_checkpoint(path, like: State, fp: str):
    """(state, losses) from ``path`` if it exists and was written by the same settings, else None."""
    path = Path(path)
    if not path.exists():
        return None
    with np.load(path) as f:
        if str(f["fingerprint"]) != fp:
            return None
        treedef = jax.tree.structure((like.params, like.opt))
        n = treedef.num_leaves
        params, opt = jax.tree.unflatten(treedef, [jnp.asarray(f[f"leaf{i}"]) for i in range(n)])
        return State(params, opt, jnp.asarray(f["step"])), np.asarray(f["losses"])


# --------------------------------------------------------------------------- driver
def train(model: str, Ls, task: Task, *, parametrisation: str = "qkvo", seed: int = 0,
          init_seed: int = 0, steps: int, batch: int = 128, lr: float = 1e-3,
          momentum: float = 0.0, log_every: int = 100, chunk: int = 1000,
          sample_dtype: str = "float32", rng_impl: str = "threefry2x32", checkpoint=None,
          code_version: str = "", progress=None, stop_after_chunks: int | None = None) -> dict:
    """Online SGD of ``model`` for each prompt length in ``Ls`` (one compiled program for all).

    Returns numpy arrays: ``params`` (the final parameters, leading axis over ``Ls``), ``uv``
    (their (U, v) image), ``loss`` (n_runs, steps / log_every), ``loss_step`` (the last step of
    each logged window), ``steps_per_s`` (of this process's chunks, compilation excluded).
    A checkpoint is resumed only if it was written with the same settings and ``code_version``
    (the workflow passes a digest of the package files the job runs, so a code change restarts
    the run instead of serving a stale state).  ``stop_after_chunks`` (tests) simulates an
    interruption after that many chunks.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    Ls = [int(L) for L in Ls]
    if steps % chunk or chunk % log_every:
        raise ValueError(f"need log_every | chunk | steps, got {log_every}, {chunk}, {steps}")
    sched = Schedule(model, int(batch), max(Ls), float(lr), float(momentum), int(log_every), sample_dtype)
    p0 = init_params(parametrisation, init_seed, task.d)
    state = State(_stack([p0] * len(Ls)), _stack([opt_init(p0)] * len(Ls)), jnp.asarray(0, jnp.int64))
    keys = jnp.stack([root_key(seed, L, rng_impl) for L in Ls])
    fp = fingerprint(model=model, Ls=Ls, task=[task.d, task.root_prompt.tolist(),
                                                task.root_query.tolist(), task.noise_var, task.w_var],
                     parametrisation=parametrisation, seed=seed, init_seed=init_seed,
                     sched=sched, rng_impl=rng_impl, chunk=chunk, code_version=code_version)
    losses = np.zeros((len(Ls), 0))
    if checkpoint is not None:
        got = load_checkpoint(checkpoint, state, fp)
        if got is not None and int(got[0].step) <= steps:
            state, losses = got
            if progress:
                progress(f"resumed from {checkpoint} at step {int(state.step)}")
    tkey, tarr = _task_static(task)
    Ls_arr = jnp.asarray(Ls, jnp.int64)
    n_logs = chunk // log_every
    done_chunks, t_run, n_run = 0, 0.0, 0
    while int(state.step) < steps:
        t0 = time.perf_counter()
        state, l = run_chunk(state, keys, Ls_arr, tarr, sched, tkey, n_logs)
        l = np.asarray(l)
        dt = time.perf_counter() - t0
        if done_chunks > 0:  # the first call of this process includes compilation
            t_run += dt
            n_run += chunk
        losses = np.concatenate([losses, l], axis=1)
        done_chunks += 1
        if checkpoint is not None:
            save_checkpoint(checkpoint, state, losses, fp)
        if progress:
            progress(f"{model} L={Ls} step {int(state.step)}/{steps}: loss {l[:, -1].round(5).tolist()}"
                     f" ({chunk / dt:.1f} steps/s)")
        if stop_after_chunks is not None and done_chunks >= stop_after_chunks:
            break
    params = jax.tree.map(np.asarray, state.params)
    uv = jax.vmap(as_uv)(state.params)
    return {"params": params, "uv": Params(np.asarray(uv.U), np.asarray(uv.v)), "loss": losses,
            "loss_step": np.arange(1, losses.shape[1] + 1) * log_every, "step": int(state.step),
            "steps_per_s": (n_run / t_run) if n_run else float("nan")}
