"""C5 rule c5_metrics: test risks per L (CSV) and the criteria's metrics (JSON)."""
import os

os.environ["OMP_NUM_THREADS"] = str(snakemake.threads)

import numpy as np  # noqa: E402

from softlin import records  # noqa: E402
from softlin.claims import c5, c5_eval, c5_summary  # noqa: E402
from softlin.io import save_csv, save_json  # noqa: E402
from softlin.params import Params  # noqa: E402
from softlin.progress import Progress  # noqa: E402

p = snakemake.params
log = Progress(snakemake.log[0], "c5 metrics")
runs = {}
for path, job_Ls in zip(snakemake.input.runs, p.jobs):
    runs.update(c5.split_runs(records.load(path, c5.job_like(p.record, job_Ls)), p.cfg["models"]))
Ls = list(p.cfg["L"])
stack = {m: Params(np.stack([runs[m, L]["U"] for L in Ls]), np.stack([runs[m, L]["v"] for L in Ls]))
         for m in p.cfg["models"]}
rows, blocks = c5_eval.evaluate_with_blocks(p.cfg, Ls, stack["softmax"], stack["linear"], progress=log)
pred = c5_summary.prediction(p.cfg)   # S7's first-order gap constant (None without S7)
save_csv(snakemake.output.table, rows)
losses = {f"{m}_L{L}": runs[m, L]["loss"] for (m, L) in runs}
metrics = c5_summary.summarize(rows, losses, runs[p.cfg["models"][0], Ls[0]]["loss_step"], p.cfg,
                            {f"{m}_L{L}": runs[m, L]["init_seed"] for (m, L) in runs}, blocks=blocks, z=p.z,
                            gap_constant=None if pred is None else pred["gap_constant"])
metrics["prediction"] = pred
metrics["train_seed"], metrics["init_seed"] = p.seeds["seed"], p.seeds["init_seed"]
metrics["eval_seed"] = p.cfg["eval"]["seed"]
metrics["loss_curves"] = {k: {"step": runs[m, L]["loss_step"], "loss": runs[m, L]["loss"]}
                          for (m, L), k in zip(runs, losses)}
save_json(snakemake.output.metrics, metrics)
log("done")
