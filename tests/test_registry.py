"""The claim registry (softlin/claims/registry.py) and the derivation registry (symbolic/registry.py)
agree with every place that names a claim or a derivation: rules, report captions, figure functions,
SLURM groups, config, schema, config page, metric names, derivation modules."""

import importlib
import re
from pathlib import Path

import pytest

from softlin import workflow_config as wc
from softlin.claims import metric_names, registry
from symbolic import registry as sym

ROOT = Path(__file__).resolve().parents[1]  # (not helpers': this module also runs in test_extending's copy)
RULES = ROOT / "workflow" / "rules"
SCHEMA = wc.read_yaml(ROOT / wc.SCHEMA)
CONFIG = wc.read_yaml(ROOT / wc.CONFIG)


@pytest.mark.parametrize("claim", registry.CLAIMS, ids=registry.IDS)
def test_claim_is_wired_everywhere(claim):
    """Its rule file is included, defines the target rule ``<id>`` and appends it to ALL_TARGETS;
    every caption and SLURM group it lists is used there under its report category; its figure
    functions exist; its config section is in config.yaml, the schema and config/README.md."""
    text = (RULES / claim.rules).read_text()
    assert f'include: "workflow/rules/{claim.rules}"' in (ROOT / "Snakefile").read_text()
    assert re.search(rf"^rule {claim.id}:$", text, re.M) and f"ALL_TARGETS.extend(rules.{claim.id}." in text
    assert re.search(rf'^\s+(json|metrics)="{re.escape(claim.metrics)}",$', text, re.M), claim.metrics
    for caption in (*claim.captions, registry.VERDICT_CAPTION):
        assert (ROOT / "workflow" / "report" / caption).is_file(), caption
        assert f'category="{claim.title}", caption="../report/{caption}"' in text, caption
    for group in claim.slurm_groups:
        assert re.search(rf'group:\s+"{group}"', text), group
    for name in claim.figures:
        module, _, fn = name.rpartition(".")
        assert callable(getattr(importlib.import_module(module), fn)), name
    assert claim.section in CONFIG and claim.section in SCHEMA["properties"]
    assert f"## `{claim.section}`" in (ROOT / "config" / "README.md").read_text() or \
        f"`{claim.section}`" in (ROOT / "config" / "README.md").read_text()


def test_every_claim_has_metric_names_and_only_registered_claims_do():
    assert set(metric_names.METRICS) == set(registry.IDS) == set(metric_names.REQUIRES)


def test_every_rule_file_of_a_claim_is_registered():
    """A claim's rule file (cN_*.smk) without a registry entry is a claim the table would miss."""
    files = {p.name for p in RULES.glob("c[0-9]*_*.smk")}
    assert files == {c.rules for c in registry.CLAIMS}


def test_unknown_claim_names_the_known_ones():
    with pytest.raises(KeyError, match="known: c1, c2"):
        registry.claim("c9")


def test_derivation_registry_matches_its_modules():
    """Each registered id's module exists and registers exactly that id; every sN_*.py module is
    registered; docs/maths.md has an entry for each."""
    from symbolic import core

    modules = {p.stem for p in (ROOT / "symbolic").glob("s[0-9]*_*.py")}
    assert modules == set(sym.DERIVATION_MODULES.values())
    for did in sym.IDS:
        core._register(did)
        assert core.DERIVATIONS[did].__module__ == f"symbolic.{sym.DERIVATION_MODULES[did]}"
    assert set(core.DERIVATIONS) == set(sym.IDS)
    maths = (ROOT / "docs" / "maths.md").read_text()
    assert all(f"* **{did}**" in maths for did in sym.IDS)  # its entry in section 12


def test_slurm_profile_groups_are_registered():
    """The SLURM profile packs only groups some claim registers (and its rules declare)."""
    profile = wc.read_yaml(ROOT / "workflow" / "profiles" / "slurm" / "config.yaml")
    registered = {g for c in registry.CLAIMS for g in c.slurm_groups}
    assert set(profile.get("group-components") or {}) <= registered
