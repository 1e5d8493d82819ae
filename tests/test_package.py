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
import softlin, symbolic
names = ["softlin", "symbolic"]
for pkg in (softlin, symbolic):
    names += [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
for name in names:
    importlib.import_module(name)
print(softlin.__file__)
print(" ".join(names))
print(" ".join(sorted(m for m in sys.modules if m == "snakemake" or m.startswith("snakemake."))))
"""


def _module_files():
    """Every module of the two packages, as dotted names read from the checkout's files."""
    out = set()
    for pkg in ("softlin", "symbolic"):
        for f in (ROOT / pkg).rglob("*.py"):
            parts = f.relative_to(ROOT).with_suffix("").parts
            out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_importing_every_module_leaves_snakemake_out():
    """Every module of softlin and symbolic (each file of the checkout), imported in a fresh
    interpreter (this checkout first on the path), leaves ``snakemake`` out of ``sys.modules``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True, timeout=300)
    path, names, smk = (out.stdout.splitlines() + ["", "", ""])[:3]
    assert Path(path).resolve().is_relative_to(ROOT / "softlin"), path
    assert set(names.split()) == _module_files(), set(names.split()) ^ _module_files()
    assert smk == "", f"importing softlin and symbolic pulled in {smk}"


def test_snakemake_is_not_a_dependency_of_the_library():
    """Snakemake is the optional extra ``workflow`` (the Makefile installs it), never a dependency."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(r.lower().startswith("snakemake") for r in project["dependencies"])
    assert any(r.startswith("snakemake") for r in project["optional-dependencies"]["workflow"])
    assert ".[workflow" in (ROOT / "Makefile").read_text()


def test_version_has_one_source():
    """pyproject.toml writes the version; the package reads it from the installed metadata."""
    written = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert softlin.__version__ == importlib.metadata.version("softlin")
    assert written not in (ROOT / "softlin" / "__init__.py").read_text()


def test_docstrings_cite_the_repository_only():
    """References point into the repository: no ``SPEC`` or ``shared/`` file outside it, and every
    ``docs/maths.md#anchor`` cited (``#a, #b`` lists included) exists in docs/maths.md."""
    import re

    anchors = set(re.findall(r'<a id="([\w-]+)"></a>', (ROOT / "docs" / "maths.md").read_text()))
    files = [p for d in ("softlin", "symbolic", "workflow", "bench", "tests") for p in (ROOT / d).rglob("*")
             if p.is_file() and p.suffix in {".py", ".smk", ".rst", ".json", ".cc", ".h", ".yaml"}]
    files += [ROOT / "Snakefile", ROOT / "README.md", *(ROOT / "config").rglob("*.yaml"), ROOT / "config" / "README.md"]
    for f in files:
        text = f.read_text()
        if f.name == "test_package.py":
            continue
        assert not re.search(r"\bSPEC\b|shared/", text), f
        for m in re.finditer(r"docs/maths\.md((?:#[\w-]+(?:, )?)+)", text):
            cited = set(re.findall(r"#([\w-]+)", m.group(1)))
            assert cited <= anchors, (f, cited - anchors)


def test_preset_note_wraps_between_words_never_inside_a_number():
    """A figure's preset note keeps '40 000' on one line wherever the wrap falls."""
    from softlin.plots import preset_note

    desc = "candidate converged variant, the same task and models with Adam (lr 1e-1, cosine decay, 40 000 steps) instead of SGD"
    for width in range(40, 110):
        lines = preset_note("default", desc, width).strip("\n").split("\n")
        assert all(len(line) <= width for line in lines)
        assert " ".join(lines).replace("\u00a0", " ") == f"[preset 'default': {desc}]"
        assert not any(line.rstrip().endswith("40") for line in lines), (width, lines)


def _imports(path: Path) -> set[str]:
    """Top-level packages and absolute modules a file imports (every import statement, lazy ones
    inside functions included), read from its syntax tree."""
    import ast

    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
    return out


def test_symbolic_imports_nothing_of_softlin():
    """One direction: the derivations sit below the numerics. No file of symbolic/ imports softlin
    (at module level or inside a function); softlin may import symbolic."""
    offenders = {f.name: sorted(m for m in _imports(f) if m == "softlin" or m.startswith("softlin."))
                 for f in (ROOT / "symbolic").rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}
    # the probe sees a real import (not a vacuous pass): softlin.io imports symbolic.files
    assert "symbolic.files" in _imports(ROOT / "softlin" / "io.py")


def _module_graph() -> dict[str, set[str]]:
    """{module: the project modules it imports}, every import statement (lazy ones included, relative
    ones resolved), read from the syntax trees of softlin/ and symbolic/ (independent of the
    workflow's closure in softlin/code_inputs.py)."""
    import ast

    files = {}
    for f in list((ROOT / "softlin").rglob("*.py")) + list((ROOT / "symbolic").rglob("*.py")):
        parts = f.relative_to(ROOT).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    graph = {}
    for name, f in files.items():
        package = name if f.name == "__init__.py" else name.rpartition(".")[0]
        out = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                cands = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                cands = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            out |= {c for c in cands if c in files and c != name}
        graph[name] = out
    return graph


def test_import_graph_has_no_circle_and_no_module_is_long():
    """No import circle among the project's modules, lazy imports included (a strongly connected
    component of more than one module), and no module of softlin/ or symbolic/ over about 400 lines."""
    graph = _module_graph()
    assert graph["softlin.population"] >= {"softlin.models", "softlin.train"}  # the probe sees imports
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert circles == []
    long = {str(f.relative_to(ROOT)): n for f in list((ROOT / "softlin").rglob("*.py")) + list((ROOT / "symbolic").rglob("*.py"))
            if (n := len(f.read_text().splitlines())) > 410}
    assert long == {}
