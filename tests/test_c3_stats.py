"""C3's statistics across seeds (softlin.claims.c3): the growth rate of C3d against hand-computed
exponentials, the delete-one-seed jackknife of the fitted slopes against the spread of slopes over
many independent simulated seed sets, the trend count against hand counts, the off-block summary
against numpy, the seeds-needed estimate by hand, and the seed log's block read from its seeds only."""
import numpy as np
import pytest

from softlin import student, verdict
from softlin.claims import c3, c3_notes, c3_seed_log

LS = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


# --------------------------------------------------------------------------- C3d's growth rate
def test_growth_rate_of_an_exponential():
    """m_0 e^{r t} above the floor: the fitted rate is r (7x per 20 steps: ln 7 / 20)."""
    steps = np.arange(0, 2501, 20)
    r = np.log(7.0) / 20
    mass = 1e-30 * np.exp(r * steps)            # 2.0e-8 .. 1.5e-4 over the last records, as in the issue
    assert c3.growth_rate(steps, mass, 6, 1e-14) == pytest.approx(r, rel=1e-12)
    # a decaying mass: negative rate
    assert c3.growth_rate(steps, 1e-3 * np.exp(-0.01 * steps), 6, 1e-14) == pytest.approx(-0.01, rel=1e-12)


def test_growth_rate_at_rounding_level_is_zero():
    """A mass fluctuating below the floor (rounding level) has rate exactly 0, whatever it does."""
    rng = np.random.default_rng(0)
    steps = np.arange(0, 2501, 20)
    mass = 10.0 ** rng.uniform(-19, -16.5, steps.size)
    assert c3.growth_rate(steps, mass, 6, 1e-14) == 0.0
    # without the floor the same noise gives a nonzero slope (what the floor removes)
    assert c3.growth_rate(steps, mass, 6, 1e-300) != 0.0


def test_growth_rate_uses_only_the_last_records():
    """Constant until the last 6 records, then doubling every record: rate ln 2 / 20 per step."""
    steps = np.arange(0, 201, 20)
    mass = np.full(steps.size, 1e-10)
    mass[-6:] = 1e-10 * 2.0 ** np.arange(6)
    assert c3.growth_rate(steps, mass, 6, 1e-14) == pytest.approx(np.log(2) / 20, rel=1e-12)


def test_peak_rate_finds_a_growth_that_saturated():
    """Rounding level, then 10x per record (20 steps) for 8 records, then flat at 2e-2 until the
    end (as anisotropic seed 829 at L = 512): rate at the end 0, peak ln 10 / 20 per step."""
    steps = np.arange(0, 2501, 20)
    mass = np.full(steps.size, 1e-17)
    k = np.arange(steps.size) - 50
    mass = np.where((k >= 0) & (k < 14), 2e-2 * 10.0 ** (k - 13.0), mass)
    mass[steps >= 20 * 63] = 2e-2
    assert c3.growth_rate(steps, mass, 6, 1e-14) == 0.0
    assert c3.peak_growth_rate(steps, mass, 6, 1e-14) == pytest.approx(np.log(10) / 20, rel=1e-12)
    # a run at rounding level throughout: peak 0
    assert c3.peak_growth_rate(steps, np.full(steps.size, 3e-18), 6, 1e-14) == 0.0


def test_growth_rate_settings_come_from_the_config_only():
    """C3d's fit settings (c3.offblock_rate: records, floor, grow_rate) have one home, the schema's
    defaults: no function of the chain takes a default for them."""
    import inspect

    for fn, names in ((c3.growth_rate, ("n_records", "floor")), (c3.peak_growth_rate, ("n_records", "floor")),
                      (c3.offblock_growth, ("n_records", "floor")), (c3.seed_rows, ("rate",)),
                      (c3.offblock_summary, ("grow_rate",)), (c3.summarize_runs, ("rate",))):
        sig = inspect.signature(fn)
        assert all(sig.parameters[n].default is inspect.Parameter.empty for n in names), fn.__name__


# --------------------------------------------------------------------------- fits across seeds
def _rows(D, R, dist, R_init, norm, setting="isotropic", seed0=777):
    """Per-seed rows of fit_block from arrays (seed, L)."""
    return [[dict(setting=setting, token_kind="gauss", seed=seed0 + 13 * s, L=L, D_inf_max=D[s, i],
                  D_linL_max=D[s, i] * 1.1, R_pop_at_L=R[s, i], dist_bayes=dist[s, i],
                  R_init=R_init[s], theta_inf_norm=norm[s])
             for i, L in enumerate(LS)] for s in range(D.shape[0])]


