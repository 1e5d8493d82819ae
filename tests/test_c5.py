"""C5 (paper Sec. 6): batch sampler, QKVO <-> (U, v), baselines, checkpoint resume."""
import numpy as np
import pytest

from softlin._jax import jax, jnp
from softlin import baselines, online
from softlin.claims import c5
from softlin.params import Params

SIGMA = online.kms_sigma(5, 0.5)
D = 6


def _task(mode="correct"):
    return online.make_task(SIGMA, 0.1, None, mode)


def _cov_ok(samples, target, n_se=5.0):
    """Sample covariance (mean known to be 0) within ``n_se`` standard errors of ``target``,
    entry-wise; SE of entry (i, j) for Gaussian data: sqrt((S_ii S_jj + S_ij^2) / N)."""
    X = np.asarray(samples).reshape(-1, target.shape[0])
    N = X.shape[0]
    C = X.T @ X / N
    se = np.sqrt((np.outer(np.diag(target), np.diag(target)) + target ** 2) / N)
    err = np.abs(C - target) / se
    assert err.max() < n_se, f"covariance off by {err.max():.2f} SE:\n{C}\nvs\n{target}"
    m = X.mean(0) / np.sqrt(np.diag(target) / N)
    assert np.abs(m).max() < n_se, f"mean off by {np.abs(m).max():.2f} SE"


@pytest.mark.parametrize("mode", ["correct", "as_in_authors_code"])
def test_sampler_moments(mode):
    """x, x_q, w, noise: zero means and the stated covariances, within 5 standard errors
    (entry-wise; 15 + 15 + 15 + 1 checks, so a false alarm has probability ~1e-5)."""
    task = _task(mode)
    n, L = 4096, 40
    b = online.sample_batch(jax.random.key(11), n, L, task)
    zT, zq, w = np.asarray(b.zT), np.asarray(b.zq), np.asarray(b.w)
    x = zT[:, :5, :].transpose(0, 2, 1)
    Sp = SIGMA if mode == "correct" else SIGMA @ SIGMA
    Sq = SIGMA if mode == "correct" else np.eye(5)
    _cov_ok(x, Sp)
    _cov_ok(zq[:, 0, :5], Sq)
    _cov_ok(w, np.eye(5) / 5)
    eps = zT[:, 5, :] - np.einsum("nld,nd->nl", x, w)
    eps_q = np.asarray(b.yq)[:, 0] - np.sum(zq[:, 0, :5] * w, -1)
    _cov_ok(np.concatenate([eps.ravel(), eps_q]), np.array([[0.1]]))
    # noise independent of the covariates: correlation within 5 / sqrt(N)
    corr = np.corrcoef(eps.ravel(), x[..., 0].ravel())[0, 1]
    assert abs(corr) < 5 / np.sqrt(eps.size)
    assert np.all(zq[:, 0, 5] == 0)


def test_batch_of_step_k_is_the_direct_draw():
    """The loop's batch at step k is sample_batch(fold_in(key, k)) drawn directly: one step of
    run_chunk from step k logs that batch's loss and takes its gradient step (to rounding: the
    compiled loop and the eager call may fuse differently; another batch differs at O(1)); and the
    direct draw, compiled or not, gives the same tokens."""
    task = _task()
    L, k, lr = 12, 37, 1e-3
    p = online.init_params("qkvo", 3, 5)
    key = online.root_key(5, L)
    st = online.State(online._stack([p]), online._stack([online.opt_init(p)]), jnp.asarray(k, jnp.int64))
    sched = online.Schedule("softmax", 16, L, lr, 0.0, 1, "float32")
    tkey, tarr = online._task_static(task)
    st1, loss = online.run_chunk(st, jnp.stack([key]), jnp.asarray([L], jnp.int64), tarr, sched, tkey, 1)
    b = online.sample_batch(online.step_key(key, k), 16, L, task)
    ref_loss, g = jax.value_and_grad(lambda q: online.mse("softmax", q, b, L))(p)
    np.testing.assert_allclose(float(loss[0, 0]), float(ref_loss), rtol=1e-13)
    for a, p0, gg in zip(jax.tree.leaves(st1.params), jax.tree.leaves(p), jax.tree.leaves(g)):
        np.testing.assert_allclose(np.asarray(a)[0], np.asarray(p0 - lr * gg), rtol=1e-13, atol=1e-16)
    bj = jax.jit(lambda kk: online.sample_batch(online.step_key(kk, k), 16, L, task))(key)
    np.testing.assert_allclose(np.asarray(bj.zT), np.asarray(b.zT), rtol=1e-14, atol=1e-15)
    assert int(st1.step) == k + 1
    # and a different step gives a different batch
    b2 = online.sample_batch(online.step_key(key, k + 1), 16, L, task)
    assert not np.array_equal(np.asarray(b.zT), np.asarray(b2.zT))


