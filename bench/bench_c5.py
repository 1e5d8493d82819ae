"""Benchmark of C5's training (not a test): joint steps/s of the whole experiment, side by side.

    .venv/bin/python bench/bench_c5.py [--steps 200] [--threads 1 2] [--restarts 3]

One *joint step* advances every run of the experiment by one step (38 runs for the paper: both
models at 19 prompt lengths, one shared batch of 128 prompts).  Printed, per thread count:
  joint     the compiled training loop (softlin.online.run_chunk): draw + every run's gradient +
            update, steps/s after compilation, and the projected wall time of 300 000 steps;
  draw      only drawing the batch (128 prompts x 1000 tokens, C++ stream kernel), and the same
            number of standard normals from jax.random (threefry2x32, float32) for comparison;
  softmax   the C++ step without linear runs (draw + 19 softmax moment passes);
  restarts  with --restarts R: the joint loop of R random restarts (R x 38 runs) trained in one
            program on one batch per step, beside R programs one after the other (R x joint);
  authors   the authors' public PyTorch loop as measured on this machine (README): about 25
            CPU-core-hours for the 38 runs of 300 000 steps, i.e. 12.5 h on two cores.
Wall and CPU seconds are both printed: on a loaded machine wall time is noisy, CPU time less so.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

PAPER_L = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
AUTHORS_CORE_HOURS = 25.0  # measured here by the author: 38 runs x 300 000 steps


def child(args):
    import numpy as np

    from softlin import online, online_task, optim, qkvo, stream
    from softlin._jax import jax, jnp

    task = online_task.make_task(online_task.kms_sigma(5, 0.5), 0.1)
    law, key = task.law(), stream.stream_key(2025)
    Ls, n = tuple(PAPER_L), 128
    p0 = qkvo.init_qkvo(0, 5)
    uv = qkvo.to_uv(p0)
    U, v = jnp.stack([uv.U] * len(Ls)), jnp.stack([uv.v] * len(Ls))

    def timed(fn, reps):
        jax.block_until_ready(fn(0))
        w, c = time.perf_counter(), time.process_time()
        for s in range(1, reps + 1):
            jax.block_until_ready(fn(s))
        return (time.perf_counter() - w) / reps, (time.process_time() - c) / reps

    draw = jax.jit(lambda s: stream.sample(law, key, s, n, max(Ls)).zT.sum())
    normals = jax.jit(lambda s: jax.random.normal(jax.random.fold_in(jax.random.key(0), s),
                                                  (n, 6, max(Ls)), jnp.float32).sum())
    soft = jax.jit(lambda s: stream.step_data(law, key, s, n, U, v, Ls, ()).m1.sum())
    opt = optim.Optimizer("sgd", 1e-3, 0.0, 0.9, 0.999, 1e-8, "constant", 10 ** 6, 0)  # the paper's plain SGD
    n_logs = max(1, args.steps // 10)

    def joint(inits):
        """Wall and CPU seconds per joint step of every run of ``Ls`` from each init (one program)."""
        setup = online.Setup(Ls * len(inits), Ls * len(inits), n, 10, False, "shared", 2025, opt)
        params = {m: online.stack_runs([p for p in inits for _ in Ls]) for m in online.TRAINED_MODELS}
        st = online.State(params, {m: optim.opt_init(params[m]) for m in params}, jnp.asarray(0, jnp.int64))
        st, _ = online.run_chunk(st, law, setup, n_logs)  # compilation
        jax.block_until_ready(st)
        w, c = time.perf_counter(), time.process_time()
        st, _ = online.run_chunk(st, law, setup, n_logs)
        jax.block_until_ready(st)
        return (time.perf_counter() - w) / (10 * n_logs), (time.process_time() - c) / (10 * n_logs)

    jw, jc = joint([p0])
    rw = rc = float("nan")
    if args.restarts > 1:
        rw, rc = joint([qkvo.init_qkvo(r, 5) for r in range(args.restarts)])
    reps = max(5, args.steps // 10)
    dw, dc = timed(draw, reps)
    nw, nc = timed(normals, reps)
    sw, sc = timed(soft, reps)
    normals_per_step = n * (max(Ls) * 6 + 11)
    print(f"{args.threads}|{jw}|{jc}|{dw}|{dc}|{nw}|{nc}|{sw}|{sc}|{normals_per_step}|{rw}|{rc}", flush=True)
    np.asarray(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="timed joint steps (after a warm-up chunk)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--restarts", type=int, default=1, help="also time R random restarts in one program")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.threads = int(os.environ["OMP_NUM_THREADS"])
        return child(args)
    rows = []
    for t in args.threads:
        env = {**os.environ, "OMP_NUM_THREADS": str(t)}
        out = subprocess.run([sys.executable, __file__, "--child", "--steps", str(args.steps),
                              "--restarts", str(args.restarts)],
                             env=env, capture_output=True, text=True, check=True).stdout
        rows.append([float(x) for x in out.strip().splitlines()[-1].split("|")])
    print(f"C5 paper layout: 38 runs (softmax + linear at L = {PAPER_L[0]}..{PAPER_L[-1]}, 19 lengths), "
          f"batch 128, d = 5, one shared batch per joint step")
    print(f"{'threads':>7} | {'joint steps/s':>13} | {'CPU ms/step':>11} | {'300k steps':>10} | "
          f"{'draw ms':>7} | {'ours Mnormal/s':>14} | {'jax.random Mnormal/s':>20} | {'draw+softmax ms':>15}")
    for t, jw, jc, dw, dc, nw, nc, sw, sc, nps, rw, rc in rows:
        print(f"{int(t):>7} | {1 / jw:>13.1f} | {1e3 * jc:>11.2f} | {300000 * jw / 60:>7.1f} min | "
              f"{1e3 * dw:>7.2f} | {nps / dw / 1e6:>14.0f} | {nps / nw / 1e6:>20.0f} | {1e3 * sw:>15.2f}")
    if args.restarts > 1:
        R = args.restarts
        print(f"\n{R} random restarts of the 38 runs ({R * 38} runs), 40 000 steps (the default preset):")
        print(f"{'threads':>7} | {'one program: ms/step':>20} | {'40k steps':>9} | {'one after another':>17} | {'40k steps':>9}")
        for t, jw, *_, rw, rc in rows:
            print(f"{int(t):>7} | {1e3 * rw:>20.2f} | {40000 * rw / 60:>5.1f} min | {1e3 * R * jw:>17.2f} | "
                  f"{40000 * R * jw / 60:>5.1f} min")
    print(f"authors' PyTorch loop (measured here, per the issue): {AUTHORS_CORE_HOURS:g} CPU-core-hours "
          f"for the 38 runs, {AUTHORS_CORE_HOURS / 2:g} h on two cores = "
          f"{300000 / (AUTHORS_CORE_HOURS / 2 * 3600):.1f} joint steps/s")


if __name__ == "__main__":
    main()
