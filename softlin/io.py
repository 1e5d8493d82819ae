"""Atomic file output (a temporary file, then a rename): an interrupted job leaves no partial file;
an exclusive lock for caches that several processes may fill at once."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path

import numpy as np

from .params import Params


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


def save_npz(path, **arrays) -> None:
    """``numpy.savez`` written atomically (no temporary file left behind on failure)."""
    with atomic_path(path) as tmp:
        np.savez(tmp, **{k: np.asarray(v) for k, v in arrays.items()})


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


def save_json(path, obj) -> None:
    """JSON (indented, floats as Python floats) written atomically."""
    write_text(path, json.dumps(obj, indent=2, default=_default) + "\n")


def _default(x):
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x)}")


def load_json(path):
    return json.loads(Path(path).read_text())


def trajectory_arrays(prefix: str, traj) -> dict:
    """Flatten a Trajectory into npz entries ``{prefix}_U``, ``_v``, ``_loss``, ``_step``, ``_final_U``, ``_final_v``."""
    return {f"{prefix}_U": traj.params.U, f"{prefix}_v": traj.params.v, f"{prefix}_loss": traj.loss,
            f"{prefix}_step": traj.step, f"{prefix}_final_U": traj.final.U,
            f"{prefix}_final_v": traj.final.v}


def trajectory_from(npz, prefix: str):
    """Inverse of :func:`trajectory_arrays`: (recorded Params, loss, step, final Params), numpy."""
    return (Params(npz[f"{prefix}_U"], npz[f"{prefix}_v"]), npz[f"{prefix}_loss"],
            npz[f"{prefix}_step"], Params(npz[f"{prefix}_final_U"], npz[f"{prefix}_final_v"]))
