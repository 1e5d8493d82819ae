"""C5 rule c5_figure: test risk vs L (with per-run convergence) and the training-loss curves."""

from softlin import plots, plots_c5
from softlin.io import load_csv, load_json
from softlin.progress import Progress

log = Progress(snakemake.log[0], "c5 figure")
p, o = snakemake.params, snakemake.output
metrics = load_json(snakemake.input.metrics)
# the title ends with what the C5 section says this preset is (else what the preset says it is)
note = plots.preset_note(p.preset, p.protocol["description"] or p.preset_description)
plots_c5.c5_risk_vs_L(load_csv(snakemake.input.table), metrics, note, p.protocol, p.curves, o.png, o.pdf)
plots_c5.c5_training(metrics, note, p.protocol, p.cmap, o.training_png, o.training_pdf)
log("done")
