"""C4 flows against independent computations: the hand-written reduced flow, n_tasks^-1/2 scaling."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from softlin import metrics, params
from softlin.claims import c4

SIGMA = np.array([[1.5, 0.5, 0.2], [0.5, 1.0, 0.3], [0.2, 0.3, 0.7]])


def hand_flow(t, y, S):
    """The reduced C4 flow (docs/maths.md#c4), written out by hand:
    dA/dt = b S^2 - b^2 S^2 A S, db/dt = tr(A^T S^2) - b tr(A^T S^2 A S)."""
    A, b = y[:9].reshape(3, 3), y[9]
    S2 = S @ S
    dA = b * S2 - b ** 2 * S2 @ A @ S
    db = np.trace(A.T @ S2) - b * np.trace(A.T @ S2 @ A @ S)
    return np.concatenate([dA.ravel(), [db]])


def test_full_ode_equals_hand_reduced_flow_on_blocks():
    p0 = params.init_eq9(SIGMA)
    t = np.linspace(0, 20, 41)
    P, _ = c4.ode_flow(SIGMA, p0, t, rtol=1e-11, atol=1e-13)
    A0, b0 = c4.block_of(p0)
    sol = solve_ivp(hand_flow, (0, 20), np.concatenate([A0.ravel(), [b0]]), t_eval=t, args=(SIGMA,),
                    method="DOP853", rtol=1e-11, atol=1e-13)
    A, b = c4.block_of(P)
    np.testing.assert_allclose(A.reshape(len(t), -1), sol.y[:9].T, atol=1e-8)
    np.testing.assert_allclose(b, sol.y[9], atol=1e-8)
    mu, mv = metrics.offblock_mass(P)
    assert np.max(mu) == 0 and np.max(mv) == 0
    assert np.max(np.abs(metrics.conservation_defect(P))) < 1e-10


def test_symbolic_reduced_flow_equals_hand_flow():
    A0, b0 = c4.block_of(params.init_eq9(SIGMA))
    t = np.linspace(0, 10, 11)
    A, b, _ = c4.reduced_flow(SIGMA, A0, float(b0), t, rtol=1e-11, atol=1e-13)
    sol = solve_ivp(hand_flow, (0, 10), np.concatenate([A0.ravel(), [b0]]), t_eval=t, args=(SIGMA,),
                    method="DOP853", rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(A.reshape(len(t), -1), sol.y[:9].T, atol=1e-8)


def test_flow_limit_is_remark_5_2_optimum():
    """The flow from Eq. (9) ends at U* = Sigma^-1 / c, v* = c e_{d+1}, c = tr(Sigma^-2)^{1/4} (by hand)."""
    P, _ = c4.ode_flow(SIGMA, params.init_eq9(SIGMA), np.array([0.0, 60.0, 120.0]), rtol=1e-11, atol=1e-13)
    inv = np.linalg.inv(SIGMA)
    c = np.trace(inv @ inv) ** 0.25
    np.testing.assert_allclose(P.U[-1][:3, :3], inv / c, atol=1e-7)
    assert P.v[-1][3] == pytest.approx(c, abs=1e-7)


def test_sampled_gap_scales_like_inverse_sqrt_n_synthetic():
    """Synthetic: the mean of n i.i.d. N(0, I) vectors has norm ~ n^-1/2; the same fitter gives -1/2."""
    rng = np.random.default_rng(0)
    ns = np.array([8, 32, 128, 512, 2048])
    gaps = [np.mean([np.linalg.norm(rng.standard_normal((n, 5)).mean(axis=0)) for _ in range(200)]) for n in ns]
    s, se, _ = metrics.ols_slope(np.log10(ns), np.log10(gaps))
    assert s == pytest.approx(-0.5, abs=0.05)


def test_alpha_table_and_summary_shapes():
    r = dict(ntasks_n_tasks=np.array([16, 64, 256]), ntasks_gap=np.array([[0.4, 0.5], [0.2, 0.25], [0.1, 0.13]]),
             alpha=0.5, alpha_max=1.0, t=np.array([0.0, 1.0]),
             ode_dist=np.array([1.0, 1e-9]), gd_dist=np.array([1.0, 1e-3]), sampled_dist=np.array([1.0, 0.1]),
             ode_risk=np.array([1.0, 0.0]), gd_risk=np.array([1.0, 0.0]),
             ode_conservation=np.zeros(2), gd_conservation=np.zeros(2), sampled_conservation=np.zeros(2),
             ode_offblock=np.zeros(2), gd_offblock=np.zeros(2), ode_vs_reduced=np.zeros(2),
             sampled_gap=np.zeros(2), ode_nfev=1, alpha_fractions=np.array([0.5, 2.0]),
             alpha_t=np.array([0.0, 1.0]), alpha_dist=np.array([[1.0, 1e-9], [1.0, 1e-3]]))
    s, rows = c4.summarize("x", "x", r, 1e-6, 1e-2)
    gm = r["ntasks_gap"].mean(axis=1)
    assert s["ntasks_slope"] == pytest.approx(np.polyfit(np.log10([16, 64, 256]), np.log10(gm), 1)[0])
    assert [row["converged"] for row in rows] == [True, False]
    agg = c4.aggregate({"x": s}, rows)
    assert agg["alpha_admissible_unconverged"] == 0 and agg["alpha_beyond_converged"] == 0
