"""C3 rule c3_verdict: predeclared criteria, plus the seed log comparison as one more criterion."""
import pandas as pd

from softlin import verdict
from softlin.claims import seedlog
from softlin.io import load_json
from softlin.progress import Progress

p = snakemake.params  # noqa: F821
i = snakemake.input  # noqa: F821
log = Progress(snakemake.log[0], "c3 verdict")  # noqa: F821
criteria, metrics, extra = list(p.criteria), load_json(i.metrics), ""
if p.compare_seed_log:
    criteria, metrics, extra = seedlog.with_comparison(criteria, metrics, load_json(i.seed_log),
                                                       pd.read_csv(i.per_seed).to_dict("records"))
verdict.publish("c3", f"transfer of the optimisation analysis (preset {p.preset})", criteria, metrics,
                dict(snakemake.output.items()), extra, log=log, checks=list(p.checks), z=p.z)  # noqa: F821
