"""The derivations' machinery: rendering, write_all, the CLI, the cache and its invalidation."""
import json
import os
import subprocess
import sys

from symbolic import get, to_json, to_markdown, write_all

from helpers import ROOT


def test_rendering_and_write_all(tmp_path):
    der = get("S2")
    md = to_markdown(der)
    assert md.startswith("## S2") and "$$" in md
    js = to_json(der)
    json.dumps(js)
    assert "R" in js["results"] and "srepr" in js["results"]["R"]
    paths = write_all(str(tmp_path))
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted(f"S{i}.{e}" for i in range(1, 8) for e in ("md", "json"))
    json.loads((tmp_path / "S5.json").read_text())


def test_cli():
    def cli(*args):  # the installed package's command line
        return subprocess.run([sys.executable, "-m", "symbolic", *args], capture_output=True, text=True,
                              cwd=ROOT, check=True).stdout

    out = cli()
    assert all(f"S{i}" in out for i in range(1, 8))
    out = cli("show", "S2")
    assert "theta*" in out and "R_reduced" in out
    out = cli("markdown", "S5")
    assert "$$" in out
    out = cli("show", "S6")
    assert "gd_risk" in out and "posterior_mean" in out and "limit_optimum_risk" in out


def test_cache_hit_and_invalidation_on_source_change(tmp_path, monkeypatch):
    """A second call is served from disk; a change of symbolic/'s source is a miss (no stale result)."""
    from symbolic import cache
    monkeypatch.setenv("SOFTLIN_SYMBOLIC_CACHE", str(tmp_path))
    calls = []

    def derive():
        calls.append(1)
        return {"n": len(calls)}

    assert cache.cached_call("Sx", "1", derive) == {"n": 1}
    assert cache.cached_call("Sx", "1", derive) == {"n": 1} and len(calls) == 1
    monkeypatch.setattr(cache, "source_digest", lambda: "edited")
    assert cache.cached_call("Sx", "1", derive) == {"n": 2}


def test_processes_missing_one_cache_entry_at_once_compute_it_once(tmp_path):
    """Three processes started together on an empty cache (the jobs of a fresh workflow run): the
    derivation runs once, under the entry's lock, and every process gets its value."""
    script = (
        "import time, pathlib\n"
        "from symbolic import cache\n"
        f"log = pathlib.Path({str(tmp_path / 'calls')!r})\n"
        "def slow():\n"
        "    with open(log, 'a') as fh: fh.write('x')\n"
        "    time.sleep(1.0)\n"
        "    return {'value': 42}\n"
        "print(cache.cached_call('TEST', 'v1', slow)['value'])\n")
    env = {**os.environ, "SOFTLIN_SYMBOLIC_CACHE": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert outs == ["42"] * 3 and all(p.returncode == 0 for p in procs)
    assert (tmp_path / "calls").read_text() == "x"
