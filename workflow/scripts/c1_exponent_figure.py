"""C1 rule c1_exponent_figure: the measured exponent across the threshold against -beta and the predicted band."""
from softlin import plots
from softlin.io import load_json
from softlin.progress import Progress

p, o = snakemake.params, snakemake.output
log = Progress(snakemake.log[0], "c1 exponent figure")
m = load_json(snakemake.input.metrics)
plots.c1_exponent(m["summary"]["exponent"], m["protocol"], p.exponent,
                  plots.preset_note(p.preset, p.preset_description), o.png, o.pdf)
log("done")
