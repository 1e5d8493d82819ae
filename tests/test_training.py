"""Gradient-descent trajectories against the numpy reference, the seed log, and the S3/S4 structure."""
import numpy as np
import pytest

from softlin import metrics, models, population, train
from softlin import numpy_reference as ref
from softlin import params as P
from softlin import tasks as T
from softlin.params import Params

from helpers import ANISO, random_params, ref_tasks, tree_allclose

MODELS = ("softmax", "linear", "limit")
L_SMALL = 13


def ref_G(model, rt, L):
    return {"softmax": None, "linear": rt.Ghat(L), "limit": rt.Gamma}[model]


def ref_mode(model):
    return "softmax" if model == "softmax" else "linear"


@pytest.fixture(scope="module")
def aniso_tasks():
    return T.sample(777, 3, ANISO, n_pairs=4, n_query=2, l_max=L_SMALL)


# --------------------------------------------------------------------------- vs the reference
@pytest.mark.parametrize("model", MODELS)
def test_seed_convention_vs_reference(aniso_tasks, model):
    t, rt = aniso_tasks, ref_tasks(aniso_tasks)
    p0 = P.init_eq9(t.sigma)
    traj = train.gradient_descent(model, p0, t, L=L_SMALL, lr=0.05, steps=50, record_every=10,
                                  convention="seed")
    Uf, vf, hist = ref.train(rt, p0.U, p0.v, ref_mode(model), L=L_SMALL, G=ref_G(model, rt, L_SMALL),
                             lr=0.05, steps=50, record_every=10)
    assert len(hist) == 6 and traj.loss.shape == (6,)
    assert np.array_equal(traj.step, np.arange(0, 51, 10))
    tree_allclose(traj.params, Params(np.stack([h[0] for h in hist]), np.stack([h[1] for h in hist])),
                  rtol=1e-10)
    tree_allclose(traj.loss, np.array([h[2] for h in hist]), rtol=1e-10)
    tree_allclose(traj.final, Params(Uf, vf), rtol=1e-10)  # steps + 1 updates
    assert float(traj.loss[-1]) < float(traj.loss[0])


@pytest.mark.parametrize("model", MODELS)
def test_standard_convention_has_steps_updates(aniso_tasks, rng, model):
    t, rt = aniso_tasks, ref_tasks(aniso_tasks)
    p0 = random_params(rng, 3, scale=0.3)
    steps, every, lr = 12, 4, 0.05
    traj = train.gradient_descent(model, p0, t, L=L_SMALL, lr=lr, steps=steps, record_every=every)
    U, v = p0.U.copy(), p0.v.copy()
    recs = []
    for k in range(steps + 1):  # manual loop: record every 4th iterate, exactly `steps` updates
        loss, gU, gv = ref.loss_grad(rt, U, v, ref_mode(model), L_SMALL, ref_G(model, rt, L_SMALL))
        if k % every == 0:
            recs.append((U.copy(), v.copy(), loss))
        if k < steps:
            U, v = U - lr * gU, v - lr * gv
    assert np.array_equal(traj.step, [0, 4, 8, 12])
    tree_allclose(traj.params, Params(np.stack([r[0] for r in recs]), np.stack([r[1] for r in recs])),
                  rtol=1e-10)
    tree_allclose(traj.loss, np.array([r[2] for r in recs]), rtol=1e-10)
    tree_allclose(traj.final, Params(U, v), rtol=1e-10)
    # `final` is the last record (standard), bit for bit
    assert np.array_equal(traj.final.U, traj.params.U[-1]) and np.array_equal(traj.final.v, traj.params.v[-1])
    seed = train.gradient_descent(model, p0, t, L=L_SMALL, lr=lr, steps=steps, record_every=every,
                                  convention="seed")
    assert np.array_equal(seed.params.U, traj.params.U)  # same records, one more update at the end
    gU = models.grad(model, Params(traj.final.U, traj.final.v), t, L_SMALL)
    tree_allclose(seed.final, Params(traj.final.U - lr * gU.U, traj.final.v - lr * gU.v), rtol=1e-13)


