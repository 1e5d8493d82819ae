"""C4 rule c4_figure."""
from softlin import plots, records
from softlin.claims import c4
from softlin.io import load_json
from softlin.progress import Progress
from softlin.tasks import check_sigma

p = snakemake.params
log = Progress(snakemake.log[0], "c4 figure")
flows = {}
for st, path in zip(p.settings, snakemake.input.flows):
    flows[st["label"]] = records.load(path, c4.setting_like(p.protocol, check_sigma(st["sigma"]).shape[0]))
plots.c4_dynamics(flows, load_json(snakemake.input.metrics), plots.preset_note(p.preset, p.preset_description),
                  p.protocol, snakemake.output.png, snakemake.output.pdf)
log("done")
