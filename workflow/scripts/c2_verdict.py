"""C2 rule c2_verdict: predeclared criteria on the C2 metrics, and the replication an undecided
test would need."""
from softlin import verdict, verdict_report
from softlin.claims import curves
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c2 verdict")
metrics = load_json(snakemake.input.metrics)
title = f"gradient concentration and its stability along training (preset {p.preset})"


def units(path: str):
    """The independent replicates behind a metric: prompts of C3's antithetic training pairs along the
    trajectory (C3's own and fresh draws, independent given the trajectory; jackknifed in blocks of
    pairs), C2's task blocks elsewhere."""
    if path.startswith("trajectory."):
        t = metrics["trajectory"][path.split(".")[1]]
        return t["n_pairs"] * t.get("n_prompts", 1), "prompts of C3's training pairs"
    return metrics["protocol"]["n_blocks"], "task blocks"


TRAJ_NOTE = (
    "\nAlong C3's linear(inf) trajectory (C2e) the standard errors come from a jackknife over blocks of "
    "C3's antithetic training pairs, each block once with C3's own prompts and once per fresh prompt draw "
    "(`c2.trajectory.n_prompts`; the same w and queries, new covariates): linear(inf) reads only w and the "
    "queries, so given the trajectory the prompts of the blocks are independent, and the error is that of "
    "the prompt sampling along this one trajectory (C3's first seed). The trajectory's own variation with "
    "the training tasks would need C3's other seeds (their linear(inf) runs).\n")
need = curves.needed([verdict.evaluate(c, metrics, p.z) for c in p.criteria], units)
for r in need:
    log(f"{r['id']} {r['measured']}[{r['label']}]: undecided, needs {r['n_needed']} {r['unit']} (now {r['n']})")
verdict_report.publish("c2", title, list(p.criteria), metrics, dict(snakemake.output.items()),
                extra_md=curves.SE_NOTE + TRAJ_NOTE + "\n"
                + curves.estimator_markdown(metrics["fits"], ("U", "v"))
                + "\n" + curves.needed_markdown(need), log=log, checks=list(p.checks), z=p.z)
