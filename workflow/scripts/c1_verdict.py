"""C1 rule c1_verdict: predeclared criteria on the C1 metrics, and the task blocks an undecided
test would need."""
from softlin import verdict, verdict_report
from softlin.claims import curves
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c1 verdict")
metrics = load_json(snakemake.input.metrics)
title = f"output concentration of softmax(L) on linear(inf) (preset {p.preset})"
n_blocks = metrics["protocol"]["n_blocks"]
need = curves.needed([verdict.evaluate(c, metrics, p.z) for c in p.criteria],
                     lambda path, label: (n_blocks, "task blocks"), metrics)
for r in need:
    log(f"{r['id']} {r['measured']}[{r['label']}]: undecided, needs {r['n_needed']} task blocks (now {r['n']})")
verdict_report.publish("c1", title, list(p.criteria), metrics, dict(snakemake.output.items()),
                extra_md=curves.SE_NOTE + "\n" + curves.estimator_markdown(metrics["fits"])
                + "\n"
                + curves.needed_markdown(need), log=log, checks=list(p.checks), z=p.z)
