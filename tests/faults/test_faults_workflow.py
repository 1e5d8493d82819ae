"""Fault injection on the workflow (issue 32, items 4-5), each on a copy of the repository at the smoke
preset: a copied or moved working directory, damaged outputs, another working directory (``-d``),
SIGTERM to ``snakemake`` during a training.  (Unit faults of the same items: test_faults_io.py.)
"""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from helpers import SMOKE, SNAKEMAKE, copy_repo, smk

C3_DAMAGED = ("results/c3/verdict.json", "results/c3/c3_per_seed.csv", "results/c3/trajectories/isotropic_s777.npz")


def _planned(text: str) -> dict:
    """{rule: count} of a dry run's job table."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", text, re.M) if m.group(1) != "total"}


def test_copied_moved_and_damaged_working_directory(tmp_path, smoke_built):
    """Before: a copied or moved working directory reran every job (code inputs recorded as
    absolute paths); a truncated verdict.json gave "Nothing to be done", a truncated
    c3_per_seed.csv a KeyError about a fit, a bit-flipped trajectory its CRC error on every rerun.
    Now a copy (mtimes kept) and a move plan no job; each damaged output is named with its
    rebuild command, set aside, and the next run rebuilds it with the bits of the intact run."""
    copy = tmp_path / "copy"
    shutil.copytree(smoke_built, copy, symlinks=True, ignore=shutil.ignore_patterns("smoke_build.log"))
    assert "Nothing to be done" in smk(copy, "-n", *SMOKE).stdout
    moved = tmp_path / "moved"
    os.rename(copy, moved)
    assert "Nothing to be done" in smk(moved, "-n", *SMOKE).stdout

    verdict, per_seed, traj = (moved / p for p in C3_DAMAGED)
    verdict.write_bytes(verdict.read_bytes()[:100])                       # truncated
    lines = per_seed.read_bytes().splitlines(keepends=True)
    per_seed.write_bytes(b"".join(lines[: len(lines) // 2]))              # whole rows lost
    data = bytearray(traj.read_bytes())
    data[len(data) // 2] ^= 0x10                                          # one bit
    traj.write_bytes(bytes(data))
    dry = smk(moved, "-n", "c3", *SMOKE)
    text = dry.stdout + dry.stderr
    for rel in C3_DAMAGED:
        assert re.search(rf"softlin: {re.escape(rel)} is damaged .*set aside.*`snakemake {re.escape(rel)}`", text), text[-3000:]
    assert _planned(text) == {"c3_train": 1, "c3_metrics": 1, "c3_figure": 1, "c3_verdict": 1, "c3": 1}, text[-3000:]
    smk(moved, "c3", *SMOKE)
    for rel in C3_DAMAGED:
        assert (moved / rel).read_bytes() == (smoke_built / rel).read_bytes(), rel
        p = moved / rel
        assert p.with_name(f"{p.stem}.corrupt{p.suffix}").exists()


def test_other_working_directory_plans_every_claim(tmp_path):
    """Before: ``snakemake -s CLONE/Snakefile -d OTHER c3`` failed on the relative path of the seed
    log.  Now every claim plans from another working directory (inputs relative to it)."""
    clone = copy_repo(tmp_path / "clone")
    other = tmp_path / "other"
    targets = ["c1", "c2", "c3", "c4", "c5", "c5_replicates", "symbolic", "verdict_overview"]
    dry = smk(tmp_path, "-s", str(clone / "Snakefile"), "-d", str(other), "-n", *targets, *SMOKE)
    plan = _planned(dry.stdout)
    assert {"c3_verdict", "c5_train", "c1_measure", "c4_flow", "symbolic", "c5_replicates_verdict"} <= set(plan)
    assert not (tmp_path / "results").exists() and not (clone / "results").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_to_snakemake_stops_training_within_a_second(tmp_path, sig):
    """Before: SIGTERM to ``snakemake`` waited for running jobs (a C5 training ran on for minutes).
    Now it reaches the training job at once, which stops with its checkpoint; SIGINT to
    ``snakemake`` alone likewise (both forwarded as SIGTERM, installed at ``onstart``)."""
    repo = copy_repo(tmp_path / "repo")
    ck = repo / "results/c5/checkpoints/L10+20+50.npz"
    log = repo / "results/logs/c5/train_L10+20+50.log"
    with open(tmp_path / "out", "w") as out:
        proc = subprocess.Popen([*SNAKEMAKE, "--cores", "2", "c5", *SMOKE, "c5={steps: 400000, chunk: 4000}"],
                                cwd=repo, env=dict(os.environ, PYTHONPATH=str(repo)), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            deadline = time.monotonic() + 300
            while not ck.exists() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert ck.exists(), (tmp_path / "out").read_text()[-3000:]
            time.sleep(0.5)                                  # the next chunk (~5 s) is in flight
            seen = len(log.read_text())
            t0 = time.perf_counter()
            proc.send_signal(sig)
            stopped = None
            while proc.poll() is None and time.perf_counter() - t0 < 60:
                if stopped is None and "stopped by SIGTERM" in log.read_text()[seen:]:
                    stopped = time.perf_counter() - t0
                time.sleep(0.01)
            ended = time.perf_counter() - t0
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    text = log.read_text()[seen:]
    assert "stopped by SIGTERM" in text and str(ck.relative_to(repo)) in text, text
    assert stopped is not None and stopped < 1.0, (stopped, ended)
    assert ended < 15.0 and proc.returncode != 0, (ended, proc.returncode)
    assert ck.exists()
