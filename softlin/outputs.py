"""Outputs verified before they are trusted: a damaged file (truncated, a flipped bit, not what its
seal says: :func:`symbolic.files.seal`) is set aside as ``<name>.corrupt<suffix>`` beside it, and
reported with the command that rebuilds it; being missing then, the workflow rebuilds it.

Two places check: :func:`check_outputs`, called by the workflow before it plans (every sealed
file under ``results/`` and ``figures/``; a file whose size and time are those sealed is not
read), and the readers (:func:`softlin.records.load`, :func:`softlin.io.load_json`,
:func:`softlin.io.load_csv`), which raise :class:`DamagedOutput` for a file that does not read.
"""

from __future__ import annotations

import os
from pathlib import Path

from symbolic.files import SEALS, seal_problem, unseal

ROOTS = ("results", "figures")


class DamagedOutput(ValueError):
    """A workflow output does not read or does not match its seal; it has been set aside."""


def set_aside(path) -> Path:
    """Rename an unreadable file to ``<name>.corrupt[-N]<suffix>`` beside it; return the new path."""
    path = Path(path)
    for n in range(1000):
        new = path.with_name(f"{path.stem}.corrupt{'' if n == 0 else f'-{n}'}{path.suffix}")
        if not new.exists():
            os.replace(path, new)
            unseal(path)
            return new
    raise FileExistsError(f"too many set-aside copies of {path}")


def is_output(path) -> bool:
    """Whether ``path`` lies under one of the workflow's output folders (:data:`ROOTS`) of the
    working directory (only those are ever set aside)."""
    rel = os.path.relpath(os.path.abspath(path))
    return not rel.startswith("..") and Path(rel).parts[0] in ROOTS


def rebuild_command(path) -> str:
    """The command that rebuilds ``path`` (a target of the workflow, run in its working directory)."""
    rel = os.path.relpath(path)
    return f"snakemake {rel if not rel.startswith('..') else os.path.abspath(path)}"


def damaged(path, why: str) -> DamagedOutput:
    """Set ``path`` aside (a workflow output only: :func:`is_output`) and return the error that
    says so (one line: the file, why, the fix)."""
    if not is_output(path):
        return DamagedOutput(f"{path} is damaged ({why})")
    new = set_aside(path)
    return DamagedOutput(f"{path} is damaged ({why}): set aside as {new.name}; "
                         f"rerun to rebuild it (`{rebuild_command(path)}`)")


def _sealed_files(roots):
    """The files under ``roots`` (relative to the working directory) that have a seal."""
    for root in roots:
        for dirpath, _, names in os.walk(SEALS / root):
            for name in sorted(names):
                if name.endswith(".sha256"):
                    yield Path(os.path.relpath(os.path.join(dirpath, name[: -len(".sha256")]), SEALS))


def check_outputs(roots=ROOTS, say=print) -> list[str]:
    """Every sealed output under ``roots`` checked against its seal; each damaged one set aside and
    reported in one line (``say``); returns the messages."""
    out = []
    for path in _sealed_files(roots):
        why = seal_problem(path)
        if why is not None:
            msg = str(damaged(path, why)).replace("rerun to rebuild it", "a run rebuilds it")
            say(f"softlin: {msg}")
            out.append(msg)
    return out


def verified(path) -> Path:
    """``path``, after its seal is checked (:class:`DamagedOutput` if it does not match)."""
    why = seal_problem(path)
    if why is not None:
        raise damaged(path, why)
    return Path(path)
