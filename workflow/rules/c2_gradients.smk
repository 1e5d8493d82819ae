# C2 - gradient concentration (Prop 3.4) at the C1 probes and a threshold sweep (one job per C1
# setting), and along C3's linear(inf) trajectory -> metrics -> figures -> verdict.
from softlin import config_cost

C2 = config["c2"]
C2_SETTINGS = list(config["c1"]["settings"])
C2_L = pow2_range(C2)
# C2e: task seeds seed0 + c3.seed_stride i, i < n_seeds (seed0 absent: c3.seed0, so C3's own seeds come
# first); the same seeds in every C3 setting
C2_TRAJ_SEED0 = config["c3"]["seed0"] if C2["trajectory"].get("seed0") is None else C2["trajectory"]["seed0"]
C2_TRAJ_SEEDS = [C2_TRAJ_SEED0 + config["c3"]["seed_stride"] * i for i in range(C2["trajectory"]["n_seeds"])]
C2_TRAJ = C2["trajectory"]["settings"]
# the threshold sweep's lambda_max targets measured in each setting (none outside the sweep's settings)
C2_SWEEP = {s: C2["sweep"]["lambda"] if s in C2["sweep"]["settings"] else [] for s in C2_SETTINGS}
# each setting's task blocks: c2.n_blocks times its c2.blocks_factor (1 where it names none)
C2_BLOCKS = {s: config_cost.blocks_of(C2, s) for s in C2_SETTINGS}


rule c2_measure:
    """Per task block and L: grad R_L^softmax - grad R_inf on the same tasks, at the C1 probes (+ sweep)."""
    input:
        probes="results/c1/probes.json",
        code=code_inputs("c2_measure.py"),
    output:
        "results/c2/gaps/{setting}.npz",
    params:
        **named(
            L=C2_L,
            seed=C2["seed"],
            n_blocks=lambda w: C2_BLOCKS[w.setting],
            n_pairs=C2["n_pairs"],
            n_query=C2["n_query"],
            sweep=lambda w: C2_SWEEP[w.setting],
            estimator=C2["estimator"],
        ),
    threads: 1
    # longest first (predicted CPU seconds): no measure job runs alone at the end
    priority: lambda w: config_cost.measure_priority(config, "c2", w.setting)
    resources:
        # minutes: 5x the CPU seconds of the claim's measure jobs (grouped on SLURM) + 2 (softlin/config_cost.py)
        runtime=lambda w: config_cost.measure_runtime_min(config, "c2", w.setting),
        mem_mb=lambda w: 800 + int(C2["n_pairs"] * 2 ** C2["log2_L_max"] * C2["n_query"] * 8 * 12 / 1e6),
    group:
        "c2_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c2", "measure_{setting}"),
    benchmark:
        benchfile("c2", "measure_{setting}")
    message:
        "C2: gradient gaps for {wildcards.setting}, {params.n_blocks} task blocks, L = {params.L}, sweep lambda = {params.sweep}"
    script:
        "../scripts/c2_measure.py"


rule c2_trajectory:
    """Gradient gaps at every recorded iterate of C3's linear(inf) run on the training tasks of each of
    C2e's seeds (one record each); one job per setting (one compilation for its seeds). The job draws
    the tasks (bit for bit c3_sample's) and trains linear(inf) (C3's protocol, bit for bit C3's run): it
    needs no prompt, so nothing of C3's jobs."""
    input:
        code=code_inputs("c2_trajectory.py"),
    output:
        expand("results/c2/trajectory/{{setting}}_s{seed}.npz", seed=C2_TRAJ_SEEDS),
    params:
        **named(
            seeds=C2_TRAJ_SEEDS,
            setting=lambda w: c3_setting(w.setting),
            d=config["c3"]["d"],
            n_pairs=config["c3"]["n_pairs"],
            n_query=config["c3"]["n_query"],
            l_max=max(config["c3"]["L"]),
            L=config["c3"]["L"],
            n_blocks=C2["trajectory"]["n_blocks"],
            n_prompts=C2["trajectory"]["n_prompts"],
            prompt_seed=C2["trajectory"]["prompt_seed"],
            lr=config["c3"]["lr"],
            steps=config["c3"]["steps"],
            record_every=config["c3"]["record_every"],
            convention=config["c3"]["loop_convention"],
        ),
    threads: 1
    priority: lambda w: int(config_cost.trajectory_seconds(config))   # longest first, as the measure jobs
    resources:
        runtime=lambda w: config_cost.trajectory_runtime_min(config),
        mem_mb=1000 + int(3 * config_cost.trajectory_record_mb(config)),   # one seed's record, built as a list then stacked
    group:
        "c2_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c2", "trajectory_{setting}"),
    benchmark:
        benchfile("c2", "trajectory_{setting}")
    message:
        "C2: C3's training tasks drawn, linear(inf) trained, its gradient gaps, {wildcards.setting}, seeds {params.seeds}"
    script:
        "../scripts/c2_trajectory.py"


