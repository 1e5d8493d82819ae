"""C1 rule c1_measure: per-block mean squared output gaps of one setting."""
import os

os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)  # (before the kernel loads)

from softlin import records
from softlin.claims import c1
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params
setting = load_json(snakemake.input.probes)[snakemake.wildcards.setting]
log = Progress(snakemake.log[0], f"c1 measure {setting['name']}")
out = c1.measure(setting, p.L, p.seed, p.n_blocks, p.n_pairs, p.n_query, progress=log, estimator=p.estimator)
records.save(snakemake.output[0], out)
log("saved")
