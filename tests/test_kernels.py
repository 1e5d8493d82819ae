"""softlin.kernels against independent sources: the softmax-moment kernel at every template
instance and on its generic path, against the numpy reference and its own pure-XLA formula; over
score gaps past the exponential's underflow; under vmap; the SOFTLIN_KERNELS switch (and its older
name SOFTLIN_FUSED) and the thread-count independence of its bits; the entry point's shape checks.
(C5's online kernel: test_c5.py; the build: test_kernels_build.py.)"""
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
from softlin.kernels.softmax_moments import softmax_moments, softmax_moments_xla
from softlin.params import Params

from helpers import ROOT, random_params, ref_tasks, spd, tree_allclose

# the C++ kernel's template instances are D = d + 1 in 3..6 with Q in {1, 2, 4} (csrc/softmax_moments.cc,
# pick / pick_q); anything else takes its generic path.  C5 runs D = 6, Q = 1.
TEMPLATE_CASES = [(D - 1, Q) for D in (3, 4, 5, 6) for Q in (1, 2, 4)]
GENERIC_CASES = [(3, 3), (5, 3), (6, 2), (7, 1)]  # Q = 3 at D = 4, 6; D = 7, 8


@pytest.mark.parametrize("d,Q", TEMPLATE_CASES + GENERIC_CASES)
def test_kernel_moments_vs_xla_vs_reference(rng, d, Q):
    """Every template instance (D = d + 1 in 3..6, Q in 1, 2, 4) and the generic path (Q = 3;
    D = 7, 8) against the numpy reference (an independent oracle), on a prefix L < l_max and on the
    full prompt (L = 13, 21: both have a tail modulo 8)."""
    if not build.available():
        pytest.skip("C++ kernels not built on this machine")
    t = T.sample(9, d, spd(rng, d), n_pairs=3, n_query=Q, l_max=21)
    rt = ref_tasks(t)
    p = random_params(rng, d, scale=0.6)
    pd = models.prompt_data(t, 21)
    f_kernel = jax.jit(softmax_moments)
    f_xla = jax.jit(softmax_moments_xla)
    for L in (13, 21):
        m1r, m2r = ref.softmax_moments(rt.Z(L), rt.Zq, p.U, p.v)
        args = (jnp.asarray(p.U), jnp.asarray(p.v), pd.zT, pd.zq, jnp.asarray(L, jnp.int64))
        tree_allclose(f_kernel(*args), (m1r, m2r), rtol=1e-12)
        tree_allclose(f_xla(*args), (m1r, m2r), rtol=1e-12)


@pytest.mark.parametrize("scale", [0.05, 30.0, 300.0])
def test_kernel_moments_wide_score_range(rng, scale):
    """The inline exponential of the C1-C4 kernel over score gaps from ~0 to beyond 708 (where
    exp underflows and the kernel takes the weight as 0), on every lane and on a tail (L = 4099 =
    8 x 512 + 3), against the numpy reference (np.exp) to 1e-12."""
    if not build.available():
        pytest.skip("C++ kernels not built on this machine")
    d = 3
    t = T.sample(11, d, np.eye(d), n_pairs=2, n_query=2, l_max=4099)
    rt = ref_tasks(t)
    p = Params(scale * rng.normal(size=(d + 1, d + 1)), rng.normal(size=d + 1))
    pd = models.prompt_data(t, 4099)
    args = (jnp.asarray(p.U), jnp.asarray(p.v), pd.zT, pd.zq)
    for L in (8, 4099):
        gaps = np.einsum("tlk,tqk->tql", rt.Z(L), rt.Zq @ p.U.T)
        gaps = gaps.max(axis=2, keepdims=True) - gaps
        if scale == 300.0:
            assert gaps.max() > 708  # the underflow branch is exercised
        m1r, m2r = ref.softmax_moments(rt.Z(L), rt.Zq, p.U, p.v)
        out = jax.jit(softmax_moments)(*args, jnp.asarray(L, jnp.int64))
        tree_allclose(out, (m1r, m2r), rtol=1e-12, atol=1e-14)


