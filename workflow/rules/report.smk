# Inputs of `snakemake --report report.html`: every figure and verdict is wrapped in report()
# by its own rule; this file only declares the report's front page.
report: "../report/workflow.rst"
