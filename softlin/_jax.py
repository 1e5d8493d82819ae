"""Single place where jax is imported for the kernels: float64 on, persistent compilation cache.

The cache (``$SOFTLIN_JAX_CACHE``, default ``~/.cache/softlin/jax``; ``SOFTLIN_JAX_CACHE=off``
disables it) lets a workflow job reuse the executables another job compiled for the same shapes.

Why at import time: JAX's settings are process-wide and ``jax_enable_x64`` must hold before the
first array is made (an array made before it stays float32), so every module takes ``jax``/``jnp``
from here and gets float64 whatever imports first; an explicit ``setup()`` each entry point (rule
scripts, tests, benches, ``python -m``) had to call would be forgotten once and silently compute in
float32.  The updates use only JAX's public ``jax.config``.

Why one private hook remains (:func:`_drop_unreadable_cache_entries`, issue 25): an entry that
fails to read (truncated, garbled) is, in JAX 0.10, warned about and compiled again on every run,
and never replaced (``LRUCache.put`` keeps an existing key).  JAX has no public hook for it:
``jax_raise_persistent_cache_errors`` only turns the warning into an exception at the ``jit``
call, naming the module, not the entry; checking every entry at import would read the whole cache
each start and still need JAX's private format.  The hook wraps
``jax._src.compilation_cache.get_executable_and_time`` (no other change), is skipped where that
name is missing (JAX's own behaviour then: warn, recompile), and tests/test_caches.py
(``test_unreadable_jax_cache_entry_is_removed``) fails on a JAX whose layout drops it, so an
upgrade cannot lose it silently.
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