def test_vmap_over_params_kernel(small_tasks, rng):
    t = small_tasks[3]
    ps = [random_params(rng, 3) for _ in range(3)]
    stacked = Params(np.stack([p.U for p in ps]), np.stack([p.v for p in ps]))
    data = models.prompt_data(t, 7)
    vals, gs = jax.jit(jax.vmap(models.softmax_value_and_grad, in_axes=(0, None)))(stacked, data)
    rt = ref_tasks(t)
    for i, p in enumerate(ps):
        loss, gU, gv = ref.softmax_loss_grad(rt, p.U, p.v, 7)
        tree_allclose(vals[i], loss, rtol=1e-12)
        tree_allclose((gs.U[i], gs.v[i]), (gU, gv), rtol=1e-12)


_SUB = ("import json, sys, numpy as np\n"
        "from softlin import models, tasks\n"
        "from softlin.kernels import build\n"
        "from softlin.params import Params\n"
        "a = json.load(sys.stdin)\n"
        "t = tasks.Tasks(np.array(a['x']), np.array(a['w']), np.array(a['xq']), np.array(a['s']))\n"
        "val, g = models.risk_and_grad('softmax', Params(np.array(a['U']), np.array(a['v'])), t, 13)\n"
        "print(json.dumps([build.available(), float(val).hex(), [x.hex() for x in np.asarray(g.U).ravel().tolist()],\n"
        "                  [x.hex() for x in np.asarray(g.v).tolist()]]))\n")


@pytest.mark.parametrize("var,value,threads", [("SOFTLIN_KERNELS", "0", None), ("SOFTLIN_FUSED", "0", None),
                                               ("SOFTLIN_KERNELS", "1", "1")])
def test_softmax_grad_in_subprocess(small_tasks, rng, var, value, threads):
    """``SOFTLIN_KERNELS=0`` (or its older name ``SOFTLIN_FUSED=0``) selects the pure-XLA moments
    (matches the reference); the C++ kernel with ``OMP_NUM_THREADS=1`` gives the same bits as in
    this process (fixed summation order)."""
    t = small_tasks[3]
    p = random_params(rng, 3)
    inp = json.dumps(dict(x=t.x.tolist(), w=t.w.tolist(), xq=t.xq.tolist(), s=t.sigma.tolist(),
                          U=p.U.tolist(), v=p.v.tolist()))
    env = {k: x for k, x in os.environ.items() if k not in ("SOFTLIN_KERNELS", "SOFTLIN_FUSED")}
    env.update({var: value, "PYTHONPATH": str(ROOT)})
    if threads:
        env["OMP_NUM_THREADS"] = threads
    out = subprocess.run([sys.executable, "-c", _SUB], input=inp, capture_output=True, text=True,
                         env=env, timeout=120, check=True)
    avail, val, gU, gv = json.loads(out.stdout.strip().splitlines()[-1])
    val, gU, gv = float.fromhex(val), np.array([float.fromhex(x) for x in gU]).reshape(4, 4), \
        np.array([float.fromhex(x) for x in gv])
    loss, rU, rv = ref.softmax_loss_grad(ref_tasks(t), p.U, p.v, 13)
    tree_allclose((val, gU, gv), (loss, rU, rv), rtol=1e-12)
    if value == "0":
        assert avail is False
    elif build.available():
        assert avail is True
        here_val, here_g = models.risk_and_grad("softmax", p, t, 13)
        assert np.array_equal(np.asarray(here_g.U), gU) and np.array_equal(np.asarray(here_g.v), gv)




def test_entry_point_checks_parameter_shapes():
    """U and v of the wrong size are refused by the kernel (before it reads them)."""
    if not build.use_kernels():
        pytest.skip("C++ kernels unavailable")
    zT = jnp.ones((2, 4, 5))
    zq = jnp.ones((2, 1, 4))
    with pytest.raises(Exception, match="U must be"):
        softmax_moments(jnp.ones((3, 3)), jnp.ones(4), zT, zq, 5)
    with pytest.raises(Exception, match="U must be"):
        softmax_moments(jnp.ones((4, 4)), jnp.ones(3), zT, zq, 5)
