"""C5 rule c5_limit: K of gap x L = K - a/L - b/L^2 for the trained replicates and the reference family; page, figure."""
import pandas as pd

from softlin.claims import c5_limit_report
from softlin.io import load_json, save_json, write_text
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c5 limit")
family = load_json(snakemake.input.family)
trained = {name: pd.read_csv(f) for name, f in zip(p.sets, snakemake.input.tables)}
conv = {name: (lambda c: c["unconverged"] + c["undecided"])(load_json(f)["convergence"])
        for name, f in zip(p.sets, snakemake.input.metrics)}
res = c5_limit_report.analyse(family, trained, p.limit, p.z, conv)
save_json(snakemake.output.json, res)
write_text(snakemake.output.md, c5_limit_report.page(res))  # (atomic, sealed like every output)
c5_limit_report.figure(res, snakemake.output.png)
log("done")
