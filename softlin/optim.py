"""The optimisers of C5's online training, with torch's semantics: SGD (with momentum) and Adam,
constant or cosine learning-rate schedule, optional linear warm-up.  Pure functions of pytrees."""

from __future__ import annotations

from typing import NamedTuple

from ._jax import jax, jnp

OPTIMIZERS = ("sgd", "adam")
SCHEDULES = ("constant", "cosine")


class Optimizer(NamedTuple):
    """Static optimiser settings (torch semantics).  ``sgd``: ``b <- momentum b + g``,
    ``p <- p - lr_t b``; ``adam``: torch.optim.Adam (bias-corrected moments, ``eps`` outside the
    root).  ``schedule``: ``constant`` or ``cosine`` over ``steps``, after a linear warm-up over the
    first ``warmup`` steps when > 0 (the formula: :func:`learning_rate`).  No field has a default:
    the config's defaults live in the schema alone (``c5.optimizer``)."""

    name: str
    lr: float
    momentum: float
    beta1: float
    beta2: float
    eps: float
    schedule: str
    steps: int
    warmup: int


class OptState(NamedTuple):
    m: object  # first moment / velocity, like the params
    v: object  # second moment (adam), like the params


def opt_init(p) -> OptState:
    z = jax.tree.map(jnp.zeros_like, p)
    return OptState(z, z)


def learning_rate(opt: Optimizer, step, xp=jnp):
    """``lr_t = lr (1 + cos(pi t / steps)) / 2`` (cosine; constant: ``lr``) times
    ``min(1, (t + 1) / warmup)`` (warmup > 0) at (0-based) step ``t``: the schedule's one home.
    ``step``: scalar or (n,); ``xp``: ``jax.numpy`` (training) or ``numpy`` (the readers'
    :func:`softlin.claims.c5_convergence.learning_time`), same operations in the same order."""
    lr = xp.asarray(opt.lr, xp.float64)
    if opt.schedule == "cosine":
        lr = lr * 0.5 * (1.0 + xp.cos(xp.pi * step / opt.steps))
    if opt.warmup > 0:
        lr = lr * xp.minimum(1.0, (step + 1) / opt.warmup)
    return lr


def opt_update(opt: Optimizer, p, g, s: OptState, step):
    """One update at (0-based) ``step``; returns (params, state)."""
    lr = learning_rate(opt, step)
    if opt.name == "sgd":
        if opt.momentum == 0.0:
            return jax.tree.map(lambda a, b: a - lr * b, p, g), s
        m = jax.tree.map(lambda b, gg: opt.momentum * b + gg, s.m, g)
        return jax.tree.map(lambda a, b: a - lr * b, p, m), OptState(m, s.v)
    t = (step + 1).astype(jnp.float64)
    m = jax.tree.map(lambda a, gg: opt.beta1 * a + (1 - opt.beta1) * gg, s.m, g)
    v = jax.tree.map(lambda a, gg: opt.beta2 * a + (1 - opt.beta2) * gg * gg, s.v, g)
    c1, c2 = 1 - opt.beta1 ** t, 1 - opt.beta2 ** t
    new = jax.tree.map(lambda a, mm, vv: a - lr * (mm / c1) / (jnp.sqrt(vv / c2) + opt.eps), p, m, v)
    return new, OptState(m, v)
