"""Optimiser probe for C5's converged variant: training only (no test risk is computed here).

    python bench/probe_c5.py CFG.json OUTDIR NAME:LR:SCHEDULE[:MOMENTUM] [...]

CFG.json: the c5_train job's settings (the `default` preset's, written by `snakemake` as the rule's
`params.cfg`, or by hand); each candidate overrides only the optimiser and trains every model at
every L of the config on the same stream, then writes OUTDIR/<candidate>.npz in the c5_train
job's format.  `bench/probe_c5_eval.py` scores the files by the C5c convergence rule and prints
nothing else.  On a GPU (SOFTLIN_UNROLL=1) a 40 000-step candidate takes about a minute.
"""
import json
import os
import sys
import time

from softlin import records
from softlin.claims import c5

cfg = json.load(open(sys.argv[1]))
out_dir = sys.argv[2]
os.makedirs(out_dir, exist_ok=True)
for spec in sys.argv[3:]:
    name, lr, sched, *mom = spec.split(":")
    # the job's (validated) optimiser with the candidate's name, rate, schedule, momentum, no warm-up
    opt = {**cfg["optimizer"], "name": name, "lr": float(lr), "schedule": sched,
           "momentum": float(mom[0]) if mom else 0.0, "warmup": 0}
    t = time.perf_counter()
    job = c5.train_run({"restarts": 1, "restart_select_frac": 0.1, **cfg, "optimizer": opt}, cfg["L"])
    records.save(os.path.join(out_dir, f"{spec.replace(':', '_')}.npz"), job)
    print(f"== {spec}: trained in {time.perf_counter() - t:.0f} s", flush=True)
