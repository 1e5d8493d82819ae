# Glue between the Snakefile and the package: the config, the rules' parameters, log / benchmark /
# source paths, code inputs. The work is done in tested modules: softlin.workflow_config (merging,
# presets, validation, checks), softlin.rule_params (per-claim parameters), softlin.code_inputs.
import os
import signal
from pathlib import Path

from softlin import code_inputs as code_closure
from softlin import outputs, stop_signals, workflow_config
from softlin.rule_params import C5_TASK_KEYS, C5_TRAIN_KEYS, RuleParams, c5_group_Ls, c5_group_name, named, pow2_range  # noqa: F401

# config/config.yaml (the defaults) <- config/presets/<preset>.yaml <- --configfile / --config (the
# `config` Snakemake hands over), validated against workflow/schemas/config.schema.yaml and checked
config, SIGMAS = workflow_config.load(workflow.basedir, config, workflow.configfiles)
PRESET = config["preset"]
PRESET_DESCRIPTION = config["description"]  # what the preset is (its file's `description`), for figures
ALL_TARGETS = []  # each claim's .smk appends the outputs of its target rule `cN`
REPORT_FRONT = "results/report_front.rst"  # the report's first page (rule report_front)
globals().update(RuleParams(config, SIGMAS).exported())  # softlin.rule_params.EXPORTED: c3_runs(), c5_replicate_dir(name), ...
if not (workflow.remote_exec or workflow.subprocess_exec):  # the planning process only, not each job
    # before the DAG is built: a damaged output (not what its seal says) is set aside, so the run rebuilds it
    outputs.check_outputs()


onstart:
    # SIGINT / SIGTERM to snakemake reach the jobs at once (docs/faults.md); installed after
    # Snakemake's own handlers, which it chains to
    stop_signals.forward_to_jobs(signal.SIGINT)
    stop_signals.forward_to_jobs(signal.SIGTERM)


def logfile(claim, name):
    return f"results/logs/{claim}/{name}.log"


def benchfile(claim, name):
    return f"results/benchmarks/{claim}/{name}.tsv"


def report_front_page():
    """The report's first page: the one rule report_front wrote, else workflow/report/workflow.rst."""
    front = Path(REPORT_FRONT)
    return str(front.resolve() if front.exists() else Path(workflow.basedir) / "workflow" / "report" / "workflow.rst")


IMPORTS = code_closure.ImportCache(Path(".snakemake") / "softlin-imports.json")  # each file's imports, by content


def code_inputs(script):
    """Every project source file a rule's ``script`` runs (softlin.code_inputs.closure: the script,
    the softlin / symbolic modules it imports, transitively). Editing any of them reruns the rule."""
    root = Path(workflow.basedir)
    return sorted(source(f) for f in code_closure.closure(root, root / "workflow" / "scripts" / script, IMPORTS))


def source(path):
    """A file of the workflow's sources (``path``: absolute, or relative to the Snakefile's folder)
    as a path relative to the working directory: recorded so, a working directory copied or moved
    with its sources plans no job, and ``-s CLONE/Snakefile -d OTHER`` finds it."""
    return os.path.relpath(Path(workflow.basedir) / path)
