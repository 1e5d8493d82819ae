# C5 - the paper's Sec. 6 experiment: online SGD of softmax and linear attention (one head, the
# authors' QKVO parametrisation or (U, v)) at every prompt length L, test risk against L with
# baselines: train (both models at a group of c5.L_per_job prompt lengths per job, default 0 = all
# in one job, which draws each step's batch once for every run) -> metrics -> figure -> verdict.
# A run is results/{c5_run}: the default run results/c5, or a replicate (its own training stream,
# initialisation and test set; every other setting the default's) results/c5_replicates/<name>; the
# default run is the replicate equal to the default settings, so one rule per step serves them all.
from softlin import config_cost
from softlin.claims.c5_protocol import describe

C5 = config["c5"]
C5_JOBS = [c5_group_name(Ls) for Ls in c5_groups()]
C5_OPTIMISATION = describe(c5_protocol())  # the run's optimisation in words, for the captions


wildcard_constraints:
    c5_L=r"\d+(\+\d+)*",
    c5_run=r"c5|c5_replicates/s\d+_i\d+_e\d+",
    c5_set=r"c5_replicates|c5_confirm",


# every run: its training and metrics settings and the seeds its metrics record (the default's, or a
# replicate's: c5.replicates and c5.confirm.replicates), keyed by its directory under results/
C5_RUNS = {"c5": {"train": c5_train_config(), "metrics": c5_metrics_config(),
                  "seeds": {"seed": C5["seed"], "init_seed": C5["init_seed"]}}}
C5_RUNS.update({c5_replicate_dir(n).removeprefix("results/"): {
    "train": c5_replicate_train_config(n), "metrics": c5_replicate_metrics_config(n), "seeds": c5_any_replicate(n)}
    for n in {**c5_replicates(), **c5_confirm_replicates()} if not c5_is_default(c5_any_replicate(n))})
# the sets of replicates (results/<set>): their replicates and the criteria each is read with
C5_SETS = c5_sets()
C5_SET_CRITERIA = {"c5_replicates": C5["criteria"], "c5_confirm": C5.get("confirm", {}).get("criteria", [])}
C5_RUN_FILES = ("c5_risks.csv", "c5_metrics.json", "verdict.json", "verdict.md", "consistency.json", "verdict.html")


rule c5_train:
    """Online training of both models of a run at a group of L ('10' or '10+20+...'): one batch stream (seed, step), checkpointed every chunk."""
    input:
        code=code_inputs("c5_train.py"),
    output:
        "results/{c5_run}/runs/L{c5_L}.npz",
    params:
        **named(
            cfg=lambda w: C5_RUNS[w.c5_run]["train"],
            Ls=lambda w: c5_group_Ls(w.c5_L),
            checkpoint=lambda w: f"results/{w.c5_run}/checkpoints/L{w.c5_L}.npz",
        ),
    threads: C5["threads"]
    # longest first (predicted CPU seconds, as the measure jobs): the workflow's longest jobs start first
    priority: lambda w: int(config_cost.c5_train_seconds(C5, c5_group_Ls(w.c5_L)))
    resources:
        runtime=lambda w: c5_runtime_min(c5_group_Ls(w.c5_L)),
        mem_mb=lambda w: c5_mem_mb(c5_group_Ls(w.c5_L)),
        gpu=C5["gpu"],
    group:
        "c5_train"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("{c5_run}", "train_L{c5_L}"),
    benchmark:
        benchfile("{c5_run}", "train_L{c5_L}")
    message:
        (f"C5: online training of softmax and linear attention at L = {{wildcards.c5_L}} (results/{{wildcards.c5_run}}; "
         f"{describe(c5_protocol(), short=True)}, batch {{params.cfg[batch]}}); resources: runtime={{resources.runtime}} min, "
         "mem_mb={resources.mem_mb}, gpu={resources.gpu}, threads={threads}")
    script:
        "../scripts/c5_train.py"


