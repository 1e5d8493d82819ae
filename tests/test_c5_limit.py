"""S7's limit test (softlin.claims.c5_limit): the fit of K - a/L - b/L^2 and its t interval on cases with a known
answer, the family's Monte Carlo against closed forms at L = 1, the cross-fitted best member by hand."""
import numpy as np
import pytest

from softlin import baselines
from softlin.claims import c5, c5_limit

TASK = c5.task_of({"d": 5, "kms_rho": 0.5, "noise_var": 0.1, "w_var": None, "covariance_mode": "correct"})
L = np.array([100, 200, 300, 500, 700, 1000])


def test_fit_recovers_an_exact_model():
    """Noiseless K - a/L - b/L^2 points give back (K, a, b) to rounding."""
    K, a, b = 14.3, 600.0, -2.0e4
    assert np.allclose(c5_limit.fit_limit(L, K - a / L - b / L ** 2), [K, a, b], rtol=1e-9)


def test_t_multiplier_from_the_table():
    """Student quantiles at the two-sided 95.45 % level (z = 2): 4.527 at 2 df, 2.869 at 4 df (tables), -> 2 at large df."""
    rows = lambda n: 14.3 - 600 / L + np.arange(n)[:, None] * 0.1  # noqa: E731
    assert c5_limit.limit_estimate(L, rows(3), [100, 1000], 2.0, 14.3)["t"] == pytest.approx(4.527, abs=2e-3)
    assert c5_limit.limit_estimate(L, rows(5), [100, 1000], 2.0, 14.3)["t"] == pytest.approx(2.869, abs=2e-3)
    assert c5_limit.limit_estimate(L, rows(2001), [100, 1000], 2.0, 14.3)["t"] == pytest.approx(2.0, abs=3e-3)


def test_interval_covers_at_its_level_with_few_replicates():
    """2 000 synthetic experiments of 3 replicates (true K = 13.5, independent noise per point): the t interval covers
    K in 95.45 % of them (binomial s.d. 0.47 %: +/- 2 %, where z = 2 would cover about 82 %); the reading says
    'differs' only where 14.3 is outside."""
    rng = np.random.default_rng(7)
    cover = 0
    for _ in range(2000):
        reps = 13.5 - 500 / L - 1e4 / L ** 2 + 0.3 * rng.standard_normal((3, L.size))
        e = c5_limit.limit_estimate(L, reps, [100, 1000], 2.0, 14.3)
        cover += e["interval"][0] <= 13.5 <= e["interval"][1]
        inside = e["interval"][0] <= 14.3 <= e["interval"][1]
        assert e["df"] == 2 and e["reading"] in ("not resolved", "consistent with S7" if inside else "differs from S7")
    assert abs(cover / 2000 - 0.9545) < 0.02


def test_family_at_L1_matches_closed_forms():
    """At L = 1 the member c*'s prediction is c y_1: excess c^2 (w_var tr S + s2) + w_var tr S (x_1 independent of x_q);
    the linear optimum's excess is S6's exact risk at L = 1 minus s2.  4 000 prompts, within 4 s.e."""
    c, cfg = 2.8375, {"seed": 3, "n_blocks": 4, "block_prompts": 1000, "chunk": 250, "L": [1, 2], "scan_L_max": 1,
                      "scan_t": [1.0]}
    out = c5_limit.family_blocks(TASK, cfg, c)
    trS = np.trace(TASK.sigma_prompt)
    want_soft = c ** 2 * (TASK.w_var * trS + TASK.noise_var) + TASK.w_var * trS
    want_lin = baselines.linear_class_risk(1, TASK.sigma_prompt, TASK.sigma_query, 0.1, 0.2) - 0.1
    for key, want in (("soft", want_soft), ("lin", want_lin)):
        m, s = (v[0] for v in c5_limit.mean_se(out[key]))
        assert abs(m - want) < 4 * s, (key, m, s, want)
    assert np.allclose(out["gap"], out["soft"] - out["lin"], rtol=1e-12)
    # the scan at t = 1/c*, L = 1: g = y_1 for every t; sum g^2 / n estimates w_var tr S + s2
    assert out["gg"][:, 0, 0].sum() / 4000 == pytest.approx(TASK.w_var * trS + TASK.noise_var, rel=0.1)


def test_family_is_deterministic_and_nested():
    """Same seed -> same bits; with one chunk per block, the first L of a longer L list are the same numbers (nested
    prompts: the longer prompt continues the shorter one's stream)."""
    cfg = {"seed": 5, "n_blocks": 2, "block_prompts": 10, "chunk": 10, "L": [10, 30], "scan_L_max": 30, "scan_t": [1.0]}
    a, b = c5_limit.family_blocks(TASK, cfg, 2.8), c5_limit.family_blocks(TASK, cfg, 2.8)
    assert all(np.array_equal(a[k], b[k]) for k in c5_limit.SUMS)
    longer = c5_limit.family_blocks(TASK, {**cfg, "L": [10, 30, 60]}, 2.8)
    assert np.array_equal(longer["soft"][:, :2], a["soft"])


def test_best_member_cross_fit_by_hand():
    """Three identical blocks: the cross-fit picks the t with the least hh - gh^2/gg and scores c = gh/gg on its own."""
    gh = np.array([[[1.0, 2.0, 1.5]]] * 3)
    gg = np.array([[[2.0, 2.0, 4.0]]] * 3)
    hh = np.array([5.0] * 3)
    ex, idx = c5_limit.best_member_cross_fit(gh, gg, hh, n=10)
    assert (idx == 1).all()                                  # 5 - 1/2, 5 - 4/2, 5 - 2.25/4 -> the second
    assert np.allclose(ex, (5 - 2 * 1.0 * 2 + 1.0 * 2) / 10)  # c = 2/2 = 1


def test_a_fit_range_with_too_few_lengths_is_refused():
    """c5.limit.fit_L holding fewer than 3 of c5.limit.L: a clear error before any fit."""
    from softlin.claims import c5_limit_report
    with pytest.raises(ValueError, match="fit_L"):
        c5_limit_report.analyse({"gap_constant": 14.3, "L": [100, 200, 5000]}, {},
                                {"fit_L": [100, 200], "family_fit_L": [100, 5000]}, 2.0)


def test_a_set_with_an_unconverged_run_in_its_fit_range_is_not_read():
    """C5c as a precondition: a run not shown converged inside fit_L makes the set's reading 'inconclusive'; one
    outside it (L = 20) does not."""
    from softlin.claims import c5_limit_report
    rows = 14.3 - 600 / L + np.arange(3)[:, None] * 0.1
    fit = c5_limit.limit_estimate(L, rows, [100, 1000], 2.0, 14.3)
    assert c5_limit_report._precondition(fit, ["s1_i0_e2:softmax_L20"]) == fit
    bad = c5_limit_report._precondition(fit, ["s1_i0_e2:softmax_L20", "s1_i0_e2:linear_L1000"])
    assert bad["reading"].startswith("inconclusive") and bad["not_converged"] == ["s1_i0_e2:linear_L1000"]
