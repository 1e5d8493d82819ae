"""On-disk cache of derivations keyed by (id, version, sympy version, source of symbolic/): JSON with
sympy objects as srepr, behind a sha256 checked on every load, read without running code
(:mod:`symbolic.entries`; a forged entry can at worst be refused).  A cache folder that cannot be
written is reported once and replaced by a temporary folder for this process and its children
(:func:`cache_dir`), so the seed-0 computations and printing still go through it.

The source digest makes any edit of a derivation, or of the tools it uses, a cache miss, so a
stale result can never be served after the code changed (the version string need not be bumped).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import sympy as sp

from . import entries
from .files import atomic_path, exclusive

_FALLBACK: dict[str, str] = {}  # an unwritable cache folder -> this process's temporary one


def cache_dir() -> str:
    """$SOFTLIN_SYMBOLIC_CACHE, else ~/.cache/softlin-symbolic; where that folder cannot be
    written, a temporary folder of this process (one warning; removed at exit)."""
    wanted = os.environ.get("SOFTLIN_SYMBOLIC_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "softlin-symbolic")
    if wanted not in _FALLBACK:
        why = _unwritable(wanted)
        _FALLBACK[wanted] = wanted
        if why:
            import atexit

            tmp = tempfile.mkdtemp(prefix="softlin-symbolic-")
            atexit.register(shutil.rmtree, tmp, True)
            _FALLBACK[wanted] = tmp
            warnings.warn(f"softlin: the symbolic cache {wanted} cannot be written ({why}): using {tmp} "
                          "for this process, so every derivation is recomputed once per process",
                          RuntimeWarning, stacklevel=2)
    return _FALLBACK[wanted]


def _unwritable(folder: str) -> str | None:
    """Why a file cannot be created in ``folder`` (created if missing), or None."""
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError as err:
        return f"{type(err).__name__}: {err.strerror or err}"
    return None


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
    key = hashlib.sha256(f"{did}|{version}|sympy-{sp.__version__}|src-{source_digest()}|fmt-3".encode()).hexdigest()[:16]
    return os.path.join(cache_dir(), f"{did}-{key}.json")


def _load(path: str):
    """The cached value (in a 1-tuple), or None when absent.  An entry whose digest does not match
    its content, or that does not decode, is reported (one warning), removed and recomputed."""
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
        return (entries.unpack(blob),)
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
    order of sets and dicts, which follows the hash seed and the process's history, so a
    derivation computed in whatever process missed the cache would not print byte-identically
    from run to run: a fresh process under a fixed seed gives the same history.  (S5's erf term,
    which came out two ways even here, followed sympy's per-process random numbering of ``Dummy``
    symbols: :func:`symbolic.core.canonical_sympy_state` fixes it before every derivation.)"""
    import subprocess
    import sys

    here = str(Path(__file__).resolve().parent.parent)  # this copy of the package, first on the path
    env = dict(os.environ, PYTHONHASHSEED="0", SOFTLIN_SYMBOLIC_CACHE=cache_dir(), **{_CHILD: did},
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
            tmp.write_bytes(entries.pack(out))
    except OSError:
        pass
    return out
