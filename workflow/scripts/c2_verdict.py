"""C2 rule c2_verdict: predeclared criteria on the C2 metrics, and the replication an undecided
test would need."""
from softlin import verdict, verdict_report
from softlin.claims import c2, curves
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c2 verdict")
metrics = load_json(snakemake.input.metrics)
title = f"gradient concentration and its stability along training (preset {p.preset})"


def units(path: str, label):
    """The independent replicates behind a metric's entry: the task seeds (their trajectories) along the
    trajectory, elsewhere the task blocks of the entry's setting (c2.blocks_behind)."""
    if path.startswith("trajectory."):
        return metrics["trajectory"][path.split(".")[1]]["n_seeds"], "task seeds (trajectories)"
    return c2.blocks_behind(metrics["protocol"], path, label), "task blocks"


def per_seed_markdown(traj: dict) -> str:
    """Each task seed's own C2e slope (full gradient) with its prompt-sampling error, beside the seed mean's
    and the largest seed's share of the seeds' sum."""
    rows = ["| setting | seed-mean slope_full (s.e. over seeds) | largest seed's share of the seeds' sum | "
            "each seed's slope_full (s.e. over its prompt draws) |", "|---|---|---|---|"]
    def slope(f):
        return f"{f['slope_full']:.3f} +/- {f['slope_full_se']:.3f}"
    for name, t in traj.items():
        each = "; ".join(f"{s}: {slope(v['full'])}" for s, v in t["per_seed"].items())
        big = t["largest_seed"]
        rows.append(f"| {name} | {slope(t['full'])} ({t['n_seeds']} seeds) | {big['share']:.2f} (seed {big['seed']}, "
                    f"L = {big['L']}; an equal share is {1 / t['n_seeds']:.2f}) | {each} |")
    return "\n".join(rows) + "\n"


TRAJ_NOTE = (
    "\nAlong linear(inf) trajectories (C2e), trained by C3's protocol on C3's training tasks of each task seed "
    "(`c2.trajectory.seed0 + c3.seed_stride i`, i < `c2.trajectory.n_seeds`; seed0 defaults to C3's, so C3's own "
    "seeds come first), each prompt draw's gap is the norm of the mean gradient difference over the training "
    "pairs (the training batch's, the seed log's quantity), maximised over the recorded steps; the first draw is "
    "C3's own prompts, the others fresh covariates (the same w and queries). A seed's curve is the mean of its "
    "draws' curves (`c2.trajectory.n_prompts`), which estimates the seed log's quantity whatever the number of "
    "draws. C2e reads the mean of these curves over the seeds, and its standard errors are a jackknife over the "
    "seeds (n_seeds - 1 degrees of freedom): each seed draws new training tasks, so the error covers the "
    "trajectory's own variation as well as the prompt sampling (a seed whose run settles beyond S5's threshold "
    "can carry much of the mean, and the jackknife then misses the seeds it has not drawn: "
    "docs/c2_confirm/README.md). Each seed's own slope, with the error of its prompt sampling alone (jackknife "
    "over blocks of its training pairs within each draw):\n\n")
need = curves.needed([verdict.evaluate(c, metrics, p.z) for c in p.criteria], units, metrics)
for r in need:
    log(f"{r['id']} {r['measured']}[{r['label']}]: undecided, needs {r['n_needed']} {r['unit']} (now {r['n']})")
verdict_report.publish("c2", title, list(p.criteria), metrics, dict(snakemake.output.items()),
                extra_md=curves.SE_NOTE + TRAJ_NOTE + per_seed_markdown(metrics["trajectory"]) + "\n"
                + curves.estimator_markdown(metrics["fits"], ("U", "v"))
                + "\n" + curves.needed_markdown(need), log=log, checks=list(p.checks), z=p.z)
