"""sympy derivations S1-S7 of the softlin reproduction (docs/maths.md#symbolic), printable and exported."""
from . import s1_tilt, s2_population, s3_parity, s4_euler, s5_threshold, s6_baselines, s7_first_order  # noqa: F401, E501  (register S1..S7)
from .core import DERIVATIONS, Derivation, get, render_text, to_json, to_markdown, write_all

__all__ = ["DERIVATIONS", "Derivation", "get", "render_text", "to_json", "to_markdown", "write_all"]
