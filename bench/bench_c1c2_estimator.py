"""Benchmark of C1's and C2's measurement with both estimators in one run (issue 31; not a test).

The measure jobs are the only part of C1 and C2 whose work depends on ``c1.estimator`` /
``c2.estimator`` (metrics, figures and verdicts read their records; C2's trajectory does not use
the estimator). For each estimator, alternating over the repeats so that a shared machine's load
falls on both alike: every C1 setting's ``c1.measure``, then every C2 setting's ``c2.measure`` (C1's
probes and the sweep), at the config's protocol, in one process (the JAX programs compiled once,
before the first timing). Also the exponent sweep of C1 (``c1.exponent``, new with issue 31).

    PYTHONPATH=$PWD python bench/bench_c1c2_estimator.py [--repeats 1] [--preset default]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _config(preset: str) -> dict:
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    if preset != "default":
        over = yaml.safe_load((ROOT / "config" / "presets" / f"{preset}.yaml").read_text())
        for k, v in over.items():
            cfg[k] = {**cfg.get(k, {}), **v} if isinstance(v, dict) else v
    return cfg


def _settings(c1cfg: dict) -> list[dict]:
    out = []
    for name, st in c1cfg["settings"].items():
        s = np.asarray(st["sigma"], float)
        out.append(dict(name=name, label=name, token_kind=st.get("token_kind", "gauss"),
                        sigma=(np.diag(s) if s.ndim == 1 else s).tolist(), probes=st.get("probes") or {}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--preset", default="default")
    args = ap.parse_args()
    from softlin.claims import c1, c2

    cfg = _config(args.preset)
    C1, C2 = cfg["c1"], cfg["c2"]
    design = c1.design(_settings(C1), C1["probes"], C1.get("exponent"))
    L1 = [2 ** a for a in range(C1["log2_L_min"], C1["log2_L_max"] + 1)]
    L2 = [2 ** a for a in range(C2["log2_L_min"], C2["log2_L_max"] + 1)]
    quiet = lambda m: None  # noqa: E731

    def run_c1(est, names):
        for name in names:
            c1.measure(design[name], L1, C1["seed"], C1["n_blocks"], C1["n_pairs"], C1["n_query"], quiet, est)

    def run_c2(est):
        for name in C1["settings"]:
            sweep = C2["sweep"]["lambda"] if name in C2["sweep"]["settings"] else []
            c2.measure(design[name], c2.probes_of(design[name], sweep), L2, C2["seed"], C2["n_blocks"],
                       C2["n_pairs"], C2["n_query"], quiet, est)

    # compile every program once (two blocks, the shortest protocol)
    small = dict(design["isotropic"], probes=design["isotropic"]["probes"][:2])
    for est in ("blocks", "importance"):
        c1.measure(small, L1, 1, 2, 1, C1["n_query"], quiet, est)
        c2.measure(small, small["probes"], L2, 1, 2, 1, C2["n_query"], quiet, est)
    times = {k: [] for k in ("c1_blocks", "c1_importance", "c2_blocks", "c2_importance", "c1_exponent")}
    for _ in range(args.repeats):
        for est in ("blocks", "importance"):
            t0 = time.perf_counter()
            run_c1(est, list(C1["settings"]))
            t1 = time.perf_counter()
            run_c2(est)
            t2 = time.perf_counter()
            times[f"c1_{est}"].append(t1 - t0)
            times[f"c2_{est}"].append(t2 - t1)
        if c1.EXPONENT in design:
            t0 = time.perf_counter()
            run_c1("importance", [c1.EXPONENT])
            times["c1_exponent"].append(time.perf_counter() - t0)
    for k, v in times.items():
        if v:
            print(f"{k}: median {statistics.median(v):.1f} s over {len(v)} repeats ({', '.join(f'{x:.1f}' for x in v)})")


if __name__ == "__main__":
    main()
