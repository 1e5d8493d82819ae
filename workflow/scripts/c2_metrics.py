"""C2 rule c2_metrics: gradient gaps, slopes vs -beta, sweep, trajectory maxima (CSV + JSON)."""
import numpy as np
import pandas as pd

from softlin.claims import c2
from softlin.io import load_json, save_json
from softlin.progress import Progress

p = snakemake.params  # noqa: F821
i, o = snakemake.input, snakemake.output  # noqa: F821
log = Progress(snakemake.log[0], "c2 metrics")  # noqa: F821


def arrays(path) -> dict:
    with np.load(path) as f:
        return dict(f)


out = c2.summarize_all(load_json(i.probes), {name: arrays(path) for name, path in zip(p.settings, i.gaps)},
                       {name: arrays(path) for name, path in zip(p.traj_settings, i.traj)},
                       p.sweep["settings"], p.n_boot, p.seed, p.seed_log_slope, p.protocol, z=p.z, progress=log)
pd.DataFrame(out["table"]).to_csv(o.table, index=False, float_format="%.17g")
pd.DataFrame(out["trajectory"]).to_csv(o.trajectory, index=False, float_format="%.17g")
save_json(o.metrics, out["metrics"])
log("done")
