"""C1 metrics against independent computations: slope fitter, RMS gap closed form, block s.e."""
import numpy as np
import pytest

from softlin import concentration as conc
from softlin import metrics, models, params
from softlin import tasks as T
from softlin.params import Params


def test_slope_fitter_recovers_known_exponent_with_noise():
    rng = np.random.default_rng(0)
    L = 2.0 ** np.arange(3, 17)
    slopes, ses = [], []
    for _ in range(200):
        y = 3.0 * L ** -0.37 * np.exp(0.05 * rng.standard_normal(L.size))
        s, se = metrics.fit_slope(L, y)
        slopes.append(s)
        ses.append(se)
    slopes = np.array(slopes)
    # unbiased, and the reported s.e. matches the spread across repetitions
    assert abs(slopes.mean() + 0.37) < 3 * slopes.std() / np.sqrt(len(slopes))
    assert np.mean(ses) == pytest.approx(slopes.std(), rel=0.2)
    # closed-form OLS standard error: sigma / sqrt(sum (x - xbar)^2), sigma = 0.05 / ln 10
    x = np.log10(L)
    assert slopes.std() == pytest.approx(0.05 / np.log(10) / np.sqrt(np.sum((x - x.mean()) ** 2)), rel=0.2)


def test_upper_half_mask():
    Ls = 2 ** np.arange(3, 17)
    m = metrics.upper_half(Ls)
    assert list(np.asarray(Ls)[m]) == [2 ** j for j in range(10, 17)]


def test_rms_gap_closed_form_at_U_zero():
    """U = 0: softmax is the plain prompt average, f_L = v^T zbar_L, limit f = v^T Gamma_w 0 = 0.

    With v = e_{d+1}: f_L = mean_k y_k, y_k ~ N(0, w^T Sigma w) given w, so
    E[(f_L - 0)^2] = E_w[w^T Sigma w] / L = tr(Sigma) / L.
    """
    sigma = np.diag([2.0, 1.0, 0.5])
    d = 3
    p = Params(np.zeros((d + 1, d + 1)), np.eye(d + 1)[d])
    probe = dict(U=p.U.tolist(), v=p.v.tolist())
    Ls = [4, 16, 64]
    msq = np.array([conc.output_sq_gaps([probe], tk, Ls)[0]
                    for tk in conc.task_blocks(11, 40, sigma, 25, 1, max(Ls))])
    rms, se = metrics.rms_over_blocks(msq)
    expected = np.sqrt(np.trace(sigma) / np.asarray(Ls))
    assert np.all(np.abs(rms - expected) < 4 * se)
    assert np.all(se / rms < 0.1)


def test_rms_over_blocks_se_matches_spread():
    rng = np.random.default_rng(3)
    reps = []
    for _ in range(300):
        msq = rng.chisquare(4, size=(10, 1)) / 4
        reps.append(metrics.rms_over_blocks(msq))
    vals = np.array([r[0][0] for r in reps])
    ses = np.array([r[1][0] for r in reps])
    assert np.mean(ses) == pytest.approx(vals.std(), rel=0.2)


def test_fused_softmax_output_equals_models_predict():
    sigma = np.eye(3)
    tk = T.sample(5, 3, sigma, 3, 4, 50)
    p = params.bayes_optimum(sigma)
    data = models.prompt_data(tk, 50)
    for L in (1, 7, 50):
        a = conc.softmax_output(Params(np.asarray(p.U), np.asarray(p.v)), models.with_length(data, L))
        b = models.predict("softmax", p, tk, L)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-13)


def test_probe_lambda_matches_hand_computation():
    """theta* has M = I / c^2 (docs/maths.md#threshold); s theta* scales lambda by s^2."""
    sigma = np.diag([2.0, 1.0, 0.5])
    pr = conc.probe_design(sigma, scaled_lambda=[0.8])
    c2 = np.sqrt(np.trace(np.linalg.inv(sigma) @ np.linalg.inv(sigma)))
    star = [p for p in pr if p["kind"] == "star"][0]
    assert star["lambda_max"] == pytest.approx(1 / c2, rel=1e-12)
    assert star["beta"] == 0.5
    sc = [p for p in pr if p["kind"] == "scaled_star"][0]
    assert sc["lambda_max"] == pytest.approx(0.8, rel=1e-10)
    assert sc["beta"] == pytest.approx(1 / 3.2, rel=1e-10)
    eq9 = [p for p in pr if p["kind"] == "eq9"][0]
    a = params.init_eq9(sigma).U[0, 0]
    root = np.sqrt(sigma)
    assert eq9["lambda_max"] == pytest.approx(np.linalg.eigvalsh(root @ (a * np.eye(3)) @ sigma @ (a * np.eye(3)) @ root).max())


def test_ols_slope_exact_line():
    s, se, b = metrics.ols_slope(np.arange(5.0), 2 - 0.5 * np.arange(5.0))
    assert s == pytest.approx(-0.5) and se == pytest.approx(0, abs=1e-12) and b == pytest.approx(2)
