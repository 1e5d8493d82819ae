"""Shared fixtures: float64 JAX, small random tasks and parameters, a pytree comparison helper."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

from softlin import numpy_reference as ref  # noqa: E402
from softlin import tasks as T  # noqa: E402
from softlin.params import Params  # noqa: E402

ANISO = np.diag([2.0, 1.0, 0.5])


def spd(rng, d):
    """A random, well conditioned, non-diagonal SPD matrix."""
    X = rng.normal(size=(d, d))
    return X @ X.T / d + 0.5 * np.eye(d)


def tree_allclose(a, b, rtol=1e-12, atol=0.0):
    """Leaf-wise ``|a - b| <= atol + rtol * scale``, ``scale = max |b|`` over the whole tree.

    (One scale for the whole tree: a leaf that is zero in exact arithmetic, e.g. the U-gradient
    of softmax at L = 1, is compared at the scale of the others.)  Raises with detail.
    """
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb), f"pytree sizes differ: {len(la)} vs {len(lb)}"
    la = [np.asarray(x, dtype=np.float64) for x in la]
    lb = [np.asarray(y, dtype=np.float64) for y in lb]
    scale = max((np.max(np.abs(y)) for y in lb if y.size), default=0.0)
    for i, (x, y) in enumerate(zip(la, lb)):
        assert x.shape == y.shape, f"leaf {i}: shape {x.shape} vs {y.shape}"
        err = np.max(np.abs(x - y)) if x.size else 0.0
        tol = atol + rtol * scale
        assert err <= tol, f"leaf {i}: max abs err {err:.3e} > tol {tol:.3e}"
    return True


def random_params(rng, d, scale=0.4):
    """Dense (non-block) random parameters of moderate norm."""
    return Params(scale * rng.normal(size=(d + 1, d + 1)), scale * rng.normal(size=d + 1))


def ref_tasks(t):
    """The numpy reference's view of a softlin Tasks (same arrays, reference-computed labels)."""
    return ref.ICLTasks.from_arrays(t.x, t.w, t.xq, t.sigma)


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


@pytest.fixture(scope="session")
def small_tasks():
    """dict d -> small Gaussian antithetic tasks (3 pairs, 2 queries, l_max 13), non-diagonal sigma."""
    r = np.random.default_rng(5)
    return {d: T.sample(100 + d, d, spd(r, d), n_pairs=3, n_query=2, l_max=13) for d in (3, 5)}


@pytest.fixture(scope="session")
def jax_x64():
    return jax


@pytest.fixture(scope="session")
def smoke_built(tmp_path_factory):
    """A copy of the repository with the whole workflow built at the smoke preset, once per session
    (tests/test_workflow.py plans changes against it; tests/test_failures.py compares bits with it).
    Tests may only read it or run dry runs on it (test_workflow's batch edits plots.py last)."""
    from test_workflow import SMOKE, copy_repo, smk

    repo = copy_repo(tmp_path_factory.mktemp("smoke"))
    smk(repo, *SMOKE, timeout=1800)  # ~1.5 min on two idle cores; a loaded machine needs far more
    return repo
