"""softlin.task_integral (C2's estimator ``task_integral``) against independent sources: at a single
node ``w`` it is the present per-query gradient gap (``concentration._per_query_grad_gaps``, which
reads the labels ``y = w^T x`` as tokens), the Gauss-Hermite rule integrates the Gaussian moments
exactly and agrees with a rule of higher degree (the integrand is a polynomial of degree <= 6 in
``w``), and its means agree with a Monte Carlo average over ``w`` at fixed prompts and queries within
a stated statistical bound."""
import numpy as np
import pytest

from softlin import concentration as conc
from softlin import importance, models
from softlin import task_integral as ti
from softlin._jax import jnp
from softlin.params import Params
from softlin.tasks import Tasks, sample

from helpers import spd


def _label_free(rng, d, scale=0.5):
    """Dense random parameters with U's label row 0 (the scores do not read the labels)."""
    U = scale * rng.normal(size=(d + 1, d + 1))
    U[d, :d] = 0.0
    return Params(U, scale * rng.normal(size=d + 1))


@pytest.mark.parametrize("token_kind,tilt", [("gauss", 0.0), ("gauss", 0.3), ("rademacher", 0.0)])  # tilt: of the pole
def test_single_node_is_the_per_query_gap(rng, token_kind, tilt):
    """With the one node w = the task's own w (weight 1), the squared U and v gaps and the differences
    equal the present per-query formula on the same prompt, query and L, to 1e-12."""
    d = 3
    sigma = np.eye(d) if token_kind == "rademacher" else spd(rng, d)
    tasks = sample(17, d, sigma, 3, 2, 64, token_kind)
    p = _label_free(rng, d, 0.4)
    Ls = (1, 5, 8, 64)
    tilt = tilt / (2 * importance.eigenvalues_M(np.asarray(p.U)[:d, :d], sigma).max())
    tk, _ = importance.tilted_queries(tasks, np.asarray(p.U)[:d, :d], tilt)
    lim = models.model_data("limit", tk)
    dU, dv = (np.asarray(a) for a in conc._per_query_grad_gaps(p.U, p.v, jnp.asarray(models.all_tokens(tasks)),
                                                               models.query_tokens(tk), jnp.asarray(tk.yq), lim.G, Ls))
    A = jnp.asarray(np.asarray(p.U)[:d, :d])
    m1, m2 = ti._covariate_moments(A, jnp.asarray(ti.moment_tokens(tasks.x)), jnp.asarray(tk.xq), Ls)
    for k in range(tasks.n_tasks):
        tU, tv, mU, mv = (np.asarray(a) for a in ti._integrated_terms(
            m1[:, k:k + 1], m2[:, k:k + 1], jnp.asarray(tk.xq[k:k + 1]), jnp.asarray(sigma), A, jnp.asarray(p.v),
            jnp.asarray(tasks.w[k:k + 1]), jnp.ones(1)))
        np.testing.assert_allclose(tU, np.sum(dU[:, k:k + 1] ** 2, axis=(-2, -1)), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(tv, np.sum(dv[:, k:k + 1] ** 2, axis=-1), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(mU, dU[:, k:k + 1], rtol=0, atol=1e-12 * np.abs(dU).max())
        np.testing.assert_allclose(mv, dv[:, k:k + 1], rtol=0, atol=1e-12 * np.abs(dv).max())


def test_gauss_hermite_rule_integrates_gaussian_moments():
    """E[w_i^2] = 1, E[w_i^4] = 3, E[w_i^6] = 15, E[w_1^2 w_2^2 w_3^2] = 1, odd moments 0, weights sum 1."""
    nodes, wts = ti.gauss_hermite(3)
    assert nodes.shape == (64, 3)
    E = lambda f: float(np.sum(wts * f))  # noqa: E731
    assert E(np.ones(64)) == pytest.approx(1, abs=1e-14)
    for i in range(3):
        assert E(nodes[:, i] ** 2) == pytest.approx(1, abs=1e-13)
        assert E(nodes[:, i] ** 4) == pytest.approx(3, abs=1e-12)
        assert E(nodes[:, i] ** 6) == pytest.approx(15, abs=1e-11)
        assert E(nodes[:, i] ** 3) == pytest.approx(0, abs=1e-13)
    assert E(np.prod(nodes ** 2, axis=1)) == pytest.approx(1, abs=1e-13)
    assert E(nodes[:, 0] ** 3 * nodes[:, 1] ** 2) == pytest.approx(0, abs=1e-13)


def test_four_nodes_are_exact(rng):
    """The integrand has degree <= 6 in w: 4 nodes per coordinate (exact to degree 7) and 7 nodes agree
    to 1e-12, squared gaps and differences alike."""
    d = 3
    sigma = spd(rng, d)
    tasks = sample(5, d, sigma, 2, 4, 256)
    p = _label_free(rng, d, 0.7)
    A = jnp.asarray(np.asarray(p.U)[:d, :d])
    xq = jnp.asarray(tasks.xq)
    m1, m2 = ti._covariate_moments(A, jnp.asarray(ti.moment_tokens(tasks.x)), xq, (4, 32, 256))
    args = (m1, m2, xq, jnp.asarray(sigma), A, jnp.asarray(p.v))
    four = ti._integrated_terms(*args, *map(jnp.asarray, ti.gauss_hermite(d, 4)))
    seven = ti._integrated_terms(*args, *map(jnp.asarray, ti.gauss_hermite(d, 7)))
    for a, b in zip(four, seven):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12 * np.abs(np.asarray(b)).max())


def test_means_agree_with_monte_carlo_over_w(rng):
    """One prompt and its queries, 4000 antithetic pairs of w drawn from N(0, I): the present estimator's
    mean squared gaps (U, v) at every L lie within 4 standard errors of task_integral's, which has no
    w-sampling error (the s.e. from the 4000 independent pair means)."""
    d, n, l_max = 3, 4000, 128
    sigma = spd(rng, d)
    base = sample(23, d, sigma, 1, 3, l_max)
    w = rng.standard_normal((n, d))
    tasks = Tasks(x=np.repeat(base.x[:1], 2 * n, axis=0), w=np.concatenate([w, -w]),
                  xq=np.repeat(base.xq[:1], 2 * n, axis=0), sigma=sigma)
    p = _label_free(rng, d)
    Ls = (2, 16, 128)
    tilt = np.array([0.5 / (2 * importance.eigenvalues_M(np.asarray(p.U)[:d, :d], sigma).max())])
    tk, log_w = importance.tilted_queries(tasks, np.asarray(p.U)[:d, :d], float(tilt[0]))
    lim = models.model_data("limit", tk)
    dU, dv = (np.asarray(a) for a in conc._per_query_grad_gaps(p.U, p.v, jnp.asarray(models.all_tokens(tasks)),
                                                               models.query_tokens(tk), jnp.asarray(tk.yq), lim.G, Ls))
    wq = np.exp(log_w)
    for part, t in (("U", wq * np.sum(dU ** 2, axis=(-2, -1))), ("v", wq * np.sum(dv ** 2, axis=-1))):
        pairs = (t[:, :n] + t[:, n:]).mean(axis=-1) / 2            # (n_L, n): independent pair means
        mc, se = pairs.mean(axis=1), pairs.std(axis=1, ddof=1) / np.sqrt(n)
        exact = ti.grad_gaps_task_integral([p], Tasks(x=base.x[:1], w=base.w[:1], xq=base.xq[:1], sigma=sigma),
                                           Ls, tilt)[0 if part == "U" else 1][0]
        assert np.all(np.abs(mc - exact) < 4 * se), (part, mc, exact, se)
        assert np.all(se < 0.2 * exact)  # the bound is informative


def test_one_prompt_per_antithetic_pair(rng):
    """On antithetic tasks the estimator reads each pair's prompt once: its means are those of the
    first half's tasks alone (to rounding: the compiled programs differ in shape)."""
    d = 3
    sigma = spd(rng, d)
    tasks = sample(31, d, sigma, 2, 2, 64)
    half = Tasks(x=tasks.x[:2], w=tasks.w[:2], xq=tasks.xq[:2], sigma=sigma)
    p = _label_free(rng, d)
    a = ti.grad_gaps_task_integral([p], tasks, (8, 64))
    b = ti.grad_gaps_task_integral([p], half, (8, 64))
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-15)


def test_refuses_scores_that_read_the_labels(rng):
    d = 3
    tasks = sample(3, d, np.eye(d), 1, 1, 8)
    p = _label_free(rng, d)
    U = np.array(p.U)
    U[d, 0] = 0.1
    with pytest.raises(ValueError, match="label row"):
        ti.grad_gaps_task_integral([Params(U, p.v)], tasks, (8,))
