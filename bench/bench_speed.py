"""The everyday loop, side by side (not a test): Snakemake start-up, the test suite, C3 vs numpy.

    .venv/bin/python bench/bench_speed.py [--starts 3] [--tests] [--c3] [--c3-threads2]
                                          [--c3-seed-baseline SEED_C3_PY] [--no-numpy-reference]
                                          [--numpy-runs N] [--slurm-plugin DIR] [--fake-slurm-tools]

Everything in one run, so that the ratios are comparable on a noisy machine:

* **Snakemake start**: wall and CPU time of ``import snakemake.cli`` and of a dry run of the whole
  workflow (``snakemake -n``, default preset, in a copy of the repository), medians of
  ``--starts``; with ``--slurm-plugin DIR`` (e.g. ``.venv/slurm-plugin``, where
  ``.ci/slurm_smoke.sh`` installs the plugin) also with the SLURM executor plugin on PYTHONPATH,
  as before it became the optional extra ``slurm``.  ``--fake-slurm-tools`` puts stand-ins for the
  SLURM client programs on PATH for that row when none are installed: ``scontrol`` waits 9 s and
  fails, as the real one does on a machine with the SLURM clients and no answering controller
  (the case the plugin's import-time probe pays for); the row says so.
* **Test suite** (``--tests``): ``python -m pytest -q`` from this checkout, wall time.
* **C3** (``--c3``): ``snakemake c3`` with the default profile from an empty ``results/`` (the JAX
  compilation cache warm from a first untimed run, or ``--c3-cache DIR`` as it is), and with
  ``--c3-threads2`` also with ``--set-threads c3_train=2`` (the kernel splits the tasks over two
  OpenMP threads; the five jobs then run one after the other instead of two at a time); against
  the numpy reference (softlin.numpy_reference) on the same softmax trainings, timed in the same
  run (``--numpy-runs N``: only the first N (setting, seed) runs, extrapolated to all of them; the
  line says so).  ``--c3-seed-baseline`` also times the fastest honest alternative, the seed's own
  protocol ported to vectorised numpy (the script ``seed_c3.py`` kept beside the project, not in it:
  its 5 (setting, seed) runs),
  against ``snakemake c3`` on those same 5 runs (the seed log's seeds, without C3d's extra
  seed-order trainings).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
COPY = ["Snakefile", "config", "workflow", "softlin", "symbolic"]


def copy_repo(dst: Path) -> Path:
    for name in COPY:
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dst / name)
    return dst


def timed(cmd, cwd, env) -> tuple[float, float]:
    """(wall, CPU of the children) seconds of one command; raises on failure."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def fake_slurm_tools(dirpath: Path) -> Path:
    for name in ("sinfo", "squeue", "sacct"):
        (dirpath / name).write_text("#!/bin/sh\nexit 0\n")
    (dirpath / "scontrol").write_text(
        "#!/bin/sh\n# stand-in: the SLURM client retries an unreachable controller, then fails\nsleep 9\n"
        "echo 'slurm_load_ctl_conf error: Unable to contact slurm controller' >&2\nexit 1\n")
    for p in dirpath.iterdir():
        p.chmod(0o755)
    return dirpath


def start_rows(args, repo: Path) -> list[tuple[str, list, list]]:
    variants = [("as installed (no SLURM plugin)", {})]
    if args.slurm_plugin:
        plugin = str(Path(args.slurm_plugin).resolve())
        extra = {"PYTHONPATH": plugin}
        label = "with the SLURM plugin"
        if args.fake_slurm_tools and not shutil.which("sinfo"):
            tools = fake_slurm_tools(Path(tempfile.mkdtemp(prefix="fake-slurm-")))
            extra["PATH"] = f"{tools}:{os.environ['PATH']}"
            label += " + stand-in SLURM tools, no controller"
        elif shutil.which("sinfo"):
            label += " (SLURM tools installed here)"
        variants.append((label, extra))
    rows = []
    for label, extra in variants:
        env = dict(os.environ, **extra)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra.get("PYTHONPATH"), str(repo)) if p)
        imp, dry = [], []
        for _ in range(args.starts):
            imp.append(timed([sys.executable, "-c", "import snakemake.cli"], repo, env))
            dry.append(timed([sys.executable, "-m", "snakemake", "-n", "--cores", "2"], repo, env))
        rows.append((f"import snakemake.cli, {label}", [w for w, _ in imp], [c for _, c in imp]))
        rows.append((f"snakemake -n (whole workflow), {label}", [w for w, _ in dry], [c for _, c in dry]))
    return rows


def c3_run(cache: str, extra_args: list[str], target: str = "c3") -> float:
    with tempfile.TemporaryDirectory() as tmp:
        repo = copy_repo(Path(tmp))
        env = dict(os.environ, PYTHONPATH=str(repo), SOFTLIN_JAX_CACHE=cache)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "snakemake", target, "--workflow-profile", "workflow/profiles/default",
                        "--quiet", *extra_args], cwd=repo, env=env, check=True, capture_output=True)
        return time.perf_counter() - t0


# the seed log's replication (seeds per setting), so both sides train the same runs; without the
# seed-order runs, so without the criteria that read them (the config check refuses a criterion
# whose metric the options leave out): the c3 criteria and checks of config.yaml but those
def seed_runs_config() -> str:
    import json

    import yaml

    c3 = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())["c3"]

    def keep(crits):
        return [c for c in crits if not any(t["measured"].startswith("offblock.seed_order")
                                            for t in c["all"] + c.get("inconclusive_unless", []))]
    return "c3=" + json.dumps({"settings": {"isotropic": {"n_seed": 2}, "anisotropic": {"n_seed": 2},
                                            "rademacher": {"n_seed": 1}},
                               "offblock_seed_order": False, "compare_seed_log": False,  # a verdict input
                               "criteria": keep(c3["criteria"]),
                               "consistency_checks": keep(c3["consistency_checks"])})


