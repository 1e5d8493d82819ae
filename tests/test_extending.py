"""docs/extending.md cannot go stale: its toy claim C6 and toy derivation S8, applied block by block
to a scratch copy of the repository exactly as the page writes them, plan in a dry run, appear in
the verdict table's inputs and the rule ``symbolic``'s outputs, and pass the registry's own tests."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import ROOT, SMOKE, SNAKEMAKE, copy_repo

MARKER = re.compile(r"^<!-- toy: (\S+) (.+?) -->\n```\w*\n(.*?)```", re.S | re.M)


def toy_steps(text: str) -> list[tuple[str, str, str, str]]:
    """The page's marked blocks as ``(mode, anchor, path, block)``."""
    out = []
    for mode, rest, block in MARKER.findall(text):
        anchor, _, path = rest.rpartition(" ") if mode in ("into", "before") else ("", "", rest)
        out.append((mode, anchor, path, block))
    return out


def apply_step(root: Path, mode: str, anchor: str, path: str, block: str) -> None:
    """One marked block put where its marker says (docs/extending.md's opening paragraph)."""
    f = root / path
    if mode == "create":
        assert not f.exists(), path
        f.write_text(block)
        return
    text = f.read_text()
    if mode == "append":
        f.write_text(text.rstrip("\n") + "\n" + block)
        return
    lines = text.splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith(anchor))
    if mode == "into":  # before the closing bracket (column 0) of the block opened at `anchor`
        start = next(i for i in range(start + 1, len(lines)) if lines[i].rstrip() in ("}", ")", "]"))
    else:
        assert mode == "before", mode
    f.write_text("".join(lines[:start]) + block + "".join(lines[start:]))


def test_toy_claim_and_derivation_through_the_documented_path(tmp_path):
    steps = toy_steps((ROOT / "docs" / "extending.md").read_text())
    assert {p for _, _, p, _ in steps} >= {"softlin/claims/registry.py", "Snakefile", "symbolic/registry.py"}
    repo = copy_repo(tmp_path / "repo")
    shutil.copytree(ROOT / "docs", repo / "docs")
    (repo / "tests").mkdir()
    for name in ("test_registry.py", "test_config_doc.py"):
        shutil.copy2(ROOT / "tests" / name, repo / "tests" / name)
    for step in steps:
        apply_step(repo, *step)
    env = dict(os.environ, PYTHONPATH=str(repo))
    dry = subprocess.run([*SNAKEMAKE, "c6", "verdict_overview", "symbolic", "-n", "--cores", "1", *SMOKE],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    for job in ("c6_metrics", "c6_verdict", "verdict_overview", "symbolic"):
        assert re.search(rf"^{job}\s+1$", out, re.M), (job, out[-3000:])
    overview = out.split("rule verdict_overview:")[1].split("\n\n")[0]
    assert "results/c6/verdict.json" in overview, overview  # the table reads the registry
    assert "Symbolic: deriving S1-S8 with sympy" in out  # the rule's message: its outputs, from the same ids
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                            "tests/test_registry.py", "tests/test_config_doc.py"],
                           cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert tests.returncode == 0, tests.stdout[-3000:]
