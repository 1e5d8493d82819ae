"""C4 flows against independent computations: the hand-written reduced flow, n_tasks^-1/2 scaling,
the jackknife standard error of the n_tasks slope, the alpha boundary search."""
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.integrate import solve_ivp

from softlin import metrics, params, population, verdict
from softlin.claims import c4, c4_boundary, c4_flows, c4_summary

ROOT = Path(__file__).parents[1]
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
    P, _ = c4_flows.ode_flow(SIGMA, p0, t, rtol=1e-11, atol=1e-13)
    A0, b0 = c4_flows.block_of(p0)
    sol = solve_ivp(hand_flow, (0, 20), np.concatenate([A0.ravel(), [b0]]), t_eval=t, args=(SIGMA,),
                    method="DOP853", rtol=1e-11, atol=1e-13)
    A, b = c4_flows.block_of(P)
    np.testing.assert_allclose(A.reshape(len(t), -1), sol.y[:9].T, atol=1e-8)
    np.testing.assert_allclose(b, sol.y[9], atol=1e-8)
    mu, mv = metrics.offblock_mass(P)
    assert np.max(mu) == 0 and np.max(mv) == 0
    assert np.max(np.abs(metrics.conservation_defect(P))) < 1e-10


def test_symbolic_reduced_flow_equals_hand_flow():
    A0, b0 = c4_flows.block_of(params.init_eq9(SIGMA))
    t = np.linspace(0, 10, 11)
    A, b, _ = c4_flows.reduced_flow(SIGMA, A0, float(b0), t, rtol=1e-11, atol=1e-13)
    sol = solve_ivp(hand_flow, (0, 10), np.concatenate([A0.ravel(), [b0]]), t_eval=t, args=(SIGMA,),
                    method="DOP853", rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(A.reshape(len(t), -1), sol.y[:9].T, atol=1e-8)


def test_flow_limit_is_remark_5_2_optimum():
    """The flow from Eq. (9) ends at U* = Sigma^-1 / c, v* = c e_{d+1}, c = tr(Sigma^-2)^{1/4} (by hand)."""
    P, _ = c4_flows.ode_flow(SIGMA, params.init_eq9(SIGMA), np.array([0.0, 60.0, 120.0]), rtol=1e-11, atol=1e-13)
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
    two = np.zeros(2)
    along = c4_flows.Along(risk=np.array([1.0, 0.0]), dist=np.array([1.0, 1e-9]), offblock=two, conservation=two)
    flow = c4_flows.Flow(np.zeros((2, 4, 4)), np.zeros((2, 4)), along)
    r = c4.Setting(t=np.array([0.0, 1.0]), alpha=0.5, alpha_max=1.0, ode=flow,
                   gd=flow._replace(along=along._replace(dist=np.array([1.0, 1e-3]))),
                   sampled=along._replace(dist=np.array([1.0, 0.1])), sampled_gap=two, ode_vs_reduced=two,
                   ode_nfev=1, reduced_nfev=1,
                   ntasks=c4.NTasks(np.array([16, 64, 256]), np.array([[0.4, 0.5], [0.2, 0.25], [0.1, 0.13]])),
                   sweep=c4.AlphaSweep(np.array([0.5, 2.0]), np.array([0.0, 1.0]),
                                       np.array([[1.0, 1e-9], [1.0, 1e-3]])), boundary=None)
    s, rows = c4_summary.summarize("x", "x", r, 1e-6, 1e-2)
    x = np.log10([16, 64, 256])
    gm = r.ntasks.gap.mean(axis=1)
    assert s["ntasks_slope"] == pytest.approx(np.polyfit(x, np.log10(gm), 1)[0])
    # delete-one jackknife over the 2 seeds, by hand: each replicate is the other seed's slope
    reps = [np.polyfit(x, np.log10(r.ntasks.gap[:, 1 - i]), 1)[0] for i in range(2)]
    assert s["ntasks_slope_se"] == pytest.approx(math.sqrt(1 / 2 * sum((q - np.mean(reps)) ** 2 for q in reps)))
    assert [row["converged"] for row in rows] == [True, False]
    agg = c4_summary.aggregate({"x": s}, rows)
    assert agg["alpha_admissible_unconverged"] == 0 and agg["alpha_beyond_converged"] == 0
    assert agg["alpha_admissible_unconverged_se"] == "exact"
    assert agg["ntasks_slope"] == {"x": s["ntasks_slope"]} and agg["ntasks_slope_se"] == {"x": s["ntasks_slope_se"]}


def test_ntasks_slope_jackknife_se_matches_spread_over_replicates():
    """Synthetic gaps c n^-1/2 e^(0.3 g) (g standard normal, independent per seed and n): over 2000
    independent experiments of 10 seeds, the mean jackknife s.e. of the fitted slope matches the
    standard deviation of the slopes within 10% (the jackknife is nearly unbiased for a smooth
    statistic; the spread itself is known to about 2% from 2000 draws)."""
    rng = np.random.default_rng(1)
    n = np.array([16, 64, 256, 1024])
    slopes, ses = [], []
    for _ in range(2000):
        gaps = n[:, None] ** -0.5 * np.exp(0.3 * rng.standard_normal((n.size, 10)))
        s, se = c4_summary.ntasks_slope(n, gaps)
        slopes.append(s)
        ses.append(se)
    assert np.mean(slopes) == pytest.approx(-0.5, abs=0.01)
    assert np.mean(ses) == pytest.approx(np.std(slopes, ddof=1), rel=0.10)


def test_reduced_risk_by_hand():
    """R(A, b) = 1/2 tr((b S A - I) S (b S A - I)^T): tr(S)/2 at the origin, 0 at theta*, and by hand
    at a diagonal point for S = diag(2, 1, 0.5): 1/2 sum_i s_i (b a_i s_i - 1)^2."""
    assert c4_boundary.reduced_risk(np.zeros((3, 3)), 0.0, SIGMA) == pytest.approx(np.trace(SIGMA) / 2)
    A, b = c4_flows.block_of(population.bayes_optimum(SIGMA))
    assert abs(c4_boundary.reduced_risk(A, b, SIGMA)) < 1e-24
    s, a = np.array([2.0, 1.0, 0.5]), np.array([0.3, -0.2, 0.7])
    assert c4_boundary.reduced_risk(np.diag(a), 1.5, np.diag(s)) == pytest.approx(0.5 * np.sum(s * (1.5 * a * s - 1) ** 2))


def test_flow_end_reaches_star_inside_and_far_beyond_the_bound():
    """The exact flow from Eq. (9) reaches theta* for every alpha > 0 (docs/maths.md#c4): at 0.5 and
    at 100 alpha_max the reduced flow ends within 1e-8 of the hand-computed theta* (U* = Sigma^-1 / c,
    c = tr(Sigma^-2)^{1/4}) with zero risk and conservation defect at rounding level."""
    inv = np.linalg.inv(SIGMA)
    c = np.trace(inv @ inv) ** 0.25
    for f in (0.5, 100.0):
        e = c4_boundary.flow_end(SIGMA, f, 100.0, "DOP853", 1e-12, 1e-14)
        assert e["solver_ok"] and e["dist"] < 1e-8 and e["risk"] < 1e-20 and abs(e["conservation"]) < 1e-8
    A0, b0 = c4_flows.block_of(params.init_eq9(SIGMA, 100.0 * params.alpha_max(SIGMA)))
    A, b, _ = c4_flows.reduced_flow(SIGMA, A0, float(b0), np.array([0.0, 100.0]), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(A[-1], inv / c, atol=1e-8)


def _fake_flow(f0, diverge=False):
    """A stand-in for :func:`c4_boundary.flow_end`: reaches theta* below the multiple f0, not above."""
    def flow_end(sigma, f, t_max, method, rtol, atol):
        if f < f0:
            return dict(dist=1e-12, risk=0.0, conservation=0.0, solver_ok=True)
        if diverge:
            return dict(dist=float("inf"), risk=float("inf"), conservation=float("nan"), solver_ok=False)
        return dict(dist=1e-3, risk=0.0 if rtol > 1e-12 else 1e-3, conservation=1e-3, solver_ok=True)
    return flow_end


SW = dict(t_max=10.0, method="DOP853", rtol=1e-10, atol=1e-13)
BD = dict(f_max=1e6, growth=10.0, n_bisect=8, check_rtol=1e-13, check_atol=1e-15)


def test_alpha_boundary_brackets_a_known_threshold(monkeypatch):
    """Scan 1, 10, 100 then 8 bisections in log f: the bracket holds f0 = 37 and is 10^(1/256) wide."""
    monkeypatch.setattr(c4_boundary, "flow_end", _fake_flow(37.0))
    r = c4_boundary.alpha_boundary(SIGMA, SW, BD, 1e-6, 0.05)
    assert r.found and r.lo < 37.0 <= r.hi
    assert r.hi / r.lo == pytest.approx(10 ** (1 / 256), rel=1e-9)
    assert r.ratio == pytest.approx(37.0, rel=0.01)
    assert list(r.scan_f) == [1.0, 10.0, 100.0] and r.n_solves == 3 + 8 + 1
    # the re-integration at the tighter tolerance does not reach theta* either (risk 1e-3): not the integrator
    kind = c4_boundary.boundary_kind(r.found, r.solver_ok_hi, r.risk_hi, r.dist_hi_check, 1e-6)
    assert kind.startswith("reaches a global minimum other than theta*")


def test_alpha_boundary_none_found_and_divergence(monkeypatch):
    monkeypatch.setattr(c4_boundary, "flow_end", _fake_flow(1e9))
    r = c4_boundary.alpha_boundary(SIGMA, SW, BD, 1e-6, 0.05)
    assert not r.found and r.ratio == pytest.approx(1e6) and r.hi == math.inf
    assert c4_boundary.boundary_kind(False, True, math.nan, math.nan, 1e-6) == "none found"
    monkeypatch.setattr(c4_boundary, "flow_end", _fake_flow(5.0, diverge=True))
    r = c4_boundary.alpha_boundary(SIGMA, SW, BD, 1e-6, 0.05)
    assert r.found and r.lo < 5.0 <= r.hi and not r.solver_ok_hi
    assert c4_boundary.boundary_kind(True, r.solver_ok_hi, r.risk_hi, r.dist_hi_check, 1e-6).startswith("diverges")


def test_criterion_c4c_fails_when_the_boundary_is_inside_the_admissible_interval(monkeypatch):
    """C4c (a consistency check since issue 30) can fail on an integrator: a flow that stops
    converging at 0.5 alpha_max gives alpha_c / alpha_max < 1 (bracket [0.05, 1] bisected), and the
    config's C4c is FAIL on it; PASS at 37."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["c4"]
    crit = next(c for c in cfg["consistency_checks"] if c["id"] == "C4c")
    for f0, status in ((0.5, "FAIL"), (37.0, "PASS")):
        monkeypatch.setattr(c4_boundary, "flow_end", _fake_flow(f0))
        r = c4_boundary.alpha_boundary(SIGMA, SW, BD, 1e-6, 0.05)
        m = {"summary": {"alpha_admissible_unconverged": 0, "alpha_admissible_unconverged_se": "exact",
                         "alpha_admissible_dist_max": 1e-9, "alpha_admissible_dist_max_se": "exact",
                         "alpha_c_ratio": {"x": r.ratio}, "alpha_c_ratio_se": "exact"}}
        assert verdict.evaluate(crit, m, 2.0)["status"] == status


def test_needed_replication():
    """n (z se / margin)^2: a slope -0.40 +/- 0.05 from 3 seeds, 0.05 from the edge -0.35: 12 seeds."""
    assert verdict.replication_to_decide(-0.40, 0.05, 3, [-0.65, -0.35], 2.0) == pytest.approx(12.0)


def test_setting_record_round_trip_against_its_config_template(tmp_path):
    """A small run_setting saved as a record reads back bit for bit against setting_like(cfg, d) (the
    template comes from the config, not the file); a config with another n_seed is refused."""
    from softlin import records

    cfg = dict(lr=0.01, steps=20, record_every=10, tol=1e-6,
               ode=dict(method="DOP853", rtol=1e-8, atol=1e-10),
               sampled=dict(n_pairs=4, n_query=2, seed=7),
               n_tasks=dict(n_pairs=[2, 4], n_seed=2, n_query=2, seed0=11, steps=20),
               alpha_sweep=dict(fractions=[0.5, 2.0], t_max=1.0, method="DOP853", rtol=1e-8, atol=1e-10),
               alpha_boundary=dict(f_max=10.0, growth=10.0, n_bisect=1, check_rtol=1e-10, check_atol=1e-12))
    r = c4.run_setting(SIGMA, cfg, progress=lambda m: None)
    records.save(tmp_path / "s.npz", r)
    back = records.load(tmp_path / "s.npz", c4.setting_like(cfg, 3))
    import jax

    la, lb = jax.tree.leaves(r), jax.tree.leaves(back)
    assert len(la) == len(lb) == 40
    for a, b in zip(la, lb):
        assert np.array_equal(np.asarray(a), b, equal_nan=True) and np.asarray(a).dtype == b.dtype
    assert back.ntasks.gap.shape == (2, 2) and back.sweep.dist.shape == (2, c4.SWEEP_POINTS)
    other = {**cfg, "n_tasks": {**cfg["n_tasks"], "n_seed": 3}}
    with pytest.raises(records.RecordError, match="ntasks"):
        records.load(tmp_path / "s.npz", c4.setting_like(other, 3))
