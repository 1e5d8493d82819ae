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


def _drop_unreadable_cache_entries() -> None:
    """A JAX cache entry that fails to read (truncated, garbled) is reported once, removed, and
    the program compiled again (JAX itself warns on every run and keeps the entry forever)."""
    import warnings

    try:
        from jax._src import compilation_cache as cc
        from jax._src import lru_cache
    except ImportError:  # another JAX layout: its own behaviour (warn, recompile)
        return
    read = getattr(cc, "get_executable_and_time", None)
    if read is None or getattr(read, "_softlin", False):
        return

    def checked(cache_key, *args, **kwargs):
        try:
            return read(cache_key, *args, **kwargs)
        except Exception as err:
            entry = os.path.join(_cache, f"{cache_key}{getattr(lru_cache, '_CACHE_SUFFIX', '-cache')}")
            for path in (entry, os.path.join(_cache, f"{cache_key}{getattr(lru_cache, '_ATIME_SUFFIX', '-atime')}")):
                try:
                    os.remove(path)
                except OSError:
                    pass
            warnings.warn(f"softlin: JAX compilation cache entry {entry} unreadable "
                          f"({type(err).__name__}: {str(err)[:100]}): removed, compiling again",
                          RuntimeWarning, stacklevel=2)
            return None, None

    checked._softlin = True
    cc.get_executable_and_time = checked


if _cache != "off":
    _drop_unreadable_cache_entries()

import jax.numpy as jnp  # noqa: E402

__all__ = ["jax", "jnp"]
