"""C3 rule c3_sample: training and evaluation tasks of one (setting, seed)."""
import numpy as np

from softlin.claims import c3
from softlin.progress import Progress
from softlin.tasks import sample

p = snakemake.params
st = p.setting
seed = int(snakemake.wildcards.seed)
log = Progress(snakemake.log[0], f"c3 sample {st['name']} seed {seed}")
c3.training_tasks(st, seed, p.d, p.n_pairs, p.n_query, p.l_max).save(snakemake.output.train)
ev = p.eval
sample(seed + ev["seed_offset"], p.d, np.asarray(st["sigma"]), ev["n_pairs"], ev["n_query"], ev["L"],
       st["token_kind"]).save(snakemake.output.eval)
log("done")
