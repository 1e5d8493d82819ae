"""Score optimiser probes (bench/probe_c5.py) by the C5c convergence rule, and print only that.

    python bench/probe_c5_eval.py CFG.json PROBE.npz[,RESTART.npz,...] [...]

CFG.json: the c5_metrics job's settings (`params.cfg` of rule c5_metrics) with the training's
`parametrisation` and `log_every` (`params.record`: the probes' record shape).  For each probe: every
run's test risk against its class reference (softlin.claims.c5_eval) and end-of-training
flatness; the number of unconverged runs.  C5a/C5b quantities are computed by the evaluation but
deliberately not printed: the converged variant is chosen on convergence alone.  Probes joined by
commas are random restarts (same stream, other ``init_seed``): each run is taken from the one with
the lowest mean training loss over the last 10% of its logged windows (``c5.best_of_restarts``).
"""
import json
import sys

import numpy as np

from softlin import records
from softlin.claims import c5, c5_convergence, c5_eval
from softlin.params import Params

cfg = json.load(open(sys.argv[1]))
Ls = list(cfg["L"])
for path in sys.argv[2:]:
    jobs = []
    for part in path.split(","):  # each written by bench/probe_c5.py (one restart each)
        jobs.append(records.load(part, c5.job_like({"restarts": 1, **cfg}, Ls)))
    job = c5.best_of_restarts(jobs, cfg["models"], 0.1) if len(jobs) > 1 else jobs[0]
    if len(jobs) > 1:
        print(path, "restart chosen per L:",
              {m: job.runs[m].restart.tolist() for m in cfg["models"]})
    runs = c5.split_runs(job, cfg["models"])
    stack = {m: Params(np.stack([runs[m, L]["U"] for L in Ls]), np.stack([runs[m, L]["v"] for L in Ls]))
             for m in cfg["models"]}
    rows = c5_eval.evaluate(cfg, Ls, stack["softmax"], stack["linear"])
    by_L = {r["L"]: r for r in rows}
    bad = []
    for (m, L), r in sorted(runs.items()):
        c = c5_convergence.run_convergence(r["loss"], r["loss_step"], cfg["convergence"],
                                    by_L[L][f"R_{m}"], by_L[L][f"R_{m}_ref"])
        print(f"{path} {m:7s} L={L:<5d} drop {c['rel_drop_end']:+.4f}  risk/ref {c['risk_over_reference']:.3f}"
              f"  {'ok' if c['converged'] else 'UNCONVERGED'}")
        bad += [] if c["converged"] else [f"{m}_L{L}"]
    print(f"== {path}: {len(bad)} of {len(runs)} runs unconverged: {' '.join(bad)}", flush=True)
