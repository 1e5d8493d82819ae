# The sympy derivations (docs/maths.md#symbolic; their ids: symbolic/registry.py), written for a reader and for the report.
from symbolic.registry import IDS as SYMBOLIC_IDS
from symbolic.registry import SPAN as SYMBOLIC_SPAN


rule symbolic:
    """Every derivation as Markdown with LaTeX, JSON and an HTML page for the report."""
    input:
        code_inputs("symbolic_write.py"),
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
        f"Symbolic: deriving {SYMBOLIC_SPAN} with sympy"
    script:
        "../scripts/symbolic_write.py"
