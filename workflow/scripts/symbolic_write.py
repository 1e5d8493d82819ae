"""Rule symbolic: write every registered derivation (symbolic.registry; Markdown, JSON, HTML) to results/symbolic/."""
from pathlib import Path

import symbolic
from softlin.io import write_text
from softlin.progress import Progress
from softlin.verdict_report import markdown_to_html

log = Progress(snakemake.log[0], "symbolic")
outdir = Path(snakemake.output.md[0]).parent
symbolic.write_all(outdir)
for md in snakemake.output.md:
    text = Path(md).read_text()
    write_text(Path(md).with_suffix(".html"), markdown_to_html(text))
    log(f"wrote {Path(md).stem}")
