"""Gradient-descent trajectories: one compiled ``lax.scan`` over the whole run.

Conventions for recording (both record the iterate and its loss at iterations
``0, record_every, ..., steps``):

* ``"standard"``: ``steps`` updates; ``final`` is the last recorded iterate.
* ``"seed"``: the seed log's loop ``for it in 0..steps`` (inclusive), evaluate, record, update;
  so ``final`` has had ``steps + 1`` updates while the last record is the iterate after ``steps``.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from ._jax import jax, jnp
from .models import VALUE_AND_GRAD, VALUE_AND_GRAD_SEED_ORDER, check_params, model_data
from .params import Params
from .tasks import Tasks

CONVENTIONS = ("standard", "seed")


class Trajectory(NamedTuple):
    """Recorded run: ``params`` (Params with a leading axis n_rec), ``loss`` (n_rec,), ``step`` (n_rec,), ``final``."""

    params: Params
    loss: jax.Array
    step: np.ndarray
    final: Params


@partial(jax.jit, static_argnames=("value_and_grad", "n_rec", "record_every", "extra_update"))
def descend(value_and_grad, data, params0: Params, lr, n_rec: int, record_every: int,
            extra_update: bool):
    """``theta <- theta - lr grad R(theta)``; records ``n_rec`` iterates ``record_every`` apart."""

    def update(p):
        loss, g = value_and_grad(p, data)
        return jax.tree.map(lambda a, b: a - lr * b, p, g), loss

    def chunk(p, _):
        p_next, loss = update(p)
        p_next = jax.lax.fori_loop(0, record_every - 1, lambda i, q: update(q)[0], p_next)
        return p_next, (p, loss)

    p_end, (rec, losses) = jax.lax.scan(chunk, params0, None, length=n_rec - 1)
    p_after, loss_end = update(p_end)
    rec = jax.tree.map(lambda r, x: jnp.concatenate([r, x[None]]), rec, p_end)
    losses = jnp.concatenate([losses, loss_end[None]])
    return rec, losses, (p_after if extra_update else p_end)


def _check_schedule(lr, steps, record_every, convention):
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if int(record_every) != record_every or record_every < 1 or steps % record_every:
        raise ValueError(f"record_every must be a positive divisor of steps={steps}, got {record_every!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    return steps // record_every + 1


def run_descent(vg, data, params0, lr, steps, record_every, convention) -> Trajectory:
    """:func:`descend` with the value-and-grad ``vg`` on ``data`` after the schedule's checks; numpy steps."""
    n_rec = _check_schedule(lr, steps, record_every, convention)
    rec, losses, final = descend(vg, data, params0, jnp.float64(lr), n_rec, int(record_every),
                                 convention == "seed")
    return Trajectory(rec, losses, np.arange(0, steps + 1, record_every), final)


REDUCTIONS = ("pairs", "seed_order")


def gradient_descent(model: str, params0: Params, tasks: Tasks, L=None, lr: float = 0.01, *,
                     steps: int, record_every: int,
                     convention: str = "standard", reduction: str = "pairs") -> Trajectory:
    """Gradient descent on the empirical risk of ``model`` over ``tasks`` at prompt length ``L``.

    ``reduction``: ``"pairs"`` (antithetic partners summed first: the off-block gradient cancels
    exactly) or ``"seed_order"`` (tasks summed in the seed's order, :func:`models.seed_order_sum`:
    rounding asymmetries survive, as in the seed log's run).
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    data = model_data(model, tasks, L)
    p0 = check_params(params0, tasks.d)
    vg = (VALUE_AND_GRAD if reduction == "pairs" else VALUE_AND_GRAD_SEED_ORDER)[model]
    return run_descent(vg, data, p0, lr, steps, record_every, convention)


# --------------------------------------------------------------------------- record template
def trajectory_like(d: int, steps: int, record_every: int) -> Trajectory:
    """The template (:class:`softlin.records.Spec` leaves) of a trajectory of ``d``-dimensional
    tasks recorded every ``record_every`` of ``steps`` steps (:mod:`softlin.records` reads it back)."""
    from .records import Spec

    n_rec = _check_schedule(1.0, steps, record_every, "standard")
    D = int(d) + 1

    def params(*lead):
        return Params(Spec((*lead, D, D), np.float64), Spec((*lead, D), np.float64))
    return Trajectory(params(n_rec), Spec((n_rec,), np.float64), Spec((n_rec,), np.int64), params())
