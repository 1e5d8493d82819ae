"""The project source files a workflow script runs: the script and every softlin / symbolic module it
reaches through import statements (read with :mod:`ast`, lazy imports inside functions included).

A rule lists them as inputs (workflow/rules/common.smk ``code_inputs``), so editing any of them
reruns it, and the list cannot drift from the code.  Each file's import statements are parsed once
and kept by the sha256 of its bytes (:class:`ImportCache`): in memory, and in a file under
``.snakemake/`` so that a later Snakemake process parses only what changed (parsing all ~100 files
costs ~0.1-0.2 s, about a tenth of a dry run's start-up; hashing them ~2 ms).  The key is the
content, not (mtime, size): a file rewritten with the same size and mtime is parsed again.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import tempfile
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


def _raw_imports(path: Path, package: str, source: bytes | None = None) -> list:
    """The import statements of ``path`` (of its bytes ``source`` where given) as ``[name]`` (``import
    name``) or ``[base, [base.name, ...]]`` (``from base import name, ...``, relative ones resolved
    against ``package``), read with ast."""
    tree = ast.parse(path.read_bytes() if source is None else source, filename=str(path))
    out = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            out += [[a.name] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            out.append([base, [f"{base}.{a.name}" for a in node.names]])
    return out


def _well_formed(imports) -> bool:
    """Whether ``imports`` has the shape :func:`_raw_imports` returns: a list of ``[str]`` and
    ``[str, [str, ...]]`` (a cache entry of another shape is damaged, and ignored)."""
    def entry(e):
        return isinstance(e, list) and isinstance(e[0] if e else None, str) and (
            len(e) == 1 or (len(e) == 2 and isinstance(e[1], list) and all(isinstance(n, str) for n in e[1])))
    return isinstance(imports, list) and all(entry(e) for e in imports)


def _cached(hit) -> bool:
    """Whether a cache entry has the shape ``[sha256 hex digest, imports]``."""
    return isinstance(hit, list) and len(hit) == 2 and isinstance(hit[0], str) and _well_formed(hit[1])


class ImportCache:
    """:func:`_raw_imports` of each file, kept by (path, package) with the sha256 of the file's bytes,
    in memory and in the JSON file ``path`` (the working directory's ``.snakemake/softlin-imports.json``:
    a Snakemake process that finds it parses only the files whose content changed since; written
    atomically, only when it changed).  A damaged file (unreadable, not JSON, another shape) or entry
    is ignored and rewritten, never trusted."""

    def __init__(self, path: Path | None = None):
        self.path, self.entries, self.dirty = path, {}, False
        if path is not None:
            try:
                found = json.loads(Path(path).read_bytes())
            except (OSError, ValueError):
                found = None
            self.entries = {k: v for k, v in found.items() if _cached(v)} if isinstance(found, dict) else {}
            damaged = not isinstance(found, dict) or len(self.entries) < len(found)
            self.dirty = damaged and Path(path).exists()  # rewritten on save, even if nothing is parsed

    def imports(self, path: Path, package: str) -> list:
        data = Path(path).read_bytes()
        key, digest = f"{path}|{package}", hashlib.sha256(data).hexdigest()
        hit = self.entries.get(key)
        if hit is None or hit[0] != digest:  # new or changed
            self.entries[key] = hit = [digest, _raw_imports(Path(path), package, data)]
            self.dirty = True
        return hit[1]

    def save(self) -> None:
        """Write the cache file if it changed (a failure to write is not an error: the next run parses)."""
        if self.path is None or not self.dirty:
            return
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=Path(self.path).parent, delete=False, suffix=".tmp") as f:
                json.dump(self.entries, f)
            os.chmod(f.name, 0o644)
            os.replace(f.name, self.path)
            self.dirty = False
        except OSError:
            pass


_MEMORY = ImportCache()


def imported_modules(root: Path, path: Path, package: str, cache: ImportCache = _MEMORY) -> tuple[frozenset, frozenset]:
    """``(used, parents)``: the project modules the file ``path`` imports (relative imports resolved
    against ``package``; a package whose attributes are imported counts as used) and the packages
    above them (their __init__.py runs first)."""
    names = []
    for entry in cache.imports(path, package):
        if len(entry) == 1:
            names.append(entry[0])
        else:
            found = [n for n in entry[1] if module_file(root, n)]
            names += found + ([entry[0]] if len(found) < len(entry[1]) else [])  # attributes of `base` itself
    used = {n for n in names if n.split(".")[0] in PROJECT_PACKAGES and module_file(root, n)}
    parents = {".".join(n.split(".")[:k]) for n in used for k in range(1, len(n.split(".")))}
    return frozenset(used), frozenset(parents)


def closure(root: Path, script: Path, cache: ImportCache = _MEMORY) -> list[str]:
    """Every project source file ``script`` runs (absolute paths, sorted): the script, the
    transitive closure of the modules it imports, the packages above them, and the C++ sources
    where the kernel library is reached (``cache``: where each file's imports are kept)."""
    root = Path(root)
    dynamic = dynamic_imports(root)
    todo, inits = imported_modules(root, script, _package_of(root, Path(script)), cache)
    todo, inits, seen = list(todo), set(inits), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        f = module_file(root, name)
        used, parents = imported_modules(root, f, name if f.name == "__init__.py" else name.rpartition(".")[0], cache)
        todo += [n for n in used | set(dynamic.get(name, [])) if n not in seen]
        inits |= parents
    cache.save()
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
