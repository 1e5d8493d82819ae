"""The project source files a workflow script runs: the script and every softlin / symbolic module it
reaches through import statements (read with :mod:`ast`, lazy imports inside functions included).

A rule lists them as inputs (workflow/rules/common.smk ``code_inputs``), so editing any of them
reruns it, and the list cannot drift from the code.  Each file's imports are parsed once per
process and cached by (path, mtime, size): a dry run parses about 80 files once.
"""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

PROJECT_PACKAGES = ("softlin", "symbolic")
NATIVE_USERS = {"softlin.kernels.build"}  # modules that build and load the C++ library (its sources: KERNEL_DIR)
KERNEL_DIR = Path("softlin") / "kernels" / "csrc"


def dynamic_imports(root: Path) -> dict[str, list[str]]:
    """Modules reached without an import statement: the package ``symbolic``'s lazy names register
    every derivation (its modules ``symbolic/sN_*.py``); ``symbolic.core.get(id)`` imports only that
    derivation's module, which the module calling it imports."""
    return {"symbolic": ["symbolic.core"] + [f"symbolic.{p.stem}" for p in
                                             sorted((root / "symbolic").glob("s[0-9]*_*.py"))]}


@functools.lru_cache(maxsize=None)
def module_file(root: Path, name: str) -> Path | None:
    """The source file of a project module ``softlin.x.y`` under ``root`` (a package's __init__.py), or None."""
    base = root.joinpath(*name.split("."))
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    return None


def _absolute(module: str | None, level: int, package: str) -> str:
    """The absolute name of ``from <level dots><module> import ...`` in ``package``."""
    if not level:
        return module or ""
    parts = package.split(".")[: len(package.split(".")) - level + 1]
    return ".".join(parts + ([module] if module else []))


def _statements(body: list):
    """Every statement of ``body`` and of the blocks nested in it (functions, classes, if / try / with
    / for / match bodies): where an import statement can be; expressions are not visited (3x faster
    than ``ast.walk``)."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            sub = getattr(node, field, None)
            if isinstance(sub, list):
                yield from _statements(sub)


@functools.lru_cache(maxsize=None)
def _parsed(root: Path, path: Path, mtime_ns: int, size: int, package: str) -> tuple[frozenset, frozenset]:
    """:func:`imported_modules`, cached by the file's (path, mtime, size)."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    names = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            subs = [f"{base}.{a.name}" for a in node.names]
            found = [n for n in subs if module_file(root, n)]
            names += found + ([base] if len(found) < len(subs) else [])  # attributes of `base` itself
    used = {n for n in names if n.split(".")[0] in PROJECT_PACKAGES and module_file(root, n)}
    parents = {".".join(n.split(".")[:k]) for n in used for k in range(1, len(n.split(".")))}
    return frozenset(used), frozenset(parents)


def imported_modules(root: Path, path: Path, package: str) -> tuple[frozenset, frozenset]:
    """``(used, parents)``: the project modules the file ``path`` imports (relative imports resolved
    against ``package``; a package whose attributes are imported counts as used) and the packages
    above them (their __init__.py runs first)."""
    st = os.stat(path)
    return _parsed(Path(root), Path(path), st.st_mtime_ns, st.st_size, package)


def closure(root: Path, script: Path) -> list[str]:
    """Every project source file ``script`` runs (absolute paths, sorted): the script, the
    transitive closure of the modules it imports, the packages above them, and the C++ sources
    where the kernel library is reached."""
    root = Path(root)
    dynamic = dynamic_imports(root)
    todo, inits = imported_modules(root, script, _package_of(root, Path(script)))
    todo, inits, seen = list(todo), set(inits), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        f = module_file(root, name)
        used, parents = imported_modules(root, f, name if f.name == "__init__.py" else name.rpartition(".")[0])
        todo += [n for n in used | set(dynamic.get(name, [])) if n not in seen]
        inits |= parents
    files = {str(script)} | {str(module_file(root, n)) for n in seen | inits}
    if seen & NATIVE_USERS:
        files |= {str(p) for p in (root / KERNEL_DIR).iterdir() if p.suffix in (".cc", ".h")}
    return sorted(files)


def _package_of(root: Path, script: Path) -> str:
    """The package a file lies in ('' for a workflow script outside the packages)."""
    try:
        parts = script.resolve().relative_to(root.resolve()).parent.parts
    except ValueError:
        return ""
    return ".".join(parts) if parts and parts[0] in PROJECT_PACKAGES else ""
