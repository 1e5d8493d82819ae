# C4 - tractable infinite-prompt dynamics (Sec 5, Remark 5.2): flow (one job per covariance:
# population GD, ODE, reduced flow, sampled GD, n_tasks scaling, alpha sweep) -> metrics -> figure -> verdict.
C4 = config["c4"]
C4_SETTINGS = list(C4["settings"])
C4_FLOW_CFG = {k: C4[k] for k in ("lr", "steps", "record_every", "tol", "ode", "sampled", "n_tasks", "alpha_sweep",
                                  "alpha_boundary")}


rule c4_flow:
    """The population flow of linear(inf) from Eq. (9): GD, adaptive ODE, reduced block flow; sampled GD beside it;
    the alpha sweep and the empirical alpha boundary."""
    input:
        code=code_inputs("c4_flow.py"),
    output:
        "results/c4/flows/{setting}.npz",
    params:
        **named(
            setting=lambda w: claim_setting("c4", w.setting),
            cfg=C4_FLOW_CFG,
        ),
    threads: 1
    resources:
        # measured: about 10-15 s per covariance (the ODE needs 1.5k-8k gradient evaluations)
        runtime=3,
        mem_mb=1000,
    group:
        "c4_flow"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c4", "flow_{setting}"),
    benchmark:
        benchfile("c4", "flow_{setting}")
    message:
        "C4: population flows for {wildcards.setting}"
    script:
        "../scripts/c4_flow.py"


rule c4_metrics:
    """Final distances, conservation defects, n_tasks slopes (jackknife over seeds), alpha table and boundary."""
    input:
        flows=expand("results/c4/flows/{setting}.npz", setting=C4_SETTINGS),
        code=code_inputs("c4_metrics.py"),
    output:
        table="results/c4/c4_dynamics.csv",
        alpha="results/c4/c4_alpha.csv",
        metrics="results/c4/c4_dynamics.json",
    params:
        **named(
            settings=[claim_setting("c4", s) for s in C4_SETTINGS],
            tol=C4["tol"],
            gd_tol=C4["gd_tol"],
            protocol=C4_FLOW_CFG,
        ),
    resources:
        runtime=2,
        mem_mb=500,
    group:
        "c4_flow"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c4", "metrics"),
    script:
        "../scripts/c4_metrics.py"


rule c4_figure:
    """Risk and distance to theta* vs time for both flows and sampled GD; conservation defect; n_tasks scaling."""
    input:
        flows=expand("results/c4/flows/{setting}.npz", setting=C4_SETTINGS),
        metrics="results/c4/c4_dynamics.json",
        code=code_inputs("c4_figure.py"),
    output:
        png=report("figures/c4_dynamics.png", category="C4 infinite-prompt dynamics", caption="../report/c4_dynamics.rst"),
        pdf="figures/c4_dynamics.pdf",
    params:
        **named(
            settings=[claim_setting("c4", s) for s in C4_SETTINGS],
            preset=PRESET,
            preset_description=PRESET_DESCRIPTION,
            protocol=C4_FLOW_CFG,
        ),
    resources:
        runtime=2,
        mem_mb=500,
    group:
        "c4_flow"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c4", "figure"),
    script:
        "../scripts/c4_figure.py"


rule c4_verdict:
    """Criterion C4c (consistency checks C4a, C4b, C4d-C4f), with the alpha table, the boundary and the n_tasks slopes."""
    input:
        metrics="results/c4/c4_dynamics.json",
        alpha="results/c4/c4_alpha.csv",
        code=code_inputs("c4_verdict.py"),
    output:
        json=update("results/c4/verdict.json"),
        md=update("results/c4/verdict.md"),
        consistency=update("results/c4/consistency.json"),
        html=report(update("results/c4/verdict.html"), category="C4 infinite-prompt dynamics", caption="../report/verdict.rst"),
    params:
        **named(
            z=config["decision"]["z"],
            criteria=C4["criteria"],
            checks=C4.get("consistency_checks", []),
            preset=PRESET,
            protocol=C4_FLOW_CFG,
        ),
    resources:
        runtime=1,
        mem_mb=300,
    group:
        "c4_flow"
    conda:
        "../envs/softlin.yaml"
    log:
        logfile("c4", "verdict"),
    script:
        "../scripts/c4_verdict.py"


localrules:
    c4,


rule c4:
    """Target: every C4 output (docs/maths.md#conventions)."""
    input:
        rules.c4_metrics.output,
        rules.c4_figure.output,
        rules.c4_verdict.output,


ALL_TARGETS.extend(rules.c4.input)
