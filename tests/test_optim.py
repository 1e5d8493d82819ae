"""softlin.optim against closed forms: the schedule's values, SGD (with momentum) and Adam under a
constant gradient, SGD on a quadratic; pytrees keep their structure."""
import math

import numpy as np
import pytest

from softlin import optim
from softlin._jax import jax, jnp

from helpers import schema_defaults


def _optimizer(name, lr, **kw):
    """An Optimizer with the schema's defaults (c5.optimizer, their one home) for the fields not given."""
    return optim.Optimizer(**{"steps": 1, **schema_defaults("c5", "optimizer"), "name": name, "lr": lr, **kw})


@pytest.mark.parametrize("schedule,warmup,step,factor", [
    ("constant", 0, 37, 1.0),
    ("cosine", 0, 0, 1.0),
    ("cosine", 0, 50, 0.5),                                   # (1 + cos(pi / 2)) / 2
    ("cosine", 0, 25, (1 + math.cos(math.pi / 4)) / 2),
    ("cosine", 0, 100, 0.0),
    ("constant", 10, 0, 0.1),                                 # (t + 1) / warmup
    ("constant", 10, 4, 0.5),
    ("constant", 10, 9, 1.0),
    ("cosine", 10, 4, 0.5 * (1 + math.cos(math.pi * 4 / 100)) / 2),
])
def test_learning_rate_schedule(schedule, warmup, step, factor):
    opt = _optimizer("sgd", 0.3, schedule=schedule, steps=100, warmup=warmup)
    assert float(optim.learning_rate(opt, jnp.asarray(step))) == pytest.approx(0.3 * factor, abs=1e-15)


def _run(opt, p, grad, n):
    s = optim.opt_init(p)
    for t in range(n):
        p, s = optim.opt_update(opt, p, grad(p), s, jnp.asarray(t))
    return p


def test_sgd_on_a_quadratic_contracts_geometrically():
    """f(p) = a p^2 / 2, g = a p: p_T = (1 - lr a)^T p_0."""
    a, lr, T = 3.0, 0.05, 25
    p = _run(_optimizer("sgd", lr), jnp.asarray([2.0, -1.0]), lambda p: a * p, T)
    np.testing.assert_allclose(np.asarray(p), (1 - lr * a) ** T * np.array([2.0, -1.0]), rtol=1e-13)


def test_sgd_momentum_under_a_constant_gradient():
    """b_t = g (1 - mu^t) / (1 - mu), so p_T = p_0 - lr g sum_{t=1..T} (1 - mu^t) / (1 - mu)."""
    mu, lr, T, g = 0.9, 0.01, 30, np.array([1.5, -0.25])
    p = _run(_optimizer("sgd", lr, momentum=mu), jnp.zeros(2), lambda p: jnp.asarray(g), T)
    total = sum((1 - mu ** t) / (1 - mu) for t in range(1, T + 1))
    np.testing.assert_allclose(np.asarray(p), -lr * g * total, rtol=1e-13)


def test_adam_under_a_constant_gradient_steps_lr_g_over_abs_g_plus_eps():
    """With bias correction, m_hat = g and v_hat = g^2 at every step: each step moves by
    lr g / (|g| + eps), whatever beta1, beta2 (torch.optim.Adam's algorithm)."""
    lr, T, eps = 0.02, 12, 1e-3
    g = np.array([4.0, -0.5, 1e-3])
    opt = _optimizer("adam", lr, beta1=0.8, beta2=0.95, eps=eps)
    p = _run(opt, jnp.zeros(3), lambda p: jnp.asarray(g), T)
    np.testing.assert_allclose(np.asarray(p), -T * lr * g / (np.abs(g) + eps), rtol=1e-12)


def test_adam_first_steps_against_the_written_out_recursion():
    """Two steps with different gradients, the recursion of torch's documentation by hand."""
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, 0.1
    g1, g2 = 0.3, -0.7
    m1, v1 = (1 - b1) * g1, (1 - b2) * g1 ** 2
    p1 = -lr * (m1 / (1 - b1)) / (math.sqrt(v1 / (1 - b2)) + eps)
    m2, v2 = b1 * m1 + (1 - b1) * g2, b2 * v1 + (1 - b2) * g2 ** 2
    p2 = p1 - lr * (m2 / (1 - b1 ** 2)) / (math.sqrt(v2 / (1 - b2 ** 2)) + eps)
    grads = iter([g1, g2])
    p = _run(_optimizer("adam", lr), jnp.asarray(0.0), lambda p: jnp.asarray(next(grads)), 2)
    assert float(p) == pytest.approx(p2, rel=1e-13)


def test_pytrees_keep_their_structure_and_float64():
    p = {"U": jnp.ones((2, 2)), "v": jnp.ones(2)}
    for opt in (_optimizer("sgd", 0.1, momentum=0.5), _optimizer("adam", 0.1, schedule="cosine", steps=4)):
        new, s = optim.opt_update(opt, p, p, optim.opt_init(p), jnp.asarray(1))
        assert jax.tree.structure(new) == jax.tree.structure(p)
        assert all(x.dtype == jnp.float64 for x in jax.tree.leaves((new, s)))
