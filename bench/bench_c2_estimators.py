"""Bench: C2's measure with estimator ``importance`` against ``task_integral`` (issue 31), side by side.

For each C1 setting, ``softlin.claims.c2.measure`` over the same task blocks (C2's probes and sweep,
the default protocol: L = 2^3..2^16, ``c2.n_pairs`` prompts and ``c2.n_query`` queries per block),
the two estimators alternating per repetition so that load drifts hit both; the first repetition
compiles and is not counted.  Prints seconds per setting and the ratio of the totals.

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python bench/bench_c2_estimators.py --blocks 16 --reps 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from diag_c1c2_prompt_level import design  # noqa: E402

from softlin.claims import c2  # noqa: E402

ESTIMATORS = ("importance", "task_integral")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3, help="repetitions; the first compiles and is not counted")
    args = ap.parse_args()
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    c2cfg = cfg["c2"]
    Ls = [2 ** j for j in range(c2cfg["log2_L_min"], c2cfg["log2_L_max"] + 1)]
    des = design(cfg)
    tot = {e: 0.0 for e in ESTIMATORS}
    print(f"{'setting':12s} {'probes':>6s} " + " ".join(f"{e:>14s}" for e in ESTIMATORS) + "   (s per repetition)")
    for rep in range(args.reps):
        for name in cfg["c1"]["settings"]:                  # C2's measure jobs (not C1's exponent sweep)
            st = des[name]
            sweep = c2cfg["sweep"]["lambda"] if name in c2cfg["sweep"]["settings"] else []
            probes = c2.probes_of(st, sweep)
            dt = {}
            for e in (ESTIMATORS if rep % 2 else ESTIMATORS[::-1]):
                t0 = time.perf_counter()
                c2.measure(st, probes, Ls, 777 + rep, args.blocks, c2cfg["n_pairs"], c2cfg["n_query"],
                           progress=lambda m: None, estimator=e)
                dt[e] = time.perf_counter() - t0
                if rep:
                    tot[e] += dt[e]
            print(f"{name:12s} {len(probes):6d} " + " ".join(f"{dt[e]:14.2f}" for e in ESTIMATORS)
                  + ("   (compiles, not counted)" if rep == 0 else ""))
    print(f"total over repetitions 2..{args.reps}: " + ", ".join(f"{e} {tot[e]:.2f} s" for e in ESTIMATORS)
          + f"; importance / task_integral = {tot['importance'] / tot['task_integral']:.2f}")


if __name__ == "__main__":
    main()
