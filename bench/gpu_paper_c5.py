"""Train the C5 `paper` preset on a GPU for a time budget, checkpointing (the XLA path of the stream).

    python bench/gpu_paper_c5.py CFG.json CODE_VERSION CHECKPOINT BUDGET_S

CFG.json: the c5_train job's settings (its `params.cfg`); CODE_VERSION: the digest the job uses
(symbolic.cache.files_digest of the rule's code inputs).  The run resumes from CHECKPOINT if it
exists and stops after the first chunk that ends past BUDGET_S seconds; a c5_train job on the
CPU then resumes from the checkpoint (same stream, same settings; see the README).
"""
import json
import sys
import time

from softlin import online
from softlin.claims import c5


class OutOfTime(Exception):
    pass


cfg = json.load(open(sys.argv[1]))
code_version, ck, budget = sys.argv[2], sys.argv[3], float(sys.argv[4])
t0 = time.perf_counter()


def progress(msg):
    print(f"[{time.perf_counter() - t0:.0f} s] {msg[:200]}", flush=True)
    if time.perf_counter() - t0 > budget:
        raise OutOfTime


try:
    online.train(c5.task_of(cfg), cfg["L"], cfg["models"], parametrisation=cfg["parametrisation"],
                 seed=cfg["seed"], init_seed=cfg["init_seed"], steps=cfg["steps"], batch=cfg["batch"],
                 optimizer=c5.optimizer_of(cfg), streams=cfg["streams"], log_every=cfg["log_every"],
                 chunk=cfg["chunk"], sample_dtype=cfg["sample_dtype"], checkpoint=ck,
                 code_version=code_version, progress=progress)
    print("finished", flush=True)
except OutOfTime:
    print("stopped at the time budget", flush=True)
