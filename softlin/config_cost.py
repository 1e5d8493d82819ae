"""Size guards: a cost model of each claim's work (CPU time and the largest job's memory) from
its config, checked before any job starts.

A claim whose largest job needs more memory than this machine has, or whose estimated CPU time
exceeds ``max_cpu_hours``, stops the dry run with one line that prints the estimate, unless
``allow_large: true``.  The estimates are rough (a factor of ~3 either way): they count the
softmax-moment evaluations (token x query x task x probe or step) at the C++ kernel's measured
2.1e-9 s each (docs/performance.md: 1.65 ms per C3 step of 96 tasks x 2 queries x 4096 tokens),
C1's and C2's measure jobs at :func:`measure_seconds` (bench/bench_c1c2_prefix.py), C5's steps at
:func:`c5_step_seconds` (bench/bench_c5.py), and memory as the arrays a job holds.  They are meant
to tell seconds from months and megabytes from terabytes, not to schedule; the SLURM runtime of
C1's and C2's measure jobs (:func:`measure_runtime_min`) is the same model with a margin.
"""

from __future__ import annotations

import math
import os

TOKEN_S = 2.1e-9          # CPU seconds per softmax-moment token evaluation (C1-C3, C5's test set)
# C1/C2's measure (prefix kernel, one pass over L_max per probe), fitted to bench/bench_c1c2_prefix.py
# on the 2-core machine under load ~3 (docs/performance.md): per block 0.19 s at C1's 6 probes,
# 0.43 s at its 13-probe exponent sweep, 0.10-0.15 s at C2's 13 probes (32 and 8 tasks x 4 queries
# x 65536 tokens), and 0.05 s (C1) or 0.01 s (C2) to draw the block
C12_TOKEN_S = 4e-9        # CPU seconds per token x query x task x probe of a measure job
C12_TASK_TOKEN_S = 4e-8   # CPU seconds per token x task of a block: its draw and its token array
SLURM_MARGIN = 5.0        # a measure job's SLURM runtime: this times its claim's estimate (+ 2 min)
TASK_STEP_S = 1e-7        # C4: one task's linear(inf) gradient step (no prompt)
C2_TRAJ_CALL_S = 1.9e-5   # C2e: one (block, recorded iterate, L) gradient gap (0.28 s per prompt draw of 12 x 126 x 10)
BASE_MB = 1500            # a job's Python, JAX and Snakemake


