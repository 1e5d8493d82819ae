"""C5's baselines (softlin.baselines) against the closed forms (S6) and Monte Carlo."""
import numpy as np
import pytest

from softlin import baselines, stream
from softlin._jax import jnp
from softlin.online_task import kms_sigma
from softlin.params import Params

from helpers import C5_D as D
from helpers import c5_task as _task

SIGMA = kms_sigma(5, 0.5)


def test_ridge_and_gd_against_closed_forms():
    """Ridge = numpy.linalg.solve on the explicit design; GD = its explicit formula."""
    b = stream.sample(_task().law(), stream.stream_key(8), 0, 10, 15)
    zT, zq = np.asarray(b.zT), np.asarray(b.zq)
    G = jnp.asarray(np.einsum("nil,njl->nij", zT, zT) / 15)
    r = np.asarray(baselines.ridge_predict(G, b.zq[:, None], 15, 0.1, 0.2))
    g = np.asarray(baselines.gd_predict(G, b.zq[:, None], SIGMA))
    for i in range(10):
        X, y, xq = zT[i, :5].T, zT[i, 5], zq[i, :5]
        w_hat = np.linalg.solve(X.T @ X + (0.1 / 0.2) * np.eye(5), X.T @ y)
        np.testing.assert_allclose(r[i], xq @ w_hat, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g[i], xq @ np.linalg.solve(SIGMA, X.T @ y / 15), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("mode", ["correct", "as_in_authors_code"])
def test_gd_risk_closed_form_vs_monte_carlo(mode):
    """Closed-form E (f_GD - y_q)^2 against 65 536 prompts (within 4 standard errors)."""
    task = _task(mode)
    L, n = 20, 8192
    errs = []
    for j in range(8):
        b = stream.sample(task.law(), stream.stream_key(100), j, n, L)
        zT = np.asarray(b.zT)
        G = jnp.asarray(np.einsum("nil,njl->nij", zT, zT) / L)
        f = baselines.gd_predict(G, b.zq[:, None], task.sigma_prompt)
        errs.append(np.asarray((f - b.yq) ** 2))
    e = np.concatenate(errs)
    closed = baselines.gd_risk_closed(L, task.sigma_prompt, task.sigma_query, 0.1, 0.2)
    se = e.std() / np.sqrt(e.size)
    assert abs(e.mean() - closed) < 4 * se, (e.mean(), closed, se)


def test_limit_predict_at_the_optimum():
    """v^T Gamma_w U z_q at U = blockdiag(S^-1 / c, 0), v = c e_D is w^T x_q (the infinite-prompt optimum)."""
    b = stream.sample(_task().law(), stream.stream_key(9), 0, 32, 5)
    U = np.zeros((D, D))
    U[:5, :5] = np.linalg.inv(SIGMA) / 1.7
    v = np.zeros(D)
    v[5] = 1.7
    zq = b.zq[:, None]
    f = baselines.limit_predict(Params(jnp.asarray(U), jnp.asarray(v)), b.w, zq, SIGMA, 0.1)
    np.testing.assert_allclose(np.asarray(f), np.asarray(b.w * b.zq[:, :5]).sum(-1), rtol=1e-12, atol=1e-12)


