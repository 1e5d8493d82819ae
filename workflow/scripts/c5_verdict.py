"""C5 rule c5_verdict: predeclared criteria on the metrics."""
from softlin import verdict
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params  # noqa: F821
log = Progress(snakemake.log[0], "c5 verdict")  # noqa: F821
metrics = load_json(snakemake.input.metrics)  # noqa: F821
proto = p.protocol
notes = []
if proto.get("deviation"):
    notes.append(f"DEVIATION FROM THE PAPER: {proto['deviation']}")
if proto.get("scaled_down"):
    notes.append(f"SCALED DOWN: {proto['steps']} steps, L = {proto['L']}")
title = f"the paper's Sec. 6 experiment (preset {p.preset}{'; ' if notes else ''}{'; '.join(notes)})"
conv = metrics["convergence"]
rows = ["| run | init seed | first loss | final loss | escape step (diagnostic) | end drop | test risk "
        "| reference risk | ratio | converged |",
        "|---|---|---|---|---|---|---|---|---|---|"]
for k, r in conv["runs"].items():
    ref = (f"{r['risk']:.4g} | {r['reference']:.4g} | {r['risk_over_reference']:.3f}" if "reference" in r
           else "- | - | -")
    seed = r.get("init_seed")
    rows.append(f"| {k} | {'-' if seed is None else seed} | {r['initial']:.4g} | {r['final']:.4g} | "
                f"{r['escape_step'] if r['escape_step'] is not None else 'never'}"
                f" | {r['rel_drop_end']:.3g} | {ref} | {'yes' if r['converged'] else 'NO'} |")
extra = ("Protocol: " + ", ".join(f"{k} = {v}" for k, v in proto.items()) + "\n\n"
         "Per-run convergence (C5c; reference: linear, the class optimum x_q^T P*(L) h; softmax, the best "
         "member of the family U = blockdiag(a P*(L), 0), v = c e_D; init seed: the restart kept, by the "
         "lowest end training loss, when c5.restarts > 1):\n\n" + "\n".join(rows) + "\n")
verdict.publish("c5", title, list(p.criteria), metrics, dict(snakemake.output.items()),  # noqa: F821
                extra, log=log, checks=list(p.checks), z=p.z)
