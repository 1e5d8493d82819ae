"""C2 rule c2_figure: gradient gaps vs L; slope vs lambda_max(M)."""

from softlin import plots
from softlin.io import load_csv, load_json
from softlin.progress import Progress

p = snakemake.params
o = snakemake.output
log = Progress(snakemake.log[0], "c2 figure")
metrics = load_json(snakemake.input.metrics)
note = plots.preset_note(p.preset, p.preset_description)
plots.c2_gradients(load_csv(snakemake.input.table), load_csv(snakemake.input.trajectory),
                   metrics, note, p.protocol, p.seed_log_slope, p.cmap, o.gaps, o.gaps_pdf)
plots.c2_threshold(metrics, note, p.protocol, o.sweep, o.sweep_pdf)
log("done")
