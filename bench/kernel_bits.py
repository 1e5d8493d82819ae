"""The output bits of the C++ kernels, saved or compared (not a test): a kernel change that must
keep them runs this before and after.

    .venv/bin/python bench/kernel_bits.py save BEFORE.npz     (before the change)
    .venv/bin/python bench/kernel_bits.py compare BEFORE.npz  (after: exit status 1 if any differs)

softmax_moments (C1-C4) on fixed random inputs at D = 3..7, Q = 1..4, three score scales (the
largest past exp's underflow), L from 1 to l_max (tails modulo 8 included); C5's step_data at
d = 2..6 (both sample dtypes, two steps, lengths with and without a tail) and sample."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from softlin import stream  # noqa: E402
from softlin._jax import jax, jnp  # noqa: E402
from softlin.kernels.build import use_kernels  # noqa: E402
from softlin.kernels.softmax_moments import softmax_moments  # noqa: E402

if len(sys.argv) != 3 or sys.argv[1] not in ("save", "compare"):
    sys.exit(__doc__)
mode, path = sys.argv[1], sys.argv[2]
assert use_kernels(), "C++ kernels not in use"
out = {}
rng = np.random.default_rng(12345)
l_max = 203
for D in (3, 4, 5, 6, 7):
    for Q in (1, 2, 3, 4):
        for scale in (0.3, 3.0, 200.0):
            n = 5
            U = scale * rng.normal(size=(D, D)) / D
            v = rng.normal(size=D)
            zT = rng.normal(size=(n, D, l_max))
            zq = rng.normal(size=(n, Q, D))
            f = jax.jit(softmax_moments)
            for L in (1, 3, 8, 13, 64, 150, l_max):
                m1, m2 = f(jnp.asarray(U), jnp.asarray(v), jnp.asarray(zT), jnp.asarray(zq),
                           jnp.asarray(L, jnp.int64))
                out[f"sm_D{D}_Q{Q}_s{scale}_L{L}_m1"] = np.asarray(m1)
                out[f"sm_D{D}_Q{Q}_s{scale}_L{L}_m2"] = np.asarray(m2)
for d in (2, 3, 4, 5, 6):
    D = d + 1
    A = rng.normal(size=(d, d)) / np.sqrt(d)
    B = rng.normal(size=(d, d)) / np.sqrt(d)
    law = stream.make_law(A, B, 1.0, 0.1)
    key = stream.stream_key(2025, 3)
    R = 4
    for scale in (0.3, 5.0):
        U = jnp.asarray(scale * rng.normal(size=(R, D, D)))
        v = jnp.asarray(rng.normal(size=(R, D)))
        Ls, Llin = [1, 13, 64, 100], [3, 8, 31, 100]
        for f64 in (False, True):
            for step in (0, 7):
                sd = stream.step_data(law, key, step, 17, U, v, Ls, Llin, f64)
                for name, a in zip(sd._fields, sd):
                    out[f"sd_d{d}_s{scale}_f{f64}_t{step}_{name}"] = np.asarray(a)
    b = stream.sample(law, key, 3, 9, 45, True)
    for name, a in zip(b._fields, b):
        out[f"sample_d{d}_{name}"] = np.asarray(a)

if mode == "save":
    np.savez(path, **out)
    print(f"saved {len(out)} arrays to {path}")
else:
    ref = np.load(path)
    assert set(ref.files) == set(out), set(ref.files) ^ set(out)
    bad = [k for k in ref.files if not np.array_equal(ref[k], out[k], equal_nan=True)]
    print(f"{len(ref.files) - len(bad)}/{len(ref.files)} arrays identical bit for bit")
    for k in bad[:20]:
        diff = np.max(np.abs(ref[k] - out[k]))
        print("  DIFFERS:", k, "max abs diff", diff)
    sys.exit(1 if bad else 0)
