"""Rule verdict_overview: the table of every verdict of C1-C5, as Markdown and reStructuredText."""
from softlin import verdict_page, verdict_report
from softlin.io import load_json, write_text
from softlin.progress import Progress

log = Progress(snakemake.log[0], "verdict overview")
docs = {c: load_json(f) for c, f in zip(snakemake.params.claims, snakemake.input.verdicts)}
claims = {c: verdict_report.verdicts_of(d) for c, d in docs.items()}
revisions = {c: d.get("revision", "unknown") if isinstance(d, dict) else "unknown" for c, d in docs.items()}
write_text(snakemake.output.md, verdict_report.overview_markdown(claims, revisions))
write_text(snakemake.output.rst, verdict_page.overview_rst(claims, revisions))
log(f"{sum(len(v) for v in claims.values())} criteria of {len(claims)} claims")
