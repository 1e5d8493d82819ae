"""C4 rule c4_verdict: predeclared criteria, with the alpha table as an extra section."""
import pandas as pd

from softlin import verdict
from softlin.claims import c4
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params  # noqa: F821
log = Progress(snakemake.log[0], "c4 verdict")  # noqa: F821
metrics = load_json(snakemake.input.metrics)  # noqa: F821
extra = c4.alpha_table_md(pd.read_csv(snakemake.input.alpha).to_dict("records"))  # noqa: F821
title = f"tractable infinite-prompt dynamics (preset {p.preset})"
verdict.publish("c4", title, list(p.criteria), metrics, dict(snakemake.output.items()),  # noqa: F821
                extra, log=log, checks=list(p.checks), z=p.z)
