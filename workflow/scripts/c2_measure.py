"""C2 rule c2_measure: per-block gradient differences at the C1 probes (and the sweep) of one setting."""
import os

os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)  # (before the kernel loads)

from softlin import records
from softlin.claims import c2
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params
setting = load_json(snakemake.input.probes)[snakemake.wildcards.setting]
log = Progress(snakemake.log[0], f"c2 measure {setting['name']}")
probes = c2.probes_of(setting, p.sweep)
out = c2.measure(setting, probes, p.L, p.seed, p.n_blocks, p.n_pairs, p.n_query, progress=log, estimator=p.estimator)
records.save(snakemake.output[0], out)
log("saved")
