"""C1 rule c1_metrics: RMS gaps, slopes against -beta, with jackknife s.e. over task blocks (CSV + JSON)."""

from softlin import records
from softlin.claims import c1, exponent
from softlin.io import load_json, save_csv, save_json
from softlin.progress import Progress

p = snakemake.params
log = Progress(snakemake.log[0], "c1 metrics")
design = load_json(snakemake.input.probes)
rows, fits, msq = [], {}, {}
for name, path in zip(p.settings, snakemake.input.gaps):
    gaps = records.load(path, c1.output_gaps_like(p.n_blocks, len(design[name]["probes"]), p.L))
    r, fi = c1.summarize(design[name], gaps.msq, gaps.L, p.z, gaps.tilt, gaps.diag)
    rows += r
    fits.update(fi)
    msq[name] = gaps.msq
summary = c1.aggregate(fits)
if c1.EXPONENT in msq:
    summary[c1.EXPONENT] = exponent.summarize(design[c1.EXPONENT], fits, msq[c1.EXPONENT], p.L, p.exponent["kappa"])
for k, f in fits.items():
    log(f"{k}: lambda {f['lambda_max']:.3f} slope {f['slope']:.3f} +- {f['slope_se']:.3f} (pred {-f['beta']:.3f}); "
        f"{f['estimator']} t {f['tilt']:.3f} ess {f['ess']:.0f}/{f['n_units']} share {f['share_max']:.2f}")
save_csv(snakemake.output.table, rows)
save_json(snakemake.output.metrics, {"fits": fits, "summary": summary,
                                      "protocol": p.protocol})
log("done")
