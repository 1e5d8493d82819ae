"""The intervals that know their degrees of freedom, counts read with the rises' intervals, errors
that are lower bounds, and the family-wide status (Holm), each against an independent reference:
closed-form Student quantiles (df 1: Cauchy, df 2), a tabulated value, numerical integration of the
t density, and hand-computed Holm and count examples."""
import math

import numpy as np
import pytest
from scipy import integrate

from softlin import family, intervals, metrics, student, verdict
from softlin.claims import c3

P = 0.5 * (1 + math.erf(2 / math.sqrt(2)))      # the one-sided probability of z = 2: 0.97725


def _t_cdf_by_quadrature(x: float, df: float) -> float:
    """P(T <= x) for T ~ t(df), integrating the density written out (Gamma functions) from 0."""
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    return 0.5 + integrate.quad(lambda t: c * (1 + t * t / df) ** (-(df + 1) / 2), 0, x, epsabs=1e-13)[0]


def test_level_of_z_2():
    assert student.level(2) == pytest.approx(0.954499736, abs=1e-9)
    assert student.alpha(2) == pytest.approx(0.045500264, abs=1e-9)


def test_multiplier_closed_forms_and_table():
    # df = 1 is the Cauchy law: quantile tan(pi (p - 1/2)); df = 2: (2p - 1) / sqrt(2 p (1 - p))
    assert student.multiplier(2, 1) == pytest.approx(math.tan(math.pi * (P - 0.5)), rel=1e-9)   # 13.97
    assert student.multiplier(2, 2) == pytest.approx((2 * P - 1) / math.sqrt(2 * P * (1 - P)), rel=1e-9)  # 4.53
    # the classic table value t_{4, 0.975} = 2.776 at the 95 % level (z = 1.959964)
    assert student.multiplier(1.959964, 4) == pytest.approx(2.776, abs=5e-4)
    # df = inf gives z back; z = 0 gives 0 (the point-estimate rule)
    assert student.multiplier(2, math.inf) == 2.0 and student.multiplier(0, 4) == 0.0


@pytest.mark.parametrize("df", [3, 4, 19, 23, 63])
def test_multiplier_against_the_integrated_density(df):
    t = student.multiplier(2, df)
    assert _t_cdf_by_quadrature(t, df) == pytest.approx(P, abs=1e-9)
    assert student.p_two_sided(t, df) == pytest.approx(student.alpha(2), rel=1e-7)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), None, True])
def test_bad_degrees_of_freedom_are_refused(bad):
    with pytest.raises(ValueError, match="degrees of freedom"):
        student.multiplier(2, bad)


def test_a_standard_error_without_df_names_the_path():
    c = {"id": "X", "statement": "s", "all": [{"measured": "a.x", "op": "<", "value": 1}]}
    with pytest.raises(KeyError, match="a.x_df"):
        verdict.evaluate(c, {"a": {"x": 0.5, "x_se": 0.1}})
    assert verdict.evaluate(c, {"a": {"x": 0.5, "x_se": "exact"}})["status"] == "PASS"      # exact: no df
    assert verdict.evaluate(c, {"a": {"x": 0.5, "x_se": 0.1}}, z=0)["status"] == "PASS"    # point rule
    with pytest.raises(ValueError, match="degrees of freedom"):
        metrics.put({}, "x", 0.5, 0.1)


def test_the_multiplier_moves_a_decision():
    """2.48 s.e. from the edge (C3a-isotropic in issue 30): FAIL with a normal interval, undecided
    at 4 df (t = 2.87); every test records df and multiplier."""
    c = {"id": "X", "statement": "s", "all": [{"measured": "x", "op": "<", "value": 0.05}]}
    x = 0.05 + 2.48 * 0.01
    normal = verdict.evaluate(c, {"x": x, "x_se": 0.01, "x_df": math.inf})
    t4 = verdict.evaluate(c, {"x": x, "x_se": 0.01, "x_df": 4})
    assert normal["status"] == "FAIL" and t4["status"] == "INCONCLUSIVE"
    assert t4["tests"][0]["df"] == 4 and t4["tests"][0]["multiplier"] == pytest.approx(2.8693, abs=1e-4)


def test_count_of_rises_is_an_interval():
    """Rises +0.5 +/- 0.1 (significant), +0.05 +/- 0.1 (not), -0.05 +/- 0.1 (not significantly
    down), -1 +/- 0.1 (down): at t = 2, 1 significant rise, 3 not significantly down."""
    d, s = [0.5, 0.05, -0.05, -1.0], [0.1] * 4
    assert intervals.count_bounds(d, s, 2.0) == (1.0, 3.0)
    m = metrics.put_count({}, "n", d, s, math.inf)
    assert m["n"] == 2 and m["n_rises"] == d and m["n_df"] == math.inf
    c = {"id": "X", "statement": "s", "all": [{"measured": "n", "op": "<=", "value": 1}]}
    v = verdict.evaluate(c, m)
    assert v["status"] == "INCONCLUSIVE" and v["tests"][0]["count"] == [1.0, 3.0]
    # noisier data pass less easily: with errors 10x smaller the same rises give [2, 2]: FAIL
    v2 = verdict.evaluate(c, metrics.put_count({}, "n", d, [0.01] * 4, math.inf))
    assert v2["status"] == "FAIL"
    assert verdict.evaluate(c, metrics.put_count({}, "n", [0.5, -1.0, -2.0], [0.1] * 3, math.inf))["status"] == "PASS"
    # the point-estimate rule counts the rises of the point estimate
    assert verdict.evaluate(c, m, z=0)["tests"][0]["count"] == [2.0, 2.0]


