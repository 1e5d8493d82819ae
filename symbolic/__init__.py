"""sympy derivations of the softlin reproduction (docs/maths.md#symbolic; their ids: symbolic.registry), printable and exported.

Importing the package is light (``symbolic.files``, the ground floor, needs neither sympy nor a
derivation): the derivations register themselves the first time one of the names below is
used (``symbolic.get("S2")``, ``symbolic.write_all(...)``), or ``symbolic.core.get`` is called.
"""
import importlib

__all__ = ["DERIVATIONS", "Derivation", "get", "render_text", "to_json", "to_markdown", "write_all"]


def __getattr__(name):
    """The core's names, with every derivation registered first (PEP 562)."""
    if name in __all__:
        core = importlib.import_module(f"{__name__}.core")
        core.register_all()
        return getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
