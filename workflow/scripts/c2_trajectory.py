"""C2 rule c2_trajectory: C3's linear(inf) run on each C3 seed's training tasks, and the gradient gaps
along it (the seed log's C2e), one record per seed."""
import os

os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)  # (before the kernel loads)

from softlin import records
from softlin.claims import c2e, c3
from softlin.progress import Progress
from softlin.tasks import Tasks

w, p = snakemake.wildcards, snakemake.params
log = Progress(snakemake.log[0], f"c2 trajectory {w.setting}")
for seed, tasks_path, out_path in zip(p.seeds, snakemake.input.tasks, snakemake.output):
    tasks = Tasks.load(tasks_path)
    limit = c3.train_limit(tasks, p.lr, p.steps, p.record_every, p.convention)
    log(f"seed {seed}: linear(inf) trained ({p.steps} steps)")
    out = c2e.along_trajectory(limit, tasks, p.L, p.n_blocks, progress=lambda m, s=seed: log(f"seed {s}: {m}"),
                              n_prompts=p.n_prompts, prompt_seed=p.prompt_seed)
    records.save(out_path, out)
    log(f"seed {seed}: saved")
