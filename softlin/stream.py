"""C5's batch stream: counter-based Gaussian prompts, drawn where they are used (paper Sec. 6).

Normal number ``k`` of plane ``p`` of prompt ``i`` at training step ``t`` is a function of
``(seed, stream, t, i, p, k)`` alone: a Philox4x32-10 block (Salmon et al., SC 2011; the Random123
reference, whose known-answer vectors the tests check) with key ``(seed, stream)`` and counter
``(block, i, t, p)``, turned into normals by Box-Muller.  Planes ``0..d-1`` are the standard normals
of the prompt covariates (normal ``l`` belongs to token ``l``), plane ``d`` the label noise, plane
``d + 1`` the task ``w`` (normals ``0..d-1``), the query covariates (``d..2d-1``) and the query noise
(``2d``).  Hence:

* the length-``L`` prompt is the prefix of every longer one (nested prompts, the shared stream of
  the whole experiment: every run at length ``L`` trains on the first ``L`` tokens of one batch);
* any step's batch is drawn directly from ``(seed, step)``, with no replay.

The prompt law (docs/maths.md#c5): ``x_l = R_p g_l``, ``y_l = w^T x_l + s_noise e_l``, ``w = s_w g_w``,
``x_q = R_q g_q``, ``y_q = w^T x_q + s_noise e_q``; tokens ``z_l = (x_l, y_l)``, query
``z_q = (x_q, 0)``.

Two implementations of one definition: the C++ kernel (``kernels/csrc/online_batch.cc``, its face
:mod:`softlin.kernels.online_batch`; on the CPU: it draws each prompt into the cache and computes,
for every run of the step, the softmax moments and the prompt's second moments at every linear
run's length in the same pass) and this module's pure-XLA version (any backend; the tests'
reference).  They agree bit for bit on the Philox words and to a few ulps on the normals (vector
``log``/``sin``/``cos`` of different libraries).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._jax import jax, jnp
from .kernels import online_batch
from .kernels.build import use_kernels
from .kernels.softmax_moments import softmax_moments_xla
from .models import prompt_moment

PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
LANES = 8  # Philox blocks per vector group (the layout of the normals, below)


class Law(NamedTuple):
    """A prompt law: ``roots`` (2, d, d) = (R_p, R_q), ``scales`` (2,) = (s_w, s_noise)."""

    roots: np.ndarray
    scales: np.ndarray

    @property
    def d(self) -> int:
        return int(self.roots.shape[-1])


def make_law(root_prompt, root_query, w_var: float, noise_var: float) -> Law:
    """The law with ``x = root_prompt g``, ``x_q = root_query g``, ``w ~ N(0, w_var I)``, noise ``noise_var``."""
    roots = np.stack([np.asarray(root_prompt, np.float64), np.asarray(root_query, np.float64)])
    return Law(roots, np.array([np.sqrt(w_var), np.sqrt(noise_var)], np.float64))


def stream_key(seed: int, stream: int = 0) -> np.ndarray:
    """The Philox key ``(seed, stream)`` (two uint32): stream 0 is the shared stream, ``L`` the
    independent stream of prompt length ``L`` (option ``streams: per_L``)."""
    for name, x in (("seed", seed), ("stream", stream)):
        if not 0 <= int(x) < 2 ** 32:
            raise ValueError(f"{name} must be in [0, 2^32), got {x}")
    return np.array([int(seed), int(stream)], np.uint32)


# --------------------------------------------------------------------------- Philox4x32-10 (XLA)
def philox4x32(ctr, key):
    """Philox4x32-10: ``ctr`` (4, ...) uint32 counters, ``key`` (2,) uint32 -> (4, ...) uint32 words."""
    x0, x1, x2, x3 = (jnp.asarray(c, jnp.uint32) for c in ctr)
    k0, k1 = jnp.uint32(key[0]), jnp.uint32(key[1])
    m0, m1 = jnp.uint64(PHILOX_M[0]), jnp.uint64(PHILOX_M[1])
    for _ in range(10):
        p0 = m0 * x0.astype(jnp.uint64)
        p1 = m1 * x2.astype(jnp.uint64)
        hi0, lo0 = (p0 >> 32).astype(jnp.uint32), p0.astype(jnp.uint32)
        hi1, lo1 = (p1 >> 32).astype(jnp.uint32), p1.astype(jnp.uint32)
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
        k0 = k0 + jnp.uint32(PHILOX_W[0])
        k1 = k1 + jnp.uint32(PHILOX_W[1])
    return jnp.stack([x0, x1, x2, x3])


def plane_normals(key, prompt, step, plane: int, count: int, f64: bool):
    """The first ``count`` normals of one plane for each prompt index in ``prompt`` (n,); (n, count).

    Layout (the C++ kernel's): float32 normals, block ``j = 8 g + lane`` gives normals
    ``32 g + 8 q + lane``, q = 0..3 = (cos, sin) of the pair of words (0, 1), then of (2, 3), with
    radius ``sqrt(-2 log u)``, ``u = (w >> 1) 2^-31 + 2^-32`` and angle ``2 pi (w' >> 8) 2^-24``;
    float64 normals, block ``j`` gives normals ``16 g + 8 q + lane``, q = (cos, sin), from the 52-bit
    uniforms ``(w0 >> 11) 2^-21 + (w1 >> 1) 2^-52 (+ 2^-53 for the radius)`` and ``(w2, w3)``.
    """
    per = 2 * LANES if f64 else 4 * LANES
    groups = -(-count // per)
    j = jnp.arange(groups * LANES, dtype=jnp.uint32)
    prompt = jnp.asarray(prompt, jnp.uint32)
    shape = (prompt.shape[0], j.shape[0])
    ctr = (jnp.broadcast_to(j[None, :], shape), jnp.broadcast_to(prompt[:, None], shape),
           jnp.full(shape, step, jnp.uint32), jnp.full(shape, plane, jnp.uint32))
    x = philox4x32(ctr, key)  # (4, n, groups * LANES)
    i32 = lambda a, s: (a >> s).astype(jnp.int32)  # noqa: E731
    if f64:
        f = jnp.float64
        u1 = i32(x[0], 11).astype(f) * 2.0 ** -21 + i32(x[1], 1).astype(f) * 2.0 ** -52 + 2.0 ** -53
        u2 = i32(x[2], 11).astype(f) * 2.0 ** -21 + i32(x[3], 1).astype(f) * 2.0 ** -52
        r, th = jnp.sqrt(-2.0 * jnp.log(u1)), 2.0 * np.pi * u2
        q = [r * jnp.cos(th), r * jnp.sin(th)]
    else:
        f = jnp.float32
        two_pi = jnp.float32(2.0 * np.pi)
        ra = jnp.sqrt(-2.0 * jnp.log(i32(x[0], 1).astype(f) * f(2.0 ** -31) + f(2.0 ** -32)))
        rb = jnp.sqrt(-2.0 * jnp.log(i32(x[2], 1).astype(f) * f(2.0 ** -31) + f(2.0 ** -32)))
        ta = two_pi * (i32(x[1], 8).astype(f) * f(2.0 ** -24))
        tb = two_pi * (i32(x[3], 8).astype(f) * f(2.0 ** -24))
        q = [ra * jnp.cos(ta), ra * jnp.sin(ta), rb * jnp.cos(tb), rb * jnp.sin(tb)]
    # (q, n, groups, lane) -> (n, groups, q, lane) -> (n, groups * per)
    out = jnp.stack([a.reshape(shape[0], groups, LANES) for a in q], axis=2)
    return out.reshape(shape[0], groups * per)[:, :count].astype(jnp.float64)


class Batch(NamedTuple):
    """Prompts ``zT`` (n, D, L) (transposed: the kernels' layout), queries ``zq`` (n, D), targets
    ``yq`` (n,), tasks ``w`` (n, d)."""

    zT: jax.Array
    zq: jax.Array
    yq: jax.Array
    w: jax.Array


def sample_xla(law: Law, key, step, n: int, L: int, f64: bool = False) -> Batch:
    """The batch of ``step``: ``n`` prompts of ``L`` tokens, pure XLA (any backend)."""
    d = law.d
    Rp, Rq = jnp.asarray(law.roots[0]), jnp.asarray(law.roots[1])
    s_w, s_e = law.scales[0], law.scales[1]
    idx = jnp.arange(n, dtype=jnp.uint32)
    g = jnp.stack([plane_normals(key, idx, step, p, L, f64) for p in range(d + 1)], axis=1)
    ex = plane_normals(key, idx, step, d + 1, 2 * d + 1, f64)
    w = s_w * ex[:, :d]
    xq = ex[:, d:2 * d] @ Rq.T
    yq = jnp.sum(w * xq, axis=-1) + s_e * ex[:, 2 * d]
    x = jnp.einsum("jk,nkl->njl", Rp, g[:, :d])
    y = jnp.einsum("nj,njl->nl", w, x) + s_e * g[:, d]
    zT = jnp.concatenate([x, y[:, None, :]], axis=1)
    zq = jnp.concatenate([xq, jnp.zeros((n, 1))], axis=-1)
    return Batch(zT, zq, yq, w)


def sample(law: Law, key, step, n: int, L: int, f64: bool = False) -> Batch:
    """The batch of ``step`` (C++ kernel on the CPU, else :func:`sample_xla`)."""
    if not use_kernels():
        return sample_xla(law, key, step, n, L, f64)
    return Batch(*online_batch.sample(law, key, step, n, L, f64))


class StepData(NamedTuple):
    """What one training step needs: ``zq`` (n, D), ``yq`` (n,), softmax moments ``m1``, ``m2``
    (R, n, D) of run r at (U_r, v_r, Ls[r]), prompt second moments ``G`` (K, n, D, D) at each
    linear length."""

    zq: jax.Array
    yq: jax.Array
    m1: jax.Array
    m2: jax.Array
    G: jax.Array


def prefix_moments(zT, Ls) -> jax.Array:
    """:func:`softlin.models.prompt_moment` at each L_k (the C++ step's reference); zT (n, D, l) -> (K, n, D, D)."""
    return jnp.stack([prompt_moment(zT[:, :, :L], L) for L in Ls])


def step_data_xla(law: Law, key, step, n: int, U, v, Ls, Llin, f64: bool = False) -> StepData:
    """:func:`step_data` in pure XLA: sample the batch at the largest length, then the moments."""
    L_gen = max([*Ls, *Llin])
    b = sample_xla(law, key, step, n, L_gen, f64)
    zq = b.zq[:, None, :]
    m = [softmax_moments_xla(U[r], v[r], b.zT, zq, L) for r, L in enumerate(Ls)]
    D = law.d + 1
    m1 = jnp.stack([a[:, 0] for a, _ in m]) if m else jnp.zeros((0, n, D))
    m2 = jnp.stack([c[:, 0] for _, c in m]) if m else jnp.zeros((0, n, D))
    G = prefix_moments(b.zT, Llin) if Llin else jnp.zeros((0, n, D, D))
    return StepData(b.zq, b.yq, m1, m2, G)


def step_data(law: Law, key, step, n: int, U, v, Ls, Llin, f64: bool = False) -> StepData:
    """One step's :class:`StepData` for softmax runs ``(U[r], v[r], Ls[r])`` and linear lengths
    ``Llin`` (ascending), every run on the same ``n`` prompts of the stream (C++ on the CPU)."""
    Ls, Llin = tuple(int(L) for L in Ls), tuple(int(L) for L in Llin)
    if list(Llin) != sorted(set(Llin)):
        raise ValueError(f"linear lengths must be strictly ascending, got {Llin}")
    if not use_kernels():
        return step_data_xla(law, key, step, n, U, v, Ls, Llin, f64)
    return StepData(*online_batch.step_data(law, key, step, n, U, v, Ls, Llin, f64))
