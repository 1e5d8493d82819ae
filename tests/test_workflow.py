"""The Snakemake workflow: config validation before any job, and reruns of exactly what a change touches.

These tests run ``snakemake`` on a temporary copy of the repository (no results/ of its own).
The rerun test builds the whole workflow at the smoke preset once (about a minute), then checks
dry runs: nothing changed -> nothing planned; a C3 knob changed -> only C3 jobs (and the C2 job
that reads C3's trajectories); a plotting module touched -> only figure jobs.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
COPY = ["Snakefile", "config", "workflow", "softlin", "symbolic"]


def copy_repo(dst: Path) -> Path:
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dst / name)
    return dst


def smk(cwd, *args, check=True):
    env = dict(os.environ, PYTHONPATH=str(cwd))
    proc = subprocess.run([*SNAKEMAKE, "--cores", "2", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def planned(proc) -> dict:
    """Job counts of a dry run's 'Job stats' table (empty if nothing to do)."""
    text = proc.stdout + proc.stderr
    if "Nothing to be done" in text:
        return {}
    block = text.split("Job stats:")[1].split("total")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", block, re.M)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("repo"))
    smk(repo, "--config", "preset=smoke")
    return repo


def test_nothing_changed_nothing_planned(built):
    assert planned(smk(built, "-n", "--config", "preset=smoke")) == {}


# C2's "C2e" measures gradient gaps along C3's own linear(inf) trajectories (results/c3/...), so
# a C3 protocol change legitimately reruns that C2 job and C2's summaries; nothing else.
C3_CONSUMERS = {"c2_trajectory", "c2_metrics", "c2_figure", "c2_verdict", "c2"}


def test_c3_knob_reruns_only_c3_and_its_consumers(built):
    (built / "knob.yaml").write_text("c3: {lr: 0.02}\n")
    jobs = planned(smk(built, "-n", "--config", "preset=smoke", "--configfile", "knob.yaml"))
    assert jobs, "a changed C3 learning rate must rerun the C3 trainings"
    assert "c3_train" in jobs and "c3_sample" not in jobs, jobs
    others = {name for name in jobs if not name.startswith("c3") and name != "all"}
    assert others <= C3_CONSUMERS, others
    assert "c2_measure" not in jobs  # C2's own probe measurements do not depend on C3


def test_plotting_edit_reruns_only_figures(built):
    plots = built / "softlin" / "plots.py"
    plots.write_text(plots.read_text() + "\n# edited\n")
    jobs = planned(smk(built, "-n", "--config", "preset=smoke"))
    assert jobs and all(name.endswith("_figure") or name in ("c1", "c2", "c3", "c4", "c5", "all")
                        for name in jobs), jobs


@pytest.mark.parametrize("override, key", [
    ("c3: {steps: -5}", "steps"),
    ("c3: {steps: ten}", "steps"),
    ("c3: {no_such_knob: 1}", "no_such_knob"),
    ("c3: {settings: {isotropic: {sigma: [[1, 2, 0], [2, 1, 0], [0, 0, 1]]}}}", "c3.settings.isotropic.sigma"),
    ("c3: {settings: {anisotropic: {sigma: [2.0, 0.0, 0.5]}}}", "['anisotropic']['sigma']"),  # singular diagonal
    ("c3: {record_every: 7}", "c3.record_every"),
    ("preset: nonexistent", "preset"),
])
def test_bad_config_rejected_before_any_job(tmp_path, override, key):
    repo = copy_repo(tmp_path)
    (repo / "bad.yaml").write_text(override + "\n")
    proc = smk(repo, "-n", "--configfile", "bad.yaml", check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert key in text, text[-2000:]
    assert not (repo / "results").exists()


def test_paper_preset_plans_38_trainings_and_groups_on_request(tmp_path):
    """SPEC/issue: `snakemake c5 --config preset=paper` plans one training job per (model, L): 38;
    c5.L_per_job = 5 (typed from --config) groups them into 2 x ceil(19 / 5) = 8 jobs."""
    repo = copy_repo(tmp_path)
    assert planned(smk(repo, "c5", "-n", "--config", "preset=paper"))["c5_train"] == 38
    jobs = planned(smk(repo, "c5", "-n", "--config", "preset=paper", "c5={L_per_job: 5, gpu: 1}"))
    assert jobs["c5_train"] == 8


def test_c5_test_set_change_reruns_no_training(built):
    """A larger C5 test set (typed from --config) reruns the evaluation and what reads it, no training."""
    before = planned(smk(built, "-n", "--config", "preset=smoke"))  # other tests may have left work
    jobs = planned(smk(built, "-n", "--config", "preset=smoke", "c5={eval: {n_test: 2048}}"))
    assert "c5_metrics" in jobs and "c5_train" not in jobs, jobs
    assert set(jobs) - set(before) <= {"c5_metrics", "c5_figure", "c5_verdict", "c5", "all"}, jobs
