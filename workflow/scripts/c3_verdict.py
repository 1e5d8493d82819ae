"""C3 rule c3_verdict: predeclared criteria and consistency checks (the seed log's digits and its
outcome under its own rule among them, read from the seed log's seeds only; not applicable, and
reported so, where the run does not have those seeds)."""

from softlin import verdict, verdict_report
from softlin.claims import c3_notes, c3_seed_log
from softlin.io import load_csv, load_json
from softlin.progress import Progress

p = snakemake.params
i = snakemake.input
log = Progress(snakemake.log[0], "c3 verdict")
criteria, checks, metrics, extra = list(p.criteria), list(p.checks), load_json(i.metrics), ""
per_seed, seed_log = load_csv(i.per_seed).to_dict("records"), load_json(i.seed_log)
missing = c3_seed_log.missing_seeds(seed_log, per_seed) if p.compare_seed_log else {}
if p.compare_seed_log and not missing:
    metrics, extra = c3_seed_log.with_comparison(metrics, seed_log, per_seed, dict(p.seed_log_outcome), criteria + checks)
else:  # another protocol, or other seeds than the seed log's: nothing to compare with
    skipped = [c["id"] for c in checks if any(t["measured"].startswith("seed_log.") for t in c["all"])]
    checks = [c for c in checks if c["id"] not in skipped]
    if missing:
        extra = c3_seed_log.not_applicable_markdown(skipped, missing, per_seed)
        log(f"{', '.join(skipped)}: NOT APPLICABLE (the seed log's seeds are not in this run)")
notes = c3_notes.notes_markdown([verdict.evaluate(c, metrics, p.z) for c in criteria], metrics, p.z)
verdict_report.publish("c3", f"transfer of the optimisation analysis (preset {p.preset})", criteria, metrics,
                dict(snakemake.output.items()), notes + extra, log=log, checks=checks, z=p.z)
