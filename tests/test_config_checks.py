"""Fault injection, bad input (issue 25): a bad config stops the dry run with one line; every
criterion names a metric a claim computes; a NaN makes C5's counts NaN, never a clean count.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from softlin.claims import c5_eval, c5_protocol, c5_summary, metric_names

from helpers import ROOT, copy_repo

BAD = {  # name: (--configfile text or None, --config values, what the one-line message names)
    "noise_var_0": (None, ["c5={noise_var: 0}"], "config key 'c5.noise_var'"),
    "lr_nan_cli": (None, ["c5={optimizer: {lr: nan}}"], "config key 'c5.optimizer.lr': nan is not a finite number"),
    "lr_inf_cli": (None, ["c3={lr: inf}"], "config key 'c3.lr': inf is not a finite number"),
    "nan_yaml": ("c4: {tol: .nan}\n", [], "config key 'c4.tol': nan is not a finite number"),
    "inf_yaml_list": ("c1: {probes: {scaled_lambda: [0.5, .inf]}}\n", [],
                      "config key 'c1.probes.scaled_lambda[1]': inf is not a finite number"),
    "preset_path": (None, ["preset=../presets/smoke"], "config key 'preset': unknown preset '../presets/smoke'"),
    "unknown_top_key": (None, ["c9=1"], "('c9' was unexpected); allowed keys: "),
    "bad_enum": (None, ["c5={optimizer: {name: lbfgs}}"],
                 "config key 'c5.optimizer.name': 'lbfgs' is not allowed; allowed: sgd, adam"),
    "unknown_measured": (
        "c5:\n  criteria:\n    - id: C5x\n      statement: misspelt\n      all:\n"
        "        - {measured: gap_rel_at_Lmaxx, op: '<', value: 0.1}\n", [],
        "config key 'c5.criteria': C5x measures 'gap_rel_at_Lmaxx', which no c5 metric defines"),
    "unknown_measured_setting": (
        "c3:\n  consistency_checks:\n    - id: C3x\n      statement: a setting that does not exist\n"
        "      reason: test\n      all:\n        - {measured: fits.nosuch_gauss.slope_D_inf_max, op: '<', value: 0}\n",
        [], "C3x measures 'fits.nosuch_gauss.slope_D_inf_max'"),
    # issue 32: each passed `snakemake -n` and failed after the training or measurement it needs
    "c3_shared_label": (None, ["preset=smoke", "c3={settings: {aniso2: {sigma: [3.0, 1.0, 0.2], n_seed: 2, "
                               "label: anisotropic}}}"],
                        "config key 'c3.settings.aniso2.label': settings 'anisotropic' and 'aniso2' share"),
    "c3_no_seed_order": (None, ["preset=smoke", "c3={offblock_seed_order: false}"],
                         "C3d measures 'offblock.seed_order.grow_frac', which needs c3.offblock_seed_order: true"),
    "c3_three_L": (None, ["preset=smoke", "c3={L: [16, 32, 64]}"],
                   "which needs at least 4 prompt lengths in c3.L"),
    "c1_no_star": (None, ["preset=smoke", "c1={probes: {star: false}}"],
                   "C1f measures 'fits.rademacher/star.slope_last4', which needs the probe 'star'"),
    "c4_no_admissible": (None, ["preset=smoke", "c4={alpha_sweep: {fractions: [3.0]}}"],
                         "needs a c4.alpha_sweep.fractions entry < 1"),
    "c1_huge": (None, ["c1={n_blocks: 1000000000}"], "config key 'c1': about "),
    "c5_huge_L": (None, ["c5={L: [10, 20, 100000000]}"], "config key 'c5': its largest job needs about"),
    "c5_window": (None, ["c5={convergence: {window_frac: 0.01}}"], "config key 'c5.convergence.window_frac'"),
    "setting_path": (None, ["c4={settings: {../../x: {sigma: [1.0, 1.0]}}}"], "setting name '../../x' is not allowed"),
    "bad_colour": (None, ["plot={probe_cmap: nosuchmap}"], "config key 'plot.probe_cmap': 'nosuchmap'"),
    # issue 32, round two: a key twice in a --configfile (YAML kept the last); loosened guards
    "duplicate_key": ("c5:\n  steps: 100\n  log_every: 10\n  steps: 200\n", [],
                      "duplicate_key.yaml', line 4: key 'c5.steps' appears twice (first at line 2"),
    "reference_tol": (None, ["c5={convergence: {reference_tol: 0.5}}"], "config key 'c5.convergence.reference_tol': 0.5 > 0.05"),
    "c4_tol": (None, ["c4={tol: 0.001}"], "config key 'c4.tol': 0.001 > 1e-06"),
    "confirm_not_fresh": (None, ["c5={confirm: {replicates: [{seed: 2025, init_seed: 40, eval_seed: 1}, "
                                 "{seed: 5, init_seed: 50, eval_seed: 2}]}}"],
                          "config key 'c5.confirm.replicates[0].seed': 2025 is already used"),
}


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory):
    """Every bad config's dry run, in one Snakemake process (tests/smk_batch.py)."""
    base = tmp_path_factory.mktemp("faults_cfg")
    repo = copy_repo(base / "repo")
    plan = []
    for name, (text, values, _) in BAD.items():
        args = ["--cores", "1", "-n"]
        if text is not None:
            (repo / f"{name}.yaml").write_text(text)
            args += ["--configfile", f"{name}.yaml"]
        if values:
            args += ["--config", *values]
        plan.append([str(repo), args, str(base / f"{name}.out")])
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "smk_batch.py")], input=json.dumps(plan),
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(repo)))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    codes = json.loads(proc.stdout.strip().splitlines()[-1])
    return repo, {name: (rc, (base / f"{name}.out").read_text()) for name, rc in zip(BAD, codes)}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_config_stops_the_dry_run_with_one_line(dry_runs, name):
    """Before: NaN / inf and noise_var 0 passed validation (C5d PASS on NaN), a misspelt measured
    failed in the verdict job after all training, ../presets/smoke was a preset, and a schema
    error printed the schema and the whole config (~2,600 lines).  Now: one line naming the key,
    before any job (dry run included)."""
    repo, runs = dry_runs
    rc, out = runs[name]
    assert rc != 0
    assert BAD[name][2] in out, out[-1500:]
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) <= 8, out   # the message, the file/line, two traceback lines, the profile note
    assert not (repo / "results").exists()


