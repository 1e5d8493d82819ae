# softlin: every claim of the paper as rules (SPEC section 7). Declarations only; helpers live in
# workflow/rules/common.smk. `snakemake` builds everything; `snakemake c3` builds one claim.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/symbolic.smk"
include: "workflow/rules/c3_transfer.smk"
include: "workflow/rules/report.smk"


localrules:
    all,
    c3,


rule all:
    """Default target: every claim, the symbolic derivations and the report inputs."""
    input:
        rules.c3.input,
        rules.symbolic.output if config["symbolic"]["enabled"] else [],
    default_target: True
