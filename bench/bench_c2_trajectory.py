"""C2e's gradient gaps per block of C3's training pairs, side by side (issue 31): the former path (one
autodiff call of softmax(L)'s and linear(inf)'s risk gradients per recorded iterate and L) against
``concentration.grad_gaps`` (the prefix kernel, every L in one pass, every iterate in one compiled call),
on the same tasks and parameters; prints seconds per block of each, their ratio and the largest
difference.  C3's shapes: 4 antithetic pairs x 2 queries per block, L = 8 .. 4096, 126 iterates.

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python bench/bench_c2_trajectory.py --reps 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from softlin import concentration as conc  # noqa: E402
from softlin import models, params, population  # noqa: E402
from softlin._jax import jax  # noqa: E402
from softlin.params import Params  # noqa: E402
from softlin.tasks import sample  # noqa: E402

_softmax_vg = jax.jit(models.softmax_value_and_grad)
_linear_vg = jax.jit(models.linear_value_and_grad)


def former(plist, tasks, Ls) -> np.ndarray:
    """The path C2e used through stop 37: per parameter and L one autodiff call; (n_params, n_L, K)."""
    data = models.prompt_data(tasks, max(Ls))
    lim = models.model_data("limit", tasks)
    D = tasks.d + 1
    out = np.empty((len(plist), len(Ls), D * D + D))
    for i, p in enumerate(plist):
        p = Params(jax.numpy.asarray(p.U), jax.numpy.asarray(p.v))
        g_inf = params.flatten(_linear_vg(p, lim)[1])
        for j, L in enumerate(Ls):
            out[i, j] = params.flatten(_softmax_vg(p, models.with_length(data, L))[1]) - g_inf
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iterates", type=int, default=126)
    args = ap.parse_args()
    sigma = np.diag([2.0, 1.0, 0.5])
    Ls = [2 ** k for k in range(3, 13)]
    tasks = sample(4242, 3, sigma, 4, 2, max(Ls))
    star = population.bayes_optimum(sigma)
    rng = np.random.default_rng(1)
    plist = [Params(np.asarray(star.U) * (0.2 + 0.8 * k / args.iterates) + 0.01 * rng.standard_normal((4, 4)),
                    np.asarray(star.v) + 0.01 * rng.standard_normal(4)) for k in range(args.iterates)]
    paths = {"former (autodiff per iterate and L)": former, "grad_gaps (prefix kernel, one call)": conc.grad_gaps}
    secs, outs = {}, {}
    for name, fn in paths.items():
        outs[name] = fn(plist, tasks, Ls)                       # compiles
        t = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            fn(plist, tasks, Ls)
            t.append(time.perf_counter() - t0)
        secs[name] = min(t)
    a, b = outs.values()
    for name, s in secs.items():
        print(f"{name:40s} {s:.3f} s per block (best of {args.reps})")
    first, second = secs.values()
    print(f"ratio {first / second:.1f}x; largest difference {np.max(np.abs(a - b)):.2e} "
          f"(largest entry {np.max(np.abs(a)):.2e})")


if __name__ == "__main__":
    main()
