"""C5's training (softlin.online, qkvo, optim): one step is SGD on the step's batch, shared and per-L
streams, QKVO <-> (U, v), gradients against finite differences, optimisers against numpy,
checkpoint resume bit for bit."""
import numpy as np
import pytest

from softlin import models, online, optim, qkvo, stream
from softlin._jax import jax, jnp

from helpers import C5_D as D
from helpers import c5_task as _task
from helpers import optimizer


def _naive_loss(model, p, b, L):
    """Oracle: the authors' loss by plain autodiff of the naive models on the sliced prompt."""
    uv = qkvo.as_uv(p)
    zT = b.zT[:, :, :L]
    if model == "softmax":
        f = models.softmax_predict(uv, models.PromptData(zT, b.zq[:, None, :], b.yq[:, None],
                                                         jnp.asarray(L)))[:, 0]
    else:
        G = jnp.einsum("nil,njl->nij", zT, zT) / L
        f = models.linear_predict(uv, models.MomentData(G, b.zq[:, None, :], b.yq[:, None]))[:, 0]
    return jnp.mean((f - b.yq) ** 2)


@pytest.mark.parametrize("parametrisation", ["qkvo", "uv"])
def test_one_step_is_sgd_on_the_step_batch(parametrisation):
    """One step of run_chunk from step k: every run's logged loss and SGD update equal plain
    autodiff of the naive model on its first L tokens of stream.sample(step k)."""
    task = _task()
    law = task.law()
    Ls, k, lr, n, seed = (7, 12, 20), 37, 1e-2, 16, 5
    p = qkvo.init_params(parametrisation, 3, 5)
    p = jax.tree.map(lambda a: 2.0 * a, p)  # scores of order 1
    params = {m: online.stack_runs([p] * len(Ls)) for m in online.TRAINED_MODELS}
    st = online.State(params, {m: optim.opt_init(params[m]) for m in params}, jnp.asarray(k, jnp.int64))
    setup = online.Setup(Ls, Ls, n, 1, False, "shared", seed, optimizer("sgd", lr, steps=10))
    st1, loss = online.run_chunk(st, law, setup, 1)
    b = stream.sample(law, stream.stream_key(seed), k, n, max(Ls))
    for m in online.TRAINED_MODELS:
        for i, L in enumerate(Ls):
            ref, g = jax.value_and_grad(lambda q: _naive_loss(m, q, b, L))(p)
            np.testing.assert_allclose(float(loss[m][i, 0]), float(ref), rtol=1e-12)
            for a, p0, gg in zip(jax.tree.leaves(st1.params[m]), jax.tree.leaves(p), jax.tree.leaves(g)):
                np.testing.assert_allclose(np.asarray(a)[i], np.asarray(p0 - lr * gg), rtol=1e-11, atol=1e-14)
    assert int(st1.step) == k + 1


def test_per_L_streams():
    """streams: per_L gives length L the stream (seed, L): its step equals the naive step on
    stream.sample(key(seed, L)); both models share it."""
    task = _task()
    law = task.law()
    Ls, lr, n, seed = (6, 11), 1e-2, 8, 3
    p = qkvo.init_params("uv", 1, 5)
    params = {m: online.stack_runs([p] * 2) for m in online.TRAINED_MODELS}
    st = online.State(params, {m: optim.opt_init(params[m]) for m in params}, jnp.asarray(0, jnp.int64))
    setup = online.Setup(Ls, Ls, n, 1, False, "per_L", seed, optimizer("sgd", lr, steps=10))
    _, loss = online.run_chunk(st, law, setup, 1)
    for i, L in enumerate(Ls):
        b = stream.sample(law, stream.stream_key(seed, L), 0, n, L)
        for m in online.TRAINED_MODELS:
            np.testing.assert_allclose(float(loss[m][i, 0]), float(_naive_loss(m, p, b, L)), rtol=1e-12)


