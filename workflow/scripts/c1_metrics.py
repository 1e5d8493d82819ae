"""C1 rule c1_metrics: RMS gaps, slopes against -beta, with jackknife s.e. over task blocks (CSV + JSON)."""

from softlin import records
from softlin.claims import c1
from softlin.io import load_json, save_csv, save_json
from softlin.progress import Progress

p = snakemake.params  # noqa: F821
log = Progress(snakemake.log[0], "c1 metrics")  # noqa: F821
design = load_json(snakemake.input.probes)  # noqa: F821
rows, fits = [], {}
for name, path in zip(p.settings, snakemake.input.gaps):  # noqa: F821
    gaps = records.load(path, c1.output_gaps_like(p.n_blocks, len(design[name]["probes"]), p.L))
    r, fi = c1.summarize(design[name], gaps.msq, gaps.L, p.z)
    rows += r
    fits.update(fi)
for k, f in fits.items():
    log(f"{k}: lambda {f['lambda_max']:.3f} slope {f['slope']:.3f} +- {f['slope_se']:.3f} (pred {-f['beta']:.3f})")
save_csv(snakemake.output.table, rows)  # noqa: F821
save_json(snakemake.output.metrics, {"fits": fits, "summary": c1.aggregate(fits),  # noqa: F821
                                      "protocol": p.protocol})
log("done")
