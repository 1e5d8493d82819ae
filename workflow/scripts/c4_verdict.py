"""C4 rule c4_verdict: criterion C4c and the consistency checks, with the boundary, alpha and n_tasks tables."""

from softlin import verdict_report
from softlin.claims import c4_summary
from softlin.io import load_csv, load_json
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c4 verdict")
metrics = load_json(snakemake.input.metrics)
band = next((t["value"] for c in list(p.checks) + list(p.criteria) for t in c["all"]
             if t["measured"] == "summary.ntasks_slope"), [-0.65, -0.35])
extra = "\n".join([c4_summary.boundary_md(metrics["settings"], p.protocol["alpha_boundary"], p.protocol["alpha_sweep"]),
                   c4_summary.alpha_table_md(load_csv(snakemake.input.alpha).to_dict("records")),
                   c4_summary.ntasks_md(metrics["settings"], band, p.z)])
title = f"tractable infinite-prompt dynamics (preset {p.preset})"
verdict_report.publish("c4", title, list(p.criteria), metrics, dict(snakemake.output.items()),
                extra, log=log, checks=list(p.checks), z=p.z)
