"""One record format: a pytree of arrays <-> an ``.npz`` file (after equinox's ``tree_serialise_leaves``).

Each leaf is stored under its tree path (``jax.tree_util.keystr``: ``.limit.params.U``,
``.softmax[128].loss``, ``['fingerprint']``), written atomically by :func:`softlin.io.save_npz`.
A record is read back *against a template*: a tree of the same structure built by the code that
reads it (arrays, ``jax.ShapeDtypeStruct`` from ``jax.eval_shape``, or :class:`Spec`), so the
structure comes from code and never from parsing the file's key names.  A key the template expects
and the file lacks, a key the file has and the template does not, or a leaf whose shape or dtype
differs from the template's raises :class:`RecordError` naming the path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._jax import jax
from .io import save_npz


class RecordError(ValueError):
    """A file does not hold the record its template describes (missing / extra key, shape, dtype)."""


@dataclass(frozen=True)
class Spec:
    """A template leaf: ``shape`` (``None`` for an axis of any length, e.g. the logged windows of
    a checkpoint, known only from the file) and ``dtype``.  Not a pytree node, so it is a leaf."""

    shape: tuple
    dtype: object

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))


def spec_of(tree, lead: tuple = ()):
    """The template of ``tree`` (arrays or scalars) as :class:`Spec` leaves, with ``lead`` axes
    prepended to every leaf (``spec_of(params, (n,))``: ``n`` stacked copies)."""
    return jax.tree.map(lambda x: Spec(tuple(lead) + np.shape(x), np.result_type(x)), tree)


def _flat(tree) -> list[tuple[str, object]]:
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    out = [(jax.tree_util.keystr(path), x) for path, x in leaves]
    names = [k for k, _ in out]
    if len(set(names)) != len(names):
        dup = sorted({k for k in names if names.count(k) > 1})
        raise RecordError(f"two leaves share the path {dup[0]!r}")
    return out


def to_arrays(tree) -> dict[str, np.ndarray]:
    """``{tree path: numpy array}`` of every leaf (the ``.npz`` entries of :func:`save`)."""
    return {k: np.asarray(x) for k, x in _flat(jax.device_get(tree))}


def save(path, tree) -> None:
    """Write ``tree`` (a pytree of arrays / scalars / strings) to ``path`` atomically."""
    save_npz(path, **to_arrays(tree))


def _expected(like) -> tuple[tuple, np.dtype]:
    if isinstance(like, Spec):
        return like.shape, like.dtype
    return tuple(np.shape(like)), np.dtype(like.dtype if hasattr(like, "dtype") else np.result_type(like))


def _check(key: str, x: np.ndarray, like) -> np.ndarray:
    shape, dtype = _expected(like)
    if x.dtype != dtype:
        raise RecordError(f"{key}: dtype {x.dtype}, the template expects {dtype}")
    if len(x.shape) != len(shape) or any(s is not None and s != n for s, n in zip(shape, x.shape)):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        raise RecordError(f"{key}: shape {x.shape}, the template expects {want}")
    return x


def from_arrays(arrays, like, where: str = "record", partial: bool = False):
    """The tree of ``like``'s structure whose leaves are ``arrays[tree path]`` (numpy), checked
    against ``like``'s leaves; ``arrays``: a mapping (an open ``np.load``, a dict).  ``partial``:
    entries the template does not name are allowed (and not read): a header such as a
    checkpoint's fingerprint, read before the whole record."""
    expected = _flat(like)
    keys = set(arrays.keys())
    missing = [k for k, _ in expected if k not in keys]
    if missing:
        raise RecordError(f"{where} lacks {len(missing)} entr{'y' if len(missing) == 1 else 'ies'} "
                          f"of the template, first {missing[0]!r}")
    extra = sorted(keys - {k for k, _ in expected})
    if extra and not partial:
        raise RecordError(f"{where} has {len(extra)} entr{'y' if len(extra) == 1 else 'ies'} "
                          f"the template does not, first {extra[0]!r}")
    leaves = [_check(k, np.asarray(arrays[k]), x) for k, x in expected]
    return jax.tree.unflatten(jax.tree.structure(like), leaves)


def load(path, like, partial: bool = False, keep_damaged: bool = False):
    """The record at ``path`` read against the template ``like`` (numpy leaves; see the module;
    ``partial``: see :func:`from_arrays`).  A file that does not read (truncated, a CRC error) or
    does not match its seal is set aside and named with the command that rebuilds it
    (:class:`softlin.outputs.DamagedOutput`; ``keep_damaged``: left in place, a
    :class:`RecordError`, for a caller that sets it aside itself, the checkpoints)."""
    import zipfile

    from .outputs import DamagedOutput, damaged, is_output, verified

    try:
        with np.load(path if keep_damaged else verified(path)) as f:
            return from_arrays(f, like, where=str(path), partial=partial)
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as err:  # truncated, garbled
        if isinstance(err, (RecordError, FileNotFoundError, DamagedOutput)):
            raise
        why = f"{type(err).__name__}: {err}"
        if keep_damaged or not is_output(path):
            raise RecordError(f"{path} does not read as a record ({why})") from err
        raise damaged(path, f"it does not read as a record: {why}") from err
