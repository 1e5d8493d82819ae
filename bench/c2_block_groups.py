"""C2 on disjoint groups of task blocks of one run: each group an independent run of the group's size
(issue 31; not a test, not used by the workflow).

Reads a finished C2 run's records (``results/c2/gaps/*.npz``, each setting at its blocks: ``--n-blocks``, or
the config's ``c2.n_blocks`` times ``blocks_factor``; its C1 probes and its trajectories), splits the
task blocks into consecutive groups of ``--group`` blocks (block ``b`` of any run with the same seed is the
same block, so group 1 is the run at ``--group`` blocks; a setting with ``--group`` blocks or fewer enters
every group whole, and its entries are left out of the comparisons), and for each
group recomputes C2's metrics (``c2.summarize_all``) and evaluates C2's criteria of the config with
their decision rule.  Prints each criterion's status per group, and per pair of groups the RMS and
largest ``|z|`` of ``(v1 - v2) / sqrt(se1^2 + se2^2)`` over every entry the criteria read (as
``softlin.calibration`` does across task seeds); the trajectory (C2e) is the same in every group.

    PYTHONPATH=$PWD python bench/c2_block_groups.py --results /path/to/run/results [--n-blocks 1024] --group 256
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from softlin import calibration, config_cost, importance, records, verdict  # noqa: E402
from softlin.claims import c2, c2e  # noqa: E402
from softlin.io import load_json  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", required=True, help="the run's results/ folder")
    ap.add_argument("--n-blocks", type=int, help="every setting's blocks (default: the config's, per setting)")
    ap.add_argument("--group", type=int, required=True, help="blocks per group")
    ap.add_argument("--why", action="store_true", help="print each group's undecided entries")
    ap.add_argument("--shares", action="store_true",
                    help="per Gaussian probe, the largest block's share of the U mean square at L_max: over all "
                         "blocks, in the worst group, and the groups above importance.SHARE_MAX")
    ap.add_argument("--traj-results", help="results/ folder of the trajectories (default: --results)")
    args = ap.parse_args()
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    c2c, c3c = cfg["c2"], cfg["c3"]
    res = Path(args.results)
    design = load_json(res / "c1" / "probes.json")
    Ls = [2 ** j for j in range(c2c["log2_L_min"], c2c["log2_L_max"] + 1)]
    recs = {}
    blocks = {name: args.n_blocks or config_cost.blocks_of(c2c, name) for name in cfg["c1"]["settings"]}
    split = {name for name, n in blocks.items() if n > args.group}
    whole = dict(n_blocks=c2c["n_blocks"], n_blocks_by_setting=blocks)
    for name in cfg["c1"]["settings"]:
        sweep = c2c["sweep"]["lambda"] if name in c2c["sweep"]["settings"] else []
        probes = c2.probes_of(design[name], sweep)
        like = c2.gradient_gaps_like(len(design[name]["sigma"]), blocks[name], len(probes), Ls)
        recs[name] = (probes, records.load(res / "c2" / "gaps" / f"{name}.npz", like))
    traj_cfg = dict({k: c3c[k] for k in ("d", "L", "steps", "record_every")},
                    n_blocks=c2c["trajectory"]["n_blocks"], n_prompts=c2c["trajectory"]["n_prompts"])
    tres = Path(args.traj_results or args.results)
    seeds = [c3c["seed0"] + c3c["seed_stride"] * i for i in range(c2c["trajectory"]["n_seeds"])]
    trajs = {s: {seed: records.load(tres / "c2" / "trajectory" / f"{s}_s{seed}.npz", c2e.along_like(traj_cfg)) for seed in seeds}
             for s in c2c["trajectory"]["settings"]}
    protocol = dict({k: c2c[k] for k in ("log2_L_min", "log2_L_max", "seed", "n_pairs", "n_query", "estimator")},
                    n_blocks=args.group, trajectory_n_prompts=c2c["trajectory"]["n_prompts"])
    z = cfg["decision"]["z"]
    groups = []
    for g in range(max(blocks.values()) // args.group):
        sl = slice(g * args.group, (g + 1) * args.group)
        gaps = {n: (pr, c2.GradientGaps(r.msq_U[sl], r.msq_v[sl], r.diff[sl], r.L, r.tilt, r.diag[sl]) if n in split else r)
                for n, (pr, r) in recs.items()}
        m = c2.summarize_all(design, gaps, trajs, c2c["sweep"]["settings"], c2c["n_boot"], c2c["seed"],
                             c2c["trajectory"]["seed_log_slope"], protocol, z=z, progress=lambda s: None)["metrics"]
        ev = [verdict.evaluate(c, m, z) for c in c2c["criteria"]]
        groups.append(calibration.entries_from_verdicts(ev))
        if args.why:
            for v in ev:
                for t in v["tests"]:
                    if t["outcome"] not in ("holds", "fails"):
                        b = t.get("decided_by") or {}
                        print(f"  {v['id']} {t['measured']}[{b.get('label')}] = {b.get('value')} +/- {b.get('se')} "
                              f"{t['op']} {t['threshold']}: {t['outcome']} ({b.get('reason')})")
        print(f"group {g + 1} (blocks {sl.start + 1}-{sl.stop}) done", flush=True)
    if args.shares:
        print("\n| probe | lambda_max | U share, all blocks | largest U share in a group | groups flagged |")
        print("|---|---|---|---|---|")
        for name, (probes, r) in recs.items():
            if design[name]["token_kind"] != "gauss":
                continue
            for i, pr in enumerate(probes):
                m = np.asarray(r.msq_U)[:, i, -1]
                g = m[: m.size // args.group * args.group].reshape(-1, args.group)
                sh = g.max(axis=1) / g.sum(axis=1)
                print(f"| {name}/{pr['name']} | {pr['lambda_max']:.3f} | {m.max() / m.sum():.2f} | {sh.max():.2f} "
                      f"| {int(np.sum(sh > importance.SHARE_MAX))} of {len(sh)} |")
    def compared(r):
        """An entry that differs between groups: not C2e's (the same trajectories) nor a whole setting's."""
        return not r["id"].startswith("C2e") and c2.blocks_behind(whole, r["measured"], r["label"]) > args.group

    ids = [c["id"] for c in c2c["criteria"]]
    print("\n| criterion | " + " | ".join(f"blocks {g * args.group + 1}-{(g + 1) * args.group}"
                                          for g in range(len(groups))) + " |")
    print("|---" * (len(groups) + 1) + "|")
    for cid in ids:
        print(f"| {cid} | " + " | ".join(st[cid] for _, st in groups) + " |")
    print("\n| groups | entries | RMS of z | largest abs z (entry) |\n|---|---|---|---|")
    for (i, (a, _)), (j, (b, _)) in itertools.combinations(enumerate(groups), 2):
        rows = [r for r in calibration.compare(a, b) if compared(r)]
        s = calibration.summarize(rows)
        w = s["worst"]
        print(f"| {i + 1} vs {j + 1} | {s['n']} | {s['rms']:.2f} | {s['max_abs']:.2f} "
              f"({w['id']} {w['measured']}[{w['label']}]) |")
    allz = [r["z"] for (a, _), (b, _) in itertools.combinations(groups, 2)
            for r in calibration.compare(a, b) if compared(r) and np.isfinite(r["z"])]
    print(f"\nall pairs: {len(allz)} z, RMS {np.sqrt(np.mean(np.square(allz))):.2f}")


if __name__ == "__main__":
    main()