def _deep_merge(base, over):
    out = dict(base)
    for k, v in (over or {}).items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def test_every_criterion_of_every_preset_names_a_registered_metric():
    import yaml

    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    metric_names.check_config(base)
    for preset in sorted((ROOT / "config" / "presets").glob("*.yaml")):
        over = yaml.safe_load(preset.read_text())
        metric_names.check_config(_deep_merge(base, over))
    with pytest.raises(ValueError, match=r"C5a measures 'gap_rel_at_Lmax_typo'"):
        bad = {**base, "c5": {**base["c5"], "criteria": [
            {"id": "C5a", "statement": "s", "all": [{"measured": "gap_rel_at_Lmax_typo", "op": "<", "value": 1}]}]}}
        metric_names.check_config(bad)


def _c5_rows(nan_at=None):
    """Synthetic C5 metric rows (3 lengths), 8 blocks of test prompts (n_blocks, n_L, predictors)
    and loss logs; a NaN in one length's softmax risk (every block) if asked."""
    rng = np.random.default_rng(0)
    rows, losses = [], {}
    blocks = np.empty((8, 3, len(c5_eval.PREDICTORS)))
    col = {p: k for k, p in enumerate(c5_eval.PREDICTORS)}
    for i, L in enumerate((10, 20, 50)):
        base = {"softmax": 0.21, "linear": 0.2, "ridge": 0.19, "gd": 0.3, "limit_opt": 0.1,
                "softmax_at_inf": 0.2, "linear_at_inf": 0.2, "linear_ref": 0.2, "softmax_ref": 0.21}
        for p, v in base.items():
            blocks[:, i, col[p]] = v + 0.01 / (i + 1) * (p == "softmax") + 0.001 * rng.standard_normal(8)
        if nan_at == i:
            blocks[:, i, col["softmax"]] = np.nan
        r = {"L": L, **{f"R_{p}": float(blocks[:, i, col[p]].mean()) for p in base}}
        rows.append(r)
        for m in ("softmax", "linear"):
            losses[f"{m}_L{L}"] = np.linspace(1.0, 0.2, 40) ** 2 + 0.2
    return rows, losses, blocks


