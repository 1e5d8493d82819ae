"""Benchmark of the C5 online-SGD step (not a test): full rate, model-only rate, sampling-only rate.

    .venv/bin/python bench/bench_c5.py [--L 1000] [--batch 128] [--steps 400] [--repeats 3]
                                       [--models softmax linear] [--group 1] [--threads N]

Rates are steps per second of the same compiled loop (``softlin.online``), measured after a
warm-up call that compiles it:
  full      sampling a fresh batch from ``fold_in(key, step)`` + forward/backward + SGD update;
  model     the same step on one batch sampled before the loop (no sampling inside; the batch
            is multiplied by (1 + 1e-300 i) == 1 so XLA cannot hoist it out of the loop);
  sampling  only the batch sampler (its output reduced to a scalar so nothing is elided);
for each sampler variant (normals drawn in float32 or float64; threefry / rbg / unsafe_rbg keys).
``--group G`` also times one compiled program training G prompt lengths at once (vmapped, padded
to the largest; the GPU layout of the paper preset).  Best of ``repeats``; on a shared machine
timings are noisy.  The fused kernel alone (128 tasks, Q = 1, D = 6, L) is timed first.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def best_rate(fn, steps, repeats):
    fn()  # compile / warm up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return steps / best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", nargs="+", default=["softmax", "linear"])
    ap.add_argument("--samplers", nargs="+", default=["float32:threefry2x32", "float64:threefry2x32",
                                                       "float32:rbg", "float32:unsafe_rbg"])
    ap.add_argument("--group", type=int, default=1, help="also time G prompt lengths in one program")
    ap.add_argument("--threads", type=int, default=None, help="XLA CPU threads (sets XLA_FLAGS)")
    args = ap.parse_args()
    if args.threads:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={args.threads}")
        os.environ["OMP_NUM_THREADS"] = str(args.threads)

    from softlin._jax import jax, jnp
    from softlin import fused, online

    task = online.make_task(online.kms_sigma(5, 0.5), 0.1)
    tkey, tarr = online._task_static(task)
    L, n, steps = args.L, args.batch, args.steps
    print(f"backend {jax.default_backend()}, devices {jax.devices()}, fused C++ kernel: {fused.available()}")
    print(f"C5 step: batch {n}, L = {L}, d = 5 (D = 6), one query; {steps} steps per timing, best of {args.repeats}")

    # fused kernel alone
    p = online.to_uv(online.init_qkvo(0, 5))
    b = online.sample_batch(jax.random.key(0), n, L, task)
    Lj = jnp.asarray(L, jnp.int64)
    k1 = jax.jit(lambda U, v, zT, zq: fused.softmax_moments(U, v, zT, zq, Lj))
    k2 = jax.jit(lambda U, v, zT, zq: fused.softmax_moments_xla(U, v, zT, zq, Lj))
    for name, k in (("fused C++", k1), ("pure XLA", k2)):
        def f(k=k):
            for _ in range(50):
                out = k(p.U, p.v, b.zT, b.zq)
            jax.block_until_ready(out)
        r = best_rate(f, 50, args.repeats)
        print(f"  softmax_moments ({name}, {n} tasks, Q = 1, L = {L}): {1e3 / r:.3f} ms per call")

    rows = []
    for spec in args.samplers:
        dtype, impl = spec.split(":")
        for model in args.models:
            sched = online.Schedule(model, n, L, 1e-3, 0.0, steps, dtype)
            p0 = online.init_params("qkvo", 0, 5)
            st = online.State(online._stack([p0]), online._stack([online.opt_init(p0)]),
                              jnp.asarray(0, jnp.int64))
            keys = jnp.stack([online.root_key(0, L, impl)])
            Ls = jnp.asarray([L], jnp.int64)
            full = best_rate(lambda: jax.block_until_ready(
                online.run_chunk(st, keys, Ls, tarr, sched, tkey, 1)), steps, args.repeats)

            fixed = online.sample_batch(keys[0], n, L, online.Task(tkey[0], *tarr, tkey[1], tkey[2]),
                                        jnp.dtype(dtype))

            @jax.jit
            def model_only(p, fixed=fixed, model=model):
                def body(i, q):
                    # (1 + 1e-300 i) == 1 exactly: the same batch, but not loop-invariant for XLA
                    bb = fixed._replace(zT=fixed.zT * (1.0 + 1e-300 * i))
                    g = jax.grad(lambda pp: online.mse(model, pp, bb, Ls[0]))(q)
                    return jax.tree.map(lambda a, c: a - 1e-3 * c, q, g)
                return jax.lax.fori_loop(0, steps, body, p)

            mrate = best_rate(lambda: jax.block_until_ready(model_only(p0)), steps, args.repeats)

            @jax.jit
            def sample_only(key, dtype=dtype):
                t = online.Task(tkey[0], *tarr, tkey[1], tkey[2])

                def body(i, acc):
                    bb = online.sample_batch(online.step_key(key, i), n, L, t, jnp.dtype(dtype))
                    return acc + jnp.sum(bb.zT) + jnp.sum(bb.zq) + jnp.sum(bb.yq)
                return jax.lax.fori_loop(0, steps, body, 0.0)

            srate = best_rate(lambda: jax.block_until_ready(sample_only(keys[0])), steps, args.repeats)
            rows.append((model, spec, full, mrate, srate))
            print(f"  {model:8s} {spec:22s} full {full:8.1f}  model-only {mrate:8.1f}  "
                  f"sampling-only {srate:8.1f} steps/s", flush=True)

    print()
    print(f"| model | sampler (normals dtype : key impl) | full steps/s | model-only steps/s | sampling-only steps/s |")
    print("|---|---|---|---|---|")
    for model, spec, full, mrate, srate in rows:
        print(f"| {model} | {spec} | {full:.1f} | {mrate:.1f} | {srate:.1f} |")
    print("Reference (issue text, authors' PyTorch code on this machine, softmax, L = 1000, batch 128, "
          "sampling included): 37 steps/s (1 thread), 54 steps/s (2 threads). Target: >= 80.")

    if args.group > 1:
        Ls_g = [max(1, L * (i + 1) // args.group) for i in range(args.group)]
        for model in args.models:
            sched = online.Schedule(model, n, max(Ls_g), 1e-3, 0.0, steps, "float32")
            p0 = online.init_params("qkvo", 0, 5)
            st = online.State(online._stack([p0] * len(Ls_g)), online._stack([online.opt_init(p0)] * len(Ls_g)),
                              jnp.asarray(0, jnp.int64))
            keys = jnp.stack([online.root_key(0, x) for x in Ls_g])
            r = best_rate(lambda: jax.block_until_ready(online.run_chunk(
                st, keys, jnp.asarray(Ls_g, jnp.int64), tarr, sched, tkey, 1)), steps, args.repeats)
            print(f"group of {len(Ls_g)} prompt lengths {Ls_g} ({model}, padded to {max(Ls_g)}): "
                  f"{r:.1f} group steps/s = {r * len(Ls_g):.1f} run-steps/s")


if __name__ == "__main__":
    main()
