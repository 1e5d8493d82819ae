"""Rule report_front: the report's first page, workflow/report/workflow.rst followed by the table of every verdict."""
from pathlib import Path

from softlin.io import write_text

static, table = (Path(p).read_text() for p in (snakemake.input.static, snakemake.input.table))
write_text(snakemake.output.rst, f"{static}\n\n{table}")
