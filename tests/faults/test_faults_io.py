"""Fault injection, round two (issue 32, items 4-6): damaged outputs, strict JSON, the symbolic
cache (an unwritable folder, a forged entry).  Unit tests, each on files in a temporary directory
(made the working directory where a workflow output is meant); the workflow-level faults (a copied
working directory, ``-d``, SIGTERM to ``snakemake``, damaged outputs of a real run) are in
tests/faults/test_faults_workflow.py.
"""
import json
import os
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from softlin import io, outputs, records, verdict
from softlin.tasks import Tasks, sample
from symbolic import cache, entries

from helpers import ROOT

# --------------------------------------------------------------------------- strict JSON


def _strict(text):
    """JSON as a strict reader (a browser, jq) parses it: NaN / Infinity refused."""
    def refuse(token):
        raise AssertionError(f"{token} in strict JSON")

    return json.loads(text, parse_constant=refuse)


def test_json_outputs_are_strict_and_read_back_the_same(tmp_path):
    """Before: save_json wrote NaN / Infinity tokens (rejected by jq and browsers).  Now a
    non-finite number is null with a sibling ``<key>_nonfinite`` saying what it was."""
    obj = {"a": float("nan"), "b": [1.0, float("inf"), [float("-inf"), 2.0]], "c": {"d": np.float64("nan")},
           "e": [{"f": float("nan")}], "g": None, "h": np.array([0.5, np.nan]), "n": np.int64(3)}
    io.save_json(tmp_path / "m.json", obj)
    raw = _strict((tmp_path / "m.json").read_text())
    assert raw == {"a": None, "a_nonfinite": "nan", "b": [1.0, None, [None, 2.0]],
                   "b_nonfinite": [None, "inf", ["-inf", None]], "c": {"d": None, "d_nonfinite": "nan"},
                   "e": [{"f": None, "f_nonfinite": "nan"}], "g": None, "h": [0.5, None],
                   "h_nonfinite": [None, "nan"], "n": 3}
    back = io.load_json(tmp_path / "m.json")
    assert np.isnan(back["a"]) and back["b"][1] == np.inf and back["b"][2][0] == -np.inf
    assert np.isnan(back["c"]["d"]) and np.isnan(back["e"][0]["f"]) and back["g"] is None
    assert back["h"][0] == 0.5 and np.isnan(back["h"][1]) and back["n"] == 3
    assert set(back) == {"a", "b", "c", "e", "g", "h", "n"}
    with pytest.raises(ValueError, match="is taken"):
        io.dumps_json({"x": float("nan"), "x_nonfinite": 1})
    (tmp_path / "old.json").write_text('{"x": NaN}')  # a file of the old convention is refused
    with pytest.raises(ValueError, match="strict JSON"):
        io.load_json(tmp_path / "old.json")


