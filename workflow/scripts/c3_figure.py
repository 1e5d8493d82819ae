"""C3 rule c3_figure."""

from softlin import plots
from softlin.io import load_csv, load_json
from softlin.progress import Progress

p, o = snakemake.params, snakemake.output
log = Progress(snakemake.log[0], "c3 figure")
plots.c3_transfer(load_csv(snakemake.input.table), plots.preset_note(p.preset, p.preset_description),
                  p.protocol, p.colors, o.png, o.pdf, fits=load_json(snakemake.input.metrics)["fits"])
log("done")