def _direct_qkvo(p, zT, zq, model):
    """Independent numpy forward pass of the authors' head (oracle): tokens as columns."""
    WQ, WK, WV, WO = (np.asarray(a) for a in p)
    out = []
    for Z, q in zip(np.asarray(zT), np.asarray(zq)[:, 0]):
        L = Z.shape[1]
        s = (WK @ Z).T @ (WQ @ q) / np.sqrt(D)
        a = np.exp(s - s.max()) / np.exp(s - s.max()).sum() if model == "softmax" else s / L
        out.append((WO @ (WV @ Z) @ a)[-1])
    return np.array(out)


@pytest.mark.parametrize("model", ["softmax", "linear"])
def test_qkvo_maps_to_uv(model):
    """QKVO predictions through U = W_K^T W_Q / sqrt(D), v = (W_O W_V)^T e_D and the shared
    kernels equal a direct QKVO forward pass to 1e-12."""
    task = _task()
    b = online.sample_batch(jax.random.key(2), 24, 30, task)
    p = online.init_qkvo(7, 5)
    p = online.QKVO(*(3.0 * a for a in p))  # larger weights: scores of order 1
    got = np.asarray(online.predict(model, p, b, 30))
    ref = _direct_qkvo(p, b.zT, b.zq, model)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))
    uv = online.to_uv(p)
    np.testing.assert_array_equal(np.asarray(online.predict(model, uv, b, 30)), got)


@pytest.mark.parametrize("model", ["softmax", "linear"])
def test_qkvo_gradient_vs_finite_differences(model):
    """d MSE / d (W_Q, W_K, W_V, W_O) through the map (fused custom-VJP kernel + autodiff) against
    central differences along random directions."""
    task = _task()
    b = online.sample_batch(jax.random.key(4), 16, 20, task)
    p = online.QKVO(*(2.0 * a for a in online.init_qkvo(1, 5)))
    f = lambda q: float(online.mse(model, q, b, 20))  # noqa: E731
    g = jax.grad(lambda q: online.mse(model, q, b, 20))(p)
    rng = np.random.default_rng(0)
    for _ in range(3):
        dirn = online.QKVO(*(jnp.asarray(rng.normal(size=(D, D))) for _ in range(4)))
        h = 1e-5
        fd = (f(jax.tree.map(lambda a, e: a + h * e, p, dirn))
              - f(jax.tree.map(lambda a, e: a - h * e, p, dirn))) / (2 * h)
        an = sum(float(jnp.sum(a * e)) for a, e in zip(g, dirn))
        assert abs(fd - an) <= 1e-6 * max(1.0, abs(an)), (fd, an)


