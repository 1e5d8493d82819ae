"""softlin.planted (C2's estimator ``plant``) against closed forms and the estimator it refines: the
weight p/q of the planted-token mixture reproduces a tail probability known exactly, the draws reach that
tail, the estimator's means agree with task_integral's over independent blocks, and without heavy-tailed
probes it is task_integral bit for bit."""
import numpy as np
import pytest
from scipy.stats import norm

from softlin import concentration as conc
from softlin import planted
from softlin.claims import c2
from softlin.tasks import sample, sqrtm_sym


def test_plant_lengths_and_probes():
    assert planted.plant_lengths([2 ** k for k in range(3, 17)]).tolist() == [2 ** 10, 2 ** 12, 2 ** 14, 2 ** 16]
    assert planted.plant_lengths([4, 16, 64]).tolist() == [4, 16, 64]
    assert planted.plant_probes([0.1, 0.25, 0.6], "gauss").tolist() == [1, 2]
    assert planted.plant_probes([0.6], "rademacher").tolist() == []


def test_weight_reproduces_a_tail_probability_the_plant_reaches():
    """Prompts from the mixture with weights p/q: E_q[W] = 1 and E_q[W 1{max_{l<16} t_l > 3}] =
    1 - Phi(3)^16 (t the standardized score along a query's direction, iid N(0, 1) under p whatever the
    direction), within 4 s.e. over 40000 prompts; the event is >= 5x likelier under q than under p; W <= 2.
    Anisotropic Sigma (the whitening), random directions and grid indices per prompt."""
    rng = np.random.default_rng(11)
    h, Q, P, d = 40000, 2, 2, 3
    sigma = np.array([[2.0, 0.4, 0.0], [0.4, 1.0, 0.3], [0.0, 0.3, 0.6]])
    root = sqrtm_sym(sigma)
    Lk = planted.plant_lengths([4, 16, 64])
    x = rng.standard_normal((h, 64, d)) @ root
    chat = rng.standard_normal((h, Q, d))
    chat /= np.linalg.norm(chat, axis=-1, keepdims=True)
    u = chat @ np.linalg.inv(root)
    j = rng.integers(8, 15, size=(h, P, Q, len(Lk)))                # tau in [2, 3.5]
    xp = planted.draw(x, chat, j, Lk, sigma, np.random.default_rng(12))
    W = 1.0 / planted.likelihood_ratio(xp, u, j, Lk)
    assert W.max() <= 1 / (1 - planted.EPS) + 1e-12
    assert abs(W.mean() - 1) < 4 * W.std() / np.sqrt(h)
    t = np.einsum("hld,hd->hl", xp[:, :16], u[:, 0])
    hit = t.max(axis=1) > 3
    want = 1 - norm.cdf(3) ** 16
    est = W * hit
    assert abs(est.mean() - want) < 4 * est.std() / np.sqrt(h)
    assert hit.mean() > 5 * want


def test_likelihood_ratio_is_the_mixture_formula():
    """q / p against the module doc's formula written out, component by component: (1 - EPS) + EPS
    mean_c mean_{l < L_k} exp(tau_c t_l - tau_c^2 / 2), t_l = x_l . u_query, tau_c = j_c TAU_STEP; grid
    indices drawn so that one tau serves several lengths and probes, and others only a short one."""
    rng = np.random.default_rng(5)
    h, P, Q, d = 3, 3, 2, 3
    Lk = planted.plant_lengths([2 ** k for k in range(2, 11)])       # 16, 64, 256, 1024
    x = rng.standard_normal((h, int(Lk[-1]), d))
    u = rng.standard_normal((h, Q, d))
    j = rng.integers(4, 9, size=(h, P, Q, len(Lk)))
    want = np.empty(h)
    for a in range(h):
        comps = [np.mean(np.exp(j[a, p, q, k] * planted.TAU_STEP * (x[a, :Lk[k]] @ u[a, q])
                                - (j[a, p, q, k] * planted.TAU_STEP) ** 2 / 2))
                 for p in range(P) for q in range(Q) for k in range(len(Lk))]
        want[a] = (1 - planted.EPS) + planted.EPS * np.mean(comps)
    np.testing.assert_allclose(planted.likelihood_ratio(x, u, j, Lk), want, rtol=1e-13)


def _design(sigma, lambdas):
    setting = dict(name="t", sigma=np.asarray(sigma).tolist(), token_kind="gauss")
    probes = conc.probe_design(np.asarray(sigma), eq9=False, star=False, scaled_lambda=lambdas)
    return setting, probes


