"""On-disk cache of derivations: pickle keyed by (id, version, sympy version, source of symbolic/).

The source digest makes any edit of a derivation, or of the tools it uses, a cache miss, so a
stale result can never be served after the code changed (the version string need not be bumped).
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
from pathlib import Path

import sympy as sp

from softlin.io import exclusive


def cache_dir() -> str:
    """$SOFTLIN_SYMBOLIC_CACHE, else ~/.cache/softlin-symbolic."""
    return os.environ.get("SOFTLIN_SYMBOLIC_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "softlin-symbolic")


def files_digest(paths) -> str:
    """sha256 over the names and contents of ``paths`` (order-independent): a code version."""
    h = hashlib.sha256()
    for p in sorted(str(x) for x in paths):
        h.update(Path(p).name.encode() + b"\0" + Path(p).read_bytes() + b"\0")
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """:func:`files_digest` of every ``symbolic/*.py`` file."""
    return files_digest(Path(__file__).parent.glob("*.py"))


def _path(did: str, version: str) -> str:
    key = hashlib.sha256(f"{did}|{version}|sympy-{sp.__version__}|src-{source_digest()}".encode()).hexdigest()[:16]
    return os.path.join(cache_dir(), f"{did}-{key}.pkl")


def _load(path: str):
    """The cached value, or None when absent, corrupt or incompatible."""
    if os.path.exists(path):
        try:
            with open(path, "rb") as fh:
                return (pickle.load(fh),)
        except Exception:  # corrupt / incompatible entry: recompute
            pass
    return None


def cached_call(did: str, version: str, fn, fresh: bool = False):
    """Return fn() from the cache, computing and storing it on a miss (or when fresh).  A miss is
    computed under a lock: processes missing the same entry at once wait for the first one."""
    path = _path(did, version)
    got = None if fresh else _load(path)
    if got is not None:
        return got[0]
    with exclusive(f"{path}.lock"):
        got = None if fresh else _load(path)
        if got is not None:
            return got[0]
        return _store(path, fn())


def _store(path: str, out):
    """Write ``out`` to the cache atomically (a failed write only loses the caching); return it."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            pickle.dump(out, fh)
        os.replace(tmp, path)
    except OSError:
        pass
    return out
