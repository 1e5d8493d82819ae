# C1 - output concentration (Lemma 2.1, Prop 3.1): probes -> measure (one job per setting, every
# probe and L in it) -> metrics -> figure -> verdict.
from softlin import config_cost

C1 = config["c1"]
C1_SETTINGS = list(C1["settings"])
# the gaps measured: every setting, and the exponent sweep (issue 31) when it has lambdas
C1_MEASURED = C1_SETTINGS + (["exponent"] if C1["exponent"]["lambda"] else [])
C1_L = pow2_range(C1)


rule c1_probes:
    """Probe parameters per setting (Eq. 9 init, theta*, s theta*) with lambda_max(M) and beta (S5)."""
    input:
        code=code_inputs("c1_probes.py"),
    output:
        "results/c1/probes.json",
    params:
        **named(
            settings=[claim_setting("c1", s) for s in C1_SETTINGS],
            probes=C1["probes"],
            exponent=C1["exponent"],
        ),
    resources:
        runtime=2,
        mem_mb=500,
    group:
        "c1_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c1", "probes"),
    message:
        "C1: probe parameters for {params.settings}"
    script:
        "../scripts/c1_probes.py"


rule c1_measure:
    """Per task block and L: mean squared gap between softmax(L) and linear(inf) outputs."""
    input:
        probes="results/c1/probes.json",
        code=code_inputs("c1_measure.py"),
    output:
        "results/c1/gaps/{setting}.npz",
    params:
        **named(
            L=C1_L,
            seed=C1["seed"],
            n_blocks=C1["n_blocks"],
            n_pairs=C1["n_pairs"],
            n_query=C1["n_query"],
            estimator=C1["estimator"],
        ),
    threads: 1
    # longest first (predicted CPU seconds): no measure job runs alone at the end
    priority: lambda w: config_cost.measure_priority(config, "c1", w.setting)
    resources:
        # minutes: 5x the CPU seconds of the claim's measure jobs (grouped on SLURM) + 2 (softlin/config_cost.py)
        runtime=lambda w: config_cost.measure_runtime_min(config, "c1", w.setting),
        mem_mb=lambda w: 800 + int(C1["n_pairs"] * 2 ** C1["log2_L_max"] * C1["n_query"] * 8 * 12 / 1e6),
    group:
        "c1_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c1", "measure_{setting}"),
    benchmark:
        benchfile("c1", "measure_{setting}")
    message:
        "C1: output gaps for {wildcards.setting}, L = {params.L}"
    script:
        "../scripts/c1_measure.py"


rule c1_metrics:
    """RMS gaps, slopes over the upper half of the L range against -beta, increases larger than z
    standard errors: every statistic jackknifed over the task blocks."""
    input:
        probes="results/c1/probes.json",
        gaps=expand("results/c1/gaps/{setting}.npz", setting=C1_MEASURED),
        code=code_inputs("c1_metrics.py"),
    output:
        table="results/c1/c1_concentration.csv",
        metrics="results/c1/c1_concentration.json",
    params:
        **named(
            settings=C1_MEASURED,
            exponent=C1["exponent"],
            L=C1_L,
            n_blocks=C1["n_blocks"],
            z=config["decision"]["z"],
            protocol={k: C1[k] for k in ("log2_L_min", "log2_L_max", "seed", "n_blocks", "n_pairs", "n_query", "estimator")},
        ),
    resources:
        runtime=2,
        mem_mb=500,
    group:
        "c1_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c1", "metrics"),
    script:
        "../scripts/c1_metrics.py"


rule c1_figure:
    """RMS gap vs L, log-log, one line per probe, one panel per setting, L^-beta guides."""
    input:
        table="results/c1/c1_concentration.csv",
        code=code_inputs("c1_figure.py"),
    output:
        png=report("figures/c1_concentration.png", category="C1 concentration", caption="../report/c1_concentration.rst"),
        pdf="figures/c1_concentration.pdf",
    params:
        **named(
            preset=PRESET,
            preset_description=PRESET_DESCRIPTION,
            protocol={k: C1[k] for k in ("log2_L_min", "log2_L_max", "n_blocks", "n_pairs", "n_query")},
            cmap=config["plot"]["probe_cmap"],
        ),
    resources:
        runtime=2,
        mem_mb=500,
    group:
        "c1_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c1", "figure"),
    script:
        "../scripts/c1_figure.py"


rule c1_exponent_figure:
    """The measured exponent across the threshold (the sweep) against -beta and the predicted finite-L band."""
    input:
        metrics="results/c1/c1_concentration.json",
        code=code_inputs("c1_exponent_figure.py"),
    output:
        png=report("figures/c1_exponent.png", category="C1 concentration", caption="../report/c1_exponent.rst"),
        pdf="figures/c1_exponent.pdf",
    params:
        **named(
            preset=PRESET,
            preset_description=PRESET_DESCRIPTION,
            exponent=C1["exponent"],
        ),
    resources:
        runtime=2,
        mem_mb=500,
    group:
        "c1_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c1", "exponent_figure"),
    script:
        "../scripts/c1_exponent_figure.py"


rule c1_verdict:
    """Predeclared criteria C1a-C1f, with the replication an undecided test would need."""
    input:
        metrics="results/c1/c1_concentration.json",
        code=code_inputs("c1_verdict.py"),
    output:
        json=update("results/c1/verdict.json"),
        md=update("results/c1/verdict.md"),
        consistency=update("results/c1/consistency.json"),
        html=report(update("results/c1/verdict.html"), category="C1 concentration", caption="../report/verdict.rst"),
    params:
        **named(
            z=config["decision"]["z"],
            criteria=C1["criteria"],
            checks=C1.get("consistency_checks", []),
            preset=PRESET,
        ),
    resources:
        runtime=1,
        mem_mb=300,
    group:
        "c1_probe"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c1", "verdict"),
    script:
        "../scripts/c1_verdict.py"


localrules:
    c1,


rule c1:
    """Target: every C1 output (docs/maths.md#conventions)."""
    input:
        rules.c1_metrics.output,
        rules.c1_figure.output,
        rules.c1_verdict.output,
        *(rules.c1_exponent_figure.output if C1["exponent"]["lambda"] else []),


ALL_TARGETS.extend(rules.c1.input)
