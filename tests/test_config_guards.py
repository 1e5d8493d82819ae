"""Issue 32, config faults called in-process: every setting the schema accepts either works or is
refused at parse time with one line naming the key (softlin/config_check.py), the names a config
gives are unique and safe, work beyond the machine is refused with its estimate
(softlin/config_cost.py), and the C5 plateau guard cannot be switched off by a knob.

The end-to-end form of the reproducers (one Snakemake process, dry runs) is in test_config_checks.py.
"""
import copy
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import yaml
from snakemake.utils import validate

from softlin import config_check, config_cost
from softlin.claims import c3 as c3_claim
from softlin.claims import c4_summary, c5_convergence, metric_names
from softlin.metrics import curve_summary

from helpers import ROOT

SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
BASE = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def _merge(base, over):
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def load(over=None, preset="smoke"):
    """config.yaml <- preset <- ``over``, schema-validated (defaults filled in), then the semantic check."""
    presets = ROOT / "config" / "presets"
    cfg = BASE if preset == "default" else _merge(BASE, yaml.safe_load((presets / f"{preset}.yaml").read_text()))
    cfg = _merge(cfg, over)
    validate(cfg, SCHEMA)
    return cfg, config_check.check(cfg)


def refused(over, preset="smoke"):
    with pytest.raises(ValueError) as err:
        load(over, preset)
    msg = str(err.value)
    assert msg.startswith("config key '") and "\n" not in msg, msg
    return msg


@pytest.mark.parametrize("preset", ["default", "smoke", "paper"])
def test_every_preset_passes_every_check(preset):
    cfg, sigmas = load(preset=preset)
    assert ("c3", "isotropic") in sigmas