def test_shared_stream_run_equals_lone_run():
    """Trained together with other lengths on the shared stream, the run at L = 12 equals the run
    trained alone on the same stream (1e-12): runs share random numbers, nothing else."""
    task = _task()
    kw = dict(seed=3, init_seed=0, steps=40, batch=8, log_every=10, chunk=20,
              optimizer=optimizer("adam", 1e-2))
    group = online.train(task, [6, 12, 25], **kw)
    alone = online.train(task, [12], **kw)
    for m in online.TRAINED_MODELS:
        for a, b in zip(jax.tree.leaves(group[m]["params"]), jax.tree.leaves(alone[m]["params"])):
            np.testing.assert_allclose(np.asarray(a)[1], np.asarray(b)[0], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(group[m]["loss"][1], alone[m]["loss"][0], rtol=1e-12)
        assert not np.allclose(group[m]["loss"][0], group[m]["loss"][1])


def _direct_qkvo(p, zT, zq, model):
    """Independent numpy forward pass of the authors' head (oracle): tokens as columns."""
    WQ, WK, WV, WO = (np.asarray(a) for a in p)
    out = []
    for Z, q in zip(np.asarray(zT), np.asarray(zq)):
        L = Z.shape[1]
        s = (WK @ Z).T @ (WQ @ q) / np.sqrt(D)
        a = np.exp(s - s.max()) / np.exp(s - s.max()).sum() if model == "softmax" else s / L
        out.append((WO @ (WV @ Z) @ a)[-1])
    return np.array(out)


@pytest.mark.parametrize("model", ["softmax", "linear"])
def test_qkvo_maps_to_uv(model):
    """Predictions of the (U, v) image of QKVO weights through the shared kernels equal a direct
    numpy QKVO forward pass (the authors' head, written here) to 1e-12."""
    b = stream.sample(_task().law(), stream.stream_key(2), 0, 24, 30)
    p = qkvo.QKVO(*(3.0 * a for a in qkvo.init_qkvo(7, 5)))  # scores of order 1
    got = np.asarray(online.predict_on_batch(model, qkvo.to_uv(p), b, 30))
    ref = _direct_qkvo(p, b.zT, b.zq, model)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("model", ["softmax", "linear"])
def test_fused_gradient_vs_finite_differences(model):
    """Gradient of the step loss (kernel moments + custom VJP + autodiff through the QKVO map)
    against central differences of the loss recomputed from scratch, along random directions."""
    law = _task().law()
    key = stream.stream_key(4)
    L = 20

    def loss(q):
        uv = jax.lax.stop_gradient(qkvo.as_uv(q))  # the moments are data at (U, v)
        if model == "softmax":
            d = stream.step_data(law, key, 0, 16, uv.U[None], uv.v[None], [L], [])
            return online.softmax_mse(q, d.m1[0], d.m2[0], d.zq, d.yq)
        d = stream.step_data(law, key, 0, 16, jnp.zeros((0, D, D)), jnp.zeros((0, D)), [], [L])
        return online.linear_mse(q, d.G[0], d.zq, d.yq)

    p = qkvo.QKVO(*(2.0 * a for a in qkvo.init_qkvo(1, 5)))
    g = jax.grad(loss)(p)
    rng = np.random.default_rng(0)
    for _ in range(3):
        dirn = qkvo.QKVO(*(jnp.asarray(rng.normal(size=(D, D))) for _ in range(4)))
        h = 1e-5
        fd = (float(loss(jax.tree.map(lambda a, e: a + h * e, p, dirn)))
              - float(loss(jax.tree.map(lambda a, e: a - h * e, p, dirn)))) / (2 * h)
        an = sum(float(jnp.sum(a * e)) for a, e in zip(g, dirn))
        assert abs(fd - an) <= 1e-6 * max(1.0, abs(an)), (fd, an)


def test_torch_default_init():
    """nn.Linear's kaiming_uniform(a=sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    W = qkvo.torch_linear_init(np.random.default_rng(0), 400, 6)
    bound = 1 / np.sqrt(6)
    assert np.abs(W).max() <= bound and np.abs(W).max() > 0.99 * bound
    assert abs(W.std() - bound / np.sqrt(3)) < 0.01 * bound


def _numpy_adam(p, grads, lr, b1=0.9, b2=0.999, eps=1e-8):
    """torch.optim.Adam (amsgrad off, no weight decay), written out in numpy."""
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p


@pytest.mark.parametrize("name", ["adam", "sgd_momentum", "cosine", "cosine_warmup"])
def test_optimizers_against_numpy(name):
    """opt_update over 5 steps with given gradients against a numpy transcription of torch's rule."""
    rng = np.random.default_rng(3)
    p0 = rng.normal(size=4)
    grads = [rng.normal(size=4) for _ in range(5)]
    opt = {"adam": optimizer("adam", 0.01), "sgd_momentum": optimizer("sgd", 0.01, momentum=0.9),
           "cosine": optimizer("sgd", 0.01, schedule="cosine", steps=5),
           "cosine_warmup": optimizer("sgd", 0.01, schedule="cosine", steps=5, warmup=3)}[name]
    p, s = jnp.asarray(p0), optim.opt_init(jnp.asarray(p0))
    for t, g in enumerate(grads):
        p, s = optim.opt_update(opt, p, jnp.asarray(g), s, jnp.asarray(t, jnp.int64))
    if name == "adam":
        ref = _numpy_adam(p0, grads, 0.01)
    elif name == "sgd_momentum":
        ref, b = p0.copy(), np.zeros(4)
        for g in grads:
            b = 0.9 * b + g
            ref = ref - 0.01 * b
    else:  # lr_t = lr (1 + cos(pi t / T)) / 2, times (t + 1) / 3 during a 3-step warm-up
        ref = p0.copy()
        ramp = [1 / 3, 2 / 3, 1, 1, 1] if name == "cosine_warmup" else [1] * 5
        for t, g in enumerate(grads):
            ref = ref - 0.01 * 0.5 * (1 + np.cos(np.pi * t / 5)) * ramp[t] * g
    np.testing.assert_allclose(np.asarray(p), ref, rtol=1e-13)


@pytest.mark.parametrize("parametrisation", ["qkvo", "uv"])
def test_checkpoint_resume_is_bitwise(tmp_path, parametrisation):
    """Interrupted after one chunk and resumed from its checkpoint == one uninterrupted run."""
    task = _task()
    kw = dict(parametrisation=parametrisation, seed=1, init_seed=2, steps=60, batch=8,
              optimizer=optimizer("adam", 1e-2), log_every=10, chunk=20)
    full = online.train(task, [9, 14], **kw)
    ck = tmp_path / "ck.npz"
    part = online.train(task, [9, 14], checkpoint=ck, stop_after_chunks=1, **kw)
    assert part["step"] == 20 and ck.exists()
    resumed = online.train(task, [9, 14], checkpoint=ck, **kw)
    assert resumed["step"] == 60
    for m in online.TRAINED_MODELS:
        for a, b in zip(jax.tree.leaves(full[m]["params"]), jax.tree.leaves(resumed[m]["params"])):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(full[m]["loss"], resumed[m]["loss"])
    # another setting does not resume from this checkpoint
    other = online.train(task, [9, 14], checkpoint=ck, **{**kw, "optimizer": optimizer("adam", 2e-2)})
    assert not np.array_equal(other["softmax"]["loss"], full["softmax"]["loss"])
    # nor does other code: a finished checkpoint under another code version restarts from step 0
    done = tmp_path / "done.npz"
    online.train(task, [9], checkpoint=done, code_version="a", **kw)
    said = []
    online.train(task, [9], checkpoint=done, code_version="a", progress=said.append, **kw)
    assert said and all("resumed" in m for m in said), said
    said.clear()
    online.train(task, [9], checkpoint=done, code_version="b", progress=said.append, **kw)
    assert not any("resumed" in m for m in said) and sum("step" in m for m in said) == 3, said


