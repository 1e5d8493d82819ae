"""C5 rule c5_figure."""
import pandas as pd

from softlin import plots
from softlin.io import load_json
from softlin.progress import Progress

log = Progress(snakemake.log[0], "c5 figure")  # noqa: F821
plots.c5_risk_vs_L(pd.read_csv(snakemake.input.table), load_json(snakemake.input.metrics),  # noqa: F821
                   snakemake.params.preset, snakemake.params.protocol,  # noqa: F821
                   snakemake.output.png, snakemake.output.pdf)  # noqa: F821
log("done")
