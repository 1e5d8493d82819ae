# The table of every verdict (README and the report's first page), and the report's front page.
# Every figure and verdict is wrapped in report() by its own rule. The claims: softlin/claims/registry.py.
from softlin.claims.registry import IDS

CLAIMS = list(IDS)


rule verdict_overview:
    """One table of every criterion of every claim (value +/- s.e., threshold, status) with the tallies."""
    input:
        verdicts=expand("results/{claim}/verdict.json", claim=CLAIMS),
        code=code_inputs("verdict_overview.py"),
    output:
        md="results/verdicts.md",
        rst="results/verdicts.rst",
    params:
        **named(
            claims=CLAIMS,
        ),
    localrule: True
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("overview", "verdicts"),
    script:
        "../scripts/verdict_overview.py"


rule report_front:
    """The report's first page: workflow/report/workflow.rst, then the table of every verdict."""
    input:
        static=source("workflow/report/workflow.rst"),
        table=rules.verdict_overview.output.rst,
        code=code_inputs("report_front.py"),
    output:
        rst=REPORT_FRONT,
    localrule: True
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("overview", "report_front"),
    script:
        "../scripts/report_front.py"


ALL_TARGETS.extend(rules.verdict_overview.output)
ALL_TARGETS.extend(rules.report_front.output)


report: report_front_page()
