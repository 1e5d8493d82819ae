"""C5's batch stream (softlin.stream, the C++ sampler): Philox known answers, the kernel against its XLA
definition, the laws of the draws, nested batches, one step's moments."""
import numpy as np
import pytest

from softlin import stream
from softlin._jax import jnp
from softlin.kernels.build import use_kernels
from softlin.kernels.softmax_moments import softmax_moments_xla
from softlin.online_task import kms_sigma

from helpers import C5_D as D
from helpers import c5_task as _task
from helpers import cov_ok as _cov_ok

SIGMA = kms_sigma(5, 0.5)


# Random123's known-answer vectors for Philox4x32-10: (counter, key, output)
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


@pytest.mark.parametrize("ctr,key,expected", KAT)
def test_philox_known_answers(ctr, key, expected):
    out = stream.philox4x32([np.array([c], np.uint32) for c in ctr], np.array(key, np.uint32))
    assert [int(x[0]) for x in out] == list(expected)


@pytest.mark.parametrize("f64", [False, True])
def test_kernel_sampler_equals_xla_definition(f64):
    """The C++ stream equals the pure-XLA definition (same Philox words; normals to a few ulps:
    different vector log/sin/cos); a wrong word or layout would differ at O(1)."""
    if not use_kernels():
        pytest.skip("C++ kernels unavailable")
    law = _task().law()
    key = stream.stream_key(2025, 0)
    a = stream.sample(law, key, 7, 16, 45, f64)
    b = stream.sample_xla(law, key, 7, 16, 45, f64)
    tol = 1e-13 if f64 else 2e-6
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=tol)


@pytest.mark.parametrize("f64", [False, True])
def test_normals_are_standard(f64):
    """Plane normals: mean 0, variance 1, kurtosis 3 (within 5 SE), and a Kolmogorov-Smirnov
    distance to N(0, 1) below its 1e-4 critical value, over 2^20 draws."""
    from scipy import stats

    g = np.asarray(stream.plane_normals(stream.stream_key(1, 2), np.arange(64), 3, 0, 16384, f64)).ravel()
    N = g.size
    assert abs(g.mean()) < 5 / np.sqrt(N)
    assert abs(g.var() - 1) < 5 * np.sqrt(2 / N)
    assert abs(np.mean(g ** 4) - 3) < 5 * np.sqrt(96 / N)
    assert stats.kstest(g, "norm").pvalue > 1e-4
    # the other words of a block are not a copy: correlation of consecutive normals ~ 0
    assert abs(np.corrcoef(g[:-1], g[1:])[0, 1]) < 5 / np.sqrt(N)


@pytest.mark.parametrize("mode", ["correct", "as_in_authors_code"])
def test_sampler_moments(mode):
    """x, x_q, w, noise: zero means and the stated covariances, within 5 standard errors
    (entry-wise; 15 + 15 + 15 + 1 checks, so a false alarm has probability ~1e-5)."""
    task = _task(mode)
    b = stream.sample(task.law(), stream.stream_key(11), 0, 4096, 40)
    zT, zq, w = np.asarray(b.zT), np.asarray(b.zq), np.asarray(b.w)
    x = zT[:, :5, :].transpose(0, 2, 1)
    C = np.linalg.cholesky(SIGMA)
    Sp = SIGMA if mode == "correct" else C @ C @ C.T @ C.T
    Sq = SIGMA if mode == "correct" else np.eye(5)
    _cov_ok(x, Sp)
    _cov_ok(zq[:, :5], Sq)
    _cov_ok(w, np.eye(5) / 5)
    eps = zT[:, 5, :] - np.einsum("nld,nd->nl", x, w)
    eps_q = np.asarray(b.yq) - np.sum(zq[:, :5] * w, -1)
    _cov_ok(np.concatenate([eps.ravel(), eps_q]), np.array([[0.1]]))
    corr = np.corrcoef(eps.ravel(), x[..., 0].ravel())[0, 1]
    assert abs(corr) < 5 / np.sqrt(eps.size)
    assert np.all(zq[:, 5] == 0)


