"""Resumable runs: a settings fingerprint, atomic checkpoints that keep the previous one, unreadable
files set aside, and a SIGINT / SIGTERM guard that stops a loop between compiled chunks."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from ._jax import jax, jnp
from .io import save_npz


def fingerprint(**settings) -> str:
    """Hash of everything a run's trajectory depends on except its length (so longer runs resume)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def previous_checkpoint(path) -> Path:
    """Where :func:`save_checkpoint` keeps the checkpoint before the last one (``L10.prev.npz``)."""
    path = Path(path)
    return path.with_name(f"{path.stem}.prev{path.suffix}")


def save_checkpoint(path, state, losses: dict, fp: str) -> None:
    """Write the state atomically, keeping the previous checkpoint as :func:`previous_checkpoint`
    (a checkpoint that later fails to load leaves one to resume from)."""
    path = Path(path)
    leaves = jax.tree.leaves((state.params, state.opt))
    if path.exists():
        os.replace(path, previous_checkpoint(path))
    save_npz(path, step=np.asarray(state.step), fingerprint=np.array(fp),
             **{f"loss_{m}": x for m, x in losses.items()},
             **{f"leaf{i}": np.asarray(x) for i, x in enumerate(leaves)})


def set_aside(path) -> Path:
    """Rename an unreadable file to ``<name>.corrupt[-N]<suffix>`` beside it; return the new path."""
    path = Path(path)
    for n in range(1000):
        new = path.with_name(f"{path.stem}.corrupt{'' if n == 0 else f'-{n}'}{path.suffix}")
        if not new.exists():
            os.replace(path, new)
            return new
    raise FileExistsError(f"too many set-aside copies of {path}")


def _read_checkpoint(path: Path, like, fp: str):
    with np.load(path) as f:
        if str(f["fingerprint"]) != fp:
            return None
        treedef = jax.tree.structure((like.params, like.opt))
        leaves = [jnp.asarray(f[f"leaf{i}"]) for i in range(treedef.num_leaves)]
        params, opt = jax.tree.unflatten(treedef, leaves)
        losses = {m: np.asarray(f[f"loss_{m}"]) for m in like.params}
        return like._replace(params=params, opt=opt, step=jnp.asarray(f["step"])), losses


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
