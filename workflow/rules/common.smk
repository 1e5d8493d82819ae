# Helpers shared by every claim: presets, validation, package inputs, per-claim parameters.
import copy
import functools
import os
import re
import signal
from pathlib import Path

import numpy as np
import yaml
from snakemake.utils import validate

from softlin import outputs, stop_signals
from softlin.claims import c5_protocol as c5_protocol_text
from softlin import config_check, config_cost, config_yaml


def _deep_merge(base, over):
    """``over`` merged into a copy of ``base`` (nested mappings merge, everything else replaces)."""
    out = copy.deepcopy(base)
    for key, val in (over or {}).items():
        if isinstance(val, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], val)
        else:
            out[key] = copy.deepcopy(val)
    return out


def _read_yaml(path):
    """A YAML file parsed by libyaml (``CSafeLoader``): Snakemake's own loader (yte, pure Python)
    takes ~0.3 s for config.yaml and the schema, a sixth of a dry run's start-up."""
    return config_yaml.read(path)  # strict: a key twice in one mapping is refused with its file and line


def _validate(data, schema_path):
    """``snakemake.utils.validate`` (JSON schema, defaults filled in) with the schema parsed by libyaml."""
    import snakemake.utils as smk_utils

    plain = smk_utils._load_configfile

    def fast(source, filetype="Config"):
        if isinstance(source, (str, Path)):
            return _read_yaml(source)
        with source as f:  # the open file Snakemake's source cache hands over
            return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

    smk_utils._load_configfile = fast
    try:
        validate(data, schema=str(schema_path))
    except Exception as err:  # snakemake's WorkflowError prints the schema and the whole config
        inner = err if hasattr(err, "absolute_path") else err.__cause__ or err.__context__
        if not hasattr(inner, "absolute_path"):
            inner = None
        if inner is None:
            raise
        raise ValueError(_schema_message(inner)) from None
    finally:
        smk_utils._load_configfile = plain


def _schema_message(err):
    """One line for a JSON-schema error: the key, the problem, the allowed values."""
    key = ".".join(str(p) for p in err.absolute_path) or "(top level)"
    schema = err.schema if isinstance(err.schema, dict) else {}
    problem = err.message
    allowed = ""
    if err.validator == "additionalProperties":
        known = sorted(schema.get("properties", {}))
        allowed = f"; allowed keys: {', '.join(known)}" if known else ""
    elif err.validator == "enum":
        problem = f"{err.instance!r} is not allowed"
        allowed = f"; allowed: {', '.join(map(str, err.validator_value))}"
    elif err.validator in ("oneOf", "anyOf"):
        problem = f"{err.instance!r} matches none of the allowed forms"
        alts = [s.get("description") or s.get("type") for s in err.validator_value if isinstance(s, dict)]
        what = schema.get("description") or " | ".join(str(a) for a in alts if a)
        allowed = f"; allowed: {what}" if what else ""
    elif schema.get("description"):
        allowed = f" ({schema['description']})"
    if len(problem) > 200:
        problem = problem[:197] + "..."
    return f"config key '{key}': {problem}{allowed}"


def _check_finite(cfg):
    """Every number of the config finite (YAML's .nan / .inf and the command line's nan / inf pass
    a JSON schema's ``type: number`` and its bounds, since comparisons with NaN are false)."""
    stack = [("", cfg)]
    while stack:  # iterative: an error's traceback stays two lines
        key, value = stack.pop()
        if isinstance(value, dict):
            stack += [(f"{key}.{k}" if key else str(k), v) for k, v in value.items()]
        elif isinstance(value, (list, tuple)):
            stack += [(f"{key}[{i}]", v) for i, v in enumerate(value)]
        elif isinstance(value, float) and not np.isfinite(value):
            raise ValueError(f"config key '{key}': {value!r} is not a finite number")


