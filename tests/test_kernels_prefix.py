"""softlin.kernels.softmax_prefix (C1, C2: the moments at every length of a nested prompt family in
one pass) against independent sources: the numpy reference at each length, the per-length kernel
softmax_moments, on both paths (C++ and pure XLA), at every template instance and on the generic
path; a short prefix whose maximum score lies far below the whole prompt's (exp(s - global max)
would underflow there); bad lengths refused on both paths; the bits independent of the thread count."""
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from softlin import models
from softlin import numpy_reference as ref
from softlin import tasks as T
from softlin.kernels import build
from softlin.kernels.softmax_moments import softmax_moments
from softlin.kernels.softmax_prefix import softmax_moments_prefix, softmax_moments_prefix_xla

from helpers import ROOT, random_params, ref_tasks, spd, tree_allclose

TEMPLATE_CASES = [(D - 1, Q) for D in (3, 4, 5, 6, 9) for Q in (1, 2, 4)]  # 9: C2's task-integral tokens
GENERIC_CASES = [(3, 3), (7, 1)]
LS = (1, 2, 7, 8, 13, 16, 24, 37)  # 1, segments shorter than a vector, tails modulo 8, l_max = 37
PATHS = {"kernel": softmax_moments_prefix, "xla": softmax_moments_prefix_xla}


def _case(rng, d, Q, l_max=37, seed=9):
    t = T.sample(seed, d, spd(rng, d), n_pairs=2, n_query=Q, l_max=l_max)
    return t, models.prompt_data(t, l_max), random_params(rng, d, scale=0.6)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("d,Q", TEMPLATE_CASES + GENERIC_CASES)
def test_prefix_vs_reference_and_per_length_kernel(rng, d, Q, path):
    """At every length of LS (1 and l_max included) the prefix moments equal the numpy reference
    over the first L tokens and the per-length kernel softmax_moments, to 1e-12."""
    if path == "kernel" and not build.available():
        pytest.skip("C++ kernels not built on this machine")
    t, pd, p = _case(rng, d, Q)
    rt = ref_tasks(t)
    m1, m2 = jax.jit(PATHS[path], static_argnums=4)(jnp.asarray(p.U), jnp.asarray(p.v), pd.zT, pd.zq, LS)
    assert m1.shape == m2.shape == (len(LS),) + pd.zq.shape
    for k, L in enumerate(LS):
        want = ref.softmax_moments(rt.Z(L), rt.Zq, p.U, p.v)
        tree_allclose((m1[k], m2[k]), want, rtol=1e-12)
        tree_allclose((m1[k], m2[k]), softmax_moments(p.U, p.v, pd.zT, pd.zq, L), rtol=1e-12)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("d,Q", [(3, 4), (2, 1), (3, 3)])
