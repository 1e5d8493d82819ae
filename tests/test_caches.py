"""Fault injection, caches (issue 25): a flipped bit in the symbolic cache, a damaged kernel library
or JAX cache entry is detected and recomputed, never trusted; a kernel that cannot be built says so.  Everything corrupted lives
in a temporary directory (caches pointed there by their environment variables).
"""
import os
import pickle
import shutil
import subprocess
import sys
import warnings

import pytest

from softlin.kernels import build


def test_symbolic_cache_bit_flips_are_caught(tmp_path, monkeypatch):
    """Before: about half of the single-bit flips of a pickle still unpickle into a valid, different
    value (S6's R_linear_ref read 36.97 instead of 0.481).  Now the entry's sha256 is checked: every
    flip is reported once, the entry removed and recomputed."""
    from symbolic import cache

    monkeypatch.setenv("SOFTLIN_SYMBOLIC_CACHE", str(tmp_path))
    value = {"R_linear_ref": 0.481, "terms": ["a", "b"]}
    payload = pickle.dumps(value)
    silently_wrong = 0
    for bit in range(8 * len(payload)):  # the fault: flips that unpickle without an error
        flipped = bytearray(payload)
        flipped[bit // 8] ^= 1 << (bit % 8)
        try:
            silently_wrong += pickle.loads(bytes(flipped)) != value
        except Exception:
            pass
    assert silently_wrong > 0
    calls = []

    def derive():
        calls.append(1)
        return value

    assert cache.cached_call("Sflip", "1", derive) == value and len(calls) == 1
    entry = next(tmp_path.glob("Sflip-*.json"))
    good = entry.read_bytes()
    for k, bit in enumerate((8 * len(good) - 3, 8 * (len(good) // 2), 8 * 40 + 1)):  # payload, payload, header
        flipped = bytearray(good)
        flipped[bit // 8] ^= 1 << (bit % 8)
        entry.write_bytes(bytes(flipped))
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            assert cache.cached_call("Sflip", "1", derive) == value
        assert len(calls) == 2 + k, "the corrupt entry was recomputed"
        said = [str(w.message) for w in got if "symbolic cache entry" in str(w.message)]
        assert len(said) == 1 and str(entry) in said[0] and "removed" in said[0]
        assert entry.read_bytes() == good  # rebuilt
    entry.write_bytes(good[: len(good) // 2])  # truncated
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert cache.cached_call("Sflip", "1", derive) == value and len(calls) == 5


@pytest.fixture
def kernel_cache(tmp_path, monkeypatch):
    """The real kernel library copied into a temporary cache; the build replaced by a copy (no g++)."""
    if not build.available():
        pytest.skip("C++ kernel not built on this machine")
    real = build.build()
    monkeypatch.setenv("SOFTLIN_CACHE", str(tmp_path))
    calls = []

    def fake_compile(cxx, out):
        calls.append(out)
        shutil.copyfile(real, out)

    monkeypatch.setattr(build, "_compile", fake_compile)
    lib = build._cache_dir() / real.name
    lib.parent.mkdir(parents=True)
    return real, lib, calls


@pytest.mark.parametrize("damage", ["truncated", "garbled_header", "truncated_before_digests"])
def test_corrupt_kernel_library_is_rebuilt(kernel_cache, damage):
    """Before: a truncated .so killed every job with SIGBUS (build() only checked that the file
    existed), a bad header silently switched every run to the XLA path.  Now the library's digest
    (or, for one from before digests, a load in a child process) is checked before use; a corrupt
    one is reported once, removed and rebuilt."""
    real, lib, calls = kernel_cache
    good = real.read_bytes()
    if damage == "garbled_header":
        lib.write_bytes(b"\x00garbage" + good[8:])
    else:
        lib.write_bytes(good[: len(good) // 3])
    if damage != "truncated_before_digests":
        build._digest_path(lib).write_text(build._file_digest(real) + "\n")
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        assert build.build() == lib
    said = [str(w.message) for w in got if "kernel library" in str(w.message)]
    assert len(said) == 1 and str(lib) in said[0] and "rebuilding" in said[0], said
    if damage == "truncated_before_digests":
        assert "signal" in said[0] or "error" in said[0].lower()
    assert calls == [lib] and lib.read_bytes() == good
    assert build._digest_path(lib).read_text().strip() == build._file_digest(lib)
    with warnings.catch_warnings(record=True) as got:  # verified now: no second report
        warnings.simplefilter("always")
        assert build.build() == lib and calls == [lib]
    assert not got


def test_kernel_that_cannot_be_built_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SOFTLIN_CACHE", str(tmp_path))
    monkeypatch.setattr(build, "_STATE", {})

    def broken(cxx, out):
        raise subprocess.CalledProcessError(1, [cxx], stderr="g++: fatal error:\n  no input files\n")

    monkeypatch.setattr(build, "_compile", broken)
    with pytest.warns(RuntimeWarning) as got:
        assert build.available() is False
    msg = str(got[0].message)
    assert "\n" not in msg and str(tmp_path / "ffi") in msg and "cannot be built or loaded" in msg


JAX_SCRIPT = "from softlin._jax import jax, jnp\nprint(float(jax.jit(lambda x: jnp.sin(x) * 2 + 1)(1.0)))\n"


def test_unreadable_jax_cache_entry_is_removed(tmp_path):
    """Before: JAX warned about a broken entry on every run and never removed it."""
    env = dict(os.environ, SOFTLIN_JAX_CACHE=str(tmp_path), PYTHONWARNINGS="always")
    first = subprocess.run([sys.executable, "-c", JAX_SCRIPT], env=env, capture_output=True, text=True, check=True)
    entries = sorted(tmp_path.glob("*-cache"))
    assert entries
    for e in entries:
        e.write_bytes(b"not a compressed executable")
    second = subprocess.run([sys.executable, "-c", JAX_SCRIPT], env=env, capture_output=True, text=True, check=True)
    assert second.stdout == first.stdout
    said = [line for line in second.stderr.splitlines() if "JAX compilation cache entry" in line]
    assert len(said) == len(entries) and all("removed" in line for line in said)
    assert all(e.read_bytes() != b"not a compressed executable" for e in entries if e.exists())


