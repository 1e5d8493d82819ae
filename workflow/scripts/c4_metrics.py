"""C4 rule c4_metrics: per-setting summaries, the alpha table, aggregates (CSV + JSON)."""

from softlin import records
from softlin.claims import c4, c4_summary
from softlin.io import save_csv, save_json
from softlin.progress import Progress
from softlin.tasks import check_sigma

p = snakemake.params
log = Progress(snakemake.log[0], "c4 metrics")
summaries, alpha_rows = {}, []
for st, path in zip(p.settings, snakemake.input.flows):
    r = records.load(path, c4.setting_like(p.protocol, check_sigma(st["sigma"]).shape[0]))
    s, rows = c4_summary.summarize(st["name"], st["label"], r, p.tol, p.gd_tol)
    summaries[st["name"]] = s
    alpha_rows += rows
    log(f"{st['name']}: ODE dist {s['ode_dist_final']:.2e}, GD dist {s['gd_dist_final']:.2e}, "
        f"n_tasks slope {s['ntasks_slope']:.3f} +/- {s['ntasks_slope_se']:.3f} (jackknife over seeds), "
        f"alpha_c / alpha_max {s.get('alpha_c_ratio', float('nan')):.4g}")
save_csv(snakemake.output.table, [{k: v for k, v in s.items() if not isinstance(v, list)} for s in summaries.values()])
save_csv(snakemake.output.alpha, alpha_rows)
save_json(snakemake.output.metrics, {"settings": summaries, "summary": c4_summary.aggregate(summaries, alpha_rows),
                                      "alpha": alpha_rows, "protocol": p.protocol})
log("done")
