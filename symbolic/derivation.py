"""The record of one derivation (its own module: the cache's entry format reads it, and the core,
which uses the cache, registers the derivations)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Derivation:
    """One derivation: id ("S2"), title, steps [(explanation, sympy object)], results {name: expr}."""

    id: str
    title: str
    steps: list = field(default_factory=list)
    results: dict = field(default_factory=dict)
