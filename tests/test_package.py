"""The package stands apart from the workflow: no module imports Snakemake; one version source."""
import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import softlin

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import importlib, pkgutil, sys
import softlin
names = [m.name for m in pkgutil.walk_packages(softlin.__path__, "softlin.")]
for name in names:
    importlib.import_module(name)
print(softlin.__file__)
print(" ".join(names))
print(" ".join(sorted(m for m in sys.modules if m == "snakemake" or m.startswith("snakemake."))))
"""


def test_importing_every_module_leaves_snakemake_out():
    """Every softlin module, imported in a fresh interpreter (this checkout first on the path),
    leaves ``snakemake`` out of ``sys.modules``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True, timeout=300)
    path, names, smk = (out.stdout.splitlines() + ["", "", ""])[:3]
    assert Path(path).resolve().is_relative_to(ROOT / "softlin"), path
    names = names.split()
    assert {"softlin.verdict", "softlin.plots", "softlin.claims.c3"} <= set(names), names
    assert smk == "", f"importing softlin pulled in {smk}"


def test_version_has_one_source():
    """pyproject.toml writes the version; the package reads it from the installed metadata."""
    written = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert softlin.__version__ == importlib.metadata.version("softlin")
    assert written not in (ROOT / "softlin" / "__init__.py").read_text()
