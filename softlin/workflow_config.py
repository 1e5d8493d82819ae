"""The workflow's config: defaults <- preset <- ``--configfile`` / ``--config``, merged, typed, validated.

``workflow/rules/common.smk`` calls :func:`load` once while Snakemake reads the Snakefile; nothing
here imports Snakemake.  Validation is JSON schema (draft 2020-12) with the schema's defaults
filled in, as ``snakemake.utils.validate`` does, but with the schema parsed by libyaml.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from . import config_check, config_yaml, statements

CONFIG = Path("config") / "config.yaml"
PRESETS = Path("config") / "presets"
SCHEMA = Path("workflow") / "schemas" / "config.schema.yaml"


def deep_merge(base, over):
    """``over`` merged into a copy of ``base`` (nested mappings merge, everything else replaces)."""
    out = copy.deepcopy(base)
    for key, val in (over or {}).items():
        if isinstance(val, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], val)
        else:
            out[key] = copy.deepcopy(val)
    return out


def read_yaml(path):
    """A YAML file parsed by libyaml (``CSafeLoader``; Snakemake's own loader, yte, pure Python,
    takes ~0.3 s for config.yaml and the schema, a sixth of a dry run's start-up), strictly: a key
    twice in one mapping is refused with its file and line (:func:`softlin.config_yaml.read`)."""
    return config_yaml.read(path)


def typed(value):
    """A ``--config`` value with its scalars typed: Snakemake reads a nested value such as
    ``c5={steps: 1000}`` with YAML's BaseLoader, which leaves every scalar a string."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    if isinstance(value, str):
        for parse in (int, float):
            try:
                return parse(value)
            except ValueError:
                pass
        return {"true": True, "false": False, "null": None, "~": None}.get(value.lower(), value)
    return value


def check_finite(cfg):
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


def schema_message(err):
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


def _with_defaults(validator_class):
    """``validator_class`` filling every ``properties`` default into the instance before validating
    it (the jsonschema FAQ's recipe, which ``snakemake.utils.validate(set_default=True)`` uses)."""
    from jsonschema import validators

    plain = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        for name, sub in properties.items():
            if "default" in sub:
                instance.setdefault(name, sub["default"])
        yield from plain(validator, properties, instance, schema)

    return validators.extend(validator_class, {"properties": set_defaults})


def validate(data: dict, schema: dict) -> dict:
    """``data`` validated against the JSON schema ``schema`` (a parsed dict), its defaults filled
    in place (and returned); ValueError with one line (:func:`schema_message`) if it is invalid."""
    from jsonschema import Draft202012Validator, ValidationError

    try:
        _with_defaults(Draft202012Validator)(schema).validate(data)
    except ValidationError as err:  # snakemake's WorkflowError printed the schema and the whole config
        raise ValueError(schema_message(err)) from None
    return data


def preset_config(root: Path, preset) -> dict:
    """The preset's file ``config/presets/<preset>.yaml`` ({} for ``default``); ValueError for an
    unknown name (a name, never a path: ``../presets/smoke``)."""
    if preset == "default":
        return {}
    folder = Path(root) / PRESETS
    known = sorted(p.stem for p in folder.glob("*.yaml"))
    if not isinstance(preset, str) or preset not in known:
        raise ValueError(f"config key 'preset': unknown preset {preset!r} (known: default, {', '.join(known)})")
    return read_yaml(folder / f"{preset}.yaml") or {}


def merged(root: Path, cli: dict) -> dict:
    """Defaults (config/config.yaml) <- the preset it names <- ``cli`` (Snakemake's ``config`` as it
    stands when the Snakefile is read: the ``--configfile`` files and ``--config`` values), typed,
    finite and validated with the schema's defaults filled in; no semantic checks."""
    root = Path(root)
    defaults = read_yaml(root / CONFIG)
    cli = typed(dict(cli or {}))
    out = deep_merge(deep_merge(defaults, preset_config(root, cli.get("preset", defaults.get("preset", "default")))),
                     cli)
    check_finite(out)
    return validate(out, read_yaml(root / SCHEMA))


def load(root: Path, cli: dict, configfiles=()) -> tuple[dict, dict]:
    """``configfiles`` (the ``--configfile`` files, parsed by Snakemake, where the last of two equal
    keys wins) re-read strictly, :func:`merged`, then the semantic checks
    (:func:`softlin.config_check.check`, one line naming the key, before any job), every criterion's
    statement with the config values it quotes (:func:`softlin.statements.fill_config`): (config,
    the checked covariances ``{(claim, setting): array}``)."""
    for path in configfiles:
        config_yaml.read(path, mapping=True)
    cfg = statements.fill_config(merged(root, cli))
    return cfg, config_check.check(cfg)
