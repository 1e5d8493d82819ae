"""Host buffers that JAX reads without a copy (C1's and C2's token arrays, 8-70 MB per block).

On the CPU ``jax.device_put`` aliases a numpy array whose data start on a 64-byte boundary, where
``jnp.asarray`` copies it (about 25 ms for a C1 block's 67 MB of tokens; numpy's own allocations
are 16-byte aligned and would be copied too).  The aliased array must not be written afterwards:
every caller here fills a fresh buffer, hands it over, and keeps no reference.
"""

from __future__ import annotations

import numpy as np

from ._jax import jax

ALIGN = 64  # bytes: the boundary at which jax.device_put aliases a host buffer (jax 0.10, CPU)


def aligned_empty(shape) -> np.ndarray:
    """An uninitialised float64 array of ``shape`` whose data start on an ``ALIGN``-byte boundary."""
    size = int(np.prod(shape))
    buf = np.empty(size + ALIGN // 8)
    start = (-buf.ctypes.data % ALIGN) // 8
    return buf[start:start + size].reshape(shape)


def handover(a: np.ndarray) -> jax.Array:
    """``a`` as a JAX array, without a copy where ``a`` is aligned and contiguous (:func:`aligned_empty`),
    a copy otherwise; the caller must not write to ``a`` afterwards."""
    return jax.device_put(np.ascontiguousarray(a))
