"""S7 (docs/maths.md#s7): the first-order 1/L constants of C5's two predictors against Monte Carlo and the exact S6 risk.

Monte Carlo draws raw prompts (numpy, vectorised) and never uses the S7 reduction: the statistic is
L * mean (f - w^T x_q)^2, the excess over the noise variance (eps_q is independent of f, so it adds exactly
s2 and is left out to cut the variance).  Tolerances are in standard errors of that mean.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from symbolic import core
from symbolic.export import s6, s7

S2, WV2 = 0.1, 0.5          # d = 2 test task: noise and prior variances


def kms(d, rho=0.5):
    i = np.arange(d)
    return rho ** np.abs(i[:, None] - i[None, :])


def authors(d, rho=0.5):
    C = np.linalg.cholesky(kms(d, rho))
    return (C @ C) @ (C @ C).T, np.eye(d)


def _prompts(rng, Sp, Sq, s2, wv, L, n):
    d = Sp.shape[0]
    w = rng.standard_normal((n, d)) * np.sqrt(wv)
    xq = rng.standard_normal((n, d)) @ np.linalg.cholesky(Sq).T
    X = rng.standard_normal((n, L, d)) @ np.linalg.cholesky(Sp).T
    y = np.einsum("nld,nd->nl", X, w) + np.sqrt(s2) * rng.standard_normal((n, L))
    return w, xq, X, y


def mc_softmax(c, Sp, Sq, s2, wv, L, n, seed, chunk=2000):
    """(L * mean excess, its standard error) of f = c sum e^{s_l} y_l / sum e^{s_l}, s_l = x_l^T Sp^-1 x_q / c."""
    rng, Spi, out = np.random.default_rng(seed), np.linalg.inv(Sp), []
    for _ in range(n // chunk):
        w, xq, X, y = _prompts(rng, Sp, Sq, s2, wv, L, chunk)
        s = np.einsum("nld,nd->nl", X, xq @ Spi.T) / c
        e = np.exp(s - s.max(1, keepdims=True))
        f = c * (e * y).sum(1) / e.sum(1)
        out.append((f - (w * xq).sum(1)) ** 2)
    r = np.concatenate(out)
    return L * r.mean(), L * r.std() / np.sqrt(r.size)


def mc_linear(Sp, Sq, s2, wv, L, n, seed, chunk=2000):
    """(L * mean excess, s.e.) of the linear class optimum f = x_q^T P*(L) X^T y / L (P* from numpy, not S6/S7)."""
    d = Sp.shape[0]
    P = np.linalg.inv((np.trace(Sp) + s2 / wv) / L * np.eye(d) + (1 + 1 / L) * Sp)
    rng, out = np.random.default_rng(seed), []
    for _ in range(n // chunk):
        w, xq, X, y = _prompts(rng, Sp, Sq, s2, wv, L, chunk)
        h = np.einsum("nld,nl->nd", X, y) / L
        out.append(((xq @ P) * h).sum(1) - (w * xq).sum(1))
    r = np.concatenate(out) ** 2
    return L * r.mean(), L * r.std() / np.sqrt(r.size)


def test_s7_registered_and_task_numbers():
    der = core.get("S7")
    for k in ("K_lin", "K_soft", "K_soft_correct", "c_star_correct", "gap_constant_correct"):
        assert k in der.results
    S = kms(5)
    g = s7.first_order_gap(S, S, 0.1, 0.2)
    assert g["closed_form"] and g["K_lin"] == pytest.approx(6.5, abs=1e-12)
    assert g["c_star"] == pytest.approx(2.8375, abs=1e-4) and g["K_soft_star"] == pytest.approx(20.80, abs=0.01)
    # the closed-form c* is the minimiser of the lambdified K_soft (numerical minimisation, and +-1 % either side)
    k = s7.first_order_softmax_fn()
    assert s7.softmax_best_scale(S, S, 0.1, 0.2) == pytest.approx(g["c_star"], rel=1e-6)
    assert k(g["c_star"] * 0.99, S, S, 0.1, 0.2) > g["K_soft_star"] < k(g["c_star"] * 1.01, S, S, 0.1, 0.2)
    # the predicted curve C5 draws: gap (K_soft(c*) - K_lin) / L as a fraction of S6's exact R_lin(L)
    r = s7.first_order_risks(np.array([100, 1000]), S, S, 0.1, 0.2)
    assert np.allclose(r["gap"] * r["L"], g["gap_constant"])
    assert np.allclose(r["R_lin_exact"], [s6.linear_class_risk_fn()(L, S, S, 0.1, 0.2) for L in (100, 1000)])
    assert r["gap_fraction"][1] == pytest.approx(0.1344, abs=1e-4)
    assert s7.first_order_risks(1000, S, S, 0.1, 0.2)["gap_fraction"] == pytest.approx(r["gap_fraction"][1])


@pytest.mark.parametrize("mode", ["correct", "authors"])
def test_s7_k_lin_against_exact_s6_risk(mode):
    """K_lin == L (R*(L) - s2) of S6's exact class-optimum risk at L = 1e6 (d = 5, C5's task)."""
    Sp, Sq = (kms(5), kms(5)) if mode == "correct" else authors(5)
    K = s7.first_order_linear_fn()(Sp, Sq, 0.1, 0.2)
    L = 10 ** 6
    R = s6.linear_class_risk_fn()(L, Sp, Sq, 0.1, 0.2)
    assert L * (R - 0.1) == pytest.approx(K, rel=1e-4)
    # and numpy's closed form w_var tr S_q + (w_var tr S_p + s2) tr(S_q S_p^-1)
    assert K == pytest.approx(0.2 * np.trace(Sq) + (0.2 * np.trace(Sp) + 0.1) * np.trace(Sq @ np.linalg.inv(Sp)))


def test_s7_k_lin_against_monte_carlo():
    """d = 2: L * excess of the linear class optimum at L = 250 and 1000 within 4 s.e. + 2/L relative (its O(1/L^2))."""
    S = kms(2)
    K = s7.first_order_linear_fn()(S, S, S2, WV2)
    for L, seed in ((250, 1), (1000, 2)):
        m, se = mc_linear(S, S, S2, WV2, L, 20000, seed)
        assert abs(m - K) < 4 * se + 2 * K / L, (L, m, se, K)


# c^2 > 6: the x_q average of the next order is finite there (S7 step "not derived here"), so 1/L^2 is the remainder
# (c, L, prompts, seed): s.e. about 1.8 % of K at 20 000 prompts, 0.75 % at 100 000 (4 s.e. = 3 %: a 5 % error in
# the exported K_soft fails that case; it passes the 20 000-prompt ones, whose 4 s.e. is 7 %)
SOFT_CASES = [(3.0, 250, 20000, 11), (3.0, 1000, 20000, 12), (4.0, 250, 100000, 13), (4.0, 1000, 20000, 14)]


@pytest.mark.parametrize("c,L,n,seed", SOFT_CASES)
def test_s7_k_soft_against_monte_carlo(c, L, n, seed):
    """d = 2, correct mode: L * excess of the softmax reference family member c within 4 s.e. of K_soft(c)."""
    S = kms(2)
    K = s7.first_order_softmax_fn()(c, S, S, S2, WV2)
    m, se = mc_softmax(c, S, S, S2, WV2, L, n, seed)
    assert abs(m - K) < 4 * se, (c, L, m, se, K)


def test_s7_k_soft_authors_mode_against_monte_carlo():
    """d = 2, the authors' covariances (prompt C C (C C)^T, query I): K_soft at 1.5x the blow-up scale, L = 1000."""
    Sp, Sq = authors(2)
    c = np.sqrt(3.5 * s7.softmax_blow_up_c2(Sp, Sq))
    K = s7.first_order_softmax_fn()(c, Sp, Sq, S2, WV2)
    m, se = mc_softmax(c, Sp, Sq, S2, WV2, 1000, 20000, 21)
    assert abs(m - K) < 4 * se, (m, se, K)