rule c2_metrics:
    """Per-query and pooled gradient gaps, slopes vs -beta, the sweep, the trajectory maxima: every
    statistic jackknifed over independent task blocks (blocks of C3's pairs for the trajectory)."""
    input:
        probes="results/c1/probes.json",
        gaps=expand("results/c2/gaps/{setting}.npz", setting=C2_SETTINGS),
        traj=expand("results/c2/trajectory/{setting}_s{seed}.npz", setting=C2_TRAJ, seed=C2_TRAJ_SEEDS),
        code=code_inputs("c2_metrics.py"),
    output:
        table="results/c2/c2_gradients.csv",
        trajectory="results/c2/c2_trajectory.csv",
        metrics="results/c2/c2_gradients.json",
    params:
        **named(
            settings=C2_SETTINGS,
            sweep=C2["sweep"],
            probe_sweeps=C2_SWEEP,
            traj_settings=C2_TRAJ,
            traj_seeds=C2_TRAJ_SEEDS,
            seed_log_slope=C2["trajectory"]["seed_log_slope"],
            n_boot=C2["n_boot"],
            seed=C2["seed"],
            z=config["decision"]["z"],
            L=C2_L,
            traj_record=dict(C3_RECORD, n_blocks=C2["trajectory"]["n_blocks"], n_prompts=C2["trajectory"]["n_prompts"]),
            protocol={k: C2[k] for k in ("log2_L_min", "log2_L_max", "seed", "n_blocks", "n_pairs", "n_query", "estimator")}
            | {"n_blocks_by_setting": C2_BLOCKS, "trajectory_n_prompts": C2["trajectory"]["n_prompts"],
               "trajectory_n_seeds": C2["trajectory"]["n_seeds"]},
        ),
    resources:
        runtime=2,
        mem_mb=800 + int(2 * len(C2_TRAJ) * len(C2_TRAJ_SEEDS) * config_cost.trajectory_record_mb(config)),
    group:
        "c2_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c2", "metrics"),
    script:
        "../scripts/c2_metrics.py"


rule c2_figure:
    """Gap vs L (U and v parts, trajectory maxima); measured slope vs lambda_max(M) with the prediction."""
    input:
        table="results/c2/c2_gradients.csv",
        trajectory="results/c2/c2_trajectory.csv",
        metrics="results/c2/c2_gradients.json",
        code=code_inputs("c2_figure.py"),
    output:
        gaps=report("figures/c2_gradients.png", category="C2 gradient concentration", caption="../report/c2_gradients.rst"),
        gaps_pdf="figures/c2_gradients.pdf",
        sweep=report("figures/c2_threshold.png", category="C2 gradient concentration", caption="../report/c2_threshold.rst"),
        sweep_pdf="figures/c2_threshold.pdf",
    params:
        **named(
            preset=PRESET,
            preset_description=PRESET_DESCRIPTION,
            protocol={k: C2[k] for k in ("log2_L_min", "log2_L_max", "n_blocks", "n_pairs", "n_query")}
            | {"n_blocks_by_setting": C2_BLOCKS},
            blocks=config_cost.blocks_text(C2["n_blocks"], C2_BLOCKS),
            seed_log_slope=C2["trajectory"]["seed_log_slope"],
            cmap=config["plot"]["probe_cmap"],
        ),
    resources:
        runtime=2,
        mem_mb=500,
    group:
        "c2_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c2", "figure"),
    script:
        "../scripts/c2_figure.py"


rule c2_verdict:
    """Predeclared criteria C2a-C2f, with the replication an undecided test would need."""
    input:
        metrics="results/c2/c2_gradients.json",
        code=code_inputs("c2_verdict.py"),
    output:
        json=update("results/c2/verdict.json"),
        md=update("results/c2/verdict.md"),
        consistency=update("results/c2/consistency.json"),
        html=report(update("results/c2/verdict.html"), category="C2 gradient concentration", caption="../report/verdict.rst"),
    params:
        **named(
            z=config["decision"]["z"],
            criteria=C2["criteria"],
            checks=C2.get("consistency_checks", []),
            preset=PRESET,
        ),
    resources:
        runtime=1,
        mem_mb=300,
    group:
        "c2_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c2", "verdict"),
    script:
        "../scripts/c2_verdict.py"


localrules:
    c2,


rule c2:
    """Target: every C2 output (docs/maths.md#conventions)."""
    input:
        rules.c2_metrics.output,
        rules.c2_figure.output,
        rules.c2_verdict.output,


ALL_TARGETS.extend(rules.c2.input)
