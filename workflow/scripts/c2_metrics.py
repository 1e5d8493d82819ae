"""C2 rule c2_metrics: gradient gaps, slopes vs -beta, sweep, trajectory maxima (CSV + JSON)."""
import json

import numpy as np
import pandas as pd

from softlin.claims import c2
from softlin.io import load_json, save_json
from softlin.progress import Progress

p = snakemake.params  # noqa: F821
log = Progress(snakemake.log[0], "c2 metrics")  # noqa: F821
design = load_json(snakemake.input.probes)  # noqa: F821
rows, fits = [], {}
for name, path in zip(p.settings, snakemake.input.gaps):  # noqa: F821
    with np.load(path) as f:
        diff, Ls, probes = f["diff"], f["Ls"], json.loads(str(f["probes_json"]))
        msq = {"U": f["msq_U"], "v": f["msq_v"]}
    r, fi = c2.summarize(design[name], probes, diff, Ls, p.n_boot, p.seed, msq)
    rows += r
    fits.update(fi)
sweep = {name: c2.sweep_summary(fits, name) for name in p.sweep["settings"]}
traj, traj_rows = {}, []
for name, path in zip(p.traj_settings, snakemake.input.traj):  # noqa: F821
    with np.load(path) as f:
        arrays = dict(f)
    traj[name] = c2.trajectory_fit(arrays["Ls"], arrays)
    traj[name]["seed_log_slope"] = p.seed_log_slope
    for j, L in enumerate(arrays["Ls"]):
        traj_rows.append(dict(setting=name, L=int(L), **{f"max_{k}": float(arrays[f"max_{k}"][j])
                                                          for k in ("U", "v", "full")},
                              **{f"argmax_step_{k}": int(arrays[f"argmax_{k}"][j]) for k in ("U", "v", "full")}))
    log(f"trajectory {name}: slope {traj[name]['full']['slope_full']:.3f} (seed log {p.seed_log_slope})")
for k, f in fits.items():
    log(f"{k}: lambda {f['lambda_max']:.3f} U {f['U']['slope']:.3f} v {f['v']['slope']:.3f} (pred {-f['beta']:.3f})")
pd.DataFrame(rows).to_csv(snakemake.output.table, index=False, float_format="%.17g")  # noqa: F821
pd.DataFrame(traj_rows).to_csv(snakemake.output.trajectory, index=False, float_format="%.17g")  # noqa: F821
save_json(snakemake.output.metrics, {"fits": fits, "summary": c2.aggregate(fits), "sweep": sweep,  # noqa: F821
                                      "trajectory": traj, "protocol": p.protocol})
log("done")
