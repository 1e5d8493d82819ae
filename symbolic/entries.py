"""A derivation cache entry's bytes <-> its value, without running code on reading (unlike pickle).

The value (a :class:`symbolic.core.Derivation`, or plain data: None, bool, int, float, str,
lists, tuples, dicts) is written as JSON; a sympy object as its ``srepr`` text, which is read
back by :func:`from_srepr`: a walk of its syntax tree that only calls sympy classes (and the
project's own, e.g. ``LambdaMax``) by name, passes strings only to constructors that take a name
or a number (``Symbol('x')``, ``Float('0.5')``), and refuses anything else (attributes, operators,
other names), so no entry, however forged, can run code.  The bytes start with a header holding
the sha256 of the JSON (a flipped bit is caught before anything is read).
"""
from __future__ import annotations

import ast
import functools
import hashlib
import json

import sympy as sp

from .derivation import Derivation

MAGIC = b"softlin-symbolic-cache v3 json sha256 "
# the constructors that may receive a string: a name or a decimal number, never parsed as an expression
STRING_TAKERS = frozenset({"Symbol", "Dummy", "Wild", "Str", "Float", "Function"})


class EntryError(ValueError):
    """An entry's bytes are not an entry this module wrote (header, digest, a refused construct)."""


def _is_sym(x) -> bool:
    return isinstance(x, (sp.Basic, sp.MatrixBase))


def encode(x):
    """The JSON-able form of ``x`` (every dict and tuple tagged, so nothing is ambiguous)."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return {"$": "float", "v": repr(x)}
    if _is_sym(x):
        return {"$": "sympy", "v": sp.srepr(x)}
    if isinstance(x, list):
        return [encode(v) for v in x]
    if isinstance(x, tuple):
        return {"$": "tuple", "v": [encode(v) for v in x]}
    if isinstance(x, dict):
        return {"$": "dict", "v": [[encode(k), encode(v)] for k, v in x.items()]}
    if isinstance(x, Derivation):
        return {"$": "derivation", "v": [x.id, x.title, encode(x.steps), encode(x.results)]}
    raise TypeError(f"a symbolic cache entry cannot hold a {type(x).__name__}")


def decode(x, names=None):
    """The value of :func:`encode`'s form (:class:`EntryError` for anything it never writes);
    ``names``: the classes an srepr may call (default: :func:`_names`, looked up once)."""
    names = _names() if names is None else names
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, list):
        return [decode(v, names) for v in x]
    if not isinstance(x, dict) or set(x) != {"$", "v"}:
        raise EntryError(f"not an encoded value: {str(x)[:60]}")
    tag, v = x["$"], x["v"]
    if tag == "float":
        return float(v)
    if tag == "sympy":
        return from_srepr(v, names)
    if tag == "tuple":
        return tuple(decode(e, names) for e in v)
    if tag == "dict":
        return {decode(k, names): decode(e, names) for k, e in v}
    if tag == "derivation":
        did, title, steps, results = v
        return Derivation(did, title, decode(steps, names), decode(results, names))
    raise EntryError(f"unknown tag {tag!r}")


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _names() -> dict:
    """Every loaded sympy class by name (``Add``, ``Str``, ``ExprCondPair``; the project's own,
    ``LambdaMax``, included), sympy's top-level names first, and its singletons (``pi``, ``oo``)."""
    out = {}
    for cls in [*_subclasses(sp.Basic), *_subclasses(sp.MatrixBase)]:
        out.setdefault(cls.__name__, cls)
    for name, obj in _top_level().items():
        out[name] = obj
    return out


@functools.lru_cache(maxsize=1)
def _top_level() -> dict:
    out = {}
    for name in dir(sp):
        obj = getattr(sp, name)
        if (isinstance(obj, type) and issubclass(obj, (sp.Basic, sp.MatrixBase))) or isinstance(obj, sp.Basic):
            out[name] = obj
    return out


def _eval(node, names):
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, type(None))):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):  # -1, -oo
        value = _eval(node.operand, names)
        if isinstance(value, (int, float, sp.Number)) and not isinstance(value, bool):
            return -value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_eval(e, names) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Call):
        fn = _eval(node.func, names)
        if not (isinstance(fn, type) and issubclass(fn, (sp.Basic, sp.MatrixBase))):
            raise EntryError(f"refused call of {ast.unparse(node.func)[:40]}")
        takes_str = isinstance(node.func, ast.Name) and node.func.id in STRING_TAKERS
        args = [a.value if takes_str and isinstance(a, ast.Constant) and isinstance(a.value, str)
                else _eval(a, names) for a in node.args]
        kwargs = {k.arg: _eval(k.value, names) for k in node.keywords if k.arg is not None}
        if len(kwargs) != len(node.keywords):
            raise EntryError("refused ** argument")
        return fn(*args, **kwargs)
    raise EntryError(f"refused {type(node).__name__}: {ast.unparse(node)[:40]}")


def from_srepr(text: str, names=None):
    """The sympy object of its ``srepr`` text (``names``: see :func:`decode`)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise EntryError(f"not an srepr: {err}") from None
    return _eval(tree.body, _names() if names is None else names)


def pack(value) -> bytes:
    """An entry's bytes: the header with the sha256 of the JSON, then the JSON."""
    payload = json.dumps(encode(value), separators=(",", ":")).encode()
    return MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def unpack(blob: bytes):
    """The value of an entry's bytes; :class:`EntryError` when the header or the digest does not match."""
    head, sep, payload = blob.partition(b"\n")
    if not sep or not head.startswith(MAGIC):
        raise EntryError("no digest header")
    if hashlib.sha256(payload).hexdigest().encode() != head[len(MAGIC):]:
        raise EntryError("content digest mismatch")
    return decode(json.loads(payload))
