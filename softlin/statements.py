"""Criterion statements that quote config values: ``{key.path}`` in the ``statement`` of an entry of
a claim's ``criteria`` or ``consistency_checks`` (``c5.confirm.criteria`` too) is the value of the
claim's ``key.path`` (``c5.convergence.reference_tol`` for ``{convergence.reference_tol}`` in C5c),
``{key.path:%}`` the same as a percentage (0.05 -> ``5%``), any other spec Python's ``format``.
Filled when the config is loaded (:func:`softlin.workflow_config.load`), so that every printout of
the statement (verdict.json / .md / .html, the report) says the value the run used; a placeholder
that names no value of the claim is refused in one line naming the key, before any job.  Literal
braces are written ``{{`` and ``}}``.
"""

from __future__ import annotations

import copy
import numbers
import string

CRITERIA_KEYS = ("criteria", "consistency_checks")


def _value(section: dict, path: str, where: str):
    """The value at the dotted ``path`` under the claim's config ``section`` (a number or a string)."""
    node = section
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"config key '{where}': placeholder {{{path}}} names no key of its claim's section")
        node = node[part]
    if isinstance(node, (dict, list)) or node is None:
        raise ValueError(f"config key '{where}': placeholder {{{path}}} names a {type(node).__name__}, not a value")
    return node


def _formatted(value, spec: str, path: str, where: str) -> str:
    """``value`` written with ``spec`` (``%``: a percentage, ``0.05`` -> ``5%``)."""
    if spec == "%":
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise ValueError(f"config key '{where}': placeholder {{{path}:%}} needs a number, got {value!r}")
        return f"{value * 100:g}%"
    try:
        return format(value, spec)
    except (TypeError, ValueError) as err:
        raise ValueError(f"config key '{where}': placeholder {{{path}:{spec}}}: {err}") from None


def fill(text: str, section: dict, where: str) -> str:
    """``text`` with each ``{key.path[:spec]}`` replaced by the value of ``section`` (the claim's config)
    it names; ``where``: the statement's config key, for the message of a refusal."""
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as err:
        raise ValueError(f"config key '{where}': {err} (write a literal brace as {{{{ or }}}})") from None
    out = []
    for literal, field, spec, conversion in parts:
        out.append(literal)
        if field is None:
            continue
        if not field or conversion:
            raise ValueError(f"config key '{where}': placeholder {{{field}{'!' + conversion if conversion else ''}}} "
                             "must name a key of its claim's section (e.g. {convergence.reference_tol:%})")
        out.append(_formatted(_value(section, field, where), spec, field, where))
    return "".join(out)


def _fill_entries(node, section: dict, where: str) -> None:
    """Every statement of the criteria lists under ``node`` (a part of ``section``) filled in place."""
    if not isinstance(node, dict):
        return
    for key, sub in node.items():
        if key in CRITERIA_KEYS and isinstance(sub, list):
            for i, entry in enumerate(sub):
                if isinstance(entry, dict) and isinstance(entry.get("statement"), str):
                    entry["statement"] = fill(entry["statement"], section, f"{where}.{key}[{i}].statement")
        else:
            _fill_entries(sub, section, f"{where}.{key}")


def fill_config(cfg: dict) -> dict:
    """A copy of the config ``cfg`` with every criterion's and check's statement filled (:func:`fill`)."""
    out = copy.deepcopy(cfg)
    for claim, section in out.items():
        if isinstance(section, dict):
            _fill_entries(section, section, claim)
    return out
