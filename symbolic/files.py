"""Files for the derivation cache and for every output (the ground floor: imports nothing of the
project, so ``softlin`` imports it from here and ``symbolic`` never imports ``softlin``).

Atomic writes (a temporary file, then a rename: an interrupted job leaves no partial file, a failed
one no temporary file) and an exclusive lock for caches that several processes may fill at once."""

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
    """``text`` written atomically: to a temporary file in the same directory, then renamed."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


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