def _simulate(rng, n_seed, noise=0.3):
    """Per-seed curves c_s L^-1/2 (1 + noise): independent seeds, curve noise correlated over L."""
    L = np.asarray(LS, dtype=float)
    scale = np.exp(noise * rng.normal(size=(n_seed, 1)))
    wiggle = np.exp(0.5 * noise * rng.normal(size=(n_seed, L.size)))
    D = scale * L ** -0.5 * wiggle
    R = scale * L ** -0.7 * np.exp(0.5 * noise * rng.normal(size=(n_seed, L.size)))
    dist = D * np.exp(0.3 * noise * rng.normal(size=(n_seed, L.size)))
    return D, R, dist, np.exp(rng.normal(size=n_seed) * 0.2), 2 + 0.1 * rng.normal(size=n_seed)


def test_fit_block_matches_numpy_on_seed_means():
    """Values: OLS on the seed-mean curves (numpy polyfit), ratios and relative distances by hand."""
    rng = np.random.default_rng(1)
    D, R, dist, R_init, norm = _simulate(rng, 5)
    f = c3.fit_block(_rows(D, R, dist, R_init, norm), "isotropic_gauss", 2.0)
    lx = np.log10(LS)
    assert f["slope_D_inf_max"] == pytest.approx(np.polyfit(lx, np.log10(D.mean(0)), 1)[0], rel=1e-12)
    assert f["slope_last4_D_inf_max"] == pytest.approx(np.polyfit(lx[-4:], np.log10(D.mean(0)[-4:]), 1)[0], rel=1e-12)
    assert f["dist_bayes_ratio"] == pytest.approx(dist.mean(0)[-1] / dist.mean(0)[0], rel=1e-12)
    assert f["D_inf_max_rel_to_theta"] == pytest.approx(D.mean(0)[-1] / norm.mean(), rel=1e-12)
    assert f["R_pop_rel_to_init"] == pytest.approx(R.mean(0)[-1] / R_init.mean(), rel=1e-12)
    assert f["D_inf_max_small_over_large"] == pytest.approx(D.mean(0)[0] / D.mean(0)[-1], rel=1e-12)
    assert f["n_increases_D_inf_max"] == int(np.sum(np.diff(D.mean(0)) > 0))
    assert f["n_seed"] == 5 and f["seeds"] == [777, 790, 803, 816, 829]
    # the delete-one-seed jackknife of the slope, written out by hand
    reps = [np.polyfit(lx, np.log10(np.delete(D, i, 0).mean(0)), 1)[0] for i in range(5)]
    assert f["slope_D_inf_max_se"] == pytest.approx(np.sqrt(4 / 5 * np.sum((reps - np.mean(reps)) ** 2)), rel=1e-10)
    assert f["n_increases_R_pop_at_L_se"] == "exact"          # the seed log's plain count (read at z = 0)
    # the trend count is random: the rises of the mean curve with their jackknife errors, df = n - 1
    assert f["n_sig_increases_D_inf_max_rises"] == pytest.approx(np.diff(D.mean(0)).tolist(), rel=1e-12)
    assert f["n_sig_increases_D_inf_max_df"] == 4 and f["slope_D_inf_max_df"] == 4


def test_jackknife_se_of_the_slope_against_independent_seed_sets():
    """The jackknife standard error across 6 seeds agrees with the spread of the fitted slope over
    600 independent seed sets (root mean square of the se against the standard deviation of the
    slopes; tolerance 20%: the jackknife variance over 6 seeds has a relative s.d. of ~60% per set,
    ~2.5% averaged over 600 sets, plus the jackknife's small bias for a nonlinear statistic)."""
    rng = np.random.default_rng(2)
    slopes, ses, ratios, ratio_ses = [], [], [], []
    for _ in range(600):
        f = c3.fit_block(_rows(*_simulate(rng, 6)), "isotropic_gauss", 2.0)
        slopes.append(f["slope_D_inf_max"])
        ses.append(f["slope_D_inf_max_se"])
        ratios.append(f["dist_bayes_ratio"])
        ratio_ses.append(f["dist_bayes_ratio_se"])
    assert np.sqrt(np.mean(np.square(ses))) == pytest.approx(np.std(slopes, ddof=1), rel=0.2)
    assert np.sqrt(np.mean(np.square(ratio_ses))) == pytest.approx(np.std(ratios, ddof=1), rel=0.2)


