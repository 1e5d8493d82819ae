"""config/README.md cannot drift from the schema: every key is named in its section, every path exists."""
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
DOC = (ROOT / "config" / "README.md").read_text()


def _keys(node, path=()):
    """Every property path under a schema node: ``properties``, the items of an array, and the entries
    of ``additionalProperties`` / ``patternProperties`` (a setting's ``sigma``, a curve's ``label``);
    a ``$ref`` (criteria, tests) is not followed: the criteria section covers those."""
    if not isinstance(node, dict):
        return
    subs = [node.get("properties") or {}]
    subs += [s.get("properties") or {} for s in (node.get("patternProperties") or {}).values()]
    for extra in (node.get("additionalProperties"), node.get("items")):
        if isinstance(extra, dict):
            subs.append(extra.get("properties") or {})
    for props in subs:
        for name, sub in props.items():
            yield path + (name,)
            yield from _keys(sub, path + (name,))


def _sections():
    """``{top-level key: text of the '## ' sections whose heading names it in backticks}``."""
    out = {}
    for part in re.split(r"^## ", DOC, flags=re.MULTILINE)[1:]:
        heading = part.split("\n", 1)[0]
        for key in re.findall(r"`([\w]+)`", heading):
            out[key] = out.get(key, "") + part
    return out


def _named(name, text):
    """``name`` in backticks, alone or qualified (`optimizer.lr`) or with a value (`lr: 0.1`)."""
    return re.search(rf"`(?:[\w.]+\.)?{re.escape(name)}(?::[^`]*)?`", text) is not None


def test_every_schema_key_is_explained_in_its_section():
    sections = _sections()
    paths = sorted(set(_keys(SCHEMA)))
    assert len(paths) > 150  # the walk reaches the nested keys (c5.optimizer.lr, c3.settings.*.sigma)
    missing = [".".join(p) for p in paths if p[0] not in sections or not _named(p[-1], sections[p[0]])]
    assert not missing, f"config/README.md does not name these schema keys in their section: {missing}"


def test_the_criteria_format_is_explained():
    defs = SCHEMA["$defs"]
    fields = set(defs["criteria"]["items"]["properties"]) | set(defs["consistency_checks"]["items"]["properties"])
    fields |= set(defs["test"]["properties"])
    text = _sections()["criteria"]
    missing = sorted(f for f in fields if not _named(f, text))
    missing += [op for op in defs["test"]["properties"]["op"]["enum"] if f"`{op}`" not in text]
    assert not missing, f"config/README.md's criteria section does not name: {missing}"


def test_paths_named_in_the_page_exist():
    """Every repository path the page names in backticks (config/..., workflow/..., docs/..., softlin/...)."""
    named = set(re.findall(r"`((?:config|workflow|docs|softlin|tests)/[\w./-]+?)(?:#[\w-]+)?`", DOC))
    assert named
    absent = sorted(p for p in named if not (ROOT / p).exists())
    assert not absent, absent
    anchors = set(re.findall(r'<a id="([\w-]+)"></a>', (ROOT / "docs" / "maths.md").read_text()))
    cited = set(re.findall(r"docs/maths\.md#([\w-]+)", DOC))
    assert cited <= anchors, cited - anchors
