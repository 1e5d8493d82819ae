"""The fused softmax-moment kernel: a small C++ XLA FFI custom call, built on first use.

``softmax_moments(U, v, zT, zq, L) -> (m1, m2)`` with ``m1 = E_p[z]`` and ``m2 = E_p[(v.z) z]``
under the softmax weights ``p_l ∝ exp((U z_q)^T z_l)`` over the first ``L`` tokens; shapes
(n, Q, d+1).  ``L`` is a runtime value, so one compiled program serves every prompt length.  On the CPU this is
one pass over each task's prompt (the XLA fusion of the same formula re-reads the prompt several
times and is memory bound); elsewhere, or when no C++ compiler is available, or with
``SOFTLIN_FUSED=0``, the pure-XLA formula :func:`softmax_moments_xla` is used.  Both are checked
against each other and against autodiff in the tests.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import warnings
from pathlib import Path

from ._jax import jax, jnp

_SRC = Path(__file__).with_name("csrc") / "softmax_moments.cc"
_TARGET = "softlin_softmax_moments"
_STATE: dict = {}


def _cache_dir() -> Path:
    root = os.environ.get("SOFTLIN_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "softlin")
    return Path(root) / "ffi"


def _flags() -> list[str]:
    return ["-O3", "-march=native", "-mprefer-vector-width=512", "-ffast-math", "-fopenmp",
            "-std=c++17", "-shared", "-fPIC", "-I", jax.ffi.include_dir()]


def _cpu_id() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return ""


def _build() -> Path:
    """Compile the kernel into the cache (keyed by source, flags, jaxlib version); return the .so."""
    import jaxlib

    cxx = os.environ.get("CXX", "g++")
    key = hashlib.sha256(_SRC.read_bytes() + " ".join([cxx, *_flags(), jaxlib.__version__,
                                                        sys.platform, _cpu_id()]).encode()).hexdigest()[:16]
    out = _cache_dir() / f"softmax_moments-{key}.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        subprocess.run([cxx, *_flags(), str(_SRC), "-o", str(tmp)], check=True,
                       capture_output=True, text=True)
        tmp.replace(out)
    return out


def available() -> bool:
    """Whether the compiled CPU kernel is in use (built and registered once per process)."""
    if "ok" not in _STATE:
        ok = False
        if os.environ.get("SOFTLIN_FUSED", "1") != "0":
            # idle OpenMP threads sleep instead of spinning: several jobs share a small machine
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                lib = ctypes.cdll.LoadLibrary(str(_build()))
                jax.ffi.register_ffi_target(_TARGET, jax.ffi.pycapsule(lib.SoftmaxMoments),
                                            platform="cpu")
                ok = True
            except (OSError, subprocess.CalledProcessError, FileNotFoundError) as err:
                detail = getattr(err, "stderr", "") or str(err)
                warnings.warn(f"softlin: fused C++ kernel unavailable, using the XLA formula "
                              f"({detail.strip()[:300]})", RuntimeWarning, stacklevel=2)
        _STATE["ok"] = ok
    return _STATE["ok"]


def softmax_moments_xla(U, v, zT, zq, L):
    """Pure-XLA ``(E_p[z], E_p[(v.z) z])`` over the first L tokens; zT (n, D, l_max), zq (n, Q, D)."""
    a = zq @ U.T
    vz = jnp.sum(v[:, None] * zT, axis=1)
    keep = jnp.arange(zT.shape[-1]) < L
    m1, m2 = [], []
    for q in range(zq.shape[1]):  # one query at a time keeps XLA's fusions on (n, l_max) arrays
        s = jnp.where(keep, jnp.sum(a[:, q, :, None] * zT, axis=1), -jnp.inf)
        e = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
        s0 = jnp.sum(e, axis=-1)[:, None]
        m1.append(jnp.sum(e[:, None, :] * zT, axis=-1) / s0)
        m2.append(jnp.sum((e * vz)[:, None, :] * zT, axis=-1) / s0)
    return jnp.stack(m1, axis=1), jnp.stack(m2, axis=1)


def softmax_moments(U, v, zT, zq, L):
    """``(E_p[z], E_p[(v.z) z])`` per task and query over the first ``L`` tokens (L may be traced)."""
    if jax.default_backend() == "cpu" and available():
        out = jax.ShapeDtypeStruct(zq.shape, jnp.float64)
        call = jax.ffi.ffi_call(_TARGET, (out, out), vmap_method="sequential")
        return call(jnp.asarray(U, jnp.float64), jnp.asarray(v, jnp.float64),
                    jnp.asarray(zT, jnp.float64), jnp.asarray(zq, jnp.float64),
                    jnp.asarray(L, jnp.int64))
    return softmax_moments_xla(U, v, zT, zq, L)


if __name__ == "__main__":  # `python -m softlin.fused`: build (or find) the kernel and say where
    print(_build() if available() else "fused kernel unavailable: the XLA formula will be used")