def test_count_p_values_by_hand():
    """n <= 1 over rises with p-values by hand: the PASS needs the two negative rises significant,
    so p_hold is the larger of their p-values; the FAIL needs both positive rises significant, so
    p_fail is the larger of theirs (normal law, distances 3 and 1 s.e., 4 and 0.5)."""
    d, s = [0.3, -0.1, -0.4, 0.05], [0.1] * 4
    p_hold, p_fail = intervals.count_p("<=", 1, d, s, math.inf)
    assert p_hold == 1.0   # two rises up: at most one cannot hold at any level
    p_hold, p_fail = intervals.count_p("<=", 1, [0.3, -0.1, -0.4], [0.1] * 3, math.inf)
    assert p_hold == pytest.approx(math.erfc(1 / math.sqrt(2)), rel=1e-9)       # the -0.1 rise: 1 s.e.
    assert p_fail == 1.0
    _, p_fail = intervals.count_p("<=", 1, [0.3, 0.05], [0.1, 0.1], math.inf)
    assert p_fail == pytest.approx(math.erfc(0.5 / math.sqrt(2)), rel=1e-9)      # the 0.05 rise: 0.5 s.e.


def test_p_values_agree_with_the_interval_rule():
    """On random values, thresholds and df: a test holds exactly when p_hold < alpha, fails exactly
    when p_fail < alpha (the interval rule and the p-values are one rule)."""
    rng = np.random.default_rng(0)
    alpha = student.alpha(2)
    for _ in range(400):
        op = rng.choice(["<", "<=", ">", ">=", "between", "outside"])
        thr = sorted(rng.normal(size=2).tolist()) if op in ("between", "outside") else float(rng.normal())
        x, se, df = float(rng.normal()), float(rng.uniform(0.01, 0.5)), int(rng.integers(1, 40))
        outcome, _ = intervals.decide(op, thr, x, se, student.multiplier(2, df))
        p_hold, p_fail = intervals.entry_p(op, thr, x, se, df)
        assert (outcome == "holds") == (p_hold < alpha), (op, thr, x, se, df)
        assert (outcome == "fails") == (p_fail < alpha), (op, thr, x, se, df)


def test_an_error_that_is_a_lower_bound_grants_no_pass():
    c = {"id": "X", "statement": "s", "all": [{"measured": "r", "op": "<", "value": 0.3}]}
    m = {"r": {"a": 0.1, "b": 0.2}, "r_se": {"a": 0.01, "b": 0.01}, "r_df": 23,
         "r_se_lower_bound": {"a": False, "b": True}}
    v = verdict.evaluate(c, m)
    assert v["status"] == "INCONCLUSIVE" and "lower bound" in v["why"]
    m["r"]["b"] = 0.5   # it may still FAIL
    assert verdict.evaluate(c, m)["status"] == "FAIL"


def test_holm_by_hand():
    """p = 0.01, 0.04, 0.03, 0.005 at 0.05: sorted 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2:
    stop; rejected: the first and the fourth."""
    assert family.holm([0.01, 0.04, 0.03, 0.005], 0.05) == [True, False, False, True]
    assert family.holm([0.01, 0.02, 0.03], 0.05) == [True, True, True]     # 0.0167, 0.025, 0.05
    assert family.holm([], 0.05) == []


def test_family_status_turns_unrejected_decisions_inconclusive():
    vs = [dict(id="A", status="PASS", p=0.001), dict(id="B", status="FAIL", p=0.03),
          dict(id="C", status="INCONCLUSIVE", p=1.0), dict(id="D", status="PASS", p=0.012)]
    fam = {r["id"]: r["family"] for r in family.family_status(vs, 0.05)}
    # sorted: A 0.001 <= 0.0125, D 0.012 <= 0.0167, B 0.03 > 0.025: stop
    assert fam == {"A": "PASS", "D": "PASS", "B": "INCONCLUSIVE", "C": "INCONCLUSIVE"}


def test_criterion_p_intersection_union_and_bonferroni():
    main = [dict(p_hold=0.01, p_fail=1.0, n_entries=3), dict(p_hold=1.0, p_fail=0.004, n_entries=2)]
    pre = [dict(p_hold=0.02, p_fail=1.0, n_entries=1)]
    r = family.criterion_p(main, pre, "FAIL")
    assert r["p_fail"] == pytest.approx(max(5 * 0.004, 0.02)) and r["p"] == r["p_fail"]
    assert family.criterion_p(main[:1], pre, "PASS")["p"] == pytest.approx(0.02)


