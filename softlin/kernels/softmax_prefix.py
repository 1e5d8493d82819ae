"""The softmax moments at every length of a nested prompt family in one pass (C1, C2; target
``softmax_moments_prefix``, csrc/softmax_moments_prefix.cc).

``softmax_moments_prefix(U, v, zT, zq, Ls) -> (m1, m2)``, shapes (n_L, n, Q, d+1): at each length
``L_k`` of the strictly increasing list ``Ls`` the moments of
:func:`softlin.kernels.softmax_moments.softmax_moments` over the first ``L_k`` tokens.  The prompt
is read once, segment by segment ``[L_{k-1}, L_k)``, with the online-softmax rescaling of the
running sums by ``exp(M_prev - M)`` (each prefix normalised by its own maximum).  On the CPU the
C++ kernel; elsewhere, without a C++ compiler or with ``SOFTLIN_KERNELS=0``, the same segment
recursion in XLA (:func:`softmax_moments_prefix_xla`).  ``Ls`` must be concrete (static under jit).
"""

from __future__ import annotations

import numpy as np

from .._jax import jax, jnp
from .build import TARGETS, use_kernels


def check_lengths(Ls, l_max: int) -> tuple[int, ...]:
    """``Ls`` as a tuple of ints, or the same ValueError on both paths: empty, not integers, not
    strictly increasing, or outside ``[1, l_max]``."""
    arr = np.asarray(Ls)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"softmax_moments_prefix: Ls must be a non-empty list of lengths, got {Ls!r}")
    if not (np.issubdtype(arr.dtype, np.integer) or np.all(np.mod(arr, 1) == 0)):
        raise ValueError(f"softmax_moments_prefix: Ls must be integers, got {Ls!r}")
    out = tuple(int(x) for x in arr)
    if out[0] < 1 or out[-1] > l_max or any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(f"softmax_moments_prefix: Ls must increase strictly within [1, l_max = {l_max}], "
                         f"got {list(out)}")
    return out


def softmax_moments_prefix_xla(U, v, zT, zq, Ls, second: bool = True):
    """Pure-XLA ``(E_p[z], E_p[(v.z) z])`` over the first ``L_k`` tokens for every ``L_k`` in
    ``Ls``; zT (n, D, l_max), zq (n, Q, D) -> two (n_L, n, Q, D) arrays (segment recursion with
    online-softmax rescaling); ``second=False``: ``(m1, None)``."""
    Ls = check_lengths(Ls, zT.shape[-1])
    a = zq @ U.T                                               # (n, Q, D)
    out1, out2 = [], []
    b, M = 0, None
    for e in Ls:
        z = zT[..., b:e]                                       # (n, D, seg)
        s = jnp.einsum("nqj,njl->nql", a, z)
        Mn = jnp.max(s, axis=-1) if M is None else jnp.maximum(M, jnp.max(s, axis=-1))
        ex = jnp.exp(s - Mn[..., None])
        vz = jnp.einsum("j,njl->nl", v, z)
        seg = (jnp.sum(ex, axis=-1), jnp.einsum("nql,njl->nqj", ex, z),
               jnp.einsum("nql,njl->nqj", ex * vz[:, None, :], z) if second else 0.0)
        if M is None:
            R0, R1, R2 = seg
        else:
            c = jnp.exp(M - Mn)
            R0, R1, R2 = c * R0 + seg[0], c[..., None] * R1 + seg[1], c[..., None] * R2 + seg[2]
        out1.append(R1 / R0[..., None])
        out2.append(R2 / R0[..., None])
        b, M = e, Mn
    return jnp.stack(out1), (jnp.stack(out2) if second else None)


def softmax_moments_prefix(U, v, zT, zq, Ls, second: bool = True):
    """``(E_p[z], E_p[(v.z) z])`` per length of ``Ls``, task and query; (n_L, n, Q, D) each
    (``second=False``: ``(m1, None)``, m2's work skipped).  Bad ``Ls`` (empty, not strictly
    increasing, outside ``[1, l_max]``) raise the same ValueError on both paths (the C++ kernel
    also refuses them when it runs)."""
    Ls = check_lengths(Ls, zT.shape[-1])
    if use_kernels():
        n, Q, D = zq.shape
        out = jax.ShapeDtypeStruct((len(Ls), n, Q, D), jnp.float64)
        out2 = out if second else jax.ShapeDtypeStruct((0,), jnp.float64)  # empty: m1 only
        call = jax.ffi.ffi_call(TARGETS["softmax_moments_prefix"][0], (out, out2), vmap_method="sequential")
        m1, m2 = call(jnp.asarray(U, jnp.float64), jnp.asarray(v, jnp.float64),
                      jnp.asarray(zT, jnp.float64), jnp.asarray(zq, jnp.float64),
                      jnp.asarray(np.asarray(Ls, np.int64)))
        return m1, (m2 if second else None)
    return softmax_moments_prefix_xla(U, v, zT, zq, Ls, second)
