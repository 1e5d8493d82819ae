"""C2 rule c2_metrics: gradient gaps, slopes vs -beta, sweep, trajectory maxima (CSV + JSON)."""

from softlin import records
from softlin.claims import c2, c2e
from softlin.io import load_json, save_csv, save_json
from softlin.progress import Progress

p = snakemake.params
i, o = snakemake.input, snakemake.output
log = Progress(snakemake.log[0], "c2 metrics")
design = load_json(i.probes)


def gaps(name: str, path) -> tuple[list[dict], c2.GradientGaps]:
    """One setting's probes (C1's, then its sweep, as c2_measure built them) and its record."""
    probes = c2.probes_of(design[name], p.probe_sweeps[name])
    like = c2.gradient_gaps_like(len(design[name]["sigma"]), p.protocol["n_blocks_by_setting"][name], len(probes), p.L)
    return probes, records.load(path, like)


paths = iter(i.traj)   # expand's order: setting-major, then C3 seed
trajectories = {name: {seed: records.load(next(paths), c2e.along_like(p.traj_record)) for seed in p.traj_seeds}
                for name in p.traj_settings}
out = c2.summarize_all(design, {name: gaps(name, path) for name, path in zip(p.settings, i.gaps)}, trajectories,
                       p.sweep["settings"], p.n_boot, p.seed, p.seed_log_slope, p.protocol, z=p.z, progress=log)
save_csv(o.table, out["table"])
save_csv(o.trajectory, out["trajectory"])
save_json(o.metrics, out["metrics"])
log("done")
