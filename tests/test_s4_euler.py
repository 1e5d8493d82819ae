"""S4: the Euler (homogeneity) defects and GD conservation, against finite differences."""

import numpy as np

from symbolic.export import s2, s4

from helpers import softmax_predict_np, spd


def test_euler_defect_softmax_fd():
    rng = np.random.default_rng(9)
    d, L = 3, 6
    U, v = rng.normal(size=(d + 1, d + 1)), rng.normal(size=d + 1)
    Z, zq, yq = rng.normal(size=(L, d + 1)), np.r_[rng.normal(size=d), 0.0], 0.4

    def loss(t):
        return 0.5 * (softmax_predict_np(np.exp(t) * U, np.exp(-t) * v, Z, zq) - yq) ** 2

    fd = (loss(1e-5) - loss(-1e-5)) / 2e-5
    assert np.isclose(s4.euler_defect_fn()(U, v, Z, zq, yq), fd, rtol=1e-6, atol=1e-8)
    # linear(L) is bilinear: the same rescaling leaves the loss unchanged
    G = Z.T @ Z / L

    def lin(t):
        return 0.5 * ((np.exp(-t) * v) @ G @ (np.exp(t) * U) @ zq - yq) ** 2

    assert abs((lin(1e-5) - lin(-1e-5)) / 2e-5) < 1e-8


def test_euler_defect_jax(jax_x64):
    rng = np.random.default_rng(19)
    U, v, Z, zq = rng.normal(size=(3, 3)), rng.normal(size=3), rng.normal(size=(4, 3)), np.r_[rng.normal(size=2), 0]
    assert np.isclose(float(s4.euler_defect_fn("jax")(U, v, Z, zq, 0.1)), s4.euler_defect_fn()(U, v, Z, zq, 0.1), rtol=1e-12)


def test_gd_step_conservation_linear_inf():
    rng = np.random.default_rng(4)
    d, lr = 3, 0.01
    S, U, v = spd(rng, d), rng.normal(size=(4, 4)), rng.normal(size=4)
    gU, gv = s2.population_risk_grad_fn()(U, v, S)
    assert abs(np.sum(U * gU) - v @ gv) < 1e-9 * (1 + abs(v @ gv))          # Euler identity
    U1, v1 = U - lr * gU, v - lr * gv
    change = (np.sum(U1 ** 2) - v1 @ v1) - (np.sum(U ** 2) - v @ v)
    assert np.isclose(change, lr ** 2 * (np.sum(gU ** 2) - gv @ gv), rtol=1e-6, atol=1e-12)