def test_reproduces_seed_log_numbers():
    """The seed log, isotropic seed 777: theta_inf R 1.859e+00 -> 5.762e-25, dist to Bayes 0.00029;
    softmax L=8: D_inf(max) = 6.0898e-01, dBayes = 0.6091 (96 tasks x 2 queries, lr 0.01, 2500 steps)."""
    sigma = np.eye(3)
    t = T.sample(777, 3, sigma, n_pairs=48, n_query=2, l_max=4096)
    p0, ps = P.init_eq9(sigma), population.bayes_optimum(sigma)
    inf = train.gradient_descent("limit", p0, t, lr=0.01, steps=2500, record_every=20, convention="seed")
    sm = train.gradient_descent("softmax", p0, t, L=8, lr=0.01, steps=2500, record_every=20,
                                convention="seed")
    assert f"{float(inf.loss[0]):.3e}" == "1.859e+00"
    assert f"{float(inf.loss[-1]):.3e}" == "5.762e-25"
    assert f"{metrics.theta_dist(inf.final, ps):.5f}" == "0.00029"
    d_inf = metrics.theta_dist(sm.params, inf.params)
    assert f"{d_inf.max():.4e}" == "6.0898e-01"
    assert f"{metrics.theta_dist(sm.final, ps):.4f}" == "0.6091"
    # and the independent reference reproduces the same digits (linear(inf) only; cheap)
    rt = ref_tasks(t)
    Ui, vi, hi = ref.train(rt, p0.U, p0.v, "linear", G=rt.Gamma, lr=0.01, steps=2500)
    assert f"{hi[0][2]:.3e}" == "1.859e+00" and f"{hi[-1][2]:.3e}" == "5.762e-25"
    assert f"{ref.theta_dist(Ui, vi, ps.U, ps.v):.5f}" == "0.00029"


# --------------------------------------------------------------------------- S3 parity
def _single(x, w, xq, sigma):
    return T.Tasks(x=x[None], w=w[None], xq=xq[None], sigma=sigma)


def _off(p):
    d = p.U.shape[-1] - 1
    U, v = np.asarray(p.U), np.asarray(p.v)
    return np.concatenate([U[d, :d], U[:d, d], v[:d]])


def _block(p):
    d = p.U.shape[-1] - 1
    U, v = np.asarray(p.U), np.asarray(p.v)
    return np.concatenate([U[:d, :d].ravel(), [U[d, d], v[d]]])


@pytest.mark.parametrize("model", MODELS)
def test_parity_of_gradient_under_w_flip(rng, model):
    d, L = 3, 9
    sigma = ANISO
    x = rng.normal(size=(L, d)) @ np.sqrt(sigma)
    xq = rng.normal(size=(2, d)) @ np.sqrt(sigma)
    w = rng.normal(size=d)
    A = rng.normal(size=(d, d)) * 0.4
    theta = P.block_params(A, 0.8)
    theta = Params(theta.U.copy(), theta.v.copy())
    theta.U[d, d] = 0.3  # a nonzero bottom-right entry is still block-structured
    gp = models.grad(model, theta, _single(x, w, xq, sigma), L)
    gm = models.grad(model, theta, _single(x, -w, xq, sigma), L)
    assert np.max(np.abs(_off(gp))) > 1e-3  # the off-block part is not trivially zero
    assert np.array_equal(_off(gp), -_off(gm)), np.max(np.abs(_off(gp) + _off(gm)))
    assert np.array_equal(_block(gp), _block(gm)), np.max(np.abs(_block(gp) - _block(gm)))


@pytest.mark.parametrize("model", MODELS)
def test_block_structure_preserved_by_antithetic_gd(aniso_tasks, model):
    t = aniso_tasks
    p0 = P.init_eq9(t.sigma)
    traj = train.gradient_descent(model, p0, t, L=L_SMALL, lr=0.05, steps=200, record_every=50)
    mu, mv = metrics.offblock_mass(traj.params)
    assert np.max(mu) < 1e-12 and np.max(mv) < 1e-12
    # control: without the antithetic partners the block structure is not preserved
    n = t.n_pairs
    half = T.Tasks(x=t.x[:n], w=t.w[:n], xq=t.xq[:n], sigma=t.sigma)
    ctrl = train.gradient_descent(model, p0, half, L=L_SMALL, lr=0.05, steps=200, record_every=50)
    assert max(metrics.offblock_mass(ctrl.final)) > 1e-4


# --------------------------------------------------------------------------- S4 conservation
def _c(U, v):
    return np.sum(np.asarray(U) ** 2, axis=(-2, -1)) - np.sum(np.asarray(v) ** 2, axis=-1)


