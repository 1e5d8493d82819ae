"""Benchmark of claim C3 end to end (not a test): the workflow target from scratch vs numpy.

For each repeat: copy the repository to a temporary directory, run ``snakemake c3`` with the
default profile from an empty ``results/`` and print the wall time and the per-rule times of
the ``benchmark:`` files.  Then time the plain-numpy reference (softlin.numpy_reference) on the
same softmax trainings (every setting x seed x L of the C3 config).  Medians over repeats.

    python bench/bench_c3.py [--repeats 3] [--cold-cache] [--numpy-repeats 1] [--preset default]

``--cold-cache`` gives every repeat an empty JAX compilation cache (the first run on a new
machine); by default the cache of the first repeat is reused, as on a researcher's machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
COPY = ["Snakefile", "config", "workflow", "softlin", "symbolic"]


def run_workflow(cache_dir: str, preset: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        for name in COPY:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, Path(tmp) / name)
        env = dict(os.environ, PYTHONPATH=tmp, SOFTLIN_JAX_CACHE=cache_dir)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "snakemake", "c3", "--workflow-profile",
                        "workflow/profiles/default", "--config", f"preset={preset}", "--quiet"],
                       cwd=tmp, env=env, check=True, capture_output=True)
        wall = time.perf_counter() - t0
        rules = {}
        for f in sorted((Path(tmp) / "results" / "benchmarks").rglob("*.tsv")):
            rules[f.stem] = float(f.read_text().splitlines()[1].split("\t")[0])
        return wall, rules


def c3_config(preset: str) -> dict:
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["c3"]
    if preset != "default":
        over = (yaml.safe_load((ROOT / "config" / "presets" / f"{preset}.yaml").read_text()) or {}).get("c3", {})
        for k, v in over.items():
            if isinstance(v, dict) and isinstance(cfg.get(k), dict):
                for kk, vv in v.items():
                    cfg[k][kk] = {**cfg[k][kk], **vv} if isinstance(vv, dict) and isinstance(cfg[k].get(kk), dict) else vv
            else:
                cfg[k] = v
    return cfg


def numpy_trainings(cfg: dict) -> float:
    from softlin import numpy_reference as ref

    total = 0.0
    for name, st in cfg["settings"].items():
        a = np.asarray(st["sigma"], dtype=float)
        sigma = np.diag(a) if a.ndim == 1 else a
        for i in range(st["n_seed"]):
            seed = cfg["seed0"] + cfg["seed_stride"] * i
            tasks = ref.ICLTasks(cfg["d"], sigma, cfg["n_pairs"], cfg["n_query"], max(cfg["L"]),
                                 seed, st.get("token_kind", "gauss"))
            U0, v0 = ref.init_eq9(sigma)
            t0 = time.perf_counter()
            for L in cfg["L"]:
                ref.train(tasks, U0, v0, "softmax", L=L, lr=cfg["lr"], steps=cfg["steps"],
                          record_every=cfg["record_every"])
            total += time.perf_counter() - t0
            print(f"  numpy reference: {name} seed {seed} softmax trainings done ({total:.1f} s so far)",
                  flush=True)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--numpy-repeats", type=int, default=1)
    ap.add_argument("--cold-cache", action="store_true")
    ap.add_argument("--preset", default="default")
    args = ap.parse_args()
    walls, per_rule = [], {}
    shared_cache = tempfile.mkdtemp(prefix="softlin-jax-cache-")
    for r in range(args.repeats):
        cache = tempfile.mkdtemp(prefix="softlin-jax-cache-") if args.cold_cache else shared_cache
        wall, rules = run_workflow(cache, args.preset)
        walls.append(wall)
        for k, v in rules.items():
            per_rule.setdefault(k, []).append(v)
        print(f"repeat {r + 1}: snakemake c3 from an empty results/ took {wall:.1f} s", flush=True)
    cfg = c3_config(args.preset)
    np_times = [numpy_trainings(cfg) for _ in range(args.numpy_repeats)]
    print()
    print(f"C3 ({args.preset} preset), {os.cpu_count()} cores, "
          f"{'cold' if args.cold_cache else 'shared'} JAX compilation cache")
    print(f"{'':44s}{'median':>10s}{'min':>10s}{'max':>10s}")
    print(f"{'snakemake c3, wall (s)':44s}{statistics.median(walls):10.1f}{min(walls):10.1f}{max(walls):10.1f}")
    for k, v in sorted(per_rule.items()):
        print(f"{'  rule ' + k + ' (s)':44s}{statistics.median(v):10.1f}{min(v):10.1f}{max(v):10.1f}")
    train = [sum(v[i] for k, v in per_rule.items() if k.startswith("train_")) for i in range(len(walls))]
    print(f"{'  sum of c3_train jobs (s)':44s}{statistics.median(train):10.1f}{min(train):10.1f}{max(train):10.1f}")
    if np_times:
        print(f"{'numpy reference, same softmax trainings (s)':44s}{statistics.median(np_times):10.1f}"
              f"{min(np_times):10.1f}{max(np_times):10.1f}")


if __name__ == "__main__":
    main()
