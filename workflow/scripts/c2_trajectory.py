"""C2 rule c2_trajectory: gradient gaps along C3's linear(inf) trajectories of one setting, one record
per C3 seed (the seed log's C2e)."""
import os

os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)  # (before the kernel loads)

from softlin import records
from softlin.claims import c2, c3
from softlin.progress import Progress
from softlin.tasks import Tasks

w, p = snakemake.wildcards, snakemake.params
log = Progress(snakemake.log[0], f"c2 trajectory {w.setting}")
for seed, traj_path, tasks_path, out_path in zip(p.seeds, snakemake.input.traj, snakemake.input.tasks, snakemake.output):
    traj = records.load(traj_path, c3.runs_like(p.c3_record))
    out = c2.along_trajectory(traj.limit, Tasks.load(tasks_path), p.L, p.n_blocks,
                              progress=lambda m, s=seed: log(f"seed {s}: {m}"), n_prompts=p.n_prompts,
                              prompt_seed=p.prompt_seed)
    records.save(out_path, out)
    log(f"seed {seed}: saved")