def _typed(value):
    """A ``--config`` value with its scalars typed: Snakemake reads a nested value such as
    ``c5={steps: 1000}`` with YAML's BaseLoader, which leaves every scalar a string."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, str):
        for parse in (int, float):
            try:
                return parse(value)
            except ValueError:
                pass
        return {"true": True, "false": False, "null": None, "~": None}.get(value.lower(), value)
    return value


def _load_config(cfg):
    """Defaults <- preset file <- --configfile files <- command-line --config, then schema
    validation and the semantic checks (:func:`softlin.config_check.check`): (config, checked covariances)."""
    settings = workflow.config_settings
    for path in settings.configfiles:  # parsed by Snakemake (last of two equal keys wins): re-read strictly
        config_yaml.read(path, mapping=True)
    cli = _deep_merge(getattr(settings, "overwrite_config", None) or {},
                      _typed(dict(getattr(settings, "config", None) or {})))
    preset = cli.get("preset", cfg.get("preset", "default"))
    over = {}
    if preset != "default":
        folder = Path(workflow.basedir) / "config" / "presets"
        known = sorted(p.stem for p in folder.glob("*.yaml"))
        if not isinstance(preset, str) or preset not in known:  # a name, never a path (../presets/smoke)
            raise ValueError(f"config key 'preset': unknown preset {preset!r} (known: default, {', '.join(known)})")
        over = _read_yaml(folder / f"{preset}.yaml") or {}
    merged = _deep_merge(_deep_merge(cfg, over), cli)
    _check_finite(merged)
    _validate(merged, Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml")
    sigmas = config_check.check(merged)  # one line naming the key, before any job
    return merged, sigmas


stop_signals.forward_to_jobs(signal.SIGINT)  # SIGTERM: at the start of a run (onstart, below)


onstart:
    stop_signals.forward_to_jobs(signal.SIGTERM)  # after Snakemake's own (which waits for the jobs)


# config/config.yaml (the defaults) is read here rather than by a `configfile:` directive, with libyaml
config, SIGMAS = _load_config(_read_yaml(Path(workflow.basedir) / "config" / "config.yaml"))
if not (workflow.remote_exec or workflow.subprocess_exec):  # the planning process only, not each job
    outputs.check_outputs()  # a damaged output (not what its seal says) is set aside: the run rebuilds it
PRESET = config["preset"]
PRESET_DESCRIPTION = config["description"]  # what the preset is (its file's `description`), for figures
ALL_TARGETS = []  # each claim's .smk appends the outputs of its target rule `cN`

# --------------------------------------------------------------------------- log and benchmark paths
def logfile(claim, name):
    return f"results/logs/{claim}/{name}.log"


def benchfile(claim, name):
    return f"results/benchmarks/{claim}/{name}.tsv"


# --------------------------------------------------------------------------- C3 helpers
def c3_runs(n_seed=None):
    """(setting, seed) pairs of C3; ``n_seed``: ``{setting: seeds}`` instead of each setting's own
    (c3.replicates: the same seed0 and stride, so the default's seeds come first)."""
    c3 = config["c3"]
    return [(name, c3["seed0"] + c3["seed_stride"] * i)
            for name, st in c3["settings"].items() for i in range((n_seed or {}).get(name, st["n_seed"]))]


def c3_setting(name):
    """The resolved description of one C3 setting (label, token kind, covariance as a nested list)."""
    st = config["c3"]["settings"][name]
    s = SIGMAS[("c3", name)]
    label = st.get("label") or ("isotropic" if np.array_equal(s, np.eye(len(s))) else name)
    # (no n_seed here: it is not a property of one seed's run, and as a param it made a change of
    # n_seed resample and retrain every existing seed of the setting)
    return {"name": name, "label": label, "token_kind": st.get("token_kind", "gauss"),
            "sigma": s.tolist()}


# --------------------------------------------------------------------------- C1 / C2 / C4 helpers
def pow2_range(cfg):
    """Nested prompt lengths 2^log2_L_min .. 2^log2_L_max of a claim's config section."""
    return [2 ** j for j in range(cfg["log2_L_min"], cfg["log2_L_max"] + 1)]


def claim_setting(claim, name):
    """Resolved setting of claim c1 / c4: name, label, token kind, covariance (nested list), probe overrides."""
    st = config[claim]["settings"][name]
    s = SIGMAS[(claim, name)]
    return {"name": name, "label": st.get("label") or name, "token_kind": st.get("token_kind", "gauss"),
            "sigma": s.tolist(), "probes": st.get("probes") or {}}




# --------------------------------------------------------------------------- C5 helpers


C5_TASK_KEYS = ("d", "kms_rho", "noise_var", "w_var", "covariance_mode", "sample_dtype")
C5_TRAIN_KEYS = C5_TASK_KEYS + ("parametrisation", "models", "seed", "init_seed", "restarts",
                                "restart_select_frac", "steps", "batch", "optimizer", "streams",
                                "log_every", "chunk")


def _c5_section(keys):
    """The C5 keys a job reads (``w_var: null`` stays null: softlin.online_task.make_task defaults it to 1/d)."""
    return {k: config["c5"][k] for k in keys}


def c5_train_config():
    """The C5 settings a training job reads: the task law and the optimiser, nothing else (so a
    change of the test set, the criteria or the L list reruns no finished training)."""
    return _c5_section(C5_TRAIN_KEYS)


def c5_record_config():
    """The C5 settings the shape of a training job's record depends on (softlin.claims.c5.job_like)."""
    return _c5_section(("d", "parametrisation", "models", "restarts", "steps", "log_every"))


def c5_metrics_config():
    """The C5 settings the metrics job reads: the task law, the L list, the test set, the
    convergence rule."""
    return _c5_section(C5_TASK_KEYS + ("L", "models", "eval", "convergence", "optimizer", "steps"))


def _c5_named(entries):
    """Replicate entries as ``{name: {seed, init_seed, eval_seed}}`` (name ``s2026_i10_e31338``)."""
    return {f"s{r['seed']}_i{r['init_seed']}_e{r['eval_seed']}": dict(r) for r in entries}


def c5_replicates():
    """The c5.replicates entries as ``{name: {seed, init_seed, eval_seed}}`` (name ``s2026_i10_e31338``)."""
    return _c5_named(config["c5"]["replicates"])


def c5_confirm_replicates():
    """The c5.confirm.replicates entries (fresh seeds, target c5_confirm), named as :func:`c5_replicates`'."""
    return _c5_named(config["c5"].get("confirm", {}).get("replicates", []))


def c5_any_replicate(name):
    """One replicate's seeds, exploratory (c5.replicates) or confirmatory (c5.confirm.replicates)."""
    return {**c5_confirm_replicates(), **c5_replicates()}[name]


def c5_is_default(rep):
    c5 = config["c5"]
    return (rep["seed"], rep["init_seed"], rep["eval_seed"]) == (c5["seed"], c5["init_seed"], c5["eval"]["seed"])


def c5_replicate_dir(name):
    """Where a replicate's results are: the default run's own (results/c5) for the replicate equal to
    the default settings, else results/c5_replicates/<name>."""
    return "results/c5" if c5_is_default(c5_any_replicate(name)) else f"results/c5_replicates/{name}"


def c5_replicate_train_config(name):
    """The training settings of a replicate: :func:`c5_train_config` with its seed and init_seed."""
    rep = c5_any_replicate(name)
    return {**c5_train_config(), "seed": rep["seed"], "init_seed": rep["init_seed"]}


def c5_replicate_metrics_config(name):
    """The metrics settings of a replicate: :func:`c5_metrics_config` with its test-set seed."""
    cfg = c5_metrics_config()
    return {**cfg, "eval": {**cfg["eval"], "seed": c5_any_replicate(name)["eval_seed"]}}


def c5_step_seconds(Ls):
    """Predicted CPU seconds of one joint step of a group on one thread (softlin.config_cost)."""
    return config_cost.c5_step_seconds(config["c5"], Ls)


def c5_groups():
    """The prompt-length groups of the training jobs: consecutive runs of ``c5.L_per_job``
    lengths (0: all lengths in one job, the layout that draws each batch once)."""
    Ls, k = config["c5"]["L"], config["c5"]["L_per_job"]
    k = k or len(Ls)
    return [Ls[i:i + k] for i in range(0, len(Ls), k)]


def c5_group_name(Ls):
    """Wildcard value of a group: '10' for one length, '10+20+30' for several."""
    return "+".join(str(L) for L in Ls)


def c5_group_Ls(name):
    return [int(L) for L in name.split("+")]


def c5_runtime_min(Ls):
    """Minutes a c5_train job may take: 1.5 x the CPU prediction on the job's threads +
    compilation; on a GPU far less."""
    c5 = config["c5"]
    return 5 + int(1.5 * c5["steps"] * c5_step_seconds(Ls) / c5["threads"] / 60)


def c5_mem_mb(Ls):
    return config_cost.c5_mem_mb(config["c5"], Ls)


def c5_protocol():
    """What the figure and the verdict print about the run."""
    c5 = config["c5"]
    keys = ("d", "kms_rho", "noise_var", "covariance_mode", "parametrisation", "batch", "optimizer",
            "restarts", "streams", "steps", "L", "scaled_down", "deviation", "sample_dtype", "log_every",
            "description")
    out = {k: c5[k] for k in keys}
    out["deviation"] = c5_protocol_text.deviation(c5)  # from the settings, never c5.deviation's free text
    out["n_test"] = c5["eval"]["n_test"]
    out["convergence"] = dict(c5["convergence"])
    return out


# --------------------------------------------------------------------------- report
def report_front_page():
    """workflow/report/workflow.rst, followed by the table of every verdict once a run has written
    it (results/verdicts.rst): the report opens on the verdicts."""
    static = Path(workflow.basedir) / "workflow" / "report" / "workflow.rst"
    table = Path("results/verdicts.rst")
    if not table.exists():
        return str(static)
    text = f"{static.read_text()}\n\n{table.read_text()}"
    front = Path(".snakemake") / "report_front.rst"
    front.parent.mkdir(exist_ok=True)
    if not front.exists() or front.read_text() != text:
        front.write_text(text)
    return str(front.resolve())


# --------------------------------------------------------------------------- code inputs
PROJECT_PACKAGES = ("softlin", "symbolic")
NATIVE_USERS = {"softlin.kernels.build"}  # modules that build and load the C++ library (its sources: KERNEL_DIR)
KERNEL_DIR = Path("softlin") / "kernels" / "csrc"
# modules reached without an import statement: the package's lazy names (symbolic.get,
# symbolic.write_all) register every derivation; symbolic.core.get(id) imports only that
# derivation's module, which the module calling it imports (symbolic.export.s2 imports s2_population)
DYNAMIC = {"symbolic": ["symbolic.core"] + [f"symbolic.{p.stem}" for p in
                                            sorted((Path(workflow.basedir) / "symbolic").glob("s[0-9]*_*.py"))]}


@functools.lru_cache(maxsize=None)
def _module_file(name):
    """The source file of a project module ``softlin.x.y`` (a package's __init__.py), or None."""
    base = Path(workflow.basedir).joinpath(*name.split("."))
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    return None


IMPORT_RE = re.compile(r"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)|import[ \t]+([^\n#]+))",
                       re.MULTILINE)


@functools.lru_cache(maxsize=None)
def _imported_modules(path, package):
    """``(used, parents)``: the project modules a file imports (every import statement, lazy ones
    inside functions included; relative imports resolved against ``package``; a package whose
    attributes are imported counts as used), and the packages above them (their __init__.py runs
    first).  Read with a regular expression over the import statements (a syntax tree of every
    file costs twice as long at every start of Snakemake)."""
    used, parents = set(), set()
    text = re.sub(r"#[^\n]*", "", Path(path).read_text())  # comments (a ')' in one ends a group)
    for m in IMPORT_RE.finditer(text):
        if m.group(3):  # import a.b as c, d
            names = [n.split()[0] for n in m.group(3).split(",") if n.strip()]
        else:
            base, level = m.group(1).lstrip("."), len(m.group(1)) - len(m.group(1).lstrip("."))
            if level:
                parts = package.split(".")[: len(package.split(".")) - level + 1]
                base = ".".join(parts + ([base] if base else []))
            aliases = [n.split()[0] for n in m.group(2).strip("()").replace("\n", " ").split(",") if n.strip()]
            subs = [f"{base}.{a}" for a in aliases]
            names = [n for n in subs if _module_file(n)]
            if len(names) < len(subs):  # attributes of the module `base` itself
                names.append(base)
        for n in names:
            if n.split(".")[0] in PROJECT_PACKAGES and _module_file(n):
                used.add(n)
                parts = n.split(".")
                parents |= {".".join(parts[:k]) for k in range(1, len(parts))}
    return frozenset(used), frozenset(parents)


def code_inputs(script):
    """Every project source file a rule's ``script`` runs: the script and the transitive closure of
    the softlin/symbolic modules it imports (read from the sources, so the list cannot drift), plus
    the C++ sources where the kernel library is reached.  Editing any of them reruns the rule."""
    script = Path(workflow.basedir) / "workflow" / "scripts" / script
    todo, inits = _imported_modules(script, "")
    todo, inits, seen = list(todo), set(inits), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        f = _module_file(name)
        used, parents = _imported_modules(f, name if f.name == "__init__.py" else name.rpartition(".")[0])
        todo += [n for n in used | set(DYNAMIC.get(name, [])) if n not in seen]
        inits |= parents
    files = {str(script)} | {str(_module_file(n)) for n in seen | inits}
    if seen & NATIVE_USERS:
        files |= {str(p) for p in (Path(workflow.basedir) / KERNEL_DIR).iterdir()
                  if p.suffix in (".cc", ".h")}
    return sorted(source(f) for f in files)


def source(path):
    """A file of the workflow's sources (``path``: absolute, or relative to the Snakefile's folder)
    as a path relative to the working directory: recorded so, a working directory copied or moved
    with its sources plans no job, and ``-s CLONE/Snakefile -d OTHER`` finds it."""
    return os.path.relpath(Path(workflow.basedir) / path)
