"""softlin.qkvo: the four-matrix head computes the (U, v) model's function (numpy, from the
definitions), PyTorch's default init's law, and gradients through the map against finite differences."""
import numpy as np
import pytest

from softlin import qkvo
from softlin._jax import jax, jnp


def _softmax(s):
    e = np.exp(s - s.max())
    return e / e.sum()


def test_qkvo_head_is_the_uv_model():
    """prediction = (W_O sum_l p_l W_V z_l)[-1], p = softmax((W_K z_l)^T (W_Q z_q) / sqrt(D)) equals
    v^T sum_l p_l z_l with p = softmax(z_l^T U z_q), for (U, v) = to_uv(W)."""
    d, L = 4, 7
    D = d + 1
    W = qkvo.init_qkvo(11, d)
    WQ, WK, WV, WO = (np.asarray(x) for x in W)
    uv = qkvo.to_uv(W)
    U, v = np.asarray(uv.U), np.asarray(uv.v)
    rng = np.random.default_rng(0)
    Z, zq = rng.normal(size=(L, D)), rng.normal(size=D)
    p_head = _softmax(np.array([(WK @ z) @ (WQ @ zq) for z in Z]) / np.sqrt(D))
    head = (WO @ sum(p * (WV @ z) for p, z in zip(p_head, Z)))[-1]
    p_uv = _softmax(Z @ U @ zq)
    np.testing.assert_allclose(p_uv, p_head, rtol=1e-12)
    assert v @ (p_uv @ Z) == pytest.approx(head, rel=1e-12)


def test_torch_linear_init_law():
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): within the bound, variance bound^2 / 3 (4 s.e.)."""
    fan_in, n = 16, 200_000
    x = qkvo.torch_linear_init(np.random.default_rng(1), n // fan_in, fan_in).ravel()
    b = 1 / np.sqrt(fan_in)
    assert x.shape == (n,) and np.abs(x).max() <= b
    var, var_se = np.mean(x ** 2), np.std(x ** 2, ddof=1) / np.sqrt(n)   # mean 0 by symmetry
    assert abs(var - b * b / 3) < 4 * var_se
    assert abs(x.mean()) < 4 * np.sqrt(b * b / 3 / n)


def test_gradient_through_to_uv_matches_finite_differences():
    d = 3
    W = qkvo.init_qkvo(5, d)
    z = jnp.asarray(np.random.default_rng(2).normal(size=d + 1))

    def f(W):
        uv = qkvo.to_uv(W)
        return jnp.sum(jnp.tanh(uv.U @ z)) + jnp.dot(uv.v, z) ** 2
    g = jax.grad(f)(W)
    h = 1e-6
    for k, name in enumerate(qkvo.QKVO._fields):
        for idx in [(0, 0), (1, 3), (d, d)]:
            up = W._replace(**{name: W[k].at[idx].add(h)})
            down = W._replace(**{name: W[k].at[idx].add(-h)})
            fd = (float(f(up)) - float(f(down))) / (2 * h)
            assert float(g[k][idx]) == pytest.approx(fd, rel=1e-6, abs=1e-9), (name, idx)


def test_unknown_parametrisation_is_refused_before_any_work():
    with pytest.raises(ValueError, match="parametrisation must be one of"):
        qkvo.init_params("qkv", 0, 3)
    assert isinstance(qkvo.init_params("qkvo", 0, 3), qkvo.QKVO)
