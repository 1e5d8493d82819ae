"""Failure behaviour of the workflow, each on a temporary copy of the repository (smoke preset).

* a training job killed half way leaves no output a rerun would trust, and the rerun recomputes
  only the unfinished jobs, with the same bits as an uninterrupted run (the session's smoke build,
  ``smoke_built`` in conftest.py, run on two cores where this one runs on one);
* a job that raises stops with its log path printed, and ``--keep-going`` lets the rest finish;
* a bad config stops a real (not dry) run before any job starts.

About a minute in all on two cores (more when something else runs there).
"""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import yaml

from helpers import ROOT, SMOKE, SNAKEMAKE, copy_repo, smk

TRAJ = "results/c3/trajectories"


def start_smk(cwd, *args, out):
    """snakemake in the background, in its own process group (so that the whole tree can be killed)."""
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.Popen([*SNAKEMAKE, *args], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)
    # the job processes were in the same group: wait until none is left
    for _ in range(100):
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError("processes of the killed snakemake are still alive")


def run_name(p: Path) -> str:
    """'isotropic_s777' from results/c3/trajectories/isotropic_s777.npz or results/logs/c3/train_isotropic_s777.log."""
    return p.stem.removeprefix("train_")


def outputs(repo) -> dict:
    """Bytes of every csv/json/npz output under results/ (temporary files of atomic writes excluded)."""
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted((repo / "results").rglob("*"))
            if p.suffix in (".csv", ".json", ".npz") and not p.name.startswith(".")}


def test_killed_training_rerun_recomputes_only_unfinished(tmp_path, smoke_built):
    ref = smoke_built  # the uninterrupted reference: the whole workflow, same config, two cores
    repo = copy_repo(tmp_path / "killed")
    with open(tmp_path / "killed.out", "w") as out:
        proc = start_smk(repo, "c3", *SMOKE, "--cores", "1", out=out)
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                assert proc.poll() is None, "the run finished before it could be interrupted:\n" + \
                    (tmp_path / "killed.out").read_text()[-3000:]
                done = {run_name(p) for p in (repo / TRAJ).glob("*.npz") if not p.name.startswith(".")}
                logs = {run_name(p) for p in (repo / "results/logs/c3").glob("train_*.log")}
                if done and logs - done:
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("no training job started after a finished one within 300 s")
        finally:
            kill_group(proc)
        done = {run_name(p) for p in (repo / TRAJ).glob("*.npz") if not p.name.startswith(".")}
        killed = {run_name(p) for p in (repo / "results/logs/c3").glob("train_*.log")} - done
        assert done and killed, (done, killed)
        # the killed job left no output (at most a temporary file of the atomic write)
        for name in killed:
            assert not (repo / TRAJ / f"{name}.npz").exists()
        assert not (repo / "results/c3/c3_transfer.csv").exists()

        # the dry run plans exactly the trainings without output, none of the finished ones
        dry = smk(repo, "-n", "c3", *SMOKE)
        text = dry.stdout + dry.stderr
        planned = set(re.findall(r"Missing output files: " + TRAJ + r"/(\w+)\.npz", text))
        assert killed <= planned and not planned & done, (planned, killed, done)
        n_train = re.search(r"^c3_train\s+(\d+)\s*$", text, re.M)
        assert n_train and int(n_train.group(1)) == len(planned), text[-3000:]

        # the rerun (after removing the lock the killed run left) completes ...
        smk(repo, "--unlock", *SMOKE)
        rerun = smk(repo, "c3", *SMOKE)
        ran = set(re.findall(r"C3: training (\w+), seed (\d+)", rerun.stdout + rerun.stderr))
        assert {f"{s}_s{seed}" for s, seed in ran} == planned, (ran, planned)
    every = {run_name(p) for p in (ref / "results/c3/tasks").glob("*.npz") if not p.stem.endswith("_eval")}
    assert planned == every - done, (planned, every, done)
    # ... with the bits of the uninterrupted run (C3's outputs: the reference built every claim)
    got = outputs(repo)
    want = {k: v for k, v in outputs(ref).items() if k.startswith("results/c3/")}
    assert got.keys() == want.keys()
    assert [k for k in want if got[k] != want[k]] == []


def test_failing_job_reports_log_and_keep_going_finishes_the_rest(tmp_path):
    repo = copy_repo(tmp_path)
    bad = "anisotropic_s777"
    smk(repo, f"results/c3/tasks/{bad}.npz", *SMOKE)   # sample it, then corrupt it
    (repo / f"results/c3/tasks/{bad}.npz").write_bytes(b"not an npz file\n")
    # unsealed, as a file put there by hand (a sealed one would be set aside before the plan and
    # rebuilt: tests/faults/test_faults_workflow.py), so the training job is the one to find it damaged
    (repo / f".softlin/seals/results/c3/tasks/{bad}.npz.sha256").unlink()
    proc = smk(repo, "c3", "symbolic", "--keep-going", *SMOKE, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"results/logs/c3/train_{bad}.log" in text, text[-3000:]
    assert re.search(r"Error in rule c3_train", text), text[-3000:]
    said = (repo / f"results/logs/c3/train_{bad}.log").read_text()
    assert "Traceback" in said                                                      # the log says why:
    assert f"results/c3/tasks/{bad}.npz is damaged" in said                         # named, set aside,
    assert (repo / f"results/c3/tasks/{bad}.corrupt.npz").exists()                  # a rerun resamples it
    assert not (repo / TRAJ / f"{bad}.npz").exists()
    others = [p for p in (repo / "results/c3/tasks").glob("*_s*.npz")
              if not p.stem.endswith(("_eval", ".corrupt")) and p.stem != bad]
    smoke = yaml.safe_load((ROOT / "config" / "presets" / "smoke.yaml").read_text())
    assert len(others) == sum(st["n_seed"] for st in smoke["c3"]["settings"].values()) - 1
    for p in others:
        assert (repo / TRAJ / p.name).exists(), p.name
    for sid in ("S1", "S2", "S3", "S4", "S5", "S6"):
        for ext in ("md", "json", "html"):
            assert (repo / f"results/symbolic/{sid}.{ext}").exists()
    assert not (repo / "results/c3/c3_transfer.csv").exists()   # depends on the failed job


def test_bad_config_stops_a_real_run_before_any_job(tmp_path):
    """test_workflow.test_bad_config_rejected_before_any_job checks the messages with dry runs
    (wrong type, unknown key, negative step count, covariance not positive definite, ...); here a
    real run with a covariance that is not symmetric stops before any job has written anything."""
    repo = copy_repo(tmp_path)
    (repo / "bad.yaml").write_text("c3: {settings: {isotropic: {sigma: [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]}}}\n")
    proc = smk(repo, "--configfile", "bad.yaml", "--config", "preset=smoke", check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "c3.settings.isotropic.sigma" in text and "symmetric" in text, text[-2000:]
    assert not (repo / "results").exists() and not (repo / "figures").exists()
