"""C5 on a GPU (the XLA path): the stream equals the CPU kernel's, and joint steps/s of the paper layout.

    python bench/gpu_check_c5.py OUTDIR [--steps 2000]

Writes OUTDIR/stream_gpu.npz (a batch of the training stream drawn on the GPU, to compare with
the CPU kernel's draw of the same step) and prints the joint steps/s of the 38-run paper layout.
"""
import sys
import time

import numpy as np

from softlin import online, online_task, optim, qkvo, stream
from softlin._jax import jax, jnp

out, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000
print("backend", jax.default_backend(), jax.devices(), flush=True)
task = online_task.make_task(online_task.kms_sigma(5, 0.5), 0.1)
law, key = task.law(), stream.stream_key(2025)
b = stream.sample(law, key, 7, 16, 45)
b64 = stream.sample(law, key, 7, 16, 45, True)
np.savez(f"{out}/stream_gpu.npz", zT=np.asarray(b.zT), zq=np.asarray(b.zq), yq=np.asarray(b.yq),
         zT64=np.asarray(b64.zT))
Ls = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000)
sgd = optim.Optimizer("sgd", 1e-3, 0.0, 0.9, 0.999, 1e-8, "constant", 300000, 0)
setup = online.Setup(Ls, Ls, 128, 100, False, "shared", 2025, sgd)
p0 = qkvo.init_qkvo(0, 5)
params = {m: online.stack_runs([p0] * len(Ls)) for m in online.TRAINED_MODELS}
st = online.State(params, {m: optim.opt_init(params[m]) for m in params}, jnp.asarray(0, jnp.int64))
t = time.perf_counter()
st, _ = online.run_chunk(st, law, setup, 10)
jax.block_until_ready(st)
print(f"compile + 1000 steps: {time.perf_counter() - t:.1f} s", flush=True)
t = time.perf_counter()
st, losses = online.run_chunk(st, law, setup, steps // 100)
jax.block_until_ready(st)
dt = time.perf_counter() - t
print(f"{steps} joint steps in {dt:.2f} s: {steps / dt:.1f} joint steps/s; "
      f"300k steps: {300000 * dt / steps / 60:.1f} min", flush=True)
print("loss softmax L=100 last:", float(losses["softmax"][9, -1]), flush=True)