def test_trend_count_by_hand():
    """Three seeds with the same curve shape: the mean curve rises twice; the rise of size 1 with
    seed spread 0 (exact) counts at any z, the rise blurred by the seeds counts at z = 0 only for a
    FAIL; for a PASS it counts, and so does a fall not significantly below 0 (t_2 = 4.53 at z = 2)."""
    D = np.tile([10.0, 9, 10, 8, 7, 6, 5, 4, 3, 2], (3, 1))      # a clean rise 9 -> 10, the same in every seed
    D[:, 4] = [6.0, 6.5, 6.5]                                      # mean 6.333 ...
    D[:, 5] = [10.0, 4.0, 7.0]                                     # ... -> mean 7.0: a rise blurred by the seeds
    mean = D.mean(0)
    rises = np.diff(mean)
    assert np.sum(rises > 0) == 2
    R = np.tile(np.linspace(1, 0.01, 10), (3, 1))
    rows = _rows(D, R, D, np.ones(3), np.ones(3))
    f0 = c3.fit_block(rows, "isotropic_gauss", 0.0)
    f2 = c3.fit_block(rows, "isotropic_gauss", 2.0)
    assert f0["n_sig_increases_D_inf_max"] == 2 == f0["n_increases_D_inf_max"]

    def count(f, k, z):
        return verdict.check({"measured": k, "op": "<=", "value": 1}, f, z)["count"]
    assert count(f0, "n_sig_increases_D_inf_max", 0.0) == [2.0, 2.0]
    # jackknife se of the blurred rise (mean over seeds of d_s = D[s,5] - D[s,4]: se = sd / sqrt(3))
    d = D[:, 5] - D[:, 4]
    se = np.std(d, ddof=1) / np.sqrt(3)
    assert f2["diff_D_inf_max_se"][4] == pytest.approx(se, rel=1e-12)
    assert rises[4] < 2 * se                                        # so at z = 2 it is not significant
    # the fall 5 -> 6 (per seed 5 - D[s, 5] = -5, 1, -2: mean -2, se sqrt(3)) is not significantly below 0
    d6 = 5.0 - D[:, 5]
    assert d6.mean() + 4.5 * np.std(d6, ddof=1) / np.sqrt(3) > 0
    assert count(f2, "n_sig_increases_D_inf_max", 2.0) == [1.0, 3.0]
    assert count(f2, "n_sig_increases_R_pop_at_L", 2.0) == [0.0, 0.0]


def test_single_seed_has_no_error():
    """One seed: values as for the mean curve, standard errors NaN (no replication); the trend
    count is the plain count at z = 0 and NaN at z > 0."""
    rng = np.random.default_rng(3)
    D, R, dist, R_init, norm = _simulate(rng, 1)
    f = c3.fit_block(_rows(D, R, dist, R_init, norm), "isotropic_rademacher", 0.0)
    assert np.isnan(f["slope_D_inf_max_se"]) and f["n_sig_increases_D_inf_max"] == f["n_increases_D_inf_max"]
    f2 = c3.fit_block(_rows(D, R, dist, R_init, norm), "x", 2.0)
    r = verdict.check({"measured": "n_sig_increases_D_inf_max", "op": "<=", "value": 1}, f2, 2.0)
    assert r["outcome"] == "undecided" and r["decided_by"]["reason"] == "NaN rise"


def test_needed_seeds_by_hand():
    """value 0.3 +/- 0.05 against < 0.25 with 5 seeds at z = 2: 5 (2 x 0.05 / 0.05)^2 = 20 seeds."""
    assert verdict.replication_to_decide(0.3, 0.05, 5, 0.25, 2) == pytest.approx(20.0)
    assert verdict.replication_to_decide(-0.5, 0.1, 4, [-0.65, -0.35], 2) == pytest.approx(4 * (0.2 / 0.15) ** 2)


# --------------------------------------------------------------------------- C3d's summary
def _so_rows(rates, finals, label="anisotropic"):
    per_seed, infos = [], []
    for s, (rr, ff) in enumerate(zip(rates, finals)):
        infos.append(dict(setting=label, token_kind="gauss", seed=777 + 13 * s, offblock_inf_U=0.0, offblock_inf_v=0.0,
                          offblock_seed_order_inf_U=1e-18, offblock_seed_order_inf_v=2e-18,
                          offblock_seed_order_inf_along=3e-18, offblock_seed_order_inf_rate=0.0,
                          offblock_seed_order_inf_peak_rate=0.0))
        for L, r, m in zip((128, 256), rr, ff):
            per_seed.append(dict(setting=label, token_kind="gauss", seed=777 + 13 * s, L=L, offblock_U=0.0,
                                 offblock_v=0.0, offblock_seed_order_U=m, offblock_seed_order_v=m / 2,
                                 offblock_seed_order_along=m, offblock_seed_order_rate=r,
                                 offblock_seed_order_peak_rate=max(r, 0.0) + (0.1 if m > 1e-3 else 0.0)))
    return per_seed, infos