def _tracked_json() -> list[Path]:
    """Every *.json file git tracks in the repository (without git: every *.json outside dot-folders,
    results/ and figures/)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "*.json"], cwd=ROOT, capture_output=True, check=True).stdout
        return [ROOT / name for name in out.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        skip = {"results", "figures"}
        return [p for p in ROOT.rglob("*.json") if not any(part.startswith(".") or part in skip
                                                            for part in p.relative_to(ROOT).parts[:-1])]


def test_every_tracked_json_file_is_strict():
    """Before: docs/c5_authors/paper_optimiser/verdict.json held bare NaN (written before outputs
    became strict JSON).  Now every committed JSON file parses with a strict reader."""
    files = _tracked_json()
    assert len(files) >= 20, files  # the committed runs' metrics, verdicts, records
    for f in files:
        try:
            _strict(f.read_text())
        except (AssertionError, ValueError) as e:
            raise AssertionError(f"{f.relative_to(ROOT)}: {e}") from None


def test_every_json_the_smoke_build_writes_is_strict(smoke_built):
    """Every JSON file of the smoke build (metrics, verdicts, records, the import cache) parses with
    a strict reader."""
    files = sorted(smoke_built.rglob("*.json"))
    claims = {f.parent.name for f in files if f.name == "verdict.json"}
    assert {"c1", "c2", "c3", "c4", "c5"} <= claims, claims  # the whole build is there
    for f in files:
        try:
            _strict(f.read_text())
        except (AssertionError, ValueError) as e:
            raise AssertionError(f"{f.relative_to(smoke_built)}: {e}") from None


def test_a_nan_metric_read_back_is_still_undecided(tmp_path):
    """verdict.py's NaN -> undecided path, through the file: the metric written as null + flag
    reads back as NaN and the criterion stays INCONCLUSIVE (never PASS on a missing number)."""
    io.save_json(tmp_path / "m.json", {"x": float("nan"), "x_se": 0.1, "x_df": 20})
    crit = {"id": "K", "statement": "s", "all": [{"measured": "x", "op": "<", "value": 1}]}
    assert verdict.evaluate(crit, io.load_json(tmp_path / "m.json"), 2.0)["status"] == "INCONCLUSIVE"
    assert verdict.evaluate(crit, {"x": 0.5, "x_se": 0.1, "x_df": 20}, 2.0)["status"] == "PASS"  # the control


# --------------------------------------------------------------------------- damaged outputs


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working directory: files under results/ are workflow outputs (sealed when written)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _flip(path, at=None):
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if at is None else at
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def test_check_outputs_sets_aside_truncated_and_flipped_files(workdir):
    """Before: a truncated results/c3/verdict.json gave "Nothing to be done".  Now the check before
    the plan finds every sealed output that is not what was written, sets it aside and names it."""
    io.save_json("results/c3/verdict.json", [{"id": "C3a", "status": "PASS", "value": 0.25}])
    io.save_csv("results/c3/c3_per_seed.csv", [{"setting": "iso", "seed": s, "slope": 0.1 * s} for s in range(5)])
    io.save_npz("results/c3/trajectories/iso_s1.npz", x=np.arange(1000.0))
    io.save_json("results/c3/ok.json", {"kept": 1})
    good = {p: Path(p).read_bytes() for p in ("results/c3/verdict.json", "results/c3/c3_per_seed.csv")}
    assert outputs.check_outputs(say=lambda m: None) == []          # intact: nothing to say
    Path("results/c3/verdict.json").write_bytes(good["results/c3/verdict.json"][:40])         # truncated
    lines = good["results/c3/c3_per_seed.csv"].splitlines(keepends=True)
    Path("results/c3/c3_per_seed.csv").write_bytes(b"".join(lines[:3]))                         # whole rows lost
    _flip(Path("results/c3/trajectories/iso_s1.npz"), at=600)                                   # one bit, same size
    said = []
    found = outputs.check_outputs(say=said.append)
    assert len(found) == 3 and len(said) == 3
    for path, why in (("results/c3/verdict.json", "bytes where"), ("results/c3/c3_per_seed.csv", "bytes where"),
                      ("results/c3/trajectories/iso_s1.npz", "sha256 differs")):
        msg = next(m for m in said if path in m)
        assert why in msg and f"`snakemake {path}`" in msg and "set aside as" in msg, msg
        assert not Path(path).exists()
        p = Path(path)
        assert p.with_name(f"{p.stem}.corrupt{p.suffix}").exists()
    assert Path("results/c3/ok.json").exists()
    assert outputs.check_outputs(say=said.append) == []             # set aside once, not again


def test_touched_or_copied_outputs_are_not_damaged(workdir):
    """A file whose time moved but whose bytes did not (``touch``, ``cp`` without -p) is intact:
    hashed once, its seal's time refreshed (the next check reads nothing)."""
    io.save_json("results/c1/m.json", {"a": 1.5})
    os.utime("results/c1/m.json", ns=(1, 10 ** 18))
    assert outputs.check_outputs(say=print) == []
    assert Path("results/c1/m.json").exists()
    seal = Path(".softlin/seals/results/c1/m.json.sha256").read_text().split()
    assert int(seal[2]) == 10 ** 18


