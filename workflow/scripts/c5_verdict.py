"""C5 rule c5_verdict: predeclared criteria on the metrics."""
from softlin import verdict
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params  # noqa: F821
log = Progress(snakemake.log[0], "c5 verdict")  # noqa: F821
metrics = load_json(snakemake.input.metrics)  # noqa: F821
proto = p.protocol
scale = "" if not proto["scaled_down"] else (
    f"; SCALED DOWN: {proto['steps']} steps (paper 300000), lr {proto['lr']}, L = {proto['L']}")
title = f"the paper's Sec. 6 experiment (preset {p.preset}{scale})"
extra = ("Protocol: " + ", ".join(f"{k} = {v}" for k, v in proto.items()) + "\n")
verdict.publish("c5", title, list(p.criteria), metrics, snakemake.output,  # noqa: F821
                extra, log=log)