def seed_baseline(script: Path) -> float:
    """Wall time of the seed's own C3 protocol in plain numpy (``seed_c3.py``, the whole C3 of the
    seed: 2 + 2 + 1 (setting, seed) runs), one process, its defaults."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(script), "--out", tmp], check=True, capture_output=True)
        return time.perf_counter() - t0


def numpy_reference(n_runs: int | None) -> tuple[float, str]:
    import numpy as np

    from softlin import numpy_reference as ref

    from bench_c3 import c3_config

    cfg = c3_config("default")
    runs = [(name, st, cfg["seed0"] + cfg["seed_stride"] * i)
            for name, st in cfg["settings"].items() for i in range(st["n_seed"])]
    todo = runs[:n_runs] if n_runs else runs
    total = 0.0
    for name, st, seed in todo:
        a = np.asarray(st["sigma"], dtype=float)
        sigma = np.diag(a) if a.ndim == 1 else a
        tasks = ref.ICLTasks(cfg["d"], sigma, cfg["n_pairs"], cfg["n_query"], max(cfg["L"]), seed,
                             st.get("token_kind", "gauss"))
        U0, v0 = ref.init_eq9(sigma)
        t0 = time.perf_counter()
        for L in cfg["L"]:
            ref.train(tasks, U0, v0, "softmax", L=L, lr=cfg["lr"], steps=cfg["steps"],
                      record_every=cfg["record_every"])
        total += time.perf_counter() - t0
        print(f"  numpy reference: {name} seed {seed} done ({total:.1f} s so far)", flush=True)
    if len(todo) < len(runs):
        return total * len(runs) / len(todo), f"{len(todo)} of {len(runs)} runs timed, extrapolated"
    return total, f"all {len(runs)} runs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--slurm-plugin", help="directory holding snakemake_executor_plugin_slurm (pip --target)")
    ap.add_argument("--fake-slurm-tools", action="store_true")
    ap.add_argument("--tests", action="store_true")
    ap.add_argument("--c3", action="store_true")
    ap.add_argument("--c3-threads2", action="store_true")
    ap.add_argument("--numpy-runs", type=int, default=None)
    ap.add_argument("--c3-cache", help="JAX compilation cache to use as it is (no untimed warm-up run)")
    ap.add_argument("--c3-seed-baseline", metavar="SEED_C3_PY", default=None,
                    help="also time the seed's protocol in plain numpy (the vectorised port of the seed's "
                         "C3 script, seed_c3.py, outside this repository: the fastest honest alternative) "
                         "against `snakemake c3` on the same runs")
    ap.add_argument("--no-numpy-reference", action="store_true", help="skip softlin.numpy_reference")
    args = ap.parse_args()

    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        repo = copy_repo(Path(tmp))
        for label, walls, cpus in start_rows(args, repo):
            lines.append((label, f"{statistics.median(walls):.2f} s wall, {statistics.median(cpus):.2f} s CPU "
                                 f"(median of {len(walls)}; {min(walls):.2f}-{max(walls):.2f})"))
            print(f"{label}: {lines[-1][1]}", flush=True)

    if args.tests:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                              capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        wall = time.perf_counter() - t0
        summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "(no output)"
        lines.append(("python -m pytest -q", f"{wall:.0f} s wall ({summary})"))
        print(f"test suite: {lines[-1][1]}", flush=True)

    if args.c3:
        cache = args.c3_cache
        if not cache:
            cache = tempfile.mkdtemp(prefix="softlin-jax-cache-")
            print("C3: a first, untimed run fills the JAX compilation cache ...", flush=True)
            c3_run(cache, [])
        new = c3_run(cache, [])
        print(f"snakemake c3 (config's threads per training job): {new:.1f} s", flush=True)
        old = None
        if args.c3_threads2:
            old = c3_run(cache, ["--set-threads", "c3_train=2"])
            print(f"snakemake c3 --set-threads c3_train=2: {old:.1f} s", flush=True)
        lines.append(("snakemake c3 from an empty results/, default", f"{new:.1f} s"))
        if args.c3_seed_baseline:
            # up to C3's metrics (the verdict's C3d reads the seed-order runs this comparison leaves out)
            same = c3_run(cache, ["--config", seed_runs_config()], target="results/c3/c3_transfer.csv")
            base = seed_baseline(Path(args.c3_seed_baseline))
            print(f"snakemake c3 on the seed's runs: {same:.1f} s; seed_c3.py: {base:.1f} s", flush=True)
            lines.append(("seed's protocol in numpy (seed_c3.py, 5 runs)", f"{base:.1f} s"))
            lines.append(("snakemake c3 to its metrics, the same 5 runs",
                          f"{same:.1f} s   seed numpy / workflow = {base / same:.2f}x"))
        if not args.no_numpy_reference:
            np_time, how = numpy_reference(args.numpy_runs)
            lines.append(("softlin.numpy_reference, C3's softmax trainings", f"{np_time:.1f} s ({how})"))
            lines.append(("   numpy reference / workflow (default)", f"{np_time / new:.2f}x"))
        if old is not None:
            lines.append(("snakemake c3, --set-threads c3_train=2",
                          f"{old:.1f} s   numpy / workflow = {np_time / old:.2f}x"))

    print()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k:{width}s}  {v}")


if __name__ == "__main__":
    main()
