"""On-disk cache of derivations: pickle keyed by (id, version, sympy version, source of symbolic/),
stored behind a sha256 of its bytes that is checked on every load.

The source digest makes any edit of a derivation, or of the tools it uses, a cache miss, so a
stale result can never be served after the code changed (the version string need not be bumped).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import warnings
from pathlib import Path

import sympy as sp

from .files import atomic_path, exclusive


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
    key = hashlib.sha256(f"{did}|{version}|sympy-{sp.__version__}|src-{source_digest()}|fmt-2".encode()).hexdigest()[:16]
    return os.path.join(cache_dir(), f"{did}-{key}.pkl")


_MAGIC = b"softlin-symbolic-cache v2 sha256 "


def _pack(out) -> bytes:
    """An entry's bytes: a header with the sha256 of the pickle, then the pickle."""
    payload = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
    return _MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def _unpack(blob: bytes):
    """The value of an entry's bytes; ValueError when the header or the digest does not match."""
    head, sep, payload = blob.partition(b"\n")
    if not sep or not head.startswith(_MAGIC):
        raise ValueError("no digest header")
    if hashlib.sha256(payload).hexdigest().encode() != head[len(_MAGIC):]:
        raise ValueError("content digest mismatch")
    return pickle.loads(payload)


def _load(path: str):
    """The cached value (in a 1-tuple), or None when absent.  An entry whose digest does not match
    its content, or that fails to unpickle, is reported (one warning), removed and recomputed."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except FileNotFoundError:
        return None
    except OSError as err:
        warnings.warn(f"softlin: symbolic cache entry {path} unreadable ({err}): recomputing",
                      RuntimeWarning, stacklevel=3)
        return None
    try:
        return (_unpack(blob),)
    except Exception as err:  # corrupt (bit flip, truncation) or incompatible entry: remove, recompute
        warnings.warn(f"softlin: symbolic cache entry {path} is corrupt ({type(err).__name__}: "
                      f"{str(err)[:100]}): removed, recomputing", RuntimeWarning, stacklevel=3)
        with contextlib.suppress(OSError):
            os.remove(path)
        return None


def cached_call(did: str, version: str, fn, fresh: bool = False, in_seed0_child: bool = False):
    """Return fn() from the cache, computing and storing it on a miss (or when fresh).  A miss is
    computed under a lock: processes missing the same entry at once wait for the first one.
    ``in_seed0_child``: compute a miss in a fresh process under a fixed hash seed (a registered
    derivation, which that process can look up by ``did``: :func:`_compute_seed0`)."""
    path = _path(did, version)
    got = None if fresh else _load(path)
    if got is not None:
        return got[0]
    if os.environ.get(_CHILD) == did:  # the child of _compute_seed0: its parent holds the lock
        return _store(path, fn())
    with exclusive(f"{path}.lock"):
        got = None if fresh else _load(path)
        if got is not None:
            return got[0]
        got = _compute_seed0(did, path) if in_seed0_child else None
        return got[0] if got is not None else _store(path, fn())


_CHILD = "SOFTLIN_SYMBOLIC_COMPUTE"


def _compute_seed0(did: str, path: str):
    """Compute derivation ``did`` in a fresh child process with ``PYTHONHASHSEED=0`` and load what
    it stored; None when the child did not store it (the caller then computes it here).

    sympy's integrate / simplify may return different (equal) forms depending on the iteration
    order of sets and dicts, which follows the hash seed and the process's history (S5's erf term
    came out two ways), so a derivation computed in whatever process missed the cache would not
    print byte-identically from run to run: a fresh process under a fixed seed always gives the
    same form."""
    import subprocess
    import sys

    here = str(Path(__file__).resolve().parent.parent)  # this copy of the package, first on the path
    env = dict(os.environ, PYTHONHASHSEED="0", **{_CHILD: did},
               PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))
    code = "import sys, symbolic\nsymbolic.get(sys.argv[1], fresh=True)\n"
    try:
        subprocess.run([sys.executable, "-c", code, did], env=env, check=True, capture_output=True, timeout=3600)
    except (OSError, subprocess.SubprocessError):
        return None
    return _load(path)


def _store(path: str, out):
    """Write ``out`` to the cache atomically, with its digest (a failed write, a full disk
    included, only loses the caching and leaves no temporary file); return it."""
    try:
        with atomic_path(path) as tmp:
            tmp.write_bytes(_pack(out))
    except OSError:
        pass
    return out