def machine_mb() -> float:
    """This machine's physical memory in MB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e6


def c5_step_seconds(c5: dict, Ls) -> float:
    """Predicted CPU seconds of one joint step of a C5 group (both models, shared stream) on one
    thread, at batch 128, d = 5: drawing the batch ~6.8e-6 s per token of the longest prompt, the
    softmax moments ~1.1e-6 s per token per run, ~4 ms for everything else (bench/bench_c5.py on
    an idle machine: 17.3 ms per step of the paper layout); random restarts share the draw."""
    per_stream = 1 if c5["streams"] == "shared" else len(Ls)
    draw = 6.8e-6 * (max(Ls) if per_stream == 1 else sum(Ls))
    return (draw + c5["restarts"] * (4e-3 + 1.1e-6 * sum(Ls))) * c5["batch"] / 128


def c5_train_seconds(c5: dict, Ls) -> float:
    """Predicted CPU seconds of a C5 training job of the group ``Ls`` on one thread:
    ``c5.steps`` x :func:`c5_step_seconds`."""
    return c5["steps"] * c5_step_seconds(c5, Ls)


def c5_mem_mb(c5: dict, Ls) -> int:
    """Memory (MB) of a C5 training job over the lengths ``Ls``: a batch of the longest prompt."""
    return BASE_MB + int(c5["batch"] * (max(Ls) + 2) * (c5["d"] + 2) * 8 * 4 / 1e6)


def _pow2(sec):
    return [2 ** j for j in range(sec["log2_L_min"], sec["log2_L_max"] + 1)]


def _n_probes(c1: dict, st: dict) -> int:
    on = {**c1["probes"], **(st.get("probes") or {})}
    return int(on["eq9"]) + int(on["star"]) + len(on["scaled_lambda"])


def measure_jobs(cfg: dict, claim: str) -> dict:
    """``{setting: probes}`` of the measure jobs of ``claim`` ("c1": every setting and the exponent
    sweep ``exponent`` when it has lambdas; "c2": every C1 setting with C2's sweep where it runs)."""
    c1 = cfg["c1"]
    if claim == "c1":
        out = {name: _n_probes(c1, st) for name, st in c1["settings"].items()}
        if (c1.get("exponent") or {}).get("lambda"):
            out["exponent"] = len(c1["exponent"]["lambda"])
        return out
    sweep = cfg["c2"]["sweep"]
    return {name: _n_probes(c1, st) + (len(sweep["lambda"]) if name in sweep["settings"] else 0)
            for name, st in c1["settings"].items()}


def blocks_of(sec: dict, setting: str) -> int:
    """Task blocks of ``setting``'s measure job: ``n_blocks`` times the setting's ``blocks_factor`` (C2; 1
    where it does not name the setting)."""
    return int(sec["n_blocks"]) * int((sec.get("blocks_factor") or {}).get(setting, 1))


def blocks_text(n_blocks: int, by_setting: dict | None = None) -> str:
    """``"256 blocks"``, or ``"256 blocks (isotropic 1024)"`` where settings differ from ``n_blocks``."""
    other = [f"{s} {n}" for s, n in (by_setting or {}).items() if n != n_blocks]
    return f"{n_blocks} blocks" + (f" ({', '.join(other)})" if other else "")


def measure_seconds(sec: dict, n_probes: int, n_blocks: int | None = None) -> float:
    """Predicted CPU seconds of one C1/C2 measure job of ``n_probes`` probes on one thread, from its
    section ``sec`` (c1 or c2) and its blocks (default ``n_blocks``): blocks x tasks x L_max x (draw +
    queries x probes x kernel)."""
    work = (sec["n_blocks"] if n_blocks is None else n_blocks) * 2 * sec["n_pairs"] * max(_pow2(sec))
    return work * (C12_TASK_TOKEN_S + C12_TOKEN_S * sec["n_query"] * n_probes)


def measure_runtime_min(cfg: dict, claim: str, setting: str) -> int:
    """Minutes a c1_measure / c2_measure job may take (its SLURM runtime): SLURM_MARGIN x the
    :func:`measure_seconds` of every measure job of ``claim`` + 2 (start, imports, compilation).
    The whole claim's, not the job's: the SLURM profile groups them (``c1_probe``, ``c2_probe``)
    into one allocation that runs them one after the other but may be sized as if side by side
    (docs/cluster.md); ``setting`` must name one of them."""
    jobs = measure_jobs(cfg, claim)
    if setting not in jobs:
        raise ValueError(f"{claim} has no measure job {setting!r}: {sorted(jobs)}")
    return 2 + math.ceil(SLURM_MARGIN * claim_measure_seconds(cfg, claim) / 60)


def measure_priority(cfg: dict, claim: str, setting: str) -> int:
    """A measure job's scheduling priority: its predicted CPU seconds (:func:`measure_seconds` at its
    setting's blocks), so the longest measure jobs start first and none runs alone at the end (C2's
    isotropic job at 4x the blocks of the others)."""
    return int(job_measure_seconds(cfg, claim, setting))


def job_measure_seconds(cfg: dict, claim: str, setting: str) -> float:
    """Predicted CPU seconds of ``claim``'s measure job of ``setting`` (:func:`measure_seconds` at its probes
    and its setting's blocks)."""
    sec = cfg[claim]
    return measure_seconds(sec, measure_jobs(cfg, claim)[setting], blocks_of(sec, setting))


def claim_measure_seconds(cfg: dict, claim: str) -> float:
    """Predicted CPU seconds of all of ``claim``'s measure jobs (:func:`job_measure_seconds`)."""
    return sum(job_measure_seconds(cfg, claim, name) for name in measure_jobs(cfg, claim))


def trajectory_seconds(cfg: dict) -> float:
    """Predicted CPU seconds of one c2_trajectory job (one setting, all of C2e's seeds): a gradient gap
    per block, recorded iterate and L for each seed and prompt draw."""
    c3, t = cfg["c3"], cfg["c2"]["trajectory"]
    return C2_TRAJ_CALL_S * t.get("n_seeds", 1) * t.get("n_prompts", 1) * t["n_blocks"] * n_recorded(c3) * len(c3["L"])


def trajectory_runtime_min(cfg: dict) -> int:
    """Minutes a c2_trajectory job may take (its SLURM runtime): SLURM_MARGIN x
    :func:`trajectory_seconds` + 2 (start, imports, compilation), at least 3."""
    return max(3, 2 + math.ceil(SLURM_MARGIN * trajectory_seconds(cfg) / 60))


def n_recorded(c3: dict) -> int:
    """Recorded iterates of a C3 trajectory (the start and every ``record_every`` steps)."""
    return c3["steps"] // c3["record_every"] + 1


def trajectory_record_mb(cfg: dict) -> float:
    """MB of one C2e record, one C3 seed's (``block_diff``: prompt draws x blocks x recorded iterates x L x
    (d+1)^2 + d+1 floats): what a c2_trajectory job holds per seed beside Python and JAX (c2_metrics
    holds every seed's)."""
    c3, t = cfg["c3"], cfg["c2"]["trajectory"]
    D = c3["d"] + 1
    return 8 * t.get("n_prompts", 1) * t["n_blocks"] * n_recorded(c3) * len(c3["L"]) * (D * D + D) / 1e6


def estimates(cfg: dict) -> dict:
    """``{claim: (cpu_seconds, largest job's MB)}`` for every claim section of ``cfg``."""
    out = {}
    c1, c2, c3, c4, c5 = (cfg.get(k) for k in ("c1", "c2", "c3", "c4", "c5"))
    if c1 is not None:
        L, tasks = max(_pow2(c1)), 2 * c1["n_pairs"]
        d = max(len(st["sigma"]) for st in c1["settings"].values())
        cpu = claim_measure_seconds(cfg, "c1")
        out["c1"] = (cpu, BASE_MB + 8 * tasks * L * (d + 1 + 2 * c1["n_query"]) * 4 / 1e6)
    if c2 is not None and c1 is not None:
        L, tasks = max(_pow2(c2)), 2 * c2["n_pairs"]
        d = max(len(st["sigma"]) for st in c1["settings"].values())
        cpu = claim_measure_seconds(cfg, "c2")
        mb = BASE_MB + 8 * tasks * L * (d + 1) * (1 + c2["n_query"]) * 4 / 1e6
        if c3 is not None and "trajectory" in c2:       # C2e: every prompt draw re-reads every recorded iterate
            t = c2["trajectory"]
            n_traj = len(t["settings"]) * t.get("n_seeds", 1)
            cpu += len(t["settings"]) * trajectory_seconds(cfg)
            # c2_trajectory: one seed's record, built as a list then stacked; c2_metrics: every record
            mb = max(mb, BASE_MB + max(3, 2 * n_traj) * trajectory_record_mb(cfg))
        out["c2"] = (cpu, mb)
    if c3 is not None:
        runs = sum(st["n_seed"] for st in c3["settings"].values())
        twins = 2 if c3["offblock_seed_order"] else 1
        tasks, ev = 2 * c3["n_pairs"], 2 * c3["eval"]["n_pairs"]
        per_run = (c3["steps"] + 1) * tasks * c3["n_query"] * sum(c3["L"]) * twins
        per_run += ev * c3["eval"]["n_query"] * c3["eval"]["L"] * len(c3["L"]) * 3
        mem = 8 * (c3["d"] + 1) * (tasks * max(c3["L"]) * (1 + c3["n_query"]) + ev * c3["eval"]["L"]) * 4 / 1e6
        out["c3"] = (TOKEN_S * runs * per_run, BASE_MB + mem)
    if c4 is not None:
        nt = c4["n_tasks"]
        work = nt["n_seed"] * sum(nt["n_pairs"]) * 2 * nt["n_query"] * nt["steps"]
        work += 2 * c4["sampled"]["n_pairs"] * c4["sampled"]["n_query"] * c4["steps"]
        out["c4"] = (TASK_STEP_S * work * len(c4["settings"]), BASE_MB + 8 * 16 * max(nt["n_pairs"]) * 64 / 1e6)
    if c5 is not None:
        k = c5["L_per_job"] or len(c5["L"])
        groups = [c5["L"][i:i + k] for i in range(0, len(c5["L"]), k)]
        train = sum(c5_train_seconds(c5, g) for g in groups)
        ev = c5["eval"]
        test = TOKEN_S * ev["n_test"] * sum(c5["L"]) * (c5["d"] + 1) * 16
        mem_eval = BASE_MB + ev["chunk"] * max(c5["L"]) * (c5["d"] + 2) * 8 * 4 / 1e6
        out["c5"] = (train + test, max(max(c5_mem_mb(c5, g) for g in groups), mem_eval))
    return out


def _human(seconds: float) -> str:
    for unit, size in (("years", 3.15e7), ("days", 86400), ("hours", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def check(cfg: dict, total_mb: float | None = None) -> None:
    """ValueError (one line with the estimate) for the first claim over the bounds, unless
    ``cfg['allow_large']``."""
    if cfg.get("allow_large"):
        return
    total_mb = machine_mb() if total_mb is None else total_mb
    limit_s = 3600.0 * cfg.get("max_cpu_hours", 24)
    for claim, (cpu_s, mb) in estimates(cfg).items():
        if mb > total_mb:
            raise ValueError(f"config key '{claim}': its largest job needs about {mb / 1e3:.3g} GB of memory, "
                             f"this machine has {total_mb / 1e3:.3g} GB (estimate: softlin/config_cost.py; "
                             "--config allow_large=true to run it anyway)")
        if cpu_s > limit_s:
            raise ValueError(f"config key '{claim}': about {_human(cpu_s)} of CPU time, over max_cpu_hours = "
                             f"{cfg.get('max_cpu_hours', 24):g} (estimate: softlin/config_cost.py; "
                             "--config allow_large=true to run it anyway)")
