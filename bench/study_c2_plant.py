"""Study: C2's estimator ``plant`` (softlin/planted.py) against ``task_integral`` at every probe of
C2's Gaussian settings, as C2's measure jobs run them (one prompt per antithetic pair shared by the
setting's probes and queries; issue 31; not a test).

Per setting, ``c2.measure`` with each estimator on fresh seeds (never the claims'), ``--blocks`` blocks
each; per probe and part (U, v): the slope over the upper half of L with its jackknife s.e., the scatter
of the slope over ``--groups`` disjoint groups of blocks against their median s.e., the largest block's
share at L_max, the largest |z| of the per-L means (plant - task_integral over combined s.e.), and the
seconds per block of each estimator.

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python bench/study_c2_plant.py isotropic anisotropic nondiagonal \
        --blocks 512 --groups 8 --seed 990201
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import yaml  # noqa: E402
from diag_c1c2_prompt_level import design  # noqa: E402
from study_c2_token_strata import slope_se  # noqa: E402

from softlin.claims import c2  # noqa: E402

ESTIMATORS = ("task_integral", "plant")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("settings", nargs="+")
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--seed", type=int, default=990201, help="estimator e of setting k: seed + 1000 k + index of e")
    ap.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=ESTIMATORS)
    args = ap.parse_args()
    if args.groups < 2 or args.blocks < 2 * args.groups:
        ap.error("need --groups >= 2 and at least two blocks per group")
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    c2cfg = cfg["c2"]
    Ls = [2 ** k for k in range(c2cfg["log2_L_min"], c2cfg["log2_L_max"] + 1)]
    settings = design(cfg)
    for off, name in enumerate(args.settings):
        st = settings[name]
        probes = c2.probes_of(st, c2cfg["sweep"]["lambda"] if name in c2cfg["sweep"]["settings"] else [])
        runs, secs = {}, {}
        run = [e for e in ESTIMATORS if e in args.estimators]
        for est in run:
            k = ESTIMATORS.index(est)
            t0 = time.perf_counter()
            runs[est] = c2.measure(st, probes, Ls, args.seed + 1000 * off + k, args.blocks, c2cfg["n_pairs"],
                                   c2cfg["n_query"], progress=lambda m: None, estimator=est)
            secs[est] = (time.perf_counter() - t0) / args.blocks
        print(f"{name}: {args.blocks} blocks each; s per block: " + ", ".join(f"{e} {secs[e]:.3f}" for e in run))
        if len(run) == 1:
            print("| probe | lambda_max | part | slope + beta | group scatter | share |\n|---|---|---|---|---|---|")
        else:
            print("| probe | lambda_max | part | slope + beta, task_integral | slope + beta, plant | s.e. ratio | "
                  "group scatter ti / plant | share ti / plant | max abs z per L |")
            print("|---|---|---|---|---|---|---|---|---|")
        for i, pr in enumerate(probes):
            for part in ("U", "v"):
                M = {e: getattr(runs[e], f"msq_{part}")[:, i] for e in run}
                sl = {e: slope_se(Ls, M[e]) for e in run}
                sc = {e: np.std([slope_se(Ls, g)[0] for g in np.array_split(M[e], args.groups)], ddof=1) for e in run}
                share = {e: M[e][:, -1].max() / M[e][:, -1].sum() for e in run}
                b = pr["beta"]
                if len(run) == 1:
                    e = run[0]
                    print(f"| {pr['name']} | {pr['lambda_max']:.3f} | {part} | {sl[e][0] + b:+.3f} +/- {sl[e][1]:.3f} | "
                          f"{sc[e]:.3f} | {share[e]:.2f} |")
                    continue
                mean = {e: (M[e].mean(0), M[e].std(0, ddof=1) / np.sqrt(args.blocks)) for e in run}
                z = (mean["plant"][0] - mean["task_integral"][0]) / np.hypot(mean["plant"][1], mean["task_integral"][1])
                print(f"| {pr['name']} | {pr['lambda_max']:.3f} | {part} | {sl['task_integral'][0] + b:+.3f} +/- "
                      f"{sl['task_integral'][1]:.3f} | {sl['plant'][0] + b:+.3f} +/- {sl['plant'][1]:.3f} | "
                      f"{sl['task_integral'][1] / sl['plant'][1]:.1f} | {sc['task_integral']:.3f} / {sc['plant']:.3f} | "
                      f"{share['task_integral']:.2f} / {share['plant']:.2f} | {np.max(np.abs(z)):.1f} (L = 2^"
                      f"{int(np.log2(Ls[int(np.argmax(np.abs(z)))]))}) |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
