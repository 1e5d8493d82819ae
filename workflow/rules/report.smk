# The table of every verdict (README and the report's first page), and the report's front page.
# Every figure and verdict is wrapped in report() by its own rule.
CLAIMS = ["c1", "c2", "c3", "c4", "c5"]


rule verdict_overview:
    """One table of every criterion of C1-C5 (value +/- s.e., threshold, status) with the tallies."""
    input:
        verdicts=expand("results/{claim}/verdict.json", claim=CLAIMS),
        code=code_inputs("verdict_overview.py"),
    output:
        md="results/verdicts.md",
        rst="results/verdicts.rst",
    params:
        claims=CLAIMS,
    localrule: True
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("overview", "verdicts"),
    script:
        "../scripts/verdict_overview.py"


ALL_TARGETS.extend(rules.verdict_overview.output)


report: report_front_page()
