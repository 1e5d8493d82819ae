"""C2 rule c2_trajectory: gradient gaps along C3's linear(inf) trajectory (the seed log's C2e)."""
import os

os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)  # (before the kernel loads)

from softlin import records
from softlin.claims import c2, c3
from softlin.progress import Progress
from softlin.tasks import Tasks

w = snakemake.wildcards
log = Progress(snakemake.log[0], f"c2 trajectory {w.setting} seed {w.seed}")
traj = records.load(snakemake.input.traj, c3.runs_like(snakemake.params.c3_record))
p = snakemake.params
out = c2.along_trajectory(traj.limit, Tasks.load(snakemake.input.tasks), p.L, p.n_blocks, progress=log,
                         n_prompts=p.n_prompts, prompt_seed=p.prompt_seed)
records.save(snakemake.output[0], out)
log("saved")
