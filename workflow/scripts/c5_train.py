"""C5 rule c5_train: online training of both models at a group of prompt lengths (``L10+20``: one
compiled program on one batch stream), resuming from its checkpoint if one exists."""
import os

os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)  # (before the kernel loads)

from softlin import records  # noqa: E402
from softlin.claims import c5  # noqa: E402
from softlin.progress import Progress  # noqa: E402
from symbolic.cache import files_digest  # noqa: E402

p = snakemake.params
w = snakemake.wildcards
log = Progress(snakemake.log[0], f"c5 train L={w.c5_L}")
# a checkpoint resumes only under the same package code (the rule's code inputs) and settings
out = c5.train_run(p.cfg, p.Ls, checkpoint=p.checkpoint,
                   code_version=files_digest(snakemake.input.code), progress=log)
records.save(snakemake.output[0], out)
log("saved")
