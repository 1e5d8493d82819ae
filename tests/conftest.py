"""Shared fixtures: float64 JAX, small random tasks, the session's smoke build.
Helper functions live in tests/helpers.py; the package is imported as installed."""
import jax
import numpy as np
import pytest

from softlin import tasks as T

from helpers import SMOKE, copy_repo, smk, spd

jax.config.update("jax_enable_x64", True)


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
    repo = copy_repo(tmp_path_factory.mktemp("smoke"))
    smk(repo, *SMOKE, timeout=1800)  # ~1.5 min on two idle cores; a loaded machine needs far more
    return repo
