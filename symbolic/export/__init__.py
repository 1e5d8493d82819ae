"""Numeric callables lambdified from the derived results (numpy or jax backends), fixed argument
orders, each built once per process: one module per derivation (``symbolic.export.s2`` exports S2),
so that code using one derivation imports only that one (and the workflow reruns only its users).
"""
from __future__ import annotations

import functools

from .. import core
from ..tools import lambdify


@functools.cache
def lambdify_result(derivation_id: str, result_name: str, args: tuple, backend: str = "numpy"):
    """Lambdify results[result_name] of derivation `derivation_id` in the sympy `args` (a tuple)."""
    return lambdify(args, core.get(derivation_id).results[result_name], backend)


def _batched(one, backend, in_axes):
    """Map a one-sample function over the leading axis of the arguments marked 0 in ``in_axes``."""
    if backend == "jax":
        import jax
        return jax.vmap(one, in_axes=in_axes)
    import numpy as np_

    def mapped(*args):
        args = [np_.asarray(a, dtype=float) for a in args]
        nb = next(a.shape[0] for a, ax in zip(args, in_axes) if ax == 0)
        return np_.stack([one(*[a[i] if ax == 0 else a for a, ax in zip(args, in_axes)]) for i in range(nb)])
    return mapped
