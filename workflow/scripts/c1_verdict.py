"""C1 rule c1_verdict: predeclared criteria on the C1 metrics."""
from softlin import verdict
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params  # noqa: F821
log = Progress(snakemake.log[0], "c1 verdict")  # noqa: F821
metrics = load_json(snakemake.input.metrics)  # noqa: F821
title = f"output concentration of softmax(L) on linear(inf) (preset {p.preset})"
verdict.publish("c1", title, list(p.criteria), metrics, dict(snakemake.output.items()),  # noqa: F821
                log=log, checks=list(p.checks), z=p.z)