@pytest.mark.parametrize("model", ["linear", "limit"])
def test_conservation_law_linear_models(aniso_tasks, rng, model):
    """Bilinear f: <U, gU> = <v, gv> (Euler), so a GD step moves c = ||U||^2 - ||v||^2 by exactly
    lr^2 (||gU||^2 - ||gv||^2); over the run |c_T - c_0| <= lr^2 * steps * C, C = max(||gU||^2 + ||gv||^2)."""
    t, rt = aniso_tasks, ref_tasks(aniso_tasks)
    G = ref_G(model, rt, L_SMALL)
    pr = random_params(rng, 3)
    _, gU, gv = ref.linear_loss_grad(rt, pr.U, pr.v, G)
    assert abs(np.sum(pr.U * gU) - np.sum(pr.v * gv)) < 1e-14 * (1 + np.abs(np.sum(pr.v * gv)))

    lr, steps = 0.05, 100
    p0 = P.init_eq9(t.sigma)
    traj = train.gradient_descent(model, p0, t, L=L_SMALL, lr=lr, steps=steps, record_every=1)
    c = _c(traj.params.U, traj.params.v)
    g2 = np.array([np.sum(g[1] ** 2) - np.sum(g[2] ** 2) for g in
                   (ref.linear_loss_grad(rt, U, v, G) for U, v in zip(traj.params.U, traj.params.v))])
    gsum = np.array([np.sum(g[1] ** 2) + np.sum(g[2] ** 2) for g in
                     (ref.linear_loss_grad(rt, U, v, G) for U, v in zip(traj.params.U, traj.params.v))])
    assert abs(c[0]) < 1e-15  # Eq. (9) is balanced
    assert np.max(np.abs(np.diff(c) - lr ** 2 * g2[:-1])) < 1e-13
    assert abs(c[-1] - c[0]) <= lr ** 2 * steps * gsum.max()
    assert np.max(np.abs(np.diff(c))) > 1e-8  # the O(lr^2) drift is really there


def test_softmax_euler_defect(aniso_tasks, rng):
    """softmax: <U, gU> - <v, gv> = mean r (Cov_p(v.z, s) - f), s = z^T U z_q, computed directly
    from the attention weights; nonzero; one GD step moves c by -2 lr (defect) + lr^2 (||gU||^2 - ||gv||^2)."""
    t, rt = aniso_tasks, ref_tasks(aniso_tasks)
    p = Params(*ref.init_eq9(t.sigma))
    p = Params(p.U + 0.2 * rng.normal(size=p.U.shape), p.v + 0.2 * rng.normal(size=p.v.shape))
    Z = rt.Z(L_SMALL)
    S = np.einsum("tli,ij,tqj->tql", Z, p.U, rt.Zq)
    W = np.exp(S - S.max(-1, keepdims=True))
    W /= W.sum(-1, keepdims=True)
    vz = Z @ p.v
    f = np.einsum("tql,tl->tq", W, vz)
    cov = np.einsum("tql,tl,tql->tq", W, vz, S) - f * np.einsum("tql,tql->tq", W, S)
    direct = np.mean((f - rt.yq) * (cov - f))
    _, g = models.risk_and_grad("softmax", p, t, L_SMALL)
    defect = np.sum(p.U * np.asarray(g.U)) - np.sum(p.v * np.asarray(g.v))
    assert abs(direct) > 1e-3
    assert abs(defect - direct) < 1e-12 * max(1.0, abs(direct))
    lr = 0.05
    traj = train.gradient_descent("softmax", p, t, L=L_SMALL, lr=lr, steps=1, record_every=1)
    dc = _c(traj.final.U, traj.final.v) - _c(p.U, p.v)
    g2 = np.sum(np.asarray(g.U) ** 2) - np.sum(np.asarray(g.v) ** 2)
    assert abs(dc - (-2 * lr * defect + lr ** 2 * g2)) < 1e-13


# --------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("model", MODELS)
def test_training_is_deterministic(aniso_tasks, model):
    t = aniso_tasks
    p0 = P.init_eq9(t.sigma)
    a = train.gradient_descent(model, p0, t, L=L_SMALL, lr=0.05, steps=40, record_every=10)
    b = train.gradient_descent(model, p0, t, L=L_SMALL, lr=0.05, steps=40, record_every=10)
    for x, y in zip([a.params.U, a.params.v, a.loss, a.final.U], [b.params.U, b.params.v, b.loss, b.final.U]):
        assert np.array_equal(np.asarray(x), np.asarray(y))
