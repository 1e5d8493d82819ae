"""Compare a softmax-moments kernel build with the current one (not a test): CPU time per step of a
C3-size training (96 tasks = 48 pairs x 2 queries, d = 3, L = 4096).

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_kernel_build.py PATH/TO/OLD.so   (or: new)

Used to check that building with compile-only -ffast-math (MXCSR untouched) kept the speed of the
old link-time -ffast-math build (softmax_moments-*.so in ~/.cache/softlin/ffi)."""
import pathlib
import sys
import time

import numpy as np

from softlin import params, train
from softlin import tasks as T
from softlin._jax import jax
from softlin.kernels import build


def main(so: str) -> None:
    if so != "new":
        build.build = lambda: pathlib.Path(so)
        build.TARGETS = {"softmax_moments": build.TARGETS["softmax_moments"]}
    assert build.available()
    tk = T.sample(777, 3, np.eye(3), 48, 2, 4096)
    p0 = params.init_eq9(tk.sigma)

    def run():
        return jax.block_until_ready(train.gradient_descent("softmax", p0, tk, L=4096, steps=500,
                                                            record_every=20).final)

    run()
    best = 1e9
    for _ in range(3):
        c = time.process_time()
        run()
        best = min(best, time.process_time() - c)
    print(f"{so.split('/')[-1]}: {best / 500 * 1e3:.3f} ms CPU per step")


if __name__ == "__main__":
    main(sys.argv[1])
