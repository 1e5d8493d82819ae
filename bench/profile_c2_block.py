"""Where a C2 measure block's time goes (issue 31; not a test): one setting's blocks with the default
estimator, timed by part with each compiled call waited for, in one process.

Parts: the block's draw (``concentration.task_blocks``), the planted prompts and their weights
(``planted.draw``, ``planted.likelihood_ratio``), the tilted queries (``importance.tilted_queries``), the
moment tokens (``task_integral.moment_tokens``), the prefix kernel (``task_integral._covariate_moments``)
and the Gauss-Hermite terms (``task_integral._integrated_terms``); the rest is Python, dispatch and the
host-side means.  The first blocks compile and are not counted.

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python bench/profile_c2_block.py [--setting isotropic] [--blocks 32]
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

from softlin import concentration, importance, planted, task_integral  # noqa: E402
from softlin._jax import jax  # noqa: E402
from softlin.claims import c2  # noqa: E402

PARTS = {  # (module, attribute, label)
    "draw": (concentration, "sample", "block draw (tasks.sample)"),
    "plant": (planted, "draw", "planted prompts (planted.draw)"),
    "lr": (planted, "likelihood_ratio", "prompt weights (planted.likelihood_ratio)"),
    "tilt": (importance, "tilted_queries", "tilted queries (importance.tilted_queries)"),
    "tokens": (task_integral, "moment_tokens", "moment tokens (task_integral.moment_tokens)"),
    "kernel": (task_integral, "_covariate_moments", "prefix kernel (_covariate_moments)"),
    "terms": (task_integral, "_integrated_terms", "Gauss-Hermite terms (_integrated_terms)"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setting", default="isotropic")
    ap.add_argument("--blocks", type=int, default=32)
    args = ap.parse_args()
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    c2cfg = cfg["c2"]
    Ls = [2 ** j for j in range(c2cfg["log2_L_min"], c2cfg["log2_L_max"] + 1)]
    st = design(cfg)[args.setting]
    sweep = c2cfg["sweep"]["lambda"] if args.setting in c2cfg["sweep"]["settings"] else []
    probes = c2.probes_of(st, sweep)

    def run(n):
        return c2.measure(st, probes, Ls, 777, n, c2cfg["n_pairs"], c2cfg["n_query"], progress=lambda m: None,
                          estimator=c2cfg["estimator"])
    run(2)                                                   # compiles
    spent = dict.fromkeys(PARTS, 0.0)
    for key, (mod, name, _) in PARTS.items():
        fn = getattr(mod, name)

        def timed(*a, _fn=fn, _key=key, **k):
            t0 = time.perf_counter()
            out = jax.block_until_ready(_fn(*a, **k))
            spent[_key] += time.perf_counter() - t0
            return out
        setattr(mod, name, timed)
    t0 = time.perf_counter()
    run(args.blocks)
    total = time.perf_counter() - t0
    print(f"{args.setting}: {len(probes)} probes, {args.blocks} blocks, {total / args.blocks * 1e3:.1f} ms per block")
    for key, (_, _, label) in PARTS.items():
        print(f"  {label:48s} {spent[key] / args.blocks * 1e3:7.1f} ms  {spent[key] / total:6.1%}")
    rest = total - sum(spent.values())
    print(f"  {'the rest (Python, dispatch, host-side means)':48s} {rest / args.blocks * 1e3:7.1f} ms  {rest / total:6.1%}")


if __name__ == "__main__":
    main()
