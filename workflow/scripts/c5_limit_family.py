"""C5 rule c5_limit_family: the reference family's gap x L by Monte Carlo (member c*, linear optimum, best member)."""
import numpy as np

from softlin.claims import c5, c5_limit, c5_summary
from softlin.io import save_json
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c5 limit family")
cfg, lim = p.cfg, p.cfg["limit"]
task, pred = c5.task_of(cfg), c5_summary.prediction(cfg)
if pred is None:
    raise ValueError("c5_limit needs the symbolic derivation S7 (symbolic.export.s7)")
out = c5_limit.family_blocks(task, lim, pred["c_star"], progress=log)
L = out["L"]
n_scan = out["gh"].shape[1]
ex, idx = c5_limit.best_member_cross_fit(out["gh"], out["gg"], out["hh"], out["n"])
lin_exact = [c5_limit.baselines.linear_class_risk(int(x), task.sigma_prompt, task.sigma_query, task.noise_var,
                                                  task.w_var) for x in L]
save_json(snakemake.output.json, {
    "L": L.tolist(), "n_blocks": lim["n_blocks"], "block_prompts": lim["block_prompts"], "seed": lim["seed"],
    "c_star": pred["c_star"], "gap_constant": pred["gap_constant"], "K_soft_star": pred["K_soft_star"],
    "K_lin": pred["K_lin"], "noise_var": task.noise_var,
    "soft_L": out["soft"].tolist(), "lin_L": out["lin"].tolist(), "gap_L": out["gap"].tolist(),
    "lin_L_exact": [float(x * (r - task.noise_var)) for x, r in zip(L, lin_exact)],
    "scan_L": L[:n_scan].tolist(), "scan_t": list(lim["scan_t"]),
    "best_gap_L": (L[:n_scan] * ex - out["lin"][:, :n_scan]).tolist(),
    "best_t": np.asarray(lim["scan_t"])[idx].tolist()})
log("done")