def test_bit_flipped_record_is_set_aside_by_its_reader(workdir):
    """Before: a bit-flipped trajectory npz failed with its CRC error on every rerun until deleted
    by hand.  Now the reader sets it aside and names the command that rebuilds it (also for a
    file with no seal, e.g. written before seals existed)."""
    like = {"x": np.zeros(2000)}
    records.save("results/c3/trajectories/a.npz", {"x": np.arange(2000.0)})
    Path(".softlin/seals/results/c3/trajectories/a.npz.sha256").unlink()  # unsealed: the zip CRC must catch it
    path = Path("results/c3/trajectories/a.npz")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(outputs.DamagedOutput, match=r"a\.npz is damaged .*CRC.*set aside as a\.corrupt\.npz.*"
                                                     r"`snakemake results/c3/trajectories/a\.npz`"):
        records.load(path, like)
    assert not path.exists() and path.with_name("a.corrupt.npz").exists()
    with pytest.raises(FileNotFoundError):   # so Snakemake sees it missing and rebuilds it
        records.load(path, like)


def test_readers_check_seals_and_leave_other_files_alone(workdir, tmp_path_factory):
    """load_csv / load_json / Tasks.load refuse an output that is not what was written; a file
    outside the working directory's outputs is never renamed (a RecordError as before)."""
    io.save_csv("results/c4/t.csv", [{"a": i, "b": i / 3} for i in range(50)])
    raw = Path("results/c4/t.csv").read_bytes()
    Path("results/c4/t.csv").write_bytes(raw.replace(b"0.3333", b"0.3334", 1))  # same size, other bytes
    with pytest.raises(outputs.DamagedOutput, match="sha256 differs"):
        io.load_csv("results/c4/t.csv")
    sample(1, 2, np.eye(2), n_pairs=1, n_query=1, l_max=3).save("results/c3/tasks/t.npz")
    Path("results/c3/tasks/t.npz").write_bytes(b"PK\x03\x04 not a zip")
    Path(".softlin/seals/results/c3/tasks/t.npz.sha256").unlink()
    with pytest.raises(outputs.DamagedOutput, match="does not read as tasks"):
        Tasks.load("results/c3/tasks/t.npz")
    io.save_json("results/c1/x.json", {"a": 1})
    Path("results/c1/x.json").write_text('{"a": ')
    Path(".softlin/seals/results/c1/x.json.sha256").unlink()
    with pytest.raises(outputs.DamagedOutput, match="does not parse as JSON"):
        io.load_json("results/c1/x.json")
    other = tmp_path_factory.mktemp("elsewhere") / "r.npz"
    records.save(other, {"x": np.zeros(3)})
    other.write_bytes(other.read_bytes()[:30])
    with pytest.raises(records.RecordError, match="does not read as a record"):
        records.load(other, {"x": np.zeros(3)})
    assert other.exists()


# --------------------------------------------------------------------------- the symbolic cache


