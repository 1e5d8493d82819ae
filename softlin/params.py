"""Parameters ``theta = (U, v)`` (docs/maths.md#models, #training): Eq. (9) initialisation.

The optimum ``theta*`` is :func:`softlin.population.bayes_optimum`."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .tasks import check_sigma


class Params(NamedTuple):
    """Attention parameters: ``U`` (..., d+1, d+1), ``v`` (..., d+1); a pytree."""

    U: np.ndarray
    v: np.ndarray


def alpha_max(sigma) -> float:
    """Upper end of the admissible Eq. (9) scale: ``sqrt(2) / (d^{1/4} ||Sigma||_op)``."""
    s = check_sigma(sigma)
    return float(np.sqrt(2.0) / (s.shape[0] ** 0.25 * np.linalg.norm(s, 2)))


def init_eq9(sigma, alpha: float | None = None) -> Params:
    """Eq. (9): ``U0 = alpha blockdiag(I_d / sqrt(d), 0)``, ``v0 = alpha e_{d+1}``; alpha defaults to alpha_max/2."""
    s = check_sigma(sigma)
    d = s.shape[0]
    if alpha is None:
        alpha = 0.5 * alpha_max(s)
    U = np.zeros((d + 1, d + 1))
    U[:d, :d] = alpha * np.eye(d) / np.sqrt(d)
    v = np.zeros(d + 1)
    v[d] = alpha
    return Params(U, v)


def flatten(p: Params, xp=np):
    """``theta = (U, v)`` as one vector ``(vec U, v)`` along the last axis: (..., (d+1)^2 + d+1);
    ``xp`` is ``numpy`` or ``jax.numpy`` (inside a traced function)."""
    U, v = xp.asarray(p.U), xp.asarray(p.v)
    return xp.concatenate([U.reshape(U.shape[:-2] + (-1,)), v], axis=-1)


def unflatten(y, D: int) -> Params:
    """Inverse of :func:`flatten` for ``U`` (D, D): (..., D^2 + D) -> Params (leading axes kept)."""
    U, v = split_flat(y, D - 1)
    return Params(U.reshape(U.shape[:-1] + (D, D)), v)


def split_flat(y, d: int):
    """A flattened ``(vec U, v)`` (or a difference of two) -> ``(vec U part, v part)`` along the last axis."""
    D = d + 1
    return y[..., : D * D], y[..., D * D:]


def block_params(A, b: float) -> Params:
    """Block-structured parameters ``U = blockdiag(A, 0)``, ``v = b e_{d+1}``."""
    A = np.asarray(A, dtype=np.float64)
    d = A.shape[0]
    U = np.zeros((d + 1, d + 1))
    U[:d, :d] = A
    v = np.zeros(d + 1)
    v[d] = b
    return Params(U, v)


def scores_read_labels(U, d: int) -> bool:
    """Whether the scores ``z_q^T U^T z_l`` read the prompt labels: ``U``'s label row ``U[d, :d]`` is not 0
    (the query token's label is 0, so ``U[d, d]`` never enters)."""
    return bool(np.any(np.asarray(U)[d, :d] != 0))
