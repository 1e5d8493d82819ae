"""Diagnostic: how much of the pooled C2e gap is prompt fluctuation (issue 31, seventh pass; not a test).

For each C2e record (``results/c2/trajectory/{setting}_s{seed}.npz``, ``k`` prompt draws), the squared norm
of the difference pooled over the draws, ``||d_bar||^2``, has expectation ``||b||^2 + s^2 / (48 k)``; its
prompt term is estimated by ``sum_r ||d_r - d_bar||^2 / (k (k - 1))`` (``d_r`` a draw's mean over its
blocks).  Printed per setting and L: the term's share of ``||d_bar||^2`` at the step where the pooled gap
peaks, averaged over the seeds -- the part of the former (pooled) reading that depended on ``k``.

    PYTHONPATH=$PWD python bench/diag_c2e_prompt_share.py results [--n-prompts K]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from softlin import records  # noqa: E402
from softlin.claims import c2e  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", type=Path, help="a results folder with c2/trajectory/*.npz")
    ap.add_argument("--n-prompts", type=int, default=None, help="draws per record (default: the config's)")
    args = ap.parse_args()
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    c3, t = cfg["c3"], cfg["c2"]["trajectory"]
    k = args.n_prompts or t["n_prompts"]
    if k < 2:
        raise SystemExit("the prompt term needs >= 2 draws per record")
    like = c2e.along_like(dict(c3, n_blocks=t["n_blocks"], n_prompts=k))
    print(f"L: {c3['L']}")
    for setting in t["settings"]:
        shares = []
        for path in sorted((args.results / "c2" / "trajectory").glob(f"{setting}_s*.npz")):
            draws = c2e.per_draw(records.load(path, like).block_diff, k)       # (k, n_rec, n_L, K)
            mean = draws.mean(axis=0)
            pooled = (mean ** 2).sum(axis=-1)                                   # (n_rec, n_L)
            term = ((draws - mean) ** 2).sum(axis=-1).sum(axis=0) / (k * (k - 1))
            i = pooled.argmax(axis=0)
            shares.append(term[i, np.arange(len(i))] / pooled[i, np.arange(len(i))])
        print(f"{setting} ({len(shares)} seeds, {k} draws): prompt term's share of the pooled squared gap "
              f"at its peak step: {np.round(np.mean(shares, axis=0), 2).tolist()}")


if __name__ == "__main__":
    main()