def test_unwritable_symbolic_cache_warns_once_and_caches_per_process(tmp_path, monkeypatch):
    """Before: an unwritable SOFTLIN_SYMBOLIC_CACHE silently made every derivation recompute, and
    the seed-0 children could not hand theirs back.  Now one warning, a temporary folder for the
    process (and its children), and a second call is served from it."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SOFTLIN_SYMBOLIC_CACHE", str(blocker / "cache"))
    calls = []

    def derive():
        calls.append(1)
        return {"x": 1.5}

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        assert cache.cached_call("Sro", "1", derive) == {"x": 1.5}
        assert cache.cached_call("Sro", "1", derive) == {"x": 1.5}
        assert cache.cached_call("Sro2", "1", derive) == {"x": 1.5}
    said = [str(w.message) for w in got if "symbolic cache" in str(w.message)]
    assert len(said) == 1 and str(blocker / "cache") in said[0] and "cannot be written" in said[0]
    assert len(calls) == 2                          # Sro once (then from the fallback), Sro2 once
    fallback = cache.cache_dir()
    assert fallback != str(blocker / "cache") and Path(fallback).is_dir()


def test_forged_cache_entry_runs_no_code(tmp_path, monkeypatch):
    """Before: an entry was a pickle behind a sha256 anyone can recompute: a forged entry ran code
    when read.  Now an entry is JSON with sympy objects as srepr, rebuilt by a walk that calls only
    sympy classes: a forged entry with a valid digest is refused, removed and recomputed."""
    import hashlib
    import pickle

    monkeypatch.setenv("SOFTLIN_SYMBOLIC_CACHE", str(tmp_path))
    marker = tmp_path / "pwned"
    value = {"r": 0.5}
    assert cache.cached_call("Sforge", "1", lambda: value) == value
    entry = next(tmp_path.glob("Sforge-*.json"))

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    evil = [
        {"$": "sympy", "v": f"__import__('os').system('touch {marker}')"},
        {"$": "sympy", "v": f"Symbol.__init__.__globals__['os'].system('touch {marker}')"},
        {"$": "sympy", "v": f"Add('__import__(\"os\").system(\"touch {marker}\")')"},   # sympify of a string
        {"$": "sympy", "v": f"Integer(1) + Symbol('x') if os.system('touch {marker}') else 0"},
    ]
    payloads = [json.dumps({"$": "dict", "v": [["r", e]]}).encode() for e in evil] + [pickle.dumps(Evil())]
    for k, payload in enumerate(payloads):
        entry.write_bytes(entries.MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            assert cache.cached_call("Sforge", "1", lambda: value) == value
        assert any("is corrupt" in str(w.message) for w in got), k
        assert not marker.exists(), k


def test_cache_entry_round_trip_prints_the_same():
    """A derivation written and read back through the entry format (no pickle) prints
    byte-identically (Markdown and JSON: srepr of every object), sympy objects equal by srepr."""
    import sympy as sp

    import symbolic

    der = symbolic.get("S3")
    back = entries.unpack(entries.pack(der))
    assert symbolic.to_markdown(back) == symbolic.to_markdown(der)
    assert symbolic.to_json(back) == symbolic.to_json(der)
    assert [sp.srepr(v) for v in back.results.values()] == [sp.srepr(v) for v in der.results.values()]
    x = sp.Symbol("x", positive=True)
    M = sp.MatrixSymbol("S", 3, 3)
    for obj in (sp.erf(x) / 2 - sp.oo * 0 + sp.Rational(1, 3), sp.Trace(M.T * M), sp.Matrix([[x, 1], [2, x]]),
                sp.Piecewise((x, x < 1), (-sp.oo, True)), sp.Float("0.1", 30)):
        assert entries.from_srepr(sp.srepr(obj)) == obj, obj


def test_seed0_child_result_is_used_with_an_unwritable_cache(tmp_path, monkeypatch):
    """Before: with an unwritable cache the seed-0 child (which makes the printouts independent of
    PYTHONHASHSEED: tests/faults/test_faults.py) could not hand its result back, so the process computed
    the derivation itself, under its own seed.  Now the child stores it in the process's folder and
    the process reads it from there (its own store is never reached)."""
    import symbolic

    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("SOFTLIN_SYMBOLIC_CACHE", str(blocker / "c"))
    stored = []
    real_store = cache._store
    monkeypatch.setattr(cache, "_store", lambda path, out: stored.append(path) or real_store(path, out))
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        der = symbolic.get("S3")
    assert der.id == "S3" and stored == []
    assert list(Path(cache.cache_dir()).glob("S3-*.json"))


# --------------------------------------------------------------------------- signals

FORWARD_SCRIPT = """
import signal, subprocess, sys, time
from softlin import stop_signals
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
assert stop_signals.forward_to_jobs(signal.SIGTERM)
assert not stop_signals.forward_to_jobs(signal.SIGTERM)          # once per process
try:  # "ready" inside: the signal may arrive before print returns (seen once in CI)
    print("ready", flush=True)
    time.sleep(60)
except KeyboardInterrupt:
    print("interrupted", child.wait(timeout=10), flush=True)
"""


def test_sigterm_is_forwarded_to_the_jobs_then_interrupts():
    """The handler the workflow installs at its start (softlin.stop_signals): SIGTERM sends SIGTERM
    to every process below (the jobs) and then interrupts the main loop as Ctrl-C does (Snakemake
    then cancels and exits), where Snakemake's own handler waited for the jobs to end."""
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-c", FORWARD_SCRIPT], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    out = proc.stdout.read()
    proc.wait(timeout=30)
    assert out.split() == ["interrupted", str(-signal.SIGTERM)], out
    assert time.perf_counter() - t0 < 5