rule c5_metrics:
    """Test risks of both models of a run and the baselines on its held-out test set (nested prompts), per L."""
    input:
        runs=lambda w: [f"results/{w.c5_run}/runs/L{g}.npz" for g in C5_JOBS],
        code=code_inputs("c5_metrics.py"),
    output:
        table="results/{c5_run}/c5_risks.csv",
        metrics="results/{c5_run}/c5_metrics.json",
    params:
        **named(
            cfg=lambda w: C5_RUNS[w.c5_run]["metrics"],
            jobs=[c5_group_Ls(g) for g in C5_JOBS],
            record=c5_record_config(),
            z=config["decision"]["z"],
            seeds=lambda w: C5_RUNS[w.c5_run]["seeds"],
        ),
    threads: C5["threads"]
    resources:
        runtime=lambda w: 5 + int(C5["eval"]["n_test"] * max(C5["L"]) * len(C5["L"]) * 2e-7),
        mem_mb=lambda w: 1000 + int(C5["eval"]["chunk"] * max(C5["L"]) * (C5["d"] + 1) * 8 * 12 / 1e6),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("{c5_run}", "metrics"),
    message:
        "C5: test risks over L = {params.cfg[L]} ({params.cfg[eval][n_test]} test prompts; results/{wildcards.c5_run})"
    script:
        "../scripts/c5_metrics.py"


rule c5_figure:
    """Test risk against L: both trained models, the baselines, the noise floor; error bars."""
    input:
        table="results/c5/c5_risks.csv",
        metrics="results/c5/c5_metrics.json",
        code=code_inputs("c5_figure.py"),
    output:
        png=report("figures/c5_risk_vs_L.png", category="C5 Sec. 6 experiment", caption="../report/c5_risk_vs_L.rst"),
        pdf="figures/c5_risk_vs_L.pdf",
        training_png=report("figures/c5_training.png", category="C5 Sec. 6 experiment", caption="../report/c5_training.rst"),
        training_pdf="figures/c5_training.pdf",
    params:
        **named(
            preset=PRESET,
            preset_description=PRESET_DESCRIPTION,
            protocol=c5_protocol(),
            optimisation=C5_OPTIMISATION,
            curves=config["plot"]["c5_curves"],
            cmap=config["plot"]["c5_L_cmap"],
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "figure"),
    script:
        "../scripts/c5_figure.py"