CASES = {  # name: (override at the smoke preset, what the one line says)
    "between_one_number": ({"c4": {"criteria": [{"id": "C4x", "statement": "s", "all": [
        {"measured": "summary.ode_dist_final_max", "op": "between", "value": 0.5}]}]}},
        "config key 'c4.criteria': C4x's test on 'summary.ode_dist_final_max': op 'between' needs value [low, high]"),
    "band_reversed": ({"c4": {"criteria": [{"id": "C4x", "statement": "s", "all": [
        {"measured": "summary.ntasks_slope", "op": "between", "value": [-0.35, -0.65]}]}]}},
        "the band [-0.35, -0.65] needs low < high"),
    "less_than_a_band": ({"c4": {"criteria": [{"id": "C4x", "statement": "s", "all": [
        {"measured": "summary.ode_dist_final_max", "op": "<", "value": [0.1, 0.2]}]}]}},
        "op '<' needs one number"),
    "one_replicate": ({"c5": {"replicates": [{"seed": 2025, "init_seed": 0, "eval_seed": 31337}]}},
                      "config key 'c5.replicates': 1 replicate; need at least 2"),
    "same_replicate_twice": ({"c5": {"replicates": [{"seed": 1, "init_seed": 0, "eval_seed": 2}] * 2}},
                             "two replicates with the same seeds"),
    "two_isotropic": ({"c3": {"settings": {"iso2": {"sigma": [1.0, 1.0, 1.0], "n_seed": 2}}}},
                      "share the fit block 'isotropic_gauss'"),
    "label_with_dot": ({"c3": {"settings": {"anisotropic": {"label": "a.b"}}}},
                       "config key 'c3.settings.anisotropic.label': 'a.b' is not allowed"),
    "setting_name_slash": ({"c1": {"settings": {"a/b": {"sigma": [1.0, 1.0, 1.0]}}}}, "setting name 'a/b'"),
    "c1_labels_collide": ({"c1": {"settings": {"anisotropic": {"label": "isotropic"}}}}, "(label, token kind)"),
    "duplicate_lambda": ({"c2": {"sweep": {"lambda": [0.3, 0.3, 1.0]}}},
                         "config key 'c2.sweep.lambda': lambda_max target 0.3 appears twice"),
    "duplicate_probe_lambda": ({"c1": {"probes": {"scaled_lambda": [0.35, 0.35]}}}, "c1.probes.scaled_lambda"),
    "duplicate_fraction": ({"c4": {"alpha_sweep": {"fractions": [0.5, 0.5, 3.0]}}}, "c4.alpha_sweep.fractions"),
    "duplicate_sweep_setting": ({"c2": {"sweep": {"settings": ["isotropic", "isotropic"]}}}, "c2.sweep.settings"),
    "exponent_one_lambda": ({"c1": {"exponent": {"lambda": [0.5]}}}, "needs at least 2 c1.exponent.lambda values"),
    "exponent_duplicate_lambda": ({"c1": {"exponent": {"lambda": [0.2, 0.2]}}}, "c1.exponent.lambda"),
    "limit_fit_range_empty": ({"c5": {"limit": {"fit_L": [100, 100]}}}, "c5.limit.fit_L"),
    "limit_family_range_short": ({"c5": {"limit": {"family_fit_L": [10000, 20000]}}}, "c5.limit.family_fit_L"),
    "limit_trained_range_misses_family": ({"c5": {"limit": {"fit_L": [10, 50]}}},
                                          "config key 'c5.limit.fit_L': [10, 50] holds 0 of c5.limit.L"),
    "limit_L_unordered": ({"c5": {"limit": {"L": [300, 200, 100]}}}, "c5.limit.L"),
    "confirm_one_replicate": ({"c5": {"confirm": {"replicates": [{"seed": 2028, "init_seed": 16, "eval_seed": 31340}]}}},
                              "c5.confirm.replicates"),
    "duplicate_criterion_id": ({"c5": {"consistency_checks": [
        {"id": "C5a", "statement": "s", "reason": "r", "all": [{"measured": "n_below_bayes_3se", "op": "==", "value": 0}]}]}},
        "criterion id 'C5a' appears twice"),
    "seed_log_outcome_unknown_id": ({"c3": {"compare_seed_log": True, "seed_log_outcome": {"C3z": "PASS"}}},
                                    "config key 'c3.seed_log_outcome': 'C3z' is no c3 criterion"),
    "c2_through_c1_star": ({"c1": {"probes": {"star": False}}, "c3": {"criteria": []}}, "needs the probe 'star'"),
    "star_off_in_one_setting": ({"c1": {"settings": {"rademacher": {"probes": {"star": False}}}}},
                                "c1.settings.rademacher.probes.star is false"),
    "no_beyond_fraction": ({"c4": {"alpha_sweep": {"fractions": [0.5]}, "criteria": [{"id": "C4x", "statement": "s", "all": [
        {"measured": "summary.alpha_beyond_converged", "op": "==", "value": 0}]}]}},
        "needs a c4.alpha_sweep.fractions entry >= 1"),
    "c1_two_blocks_last_over_se": ({"c1": {"n_blocks": 2}},
                                   "C1f measures 'fits.rademacher/star.last_over_se', which needs c1.n_blocks >= 3"),
    "offblock_records_beyond_run": ({"c3": {"offblock_rate": {"records": 200}}},
                                    "config key 'c3.offblock_rate.records': 200 records, but a run records only 6"),
    "ntasks_one_seed": ({"c4": {"n_tasks": {"n_seed": 1}}}, "config key 'c4.n_tasks.n_seed'"),
    "bad_colour": ({"plot": {"c3_colors": {"isotropic_gauss": "tab:nosuch"}}}, "config key 'plot.c3_colors.isotropic_gauss'"),
    "bad_marker": ({"plot": {"c5_curves": {"gd": {"label": "gd", "color": "C1", "marker": "zz"}}}},
                   "config key 'plot.c5_curves.gd.marker': 'zz' is not a matplotlib marker"),
    "bad_mathtext": ({"description": r"smoke $\nosuchsymbol$"}, "config key 'description': invalid mathtext"),
    "window_too_small": ({"c5": {"convergence": {"window_frac": 0.01}}}, "config key 'c5.convergence.window_frac'"),
    "drop_too_large": ({"c5": {"convergence": {"max_rel_drop": 0.5}}}, "max_rel_drop / window_frac = 5 > 0.2"),
    "reference_tol_loose": ({"c5": {"convergence": {"reference_tol": 10.0}}},
                            "config key 'c5.convergence.reference_tol': 10 > 0.05"),
    "c4_tol_loose": ({"c4": {"tol": 1.0e-3}}, "config key 'c4.tol': 0.001 > 1e-06"),
    "confirm_seed_seen": ({"c5": {"confirm": {"replicates": [{"seed": 2026, "init_seed": 90, "eval_seed": 1},
                                                             {"seed": 5, "init_seed": 95, "eval_seed": 2}]}}},
                          "config key 'c5.confirm.replicates[0].seed': 2026 is already used"),
    "confirm_eval_seed_is_default": ({"c5": {"confirm": {"replicates": [{"seed": 7, "init_seed": 90, "eval_seed": 8},
                                                                        {"seed": 5, "init_seed": 95, "eval_seed": 31337}]}}},
                                     "config key 'c5.confirm.replicates[1].eval_seed': 31337"),
    "confirm_one_replicate_no_criteria": ({"c5": {"confirm": {"criteria": [], "replicates": [
        {"seed": 2028, "init_seed": 16, "eval_seed": 31340}]}}}, "config key 'c5.confirm.replicates': 1 replicate"),
    "c3_grow_rate_loose": ({"c3": {"offblock_rate": {"grow_rate": 0.01}}},
                           "config key 'c3.offblock_rate.grow_rate': 0.01 > 0.001"),
    "c3_floor_loose": ({"c3": {"offblock_rate": {"floor": 1.0e-3}}}, "config key 'c3.offblock_rate.floor': 0.001 > 1e-14"),
    "huge_c1": ({"c1": {"n_blocks": 10 ** 9}}, "config key 'c1': about "),
    "c2_blocks_of_no_setting": ({"c2": {"blocks_factor": {"isotropc": 2}}},
                                "config key 'c2.blocks_factor': 'isotropc' is not a c1 setting"),
    "huge_c2_one_setting": ({"c2": {"blocks_factor": {"nondiagonal": 10 ** 9}}}, "config key 'c2': about "),
    # C2e keeps every prompt draw's gaps at every recorded iterate: 10^7 draws at the smoke preset are TB
    # C2e draws its own seeds' tasks, so any count is legal; 10^6 seeds' records exceed the machine
    "huge_c2e_seeds": ({"c2": {"trajectory": {"n_seeds": 10 ** 6}}}, "config key 'c2': its largest job needs"),
    "huge_c2e_prompts": ({"c2": {"trajectory": {"n_prompts": 10 ** 7}}}, "config key 'c2': its largest job needs"),
    "huge_c5_L": ({"c5": {"L": [10, 20, 10 ** 8]}}, "config key 'c5': its largest job needs about"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_legal_looking_setting_that_cannot_work_is_refused_in_one_line(name):
    over, expect = CASES[name]
    msg = refused(over)
    assert expect in msg, msg


def test_schema_bounds_the_32_bit_counters():
    from jsonschema import ValidationError

    for over in ({"c5": {"steps": 2 ** 32}}, {"c5": {"eval": {"seed": 2 ** 32}}}, {"c5": {"batch": 2 ** 32}}):
        with pytest.raises((ValidationError, Exception), match="4294967295|maximum"):
            load(over)


def test_size_guard_prints_the_estimate_and_yields_to_allow_large():
    msg = refused({"c5": {"L": [10, 20, 10 ** 8]}}, preset="default")
    # at least one batch: 128 prompts x 1e8 tokens x 7 columns x 8 bytes = 717 GB (the issue: 2.8 TB announced)
    gb = float(msg.split("needs about ")[1].split(" GB")[0])
    assert 128 * 1e8 * 7 * 8 / 1e9 <= gb < 1e5, msg
    cfg, _ = load({"allow_large": True, "c5": {"L": [10, 20, 10 ** 8]}}, preset="default")
    assert cfg["allow_large"] is True
    msg = refused({"c1": {"n_blocks": 10 ** 9}}, preset="default")
    assert "years of CPU time" in msg, msg
    # an independent count of C1's work (the settings' probes and the exponent sweep's): blocks x tasks
    # x L_max x (4e-8 s per token drawn + 4e-9 s per token x query x probe), bench/bench_c1c2_prefix.py
    cfg, _ = load(preset="default")
    c1 = cfg["c1"]
    probes = sum(2 + len((st.get("probes") or {}).get("scaled_lambda", c1["probes"]["scaled_lambda"]))
                 for st in c1["settings"].values())
    jobs = len(c1["settings"]) + 1
    probes += len(c1["exponent"]["lambda"])
    tokens = c1["n_blocks"] * 2 * c1["n_pairs"] * 2 ** c1["log2_L_max"]
    want = tokens * (4e-8 * jobs + 4e-9 * c1["n_query"] * probes)
    assert config_cost.estimates(cfg)["c1"][0] == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="this machine has 1 GB"):
        config_cost.check(cfg, total_mb=1000.0)


def test_c1_c2_measure_runtime_is_a_sane_upper_bound():
    """The SLURM runtime of c1_measure / c2_measure (minutes) covers the whole claim's measure jobs
    (grouped into one allocation that runs them in sequence) with a margin and stays minutes, not
    hours: measured on the 2-core machine (bench/bench_c1c2_prefix.py, docs/performance.md), a C1
    block of all five jobs took at most 1.5 s (draws included) and a C2 block of its four 0.5 s,
    so C1's jobs need at most ~200 s at the default's 132 blocks, C2's ~64 s at 128; C1 at 132
    blocks (config/c1_confirm.yaml) passes the size guard, a months-long C1 does not."""
    cfg, _ = load(preset="default")
    for claim, per_block_s in (("c1", 1.5), ("c2", 0.5)):
        measured_s = cfg[claim]["n_blocks"] * per_block_s
        for setting in config_cost.measure_jobs(cfg, claim):
            minutes = config_cost.measure_runtime_min(cfg, claim, setting)
            assert measured_s / 60 < minutes - 2 and minutes <= 30, (claim, setting, minutes)
    assert set(config_cost.measure_jobs(cfg, "c1")) == set(cfg["c1"]["settings"]) | {"exponent"}
    with pytest.raises(ValueError, match="no measure job"):
        config_cost.measure_runtime_min(cfg, "c2", "exponent")
    confirm = yaml.safe_load((ROOT / "config" / "c1_confirm.yaml").read_text())
    cfg132, _ = load(confirm, preset="default")
    assert cfg132["c1"]["n_blocks"] == 132
    assert 2 * 132 * 1.5 / 60 < config_cost.measure_runtime_min(cfg132, "c1", "exponent") - 2 <= 30
    assert config_cost.estimates(cfg132)["c1"][0] < 3600
    msg = refused({"c1": {"n_blocks": 10 ** 6}}, preset="default")
    assert "days of CPU time" in msg or "years of CPU time" in msg, msg


def test_c2_confirm_is_declared_on_seeds_no_other_run_uses():
    """config/c2_confirm.yaml (issue 31) passes the guards at 1024 blocks and 40 C2e task seeds, and the
    seeds of it, the default and config/other_seeds.yaml are pairwise disjoint: C2's task blocks (seed + 7919 b, b below
    the largest setting's blocks),
    C2e's task seeds (seed0 + c3.seed_stride i, i < n_seeds; the default's seed0 is c3.seed0) and prompt
    draws (prompt_seed + r, r >= 1). Its C2e jobs took 21.6 s on the 2-core machine (40 seeds x 2 draws):
    the SLURM runtime covers them."""
    from softlin.concentration import BLOCK_SEED_STRIDE

    def seeds(cfg):
        c2, c3 = cfg["c2"], cfg["c3"]
        t = c2["trajectory"]
        seed0 = c3["seed0"] if t.get("seed0") is None else t["seed0"]
        n_blocks = max(config_cost.blocks_of(c2, s) for s in cfg["c1"]["settings"])   # the largest setting's
        return ({c2["seed"] + BLOCK_SEED_STRIDE * b for b in range(n_blocks)},
                {seed0 + c3["seed_stride"] * i for i in range(t["n_seeds"])},
                {t["prompt_seed"] + r for r in range(1, t["n_prompts"])})
    runs = {"config": load(preset="default")[0]}
    for name in ("other_seeds", "c2_confirm"):
        runs[name] = load(yaml.safe_load((ROOT / "config" / f"{name}.yaml").read_text()), preset="default")[0]
    confirm = runs["c2_confirm"]
    assert confirm["c2"]["n_blocks"] == 1024 and confirm["c2"]["trajectory"]["n_seeds"] == 40
    assert config_cost.estimates(confirm)["c2"][0] < 3600
    assert 21.6 / 60 < config_cost.trajectory_runtime_min(confirm) - 2
    for one, two in (("c2_confirm", "config"), ("c2_confirm", "other_seeds"), ("other_seeds", "config")):
        for a, b in zip(seeds(runs[one]), seeds(runs[two]), strict=True):
            assert not a & b, (one, two, sorted(a & b)[:3])


def test_what_the_registry_says_is_missing_is_missing_in_the_metrics():
    """The options REQUIRES names do remove the metric: the functions that compute them."""
    rng = np.random.default_rng(0)
    Ls = np.array([16, 32, 64])
    def arrays(n_L):  # per seed (2 seeds): a curve over L, or one number (theta_inf_norm, R_init)
        return [rng.uniform(0.5, 1.0, (2,) if k in ("theta_inf_norm", "R_init") else (2, n_L))
                for k in c3_claim.AVERAGED]
    assert "slope_last4_D_inf_max" not in c3_claim._fit_stat(np.log10(Ls), c3_claim.AVERAGED, arrays(3))
    assert "slope_last4_D_inf_max" in c3_claim._fit_stat(np.log10([8, 16, 32, 64]), c3_claim.AVERAGED, arrays(4))
    assert "slope_last4" not in curve_summary(Ls, [3.0, 2.0, 1.0])
    assert "slope_last4" in curve_summary(np.array([8, 16, 32, 64]), [4.0, 3.0, 2.0, 1.0])
    rows = [{"admissible": False, "converged": True, "dist_final": 1e-9}]
    one = {"ode_dist_final": 0, "gd_dist_final": 0, "ode_conservation_max": 0, "gd_conservation_max": 0,
           "ode_vs_reduced_max": 0, "ode_offblock_max": 0, "gd_offblock_max": 0, "setting": "a",
           "ntasks_slope": -0.5, "ntasks_slope_se": 0.1, "ntasks_n_seed": 10}
    out = c4_summary.aggregate({"a": one}, rows)  # before: max() of an empty sequence
    assert out["alpha_admissible_n"] == 0 and np.isnan(out["alpha_admissible_dist_max"])
    cfg, _ = load()
    cfg3 = _merge(cfg, {"c3": {"L": [16, 32, 64]}})
    assert "4 prompt lengths" in metric_names.missing_reason("c3", cfg3, "fits.isotropic_rademacher.slope_last4_D_inf_max")
    assert metric_names.missing_reason("c3", cfg, "fits.isotropic_rademacher.slope_last4_D_inf_max") is None
    from softlin.claims import curves
    blocks = rng.uniform(0.5, 1.0, (2, 4))   # 2 task blocks of a curve over 4 lengths: no last_over_se
    assert "last_over_se" not in curves.jackknife_shape(np.array([8, 16, 32, 64]), blocks, curves.rms)[0]
    assert "last_over_se" in curves.jackknife_shape(np.array([8, 16, 32, 64]), rng.uniform(0.5, 1, (3, 4)), curves.rms)[0]
    assert "n_blocks >= 3" in metric_names.missing_reason("c1", _merge(cfg, {"c1": {"n_blocks": 2}}),
                                                          "fits.rademacher/star.last_over_se")


def test_c1_threshold_sides_need_a_probe_on_each_side():
    """C1b reads the probes below lambda_max(M) = 1/2, C1d those above: a config with none on one
    side is refused (before: a KeyError in the verdict); the Eq. (9) probe's lambda the registry
    assumes, 1 / (2 d^3/2), is the one the probe design computes."""
    from softlin.concentration import probe_design

    for sigma in (np.eye(2), np.diag([2.0, 1.0, 0.5]), np.diag([5.0, 1.0, 0.1, 0.1, 1.0])):
        lam = probe_design(sigma, star=False)[0]["lambda_max"]
        assert lam == pytest.approx(0.5 * len(sigma) ** -1.5, rel=1e-9)
    msg = refused({"c1": {"probes": {"star": False, "scaled_lambda": [0.2]},
                          "settings": {"rademacher": {"probes": {"star": True}}}}})
    assert "C1d measures 'summary.gauss_above.dev', which needs a Gaussian c1 probe with lambda_max(M) >= 1/2" in msg
    load({"c1": {"probes": {"eq9": False, "scaled_lambda": [1.0]}}})  # theta* of diag(2, 1, 0.5): 0.436 < 1/2
    c1_ok = {"probes": {"star": False, "scaled_lambda": [0.2]}, "settings": {"rademacher": {"probes": {"star": True}}},
             "criteria": [], "consistency_checks": []}
    msg = refused({"c1": c1_ok})  # C2's summary reads the same probes
    assert msg.startswith("config key 'c2.") and "summary.U.above" in msg, msg
    # a setting with no probe at all is legal (it runs, measuring nothing: issue 32's reproduction)
    load({"c1": {"settings": {"isotropic": {"probes": {"eq9": False, "star": False, "scaled_lambda": []}}}}})


def test_the_plateau_bound_is_where_the_test_loses_its_power():
    """A loss still falling by 30% per training length at the end: the default window (10% of 30
    log points) flags it; window_frac 0.01 (the issue's knob) does not, so the check refuses it."""
    n = 30
    t = np.arange(1, n + 1) / n
    loss = 1.0 - 0.3 * t        # relative end rate 0.3 / 0.7 ~ 0.43 > MAX_END_RATE
    drop_default = c5_convergence.plateau_drop(loss, 0.1)
    drop_small = c5_convergence.plateau_drop(loss, 0.01)
    assert drop_default > 0.02 > drop_small   # flagged, not flagged
    assert 0.02 / 0.1 <= config_check.MAX_END_RATE * (1 + 1e-9)
    refused({"c5": {"convergence": {"window_frac": 0.01}}})


def test_the_guards_allow_the_predeclared_values_and_tighter():
    """The bounds are the predeclared values (config.yaml), so every tighter setting passes: the
    guards refuse only a loosened test."""
    assert BASE["c5"]["convergence"]["reference_tol"] == config_check.MAX_REFERENCE_TOL
    assert BASE["c4"]["tol"] == config_check.MAX_C4_TOL
    load({"c5": {"convergence": {"reference_tol": 0.0, "window_frac": 1.0, "max_rel_drop": 0.001}},
          "c4": {"tol": 1.0e-9}})
    load({"c5": {"confirm": {"criteria": [], "replicates": []}}})  # confirmation off: c5_confirm refuses at planning


def test_c3d_growth_bounds_are_where_a_burst_stops_counting():
    """Off-block mass rising threefold from rounding level (1e-14) over 4 records, then flat (records
    every 20 steps, 101 records): at the predeclared window (6 records) and floor it grows (peak
    rate ln 3 / 80 = 0.014 > 1e-3); a floor above the mass, or a window of 100 records that averages
    the rise with the flat records, reads no growth, and the check refuses both (the window at the
    default preset, whose runs hold 126 records)."""
    steps = np.arange(0, 2020, 20)
    mass = np.full(steps.size, 1e-14)
    mass[47:51] = 1e-14 * 3 ** (np.arange(1, 5) / 4)
    mass[51:] = 3e-14
    peak = c3_claim.peak_growth_rate(steps, mass, 6, 1e-14)
    assert peak > 1e-3 and np.isclose(peak, np.log(3) / 80, rtol=0.25)
    assert c3_claim.peak_growth_rate(steps, mass, 6, 1e-13) == 0.0
    assert c3_claim.peak_growth_rate(steps, mass, 100, 1e-14) < 1e-3
    refused({"c3": {"offblock_rate": {"floor": 1e-13}}})
    refused({"c3": {"offblock_rate": {"records": 100}}}, preset="default")
    load({"c3": {"offblock_rate": {"records": 2, "grow_rate": 1e-5, "floor": 1e-16}}})   # tighter: free


def _within_reference(risk, reference, tol):
    return c5_convergence.run_convergence(np.ones(40), np.arange(1, 41), {
        "escape_frac": 0.5, "window_frac": 0.1, "max_rel_drop": 0.02, "reference_tol": tol},
        risk=risk, reference=reference)["within_reference"]


def test_reference_tol_bound_is_where_a_run_off_by_c5a_gap_counts_converged():
    """A run whose risk exceeds its reference by 6% (more than C5a's 5% gap): the predeclared
    tolerance calls it not within reference, 0.1 calls it within, and the check refuses 0.1."""
    assert _within_reference(1.06, 1.0, 0.05) == "fails"
    assert _within_reference(1.06, 1.0, 0.10) == "holds"
    c5a = next(c for c in BASE["c5"]["criteria"] if c["id"] == "C5a")
    assert "5%" in c5a["statement"]
    refused({"c5": {"convergence": {"reference_tol": 0.1}}})


def _rep(seed, eval_seed):
    return {"seed": seed, "init_seed": seed + 100, "eval_seed": eval_seed}


KNOBS = [  # (key path, legal-looking values): the draws of the property test
    (("c3", "L"), [[8, 16, 32, 64], [16, 32, 64], [8, 16, 32, 64, 128]]),
    (("c3", "offblock_seed_order"), [True, False]),
    (("c3", "offblock_rate", "records"), [2, 6, 7, 50]),
    (("c3", "settings", "extra"), [{"sigma": [1.0, 1.0, 1.0], "n_seed": 2}, {"sigma": [3.0, 1.0, 0.2], "n_seed": 2},
                                   {"sigma": [3.0, 1.0, 0.2], "n_seed": 2, "label": "anisotropic"}]),
    (("c1", "probes", "star"), [True, False]),
    (("c1", "probes", "eq9"), [True, False]),
    (("c1", "probes", "scaled_lambda"), [[0.35, 1.0], [], [0.5, 0.5]]),
    (("c4", "alpha_sweep", "fractions"), [[0.5, 3.0], [3.0], [0.5], [0.2, 0.2]]),
    (("c4", "n_tasks", "n_seed"), [1, 2, 3]),
    (("c5", "convergence", "window_frac"), [0.01, 0.1, 0.5]),
    (("c5", "convergence", "max_rel_drop"), [0.02, 0.01, 0.2]),
    (("c5", "replicates"), [[{"seed": 1, "init_seed": 0, "eval_seed": 2}],
                            [{"seed": 1, "init_seed": 0, "eval_seed": 2}, {"seed": 3, "init_seed": 5, "eval_seed": 4}]]),
    (("c5", "L"), [[10, 20, 50], [10, 20, 10 ** 8]]),
    (("plot", "probe_cmap"), ["viridis", "plasma", "nosuch"]),
    (("c5", "convergence", "reference_tol"), [0.0, 0.05, 0.5]),
    (("c4", "tol"), [1.0e-8, 1.0e-6, 1.0e-3]),
    (("c3", "offblock_rate", "grow_rate"), [1.0e-4, 1.0e-3, 1.0e-2]),
    (("c5", "confirm", "replicates"), [[_rep(41, 42), _rep(43, 44)], [_rep(41, 42), _rep(2025, 44)],
                                       [_rep(41, 31337), _rep(43, 44)]]),
]


def _set(cfg, path, value):
    node = cfg
    for k in path[:-1]:
        node = node.setdefault(k, {})
    node[path[-1]] = copy.deepcopy(value)


def _works(cfg):
    """An independent account of whether the drawn config can run: each condition the issue names."""
    c1, c3, c4, c5 = cfg["c1"], cfg["c3"], cfg["c4"], cfg["c5"]
    fits = [(st.get("label") or ("isotropic" if st["sigma"] == [1.0, 1.0, 1.0] else n), st.get("token_kind", "gauss"))
            for n, st in c3["settings"].items()]
    conv = c5["convergence"]
    explore = c5["replicates"] + [{"seed": c5["seed"], "eval_seed": c5["eval"]["seed"]}]
    confirm = c5["confirm"]["replicates"]
    return all([
        len(c3["L"]) >= 4,                                       # C3e-ii's slope over the last four L
        max(c3["L"]) <= c3["eval"]["L"],                         # the evaluation prompts hold every L
        c3["offblock_seed_order"],                               # C3d's runs
        c3["offblock_rate"]["records"] <= c3["steps"] // c3["record_every"] + 1,
        len(set(fits)) == len(fits),                             # no two settings pooled
        c1["probes"]["star"],                                    # C1f, C2f at rademacher/star
        len(set(c1["probes"]["scaled_lambda"])) == len(c1["probes"]["scaled_lambda"]),
        any(f < 1 for f in c4["alpha_sweep"]["fractions"]),      # C4c's admissible alphas
        len(set(c4["alpha_sweep"]["fractions"])) == len(c4["alpha_sweep"]["fractions"]),
        c4["n_tasks"]["n_seed"] >= 2,
        len(c5["replicates"]) >= 2,
        conv["window_frac"] * c5["steps"] // c5["log_every"] >= 3 and conv["max_rel_drop"] / conv["window_frac"] <= 0.2 + 1e-12,
        max(c5["L"]) < 10 ** 6,
        cfg["plot"]["probe_cmap"] in ("viridis", "plasma"),
        conv["reference_tol"] <= 0.05,                           # within reference: no looser than C5a's gap
        c4["tol"] <= 1.0e-6,                                     # C4's "reaches theta*"
        c3["offblock_rate"]["grow_rate"] <= 1.0e-3,              # C3d's "grows"
        len(confirm) >= 2,                                       # c5_confirm's jackknife
        not any(r[k] == e[k] for r in confirm for e in explore for k in ("seed", "eval_seed")),  # fresh seeds
    ])


def test_property_drawn_configs_are_refused_at_parse_time_or_meet_every_condition():
    """200 configs drawn from the knobs above at the smoke preset: each is refused in one line
    naming a key, or meets every condition under which the claims complete (:func:`_works`; the
    smoke build and test_workflow run the targets of the configs that pass)."""
    import jsonschema

    schema = yaml.safe_load(open(SCHEMA))
    validator = jsonschema.validators.validator_for(schema)(schema)  # built once (snakemake's: per call)
    rnd = random.Random(32)
    base, _ = load()
    n_refused = n_ok = 0
    for _ in range(200):
        over = {}
        for path, values in rnd.sample(KNOBS, rnd.randint(1, 4)):
            _set(over, path, rnd.choice(values))
        cfg = _merge(base, over)
        validator.validate(cfg)  # legal by the schema (base has its defaults filled in)
        try:
            config_check.check(cfg)
        except ValueError as err:
            msg = str(err)
            assert msg.startswith("config key '") and "\n" not in msg, msg
            assert not _works(cfg), (over, msg)
            n_refused += 1
            continue
        assert _works(cfg), over
        n_ok += 1
    assert n_refused > 50 and n_ok > 20, (n_refused, n_ok)


def test_drawn_configs_that_pass_plan_and_one_completes(tmp_path):
    """The end-to-end half of the property test: 5 drawn configs that pass the check are planned
    by ``snakemake -n`` (one Snakemake process) and 5 that it refuses stop the dry run with their
    line; one that passes is run to its verdict (C1 at the smoke preset without the Eq. (9) probe,
    the cheapest claim whose metrics depend on a drawn knob; the figure left out)."""
    import json
    import os
    import subprocess
    import sys

    from helpers import SMOKE, copy_repo, smk

    rnd = random.Random(3232)
    base, _ = load()
    passing, failing = [], []
    while len(passing) < 5 or len(failing) < 5:
        over = {}
        for path, values in rnd.sample(KNOBS, rnd.randint(1, 3)):
            _set(over, path, rnd.choice(values))
        try:
            config_check.check(_merge(base, over))
            (passing if len(passing) < 5 else []).append(over)
        except ValueError as err:
            (failing if len(failing) < 5 else []).append((over, str(err)))
    repo = copy_repo(tmp_path / "repo")
    plan = []
    for i, over in enumerate(passing + [o for o, _ in failing]):
        (repo / f"draw{i}.yaml").write_text(yaml.safe_dump(over))
        plan.append([str(repo), ["--cores", "1", "-n", *SMOKE, "--configfile", f"draw{i}.yaml"], str(tmp_path / f"{i}.out")])
    (repo / "noconfirm.yaml").write_text(yaml.safe_dump({"c5": {"confirm": {"replicates": [], "criteria": []}}}))
    plan.append([str(repo), ["--cores", "1", "-n", "c5_confirm", *SMOKE, "--configfile", "noconfirm.yaml"],
                 str(tmp_path / "noconfirm.out")])
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "smk_batch.py")], input=json.dumps(plan),
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(repo)))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    codes = json.loads(proc.stdout.strip().splitlines()[-1])
    outs = [(tmp_path / f"{i}.out").read_text() for i in range(10)]
    for i in range(5):
        assert codes[i] == 0 and "This was a dry-run" in outs[i], (passing[i], outs[i][-1500:])
        assert codes[5 + i] != 0 and failing[i][1] in outs[5 + i], (failing[i], outs[5 + i][-1500:])
    out = (tmp_path / "noconfirm.out").read_text()  # planned, not run: the input function stops the dry run
    assert codes[10] != 0 and "config key 'c5.confirm.replicates': 0 replicate; the target c5_confirm needs" in out, out[-1500:]
    assert not (repo / "results").exists()
    over = {"c1": {"probes": {"eq9": False}}}
    config_check.check(_merge(base, over))
    (repo / "noeq9.yaml").write_text(yaml.safe_dump(over))
    smk(repo, "results/c1/verdict.json", *SMOKE, "--configfile", "noeq9.yaml")  # the verdict, not the figure
    fits = json.loads((repo / "results" / "c1" / "c1_concentration.json").read_text())["fits"]
    assert fits and not any(k.endswith("/eq9") for k in fits) and "rademacher/star" in fits
    assert "C1f" in (repo / "results" / "c1" / "verdict.json").read_text()


