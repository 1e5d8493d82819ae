"""C1 rule c1_figure."""

from softlin import plots
from softlin.io import load_csv
from softlin.progress import Progress

p, o = snakemake.params, snakemake.output  # noqa: F821
log = Progress(snakemake.log[0], "c1 figure")  # noqa: F821
plots.c1_concentration(load_csv(snakemake.input.table), plots.preset_note(p.preset, p.preset_description),  # noqa: F821
                       p.protocol, p.cmap, o.png, o.pdf)
log("done")
