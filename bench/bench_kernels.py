"""Benchmark of the softmax-risk gradient kernels and of a full softmax training run (not a test).

    .venv/bin/python bench/bench_kernels.py [--L 4096] [--pairs 48] [--steps 2500] [--repeats 7]
                                            [--no-ref-train]

Times, side by side on the seed log's C3 problem (96 tasks = 48 antithetic pairs x 2 queries,
d = 3, L = 4096): one evaluation of (risk, gradient) by
  (a) the JAX kernel with the C++ moments (softlin.kernels; jit'd ``models.softmax_value_and_grad``),
  (b) the same kernel with the pure-XLA moments (a child process with ``SOFTLIN_KERNELS=0``),
  (c) plain autodiff of the naive loss (``models.softmax_risk_autodiff``),
  (d) the numpy reference (``numpy_reference.softmax_loss_grad``);
then a full ``steps``-step training (JAX ``train.gradient_descent`` with each moment kernel, and
the numpy reference loop once), with the per-step time implied inside the compiled loop.  The
"floor" line is numpy's exp over task x query x token elements (one thread), the unavoidable part
of the ~1 exp + ~16 multiply-adds each element needs.  Medians of ``repeats``; timings on a
shared machine are noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def median_time(fn, repeats, warmup=1):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), float(np.min(ts))


def problem(args):
    from softlin import params as P
    from softlin import tasks as T

    sigma = np.eye(3)
    t = T.sample(777, 3, sigma, n_pairs=args.pairs, n_query=2, l_max=args.L)
    return t, P.init_eq9(sigma)


def jax_measurements(args, label):
    """Gradient evaluation and training times of the JAX kernel as this process is configured."""
    import jax

    from softlin import models, train
    from softlin.kernels.build import available

    t, p0 = problem(args)
    data = models.prompt_data(t, args.L)
    out = {f"kernels_available_{label}": available()}
    vg = jax.jit(models.softmax_value_and_grad)
    out[f"grad_{label}"] = median_time(lambda: jax.block_until_ready(vg(p0, data)), args.repeats, 2)
    if label == "kernels":
        ad = jax.jit(jax.value_and_grad(models.softmax_risk_autodiff))
        out["grad_autodiff"] = median_time(lambda: jax.block_until_ready(ad(p0, data)), args.repeats, 2)
    run = lambda: jax.block_until_ready(train.gradient_descent(  # noqa: E731
        "softmax", p0, t, L=args.L, lr=0.01, steps=args.steps, record_every=20, convention="seed"))
    t0 = time.perf_counter()
    run()
    out[f"train_{label}_first"] = time.perf_counter() - t0  # includes compilation
    out[f"train_{label}"] = median_time(run, max(1, args.train_repeats), 0)
    return out


def threads_info():
    info = {"os.cpu_count": os.cpu_count(),
            "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "(unset: OpenMP uses all)"),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}
    try:
        from threadpoolctl import threadpool_info

        info["numpy BLAS threads"] = [p.get("num_threads") for p in threadpool_info()]
    except ImportError:
        pass
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=4096)
    ap.add_argument("--pairs", type=int, default=48)
    ap.add_argument("--steps", type=int, default=2500)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--train-repeats", type=int, default=3)
    ap.add_argument("--no-ref-train", action="store_true", help="skip the (slow) numpy training run")
    ap.add_argument("--child", choices=["xla"], help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:  # SOFTLIN_KERNELS=0 child: pure-XLA moments
        print(json.dumps(jax_measurements(args, "xla")))
        return

    n_tasks, n_q = 2 * args.pairs, 2
    n_elem = n_tasks * n_q * args.L
    print(f"softmax risk+gradient: {n_tasks} tasks x {n_q} queries x L={args.L}, d=3 "
          f"({n_elem:,} task-query-token elements); training {args.steps} steps (seed loop: "
          f"{args.steps + 1} evaluations)")
    for k, v in threads_info().items():
        print(f"  {k}: {v}")

    res = jax_measurements(args, "kernels")
    env = dict(os.environ, SOFTLIN_KERNELS="0", PYTHONPATH=ROOT)
    child = subprocess.run([sys.executable, __file__, "--child", "xla", "--L", str(args.L),
                            "--pairs", str(args.pairs), "--steps", str(args.steps),
                            "--repeats", str(args.repeats), "--train-repeats", str(args.train_repeats)],
                           env=env, capture_output=True, text=True, check=True)
    res.update(json.loads(child.stdout.strip().splitlines()[-1]))

    from softlin import numpy_reference as ref

    t, p0 = problem(args)
    rt = ref.ICLTasks.from_arrays(t.x, t.w, t.xq, t.sigma)
    res["grad_numpy"] = median_time(lambda: ref.softmax_loss_grad(rt, p0.U, p0.v, args.L),
                                    max(3, args.repeats // 2), 1)
    x = np.random.default_rng(0).normal(size=n_elem)
    res["exp_floor"] = median_time(lambda: np.exp(x), args.repeats, 1)
    if not args.no_ref_train:
        t0 = time.perf_counter()
        ref.train(rt, p0.U, p0.v, "softmax", L=args.L, lr=0.01, steps=args.steps, record_every=20)
        res["train_numpy"] = (time.perf_counter() - t0, time.perf_counter() - t0)

    n_eval = args.steps + 1
    print(f"\n  C++ kernels in use: (a) {res['kernels_available_kernels']}, (b) {res['kernels_available_xla']}")
    print(f"\n  {'(risk, gradient) at L=%d' % args.L:44s} {'median':>10s} {'min':>10s} {'x (a)':>8s}")
    base = res["grad_kernels"][0]
    rows = [("(a) JAX, C++ moments", "grad_kernels"), ("(b) JAX, pure-XLA moments", "grad_xla"),
            ("(c) JAX, autodiff of the naive loss", "grad_autodiff"),
            ("(d) numpy reference", "grad_numpy"), ("    floor: numpy exp over the elements", "exp_floor")]
    for name, k in rows:
        med, mn = res[k]
        print(f"  {name:44s} {med * 1e3:8.2f}ms {mn * 1e3:8.2f}ms {med / base:8.2f}")
    print(f"\n  {'training, %d steps' % args.steps:44s} {'total':>10s} {'per step':>10s} {'1st call':>10s}")
    for name, k in [("JAX gradient_descent, C++ moments", "train_kernels"),
                    ("JAX gradient_descent, pure-XLA moments", "train_xla"),
                    ("numpy reference train (once)", "train_numpy")]:
        if k not in res:
            continue
        tot = res[k][0]
        first = res.get(k + "_first")
        print(f"  {name:44s} {tot:9.2f}s {tot / n_eval * 1e3:8.2f}ms "
              + (f"{first:9.2f}s" if first is not None else f"{'':>10s}"))
    print("\n  per step inside the compiled loop vs a standalone jit'd call: "
          f"{res['train_kernels'][0] / n_eval * 1e3:.2f} ms vs {base * 1e3:.2f} ms (C++ moments)")


if __name__ == "__main__":
    main()