# --------------------------------------------------------------------------- strict config files (softlin/config_yaml.py)
def _cfgfile(tmp_path, text, name="x.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, expect", [
    ("c5:\n  steps: 100\n  steps: 200\n", "line 3: key 'c5.steps' appears twice (first at line 2"),
    ("a: 1\nb:\n  c: 2\n  d: [1, {e: 1,\n        e: 2}]\n", "line 5: key 'b.d[1].e' appears twice (first at line 4"),
    ("c5:\n  steps: [1, 2\n", "line 3: not valid YAML"),
    ("c5:\n\tsteps: 10\n", "line 2: not valid YAML"),
    ('{"c5": {"steps": 1,\n "steps": 2}}', "line 1: key 'steps' appears twice in the JSON object"),
    ('{"a": 1,\n "c5": {"steps": 1, "steps": 2}}', "line 2: key 'steps' appears twice"),
    ("- a\n- b\n", "the top level must be a mapping of config keys, got list"),
    ("", "got an empty file"),
])
def test_a_bad_config_file_is_refused_in_one_line_naming_file_and_line(tmp_path, text, expect):
    from softlin import config_yaml

    path = _cfgfile(tmp_path, text)
    with pytest.raises(config_yaml.ConfigFileError) as err:
        config_yaml.read(path, mapping=True)
    msg = str(err.value)
    assert msg.startswith(f"config file '{path}'") and "\n" not in msg and expect in msg, msg


