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
        code=KERNEL_SOURCES + pkg("online.py", "stream.py", "csrc/online_batch.cc",
                                  "io.py", "progress.py", "claims/c5.py")
        + [str(Path(workflow.basedir) / "symbolic" / "cache.py")],
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
        code=KERNEL_SOURCES + SYMBOLIC_SOURCES
        + pkg("online.py", "stream.py", "csrc/online_batch.cc", "baselines.py", "io.py", "claims/c5.py",
              "claims/c5_eval.py"),
    output:
        table="results/c5/c5_risks.csv",
        metrics="results/c5/c5_metrics.json",
    params:
        cfg=c5_metrics_config(),
        jobs=[c5_group_Ls(g) for g in C5_JOBS],
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
        code=pkg("plots.py"),
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
        code=pkg("verdict.py", "io.py"),
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


localrules:
    c5,


rule c5:
    """Target: every C5 output (docs/maths.md#conventions)."""
    input:
        rules.c5_metrics.output,
        rules.c5_figure.output,
        rules.c5_verdict.output,


ALL_TARGETS.extend(rules.c5.input)