rule c5_verdict:
    """Predeclared criteria C5a-C5c on one run (C5c: every run converged; C5a/C5b INCONCLUSIVE
    otherwise; its test-sampling errors) and the consistency check C5d."""
    input:
        metrics="results/{c5_run}/c5_metrics.json",
        code=code_inputs("c5_verdict.py"),
    output:
        json=update("results/{c5_run}/verdict.json"),
        md=update("results/{c5_run}/verdict.md"),
        consistency=update("results/{c5_run}/consistency.json"),
        html=report(update("results/{c5_run}/verdict.html"), category="C5 Sec. 6 experiment", caption="../report/verdict.rst"),
    params:
        **named(
            z=config["decision"]["z"],
            criteria=C5["criteria"],
            checks=C5.get("consistency_checks", []),
            preset=PRESET,
            protocol=c5_protocol(),
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("{c5_run}", "verdict"),
    script:
        "../scripts/c5_verdict.py"


# --------------------------------------------------------------------------- sets of replicates
# c5_replicates (target c5_replicates): the whole experiment over c5.replicates, the replicate equal
# to the default settings being the default run itself (results/c5); c5_confirm (target c5_confirm):
# C5e and C5f decided on the fresh seeds of c5.confirm.  Each replicate trains and is evaluated by the
# run rules above (results/c5_replicates/<name>); a set's aggregate is results/<set>/.  Not in the
# default target.


rule c5_replicates_metrics:
    """Per-L risks and gaps of a set as mean +/- standard error across its replicates; the criteria's
    metrics with the jackknife over replicates."""
    input:
        tables=lambda w: [f"{c5_replicate_dir(n)}/c5_risks.csv" for n in c5_set_members(w.c5_set)],
        metrics=lambda w: [f"{c5_replicate_dir(n)}/c5_metrics.json" for n in C5_SETS[w.c5_set]],
        code=code_inputs("c5_replicates_metrics.py"),
    output:
        table="results/{c5_set}/{c5_set}_risks.csv",
        metrics="results/{c5_set}/{c5_set}_metrics.json",
    params:
        **named(
            names=lambda w: list(C5_SETS[w.c5_set]),
            noise=C5["noise_var"],
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("{c5_set}", "metrics"),
    script:
        "../scripts/c5_replicates_metrics.py"


rule c5_replicates_figure:
    """Gap and gap x L against L across a set's replicates (mean +/- se) with the S7 prediction; risks."""
    input:
        table="results/{c5_set}/{c5_set}_risks.csv",
        metrics="results/{c5_set}/{c5_set}_metrics.json",
        code=code_inputs("c5_replicates_figure.py"),
    output:
        png="figures/{c5_set}.png",
        pdf="figures/{c5_set}.pdf",
    params:
        **named(
            protocol=c5_protocol(),
            curves=config["plot"]["c5_curves"],
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("{c5_set}", "figure"),
    script:
        "../scripts/c5_replicates_figure.py"


rule c5_replicates_verdict:
    """A set's criteria (c5.criteria; c5_confirm: c5.confirm.criteria, written before its run) read
    with the errors across its replicates."""
    input:
        metrics="results/{c5_set}/{c5_set}_metrics.json",
        code=code_inputs("c5_replicates_verdict.py"),
    output:
        json="results/{c5_set}/verdict.json",
        md="results/{c5_set}/verdict.md",
        consistency="results/{c5_set}/consistency.json",
        html="results/{c5_set}/verdict.html",
    params:
        **named(
            z=config["decision"]["z"],
            criteria=lambda w: C5_SET_CRITERIA[w.c5_set],
            checks=C5.get("consistency_checks", []),
            preset=PRESET,
            protocol=c5_protocol(),
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("{c5_set}", "verdict"),
    script:
        "../scripts/c5_replicates_verdict.py"


# --------------------------------------------------------------------------- S7's limit (target c5_limit)
# docs/c5_limit.md: the reference family's gap x L by Monte Carlo (no training) and K of
# gap x L = K - a/L - b/L^2 per replicate, for the family and for the committed trained replicates.
C5_LIMIT_SETS = {k: v for k, v in (("exploratory", "docs/c5_replicates/c5_replicates_risks.csv"),
                                   ("confirmatory", "docs/c5_confirm/c5_confirm_risks.csv"))
                 if Path(workflow.basedir, v).exists()}


rule c5_limit_family:
    """Monte Carlo of the reference family at every c5.limit.L: member c* and linear optimum paired, best member."""
    input:
        code=code_inputs("c5_limit_family.py"),
    output:
        json="results/c5_limit/family.json",
    params:
        **named(
            cfg={**c5_section(C5_TASK_KEYS), "limit": C5["limit"]},
        ),
    threads: 1
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "limit_family"),
    script:
        "../scripts/c5_limit_family.py"


rule c5_limit:
    """Target: K with its t interval for the family and the trained replicates against S7's 14.30; page and figure."""
    input:
        family="results/c5_limit/family.json",
        tables=[source(v) for v in C5_LIMIT_SETS.values()],
        metrics=[source(v.replace("_risks.csv", "_metrics.json")) for v in C5_LIMIT_SETS.values()],
        code=code_inputs("c5_limit.py"),
    output:
        json="results/c5_limit/c5_limit.json",
        md="results/c5_limit/c5_limit.md",
        png="figures/c5_limit.png",
    params:
        **named(
            sets=list(C5_LIMIT_SETS),
            limit=C5["limit"],
            z=config["decision"]["z"],
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "limit"),
    script:
        "../scripts/c5_limit.py"


localrules:
    c5,
    c5_replicates,
    c5_confirm,


rule c5_replicates:
    """Target: C5 over every c5.replicates entry (not in the default target; each replicate trains ~8 min)."""
    input:
        expand(rules.c5_replicates_metrics.output, c5_set="c5_replicates"),
        expand(rules.c5_replicates_figure.output, c5_set="c5_replicates"),
        expand(rules.c5_replicates_verdict.output, c5_set="c5_replicates"),
        [f"{c5_replicate_dir(n)}/verdict.md" for n in C5_SETS["c5_replicates"]],


rule c5_confirm:
    """Target: C5e and C5f on the fresh seeds of c5.confirm (not in the default target; each replicate trains ~8 min)."""
    input:
        expand(rules.c5_replicates_metrics.output, c5_set="c5_confirm"),
        expand(rules.c5_replicates_figure.output, c5_set="c5_confirm"),
        expand(rules.c5_replicates_verdict.output, c5_set="c5_confirm"),
        [f"{c5_replicate_dir(n)}/verdict.md" for n in C5_SETS["c5_confirm"]],


rule c5:
    """Target: every C5 output (docs/maths.md#conventions)."""
    input:
        [f"results/c5/{f}" for f in C5_RUN_FILES[:2]],
        rules.c5_figure.output,
        [f"results/c5/{f}" for f in C5_RUN_FILES[2:]],


ALL_TARGETS.extend(rules.c5.input)
