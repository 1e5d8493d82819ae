"""C2 rule c2_trajectory: per task seed, C3's training tasks drawn (bit for bit c3_sample's) and C3's
linear(inf) run trained on them, and the gradient gaps along it (the seed log's C2e), one record per seed."""
import os

os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)  # (before the kernel loads)

from softlin import records
from softlin.claims import c2e, c3
from softlin.progress import Progress

w, p = snakemake.wildcards, snakemake.params
log = Progress(snakemake.log[0], f"c2 trajectory {w.setting}")
for seed, out_path in zip(p.seeds, snakemake.output, strict=True):
    tasks = c3.training_tasks(p.setting, seed, p.d, p.n_pairs, p.n_query, p.l_max)
    limit = c3.train_limit(tasks, p.lr, p.steps, p.record_every, p.convention)
    log(f"seed {seed}: tasks drawn, linear(inf) trained ({p.steps} steps)")
    out = c2e.along_trajectory(limit, tasks, p.L, p.n_blocks, progress=lambda m, s=seed: log(f"seed {s}: {m}"),
                               n_prompts=p.n_prompts, prompt_seed=p.prompt_seed)
    records.save(out_path, out)
    log(f"seed {seed}: saved")
