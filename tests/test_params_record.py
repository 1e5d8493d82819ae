"""Snakemake records a job's params by value only (softlin.rule_params.named adds their names).

Snakemake 9 stores the sorted reprs of a job's non-derived params, names dropped, and reruns a job
only when that set changes, so swapping two params' values, or giving one the value another already
has, planned nothing (c1={n_query: 3} at the smoke preset).  Here: the entry ``by_name`` that every
rule's params carry (``params: **named(...)``), checked in memory against the reprs Snakemake would
record, and in the rule files; tests/test_workflow.py plans the rerun on the smoke build.
"""
import re
from pathlib import Path

import pytest

from softlin.rule_params import BY_NAME, named

from helpers import ROOT

RULES = sorted((ROOT / "workflow" / "rules").glob("*.smk"))


def recorded(params: dict, wildcards=None) -> set:
    """The set Snakemake compares (persistence._params): repr of each non-derived value, names dropped;
    a function of the wildcards is evaluated, one of input / output / threads / resources is left out."""
    out = set()
    for v in params.values():
        if callable(v):
            args = v.__code__.co_varnames[:v.__code__.co_argcount]
            if {"input", "output", "threads", "resources"} & set(args):
                continue
            v = v(wildcards)
        out.add(repr(v))
    return out


def test_without_names_a_value_moved_between_params_is_invisible():
    """The fault itself: n_query 4 -> 3 where n_pairs is 3 and another param is 4 keeps the set."""
    old, new = dict(n_pairs=3, n_query=4, n_blocks=4), dict(n_pairs=3, n_query=3, n_blocks=4)
    assert recorded(old) == recorded(new)
    assert recorded(named(**old)) != recorded(named(**new))
    swapped = dict(n_pairs=4, n_query=3, n_blocks=4)
    assert recorded(named(**old)) != recorded(named(**swapped))


def test_names_entry_keeps_the_params_and_pairs_names_with_values():
    p = named(L=[1, 2], seed=7, criteria={"a": 1})
    assert {k: p[k] for k in ("L", "seed", "criteria")} == {"L": [1, 2], "seed": 7, "criteria": {"a": 1}}
    assert p[BY_NAME] == {"L": [1, 2], "seed": 7, "criteria": {"a": 1}}
    assert list(p) == ["L", "seed", "criteria", BY_NAME]


def test_functions_of_the_wildcards_stay_recorded_and_derived_ones_are_left_out():
    class W:
        setting = "iso"
    p = named(sweep=lambda w: {"iso": 0.5}[w.setting], n=3, path=lambda wildcards, output: output[0],
              cores=lambda w, threads: threads)
    entry = p[BY_NAME]
    assert callable(entry) and list(entry.__code__.co_varnames[:entry.__code__.co_argcount]) == ["wildcards"]
    assert entry(W()) == {"sweep": 0.5, "n": 3}
    assert repr({"sweep": 0.5, "n": 3}) in recorded(p, W())
    q = named(sweep=lambda w: 0.25, n=3)   # the function's value changed, the set of the others not
    assert recorded(p, W()) != recorded(q, W())


def test_the_reserved_name_is_refused():
    with pytest.raises(ValueError, match=BY_NAME):
        named(**{BY_NAME: 1})


def params_blocks(text: str) -> dict:
    """{rule: its params block's text} of a rule file (a block: the lines indented under ``params:``)."""
    blocks = {}
    for m in re.finditer(r"^(?:rule|checkpoint) (\w+):\n(.*?)(?=^\S|\Z)", text, re.M | re.S):
        p = re.search(r"^    params:\n((?:        .*\n|\n(?=        ))+)", m.group(2), re.M)
        if p:
            blocks[m.group(1)] = p.group(1)
    return blocks


@pytest.mark.parametrize("path", RULES, ids=lambda p: p.name)
def test_every_rule_names_its_params(path: Path):
    """Every rule with params (those of the default DAG and of c3_replicates, c5_replicates,
    c5_confirm, c5_limit all live in these files) passes them all through named()."""
    text = path.read_text()
    blocks = params_blocks(text)
    n_params = len(re.findall(r"^    params:", text, re.M))
    assert len(blocks) == n_params, f"{path.name}: a params block outside a rule"
    for rule, block in blocks.items():
        assert block.startswith("        **named(\n") and block.rstrip().endswith("\n        ),"), \
            f"{path.name}: rule {rule}'s params are not one **named(...)"