def test_authors_covariance_slip():
    """The public code's prompt law: rows g C^T C^T (C the lower Cholesky factor of the KMS
    Sigma), covariance C C C^T C^T with diagonal [1.000, 1.433, 1.592, 1.644, 1.660] (not Sigma^2);
    ours matches it and a sample drawn their way (numpy, written here), within 5 SE."""
    C = np.linalg.cholesky(SIGMA)
    target = C @ C @ C.T @ C.T
    np.testing.assert_allclose(np.diag(target), [1.000, 1.433, 1.592, 1.644, 1.660], atol=5e-4)
    assert np.abs(target - SIGMA @ SIGMA).max() > 0.1
    task = _task("as_in_authors_code")
    np.testing.assert_allclose(task.sigma_prompt, target, rtol=1e-12)
    np.testing.assert_allclose(task.sigma_query, np.eye(5), rtol=0)
    x = np.asarray(stream.sample(task.law(), stream.stream_key(5), 0, 2048, 64).zT)[:, :5, :]
    ours = x.transpose(0, 2, 1).reshape(-1, 5)
    rng = np.random.default_rng(0)
    theirs = rng.standard_normal((ours.shape[0], 5)) @ C.T @ C.T  # their row-vector code
    _cov_ok(ours, target)
    _cov_ok(theirs, target)
    # two-sample: the covariances agree entry-wise within 5 combined SE
    N = ours.shape[0]
    se = np.sqrt(2 * (np.outer(np.diag(target), np.diag(target)) + target ** 2) / N)
    assert np.abs(ours.T @ ours / N - theirs.T @ theirs / N).max() < 5 * se.max()


def test_batches_nest_and_are_drawn_directly():
    """A run at length L sees exactly the first L tokens of the shared batch of step k (bit for
    bit, whatever the longest length), any step is drawn directly, and steps differ."""
    law = _task().law()
    key = stream.stream_key(9)
    long = stream.sample(law, key, 41, 12, 300)
    for L in (1, 7, 8, 9, 100):
        short = stream.sample(law, key, 41, 12, L)
        np.testing.assert_array_equal(np.asarray(short.zT), np.asarray(long.zT)[:, :, :L])
        np.testing.assert_array_equal(np.asarray(short.zq), np.asarray(long.zq))
        np.testing.assert_array_equal(np.asarray(short.yq), np.asarray(long.yq))
    other = stream.sample(law, key, 42, 12, 300)
    assert not np.array_equal(np.asarray(other.zT), np.asarray(long.zT))
    assert not np.array_equal(np.asarray(stream.sample(law, stream.stream_key(9, 1), 41, 12, 300).zT),
                              np.asarray(long.zT))


def test_step_data_moments_for_all_lengths():
    """One pass gives every linear length's Ghat_L and every softmax run's moments: against numpy
    on the stream's batch (second moments) and the pure-XLA softmax moments."""
    law = _task().law()
    key = stream.stream_key(4)
    Ls, Llin = [5, 33, 64], [3, 8, 31, 64]
    rng = np.random.default_rng(1)
    U = jnp.asarray(0.3 * rng.normal(size=(3, D, D)))
    v = jnp.asarray(rng.normal(size=(3, D)))
    data = stream.step_data(law, key, 6, 10, U, v, Ls, Llin)
    b = stream.sample(law, key, 6, 10, 64)
    zT = np.asarray(b.zT)
    for k, L in enumerate(Llin):
        ref = np.einsum("nil,njl->nij", zT[:, :, :L], zT[:, :, :L]) / L
        np.testing.assert_allclose(np.asarray(data.G[k]), ref, rtol=1e-13, atol=1e-14)
    for r, L in enumerate(Ls):
        m1, m2 = softmax_moments_xla(U[r], v[r], b.zT, b.zq[:, None, :], L)
        np.testing.assert_allclose(np.asarray(data.m1[r]), np.asarray(m1[:, 0]), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(np.asarray(data.m2[r]), np.asarray(m2[:, 0]), rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(np.asarray(data.zq), np.asarray(b.zq))
    # a length's moments do not depend on which other lengths are in the list
    alone = stream.step_data(law, key, 6, 10, U[:0], v[:0], [], [31])
    np.testing.assert_array_equal(np.asarray(alone.G[0]), np.asarray(data.G[2]))


