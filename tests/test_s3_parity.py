"""S3: the parity table, numerically."""

import numpy as np
import pytest

from symbolic.export import s3

from helpers import fd_grad, gamma_w_np, softmax_predict_np, spd


def _model_loss(model, U, v, w, xq, X, S):
    zq = np.r_[xq, 0.0]
    Z = np.c_[X, X @ w]
    if model == "linear_inf":
        f = v @ gamma_w_np(S, w) @ U @ zq
    elif model == "linear_L":
        f = v @ (Z.T @ Z / len(Z)) @ U @ zq
    else:
        f = softmax_predict_np(U, v, Z, zq)
    return 0.5 * (f - w @ xq) ** 2


@pytest.mark.parametrize("model", ["linear_inf", "linear_L", "softmax_L"])
def test_parity_table_numeric(model):
    rng = np.random.default_rng(21)
    d = 2
    S, w, xq, X = spd(rng, d), rng.normal(size=d), rng.normal(size=d), rng.normal(size=(5, d))
    U = np.zeros((d + 1, d + 1))
    U[:d, :d], U[d, d] = rng.normal(size=(d, d)), 0.3
    v = np.r_[np.zeros(d), 0.9]
    table = s3.parity_table(model)
    assert len(table) == (d + 1) ** 2 + d + 1
    for sign, ww in ((1, w), (-1, -w)):
        gU = fd_grad(lambda P: _model_loss(model, P, v, ww, xq, X, S), U)
        gv = fd_grad(lambda p: _model_loss(model, U, p, ww, xq, X, S), v)
        if sign == 1:
            g_plus = {**{f"U[{i},{j}]": gU[i, j] for i in range(3) for j in range(3)}, **{f"v[{i}]": gv[i] for i in range(3)}}
        else:
            g_minus = {**{f"U[{i},{j}]": gU[i, j] for i in range(3) for j in range(3)}, **{f"v[{i}]": gv[i] for i in range(3)}}
    for name, par in table.items():
        assert np.isclose(g_minus[name], par * g_plus[name], atol=1e-6), (model, name)
        off = (name.startswith("v[") and name != "v[2]") or (name.startswith("U[") and (name[2] == "2") != (name[4] == "2"))
        assert par == (-1 if off else 1)


