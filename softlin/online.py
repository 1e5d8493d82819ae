"""C5 online training (paper Sec. 6): every run of the experiment in one compiled loop, resumable.

Task (the authors' public code): covariates ``x ~ N(0, Sigma)`` in dimension ``d``, task
``w ~ N(0, I/d)``, labels ``y = w^T x + eps``, ``eps ~ N(0, noise_var)`` (query target included),
prompt tokens ``z_l = (x_l, y_l)`` of size ``D = d + 1``, one query ``z_q = (x_q, 0)``.

Two parametrisations of one attention head, both evaluated through the shared moments:

* ``qkvo`` (the authors'): ``W_Q, W_K, W_V, W_O`` (D x D each, PyTorch ``nn.Linear`` layout
  ``y = W x``, no biases), scores ``(W_K z_l)^T (W_Q z_q) / sqrt(D)``, prediction the last
  coordinate of ``W_O sum_l p_l W_V z_l`` (softmax) or of ``W_O (1/L) sum_l s_l W_V z_l`` (linear:
  no softmax, scores divided by L).  It *is* the (U, v) model with
  ``U = W_K^T W_Q / sqrt(D)``, ``v = (W_O W_V)^T e_D`` (:func:`to_uv`); gradients reach the four
  matrices through that map by autodiff.
* ``uv``: Sec. 5's (U, v) trained directly (initialised at the image of the same QKVO draw).

Covariance modes: ``correct`` (prompt and query covariates ``C g``, ``C`` the lower Cholesky factor
of Sigma) and ``as_in_authors_code`` (the public code: row vectors multiplied by ``C^T`` twice,
``x = C C g``, so the prompt covariance is ``C C C^T C^T``, and the query never transformed).

Batches (:mod:`softlin.stream`): with ``streams: shared`` every run, both models and every prompt
length, trains on the same batch of each step (run ``L`` on its first ``L`` tokens): each run is
still the paper's online SGD, and the runs share their random numbers.  ``streams: per_L`` gives
each prompt length its own stream (both models still share it).  On the CPU one C++ pass per prompt
draws the tokens and computes what every run's gradient needs (softmax moments, the linear runs'
prompt second moments at all their lengths).  ``chunk`` steps run per compiled call; between chunks
the state is checkpointed atomically and a restarted job resumes from it, bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import stream
from ._jax import jax, jnp
from .io import save_npz
from .params import Params
from .tasks import check_sigma

TRAINED_MODELS = ("softmax", "linear")  # the attention models C5 trains (softlin.models.MODELS adds "limit")
PARAMETRISATIONS = ("qkvo", "uv")
COVARIANCE_MODES = ("correct", "as_in_authors_code")
STREAMS = ("shared", "per_L")
OPTIMIZERS = ("sgd", "adam")
SCHEDULES = ("constant", "cosine")


# --------------------------------------------------------------------------- task law
class TaskLaw(NamedTuple):
    """The C5 task law: covariance roots of prompt and query covariates, noise and prior variances."""

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

    def law(self) -> stream.Law:
        return stream.make_law(self.root_prompt, self.root_query, self.w_var, self.noise_var)


def kms_sigma(d: int, rho: float) -> np.ndarray:
    """Kac-Murdock-Szego covariance ``Sigma_ij = rho^|i-j|``; (d, d)."""
    i = np.arange(d)
    return float(rho) ** np.abs(i[:, None] - i[None, :])


def make_task(sigma, noise_var: float, w_var: float | None = None,
              covariance_mode: str = "correct") -> TaskLaw:
    """The C5 task law; ``w_var`` defaults to ``1/d``."""
    s = check_sigma(sigma)
    d = s.shape[0]
    if covariance_mode not in COVARIANCE_MODES:
        raise ValueError(f"covariance_mode must be one of {COVARIANCE_MODES}, got {covariance_mode!r}")
    C = np.linalg.cholesky(s)
    if covariance_mode == "correct":
        rp, rq = C, C
    else:  # the public code: x @ C^T @ C^T on row vectors, i.e. x = C C g; the query untouched
        rp, rq = C @ C, np.eye(d)
    return TaskLaw(d, rp, rq, float(noise_var), float(1.0 / d if w_var is None else w_var))


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


# --------------------------------------------------------------------------- losses from a step's moments
@jax.custom_vjp
def softmax_from_moments(U, v, m1, m2, zq):
    """Softmax attention's prediction ``f = v^T E_p[z]`` from the moments at ``(U, v)``; (n,).

    ``m1 = E_p[z]``, ``m2 = E_p[(v.z) z]`` (n, D) must be those of ``(U, v)``; the gradient is
    ``df/dv = m1``, ``df/dU = (m2 - f m1) z_q^T`` (``p`` depends on ``U`` through ``s_l = z_l^T U z_q``).
    """
    return m1 @ v


def _softmax_from_moments_fwd(U, v, m1, m2, zq):
    f = m1 @ v
    return f, (f, m1, m2, zq)


def _softmax_from_moments_bwd(res, ct):
    f, m1, m2, zq = res
    gU = jnp.einsum("n,ni,nj->ij", ct, m2 - f[:, None] * m1, zq)
    return gU, ct @ m1, jnp.zeros_like(m1), jnp.zeros_like(m2), jnp.zeros_like(zq)


softmax_from_moments.defvjp(_softmax_from_moments_fwd, _softmax_from_moments_bwd)


def softmax_mse(p, m1, m2, zq, yq):
    """Mean squared error ``mean_n (f_n - y_q,n)^2`` of softmax attention (the authors' loss)."""
    uv = as_uv(p)
    return jnp.mean((softmax_from_moments(uv.U, uv.v, m1, m2, zq) - yq) ** 2)


def linear_output(uv: Params, G, zq):
    """Linear attention's prediction ``f = v^T Ghat_L U z_q``; G (n, D, D), zq (n, D) -> (n,)."""
    return jnp.einsum("j,njk,nk->n", uv.v, G, zq @ uv.U.T)


def linear_mse(p, G, zq, yq):
    """Mean squared error of linear attention on the prompts' second moments ``G``."""
    return jnp.mean((linear_output(as_uv(p), G, zq) - yq) ** 2)


# --------------------------------------------------------------------------- optimisers
class Optimizer(NamedTuple):
    """Static optimiser settings (torch semantics).  ``sgd``: ``b <- momentum b + g``,
    ``p <- p - lr_t b``; ``adam``: torch.optim.Adam (bias-corrected moments, ``eps`` outside the
    root).  ``schedule``: ``constant`` or ``cosine`` (``lr_t = lr (1 + cos(pi t / steps)) / 2``),
    times ``min(1, (t + 1) / warmup)`` when ``warmup`` > 0 (a linear warm-up over its first steps)."""

    name: str = "sgd"
    lr: float = 1e-3
    momentum: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    schedule: str = "constant"
    steps: int = 1
    warmup: int = 0


class OptState(NamedTuple):
    m: object  # first moment / velocity, like the params
    v: object  # second moment (adam), like the params


def opt_init(p) -> OptState:
    z = jax.tree.map(jnp.zeros_like, p)
    return OptState(z, z)


def learning_rate(opt: Optimizer, step):
    """``lr_t`` at (0-based) ``step``."""
    lr = jnp.asarray(opt.lr, jnp.float64)
    if opt.schedule == "cosine":
        lr = lr * 0.5 * (1.0 + jnp.cos(jnp.pi * step / opt.steps))
    if opt.warmup > 0:
        lr = lr * jnp.minimum(1.0, (step + 1) / opt.warmup)
    return lr


def opt_update(opt: Optimizer, p, g, s: OptState, step):
    """One update at (0-based) ``step``; returns (params, state)."""
    lr = learning_rate(opt, step)
    if opt.name == "sgd":
        if opt.momentum == 0.0:
            return jax.tree.map(lambda a, b: a - lr * b, p, g), s
        m = jax.tree.map(lambda b, gg: opt.momentum * b + gg, s.m, g)
        return jax.tree.map(lambda a, b: a - lr * b, p, m), OptState(m, s.v)
    t = (step + 1).astype(jnp.float64)
    m = jax.tree.map(lambda a, gg: opt.beta1 * a + (1 - opt.beta1) * gg, s.m, g)
    v = jax.tree.map(lambda a, gg: opt.beta2 * a + (1 - opt.beta2) * gg * gg, s.v, g)
    c1, c2 = 1 - opt.beta1 ** t, 1 - opt.beta2 ** t
    new = jax.tree.map(lambda a, mm, vv: a - lr * (mm / c1) / (jnp.sqrt(vv / c2) + opt.eps), p, m, v)
    return new, OptState(m, v)


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


# --------------------------------------------------------------------------- checkpoints
def fingerprint(**settings) -> str:
    """Hash of everything a run's trajectory depends on except its length (so longer runs resume)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def previous_checkpoint(path) -> Path:
    """Where :func:`save_checkpoint` keeps the checkpoint before the last one (``L10.prev.npz``)."""
    path = Path(path)
    return path.with_name(f"{path.stem}.prev{path.suffix}")


def save_checkpoint(path, state: State, losses: dict, fp: str) -> None:
    """Write the state atomically, keeping the previous checkpoint as :func:`previous_checkpoint`
    (a checkpoint that later fails to load leaves one to resume from)."""
    path = Path(path)
    leaves = jax.tree.leaves((state.params, state.opt))
    if path.exists():
        os.replace(path, previous_checkpoint(path))
    save_npz(path, step=np.asarray(state.step), fingerprint=np.array(fp),
             **{f"loss_{m}": x for m, x in losses.items()},
             **{f"leaf{i}": np.asarray(x) for i, x in enumerate(leaves)})


def set_aside(path) -> Path:
    """Rename an unreadable file to ``<name>.corrupt[-N]<suffix>`` beside it; return the new path."""
    path = Path(path)
    for n in range(1000):
        new = path.with_name(f"{path.stem}.corrupt{'' if n == 0 else f'-{n}'}{path.suffix}")
        if not new.exists():
            os.replace(path, new)
            return new
    raise FileExistsError(f"too many set-aside copies of {path}")


def _read_checkpoint(path: Path, like: State, fp: str):
    with np.load(path) as f:
        if str(f["fingerprint"]) != fp:
            return None
        treedef = jax.tree.structure((like.params, like.opt))
        leaves = [jnp.asarray(f[f"leaf{i}"]) for i in range(treedef.num_leaves)]
        params, opt = jax.tree.unflatten(treedef, leaves)
        losses = {m: np.asarray(f[f"loss_{m}"]) for m in like.params}
        return State(params, opt, jnp.asarray(f["step"])), losses


def load_checkpoint(path, like: State, fp: str, report=None):
    """(state, losses) from ``path`` (or, when it is missing or unreadable, from the previous
    checkpoint) if written by the same settings, else None.  A checkpoint that fails to load is
    reported with its path (``report``, and a warning) and set aside (:func:`set_aside`)."""
    import warnings

    path = Path(path)
    for cand in (path, previous_checkpoint(path)):
        if not cand.exists():
            continue
        try:
            return _read_checkpoint(cand, like, fp)
        except Exception as err:  # truncated, garbled, missing entries: set it aside, fall back
            new = set_aside(cand)
            msg = (f"checkpoint {cand} does not load ({type(err).__name__}: {str(err)[:120]}): "
                   f"set aside as {new.name}; resuming from the previous checkpoint or step 0")
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            if report:
                report(msg)
    return None


class _Stop:
    """SIGINT / SIGTERM during training: recorded here by the handler, acted on by the loop
    (which waits for a chunk in short polls, so it notices within a fraction of a second): the
    process reports where its last checkpoint is and exits with status 128 + the signal number."""

    def __init__(self):
        self.signum = None
        self.saved = {}

    def __enter__(self):
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._handler)
        return self

    def _handler(self, signum, frame):
        self.signum = signum

    def __exit__(self, *exc):
        import signal

        for sig, old in self.saved.items():
            signal.signal(sig, old)
        return False

    def wait(self, tree) -> bool:
        """Block until every array of ``tree`` is computed or a signal came; True if one came."""
        leaves = [x for x in jax.tree.leaves(tree) if hasattr(x, "is_ready")]
        while self.signum is None and not all(x.is_ready() for x in leaves):
            time.sleep(0.02)
        return self.signum is not None

    def stop(self, checkpoint, progress) -> None:
        import signal

        name = signal.Signals(self.signum).name
        where = "no checkpoint" if checkpoint is None else f"the last checkpoint {checkpoint} is kept"
        msg = f"stopped by {name}: {where}; rerun to resume"
        if progress:
            progress(msg)
        # a computation still in flight would hold the interpreter's exit until it ends (a whole
        # chunk, minutes at the paper's settings): leave at once, the files on disk are complete
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + self.signum)


# --------------------------------------------------------------------------- driver
def _eta(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def train(task: TaskLaw, Ls, models=TRAINED_MODELS, *, parametrisation: str = "qkvo", seed: int = 0,
          init_seed: int = 0, restarts: int = 1, steps: int, batch: int = 128, optimizer: Optimizer | None = None,
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
    opt = (optimizer or Optimizer())._replace(steps=int(steps))
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
    with _Stop() as stop:
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
          stop_after_chunks, stop: _Stop):
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
    keep = (jnp.arange(b.zT.shape[-1]) < L).astype(b.zT.dtype)
    G = jnp.einsum("nil,njl->nij", b.zT * keep, b.zT) / L
    return linear_output(uv, G, b.zq)
