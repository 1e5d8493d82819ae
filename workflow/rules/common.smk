# Helpers shared by every claim: presets, validation, package inputs, per-claim parameters.
import copy
from pathlib import Path

import numpy as np
import yaml
from snakemake.utils import validate


def _deep_merge(base, over):
    """``over`` merged into a copy of ``base`` (nested mappings merge, everything else replaces)."""
    out = copy.deepcopy(base)
    for key, val in (over or {}).items():
        if isinstance(val, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], val)
        else:
            out[key] = copy.deepcopy(val)
    return out


def _load_config(cfg):
    """Defaults <- preset file <- command-line --config, then schema validation and semantic checks."""
    cli = getattr(workflow.config_settings, "overwrite_config", None) or {}
    preset = cli.get("preset", cfg.get("preset", "default"))
    merged = cfg
    if preset != "default":
        path = Path(workflow.basedir) / "config" / "presets" / f"{preset}.yaml"
        if not path.exists():
            known = sorted(p.stem for p in path.parent.glob("*.yaml"))
            raise ValueError(f"config key 'preset': unknown preset {preset!r} (known: default, {', '.join(known)})")
        merged = _deep_merge(_deep_merge(cfg, yaml.safe_load(path.read_text()) or {}), cli)
    validate(merged, schema="../schemas/config.schema.yaml")
    _check_semantics(merged)
    return merged


def sigma_matrix(spec, key):
    """Covariance from its config form (diagonal list or full matrix); raise naming ``key`` if not SPD."""
    a = np.asarray(spec, dtype=float)
    s = np.diag(a) if a.ndim == 1 else a
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"config key '{key}': sigma must be square, got shape {s.shape}")
    if not np.allclose(s, s.T, rtol=0, atol=1e-12):
        raise ValueError(f"config key '{key}': sigma must be symmetric")
    if np.linalg.eigvalsh(s).min() <= 0:
        raise ValueError(f"config key '{key}': sigma is not positive definite "
                         f"(smallest eigenvalue {np.linalg.eigvalsh(s).min():.3g})")
    return s


def _check_semantics(cfg):
    c3 = cfg.get("c3")
    if c3 is not None:
        if c3["steps"] % c3["record_every"]:
            raise ValueError("config key 'c3.record_every': must divide c3.steps")
        if sorted(set(c3["L"])) != list(c3["L"]):
            raise ValueError("config key 'c3.L': prompt lengths must be strictly increasing")
        for name, st in c3["settings"].items():
            s = sigma_matrix(st["sigma"], f"c3.settings.{name}.sigma")
            if s.shape[0] != c3["d"]:
                raise ValueError(f"config key 'c3.settings.{name}.sigma': dimension {s.shape[0]} != c3.d = {c3['d']}")
            if st.get("token_kind", "gauss") == "rademacher" and not np.array_equal(s, np.eye(c3["d"])):
                raise ValueError(f"config key 'c3.settings.{name}.sigma': Rademacher tokens need sigma = I")
        if c3["eval"]["L"] < max(c3["L"]):
            raise ValueError("config key 'c3.eval.L': must be at least max(c3.L)")


config = _load_config(config)
PRESET = config["preset"]

# --------------------------------------------------------------------------- package inputs
PKG = Path(workflow.basedir) / "softlin"
KERNEL_SOURCES = [str(PKG / f) for f in ("__init__.py", "_jax.py", "tasks.py", "params.py", "models.py",
                                         "fused.py", "csrc/softmax_moments.cc", "train.py")]


def pkg(*files):
    """Paths of package source files a rule depends on (so editing one reruns exactly its users)."""
    return [str(PKG / f) for f in files]


def logfile(claim, name):
    return f"results/logs/{claim}/{name}.log"


def benchfile(claim, name):
    return f"results/benchmarks/{claim}/{name}.tsv"


# --------------------------------------------------------------------------- C3 helpers
def c3_runs():
    """(setting, seed) pairs of C3."""
    c3 = config["c3"]
    return [(name, c3["seed0"] + c3["seed_stride"] * i)
            for name, st in c3["settings"].items() for i in range(st["n_seed"])]


def c3_setting(name):
    """The resolved description of one C3 setting (label, token kind, covariance as a nested list)."""
    st = config["c3"]["settings"][name]
    s = sigma_matrix(st["sigma"], f"c3.settings.{name}.sigma")
    label = st.get("label") or ("isotropic" if np.array_equal(s, np.eye(len(s))) else name)
    return {"name": name, "label": label, "token_kind": st.get("token_kind", "gauss"),
            "sigma": s.tolist(), "n_seed": st["n_seed"]}
