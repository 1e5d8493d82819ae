"""Files for the derivation cache and for every output (the ground floor: imports nothing of the
project, so ``softlin`` imports it from here and ``symbolic`` never imports ``softlin``).

Atomic writes (a temporary file, then a rename: an interrupted job leaves no partial file, a failed
one no temporary file), seals of the outputs so written (:func:`seal`, checked by
:mod:`softlin.outputs`) and an exclusive lock for caches that several processes may fill at once."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp{path.suffix}")


class DiskFull(OSError):
    """ENOSPC (or a full quota) while writing a file: ``disk full while writing PATH``."""


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on a clean exit rename it onto ``path``.

    Whatever happens in the block (an error, a full disk, an interrupt) the temporary file is
    removed, so failed writes never accumulate hidden files.  ``ENOSPC`` / ``EDQUOT`` are re-raised
    as :class:`DiskFull` ("disk full while writing PATH")."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFull(err.errno, f"disk full while writing {path}") from err
        raise
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def write_text(path, text: str) -> None:
    """``text`` written atomically (a temporary file in the same directory, then renamed) and sealed."""
    with sealed_path(path) as tmp:
        tmp.write_text(text)


SEALS = Path(".softlin") / "seals"  # under the working directory: one file per sealed output


def seal_of(path) -> Path | None:
    """Where the seal of ``path`` is kept: ``.softlin/seals/<path relative to the working
    directory>.sha256``; None for a path outside the working directory (not a workflow output)."""
    here = Path.cwd()
    try:
        rel = Path(os.path.abspath(path)).relative_to(here)
    except ValueError:
        return None
    return here / SEALS / f"{rel}.sha256"


def file_sha256(path) -> str:
    """sha256 of a file's bytes (read in 1 MiB blocks)."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def seal(path) -> None:
    """Record ``path``'s sha256, size and modification time in its seal (:func:`seal_of`)."""
    where = seal_of(path)
    if where is None:
        return
    st = os.stat(path)
    with atomic_path(where) as tmp:
        tmp.write_text(f"{file_sha256(path)} {st.st_size} {st.st_mtime_ns}\n")


def unseal(path) -> None:
    """Remove the seal of ``path`` (before it is replaced, so a crash leaves it unsealed, not damaged)."""
    where = seal_of(path)
    if where is not None:
        with contextlib.suppress(OSError):
            where.unlink()


@contextlib.contextmanager
def sealed_path(path):
    """:func:`atomic_path` for a workflow output: the old seal removed first, the new one written
    once the file is in place."""
    unseal(path)
    with atomic_path(path) as tmp:
        yield tmp
    seal(path)


def seal_problem(path) -> str | None:
    """Why ``path`` is not the file its seal describes (size, then sha256 where the modification
    time moved), or None: intact, unsealed, or missing.  An intact file whose time moved (a
    ``touch``, a copy) gets its seal's time refreshed, so it is hashed once."""
    where = seal_of(path)
    if where is None or not where.is_file() or not os.path.isfile(path):
        return None
    try:
        digest, size, mtime = where.read_text().split()
        size, mtime = int(size), int(mtime)
    except (OSError, ValueError):
        return None  # a garbled seal says nothing about the file: leave it unsealed
    st = os.stat(path)
    if st.st_size != size:
        why = f"{st.st_size} bytes where {size} were written"
    elif st.st_mtime_ns == mtime:
        return None
    elif file_sha256(path) != digest:
        why = "its sha256 differs from the one written"
    else:
        why = None
    if why is not None:  # unless a job replaced file and seal meanwhile (a run beside this one)
        try:
            return why if where.read_text().split()[0] == digest else None
        except (OSError, IndexError):
            return None
    with contextlib.suppress(OSError):
        with atomic_path(where) as tmp:
            tmp.write_text(f"{digest} {size} {st.st_mtime_ns}\n")
    return None


@contextlib.contextmanager
def exclusive(path):
    """Hold an exclusive advisory lock on ``path`` (created if needed) for the ``with`` block.

    For caches filled on first use (the sympy derivations, the C++ kernel): processes started at
    once on an empty cache (the jobs of a fresh workflow run) wait for the first one instead of
    each redoing its work.  Where locking is not supported the block runs unlocked.
    """
    import fcntl

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a")
    except OSError:
        yield
        return
    with fh:
        try:
            fcntl.lockf(fh, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
