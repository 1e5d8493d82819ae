"""Atomic file output (a temporary file, then a rename): an interrupted job leaves no partial file;
an exclusive lock for caches that several processes may fill at once.  The file primitives live in
:mod:`symbolic.files` (the ground floor, which imports nothing of ``softlin``); npz and JSON here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from symbolic.files import DiskFull, atomic_path, exclusive, write_text  # noqa: F401  (re-exported)


def save_npz(path, **arrays) -> None:
    """``numpy.savez`` written atomically (no temporary file left behind on failure)."""
    with atomic_path(path) as tmp:
        np.savez(tmp, **{k: np.asarray(v) for k, v in arrays.items()})


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
