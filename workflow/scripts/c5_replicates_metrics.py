"""C5 rule c5_replicates_metrics: per-L mean +/- se across replicates (CSV) and the criteria's metrics (JSON)."""

from softlin.claims import c5_replicates
from softlin.io import load_csv, load_json, save_csv, save_json
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c5 replicates metrics")
tables = [load_csv(f) for f in snakemake.input.tables]
seed_metrics = [load_json(f) for f in snakemake.input.metrics]
if len(tables) < 2:
    raise ValueError("c5.replicates: the across-seed errors need at least 2 replicates")
pred = seed_metrics[0].get("prediction")
save_csv(snakemake.output.table, c5_replicates.per_L(tables, p.names))
out = c5_replicates.aggregate(tables, seed_metrics, p.names, p.noise, None if pred is None else pred["gap_constant"])
out["prediction"] = pred
save_json(snakemake.output.metrics, out)
log("done")
