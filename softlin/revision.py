"""The git revision of the code a result was made with, read when the result is written (never a
workflow input, so a commit does not make Snakemake rerun anything).

:func:`code_revision` gives ``<40-hex commit>``, ``<commit>-dirty`` (uncommitted changes, untracked
files included, under :data:`CODE_PATHS`) or ``unknown`` (not a git checkout, e.g. a tarball or the
SLURM smoke test's copy; no ``git``; git refusing the directory).  It never raises.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout holding softlin/
CODE_PATHS = ("softlin", "symbolic", "workflow", "config", "Snakefile", "pyproject.toml")
UNKNOWN = "unknown"
LINE = "Code revision: "  # the one line a verdict page gives it (docs: compare results without it)


def _git(root: Path, *args: str) -> str | None:
    """``git -C root args`` stdout stripped, or None when git is missing, fails or hangs (20 s)."""
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                             timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def code_revision(root=ROOT) -> str:
    """``<commit>``, ``<commit>-dirty`` or ``unknown`` for the checkout ``root`` (its own top level:
    a package copied into some other repository is ``unknown``, not that repository's commit)."""
    root = Path(root).resolve()
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root:
        return UNKNOWN
    commit = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    changes = _git(root, "status", "--porcelain", "--untracked-files=normal", "--", *CODE_PATHS)
    if not commit or changes is None:
        return UNKNOWN
    return commit + ("-dirty" if changes else "")


def revision_line(revision: str) -> str:
    """The line a verdict page carries: ``Code revision: <revision>``."""
    return f"{LINE}{revision}"
