"""The registry of the sympy derivations: their ids and the module that registers each, the only list.

``symbolic.core`` imports a derivation's module on first use; the workflow's rule ``symbolic``
writes one page per id; the tests and docs/extending.md read it.  Pure data (no sympy).
"""

# id -> module of symbolic/ that defines it (``@register(id, ...)``), in reading order (docs/extending.md)
DERIVATION_MODULES = {
    "S1": "s1_tilt",
    "S2": "s2_population",
    "S3": "s3_parity",
    "S4": "s4_euler",
    "S5": "s5_threshold",
    "S6": "s6_baselines",
    "S7": "s7_first_order",
}
IDS = tuple(DERIVATION_MODULES)
SPAN = f"{IDS[0]}-{IDS[-1]}"  # "S1-S7", for messages