def test_torch_default_init():
    """nn.Linear's kaiming_uniform(a=sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    W = online.torch_linear_init(np.random.default_rng(0), 400, 6)
    bound = 1 / np.sqrt(6)
    assert np.abs(W).max() <= bound and np.abs(W).max() > 0.99 * bound
    assert abs(W.std() - bound / np.sqrt(3)) < 0.01 * bound


def test_ridge_and_gd_against_closed_forms():
    """Ridge = numpy.linalg.solve on the explicit design; GD = its explicit formula."""
    task = _task()
    b = online.sample_batch(jax.random.key(8), 10, 15, task)
    G = online.moment(b.zT, 15)
    zT, zq = np.asarray(b.zT), np.asarray(b.zq)
    r = np.asarray(baselines.ridge_predict(G, b.zq, 15, 0.1, 0.2))
    g = np.asarray(baselines.gd_predict(G, b.zq, SIGMA))
    for i in range(10):
        X, y, xq = zT[i, :5].T, zT[i, 5], zq[i, 0, :5]
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
        b = online.sample_batch(jax.random.key(100 + j), n, L, task)
        f = baselines.gd_predict(online.moment(b.zT, L), b.zq, task.sigma_prompt)
        errs.append(np.asarray((f - b.yq[:, 0]) ** 2))
    e = np.concatenate(errs)
    closed = baselines.gd_risk_closed(L, task.sigma_prompt, task.sigma_query, 0.1, 0.2)
    se = e.std() / np.sqrt(e.size)
    assert abs(e.mean() - closed) < 4 * se, (e.mean(), closed, se)
    if mode == "correct":
        assert closed == pytest.approx(0.1 + 6.5 / L)


def test_limit_predict_at_the_optimum():
    """v^T Gamma_w U z_q at U = blockdiag(S^-1 / c, 0), v = c e_D is w^T x_q (the infinite-prompt optimum)."""
    task = _task()
    b = online.sample_batch(jax.random.key(9), 32, 5, task)
    U = np.zeros((D, D))
    U[:5, :5] = np.linalg.inv(SIGMA) / 1.7
    v = np.zeros(D)
    v[5] = 1.7
    f = baselines.limit_predict(Params(jnp.asarray(U), jnp.asarray(v)), b.w, b.zq, SIGMA, 0.1)
    np.testing.assert_allclose(np.asarray(f), np.asarray(baselines.limit_optimum_predict(b.w, b.zq)),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("parametrisation", ["qkvo", "uv"])
def test_checkpoint_resume_is_bitwise(tmp_path, parametrisation):
    """Interrupted after one chunk and resumed from its checkpoint == one uninterrupted run."""
    task = _task()
    kw = dict(parametrisation=parametrisation, seed=1, init_seed=2, steps=60, batch=8, lr=1e-2,
              log_every=10, chunk=20)
    full = online.train("softmax", [9], task, **kw)
    ck = tmp_path / "ck.npz"
    part = online.train("softmax", [9], task, checkpoint=ck, stop_after_chunks=1, **kw)
    assert part["step"] == 20 and ck.exists()
    resumed = online.train("softmax", [9], task, checkpoint=ck, **kw)
    assert resumed["step"] == 60
    for a, b in zip(jax.tree.leaves(full["params"]), jax.tree.leaves(resumed["params"])):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(full["loss"], resumed["loss"])
    # another setting does not resume from this checkpoint
    other = online.train("softmax", [9], task, checkpoint=ck, **{**kw, "lr": 2e-2})
    assert other["loss"].shape == full["loss"].shape
    assert not np.array_equal(other["loss"], full["loss"])
    # nor does other code: a finished checkpoint of the same settings under another code version
    # restarts from step 0 (it logs every chunk it runs; a resumed finished run logs none)
    done = tmp_path / "done.npz"
    online.train("softmax", [9], task, checkpoint=done, code_version="a", **kw)
    said = []
    online.train("softmax", [9], task, checkpoint=done, code_version="a", progress=said.append, **kw)
    assert said and all("resumed" in m for m in said), said
    said.clear()
    online.train("softmax", [9], task, checkpoint=done, code_version="b", progress=said.append, **kw)
    assert not any("resumed" in m for m in said) and sum("step" in m for m in said) == 3, said


def test_summarize_and_plateau():
    """plateau_drop: ~0 on a flat noisy curve, the fitted relative fall on a linear one."""
    rng = np.random.default_rng(0)
    assert abs(c5.plateau_drop(1 + 0.001 * rng.normal(size=1000), 0.1)) < 0.01
    y = np.linspace(2.0, 1.0, 1000)
    assert c5.plateau_drop(y, 0.1) == pytest.approx(0.1 * 1.0 / 1.05, rel=0.02)


def test_grouped_lengths_step_uses_prefix_of_the_padded_draw():
    """A vmapped group (Ls = [7, 12], prompts drawn at 12): one step of run 0 equals the loss and
    SGD step on its own step's batch cut to its first 7 tokens by slicing (not by the kernels'
    mask); run 1 (L = L_pad) equals the ungrouped single-run step."""
    task = _task()
    Ls, k, lr, n = [7, 12], 5, 1e-2, 16
    p = online.init_params("qkvo", 3, 5)
    keys = [online.root_key(9, L) for L in Ls]
    st = online.State(online._stack([p, p]), online._stack([online.opt_init(p)] * 2),
                      jnp.asarray(k, jnp.int64))
    sched = online.Schedule("softmax", n, max(Ls), lr, 0.0, 1, "float32")
    tkey, tarr = online._task_static(task)
    st1, loss = online.run_chunk(st, jnp.stack(keys), jnp.asarray(Ls, jnp.int64), tarr, sched, tkey, 1)
    for i, L in enumerate(Ls):
        b = online.sample_batch(online.step_key(keys[i], k), n, max(Ls), task)
        cut = b._replace(zT=b.zT[:, :, :L])
        ref_loss, g = jax.value_and_grad(lambda q: online.mse("softmax", q, cut, L))(p)
        np.testing.assert_allclose(float(loss[i, 0]), float(ref_loss), rtol=1e-12)
        for a, p0, gg in zip(jax.tree.leaves(st1.params), jax.tree.leaves(p), jax.tree.leaves(g)):
            np.testing.assert_allclose(np.asarray(a)[i], np.asarray(p0 - lr * gg), rtol=1e-12, atol=1e-15)


def test_train_run_group_and_split():
    """train_run of a group writes one array per L; split_runs gives each L its own run; the member
    at the group's largest L is the same run as training that L alone (same stream, to rounding)."""
    cfg = dict(d=5, kms_rho=0.5, noise_var=0.1, w_var=0.2, covariance_mode="correct",
               parametrisation="qkvo", rng_impl="threefry2x32", seed=3, init_seed=0, steps=40,
               batch=8, lr=1e-2, momentum=0.0, log_every=10, chunk=20, sample_dtype="float32")
    group = c5.split_runs(c5.train_run(cfg, "linear", [6, 11]))
    alone = c5.split_runs(c5.train_run(cfg, "linear", [11]))
    assert sorted(group) == [6, 11] and list(alone) == [11]
    assert group[6]["U"].shape == (D, D) and group[6]["loss"].shape == (4,)
    np.testing.assert_allclose(group[11]["U"], alone[11]["U"], rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(group[11]["loss"], alone[11]["loss"], rtol=1e-11)
    assert not np.allclose(group[6]["U"], group[11]["U"])