def test_s7_k_soft_c5_task_monte_carlo():
    """d = 5, C5's task at c* (c*^2 = 8.05): L * excess at L = 1000 within 4 s.e. of K_soft(c*) = 20.8."""
    S = kms(5)
    g = s7.first_order_gap(S, S, 0.1, 0.2)
    m, se = mc_softmax(g["c_star"], S, S, 0.1, 0.2, 1000, 10000, 31)
    assert abs(m - g["K_soft_star"]) < 4 * se, (m, se, g)


def test_s7_monte_carlo_rejects_mutated_formulas():
    """The Monte Carlo check can fail: three plausible slips in K_soft are rejected at c = 3, L = 1000 (d = 2)."""
    S, c, d = kms(2), 3.0, 2
    m, se = mc_softmax(c, S, S, S2, WV2, 1000, 20000, 12)
    x, B = c * c, WV2 * np.trace(S)
    right = x * (1 - 2 / x) ** (-d / 2) * (B / (x * (1 - 2 / x)) + B + S2)
    assert right == pytest.approx(s7.first_order_softmax_fn()(c, S, S, S2, WV2), rel=1e-12)
    mutants = {"no tilted-mean term (w^T Sigma a)^2": x * (1 - 2 / x) ** (-d / 2) * (B + S2),
               "MGF exponent -1/2 instead of -d/2": x * (1 - 2 / x) ** -0.5 * (B / (x - 2) + B + S2),
               "no label noise in V": x * (1 - 2 / x) ** (-d / 2) * (B / (x - 2) + B)}
    for name, k in mutants.items():
        assert abs(m - k) > 4 * se, (name, m, se, k)


