"""C3 rule c3_metrics: per-seed rows, seed averages and fits (CSV + JSON)."""
import numpy as np
import pandas as pd

from softlin.claims import c3
from softlin.io import save_json
from softlin.progress import Progress
from softlin.tasks import Tasks

p = snakemake.params  # noqa: F821
log = Progress(snakemake.log[0], "c3 metrics")  # noqa: F821
per_seed, infos, by_setting = [], [], {}
for run, traj_path, eval_path in zip(p.runs, snakemake.input.traj, snakemake.input.eval):  # noqa: F821
    st = run["setting"]
    with np.load(traj_path) as traj:
        traj = dict(traj)
    rows, info = c3.seed_rows(traj, Tasks.load(eval_path), np.asarray(st["sigma"]), p.L, p.eval_L,
                              st["label"], st["token_kind"], run["seed"])
    per_seed += rows
    infos.append(info)
    by_setting.setdefault(st["name"], []).append(rows)
    log(f"{st['name']} seed {run['seed']}: theta_inf R {info['R_init']:.3e} -> {info['R_final']:.3e}")

averaged, fits = [], {}
for name, rows_by_seed in by_setting.items():
    avg = c3.average_seeds(rows_by_seed)
    averaged += avg
    label = f"{avg[0]['setting']}_{avg[0]['token_kind']}"
    fits[label] = c3.fit_block(avg, label)

eval_col = f"R_pop_at_{p.eval_L}"
columns = ["setting", "token_kind", "L", "n_seed", "D_inf_max", "D_inf_max_sem", "D_linL_max",
           "D_linL_max_sem", "R_pop_at_L", "R_pop_at_L_sem", eval_col, eval_col + "_sem",
           "dist_bayes", "dist_bayes_sem", "offblock_U", "offblock_v", "R_init", "theta_inf_norm"]
table = pd.DataFrame(averaged).rename(columns={"R_pop_at_eval": eval_col, "R_pop_at_eval_sem": eval_col + "_sem"})
table[columns].to_csv(snakemake.output.table, index=False, float_format="%.17g")  # noqa: F821
pd.DataFrame(per_seed).rename(columns={"R_pop_at_eval": eval_col}).to_csv(
    snakemake.output.per_seed, index=False, float_format="%.17g")  # noqa: F821
offblock = c3.offblock_summary(per_seed, infos)
save_json(snakemake.output.metrics, {"fits": fits, "infos": infos, "offblock": offblock,  # noqa: F821
                                      "protocol": p.protocol, "L": p.L})
log("done")
