"""The workflow's config module (softlin.workflow_config) and the code-input closure (softlin.code_inputs),
without a Snakemake run: merging, typing, presets, validation with defaults, imports read with ast."""

import copy
import json
import os
import textwrap

import pytest
import snakemake.utils

from softlin import code_inputs, statements
from softlin import workflow_config as wc

from helpers import ROOT

SCHEMA_PATH = ROOT / wc.SCHEMA
PRESETS = sorted(p.stem for p in (ROOT / wc.PRESETS).glob("*.yaml"))


def _raw(preset: str) -> dict:
    """config.yaml with the preset merged over it, not yet validated."""
    base = wc.read_yaml(ROOT / wc.CONFIG)
    return wc.deep_merge(base, wc.preset_config(ROOT, preset))


def _sparse(cfg: dict) -> dict:
    """``cfg`` with every key the schema defaults removed from its sections (so the filling matters)."""
    out = copy.deepcopy(cfg)
    for sec in ("c1", "c2", "c3", "c4", "c5"):
        for key in ("threads", "eval", "replicates", "confirm", "limit", "offblock_rate", "probes"):
            out.get(sec, {}).pop(key, None)
    return out


@pytest.mark.parametrize("preset", ["default", *PRESETS])
@pytest.mark.parametrize("sparse", [False, True])
def test_validation_fills_what_snakemakes_validate_fills(preset, sparse):
    """softlin.workflow_config.validate (jsonschema, schema parsed by libyaml) and
    snakemake.utils.validate (its own loader) fill in exactly the same config, defaults included."""
    cfg = _raw(preset)
    cfg = _sparse(cfg) if sparse else cfg
    ours, theirs = copy.deepcopy(cfg), copy.deepcopy(cfg)
    wc.validate(ours, wc.read_yaml(SCHEMA_PATH))
    snakemake.utils.validate(theirs, schema=str(SCHEMA_PATH))
    assert ours == theirs
    if sparse:
        assert ours != cfg  # the defaults were filled in


def test_validation_error_is_one_line_naming_the_key():
    cfg = _raw("smoke")
    cfg["c3"]["steps"] = -5
    with pytest.raises(ValueError, match=r"^config key 'c3.steps': ") as err:
        wc.validate(cfg, wc.read_yaml(SCHEMA_PATH))
    assert "\n" not in str(err.value)


def test_command_line_values_are_typed_and_override_the_preset():
    """--config's nested values arrive as strings (YAML BaseLoader): typed before merging; the
    order is defaults <- preset <- command line."""
    assert wc.typed({"a": "1000", "b": ["0.5", "true", "null", "adam"]}) == {"a": 1000, "b": [0.5, True, None, "adam"]}
    smoke = wc.merged(ROOT, {"preset": "smoke"})
    cfg = wc.merged(ROOT, {"preset": "smoke", "c3": {"lr": "0.02"}})
    assert cfg["c3"]["lr"] == 0.02 and cfg["c3"]["steps"] == smoke["c3"]["steps"]
    assert smoke["c3"]["steps"] == _raw("smoke")["c3"]["steps"] != _raw("default")["c3"]["steps"]


@pytest.mark.parametrize("bad", ["nonexistent", "../presets/smoke", 3])
def test_unknown_preset_is_refused(bad):
    with pytest.raises(ValueError, match="config key 'preset': unknown preset"):
        wc.merged(ROOT, {"preset": bad})


def test_non_finite_number_is_refused():
    with pytest.raises(ValueError, match=r"config key 'c3.lr': nan is not a finite number"):
        wc.merged(ROOT, {"c3": {"lr": "nan"}})


