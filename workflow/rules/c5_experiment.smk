# C5 - the paper's Sec. 6 experiment: online SGD of softmax and linear attention (one head, the
# authors' QKVO parametrisation or (U, v)) at every prompt length L, test risk against L with
# baselines: train (both models at a group of c5.L_per_job prompt lengths per job, default 0 = all
# in one job, which draws each step's batch once for every run) -> metrics -> figure -> verdict.
C5 = config["c5"]
C5_JOBS = [c5_group_name(Ls) for Ls in c5_groups()]


wildcard_constraints:
    c5_L=r"\d+(\+\d+)*",


rule c5_train:
    """Online training of both models at a group of L ('10' or '10+20+...'): one batch stream (seed, step), checkpointed every chunk."""
    input:
        code=code_inputs("c5_train.py"),
    output:
        "results/c5/runs/L{c5_L}.npz",
    params:
        cfg=c5_train_config(),
        Ls=lambda w: c5_group_Ls(w.c5_L),
        checkpoint=lambda w: f"results/c5/checkpoints/L{w.c5_L}.npz",
    threads: C5["threads"]
    resources:
        runtime=lambda w: c5_runtime_min(c5_group_Ls(w.c5_L)),
        mem_mb=lambda w: c5_mem_mb(c5_group_Ls(w.c5_L)),
        gpu=C5["gpu"],
    group:
        "c5_train"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "train_L{c5_L}"),
    benchmark:
        benchfile("c5", "train_L{c5_L}")
    message:
        "C5: online training of softmax and linear attention at L = {wildcards.c5_L} ({params.cfg[steps]} steps, batch {params.cfg[batch]}, {params.cfg[optimizer][name]} lr {params.cfg[optimizer][lr]}); resources: runtime={resources.runtime} min, mem_mb={resources.mem_mb}, gpu={resources.gpu}, threads={threads}"
    script:
        "../scripts/c5_train.py"


rule c5_metrics:
    """Test risks of both models and the baselines on one held-out test set (nested prompts), per L."""
    input:
        runs=[f"results/c5/runs/L{g}.npz" for g in C5_JOBS],
        code=code_inputs("c5_metrics.py"),
    output:
        table="results/c5/c5_risks.csv",
        metrics="results/c5/c5_metrics.json",
    params:
        cfg=c5_metrics_config(),
        jobs=[c5_group_Ls(g) for g in C5_JOBS],
        record=c5_record_config(),
        z=config["decision"]["z"],
        seeds={"seed": C5["seed"], "init_seed": C5["init_seed"]},
    threads: C5["threads"]
    resources:
        runtime=lambda w: 5 + int(C5["eval"]["n_test"] * max(C5["L"]) * len(C5["L"]) * 2e-7),
        mem_mb=lambda w: 1000 + int(C5["eval"]["chunk"] * max(C5["L"]) * (C5["d"] + 1) * 8 * 12 / 1e6),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "metrics"),
    message:
        "C5: test risks over L = {params.cfg[L]} ({params.cfg[eval][n_test]} test prompts)"
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
        preset=PRESET,
        preset_description=PRESET_DESCRIPTION,
        protocol=c5_protocol(),
        curves=config["plot"]["c5_curves"],
        cmap=config["plot"]["c5_L_cmap"],
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "figure"),
    script:
        "../scripts/c5_figure.py"


rule c5_verdict:
    """Predeclared criteria C5a-C5c (C5c: every run converged; C5a/C5b INCONCLUSIVE otherwise) and
    the consistency check C5d."""
    input:
        metrics="results/c5/c5_metrics.json",
        code=code_inputs("c5_verdict.py"),
    output:
        json=update("results/c5/verdict.json"),
        md=update("results/c5/verdict.md"),
        consistency=update("results/c5/consistency.json"),
        html=report(update("results/c5/verdict.html"), category="C5 Sec. 6 experiment", caption="../report/verdict.rst"),
    params:
        z=config["decision"]["z"],
        criteria=C5["criteria"],
        checks=C5.get("consistency_checks", []),
        preset=PRESET,
        protocol=c5_protocol(),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "verdict"),
    script:
        "../scripts/c5_verdict.py"


# --------------------------------------------------------------------------- replicates (target c5_replicates)
# The whole experiment over c5.replicates (training stream, initialisation, test set); the replicate
# equal to the default settings is the default run itself (results/c5).  Not in the default target.
C5_REPS = c5_replicates()
C5_OTHER_REPS = [n for n, r in C5_REPS.items() if not c5_is_default(r)]


wildcard_constraints:
    c5_rep=r"s\d+_i\d+_e\d+",


