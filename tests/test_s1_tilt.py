"""S1: the Gaussian tilt against quadrature and Monte Carlo."""

import numpy as np
import pytest

from symbolic.export import s1

from helpers import gauss_hermite_2d, spd


def test_s1_tilt_against_quadrature():
    """log M(a), tilted mean and covariance of N(mu, Gamma): scipy quad at d = 1, Gauss-Hermite at d = 2."""
    from scipy import integrate
    tf = s1.tilt_fns()
    m, s, t = 0.3, 1.4, 0.7

    def dens(x):
        return np.exp(-(x - m) ** 2 / (2 * s ** 2)) / np.sqrt(2 * np.pi * s ** 2)

    lo, hi = m - 30 * s, m + 30 * s                     # the integrands are below 1e-150 outside
    M0, M1, M2 = (integrate.quad(lambda x: x ** k * np.exp(t * x) * dens(x), lo, hi, epsabs=1e-14, epsrel=1e-12,
                                 limit=200)[0] for k in (0, 1, 2))
    args = ([t], [m], [[s * s]])
    assert np.isclose(float(tf["log_mgf"](*args)), np.log(M0), rtol=1e-10)
    assert np.isclose(tf["tilted_mean"](*args)[0], M1 / M0, rtol=1e-10)
    assert np.isclose(tf["tilted_cov"](*args)[0, 0], M2 / M0 - (M1 / M0) ** 2, rtol=1e-8)
    rng = np.random.default_rng(31)
    G, wts = gauss_hermite_2d()
    for _ in range(3):
        Gam, mu, a = spd(rng, 2), rng.normal(size=2), 0.5 * rng.normal(size=2)
        Z = mu + G @ np.linalg.cholesky(Gam).T
        e = wts * np.exp(Z @ a)
        M0 = e.sum()
        mean = e @ Z / M0
        cov = (Z - mean).T @ ((Z - mean) * e[:, None]) / M0
        assert np.isclose(float(tf["log_mgf"](a, mu, Gam)), np.log(M0), rtol=1e-10)
        assert np.allclose(tf["tilted_mean"](a, mu, Gam), mean, rtol=1e-10, atol=1e-12)
        assert np.allclose(tf["tilted_cov"](a, mu, Gam), cov, rtol=1e-9, atol=1e-12)


def test_s1_tilted_mean_monte_carlo_d3():
    """Self-normalised importance average E[z e^{a^T z}] / E[e^{a^T z}] at d = 3, within 5 standard errors."""
    rng = np.random.default_rng(32)
    Gam, mu, a = spd(rng, 3), rng.normal(size=3), 0.3 * rng.normal(size=3)
    Z = mu + rng.normal(size=(400_000, 3)) @ np.linalg.cholesky(Gam).T
    p = np.exp(Z @ a - (Z @ a).max())
    p /= p.sum()
    est = p @ Z
    se = np.sqrt(np.sum(p[:, None] ** 2 * (Z - est) ** 2, axis=0))     # delta-method SE of a ratio estimator
    assert np.all(np.abs(est - s1.tilt_fns()["tilted_mean"](a, mu, Gam)) < 5 * se)


@pytest.mark.parametrize("d", [3, 4])
def test_s1_kernel_linear_inf_equals_lambdified(d):
    """S1 check (docs/maths.md#s1): the kernel's linear(inf) prediction (softlin.models, "limit") == the lambdified S1 f_inf."""
    from softlin import models, tasks
    from softlin.params import Params
    rng = np.random.default_rng(40 + d)
    S = spd(rng, d)
    tk = tasks.sample(5 + d, d, S, n_pairs=3, n_query=4, l_max=2)
    U, v = rng.normal(size=(d + 1, d + 1)), rng.normal(size=d + 1)
    kern = np.asarray(models.predict("limit", Params(U, v), tk))
    f = s1.limit_predictor_fn()
    lam = np.array([[f(U, v, S, tk.w[i], tk.xq[i, q]) for q in range(tk.xq.shape[1])] for i in range(tk.n_tasks)])
    assert np.allclose(kern, lam, rtol=1e-12, atol=1e-12 * np.abs(lam).max())


