# C3 - transfer of the optimisation analysis (Thm 4.3 / 5.1), the seed log's protocol:
# sample -> train (one job per setting x seed, every L in it) -> metrics -> figure -> verdict.
C3 = config["c3"]
C3_RUNS = c3_runs()
# the target c3_replicates: C3 over c3.replicates seeds per setting (the default's seeds first)
C3_REP_RUNS = c3_runs(C3["replicates"])
if any(C3["replicates"].get(s, st["n_seed"]) < st["n_seed"] for s, st in C3["settings"].items()) \
        or set(C3["replicates"]) - set(C3["settings"]):
    raise ValueError("config key 'c3.replicates': {setting: n_seed}, each a c3 setting with at least its own n_seed")
SEED_LOG_C3 = source("workflow/resources/seed_log_c3.json")  # relative to the working directory (common.smk: source)
# the settings a c3_train job's record is shaped by (softlin.claims.c3.runs_like): the one place its
# template's keys are picked, for the job that writes it and every rule that reads it (C2's too)
C3_RECORD = {k: C3[k] for k in ("d", "L", "steps", "record_every", "offblock_seed_order")}


rule c3_sample:
    """Training and held-out tasks of one (setting, seed), docs/maths.md#sampling."""
    input:
        code=code_inputs("c3_sample.py"),
    output:
        train="results/c3/tasks/{setting}_s{seed}.npz",
        eval="results/c3/tasks/{setting}_s{seed}_eval.npz",
    params:
        **named(
            setting=lambda w: c3_setting(w.setting),
            d=C3["d"],
            n_pairs=C3["n_pairs"],
            n_query=C3["n_query"],
            l_max=max(C3["L"]),
            eval=C3["eval"],
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c3", "sample_{setting}_s{seed}"),
    message:
        "C3: sampling tasks for {wildcards.setting}, seed {wildcards.seed}"
    script:
        "../scripts/c3_sample.py"


rule c3_train:
    """linear(inf) once, softmax(L) and linear(L) for every L, from Eq. (9); with
    offblock_seed_order also linear(inf) and softmax(L) without pair summation (C3d)."""
    input:
        tasks="results/c3/tasks/{setting}_s{seed}.npz",
        code=code_inputs("c3_train.py"),
    output:
        "results/c3/trajectories/{setting}_s{seed}.npz",
    params:
        **named(
            record=C3_RECORD,
            lr=C3["lr"],
            convention=C3["loop_convention"],
        ),
    threads: C3["threads"]
    resources:
        # measured: about 2 ms per softmax step at L = 4096 (96 tasks x 2 queries) on one core
        # (the seed-order runs of C3d add one softmax training per L)
        runtime=lambda w: 5 + int(C3["steps"] * sum(C3["L"]) * C3["n_pairs"] * 1e-9
                                  * (2 if C3["offblock_seed_order"] else 1)),
        mem_mb=lambda w: 1000 + int(C3["n_pairs"] * max(C3["L"]) * C3["d"] * 8 * 12 / 1e6),
    group:
        "c3_train"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c3", "train_{setting}_s{seed}"),
    benchmark:
        benchfile("c3", "train_{setting}_s{seed}")
    message:
        "C3: training {wildcards.setting}, seed {wildcards.seed}: linear(inf), then softmax(L) and linear(L) for L = {params.record[L]}"
    script:
        "../scripts/c3_train.py"


rule c3_metrics:
    """Per-seed rows, seed averages, fits with their standard errors across seeds (delete-one-seed
    jackknife), trend tests at the decision rule's z, C3d's growth rates."""
    input:
        traj=[f"results/c3/trajectories/{s}_s{seed}.npz" for s, seed in C3_RUNS],
        eval=[f"results/c3/tasks/{s}_s{seed}_eval.npz" for s, seed in C3_RUNS],
        code=code_inputs("c3_metrics.py"),
    output:
        table="results/c3/c3_transfer.csv",
        per_seed="results/c3/c3_per_seed.csv",
        metrics="results/c3/c3_transfer.json",
    params:
        **named(
            runs=[{"setting": c3_setting(s), "seed": seed} for s, seed in C3_RUNS],
            L=C3["L"],
            eval_L=C3["eval"]["L"],
            z=config["decision"]["z"],
            offblock_rate=C3["offblock_rate"],
            record=C3_RECORD,
            protocol={k: C3[k] for k in ("d", "lr", "steps", "record_every", "loop_convention", "n_pairs", "n_query", "eval")},
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c3", "metrics"),
    message:
        "C3: metrics over {params.L} for {params.runs}"
    script:
        "../scripts/c3_metrics.py"


rule c3_figure:
    """The seed's three panels: trajectory gap vs L, softmax vs linear(L) against vs limit, risk vs L."""
    input:
        table="results/c3/c3_transfer.csv",
        metrics="results/c3/c3_transfer.json",
        code=code_inputs("c3_figure.py"),
    output:
        png=report("figures/c3_transfer.png", category="C3 transfer", caption="../report/c3_transfer.rst"),
        pdf="figures/c3_transfer.pdf",
    params:
        **named(
            preset=PRESET,
            preset_description=PRESET_DESCRIPTION,
            protocol={k: C3[k] for k in ("lr", "steps", "n_pairs", "n_query", "L")},
            colors=config["plot"]["c3_colors"],
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c3", "figure"),
    script:
        "../scripts/c3_figure.py"


rule c3_verdict:
    """Predeclared criteria C3a-C3e; consistency checks, among them the seed log's digits and its
    outcome under its own rule, from the seed log's seeds."""
    input:
        metrics="results/c3/c3_transfer.json",
        per_seed="results/c3/c3_per_seed.csv",
        seed_log=SEED_LOG_C3,
        code=code_inputs("c3_verdict.py"),
    output:
        json=update("results/c3/verdict.json"),
        md=update("results/c3/verdict.md"),
        consistency=update("results/c3/consistency.json"),
        html=report(update("results/c3/verdict.html"), category="C3 transfer", caption="../report/verdict.rst"),
    params:
        **named(
            z=config["decision"]["z"],
            criteria=C3["criteria"],
            checks=C3.get("consistency_checks", []),
            compare_seed_log=C3["compare_seed_log"],
            seed_log_outcome=C3["seed_log_outcome"],
            preset=PRESET,
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c3", "verdict"),
    script:
        "../scripts/c3_verdict.py"


rule c3_replicates_metrics:
    """As c3_metrics over the c3.replicates seeds (the default run's trajectories and more)."""
    input:
        traj=[f"results/c3/trajectories/{s}_s{seed}.npz" for s, seed in C3_REP_RUNS],
        eval=[f"results/c3/tasks/{s}_s{seed}_eval.npz" for s, seed in C3_REP_RUNS],
        code=code_inputs("c3_metrics.py"),
    output:
        table="results/c3_replicates/c3_transfer.csv",
        per_seed="results/c3_replicates/c3_per_seed.csv",
        metrics="results/c3_replicates/c3_transfer.json",
    params:
        **named(
            runs=[{"setting": c3_setting(s), "seed": seed} for s, seed in C3_REP_RUNS],
            L=C3["L"],
            eval_L=C3["eval"]["L"],
            z=config["decision"]["z"],
            offblock_rate=C3["offblock_rate"],
            record=C3_RECORD,
            protocol={k: C3[k] for k in ("d", "lr", "steps", "record_every", "loop_convention", "n_pairs", "n_query", "eval")},
        ),
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c3", "replicates_metrics"),
    script:
        "../scripts/c3_metrics.py"


use rule c3_figure as c3_replicates_figure with:
    input:
        table="results/c3_replicates/c3_transfer.csv",
        metrics="results/c3_replicates/c3_transfer.json",
        code=code_inputs("c3_figure.py"),
    output:
        png="figures/c3_replicates.png",
        pdf="figures/c3_replicates.pdf",
    log:
        logfile("c3", "replicates_figure"),


use rule c3_verdict as c3_replicates_verdict with:
    input:
        metrics="results/c3_replicates/c3_transfer.json",
        per_seed="results/c3_replicates/c3_per_seed.csv",
        seed_log=SEED_LOG_C3,
        code=code_inputs("c3_verdict.py"),
    output:
        json="results/c3_replicates/verdict.json",
        md="results/c3_replicates/verdict.md",
        consistency="results/c3_replicates/consistency.json",
        html="results/c3_replicates/verdict.html",
    log:
        logfile("c3", "replicates_verdict"),


localrules:
    c3,
    c3_replicates,


rule c3_replicates:
    """Target: C3 over c3.replicates seeds per setting (not in the default target: about 4x the
    default's training; committed results in docs/c3_replicates/)."""
    input:
        rules.c3_replicates_metrics.output,
        rules.c3_replicates_figure.output,
        rules.c3_replicates_verdict.output,


rule c3:
    """Target: every C3 output (docs/maths.md#conventions)."""
    input:
        rules.c3_metrics.output,
        rules.c3_figure.output,
        rules.c3_verdict.output,


ALL_TARGETS.extend(rules.c3.input)
