"""C5 rule c5_figure: test risk vs L (with per-run convergence) and the training-loss curves."""
import pandas as pd

from softlin import plots
from softlin.io import load_json
from softlin.progress import Progress

log = Progress(snakemake.log[0], "c5 figure")  # noqa: F821
p, o = snakemake.params, snakemake.output  # noqa: F821
metrics = load_json(snakemake.input.metrics)  # noqa: F821
plots.c5_risk_vs_L(pd.read_csv(snakemake.input.table), metrics, p.preset, p.protocol, o.png, o.pdf)  # noqa: F821
plots.c5_training(metrics, p.preset, p.protocol, o.training_png, o.training_pdf)
log("done")
