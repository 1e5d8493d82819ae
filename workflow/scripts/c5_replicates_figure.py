"""C5 rule c5_replicates_figure: risks, gap and gap x L across replicates with the S7 prediction."""

from softlin import plots_c5
from softlin.io import load_csv, load_json
from softlin.progress import Progress

log = Progress(snakemake.log[0], "c5 replicates figure")
p, o = snakemake.params, snakemake.output
plots_c5.c5_replicates(load_csv(snakemake.input.table), load_json(snakemake.input.metrics),
                    p.protocol, p.curves, o.png, o.pdf)
log("done")
