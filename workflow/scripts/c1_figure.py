"""C1 rule c1_figure."""

from softlin import plots
from softlin.io import load_csv
from softlin.progress import Progress

p, o = snakemake.params, snakemake.output
log = Progress(snakemake.log[0], "c1 figure")
plots.c1_concentration(load_csv(snakemake.input.table), plots.preset_note(p.preset, p.preset_description),
                       p.protocol, p.cmap, o.png, o.pdf)
log("done")
