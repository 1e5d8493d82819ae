"""Shared fixtures: float64 JAX, small random tasks, the session's smoke build.
Helper functions live in tests/helpers.py; the package is imported as installed."""
import subprocess

import jax
import numpy as np
import pytest

from softlin import tasks as T

from helpers import SMOKE, copy_repo, smk_start, spd

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


_SMOKE_BUILD: dict = {}


def _warm_jax_cache() -> bool:
    """Whether JAX's persistent compilation cache (softlin._jax) already holds entries."""
    from pathlib import Path

    import softlin._jax  # noqa: F401  (sets the cache directory)

    where = jax.config.jax_compilation_cache_dir
    return bool(where) and Path(where).is_dir() and any(Path(where).iterdir())


def pytest_collection_modifyitems(session, config, items):
    """The tests on the smoke build run last.  With warm caches the build starts in the background
    as soon as the tests are collected: the other tests run while it works (it leaves part of two
    cores idle between its jobs; 372 s -> 159 s for the suite here).  With a cold JAX cache (a fresh
    clone) it waits for its first user: its jobs' compilations beside the tests' own cost more than
    running them one after the other (measured: 455 s against 297 s)."""
    uses = [item for item in items if "smoke_built" in getattr(item, "fixturenames", ())]
    if not uses:
        return
    later = set(uses)
    items[:] = [item for item in items if item not in later] + uses
    if _warm_jax_cache():
        _start_smoke_build(config._tmp_path_factory.mktemp("smoke"))


def _start_smoke_build(dst):
    repo = copy_repo(dst)
    log = open(repo / "smoke_build.log", "w")  # a file, not a pipe nobody reads while it runs
    _SMOKE_BUILD.update(repo=repo, log=log, proc=smk_start(repo, *SMOKE, stdout=log))


@pytest.fixture(scope="session")
def smoke_built(tmp_path_factory):
    """A copy of the repository with the whole workflow built at the smoke preset, once per session
    (tests/test_workflow.py plans changes against it; tests/faults/test_failures.py compares bits with it).
    Tests may only read it or run dry runs on it: a test that edits it works on its own copy
    (test_workflow's batch edits plots.py, tasks.py and S2 in one), so no test depends on the order."""
    # ~1.5 min on two idle cores (started at collection when the caches are warm); a loaded
    # machine needs far more
    if not _SMOKE_BUILD:
        _start_smoke_build(tmp_path_factory.mktemp("smoke"))
    repo, proc = _SMOKE_BUILD["repo"], _SMOKE_BUILD["proc"]
    proc.wait(timeout=1800)
    _SMOKE_BUILD["log"].close()
    assert proc.returncode == 0, "smoke build failed:\n" + (repo / "smoke_build.log").read_text()[-4000:]
    return repo


def pytest_sessionfinish(session, exitstatus):
    proc = _SMOKE_BUILD.get("proc")
    if proc is not None and proc.poll() is None:   # a run stopped early (-x, Ctrl-C): no orphan
        proc.terminate()                            # snakemake stops its jobs on SIGTERM
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
