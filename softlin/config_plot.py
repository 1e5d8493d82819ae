"""The figure settings of a config checked at parse time: colours, colour maps, markers, and the
mathtext of the strings a figure draws (``plot``, ``description``, ``c5.description``), so a bad one
stops the dry run in one line instead of the figure job after the metrics.

Matplotlib is imported only for a value outside the common ones below (the defaults' start-up
stays free of it)."""

from __future__ import annotations

import re

_HEX = re.compile(r"#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})")
_TAB = {"blue", "orange", "green", "red", "purple", "brown", "pink", "gray", "grey", "olive", "cyan"}
_COMMON_COLORS = {f"tab:{c}" for c in _TAB} | {f"C{i}" for i in range(10)} | \
    {"black", "white", "red", "green", "blue", "gray", "grey", "k", "r", "g", "b", "c", "m", "y", "w"}
_COMMON_CMAPS = {"viridis", "plasma", "inferno", "magma", "cividis"}
_COMMON_MARKERS = {"o", "s", "^", "v", "<", ">", "x", "+", "D", "d", "*", "p", "h", ".", "P", "X"}


def _fail(key: str, reason: str):
    raise ValueError(f"config key '{key}': {reason}")


def check_color(key: str, value: str) -> None:
    if value in _COMMON_COLORS or _HEX.fullmatch(value):
        return
    from matplotlib.colors import is_color_like

    if not is_color_like(value):
        _fail(key, f"{value!r} is not a matplotlib colour (e.g. tab:blue, C0, #1f77b4)")


def check_cmap(key: str, value: str) -> None:
    if value in _COMMON_CMAPS:
        return
    import matplotlib

    if value not in matplotlib.colormaps:
        _fail(key, f"{value!r} is not a matplotlib colour map (e.g. viridis, plasma)")


def check_marker(key: str, value: str) -> None:
    if value in _COMMON_MARKERS:
        return
    from matplotlib.markers import MarkerStyle

    try:
        MarkerStyle(value)
    except (ValueError, TypeError):
        _fail(key, f"{value!r} is not a matplotlib marker (e.g. o, s, ^)")


def check_text(key: str, value: str) -> None:
    """A string drawn on a figure: its mathtext (between unescaped ``$`` pairs) parses."""
    if "$" not in value:
        return
    from matplotlib import cbook
    from matplotlib.mathtext import MathTextParser

    if not cbook.is_math_text(value):
        return
    try:
        MathTextParser("path").parse(value)
    except ValueError as err:
        first = str(err).strip().splitlines()[-1] if str(err).strip() else "unparsable"
        _fail(key, f"invalid mathtext in {value!r}: {first}")


def check(cfg: dict) -> None:
    """Every figure setting of ``cfg`` (a ValueError naming the first bad key)."""
    plot = cfg.get("plot") or {}
    for fam, colour in (plot.get("c3_colors") or {}).items():
        check_color(f"plot.c3_colors.{fam}", colour)
    for key in ("probe_cmap", "c5_L_cmap"):
        if key in plot:
            check_cmap(f"plot.{key}", plot[key])
    for name, curve in (plot.get("c5_curves") or {}).items():
        check_color(f"plot.c5_curves.{name}.color", curve["color"])
        check_marker(f"plot.c5_curves.{name}.marker", curve["marker"])
        check_text(f"plot.c5_curves.{name}.label", curve["label"])
    check_text("description", cfg.get("description", ""))
    check_text("c5.description", (cfg.get("c5") or {}).get("description", ""))