rule c5_replicate_train:
    """Online training of one replicate (its own stream seed and initialisation; every other setting
    the default's) at a group of L."""
    input:
        code=code_inputs("c5_train.py"),
    output:
        "results/c5_replicates/{c5_rep}/runs/L{c5_L}.npz",
    params:
        cfg=lambda w: c5_replicate_train_config(w.c5_rep),
        Ls=lambda w: c5_group_Ls(w.c5_L),
        checkpoint=lambda w: f"results/c5_replicates/{w.c5_rep}/checkpoints/L{w.c5_L}.npz",
    threads: C5["threads"]
    resources:
        runtime=lambda w: c5_runtime_min(c5_group_Ls(w.c5_L)),
        mem_mb=lambda w: c5_mem_mb(c5_group_Ls(w.c5_L)),
        gpu=C5["gpu"],
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "replicate_{c5_rep}_train_L{c5_L}"),
    benchmark:
        benchfile("c5", "replicate_{c5_rep}_train_L{c5_L}")
    script:
        "../scripts/c5_train.py"


rule c5_replicate_metrics:
    """Test risks of one replicate on its own test set (its eval seed)."""
    input:
        runs=lambda w: [f"results/c5_replicates/{w.c5_rep}/runs/L{g}.npz" for g in C5_JOBS],
        code=code_inputs("c5_metrics.py"),
    output:
        table="results/c5_replicates/{c5_rep}/c5_risks.csv",
        metrics="results/c5_replicates/{c5_rep}/c5_metrics.json",
    params:
        cfg=lambda w: c5_replicate_metrics_config(w.c5_rep),
        jobs=[c5_group_Ls(g) for g in C5_JOBS],
        record=c5_record_config(),
        z=config["decision"]["z"],
        seeds=lambda w: c5_any_replicate(w.c5_rep),
    threads: C5["threads"]
    resources:
        runtime=lambda w: 5 + int(C5["eval"]["n_test"] * max(C5["L"]) * len(C5["L"]) * 2e-7),
        mem_mb=lambda w: 1000 + int(C5["eval"]["chunk"] * max(C5["L"]) * (C5["d"] + 1) * 8 * 12 / 1e6),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "replicate_{c5_rep}_metrics"),
    script:
        "../scripts/c5_metrics.py"


rule c5_replicate_verdict:
    """The criteria on one replicate alone (its test-sampling errors)."""
    input:
        metrics="results/c5_replicates/{c5_rep}/c5_metrics.json",
        code=code_inputs("c5_verdict.py"),
    output:
        json="results/c5_replicates/{c5_rep}/verdict.json",
        md="results/c5_replicates/{c5_rep}/verdict.md",
        consistency="results/c5_replicates/{c5_rep}/consistency.json",
        html="results/c5_replicates/{c5_rep}/verdict.html",
    params:
        z=config["decision"]["z"],
        criteria=C5["criteria"],
        checks=C5.get("consistency_checks", []),
        preset=PRESET,
        protocol=c5_protocol(),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "replicate_{c5_rep}_verdict"),
    script:
        "../scripts/c5_verdict.py"


rule c5_replicates_metrics:
    """Per-L risks and gaps as mean +/- standard error across the replicates; the criteria's metrics
    with the jackknife over replicates."""
    input:
        tables=[f"{c5_replicate_dir(n)}/c5_risks.csv" for n in C5_REPS],
        metrics=[f"{c5_replicate_dir(n)}/c5_metrics.json" for n in C5_REPS],
        code=code_inputs("c5_replicates_metrics.py"),
    output:
        table="results/c5_replicates/c5_replicates_risks.csv",
        metrics="results/c5_replicates/c5_replicates_metrics.json",
    params:
        names=list(C5_REPS),
        noise=C5["noise_var"],
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "replicates_metrics"),
    script:
        "../scripts/c5_replicates_metrics.py"


rule c5_replicates_figure:
    """Gap and gap x L against L across replicates (mean +/- se) with the S7 prediction; risks."""
    input:
        table="results/c5_replicates/c5_replicates_risks.csv",
        metrics="results/c5_replicates/c5_replicates_metrics.json",
        code=code_inputs("c5_replicates_figure.py"),
    output:
        png="figures/c5_replicates.png",
        pdf="figures/c5_replicates.pdf",
    params:
        protocol=c5_protocol(),
        curves=config["plot"]["c5_curves"],
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "replicates_figure"),
    script:
        "../scripts/c5_replicates_figure.py"