def test_the_strict_reader_reads_what_libyaml_and_json_read(tmp_path):
    """Every YAML file of the repository, a merge key overridden, equal-looking keys of two types,
    and a JSON file: the data PyYAML's loader (or json) gives."""
    from softlin import config_yaml

    files = [*ROOT.glob("config/**/*.yaml"), *ROOT.glob("workflow/**/*.yaml"), *ROOT.glob("docs/**/*.yaml")]
    assert len(files) > 4
    for path in files:
        assert config_yaml.read(path) == yaml.load(path.read_text(), Loader=yaml.SafeLoader), path
    merge = "base: &b {x: 1, y: 2}\nover:\n  <<: *b\n  x: 3\n1: a\n'1': b\n"
    assert config_yaml.read(_cfgfile(tmp_path, merge)) == yaml.safe_load(merge)
    text = '{"c5": {"steps": 1000, "L": [10, 20]}, "preset": "smoke"}'
    assert config_yaml.read(_cfgfile(tmp_path, text, "x.json"), mapping=True) == json.loads(text)


def test_the_configfile_precheck_finds_the_files_of_a_command_line(tmp_path):
    """``python -m softlin.config_yaml --args ARGS`` (the Makefile's first step): exit 1 with the line of
    the first bad --configfile, 0 when every one reads (Snakemake itself prints no name or line)."""
    from softlin import config_yaml

    good, bad = _cfgfile(tmp_path, "c5: {steps: 10}\n", "good.yaml"), _cfgfile(tmp_path, "a: 1\na: 2\n", "bad.yaml")
    argv = ["-n", "--configfile", str(good), str(bad), "--config", "preset=smoke"]
    assert config_yaml.configfiles(argv) == [str(good), str(bad)]
    assert config_yaml.configfiles(["--configfiles=x.yaml", "c5", "--configfile", "y.yaml"]) == ["x.yaml", "y.yaml"]
    assert config_yaml.main(["--configfile", str(good)]) == 0
    assert config_yaml.main(argv) == 1 and config_yaml.main(["--args", *argv]) == 1