CONV = {"window_frac": 0.1, "max_rel_drop": 0.02, "escape_frac": 0.5, "reference_tol": 0.05}


def test_c5_counts_propagate_nan():
    """Before: a NaN gap vanished inside n_below_bayes_3se (NaN < x is False: counted 0, C5d PASS)."""
    cfg = {"noise_var": 0.1, "convergence": CONV}
    rows, losses, blocks = _c5_rows()
    ok = c5_summary.summarize(rows, losses, np.arange(1, 41) * 10, cfg, blocks=blocks)
    assert ok["n_below_bayes_3se"] == 0
    rows, _, blocks_nan = _c5_rows(nan_at=1)
    bad = c5_summary.summarize(rows, losses, np.arange(1, 41) * 10, cfg, blocks=blocks_nan)
    assert np.isnan(bad["n_below_bayes_3se"])
    losses["softmax_L20"] = losses["softmax_L20"] * np.nan
    bad = c5_summary.summarize(_c5_rows()[0], losses, np.arange(1, 41) * 10, cfg, blocks=blocks)
    conv = bad["convergence"]
    assert np.isnan(conv["n_unconverged"]) and np.isnan(conv["rel_drop_end_max"])
    assert conv["worst_run"] == "softmax_L20"
    # every metric summarize writes is in the registry (criteria may name it)
    paths = []

    def walk(node, pre):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{pre}.{k}" if pre else str(k))
        elif not isinstance(node, list):
            paths.append(pre)

    walk(ok, "")
    cfg5 = {"c5": {"models": ["softmax", "linear"], "L": [10, 20, 50]}}
    assert metric_names.unknown_paths("c5", cfg5, paths) == []


def test_c5_header_is_written_from_the_settings():
    """Before: the verdict header printed c5.deviation's fixed text ('lr 1e-1 with an 8000-step
    warm-up') whatever the run used (smoke: a 120-step warm-up)."""
    adam = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "momentum": 0.0}
    smoke = {"optimizer": {"name": "adam", "lr": 0.1, "schedule": "cosine", "warmup": 120, **adam},
             "restarts": 3, "steps": 600}
    text = c5_protocol.deviation(smoke)
    assert "adam lr 0.1" in text and "120-step linear warm-up" in text and "600 steps" in text
    assert "8000" not in text and "best of 3" in text
    paper = {"optimizer": {"name": "sgd", "lr": 0.001, "momentum": 0.0, "schedule": "constant", "warmup": 0},
             "restarts": 1, "steps": 300000}
    assert c5_protocol.deviation(paper) is None
    assert "lr 0.003" in c5_protocol.deviation({**paper, "optimizer": {**paper["optimizer"], "lr": 3e-3}})


def test_describe_is_the_one_text_of_the_optimisation():
    """c5_protocol.describe: the long text (verdict header, captions) and the short one (the figure
    title's first line), written out here for the default C5 protocol and the paper's; a missing
    optimiser key is an error, never a silent default (the schema holds the defaults)."""
    opt = {"name": "adam", "lr": 0.1, "momentum": 0.0, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
           "schedule": "cosine", "warmup": 8000}
    default = {"optimizer": opt, "restarts": 3, "steps": 40000}
    assert c5_protocol.describe(default) == ("adam lr 0.1 (beta1 0.9, beta2 0.999, eps 1e-08), cosine decay, "
                                             "8000-step linear warm-up, best of 3 initialisations (by training "
                                             "loss), 40000 steps")
    assert c5_protocol.describe(default, short=True) == "adam lr 0.1 cosine (8000-step warm-up), 40000 steps (best of 3 inits)"
    sgd = {"optimizer": {**opt, "name": "sgd", "lr": 1e-3, "momentum": 0.9, "schedule": "constant", "warmup": 0},
           "restarts": 1, "steps": 300000}
    assert c5_protocol.describe(sgd) == "sgd lr 0.001 momentum 0.9, constant rate, one initialisation, 300000 steps"
    assert c5_protocol.describe(sgd, short=True) == "sgd lr 0.001 momentum 0.9, 300000 steps"
    assert c5_protocol.describe(c5_protocol.PAPER) == "sgd lr 0.001, constant rate, one initialisation, 300000 steps"
    with pytest.raises(KeyError):
        c5_protocol.describe({**default, "optimizer": {k: v for k, v in opt.items() if k != "beta1"}})