def test_offblock_summary_against_numpy():
    rates = [(0.0, 0.097), (0.0, 0.0), (0.0, 0.0), (0.0, 0.01)]
    finals = [(1e-18, 1.5e-4), (2e-18, 3e-18), (1e-18, 2e-18), (4e-18, 1e-12)]
    per_seed, infos = _so_rows(rates, finals)
    so = c3.offblock_summary(per_seed, infos, 1e-3)["seed_order"]
    r256 = np.array([r[1] for r in rates])
    key = "anisotropic_gauss L=256"
    assert so["rate"][key] == pytest.approx(r256.mean(), rel=1e-12)
    assert so["rate_se"][key] == pytest.approx(r256.std(ddof=1) / 2, rel=1e-12)
    assert so["rate"]["anisotropic_gauss L=128"] == 0.0 and so["rate_se"]["anisotropic_gauss L=128"] == 0.0
    assert so["final"][key] == pytest.approx(np.mean([f[1] for f in finals]), rel=1e-12)
    assert so["limit_final"]["anisotropic_gauss linear(inf)"] == pytest.approx(2e-18)
    assert so["n_seed"][key] == 4 and so["softmax_max"] == 1.5e-4
    peak = np.array([max(r[1], 0.0) + (0.1 if f[1] > 1e-3 else 0.0) for r, f in zip(rates, finals)])
    assert so["peak_rate"][key] == pytest.approx(peak.mean(), rel=1e-12)
    assert so["peak_rate_se"][key] == pytest.approx(peak.std(ddof=1) / 2, rel=1e-12)
    assert any("seed 777 L=256" in x for x in so["runs"])


# --------------------------------------------------------------------------- the seed log's block
def test_seed_log_block_reads_the_seed_logs_seeds_only():
    """With more seeds than the seed log ran, its block (fits, off-block numbers) equals the one
    computed from its seeds alone."""
    rng = np.random.default_rng(4)
    D, R, dist, R_init, norm = _simulate(rng, 4)
    rows = [r for seed in _rows(D, R, dist, R_init, norm) for r in seed]
    for r in rows:
        r.update(offblock_U=0.0, offblock_v=0.0, offblock_seed_order_U=1e-18, offblock_seed_order_v=1e-18,
                 offblock_seed_order_along=1e-18, offblock_seed_order_rate=0.0, offblock_seed_order_peak_rate=0.0)
    infos = [dict(setting="isotropic", token_kind="gauss", seed=777 + 13 * s, offblock_inf_U=0.0, offblock_inf_v=0.0,
                  offblock_seed_order_inf_U=0.0, offblock_seed_order_inf_v=0.0, offblock_seed_order_inf_along=0.0,
                  offblock_seed_order_inf_rate=0.0, offblock_seed_order_inf_peak_rate=0.0) for s in range(4)]
    log = {"runs": [{"setting": "isotropic", "token_kind": "gauss", "seed": 777},
                    {"setting": "isotropic", "token_kind": "gauss", "seed": 790}]}
    block = c3_seed_log.seed_log_metrics({"infos": infos, "offblock_rate": {"grow_rate": 1e-3}}, rows, log)
    alone = c3.fit_block(_rows(D[:2], R[:2], dist[:2], R_init[:2], norm[:2]), "isotropic_gauss", 0.0)
    assert block["fits"]["isotropic_gauss"] == alone
    assert block["fits"]["isotropic_gauss"]["seeds"] == [777, 790]
    assert block["offblock"]["seed_order"]["n_seed"]["isotropic_gauss L=8"] == 2


def test_replication_needed_lists_only_undecided_tests_of_inconclusive_criteria():
    """A FAIL criterion with an undecided test is not listed (already decided); an INCONCLUSIVE one
    is, with n (z se / gap)^2 by hand; a criterion whose precondition fails lists no main test."""
    m = {"fits": {"a": {"n_seed": 5, "x": 0.3, "x_se": 0.05, "y": 9.0, "y_se": 0.1, "w": 0.1, "w_se": 0.02,
                        "x_df": 4, "y_df": 4, "w_df": 4}}}
    crit = [{"id": "undecided", "statement": "s", "all": [{"measured": "fits.a.x", "op": "<", "value": 0.25}]},
            {"id": "failed", "statement": "s", "all": [{"measured": "fits.a.x", "op": "<", "value": 0.25},
                                                       {"measured": "fits.a.y", "op": "<", "value": 1}]},
            {"id": "blocked", "statement": "s", "all": [{"measured": "fits.a.x", "op": "<", "value": 0.25}],
             "inconclusive_unless": [{"measured": "fits.a.w", "op": ">", "value": 1}]}]
    rows = c3_notes.replication_needed([verdict.evaluate(c, m, 2.0) for c in crit], m, 2.0)
    assert [r["id"] for r in rows] == ["undecided"]
    # the normal law's 5 (2 x 0.05 / 0.05)^2 = 20 is too few at t_{n-1}: scanned by hand, 23
    scan = next(k for k in range(2, 1000) if student.multiplier(2, k - 1) * 0.05 * np.sqrt(5 / k) < 0.05)
    assert rows[0]["needed"] == scan == 23
