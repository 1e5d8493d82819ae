"""Derivation record, the registered derivations (symbolic.registry), and text / Markdown / JSON rendering."""
from __future__ import annotations

import functools
import json
import os
from typing import Any, Callable

import sympy as sp

from . import cache
from .derivation import Derivation
from .files import write_text
from .registry import DERIVATION_MODULES

DERIVATIONS: dict[str, Callable[..., "Derivation"]] = {}
# DERIVATION_MODULES (symbolic.registry): the module that registers each derivation (imported on
# first use: by get, that one only)


def register_all() -> None:
    """Import every derivation module (each registers itself in DERIVATIONS)."""
    for did in DERIVATION_MODULES:
        _register(did)


def _register(did: str) -> None:
    import importlib

    if did not in DERIVATION_MODULES:
        raise KeyError(f"no derivation {did!r}; known: {', '.join(DERIVATION_MODULES)}")
    importlib.import_module(f"{__package__}.{DERIVATION_MODULES[did]}")


TITLES: dict[str, str] = {}
SYMPY_SEED = 0  # sympy's random generators, seeded before each derivation and each printing
DUMMY_BASE = 10 ** 7  # Dummy indices of derivation k (0-based in IDS) start at DUMMY_BASE * (k + 1)


def canonical_sympy_state(did: str) -> None:
    """Make sympy's hidden process state the same before derivation ``did`` (computed or printed)
    in every process: the indices of new ``Dummy`` symbols (sympy starts them at a random number
    per process, and they enter hashes and sort keys, so ``integrate`` returned either of two equal
    forms of S5's erf term) start at a fixed number of this derivation's own; sympy's random
    generators (its assumptions system shuffles the order of its deductions) are seeded; its cache
    is cleared."""
    from sympy.core import random as sympy_random

    sp.core.cache.clear_cache()
    sympy_random.seed(SYMPY_SEED)
    sp.Dummy._base_dummy_index = DUMMY_BASE * (1 + list(DERIVATION_MODULES).index(did))
    sp.Dummy._count = 0


def _derived(did: str, fn) -> "Derivation":
    """fn() computed from :func:`canonical_sympy_state`: the same bytes in every process."""
    canonical_sympy_state(did)
    return fn()


def register(did: str, version: str, title: str):
    """Register a derivation function under `did`; its output is cached on disk by (did, version)."""
    TITLES[did] = title

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(fresh: bool = False) -> Derivation:
            return cache.cached_call(did, version, functools.partial(_derived, did, fn), fresh=fresh,
                                     in_seed0_child=True)

        wrapper.derivation_id = did
        wrapper.version = version
        DERIVATIONS[did] = wrapper
        return wrapper

    return deco


def get(did: str, fresh: bool = False) -> Derivation:
    """The (cached) derivation with id `did`."""
    if did not in DERIVATIONS:
        _register(did)  # its module imports the derivations it reads (so code inputs follow imports)
    return DERIVATIONS[did](fresh=fresh)


def _is_sym(obj: Any) -> bool:
    return isinstance(obj, (sp.Basic, sp.MatrixBase))


def render_text(der: Derivation) -> str:
    """Human-readable unicode rendering of all steps and results."""
    out = [f"{der.id} — {der.title}", "=" * (len(der.id) + len(der.title) + 3)]
    for i, (text, obj) in enumerate(der.steps, 1):
        out.append(f"\n[{i}] {text}")
        if obj is not None:
            out.append(sp.pretty(obj, use_unicode=True) if _is_sym(obj) else str(obj))
    out.append("\nResults:")
    for name, expr in der.results.items():
        body = sp.pretty(expr, use_unicode=True) if _is_sym(expr) else str(expr)
        out.append(f"  {name} =\n" + "\n".join("    " + ln for ln in body.splitlines()))
    return "\n".join(out) + "\n"


def _latex(obj: Any) -> str:
    if _is_sym(obj):
        return sp.latex(obj)
    if isinstance(obj, dict):
        return r"\begin{array}{ll}" + r" \\ ".join(
            rf"\text{{{k}}} & {_latex(v)}" for k, v in obj.items()) + r"\end{array}"
    return rf"\text{{{obj}}}"


def to_markdown(der: Derivation) -> str:
    """Markdown with $$...$$ LaTeX blocks: a numbered list of steps, then the results."""
    out = [f"## {der.id} — {der.title}", ""]
    for i, (text, obj) in enumerate(der.steps, 1):
        out.append(f"{i}. {text}")
        if obj is not None:
            out += ["", f"$$ {_latex(obj)} $$", ""]
    out += ["", "### Results", ""]
    for name, expr in der.results.items():
        out += [f"* `{name}`", "", f"$$ {_latex(expr)} $$", ""]
    return "\n".join(out) + "\n"


def to_json(der: Derivation) -> dict:
    """JSON-able content: steps as text + LaTeX, results as srepr / LaTeX / str."""
    def enc(obj):
        if _is_sym(obj):
            return {"srepr": sp.srepr(obj), "latex": sp.latex(obj), "str": str(obj)}
        if isinstance(obj, dict):
            return {str(k): enc(v) for k, v in obj.items()}
        if isinstance(obj, (int, float, str, bool)) or obj is None:
            return obj
        return {"str": str(obj)}

    return {
        "id": der.id,
        "title": der.title,
        "steps": [{"text": t, "object": enc(o)} for t, o in der.steps],
        "results": {k: enc(v) for k, v in der.results.items()},
    }


_WRITER = "SOFTLIN_SYMBOLIC_WRITER"


def write_all(outdir: str, ids=None) -> list[str]:
    """Write S1.md, S1.json, ... (``ids``: those derivations only; default all) into `outdir`,
    each atomically (``softlin.io.write_text``); return the paths.

    The files are byte-identical whatever this process's ``PYTHONHASHSEED``: the derivations are
    computed into the cache (each in a fresh process under seed 0, :func:`symbolic.cache.cached_call`)
    and then printed by a fresh process under seed 0 that reads them back from the cache (sympy
    rebuilds an unpickled expression, and the form it rebuilds follows the seed and the history)."""
    register_all()
    if os.environ.get(_WRITER) != "1":
        import subprocess
        import sys
        import warnings

        ids = sorted(DERIVATIONS) if ids is None else list(ids)
        for did in ids:
            get(did)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONHASHSEED="0", SOFTLIN_SYMBOLIC_CACHE=cache.cache_dir(), **{_WRITER: "1"},
                   PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))
        code = "import sys, symbolic\nfor p in symbolic.write_all(sys.argv[1], sys.argv[2:]):\n    print(p)\n"
        try:
            r = subprocess.run([sys.executable, "-c", code, str(outdir), *ids], env=env, check=True,
                               capture_output=True, text=True, timeout=3600)
            return r.stdout.splitlines()
        except (OSError, subprocess.SubprocessError) as err:
            warnings.warn(f"softlin: printing the derivations in a PYTHONHASHSEED=0 process failed "
                          f"({str(getattr(err, 'stderr', '') or err).strip()[-200:]}); printing here "
                          "(the files may then depend on the hash seed)", RuntimeWarning, stacklevel=2)
    os.makedirs(outdir, exist_ok=True)
    paths = []
    for did in (sorted(DERIVATIONS) if ids is None else ids):
        canonical_sympy_state(did)  # rebuilding and printing ask sympy's assumptions too
        der = get(did)
        for ext, text in (("md", to_markdown(der)), ("json", json.dumps(to_json(der), indent=1))):
            p = os.path.join(outdir, f"{did}.{ext}")
            write_text(p, text)  # atomic: a temporary file, then a rename
            paths.append(p)
    return paths
