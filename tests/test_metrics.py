"""softlin.metrics against closed forms and numpy's own estimators: OLS and its error, power-law
slopes, the delete-one jackknife of a mean (= s.e. of the mean), block RMS by the delta method,
seed means, counts, and the parameter diagnostics."""
import math

import numpy as np
import pytest

from softlin import metrics
from softlin.params import Params


def test_ols_slope_against_numpy_and_the_textbook_error():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 1, 12)
    y = 2.5 * x - 1 + rng.normal(scale=0.1, size=x.size)
    slope, se, icpt = metrics.ols_slope(x, y)
    (b1, b0), cov = np.polyfit(x, y, 1, cov="unscaled")
    resid = y - (b1 * x + b0)
    assert slope == pytest.approx(b1, rel=1e-12) and icpt == pytest.approx(b0, rel=1e-12)
    assert se == pytest.approx(math.sqrt(cov[0, 0] * resid @ resid / (x.size - 2)), rel=1e-10)
    with pytest.raises(ValueError, match=">= 3"):
        metrics.ols_slope([1, 2], [1, 2])


def test_fit_slope_recovers_a_power_law_exactly():
    Ls = np.array([8, 16, 32, 64, 128, 256])
    s, se = metrics.fit_slope(Ls, 3.0 * Ls ** -0.75)
    assert s == pytest.approx(-0.75, abs=1e-12) and se < 1e-12
    assert list(np.flatnonzero(metrics.upper_half(Ls))) == [3, 4, 5]   # log2 L >= 5.5 ... at least 3


def test_jackknife_of_a_mean_is_the_standard_error_of_the_mean():
    x = np.random.default_rng(1).normal(size=(9, 2))
    val, se = metrics.jackknife(lambda a: a.mean(axis=0), x)
    np.testing.assert_allclose(val, x.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(se, x.std(axis=0, ddof=1) / 3, rtol=1e-12)
    m, s = metrics.seed_mean(x)
    np.testing.assert_allclose(s, x.std(axis=0, ddof=1) / 3, rtol=1e-14)
    # a dict-valued statistic of two arrays keeps its keys
    val, se = metrics.jackknife(lambda ab: {"d": ab[0].mean() - ab[1].mean()}, (x[:, 0], x[:, 1]))
    assert set(se) == {"d"} and val["d"] == pytest.approx(x[:, 0].mean() - x[:, 1].mean())
    assert metrics.replicate_df((x, x)) == 8


def test_jackknife_of_mean_against_the_generic_path_and_the_mean_identity():
    """O(n) delete-one means: the same values and errors as metrics.jackknife with the mean recomputed
    per deletion (1e-12), for a nonlinear, nonsmooth statistic (max over an axis of a norm, as C2e's);
    for the mean itself the s.e. is std / sqrt(n)."""
    x = np.random.default_rng(2).normal(size=(11, 5, 4, 3)) + 0.5
    stat = lambda m: {"max": np.linalg.norm(m, axis=-1).max(axis=0), "first": m[0, 0]}  # noqa: E731
    val, se = metrics.jackknife_of_mean(stat, x)
    want_val, want_se = metrics.jackknife(lambda b: stat(b.mean(axis=0)), x)
    for k in want_val:
        np.testing.assert_allclose(val[k], want_val[k], rtol=1e-12)
        np.testing.assert_allclose(se[k], want_se[k], rtol=1e-10, atol=1e-15)
    _, se = metrics.jackknife_of_mean(lambda m: m, x[:, 0, 0, 0])
    assert se == pytest.approx(x[:, 0, 0, 0].std(ddof=1) / np.sqrt(11), rel=1e-12)
    with pytest.raises(ValueError, match=">= 2"):
        metrics.jackknife_of_mean(stat, x[:1])


def test_rms_over_blocks_delta_method():
    msq = np.array([1.0, 1.2, 0.8, 1.0])
    rms, se = metrics.rms_over_blocks(msq)
    assert rms == pytest.approx(1.0)
    assert se == pytest.approx(np.std(msq, ddof=1) / 2 / 2)          # s.e.(mean) / (2 rms)
    with pytest.raises(ValueError):
        metrics.rms_over_blocks(msq[:1])


def test_counts():
    assert metrics.n_increases([3, 2, 2.5, 1, 4, 4]) == 2
    assert metrics.n_significant([0.3, 0.1, -0.5], [0.1, 0.1, 0.1], 2.0) == 1
    assert math.isnan(metrics.n_significant([0.3, float("nan")], [0.1, 0.1], 2.0))
    out = metrics.put_count({}, "k", [0.2, -0.1, 0.3], [0.1, 0.1, 0.1], 4)
    assert out["k"] == 2 and out["k_df"] == 4
    with pytest.raises(ValueError, match="degrees of freedom"):
        metrics.put({}, "x", 1.0, 0.1)


def test_parameter_diagnostics_by_hand():
    U = np.arange(9.0).reshape(3, 3)
    v = np.array([1.0, 2.0, 3.0])
    p, q = Params(U, v), Params(np.zeros((3, 3)), np.zeros(3))
    assert metrics.theta_dist(p, q) == pytest.approx(math.sqrt(np.sum(U ** 2) + 14))
    mu, mv = metrics.offblock_mass(p)                  # d = 2: U[2, :2] = (6, 7), U[:2, 2] = (2, 5), v[:2]
    assert mu == pytest.approx(math.sqrt(36 + 49 + 4 + 25)) and mv == pytest.approx(math.sqrt(5))
    assert metrics.conservation_defect(p) == pytest.approx(np.sum(U ** 2) - 14)
