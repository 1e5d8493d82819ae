"""C3 rule c3_metrics: per-seed rows, seed averages, fits with their standard errors across seeds (CSV + JSON)."""

from softlin import records
from softlin.claims import c3
from softlin.io import save_csv, save_json
from softlin.progress import Progress
from softlin.tasks import Tasks

p = snakemake.params
log = Progress(snakemake.log[0], "c3 metrics")


def runs():
    """(run, its trajectories, held-out tasks), one run at a time."""
    like = c3.runs_like(p.record)
    for run, traj_path, eval_path in zip(p.runs, snakemake.input.traj, snakemake.input.eval):
        yield run, records.load(traj_path, like), Tasks.load(eval_path)


out = c3.summarize_runs(runs(), p.L, p.eval_L, p.protocol, progress=log, z=p.z, rate=dict(p.offblock_rate))
save_csv(snakemake.output.table, out["table"])
save_csv(snakemake.output.per_seed, out["per_seed"])
save_json(snakemake.output.metrics, out["metrics"])
log("done")
