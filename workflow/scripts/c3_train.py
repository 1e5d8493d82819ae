"""C3 rule c3_train: all trajectories of one (setting, seed)."""
import os

os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)  # (before the kernel loads)

from softlin import records
from softlin.claims.c3 import train_setting
from softlin.progress import Progress
from softlin.tasks import Tasks

p = snakemake.params
w = snakemake.wildcards
log = Progress(snakemake.log[0], f"c3 train {w.setting} seed {w.seed}")
tasks = Tasks.load(snakemake.input.tasks)
r = p.record  # the record's shape (C3_RECORD, c3_transfer.smk): what c3_metrics reads it back against
out = train_setting(tasks, r["L"], p.lr, r["steps"], r["record_every"], p.convention, progress=log,
                    seed_order=r["offblock_seed_order"])
records.save(snakemake.output[0], out)
log("saved")
