"""Single place where jax is imported for the kernels: float64 on, persistent compilation cache.

The cache (``$SOFTLIN_JAX_CACHE``, default ``~/.cache/softlin/jax``; ``SOFTLIN_JAX_CACHE=off``
disables it) lets a workflow job reuse the executables another job compiled for the same shapes.
"""

import os

import jax

jax.config.update("jax_enable_x64", True)

_cache = os.environ.get("SOFTLIN_JAX_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "softlin", "jax")
if _cache != "off":
    jax.config.update("jax_compilation_cache_dir", _cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

import jax.numpy as jnp  # noqa: E402

__all__ = ["jax", "jnp"]
