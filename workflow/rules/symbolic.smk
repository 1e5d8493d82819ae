# The sympy derivations S1-S7 (docs/maths.md#symbolic), written for a reader and for the report.
SYMBOLIC_IDS = ["S1", "S2", "S3", "S4", "S5", "S6", "S7"]


rule symbolic:
    """Every derivation as Markdown with LaTeX, JSON and an HTML page for the report."""
    input:
        sorted(str(p) for p in (Path(workflow.basedir) / "symbolic").glob("*.py")),
        pkg("io.py", "params.py", "tasks.py", "verdict.py"),  # write_text (and what io imports), markdown_to_html
    output:
        md=expand("results/symbolic/{id}.md", id=SYMBOLIC_IDS),
        json=expand("results/symbolic/{id}.json", id=SYMBOLIC_IDS),
        html=report(
            expand("results/symbolic/{id}.html", id=SYMBOLIC_IDS),
            category="Symbolic derivations",
            caption="../report/symbolic.rst",
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("symbolic", "derive"),
    message:
        "Symbolic: deriving S1-S7 with sympy"
    script:
        "../scripts/symbolic_write.py"
