"""C1 rule c1_figure."""
import pandas as pd

from softlin import plots
from softlin.progress import Progress

log = Progress(snakemake.log[0], "c1 figure")  # noqa: F821
plots.c1_concentration(pd.read_csv(snakemake.input.table), snakemake.params.preset,  # noqa: F821
                       snakemake.params.protocol, snakemake.output.png, snakemake.output.pdf)  # noqa: F821
log("done")