rule c5_replicates_verdict:
    """The C5 criteria read with the errors across replicates."""
    input:
        metrics="results/c5_replicates/c5_replicates_metrics.json",
        code=code_inputs("c5_replicates_verdict.py"),
    output:
        json="results/c5_replicates/verdict.json",
        md="results/c5_replicates/verdict.md",
        consistency="results/c5_replicates/consistency.json",
        html="results/c5_replicates/verdict.html",
    params:
        z=config["decision"]["z"],
        criteria=C5["criteria"],
        checks=C5.get("consistency_checks", []),
        preset=PRESET,
        protocol=c5_protocol(),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "replicates_verdict"),
    script:
        "../scripts/c5_replicates_verdict.py"


# --------------------------------------------------------------------------- confirmation (target c5_confirm)
# C5e and C5f decided on fresh seeds (c5.confirm): each replicate trains and is evaluated by the
# replicate rules above (results/c5_replicates/<name>); the aggregate is results/c5_confirm/.
C5_CONFIRM = c5_confirm_replicates()


def c5_confirm_inputs(leaf):
    """Each confirmatory replicate's ``leaf``; an input function, so that planning c5_confirm without
    replicates (c5.confirm.replicates empty, no criteria: the config check allows it) stops the dry run."""
    def inputs(wildcards):
        config_check.needs_replicates("c5.confirm.replicates", len(C5_CONFIRM), "the target c5_confirm")
        return [f"{c5_replicate_dir(n)}/{leaf}" for n in C5_CONFIRM]
    return inputs


rule c5_confirm_metrics:
    """Per-L risks and gaps across the confirmatory replicates (mean +/- se across seeds); the criteria's metrics."""
    input:
        tables=c5_confirm_inputs("c5_risks.csv"),
        metrics=c5_confirm_inputs("c5_metrics.json"),
        code=code_inputs("c5_replicates_metrics.py"),
    output:
        table="results/c5_confirm/c5_confirm_risks.csv",
        metrics="results/c5_confirm/c5_confirm_metrics.json",
    params:
        names=list(C5_CONFIRM),
        noise=C5["noise_var"],
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "confirm_metrics"),
    script:
        "../scripts/c5_replicates_metrics.py"


rule c5_confirm_figure:
    """Gap and gap x L against L across the confirmatory replicates with the S7 prediction; risks."""
    input:
        table="results/c5_confirm/c5_confirm_risks.csv",
        metrics="results/c5_confirm/c5_confirm_metrics.json",
        code=code_inputs("c5_replicates_figure.py"),
    output:
        png="figures/c5_confirm.png",
        pdf="figures/c5_confirm.pdf",
    params:
        protocol=c5_protocol(),
        curves=config["plot"]["c5_curves"],
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "confirm_figure"),
    script:
        "../scripts/c5_replicates_figure.py"


rule c5_confirm_verdict:
    """C5e and C5f as written before the confirmatory run (c5.confirm.criteria), read with the errors across its replicates."""
    input:
        metrics="results/c5_confirm/c5_confirm_metrics.json",
        code=code_inputs("c5_replicates_verdict.py"),
    output:
        json="results/c5_confirm/verdict.json",
        md="results/c5_confirm/verdict.md",
        consistency="results/c5_confirm/consistency.json",
        html="results/c5_confirm/verdict.html",
    params:
        z=config["decision"]["z"],
        criteria=C5.get("confirm", {}).get("criteria", []),
        checks=C5.get("consistency_checks", []),
        preset=PRESET,
        protocol=c5_protocol(),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c5", "confirm_verdict"),
    script:
        "../scripts/c5_replicates_verdict.py"


rule c5_confirm:
    """Target: C5e and C5f on the fresh seeds of c5.confirm (not in the default target; each replicate trains ~8 min)."""
    input:
        rules.c5_confirm_metrics.output,
        rules.c5_confirm_figure.output,
        rules.c5_confirm_verdict.output,
        [f"{c5_replicate_dir(n)}/verdict.md" for n in C5_CONFIRM],


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
        cfg={**_c5_section(C5_TASK_KEYS), "limit": C5["limit"]},
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
        sets=list(C5_LIMIT_SETS),
        limit=C5["limit"],
        z=config["decision"]["z"],
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
        rules.c5_replicates_metrics.output,
        rules.c5_replicates_figure.output,
        rules.c5_replicates_verdict.output,
        [f"{c5_replicate_dir(n)}/verdict.md" for n in C5_REPS],


rule c5:
    """Target: every C5 output (docs/maths.md#conventions)."""
    input:
        rules.c5_metrics.output,
        rules.c5_figure.output,
        rules.c5_verdict.output,


ALL_TARGETS.extend(rules.c5.input)
