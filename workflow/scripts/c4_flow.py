"""C4 rule c4_flow: population GD, ODE, reduced flow, sampled GD, n_tasks scaling, alpha sweep."""
import numpy as np

from softlin import records
from softlin.claims import c4
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], f"c4 flow {p.setting['name']}")
out = c4.run_setting(np.asarray(p.setting["sigma"]), p.cfg, progress=log)
records.save(snakemake.output[0], out)
log("saved")
