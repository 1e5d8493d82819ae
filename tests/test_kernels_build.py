"""The C++ kernels' build (softlin.kernels.build): loading them leaves the process's floating-point
state alone; the cache is keyed by content, not place; the switch that turns the kernels off.

Before the fix the library was linked with -ffast-math, which links GCC's crtfastmath.o: its
constructor sets flush-to-zero / denormals-are-zero (MXCSR) for the whole process on load, and
numpy's subnormal results in the same process turned into 0.
"""
import subprocess
import sys

import pytest

from softlin.kernels import build

SCRIPT = r"""
import numpy as np
before = (np.array([1e-308]) / 100)[0]
from softlin.kernels import build
assert build.available(), "kernel not built"
after = (np.array([1e-308]) / 100)[0]
tiny = np.nextafter(0.0, 1.0)
print(repr(float(before)), repr(float(after)), repr(float(np.array([tiny])[0] * 1.0)))
"""


def test_loading_the_kernel_keeps_subnormals():
    if not build.available():
        pytest.skip("C++ kernels unavailable")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    before, after, tiny = (float(x) for x in out.stdout.split())
    assert before == 1e-310 and after == 1e-310, out.stdout
    assert tiny == 5e-324


def test_build_flags():
    """-ffast-math only in the compile step, never at link time; the x86-only vector-width flag
    only on x86."""
    assert "-ffast-math" in build.compile_flags()
    assert "-ffast-math" not in build.link_flags()
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        assert "-mprefer-vector-width=512" not in build.compile_flags()


def test_a_copy_of_the_repository_reuses_the_build(tmp_path, monkeypatch):
    """The build cache's key does not depend on where the sources lie (every copy of the
    repository, e.g. the test suite's, used to recompile the kernel, ~20 s of g++), but it does
    depend on their contents.  The compiler is replaced by a recorder that writes empty files."""
    import shutil
    from pathlib import Path

    calls = []

    def fake_run(cmd):
        calls.append(cmd)
        Path(cmd[cmd.index("-o") + 1]).write_bytes(b"")

    monkeypatch.setenv("SOFTLIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(build, "_run", fake_run)
    monkeypatch.setattr(build, "_load_check", lambda lib: "")  # the recorder's empty files "load"
    first = build.build()
    assert len(calls) == len(build.SOURCES) + 1      # compile each source, then link
    copy = tmp_path / "elsewhere" / "csrc"
    shutil.copytree(build._CSRC, copy)
    monkeypatch.setattr(build, "_CSRC", copy)
    assert build.build() == first and len(calls) == len(build.SOURCES) + 1   # no new build
    (copy / build._HEADERS[0]).write_text((copy / build._HEADERS[0]).read_text() + "\n// edited\n")
    assert build.build() != first and len(calls) == 2 * (len(build.SOURCES) + 1)


def test_switch_and_its_older_name(monkeypatch):
    """SOFTLIN_KERNELS=0 turns the kernels off, and so does its older name SOFTLIN_FUSED=0."""
    for var in ("SOFTLIN_KERNELS", "SOFTLIN_FUSED"):
        monkeypatch.delenv(var, raising=False)
    assert not build.disabled()
    for var in ("SOFTLIN_KERNELS", "SOFTLIN_FUSED"):
        monkeypatch.setenv(var, "0")
        assert build.disabled()
        monkeypatch.setenv(var, "1")
        assert not build.disabled()
