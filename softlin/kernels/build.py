"""The build of the C++ kernels (softlin/kernels/csrc): one shared library, every FFI target.

Compiled on first use into a cache keyed by the sources, the flags, jaxlib's version and the CPU
(:func:`build`); a cached library is used only while its content matches the digest written after
it was checked; :func:`available` loads it and registers every target of :data:`TARGETS` once per
process.  ``SOFTLIN_KERNELS=0`` (the older name ``SOFTLIN_FUSED=0`` still works) disables the
kernels: every target then runs its pure-XLA reference.  ``python -m softlin.kernels.build``
builds (or finds) the library and prints its path.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import socket
import subprocess
import sys
import tempfile
import uuid
import warnings
from pathlib import Path

from .._jax import jax
from ..io import exclusive

_CSRC = Path(__file__).with_name("csrc")
SOURCES = ("softmax_moments.cc", "softmax_moments_prefix.cc", "online_batch.cc")  # one shared library, every target
_HEADERS = ("moments.h",)
# FFI targets of the library: (registered name, exported handler symbol)
TARGETS = {"softmax_moments": ("softlin_softmax_moments", "SoftmaxMoments"),
           "softmax_moments_prefix": ("softlin_softmax_moments_prefix", "SoftmaxMomentsPrefix"),
           "online_sample": ("softlin_online_sample", "OnlineSample"),
           "online_step": ("softlin_online_step", "OnlineStep")}
_BUILD_TIMEOUT_S = 600
_STATE: dict = {}


def _cache_dir() -> Path:
    root = os.environ.get("SOFTLIN_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "softlin")
    return Path(root) / "ffi"


def compile_flags() -> list[str]:
    """Flags of the compile step.  ``-ffast-math`` is a compile-only flag here: passed at link time,
    GCC (before 13) links ``crtfastmath.o``, whose constructor sets flush-to-zero and
    denormals-are-zero for the whole process as soon as the library is loaded."""
    flags = ["-O3", "-march=native", "-ffast-math", "-fopenmp", "-std=c++17", "-fPIC",
             "-I", jax.ffi.include_dir(), "-I", str(_CSRC)]
    if platform.machine() in ("x86_64", "AMD64"):
        flags.append("-mprefer-vector-width=512")  # x86 only; harmless without AVX-512
    return flags


def link_flags() -> list[str]:
    return ["-shared", "-fopenmp"]  # no -ffast-math: no crtfastmath.o, MXCSR left alone


def _flags() -> list[str]:
    return compile_flags() + ["|"] + link_flags()


def _cpu_id() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return ""


def _run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S)


def build() -> Path:
    """Compile the kernels into the cache (keyed by sources, flags, jaxlib version, CPU, not by
    where the repository lies); return
    the .so.  Compile and link are separate steps (see :func:`compile_flags`); the temporary
    names carry host, PID and a random part, so builders sharing a cache over NFS never collide."""
    import jaxlib

    cxx = os.environ.get("CXX", "g++")
    blob = b"".join((_CSRC / f).read_bytes() for f in (*SOURCES, *_HEADERS))
    # the key names the include directories, not their paths: a copy of the repository (the test
    # suite's, a second clone) reuses the build (their contents: the sources above, jaxlib's version)
    where = {str(_CSRC): "<csrc>", jax.ffi.include_dir(): "<jax-ffi-include>"}
    flags = [where.get(f, f) for f in _flags()]
    key = hashlib.sha256(blob + " ".join([cxx, *flags, jaxlib.__version__, sys.platform,
                                          _cpu_id()]).encode()).hexdigest()[:16]
    out = _cache_dir() / f"softlin_kernels-{key}.so"
    if _verified(out):
        return out
    with exclusive(out.with_name(out.name + ".lock")):  # jobs started at once build it once
        if not _verified(out):
            _compile(cxx, out)
            problem = _load_check(out)
            if problem:
                _discard(out)
                raise OSError(f"the freshly built kernel library {out} does not load: {problem}")
            _digest_path(out).write_text(_file_digest(out) + "\n")
    return out


def _digest_path(lib: Path) -> Path:
    return lib.with_name(lib.name + ".sha256")


def _file_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _discard(lib: Path) -> None:
    for p in (lib, _digest_path(lib)):
        try:
            p.unlink(missing_ok=True)
        except OSError:
            pass  # then the rebuild's rename reports the cache's problem


def _load_check(lib: Path) -> str:
    """Load ``lib`` and look up every handler in a child process (a truncated library kills the
    loader with SIGBUS: never in this process); '' when it loads, else what went wrong."""
    symbols = [symbol for _, symbol in TARGETS.values()]
    code = ("import ctypes, sys\nlib = ctypes.CDLL(sys.argv[1])\n"
            "for s in sys.argv[2:]:\n    getattr(lib, s)\n")
    try:
        r = subprocess.run([sys.executable, "-c", code, str(lib), *symbols], capture_output=True,
                           text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    if r.returncode == 0:
        return ""
    last = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
    return last if r.returncode > 0 else f"killed by signal {-r.returncode} ({last})"


def _verified(lib: Path) -> bool:
    """Whether the cached library ``lib`` can be used: its content matches the digest written after
    its build was checked (a library from before digests is load-checked in a child process and
    then given one).  A corrupt entry is reported once, removed (and then rebuilt by the caller)."""
    if not lib.exists():
        return False
    digest = _digest_path(lib)
    try:
        want = digest.read_text().strip() if digest.exists() else None
        if want is not None and want == _file_digest(lib):
            return True
        problem = "content does not match its digest" if want is not None else _load_check(lib)
    except OSError as err:
        problem = str(err)
    if not problem:
        try:
            digest.write_text(_file_digest(lib) + "\n")
        except OSError:
            pass  # a read-only cache: checked in a child process, usable; checked again next time
        return True
    warnings.warn(f"softlin: kernel library {lib} is corrupt ({problem}): removed, rebuilding",
                  RuntimeWarning, stacklevel=3)
    _discard(lib)
    return False


def _compile(cxx: str, out: Path) -> None:
    """Compile and link the library to ``out`` (through a uniquely named temporary file)."""
    with tempfile.TemporaryDirectory(prefix="softlin-build-") as tmpdir:
        objs = []
        for src in SOURCES:
            obj = Path(tmpdir) / f"{Path(src).stem}.o"
            _run([cxx, *compile_flags(), "-c", str(_CSRC / src), "-o", str(obj)])
            objs.append(str(obj))
        tmp = out.with_name(f"{out.name}.{socket.gethostname()}.{os.getpid()}."
                            f"{uuid.uuid4().hex[:8]}.tmp")
        try:
            _run([cxx, *objs, *link_flags(), "-o", str(tmp)])
            tmp.replace(out)
        finally:
            tmp.unlink(missing_ok=True)


def disabled() -> bool:
    """Whether the environment turns the kernels off: ``SOFTLIN_KERNELS=0`` or its older name
    ``SOFTLIN_FUSED=0``."""
    return "0" in (os.environ.get("SOFTLIN_KERNELS"), os.environ.get("SOFTLIN_FUSED"))


def available() -> bool:
    """Whether the compiled CPU kernels are in use (built and registered once per process)."""
    if "ok" not in _STATE:
        ok = False
        if not disabled():
            # idle OpenMP threads sleep instead of spinning: several jobs share a small machine
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                lib = ctypes.cdll.LoadLibrary(str(build()))
                for name, symbol in TARGETS.values():
                    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, symbol)),
                                                platform="cpu")
                ok = True
            except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired,
                    FileNotFoundError) as err:
                detail = " ".join(str(getattr(err, "stderr", "") or err).split())
                warnings.warn(f"softlin: C++ kernel cannot be built or loaded (cache {_cache_dir()}): "
                              f"{detail[:300]}; using the XLA formula", RuntimeWarning, stacklevel=2)
        _STATE["ok"] = ok
    return _STATE["ok"]


def use_kernels() -> bool:
    """The C++ kernels serve this process: CPU backend and the library built and registered."""
    return jax.default_backend() == "cpu" and available()


if __name__ == "__main__":  # `python -m softlin.kernels.build`: build (or find) the library and say where
    print(build() if available() else "C++ kernels unavailable: the XLA formulas will be used")