def test_the_config_file_checker_names_file_line_and_key_from_the_command_line(tmp_path):
    """``python -m softlin.config_yaml FILE...`` (the one command docs/faults.md gives for what plain
    ``snakemake --configfile`` reports without file or line): one line per bad file naming the
    file, the line and the reason (the key's path for a duplicate), exit 1; bare files were
    ignored (exit 0) before ``--args`` took the Makefile's form."""
    files = {"syntax.yaml": "c3:\n  lr: 0.02\n   steps: 5\n", "dup.yaml": "c3: {lr: 0.02}\nc5:\n  steps: 1\n  steps: 2\n",
             "good.yaml": "c5: {steps: 10}\n", "tab.yaml": "c5:\n\tsteps: 10\n"}
    paths = [str(_cfgfile(tmp_path, text, name)) for name, text in files.items()]

    def check(*args):
        return subprocess.run([sys.executable, "-m", "softlin.config_yaml", *args], capture_output=True, text=True,
                              cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)))

    out = check(*paths)
    assert out.returncode == 1 and out.stdout == "", out
    lines = out.stderr.splitlines()
    assert len(lines) == 3, out.stderr  # the good file says nothing
    for line, path, where, reason in zip(lines, [paths[0], paths[1], paths[3]], (3, 4, 2),
                                         ("not valid YAML", "key 'c5.steps' appears twice (first at line 3", "a tab")):
        assert line.startswith(f"config file '{path}', line {where}: ") and reason in line, line
    assert check(paths[2]).returncode == 0
    assert check("--args", "c5", "-n").returncode == 0                             # make run ARGS="c5 -n"
    made = check("--args", "-n", "--configfile", paths[2], paths[1])                 # make run ARGS="--configfile ..."
    assert made.returncode == 1 and made.stderr.splitlines() == out.stderr.splitlines()[1:2]
    assert check().returncode == 2 and check("-n", "c5").returncode == 2             # nothing to check: usage


def test_one_seed_per_c3_setting_completes_undecided():
    """``c3.settings.*.n_seed: 1`` (the schema's default) is legal: every error across seeds is NaN and
    each test undecided; the verdict page printed a count's NaN interval with ``int(nan)`` and the
    verdict job crashed after the training (found by running it at the smoke preset)."""
    from softlin import verdict_report

    assert verdict_report._num(float("nan")) == "nan"
    assert verdict_report._num(float("inf")) == "inf" and verdict_report._num(3.0) == "3"
    r = {"measured": "fits.isotropic_gauss.n_sig_increases_D_inf_max", "outcome": "undecided",
         "decided_by": {"label": None, "value": 1.0, "lo": float("nan"), "hi": float("nan"), "se": None, "reason": None}}
    assert "= 1 in [nan, nan]" in verdict_report.fmt_test(r)
