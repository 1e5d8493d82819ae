"""C1's and C2's measure blocks in two working copies side by side (not a test): for each measure job
(claim, setting) the seconds per block of each copy, interleaved (old, new, old, new) in fresh
processes on one thread so that a shared machine's load falls on both alike, their ratio, and whether
the two copies' records are the same bits.  The design comes from config/config.yaml (each copy its
own), the blocks from seed 777; the first block of each process compiles and is not counted.

    OMP_NUM_THREADS=1 python bench/bench_measure_blocks.py OLD_COPY NEW_COPY [--blocks 12] [--rounds 2]
        [--jobs c1:isotropic c2:isotropic ...]

Each copy is a working tree whose package imports with ``PYTHONPATH=<copy>`` (e.g. a ``git worktree add``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ONE = r"""
import hashlib, json, sys, time
import numpy as np, yaml
sys.path.insert(0, "bench")
from diag_c1c2_prompt_level import design
from softlin.claims import c1, c2
claim, setting, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = yaml.safe_load(open("config/config.yaml"))
sec = cfg[claim]
Ls = [2 ** j for j in range(sec["log2_L_min"], sec["log2_L_max"] + 1)]
st = design(cfg)[setting]
if claim == "c1":
    run = lambda k: c1.measure(st, Ls, 777, k, sec["n_pairs"], sec["n_query"], progress=lambda m: None,
                               estimator=sec["estimator"])
else:
    probes = c2.probes_of(st, sec["sweep"]["lambda"] if setting in sec["sweep"]["settings"] else [])
    run = lambda k: c2.measure(st, probes, Ls, 777, k, sec["n_pairs"], sec["n_query"], progress=lambda m: None,
                               estimator=sec["estimator"])
run(1)
t = time.perf_counter()
out = run(n)
dt = (time.perf_counter() - t) / n
digest = hashlib.sha256(b"".join(np.ascontiguousarray(np.asarray(a)).tobytes() for a in out)).hexdigest()[:12]
print(json.dumps(dict(seconds=dt, digest=digest)))
"""


def once(copy: str, claim: str, setting: str, blocks: int) -> dict:
    env = dict(os.environ, PYTHONPATH=copy, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", ONE, claim, setting, str(blocks)], cwd=copy, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--blocks", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jobs", nargs="+", default=["c1:isotropic", "c1:exponent", "c2:isotropic", "c2:nondiagonal"])
    args = ap.parse_args()
    print("| job | old ms/block | new ms/block | old / new | same bits |\n|---|---|---|---|---|")
    for job in args.jobs:
        claim, setting = job.split(":")
        t = {"old": [], "new": []}
        digests = {}
        for _ in range(args.rounds):
            for name in ("old", "new"):
                r = once(getattr(args, name), claim, setting, args.blocks)
                t[name].append(r["seconds"])
                digests.setdefault(name, r["digest"])
        old, new = min(t["old"]), min(t["new"])
        print(f"| {job} | {1e3 * old:.1f} | {1e3 * new:.1f} | {old / new:.2f}x | "
              f"{'yes' if digests['old'] == digests['new'] else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
