"""C5 rule c5_verdict: the criteria on one run's metrics (test-sampling standard errors)."""
from softlin import verdict_report
from softlin.claims import c5_report
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c5 verdict")
metrics = load_json(snakemake.input.metrics)
proto = p.protocol
notes = []
if proto.get("deviation"):
    notes.append(f"DEVIATION FROM THE PAPER: {proto['deviation']}")
if proto.get("scaled_down"):
    notes.append(f"SCALED DOWN: {proto['steps']} steps, L = {proto['L']}")
title = f"the paper's Sec. 6 experiment (preset {p.preset}{'; ' if notes else ''}{'; '.join(notes)})"
seeds = (f"training stream seed {metrics.get('train_seed')}, initialisation seed {metrics.get('init_seed')}"
         f" (restarts from it: {proto.get('restarts', 1)}), test-set seed {metrics.get('eval_seed')}")
need = c5_report.replication_needed(list(p.criteria), metrics, p.z, metrics["n_blocks"],
                                    "blocks of test prompts (the test set scaled alike)")
extra = (f"**One replicate** ({seeds}). The standard errors here are test-sampling errors only: a delete-one "
         f"jackknife over {metrics['n_blocks']} blocks of independent test prompts (paired: both models and "
         "every baseline on the same prompts). They replicate the test set, not the training stream or the "
         "initialisation: a status here can still move with another seed. The same criteria read with the "
         "errors across independent seeds (target `snakemake c5_replicates`; committed results: "
         "`docs/c5_replicates/verdict.md`) are the verdict on the claim.\n\n"
         + c5_report.prediction_text(metrics) + "\n"
         + ("Undecided tests and the replication that would decide them:\n\n" + "\n".join(need) + "\n\n" if need else "")
         + "Protocol: " + ", ".join(f"{k} = {v}" for k, v in proto.items()) + "\n\n"
         "Per-run convergence (C5c, a consistency check; within reference decided with the paired test-sampling "
         "error; flatness over the last "
         f"{proto['convergence']['window_frac']:.0%} of the log points, decided with its jackknife "
         "error over them, counts only where it fails; the drop over the last "
         f"{proto['convergence']['window_frac']:.0%} of the learning (cumulative learning rate) is a diagnostic; "
         "reference: linear, the class optimum x_q^T P*(L) h; softmax, the best member of the family "
         "U = blockdiag(a P*(L), 0), v = c e_D; init seed: the restart kept, by the lowest end training loss, "
         "when c5.restarts > 1):\n\n"
         + c5_report.convergence_table(metrics["convergence"]))
verdict_report.publish("c5", title, list(p.criteria), metrics, dict(snakemake.output.items()),
                extra, log=log, checks=list(p.checks), z=p.z)
