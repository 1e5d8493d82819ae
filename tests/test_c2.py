"""C2 metrics against independent computations: gradient gap vs autodiff oracle, bootstrap s.e."""
import numpy as np
import pytest

from softlin import concentration as conc
from softlin import models, params
from softlin import tasks as T
from softlin.claims import c2
from softlin.params import Params


def test_grad_gap_matches_autodiff_oracle():
    """grad_gaps = autodiff(softmax risk) - autodiff(limit risk), on the same tasks."""
    import jax
    sigma = np.diag([2.0, 1.0, 0.5])
    tk = T.sample(9, 3, sigma, 3, 2, 40)
    p = params.bayes_optimum(sigma)
    p = Params(0.8 * p.U, p.v)
    Ls = [5, 40]
    diff = conc.grad_gaps([p], tk, Ls)[0]
    g_inf = jax.grad(models.linear_risk)(Params(np.asarray(p.U), np.asarray(p.v)), models.model_data("limit", tk))
    for j, L in enumerate(Ls):
        g = jax.grad(models.softmax_risk_autodiff)(Params(np.asarray(p.U), np.asarray(p.v)),
                                                   models.prompt_data(tk, L))
        want = np.concatenate([np.ravel(g.U - g_inf.U), np.ravel(g.v - g_inf.v)])
        np.testing.assert_allclose(diff[j], want, rtol=1e-10, atol=1e-13)


def test_grad_gap_zero_at_U_zero_v_part_closed_form():
    """U = 0, v = e_{d+1}: f_L = mean y_k, limit f = 0; dR/dv_{d+1} gap = mean_t,q (f_L - y_q) ybar - (0 - y_q) * 0."""
    sigma = np.eye(3)
    tk = T.sample(2, 3, sigma, 4, 3, 30)
    p = Params(np.zeros((4, 4)), np.eye(4)[3])
    diff = conc.grad_gaps([p], tk, [30])[0, 0]
    ybar = tk.y.mean(axis=1)  # (n,)
    r = ybar[:, None] - tk.yq  # residual of softmax(L) (f = ybar)
    want_vy = np.mean(r * ybar[:, None])  # dR/dv_{d+1}: mean r * m1_{d+1}, m1 = zbar
    assert diff[-1] == pytest.approx(want_vy, rel=1e-10)


def test_norm_over_blocks_bootstrap_se():
    rng = np.random.default_rng(1)
    vals, ses = [], []
    for _ in range(200):
        vecs = 1.0 + rng.standard_normal((20, 1, 1))  # norm of mean of N(1, 1): s.e. 1/sqrt(20)
        v, s = conc.norm_over_blocks(vecs, 300, 0)
        vals.append(v[0])
        ses.append(s[0])
    assert np.std(vals) == pytest.approx(1 / np.sqrt(20), rel=0.2)
    assert np.mean(ses) == pytest.approx(1 / np.sqrt(20), rel=0.2)


def test_sweep_probes_hit_target_lambda():
    sigma = np.diag([2.0, 1.0, 0.5])
    for pr, target in zip(c2.sweep_probes(sigma, [0.3, 0.9]), [0.3, 0.9]):
        A = np.asarray(pr["U"])[:3, :3]
        root = np.sqrt(sigma)
        assert np.linalg.eigvalsh(root @ A @ sigma @ A @ root).max() == pytest.approx(target, rel=1e-10)
        assert pr["beta"] == pytest.approx(min(0.5, 1 / (4 * target)))
        assert pr["v"] == params.bayes_optimum(sigma).v.tolist()
