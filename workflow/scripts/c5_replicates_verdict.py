"""C5 rule c5_replicates_verdict: the criteria read with the standard errors across replicates."""
from softlin import verdict_report
from softlin.claims import c5_report
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c5 replicates verdict")
metrics = load_json(snakemake.input.metrics)
proto = p.protocol
n = metrics["n_replicates"]
title = (f"the paper's Sec. 6 experiment over {n} independent replicates (preset {p.preset}"
         + (f"; DEVIATION FROM THE PAPER: {proto['deviation']}" if proto.get("deviation") else "") + ")")
rows = ["| replicate | train seed | init seed | eval seed | gap / R_linear at L_max | gap x L at L_max | "
        "gap x L / S7 | log-log slope (top third) | softmax excess / R_inf | linear excess / R_inf | runs not converged |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]


def f(x, se=None, d=4):
    if x is None:
        return "-"
    return f"{x:.{d}g}" + ("" if se is None or isinstance(se, str) else f" +/- {se:.2g}")


for name, r in metrics["per_replicate"].items():
    rows.append(f"| {name} | {r['train_seed']} | {r['init_seed']} | {r['eval_seed']} | "
                f"{f(r['gap_rel_at_Lmax'], r['gap_rel_at_Lmax_se'])} | {f(r['gap_L_at_Lmax'], r['gap_L_at_Lmax_se'])} | "
                f"{f(r['gap_L_over_predicted_at_Lmax'], r['gap_L_over_predicted_at_Lmax_se'])} | "
                f"{f(r['gap_slope_top_third'], r['gap_slope_top_third_se'])} | {f(r['softmax_excess_rel_at_Lmax'])} | "
                f"{f(r['linear_excess_rel_at_Lmax'])} | {r['n_unconverged']} |")
need = c5_report.replication_needed(list(p.criteria), metrics, p.z, n, "independent replicates")
extra = (f"**{n} independent replicates** (training stream, initialisation with its restarts, test set), "
         f"{', '.join(metrics['replicates'])}. Standard errors: delete-one jackknife over the replicates of "
         "each quantity computed from the replicates' mean risks (per-L means +/- se across seeds: "
         "`c5_replicates_risks.csv`). With n replicates a standard error has n - 1 degrees of freedom and is itself "
         "uncertain (with 3, a factor of about 2 either way); the decision rule reads it at z as every other "
         "claim does. Per replicate (its own test-sampling errors):\n\n" + "\n".join(rows) + "\n\n"
         + c5_report.prediction_text(metrics) + "\n"
         + ("Undecided tests and the replication that would decide them:\n\n" + "\n".join(need) + "\n\n" if need else "")
         + f"Convergence over all replicates: {metrics['convergence']['n_unconverged']} of "
         f"{metrics['convergence']['n_runs']} runs not shown converged"
         + (f" (unconverged: {', '.join(metrics['convergence']['unconverged']) or 'none'}; undecided: "
            f"{', '.join(metrics['convergence']['undecided']) or 'none'})" if metrics['convergence']['n_unconverged'] else "")
         + ".\n")
verdict_report.publish("c5", title, list(p.criteria), metrics, dict(snakemake.output.items()),
                extra, log=log, checks=list(p.checks), z=p.z)