def test_c3d_grow_fraction_by_hand():
    """Agresti-Coull: 0 of 20 -> 2/24 +/- sqrt(2/24 * 22/24 / 24); 1 of 5 -> 3/9."""
    p, se = c3.grow_fraction(0, 20)
    assert p == pytest.approx(1 / 12) and se == pytest.approx(math.sqrt(1 / 12 * 11 / 12 / 24))
    assert c3.grow_fraction(1, 5)[0] == pytest.approx(1 / 3)


def test_c3d_counts_the_seeds_that_grow():
    """offblock_summary: per (setting, L) the seeds whose peak rate exceeds grow_rate (1 of 4 at
    L = 8, none at L = 16 where one peak rate sits below the bound), their Agresti-Coull fraction,
    its se and df ("inf": a normal-law interval), as C3d reads them."""
    infos = [dict(setting="iso", token_kind="gauss", offblock_inf_U=0.0, offblock_inf_v=0.0,
                  offblock_seed_order_inf_U=1e-15, offblock_seed_order_inf_v=0.0, offblock_seed_order_inf_rate=0.0,
                  offblock_seed_order_inf_peak_rate=0.0, offblock_seed_order_inf_along=1e-15) for _ in range(4)]
    peaks = {8: [0.05, 0.0, 0.0, 0.0], 16: [5e-4, 0.0, 0.0, 0.0]}
    per_seed = [dict(setting="iso", token_kind="gauss", L=L, seed=s, offblock_U=0.0, offblock_v=0.0,
                     offblock_seed_order_U=1e-14, offblock_seed_order_v=0.0, offblock_seed_order_rate=0.0,
                     offblock_seed_order_peak_rate=peaks[L][s], offblock_seed_order_along=1e-14)
                for s in range(4) for L in (8, 16)]
    so = c3.offblock_summary(per_seed, infos, grow_rate=1e-3)["seed_order"]
    assert so["n_grow"] == {"iso_gauss linear(inf)": 0, "iso_gauss L=8": 1, "iso_gauss L=16": 0}
    assert so["grow_frac"]["iso_gauss L=8"] == pytest.approx(3 / 8)
    assert so["grow_frac_se"]["iso_gauss L=16"] == pytest.approx(math.sqrt(2 / 8 * 6 / 8 / 8))
    assert so["grow_frac_df"]["iso_gauss L=8"] == "inf"
    r = verdict.check({"measured": "offblock.seed_order.grow_frac", "op": "<", "value": 0.5},
                      {"offblock": {"seed_order": so}}, 2.0)
    # 4 seeds are too few: 0 of 4 gives 2/8 + 2 x 0.153 > 1/2, undecided; 0 of 5 (2/9 + 2 x 0.1386 =
    # 0.4994) is the fewest seeds that can hold
    assert r["outcome"] == "undecided" and r["multiplier"]["iso_gauss L=16"] == 2.0
    p, se = c3.grow_fraction(0, 5)
    assert p + 2 * se < 0.5
    p1, se1 = c3.grow_fraction(1, 5)                 # 1 of 5: 1/3 +/- 0.157, undecided
    assert p1 - 2 * se1 < 0.5 < p1 + 2 * se1


def test_replication_with_the_t_law_by_hand():
    """0.3 +/- 0.05 against < 0.25 from 5 seeds at z = 2: the normal law says 20 seeds; with the t
    multiplier at n - 1 df the smallest n with t_{n-1} 0.05 sqrt(5 / n) < 0.05, found by scanning."""
    scan = next(k for k in range(2, 1000) if student.multiplier(2, k - 1) * 0.05 * math.sqrt(5 / k) < 0.05)
    assert verdict.replication_to_decide(0.3, 0.05, 5, 0.25, 2, t_law=True) == scan
    assert scan > 20 and verdict.replication_to_decide(0.3, 0.05, 5, 0.25, 2) == pytest.approx(20.0)


def test_a_p_value_that_underflows_prints_as_a_bound():
    """C2f's reading (-0.00233 +/- 0.000446 against > -0.15, 255 df: 331 standard errors) has a p-value
    below the smallest double: the tables print it as '<1e-300', not '0'; others keep two digits."""
    from softlin import intervals, verdict_report
    p_hold, _ = intervals.entry_p(">", -0.15, -0.002331, 0.0004461, 255)
    assert 0 < p_hold < 1e-300                                   # not 0: it carries a standard error
    assert verdict_report.fmt_p(p_hold) == "<1e-300"
    exact, _ = intervals.entry_p(">", -0.15, -0.002331, 0.0, None)
    assert exact == 0.0 and verdict_report.fmt_p(exact) == "0"   # an exact value: certain
    assert verdict_report.fmt_p(0.0082) == "0.0082" and verdict_report.fmt_p(1.0) == "1"