def test_prefix_first_moment_only(rng, d, Q, path):
    """``second=False`` (C1: m1 only, m2's work skipped): m1 against the numpy reference, m2 None;
    on the template instances and on the generic path (Q = 3)."""
    if path == "kernel" and not build.available():
        pytest.skip("C++ kernels not built on this machine")
    t, pd, p = _case(rng, d, Q)
    rt = ref_tasks(t)
    m1, m2 = PATHS[path](jnp.asarray(p.U), jnp.asarray(p.v), pd.zT, pd.zq, LS, second=False)
    assert m2 is None
    for k, L in enumerate(LS):
        tree_allclose(m1[k], ref.softmax_moments(rt.Z(L), rt.Zq, p.U, p.v)[0], rtol=1e-12)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_prefix_short_prefix_far_below_global_max(rng, path):
    """Tokens after the first 20 scaled by 400: their scores exceed the first 20's by thousands, so
    exp(s - global max) is 0 on the short prefixes; each prefix is normalised by its own maximum and
    matches the reference (np.exp over that prefix alone) to 1e-12, finite everywhere."""
    if path == "kernel" and not build.available():
        pytest.skip("C++ kernels not built on this machine")
    d, Q, l_max = 3, 4, 300
    t = T.sample(5, d, np.eye(d), n_pairs=2, n_query=Q, l_max=l_max)
    x = t.x.copy()
    x[:, 20:] *= 400.0
    t = T.Tasks(x=x, w=t.w, xq=t.xq, sigma=t.sigma)
    rt = ref_tasks(t)
    p = random_params(rng, d, scale=1.0)
    pd = models.prompt_data(t, l_max)
    s = np.einsum("tlk,tqk->tql", rt.Z(l_max), rt.Zq @ p.U.T)
    assert (s.max(axis=2) - s[:, :, :20].max(axis=2)).min() > 800  # a global max would underflow
    Ls = (1, 3, 8, 20, 21, 64, 299, 300)
    m1, m2 = PATHS[path](jnp.asarray(p.U), jnp.asarray(p.v), pd.zT, pd.zq, Ls)
    for k, L in enumerate(Ls):
        assert np.all(np.isfinite(m1[k])) and np.all(np.isfinite(m2[k]))
        tree_allclose((m1[k], m2[k]), ref.softmax_moments(rt.Z(L), rt.Zq, p.U, p.v), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("bad,what", [((), "non-empty"), ([4, 4], "increase strictly"), ([8, 4], "increase strictly"),
                                      ([0, 4], "increase strictly"), ([4, 38], "increase strictly"),
                                      ([2.5, 4], "integers")])
def test_prefix_refuses_bad_lengths(rng, path, bad, what):
    """Empty, repeated, decreasing, < 1, > l_max or fractional lengths: one clear ValueError on both paths."""
    _, pd, p = _case(rng, 3, 2)
    with pytest.raises(ValueError, match=what):
        PATHS[path](jnp.asarray(p.U), jnp.asarray(p.v), pd.zT, pd.zq, bad)


def test_prefix_kernel_refuses_bad_lengths_at_run_time(rng):
    """The C++ kernel's own check (for lengths no Python check saw): not strictly increasing, > l_max."""
    if not build.use_kernels():
        pytest.skip("C++ kernels unavailable")
    from softlin.kernels.build import TARGETS

    _, pd, p = _case(rng, 3, 2)
    out = jax.ShapeDtypeStruct((2,) + pd.zq.shape, jnp.float64)
    call = jax.ffi.ffi_call(TARGETS["softmax_moments_prefix"][0], (out, out))
    for bad in ([4, 4], [4, 99]):
        with pytest.raises(Exception, match="increase strictly"):
            jax.block_until_ready(call(jnp.asarray(p.U), jnp.asarray(p.v), pd.zT, pd.zq,
                                       jnp.asarray(bad, jnp.int64)))


_SUB = (
    "import json, sys, numpy as np\n"
    "from softlin.kernels.softmax_prefix import softmax_moments_prefix\n"
    "a = json.loads(sys.stdin.read())\n"
    "m1, m2 = softmax_moments_prefix(*(np.asarray(a[k]) for k in ('U', 'v', 'zT', 'zq')), a['Ls'])\n"
    "print(json.dumps([x.hex() for x in np.concatenate([np.ravel(m1), np.ravel(m2)]).tolist()]))\n")


def test_prefix_bits_independent_of_threads(rng):
    """The C++ kernel with OMP_NUM_THREADS=1 gives the bits of this process (fixed summation order,
    static schedule over tasks)."""
    if not build.use_kernels():
        pytest.skip("C++ kernels unavailable")
    _, pd, p = _case(rng, 3, 4)
    Ls = [1, 8, 13, 37]
    inp = json.dumps(dict(U=p.U.tolist(), v=p.v.tolist(), zT=np.asarray(pd.zT).tolist(),
                          zq=np.asarray(pd.zq).tolist(), Ls=Ls))
    env = {k: x for k, x in os.environ.items() if k not in ("SOFTLIN_KERNELS", "SOFTLIN_FUSED")}
    env.update({"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    out = subprocess.run([sys.executable, "-c", _SUB], input=inp, capture_output=True, text=True,
                         env=env, timeout=120, check=True)
    there = np.array([float.fromhex(x) for x in json.loads(out.stdout.strip().splitlines()[-1])])
    m1, m2 = softmax_moments_prefix(p.U, p.v, pd.zT, pd.zq, Ls)
    assert np.array_equal(there, np.concatenate([np.ravel(m1), np.ravel(m2)]))
