# softlin: every claim of the paper as rules (docs/maths.md#conventions). Declarations only; helpers live in
# workflow/rules/common.smk. `snakemake` builds everything; `snakemake c3` builds one claim.
from snakemake.utils import min_version

min_version("9.0")

# config/config.yaml (the defaults), the preset and --configfile/--config are merged and validated
# in workflow/rules/common.smk


include: "workflow/rules/common.smk"
include: "workflow/rules/symbolic.smk"
include: "workflow/rules/c3_transfer.smk"
include: "workflow/rules/c5_experiment.smk"
include: "workflow/rules/c1_concentration.smk"
include: "workflow/rules/c2_gradients.smk"
include: "workflow/rules/c4_dynamics.smk"
include: "workflow/rules/report.smk"


localrules:
    all,


rule all:
    """Default target: every claim (each .smk adds its target rule's inputs to ALL_TARGETS), the symbolic derivations."""
    input:
        ALL_TARGETS,
        rules.symbolic.output if config["symbolic"]["enabled"] else [],
    default_target: True
