"""Atomic, sealed file output (a temporary file, then a rename: an interrupted job leaves no partial
file; the seal lets :mod:`softlin.outputs` find a file damaged later); an exclusive lock for caches
that several processes may fill at once.  The file primitives live in :mod:`symbolic.files` (the
ground floor, which imports nothing of ``softlin``); npz, CSV and strict JSON here.

Strict JSON (docs/faults.md): no ``NaN`` / ``Infinity`` tokens.  A non-finite number under key
``k`` is written as ``null`` and its sibling ``k_nonfinite`` says what it was: ``"nan"``,
``"inf"`` or ``"-inf"`` for a number, a list of the same shape (``null`` at the finite entries)
for a list.  :func:`load_json` reads it back to the float, so every reader sees the NaN it wrote.
"""

from __future__ import annotations

import json
import math
import numbers

import numpy as np

from symbolic.files import DiskFull, atomic_path, exclusive, sealed_path, write_text  # noqa: F401  (re-exported)

NONFINITE = "_nonfinite"


def save_npz(path, **arrays) -> None:
    """``numpy.savez`` written atomically (no temporary file left behind on failure) and sealed."""
    with sealed_path(path) as tmp:
        np.savez(tmp, **{k: np.asarray(v) for k, v in arrays.items()})


def save_csv(path, rows) -> None:
    """A table (a DataFrame, or rows as dicts) as CSV, every float with 17 digits, atomically and sealed."""
    import pandas as pd

    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    with sealed_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.17g")


def load_csv(path):
    """A CSV written by :func:`save_csv` (a DataFrame), its seal checked first."""
    import pandas as pd

    from .outputs import verified

    return pd.read_csv(verified(path))


def _plain(x):
    """``x`` with numpy scalars and arrays (and other numbers) as Python numbers and lists."""
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    if isinstance(x, numbers.Number) and not isinstance(x, (bool, int, float)):
        return int(x) if isinstance(x, numbers.Integral) else float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _flag(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _finite(x):
    """(``x`` with its non-finite numbers as None, their flags or None when there are none)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None, _flag(x)
    if isinstance(x, dict):
        return to_strict(x), None
    if isinstance(x, list):
        pairs = [_finite(v) for v in x]
        flags = [f for _, f in pairs]
        return [v for v, _ in pairs], (flags if any(f is not None for f in flags) else None)
    return x, None


def to_strict(obj):
    """``obj`` (dicts, lists, numbers; numpy converted) in the strict-JSON convention of the module."""
    obj = _plain(obj)
    if isinstance(obj, list):
        out, flags = _finite(obj)
        if flags is not None and any(isinstance(f, (str, list)) for f in flags):
            raise ValueError("a non-finite number in a list outside an object has no key to flag it")
        return out
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        out[k], flags = _finite(v)
        if flags is not None:
            if f"{k}{NONFINITE}" in obj:
                raise ValueError(f"key {k!r}: its flag key {k}{NONFINITE!r} is taken")
            out[f"{k}{NONFINITE}"] = flags
    return out


def _restore(v, flags):
    if isinstance(flags, str):
        return float(flags)
    if isinstance(flags, list) and isinstance(v, list):
        return [_restore(x, f) if f is not None else x for x, f in zip(v, flags)]
    return v


def from_strict(obj):
    """The inverse of :func:`to_strict`: every flagged ``null`` back to its NaN / inf."""
    if isinstance(obj, list):
        return [from_strict(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        if isinstance(k, str) and k.endswith(NONFINITE) and k[: -len(NONFINITE)] in obj:
            continue
        flags = obj.get(f"{k}{NONFINITE}")
        out[k] = _restore(from_strict(v), flags) if flags is not None else from_strict(v)
    return out


def dumps_json(obj) -> str:
    """Strict JSON text of ``obj`` (indented; see the module for non-finite numbers)."""
    return json.dumps(to_strict(obj), indent=2, allow_nan=False) + "\n"


def _refuse(token):
    raise ValueError(f"{token} is not strict JSON")


def loads_json(text: str):
    """The value of strict JSON ``text``, flagged non-finite numbers restored (``NaN`` tokens refused)."""
    return from_strict(json.loads(text, parse_constant=_refuse))


def save_json(path, obj) -> None:
    """Strict JSON (indented, floats as Python floats) written atomically and sealed."""
    write_text(path, dumps_json(obj))


def load_json(path):
    """A JSON file read back (:func:`loads_json`); a workflow output that does not parse, or does
    not match its seal, is set aside and named (:class:`softlin.outputs.DamagedOutput`)."""
    from .outputs import damaged, is_output, verified

    text = verified(path).read_text()
    try:
        return loads_json(text)
    except ValueError as err:
        if not is_output(path):
            raise ValueError(f"{path} does not parse as strict JSON: {err}") from err
        raise damaged(path, f"it does not parse as JSON: {str(err)[:100]}") from err
