"""C3 rule c3_verdict: predeclared criteria, plus the seed log comparison as one more criterion."""
import pandas as pd

from softlin import verdict
from softlin.claims import seedlog
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params  # noqa: F821
log = Progress(snakemake.log[0], "c3 verdict")  # noqa: F821
metrics = load_json(snakemake.input.metrics)  # noqa: F821
criteria = list(p.criteria)
extra = ""
if p.compare_seed_log:
    per_seed = pd.read_csv(snakemake.input.per_seed).to_dict("records")  # noqa: F821
    rows = seedlog.compare(load_json(snakemake.input.seed_log), per_seed, metrics["infos"],  # noqa: F821
                           metrics["fits"])
    metrics["seed_log"] = {"n_compared": sum(r["match"] is not None for r in rows),
                           "n_mismatch": sum(r["match"] is False for r in rows)}
    criteria.append({"id": "C3-seed-log",
                     "statement": "every number the seed log prints (per seed and L, theta_inf lines, fits, flags) equals our value at its printed precision",
                     "all": [{"measured": "seed_log.n_mismatch", "op": "==", "value": 0}]})
    extra = seedlog.to_markdown(rows)
title = f"transfer of the optimisation analysis (preset {p.preset})"
verdict.publish("c3", title, criteria, metrics, snakemake.output,  # noqa: F821
                extra, log=log, checks=list(p.checks))
