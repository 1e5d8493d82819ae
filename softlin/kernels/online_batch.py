"""C5's batch-stream kernel (targets ``online_sample`` and ``online_step``, csrc/online_batch.cc).

The Python faces of the two custom calls.  Their definition and pure-XLA references are the
stream's (softlin/stream.py: :func:`~softlin.stream.sample_xla`,
:func:`~softlin.stream.step_data_xla`), whose :func:`~softlin.stream.sample` and
:func:`~softlin.stream.step_data` call these where :func:`.build.use_kernels` holds.  ``law`` is a
:class:`softlin.stream.Law` (``roots`` (2, d, d), ``scales`` (2,)), ``key`` its Philox key.
"""

from __future__ import annotations

from .._jax import jax, jnp
from .build import TARGETS


def _cfg(step, f64: bool):
    return jnp.stack([jnp.asarray(step, jnp.int64), jnp.asarray(int(f64), jnp.int64)])


def sample(law, key, step, n: int, L: int, f64: bool = False):
    """``(zT (n, D, L), zq (n, D), yq (n,), w (n, d))``: the batch of ``step`` drawn by the kernel."""
    d = law.roots.shape[-1]
    f = jnp.float64
    shapes = (jax.ShapeDtypeStruct((n, d + 1, L), f), jax.ShapeDtypeStruct((n, d + 1), f),
              jax.ShapeDtypeStruct((n,), f), jax.ShapeDtypeStruct((n, d), f))
    call = jax.ffi.ffi_call(TARGETS["online_sample"][0], shapes, vmap_method="sequential")
    return call(jnp.asarray(key, jnp.uint32), _cfg(step, f64), jnp.asarray(law.scales),
                jnp.asarray(law.roots))


def step_data(law, key, step, n: int, U, v, Ls: tuple, Llin: tuple, f64: bool = False):
    """``(zq, yq, m1, m2, G)`` of one training step (see :class:`softlin.stream.StepData`): the
    batch drawn, each softmax run's moments at ``(U[r], v[r], Ls[r])`` and the prompt second
    moments at each linear length ``Llin`` (ascending), in one pass over each prompt."""
    D = law.roots.shape[-1] + 1
    f = jnp.float64
    R, K = len(Ls), len(Llin)
    shapes = (jax.ShapeDtypeStruct((n, D), f), jax.ShapeDtypeStruct((n,), f),
              jax.ShapeDtypeStruct((R, n, D), f), jax.ShapeDtypeStruct((R, n, D), f),
              jax.ShapeDtypeStruct((K, n, D, D), f))
    call = jax.ffi.ffi_call(TARGETS["online_step"][0], shapes, vmap_method="sequential")
    U = jnp.asarray(U, f).reshape(R, D, D)
    v = jnp.asarray(v, f).reshape(R, D)
    return call(jnp.asarray(key, jnp.uint32), _cfg(step, f64), jnp.asarray(law.scales),
                jnp.asarray(law.roots), U, v, jnp.asarray(Ls, jnp.int64).reshape(R),
                jnp.asarray(Llin, jnp.int64).reshape(K))