def test_code_inputs_follow_every_kind_of_import(tmp_path):
    """Absolute, relative, lazy (inside a function), ``from pkg import module`` and ``from module
    import name`` imports are followed transitively; comments, strings and other packages are not."""
    files = {
        "softlin/__init__.py": "",
        "softlin/a.py": "from . import b\nfrom .sub.c import helper\n",
        "softlin/b.py": "import numpy\n# import softlin.never\ns = 'import softlin.never2'\n",
        "softlin/sub/__init__.py": "",
        "softlin/sub/c.py": "def helper():\n    from ..d import x\n    return x\n",
        "softlin/d.py": "x = 1\n",
        "softlin/never.py": "", "softlin/never2.py": "", "softlin/unused.py": "",
        "workflow/scripts/job.py": "import os\nfrom softlin import a\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    got = code_inputs.closure(tmp_path, tmp_path / "workflow/scripts/job.py")
    want = ["softlin/__init__.py", "softlin/a.py", "softlin/b.py", "softlin/d.py", "softlin/sub/__init__.py",
            "softlin/sub/c.py", "workflow/scripts/job.py"]
    assert got == sorted(str(tmp_path / w) for w in want)


def test_import_cache_file_is_reused_and_follows_edits(tmp_path, monkeypatch):
    """A second process (a fresh ImportCache on the same file) parses nothing; an edited file
    (another size) is parsed again and its new import followed."""
    for name, text in {"softlin/__init__.py": "", "softlin/a.py": "x = 1\n", "softlin/b.py": "",
                       "workflow/scripts/job.py": "from softlin import a\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    script, store = tmp_path / "workflow/scripts/job.py", tmp_path / ".snakemake" / "imports.json"
    first = code_inputs.closure(tmp_path, script, code_inputs.ImportCache(store))
    assert store.is_file() and str(tmp_path / "softlin/b.py") not in first

    def no_parse(*args):
        raise AssertionError("parsed although cached")

    with monkeypatch.context() as m:
        m.setattr(code_inputs, "_raw_imports", no_parse)
        assert code_inputs.closure(tmp_path, script, code_inputs.ImportCache(store)) == first
    (tmp_path / "softlin/a.py").write_text("from . import b\nx = 1\n")
    again = code_inputs.closure(tmp_path, script, code_inputs.ImportCache(store))
    assert again == sorted(first + [str(tmp_path / "softlin/b.py")])


def _tiny_project(root, a_text="x = 1\n"):
    """softlin/{__init__,a,b,c}.py and a workflow script importing softlin.a; returns the script."""
    for name, text in {"softlin/__init__.py": "", "softlin/a.py": a_text, "softlin/b.py": "", "softlin/c.py": "",
                       "workflow/scripts/job.py": "from softlin import a\n"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "workflow/scripts/job.py"


def test_import_cache_sees_a_rewrite_with_the_same_size_and_mtime(tmp_path):
    """A file rewritten with the same size and mtime (os.utime) but another import is parsed again,
    by a new process (a fresh ImportCache on the cache file) and by the same one."""
    script = _tiny_project(tmp_path, "from . import b\n")
    store, a = tmp_path / ".snakemake" / "imports.json", tmp_path / "softlin/a.py"
    mem = code_inputs.ImportCache()
    for cache in (code_inputs.ImportCache(store), mem):
        assert str(tmp_path / "softlin/b.py") in code_inputs.closure(tmp_path, script, cache)
    st = os.stat(a)
    a.write_text("from . import c\n")
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (os.stat(a).st_size, os.stat(a).st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    want = sorted(str(tmp_path / f) for f in ("softlin/__init__.py", "softlin/a.py", "softlin/c.py",
                                               "workflow/scripts/job.py"))
    for cache in (code_inputs.ImportCache(store), mem):
        assert code_inputs.closure(tmp_path, script, cache) == want


def _damage_entries(text: str) -> str:
    """The cache file ``text`` with each entry's imports replaced by a malformed value (digest kept)."""
    return json.dumps({k: [v[0], [[1, 2, 3]]] for k, v in json.loads(text).items()})


@pytest.mark.parametrize("damage", [
    lambda t: t[: len(t) // 2], lambda t: "not json {", lambda t: "[1, 2]", lambda t: '{"x": 1}',
    _damage_entries, lambda t: json.dumps({k: [v[0], "from softlin import c"] for k, v in json.loads(t).items()}),
    lambda t: json.dumps({k: [v[0], [["softlin.c", "softlin.c.x"]]] for k, v in json.loads(t).items()}),
], ids=["truncated", "not-json", "a-list", "foreign-entry", "entry-numbers", "entry-string", "entry-no-list"])
def test_a_damaged_import_cache_is_ignored_and_rewritten(tmp_path, damage):
    """A damaged cache file (truncated, not JSON, another shape, an entry of another shape whose
    digest is right) gives the right closure, and is rewritten well-formed."""
    script = _tiny_project(tmp_path, "from . import b\n")
    store = tmp_path / ".snakemake" / "imports.json"
    first = code_inputs.closure(tmp_path, script, code_inputs.ImportCache(store))
    store.write_text(damage(store.read_text()))
    assert code_inputs.closure(tmp_path, script, code_inputs.ImportCache(store)) == first
    rewritten = json.loads(store.read_text())
    assert rewritten and all(code_inputs._cached(v) for v in rewritten.values())


C5C_DEFAULT = ("training converged, run by run: every (model, L) run's test risk is within 5% of a reference member "
               "of its class (linear: the class optimum at L; softmax: the best member of a scaled family containing "
               "the infinite-prompt optimum), with its paired error, and no run is shown still falling (the OLS line "
               "through the last 10% of the logged loss falling by 2% of its mean or more, with its jackknife error)")


def _c5c(cfg):
    return next(c for c in cfg["c5"]["consistency_checks"] if c["id"] == "C5c")["statement"]


def test_a_statement_quotes_the_config_values_it_names():
    """C5c's statement quoted "within 5%", "the last 10%" and "by 2%" as text: a user changing
    c5.convergence got a statement that lied.  Now it follows the config; the default text is the
    one printed before, byte for byte."""
    assert _c5c(wc.load(ROOT, {})[0]) == C5C_DEFAULT
    tuned = wc.load(ROOT, {"c5": {"convergence": {"reference_tol": 0.025, "window_frac": 0.2, "max_rel_drop": 0.01}}})[0]
    assert _c5c(tuned) == (C5C_DEFAULT.replace("within 5%", "within 2.5%").replace("last 10%", "last 20%")
                           .replace("by 2%", "by 1%"))
    conf = {"confirm": {"criteria": [{"id": "K", "statement": "{{lit}} {steps} steps at {convergence.reference_tol:.2f}",
                                      "all": [{"measured": "x", "op": "<", "value": 1}]}]}}
    assert statements.fill_config({"c5": {**conf, "steps": 7, "convergence": {"reference_tol": 0.05}}})[
        "c5"]["confirm"]["criteria"][0]["statement"] == "{lit} 7 steps at 0.05"


@pytest.mark.parametrize("text, why", [
    ("within {convergence.no_such:%}", r"placeholder \{convergence.no_such\} names no key of its claim's section"),
    ("within {reference_tol}", r"placeholder \{reference_tol\} names no key"),
    ("within {convergence}", r"placeholder \{convergence\} names a dict, not a value"),
    ("within {streams:%}", r"placeholder \{streams:%\} needs a number"),
    ("within {}", r"placeholder \{\} must name a key"),
    ("within {convergence.reference_tol!r}", r"placeholder \{convergence.reference_tol!r\} must name a key"),
    ("a { brace", r"expected '}' before end of string \(write a literal brace as \{\{ or \}\}"),
])
def test_a_placeholder_that_names_no_value_is_refused(text, why):
    section = {"streams": "shared", "convergence": {"reference_tol": 0.05},
               "consistency_checks": [{"id": "K", "statement": text, "all": [], "reason": "r"}]}
    with pytest.raises(ValueError, match=r"^config key 'c5.consistency_checks\[0\].statement': " + why):
        statements.fill_config({"c5": section})
    with pytest.raises(ValueError, match=why):  # refused by the load, before any job
        wc.load(ROOT, {"c5": {"consistency_checks": [{"id": "C5c", "statement": text, "reason": "r",
                                                       "all": [{"measured": "convergence.n_unconverged", "op": "==",
                                                                "value": 0}]}]}})