def test_plant_means_agree_with_task_integral():
    """Per L and probe (lambda_max 0.3 and 0.45), the mean over 160 blocks of plant's msq_U and msq_v
    agrees with task_integral's on other blocks within 4 combined s.e. (both unbiased for the same
    expectation), and plant's weights are used (its blocks differ from task_integral's on the same seeds)."""
    sigma = np.diag([2.0, 1.0, 0.5])
    setting, probes = _design(sigma, [0.3, 0.45])
    Ls = [4, 16, 64, 256]
    ti = c2.measure(setting, probes, Ls, 501, 160, 4, 4, progress=lambda m: None, estimator="task_integral")
    pl = c2.measure(setting, probes, Ls, 90501, 160, 4, 4, progress=lambda m: None, estimator="plant")
    for a, b in ((ti.msq_U, pl.msq_U), (ti.msq_v, pl.msq_v)):
        se = np.hypot(a.std(0, ddof=1), b.std(0, ddof=1)) / np.sqrt(a.shape[0])
        z = (a.mean(0) - b.mean(0)) / se
        assert np.all(np.abs(z) < 4), z
    same = c2.measure(setting, probes, Ls, 501, 2, 4, 4, progress=lambda m: None, estimator="plant")
    assert not np.array_equal(same.msq_U, ti.msq_U[:2])


def test_without_heavy_probes_plant_is_task_integral():
    """Every lambda_max < 1/4, or bounded tokens: no component, the same numbers as task_integral."""
    sigma = np.eye(3)
    setting, probes = _design(sigma, [0.1, 0.2])
    Ls = [4, 16, 64]
    a = c2.measure(setting, probes, Ls, 7, 2, 2, 2, progress=lambda m: None, estimator="plant")
    b = c2.measure(setting, probes, Ls, 7, 2, 2, 2, progress=lambda m: None, estimator="task_integral")
    np.testing.assert_array_equal(a.msq_U, b.msq_U)
    np.testing.assert_array_equal(a.diff, b.diff)


def test_a_setting_without_planted_components_is_labelled_task_integral():
    """c2.summarize_all with estimator plant: a Gaussian setting with a probe at lambda_max >= 1/4 reads
    'plant'; a Rademacher one (no components: task_integral's numbers, checked here bit for bit) reads
    'task_integral' on its verdict table."""
    Ls = [4, 16, 64, 256, 1024]
    gauss, gp = _design(np.eye(3), [0.1, 0.3])
    rad = dict(name="r", sigma=np.eye(3).tolist(), token_kind="rademacher")
    rp = conc.probe_design(np.eye(3), eq9=False, star=False, scaled_lambda=[0.3])
    gaps = {"t": (gp, c2.measure(gauss, gp, Ls, 7, 3, 2, 2, progress=lambda m: None, estimator="plant")),
            "r": (rp, c2.measure(rad, rp, Ls, 7, 3, 2, 2, progress=lambda m: None, estimator="plant"))}
    ti = c2.measure(rad, rp, Ls, 7, 3, 2, 2, progress=lambda m: None, estimator="task_integral")
    np.testing.assert_array_equal(gaps["r"][1].msq_U, ti.msq_U)
    out = c2.summarize_all({"t": gauss, "r": rad}, gaps, {}, [], 20, 1, -0.34, {"estimator": "plant"},
                           progress=lambda m: None)["metrics"]["fits"]
    assert {k: f["U"]["estimator"] for k, f in out.items()} == {
        "t/star_x0.416": "plant", "t/star_x0.721": "plant", "r/star_x0.721": "task_integral"}


def test_draw_plants_tau_along_the_direction():
    """With eps = 1 every prompt holds one token at whitened score tau_c + N(0, 1) along c_hat, at a
    position below its L_k; the other tokens are untouched."""
    rng = np.random.default_rng(3)
    sigma = np.diag([2.0, 0.5])
    root = sqrtm_sym(sigma)
    h, Lk = 2000, np.array([4, 16])
    x = sample(5, 2, sigma, h, 1, 16).x[:h]
    chat = np.tile([0.6, 0.8], (h, 1, 1))
    j = np.full((h, 1, 1, 2), 20)                                    # tau = 5
    out = planted.draw(x, chat, j, Lk, sigma, rng, eps=1.0)
    changed = np.any(out != x, axis=-1)
    assert np.all(changed.sum(axis=1) == 1)
    t = (out[changed] @ np.linalg.inv(root)) @ chat[0, 0]
    assert abs(t.mean() - 5) < 4 / np.sqrt(h) and abs(t.std() - 1) < 0.05
    pos = np.argmax(changed, axis=1)
    assert pos.max() == 15 and np.mean(pos < 4) == pytest.approx(0.5 + 0.5 * 4 / 16, abs=0.04)
