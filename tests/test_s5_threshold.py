"""S5: the concentration threshold and exponent against numpy eigh, quadrature and Monte Carlo."""

import numpy as np
import pytest

from softlin.numpy_reference import sqrtm_sym as sqrtm  # the independent reference's Sigma^(1/2)
from symbolic.export import s2, s5

from helpers import gauss_hermite_2d, spd


def _lambda_max_ref(A, S):
    """numpy reference: largest eigenvalue of the symmetric M = S^(1/2) A^T S A S^(1/2) (eigh)."""
    R = sqrtm(S)
    M = R @ A.T @ S @ A @ R
    return np.linalg.eigvalsh((M + M.T) / 2).max()


@pytest.mark.parametrize("d", [2, 3, 4])
def test_threshold_M_against_numpy_eigh(d):
    rng = np.random.default_rng(50 + d)
    for _ in range(3):
        S, A = spd(rng, d), rng.normal(size=(d, d))
        assert np.isclose(s5.threshold_M(A, S), _lambda_max_ref(A, S), rtol=1e-10)


def test_mgf_quadratic_form_against_quadrature_and_monte_carlo():
    """det(I - 2 t Sigma K)^(-1/2) vs 2-d Gauss-Hermite quadrature (below the pole) and a d = 3 Monte Carlo."""
    rng = np.random.default_rng(2)
    mgf = s5.mgf_quadratic_form_fn()
    S, A = spd(rng, 2), rng.normal(size=(2, 2))
    K = A.T @ S @ A
    lam = _lambda_max_ref(A, S)
    G, W = gauss_hermite_2d(80)
    X = G @ sqrtm(S)
    q = np.einsum("ni,ij,nj->n", X, K, X)
    for frac in (-0.5, 0.1, 0.25, 0.4):             # t = frac / lambda_max: 2 t lambda_max < 1 (the pole is 1/2)
        t = frac / lam
        assert np.isclose(mgf(t, K, S), np.sum(W * np.exp(t * q)), rtol=1e-8), frac
    S3, A3 = spd(rng, 3), rng.normal(size=(3, 3))
    K3 = A3.T @ S3 @ A3
    t = 0.2 / _lambda_max_ref(A3, S3)                # variance finite: 4 t lambda_max < 1
    X3 = rng.normal(size=(400_000, 3)) @ sqrtm(S3)
    e = np.exp(t * np.einsum("ni,ij,nj->n", X3, K3, X3))
    assert abs(e.mean() - mgf(t, K3, S3)) < 5 * e.std() / np.sqrt(e.size)


def test_exp_moment_below_and_above_threshold():
    rng = np.random.default_rng(2)
    S = spd(rng, 2)
    A0 = rng.normal(size=(2, 2))
    A = A0 * np.sqrt(0.2 / _lambda_max_ref(A0, S))     # lambda_max(M) = 0.2
    assert np.isclose(s5.threshold_M(A, S), 0.2)
    K = A.T @ S @ A
    G, W = gauss_hermite_2d(80)
    X = G @ sqrtm(S)
    quad = np.sum(W * np.exp(np.einsum("ni,ij,nj->n", X, K, X)))
    assert np.isclose(s5.exp_moment_fn()(A, S), quad, rtol=1e-8)
    assert s5.exp_moment_fn()(A * 1.7, S) == np.inf     # lambda_max = 0.578 > 1/2


def _capped_mean_square(lam, L):
    """E[min(1, (exp(lam g^2) - 1) / L)], g ~ N(0, 1), by scipy quadrature (bulk below the cut, Gaussian tail above)."""
    from scipy import integrate, special
    gc = np.sqrt(np.log1p(L) / lam)

    def f(g):
        return np.expm1(lam * g * g) * np.exp(-g * g / 2) / np.sqrt(2 * np.pi) / L

    bulk = 2 * integrate.quad(f, 0, gc, epsabs=0, epsrel=1e-11, limit=200)[0]
    return bulk + special.erfc(gc / np.sqrt(2))


@pytest.mark.parametrize("lam", [0.25, 0.4, 1.0, 2.0])
def test_beta_against_numerical_exponent(lam):
    """The mean square of S5 decays as L^(-2 beta): the log-log slope of its quadrature over L = 1e10 .. 1e14
    (logarithmic factors make the finite-L slope differ by about 1 / (2 log L) ~ 0.02)."""
    Ls = np.logspace(10, 14, 5)
    ms = np.array([_capped_mean_square(lam, L) for L in Ls])
    slope = np.polyfit(np.log(Ls), np.log(ms), 1)[0]
    assert abs(slope - (-2 * s5.beta_fn()(lam))) < 0.05, (lam, slope)


def test_beta_and_threshold_at_theta_star():
    beta = s5.beta_fn()
    assert beta(0.25) == 0.5 and np.isclose(beta(1.0), 0.25) and np.isclose(beta(0.6), 1 / 2.4)
    for S, tr in ((np.eye(3), 3.0), (np.diag([2.0, 1.0, 0.5]), 5.25)):
        U, _ = s2.bayes_optimum_fn()(S)
        lam = s5.threshold_M(U[:3, :3], S)
        assert np.isclose(np.trace(np.linalg.inv(S) @ np.linalg.inv(S)), tr)
        assert np.isclose(lam, 1 / np.sqrt(tr)) and np.isclose(lam, _lambda_max_ref(U[:3, :3], S))
        assert (lam < 0.5) == (tr > 4)