def test_s7_cli_show():
    out = subprocess.run([sys.executable, "-m", "symbolic", "show", "S7"], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("S7") and "K_soft" in out and "K_lin" in out and "c_star_correct" in out


def test_s7_blow_up_at_c2_equal_2():
    """K_soft -> oo as c^2 -> 2+ like (c^2 - 2)^(-d/2 - 1) (correct mode), inf at and below; authors' mode at its own pole."""
    k = s7.first_order_softmax_fn()
    for d in (2, 5):
        S = kms(d)
        vals = [k(np.sqrt(2 + h), S, S, 0.1, 1 / d) for h in (1e-2, 1e-3, 1e-4)]
        assert vals[0] < vals[1] < vals[2]
        assert np.log(vals[2] / vals[1]) / np.log(10) == pytest.approx(d / 2 + 1, rel=1e-2)
        assert k(np.sqrt(2.0), S, S, 0.1, 1 / d) == float("inf") and k(1.0, S, S, 0.1, 1 / d) == float("inf")
    Sp, Sq = authors(5)
    lo = s7.softmax_blow_up_c2(Sp, Sq)
    assert lo == pytest.approx(2 * np.max(np.linalg.eigvalsh(np.linalg.inv(Sp))))
    assert k(np.sqrt(lo * 1.0001), Sp, Sq, 0.1, 0.2) > 100 * k(np.sqrt(2 * lo), Sp, Sq, 0.1, 0.2)
    assert k(np.sqrt(lo * 0.999), Sp, Sq, 0.1, 0.2) == float("inf")


def test_s7_full_class_zero_excess_set_is_the_family():
    """The infinite-prompt predictor f = v^T (Gamma_w + s2 e e^T) U (x_q, 0) over all 36 parameters (d = 5): at the
    reference member c*, the Gauss-Newton matrix E[J^T J] of f (the limit risk's Hessian there, the residual being 0)
    has rank 36 - 7: its null space is exactly the family's tangent d(U, v)/dc and U's last column (which multiplies
    z_q's zero entry).  So every other direction raises the limit risk quadratically (docs/maths.md#s7)."""
    d, s2 = 5, 0.1
    S = kms(d)
    c = s7.first_order_gap(S, S, s2, 1 / d)["c_star"]
    D = d + 1
    U = np.zeros((D, D))
    U[:d, :d] = np.linalg.inv(S) / c
    v = np.zeros(D)
    v[d] = c
    rng = np.random.default_rng(5)
    n = 4000
    w = rng.standard_normal((n, d)) / np.sqrt(d)
    xq = rng.standard_normal((n, d)) @ np.linalg.cholesky(S).T
    G = np.zeros((n, D, D))
    G[:, :d, :d] = S
    G[:, :d, d] = w @ S
    G[:, d, :d] = w @ S
    G[:, d, d] = np.einsum("ni,ij,nj->n", w, S, w) + s2
    zq = np.concatenate([xq, np.zeros((n, 1))], 1)
    f = np.einsum("i,nij,jk,nk->n", v, G, U, zq)
    assert np.allclose(f, (w * xq).sum(1))                       # the member is exact at L = oo
    JU = np.einsum("nij,i,nk->njk", G, v, zq).reshape(n, -1)   # df/dU_jk = (G v)_j z_k
    Jv = np.einsum("nij,jk,nk->ni", G, U, zq)                  # df/dv = G U z_q
    J = np.concatenate([JU, Jv], 1)
    sv = np.linalg.svd(J / np.sqrt(n), compute_uv=False)
    assert np.sum(sv > 1e-6 * sv[0]) == D * D + D - (D + 1)
    tangent = np.concatenate([(-U / c).ravel(), v / c])         # d/dc of (Sigma^-1 / c, c e_D)
    assert np.allclose(J @ tangent, 0, atol=1e-10)
    assert np.allclose(JU.reshape(n, D, D)[:, :, d], 0)
