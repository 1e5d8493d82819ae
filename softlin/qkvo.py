"""The attention head C5 trains, in its two parametrisations (docs/maths.md#models).

``qkvo`` (the authors'): ``W_Q, W_K, W_V, W_O`` (D x D each, PyTorch ``nn.Linear`` layout ``y = W x``,
no biases), scores ``(W_K z_l)^T (W_Q z_q) / sqrt(D)``, prediction the last coordinate of
``W_O sum_l p_l W_V z_l``.  It *is* the (U, v) model with ``U = W_K^T W_Q / sqrt(D)``,
``v = (W_O W_V)^T e_D`` (:func:`to_uv`); gradients reach the four matrices through that map by
autodiff.  ``uv``: Sec. 5's (U, v) trained directly (initialised at the image of the same draw).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._jax import jax, jnp
from .params import Params

PARAMETRISATIONS = ("qkvo", "uv")


class QKVO(NamedTuple):
    """One attention head, PyTorch ``nn.Linear`` layout (out, in): ``W_Q, W_K, W_V, W_O`` (D, D)."""

    WQ: jax.Array
    WK: jax.Array
    WV: jax.Array
    WO: jax.Array


def torch_linear_init(rng: np.random.Generator, fan_out: int, fan_in: int) -> np.ndarray:
    """PyTorch ``nn.Linear`` default weight init, ``kaiming_uniform_(a=sqrt(5))``, written out:
    gain ``sqrt(2 / (1 + a^2)) = sqrt(1/3)``, bound ``gain sqrt(3 / fan_in) = 1 / sqrt(fan_in)``,
    i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``."""
    a = np.sqrt(5.0)
    gain = np.sqrt(2.0 / (1.0 + a * a))
    bound = gain * np.sqrt(3.0 / fan_in)
    return rng.uniform(-bound, bound, size=(fan_out, fan_in))


def init_qkvo(seed: int, d: int) -> QKVO:
    """The four D x D projections drawn in the order Q, K, V, O from ``numpy.default_rng(seed)``."""
    D = d + 1
    rng = np.random.default_rng(seed)
    return QKVO(*(jnp.asarray(torch_linear_init(rng, D, D)) for _ in range(4)))


def to_uv(p: QKVO) -> Params:
    """``U = W_K^T W_Q / sqrt(D)``, ``v = (W_O W_V)^T e_D``: the (U, v) model computing the same function."""
    D = p.WQ.shape[-1]
    return Params(p.WK.T @ p.WQ / jnp.sqrt(jnp.float64(D)), p.WV.T @ p.WO[-1])


def init_params(parametrisation: str, seed: int, d: int):
    """Initial parameters: QKVO (PyTorch default init) or its (U, v) image."""
    if parametrisation not in PARAMETRISATIONS:
        raise ValueError(f"parametrisation must be one of {PARAMETRISATIONS}, got {parametrisation!r}")
    p = init_qkvo(seed, d)
    return p if parametrisation == "qkvo" else to_uv(p)


def as_uv(p) -> Params:
    return to_uv(p) if isinstance(p, QKVO) else Params(*p)
