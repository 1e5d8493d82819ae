"""Optimiser probe for C5's converged variant, on TRAINING LOSS ONLY (no test risk, no C5a/C5b).

    python bench/probe_c5.py adam:0.01:cosine [sgd:0.001:constant ...]

Trains both models at the paper's 19 prompt lengths for 40 000 steps per candidate (shared
stream, seed 2025) and prints each run's convergence by the C5c rule (config c5.convergence).
On a GPU with SOFTLIN_UNROLL=1 a candidate takes about 35 s.
"""
import sys, time
from softlin import online, baselines
from softlin.claims import c5_eval
task = online.make_task(online.kms_sigma(5, .5), 0.1)
Ls = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
conv = {"window_frac": 0.1, "max_rel_drop": 0.02, "escape_frac": 0.5, "reference_tol": 0.05}
for spec in sys.argv[1:]:
    name, lr, sched = spec.split(":")
    t = time.perf_counter()
    out = online.train(task, Ls, steps=40000, chunk=4000, log_every=250, seed=2025,
                       optimizer=online.Optimizer(name, float(lr), schedule=sched))
    print(f"== {spec}: {time.perf_counter() - t:.0f} s", flush=True)
    bad = 0
    for m in ("softmax", "linear"):
        for i, L in enumerate(Ls):
            ref = baselines.gd_risk_closed(L, task.sigma_prompt, task.sigma_query, 0.1, 0.2) if m == "linear" else None
            r = c5_eval.run_convergence(out[m]["loss"][i], out["loss_step"], conv, ref)
            bad += not r["converged"]
            print(m, L, "init %.3f final %.4f esc %s drop %.3f ref %s conv %s" % (r["initial"], r["final"], r["escape_step"], r["rel_drop_end"], ref and round(ref, 4), r["converged"]), flush=True)
    print(f"== {spec}: {bad} unconverged", flush=True)
