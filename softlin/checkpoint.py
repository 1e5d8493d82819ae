"""Resumable runs: a settings fingerprint, atomic checkpoints that keep the previous one, unreadable
files set aside, and a SIGINT / SIGTERM guard that stops a loop between compiled chunks."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import records
from ._jax import jax, jnp
from .outputs import set_aside


def fingerprint(**settings) -> str:
    """Hash of everything a run's trajectory depends on except its length (so longer runs resume)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def previous_checkpoint(path) -> Path:
    """Where :func:`save_checkpoint` keeps the checkpoint before the last one (``L10.prev.npz``)."""
    path = Path(path)
    return path.with_name(f"{path.stem}.prev{path.suffix}")


class Checkpoint(NamedTuple):
    """What a checkpoint file holds (one :mod:`softlin.records` record): the training state's
    ``params``, ``opt`` and ``step``, the logged ``losses`` ``{model: (runs, windows so far)}`` and
    the settings' ``fingerprint``."""

    params: dict
    opt: dict
    step: object
    losses: dict
    fingerprint: object


def save_checkpoint(path, state, losses: dict, fp: str) -> None:
    """Write the state atomically, keeping the previous checkpoint as :func:`previous_checkpoint`
    (a checkpoint that later fails to load leaves one to resume from)."""
    path = Path(path)
    if path.exists():
        os.replace(path, previous_checkpoint(path))
    records.save(path, Checkpoint(state.params, state.opt, state.step, dict(losses), np.array(fp)))


def _read_checkpoint(path: Path, like, fp: str):
    """(state, losses) read against the template ``like`` (the state training starts from), or
    None when the file was written by other settings (its fingerprint, read first, differs)."""
    head = Checkpoint(None, None, None, None, np.array(fp))
    if str(records.load(path, head, partial=True, keep_damaged=True).fingerprint) != fp:
        return None
    runs = {m: jax.tree.leaves(p)[0].shape[0] for m, p in like.params.items()}
    got = records.load(path, Checkpoint(like.params, like.opt, like.step,
                                        {m: records.Spec((n, None), np.float64) for m, n in runs.items()},
                                        np.array(fp)), keep_damaged=True)
    params, opt, step = jax.tree.map(jnp.asarray, (got.params, got.opt, got.step))
    return like._replace(params=params, opt=opt, step=step), got.losses


def load_checkpoint(path, like, fp: str, report=None):
    """(state, losses) from ``path`` (or, when it is missing or unreadable, from the previous
    checkpoint) if written by the same settings, else None.  A checkpoint that fails to load is
    reported with its path (``report``, and a warning) and set aside (:func:`set_aside`)."""
    import warnings

    path = Path(path)
    for cand in (path, previous_checkpoint(path)):
        if not cand.exists():
            continue
        try:
            return _read_checkpoint(cand, like, fp)
        except Exception as err:  # truncated, garbled, missing entries: set it aside, fall back
            new = set_aside(cand)
            msg = (f"checkpoint {cand} does not load ({type(err).__name__}: {str(err)[:120]}): "
                   f"set aside as {new.name}; resuming from the previous checkpoint or step 0")
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            if report:
                report(msg)
    return None


class Stop:
    """SIGINT / SIGTERM during training: recorded here by the handler, acted on by the loop
    (which waits for a chunk in short polls, so it notices within a fraction of a second): the
    process reports where its last checkpoint is and exits with status 128 + the signal number."""

    def __init__(self):
        self.signum = None
        self.saved = {}

    def __enter__(self):
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._handler)
        return self

    def _handler(self, signum, frame):
        self.signum = signum

    def __exit__(self, *exc):
        import signal

        for sig, old in self.saved.items():
            signal.signal(sig, old)
        return False

    def wait(self, tree) -> bool:
        """Block until every array of ``tree`` is computed or a signal came; True if one came."""
        leaves = [x for x in jax.tree.leaves(tree) if hasattr(x, "is_ready")]
        while self.signum is None and not all(x.is_ready() for x in leaves):
            time.sleep(0.02)
        return self.signum is not None

    def stop(self, checkpoint, progress) -> None:
        import signal

        name = signal.Signals(self.signum).name
        where = "no checkpoint" if checkpoint is None else f"the last checkpoint {checkpoint} is kept"
        msg = f"stopped by {name}: {where}; rerun to resume"
        if progress:
            progress(msg)
        # a computation still in flight would hold the interpreter's exit until it ends (a whole
        # chunk, minutes at the paper's settings): leave at once, the files on disk are complete
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + self.signum)
