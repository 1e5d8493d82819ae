"""C4 rule c4_figure."""
import numpy as np

from softlin import plots
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params  # noqa: F821
log = Progress(snakemake.log[0], "c4 figure")  # noqa: F821
flows = {}
for st, path in zip(p.settings, snakemake.input.flows):  # noqa: F821
    with np.load(path) as f:
        flows[st["label"]] = dict(f)
plots.c4_dynamics(flows, load_json(snakemake.input.metrics), plots.preset_note(p.preset, p.preset_description),  # noqa: F821
                  p.protocol, snakemake.output.png, snakemake.output.pdf)  # noqa: F821
log("done")
