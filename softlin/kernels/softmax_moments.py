"""The softmax-moment kernel (C1-C4; target ``softmax_moments``, csrc/softmax_moments.cc).

``softmax_moments(U, v, zT, zq, L) -> (m1, m2)`` with ``m1 = E_p[z]`` and ``m2 = E_p[(v.z) z]``
under the softmax weights ``p_l ∝ exp((U z_q)^T z_l)`` over the first ``L`` tokens; shapes
(n, Q, d+1).  ``L`` is a runtime value, so one compiled program serves every prompt length.  On the CPU this is
one pass over each task's prompt (the XLA fusion of the same formula re-reads the prompt several
times and is memory bound); elsewhere, or when no C++ compiler is available, or with
``SOFTLIN_KERNELS=0``, the pure-XLA formula :func:`softmax_moments_xla` is used.  Both are checked
against each other and against autodiff in the tests.
"""

from __future__ import annotations

from .._jax import jax, jnp
from .build import TARGETS, use_kernels


def check_length(L, l_max: int) -> None:
    """Raise the same ValueError on both paths when a concrete prompt length ``L`` is outside
    ``[1, l_max]`` (the C++ kernel also refuses it at run time, the XLA formula gives NaN, for a
    traced ``L`` that no Python check can see)."""
    try:
        value = int(L)
    except (TypeError, jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError):
        return  # traced: checked when the program runs
    if not 1 <= value <= l_max:
        raise ValueError(f"softmax_moments: prompt length L = {value} outside [1, l_max = {l_max}]")


def softmax_moments_xla(U, v, zT, zq, L):
    """Pure-XLA ``(E_p[z], E_p[(v.z) z])`` over the first L tokens; zT (n, D, l_max), zq (n, Q, D).
    A prompt length outside ``[1, l_max]`` raises (concrete) or gives NaN (traced)."""
    check_length(L, zT.shape[-1])
    m1, m2 = _moments_xla(U, v, zT, zq, L)
    bad = (L < 1) | (L > zT.shape[-1])
    return jnp.where(bad, jnp.nan, m1), jnp.where(bad, jnp.nan, m2)


def _moments_xla(U, v, zT, zq, L):
    a = zq @ U.T
    vz = jnp.sum(v[:, None] * zT, axis=1)
    keep = jnp.arange(zT.shape[-1]) < L
    m1, m2 = [], []
    for q in range(zq.shape[1]):  # one query at a time keeps XLA's fusions on (n, l_max) arrays
        s = jnp.where(keep, jnp.sum(a[:, q, :, None] * zT, axis=1), -jnp.inf)
        e = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
        s0 = jnp.sum(e, axis=-1)[:, None]
        m1.append(jnp.sum(e[:, None, :] * zT, axis=-1) / s0)
        m2.append(jnp.sum((e * vz)[:, None, :] * zT, axis=-1) / s0)
    return jnp.stack(m1, axis=1), jnp.stack(m2, axis=1)


def softmax_moments(U, v, zT, zq, L):
    """``(E_p[z], E_p[(v.z) z])`` per task and query over the first ``L`` tokens (L may be traced;
    a concrete L outside ``[1, l_max]`` raises the same ValueError on both paths)."""
    check_length(L, zT.shape[-1])
    if use_kernels():
        out = jax.ShapeDtypeStruct(zq.shape, jnp.float64)
        call = jax.ffi.ffi_call(TARGETS["softmax_moments"][0], (out, out), vmap_method="sequential")
        return call(jnp.asarray(U, jnp.float64), jnp.asarray(v, jnp.float64),
                    jnp.asarray(zT, jnp.float64), jnp.asarray(zq, jnp.float64),
                    jnp.asarray(L, jnp.int64))
    return softmax_moments_xla(U, v, zT, zq, L)
