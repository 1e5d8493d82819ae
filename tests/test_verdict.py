"""verdict.evaluate: the decision rule on both sides of every operator (value +/- z se against
hand-computed bounds), every status combination against a hand-written table, the Markdown of late
criteria and consistency checks, and the seed log's own C3 outcome from its printed numbers under
the point-estimate rule (z = 0)."""
import itertools
import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from softlin import verdict, verdict_page, verdict_report
from softlin.io import write_text

ROOT = Path(__file__).parents[1]
CONFIG = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
SEED_LOG = json.loads((ROOT / "workflow" / "resources" / "seed_log_c3.json").read_text())

# one metric per state: with s.e. 0.1 and z = 2, a test "x < 1" holds for 0.5 (0.7 < 1), fails for
# 2.0 (1.8 >= 1), is undecided for 0.9 (0.7 < 1 <= 1.1) and for NaN
VALUE = {"holds": 0.5, "fails": 2.0, "undecided": 0.9, "nan": float("nan")}
SE = 0.1


def _crit(main: list[str], pre: list[str] | None):
    c = {"id": "X", "statement": "s",
         "all": [{"measured": f"m{i}", "op": "<", "value": 1} for i in range(len(main))]}
    if pre is not None:
        c["inconclusive_unless"] = [{"measured": f"p{i}", "op": "<", "value": 1} for i in range(len(pre))]
    metrics = {f"m{i}": VALUE[s] for i, s in enumerate(main)}
    metrics.update({f"p{i}": VALUE[s] for i, s in enumerate(pre or [])})
    metrics.update({f"{k}_se": SE for k in list(metrics)})
    metrics.update({f"{k[:-3]}_df": math.inf for k in list(metrics) if k.endswith("_se")})  # the normal limit: t = z
    return c, metrics


# the status table, written out by hand (not derived from verdict.status_of):
# main tests x preconditions -> status
TABLE = [
    # no preconditions
    (["holds"], None, "PASS"),
    (["holds", "holds"], None, "PASS"),
    (["fails"], None, "FAIL"),
    (["holds", "fails"], None, "FAIL"),
    (["nan"], None, "INCONCLUSIVE"),
    (["undecided"], None, "INCONCLUSIVE"),
    (["holds", "undecided"], None, "INCONCLUSIVE"),
    (["undecided", "fails"], None, "FAIL"),
    # an empty precondition list is no precondition
    (["holds"], [], "PASS"),
    (["fails"], [], "FAIL"),
    # preconditions all hold: the main tests decide
    (["holds"], ["holds"], "PASS"),
    (["holds", "holds"], ["holds", "holds"], "PASS"),
    (["fails"], ["holds"], "FAIL"),
    (["holds", "fails"], ["holds", "holds"], "FAIL"),
    (["nan"], ["holds"], "INCONCLUSIVE"),
    (["undecided"], ["holds"], "INCONCLUSIVE"),
    # a precondition fails or is undecided: INCONCLUSIVE whatever the main tests say (never PASS)
    (["holds"], ["fails"], "INCONCLUSIVE"),
    (["holds", "holds"], ["holds", "fails"], "INCONCLUSIVE"),
    (["fails"], ["fails"], "INCONCLUSIVE"),
    (["holds", "fails"], ["fails", "holds"], "INCONCLUSIVE"),
    (["holds"], ["nan"], "INCONCLUSIVE"),
    (["nan"], ["nan"], "INCONCLUSIVE"),
    (["holds"], ["undecided"], "INCONCLUSIVE"),
    (["fails"], ["undecided"], "INCONCLUSIVE"),
]


@pytest.mark.parametrize("main,pre,expected", TABLE)
def test_status_table(main, pre, expected):
    c, metrics = _crit(main, pre)
    v = verdict.evaluate(c, metrics)
    assert v["status"] == expected
    assert [p["holds"] for p in v["preconditions"]] == [s == "holds" for s in (pre or [])]
    if expected == "INCONCLUSIVE":
        assert v["why"]


def test_every_combination_up_to_two_tests():
    """Exhaustive: a precondition that does not hold -> INCONCLUSIVE; else a failed test -> FAIL;
    every test holds -> PASS; else INCONCLUSIVE."""
    states = list(VALUE)
    for n_main, n_pre in itertools.product((1, 2), (0, 1, 2)):
        for main in itertools.product(states, repeat=n_main):
            for pre in itertools.product(states, repeat=n_pre):
                c, metrics = _crit(list(main), list(pre) if n_pre else None)
                status = verdict.evaluate(c, metrics)["status"]
                if any(s != "holds" for s in pre):
                    assert status == "INCONCLUSIVE", (main, pre)
                elif "fails" in main:
                    assert status == "FAIL", (main, pre)
                elif all(s == "holds" for s in main):
                    assert status == "PASS", (main, pre)
                else:
                    assert status == "INCONCLUSIVE", (main, pre)


@pytest.mark.parametrize("op,value,x,holds", [
    ("<", 1, 0.99, True), ("<", 1, 1.0, False), ("<=", 1, 1.0, True), (">", 1, 1.0, False),
    (">=", 1, 1.0, True), ("==", 0, 0, True), ("==", 0, 1, False),
    ("between", [-0.65, -0.35], -0.5, True), ("between", [-0.65, -0.35], -0.3, False),
    ("between", [-0.65, -0.35], -0.65, True), ("outside", [0, 1], 1.5, True), ("outside", [0, 1], 0.5, False),
])
def test_operators_on_exact_values(op, value, x, holds):
    c = {"id": "X", "statement": "s", "all": [{"measured": "a.b.0", "op": op, "value": value}]}
    v = verdict.evaluate(c, {"a": {"b": [x], "b_se": ["exact"]}})
    assert v["status"] == ("PASS" if holds else "FAIL")
    assert v["tests"][0]["exact"] is True and "se" not in v["tests"][0]


# (op, threshold, value, se, z, outcome): the interval [x - z se, x + z se] computed by hand
RULE = [
    # one-sided: clears on the right side, clears on the wrong side, straddles (both sides of each op)
    ("<", 1.0, 0.75, 0.1, 2, "holds"), ("<", 1.0, 1.25, 0.1, 2, "fails"), ("<", 1.0, 0.85, 0.1, 2, "undecided"),
    ("<", 1.0, 1.15, 0.1, 2, "undecided"), ("<", 1.0, 0.85, 0.1, 1, "holds"), ("<", 1.0, 1.15, 0.1, 1, "fails"),
    ("<=", 1.0, 0.75, 0.1, 2, "holds"), ("<=", 1.0, 1.25, 0.1, 2, "fails"), ("<=", 1.0, 1.1, 0.1, 2, "undecided"),
    ("<=", 1.0, 0.8, 0.1, 2, "holds"),            # upper end exactly on the bound: <= holds
    ("<", 1.0, 0.8, 0.1, 2, "undecided"),         # ... and < does not
    (">", -0.25, -0.1, 0.05, 2, "holds"), (">", -0.25, -0.4, 0.05, 2, "fails"), (">", -0.25, -0.2, 0.05, 2, "undecided"),
    (">", -0.25, -0.3, 0.05, 2, "undecided"),
    (">=", 5.0, 6.0, 0.4, 2, "holds"), (">=", 5.0, 4.0, 0.4, 2, "fails"), (">=", 5.0, 5.5, 0.4, 2, "undecided"),
    (">=", 5.0, 4.5, 0.4, 2, "undecided"), (">=", 5.0, 4.5, 0.2, 2, "fails"),
    # two-sided bands
    ("between", [-0.65, -0.35], -0.5, 0.05, 2, "holds"), ("between", [-0.65, -0.35], -0.2, 0.05, 2, "fails"),
    ("between", [-0.65, -0.35], -0.8, 0.05, 2, "fails"), ("between", [-0.65, -0.35], -0.4, 0.05, 2, "undecided"),
    ("between", [-0.65, -0.35], -0.6, 0.05, 2, "undecided"), ("between", [-0.65, -0.35], -0.5, 0.5, 2, "undecided"),
    ("outside", [0.0, 1.0], 1.5, 0.1, 2, "holds"), ("outside", [0.0, 1.0], -0.5, 0.1, 2, "holds"),
    ("outside", [0.0, 1.0], 0.5, 0.1, 2, "fails"), ("outside", [0.0, 1.0], 1.1, 0.1, 2, "undecided"),
    ("outside", [0.0, 1.0], 0.5, 1.0, 2, "undecided"),
    # equality: only an exact value can be equal; a value with an error can only be shown unequal
    ("==", 0.0, 0.0, 0.1, 2, "undecided"), ("==", 0.0, 0.5, 0.1, 2, "fails"), ("==", 0.0, 0.1, 0.1, 2, "undecided"),
    # z = 0: the point-estimate rule decides every finite value
    ("<", 1.0, 0.99, 0.5, 0, "holds"), ("<", 1.0, 1.0, 0.5, 0, "fails"), ("between", [0, 1], 1.01, 3.0, 0, "fails"),
    # NaN value or standard error: undecided, never holds nor fails
    ("<", 1.0, float("nan"), 0.1, 2, "undecided"), ("<", 1.0, 0.5, float("nan"), 2, "undecided"),
    ("outside", [0, 1], float("nan"), 0.1, 2, "undecided"),
]


@pytest.mark.parametrize("op,value,x,se,z,outcome", RULE)
def test_decision_rule_on_both_sides_of_every_operator(op, value, x, se, z, outcome):
    c = {"id": "X", "statement": "s", "all": [{"measured": "m", "op": op, "value": value}]}
    v = verdict.evaluate(c, {"m": x, "m_se": se, "m_df": math.inf}, z=z)   # df = inf: the multiplier is z
    assert v["tests"][0]["outcome"] == outcome
    assert v["status"] == {"holds": "PASS", "fails": "FAIL", "undecided": "INCONCLUSIVE"}[outcome]
    if z > 0:
        assert v["tests"][0]["se"] == se or (np.isnan(se) and np.isnan(v["tests"][0]["se"]))


def test_a_mapping_is_tested_entry_by_entry():
    """A measured mapping {label: value}: holds if every entry holds, fails if one fails; the
    entry that decided is named (the first failing, else the closest to its bound in s.e.)."""
    c = {"id": "X", "statement": "s", "all": [{"measured": "slope", "op": "between", "value": [-0.65, -0.35]}]}
    ok = {"slope": {"a": -0.5, "b": -0.45}, "slope_se": {"a": 0.01, "b": 0.02}, "slope_df": math.inf}
    v = verdict.evaluate(c, ok)
    assert v["status"] == "PASS" and v["tests"][0]["decided_by"]["label"] == "b"   # 5 s.e. from -0.35 (a: 15)
    one_bad = {"slope": {"a": -0.5, "b": -0.2, "c": -0.36}, "slope_se": {"a": 0.01, "b": 0.02, "c": 0.05},
               "slope_df": math.inf}
    v = verdict.evaluate(c, one_bad)
    assert v["status"] == "FAIL" and v["tests"][0]["decided_by"]["label"] == "b"
    undecided = {"slope": {"a": -0.5, "c": -0.36}, "slope_se": {"a": 0.01, "c": 0.05}, "slope_df": math.inf}
    v = verdict.evaluate(c, undecided)
    assert v["status"] == "INCONCLUSIVE" and v["tests"][0]["decided_by"]["label"] == "c"
    assert "undecided" in v["why"]


def test_a_value_without_a_standard_error_is_refused():
    c = {"id": "X", "statement": "s", "all": [{"measured": "a.x", "op": "<", "value": 1}]}
    with pytest.raises(KeyError, match="a.x_se"):
        verdict.evaluate(c, {"a": {"x": 0.5}})
    assert verdict.evaluate(c, {"a": {"x": 0.5}}, z=0)["status"] == "PASS"   # the point rule reads none


@pytest.mark.parametrize("bad", [False, True, "0.5", None, [0.5]])
def test_values_that_cannot_be_compared_are_refused(bad):
    c = {"id": "X", "statement": "s", "all": [{"measured": "x", "op": "<", "value": 1}]}
    with pytest.raises(TypeError, match="cannot be compared"):
        verdict.evaluate(c, {"x": bad, "x_se": "exact"})


def test_numpy_scalars_and_float32_nan():
    c = {"id": "X", "statement": "s", "all": [{"measured": "x", "op": "outside", "value": [0, 1]}]}
    assert verdict.evaluate(c, {"x": np.float32("nan"), "x_se": "exact"})["status"] == "INCONCLUSIVE"
    assert verdict.evaluate(c, {"x": np.float64(2.0), "x_se": np.float32(0.1), "x_df": np.int64(9)})["status"] == "PASS"
    assert verdict.evaluate(c, {"x": np.int64(3), "x_se": "exact"})["status"] == "PASS"


def test_missing_metric_names_the_path():
    c = {"id": "X", "statement": "s", "all": [{"measured": "a.nope", "op": "<", "value": 1}]}
    with pytest.raises(KeyError, match="a.nope"):
        verdict.evaluate(c, {"a": {"b": 1}})


def test_added_after_run_and_consistency_checks_in_outputs(tmp_path):
    crit = [{"id": "K1", "statement": "kept", "all": [{"measured": "x", "op": "<", "value": 1}]},
            {"id": "K2", "statement": "late", "added_after_run": "replaced K0 after run 1",
             "all": [{"measured": "x", "op": ">", "value": 1}]}]
    checks = [{"id": "Z1", "statement": "by construction", "reason": "pair summation makes it exact",
               "all": [{"measured": "x", "op": "<", "value": 1}]}]
    out = SimpleNamespace(json=tmp_path / "v.json", md=tmp_path / "v.md", html=tmp_path / "v.html",
                          consistency=tmp_path / "c.json")
    vs = verdict_report.publish("c9", "t", crit, {"x": 0.5, "x_se": 0.1, "x_df": 30}, vars(out), checks=checks)  # plain paths
    assert [v["status"] for v in vs] == ["PASS", "FAIL"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "v.html", "v.json", "v.md"]  # no temporaries
    doc = json.loads(out.json.read_text())
    assert sorted(doc) == ["revision", "verdicts"] and doc["revision"]  # the code's revision: tests/test_revision.py
    saved = doc["verdicts"]
    assert [v["id"] for v in saved] == ["K1", "K2"]          # the checks are not verdicts
    assert saved[1]["added_after_run"] == "replaced K0 after run 1" and "added_after_run" not in saved[0]
    cons = json.loads(out.consistency.read_text())
    assert [(c["id"], c["status"], c["reason"]) for c in cons] == [("Z1", "PASS", "pair summation makes it exact")]
    md = out.md.read_text()
    assert "| K2 (added after a run) | **FAIL** |" in md
    assert "* **K2**: replaced K0 after run 1" in md
    assert "Summary (raw status): 1 PASS, 1 FAIL, 0 INCONCLUSIVE" in md             # Z1 not counted
    head, tail = md.split("## Consistency checks")
    assert "Z1" not in head and "| Z1 | **PASS** |" in tail
    assert "Consistency checks" in out.html.read_text()


def test_publish_without_checks_writes_an_empty_consistency_list(tmp_path):
    """(Also the older call form: an object with the paths as attributes, e.g. a rule's output.)"""
    out = SimpleNamespace(json=tmp_path / "v.json", md=tmp_path / "v.md", html=tmp_path / "v.html",
                          consistency=tmp_path / "c.json")
    verdict_report.publish("c9", "t", [{"id": "K", "statement": "s", "all": [{"measured": "x", "op": "<", "value": 1}]}],
                    {"x": 0, "x_se": "exact"}, out)
    assert json.loads(out.consistency.read_text()) == []


def test_publish_needs_the_three_paths(tmp_path):
    with pytest.raises(ValueError, match="html"):
        verdict_report.publish("c9", "t", [], {}, {"json": tmp_path / "v.json", "md": tmp_path / "v.md"})


def test_an_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    """Outputs are written to a temporary file and renamed: a write that fails half way leaves the
    previous file whole and no temporary behind."""
    target = tmp_path / "verdict.md"
    target.write_text("old\n")
    real = Path.write_text

    def half(self, text, *a, **k):
        real(self, text[: len(text) // 2])
        raise OSError("disk full")

    monkeypatch.setattr(Path, "write_text", half)
    with pytest.raises(OSError, match="disk full"):
        write_text(target, "new verdict text\n")
    monkeypatch.undo()
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["verdict.md"]


# --------------------------------------------------------------------------- the seed log's C3 outcome
def _ols(x, y):
    return float(np.polyfit(x, y, 1)[0])


def seed_log_metrics() -> dict:
    """C3's metrics rebuilt from the numbers the seed log printed (not from our runs), as the seed
    log read them (point estimates: the trend counts are its plain counts of increases)."""
    fits = {}
    for f in SEED_LOG["fits"]:
        D = {k: float(x) for k, x in f["D_inf_max"].items()}
        fits[{"isotropic_gauss": "isotropic_gauss", "anisotropic_gauss": "anisotropic_gauss",
              "isotropic_RADEMACHER_control": "isotropic_rademacher"}[f["config"]]] = {
            "n_sig_increases_D_inf_max": int(D["n_increases"]), "slope_D_inf_max": D["slope"],
            "D_inf_max_rel_to_theta": float(f["D_inf_max_rel_to_theta"]),
            "n_sig_increases_R_pop_at_L": int(f["R_pop_at_L"]["n_increases"]),
            "R_pop_rel_to_init": float(f["R_pop_rel_to_init"]),
            "dist_bayes_ratio": float(f["dist_bayes"]["ratio"]),
            "D_inf_max_small_over_large": D["first"] / D["last"]}
    rad = next(r for r in SEED_LOG["runs"] if r["token_kind"] == "rademacher")["rows"][-4:]
    fits["isotropic_rademacher"]["slope_last4_D_inf_max"] = _ols(
        np.log10([r["L"] for r in rad]), np.log10([float(r["D_inf_max"]) for r in rad]))
    # the seed trained without pair summation: its printed off-block values are what C3d-threshold
    # reads (the seed-mean final mass per setting and L; the seed log printed the U part)
    final, limit = {}, {}
    for r in SEED_LOG["runs"]:
        lab = f"{r['setting']}_{r['token_kind']}"
        limit.setdefault(f"{lab} linear(inf)", []).append(float(r["theta_inf"]["offblock_U"]))
        for x in r["rows"]:
            final.setdefault(f"{lab} L={x['L']}", []).append(float(x["offblock_U"]))
    seed_order = {"limit_final": {k: float(np.mean(v)) for k, v in limit.items()},
                  "final": {k: float(np.mean(v)) for k, v in final.items()}}
    return {"fits": fits, "offblock": {"seed_order": seed_order, "limit_max": 0.0, "softmax_max": 0.0},
            "seed_log": {"n_mismatch": 0}}


def test_seed_log_c3_outcome_reproduced():
    """The seed log's criteria as the config declares them (``c3.seed_log_outcome``: C3a-C3c, C3e,
    C3d as its threshold test C3d-threshold, C3-seed-log) on the seed log's printed numbers with
    the point-estimate rule: 6 PASS, 3 FAIL, 2 INCONCLUSIVE, criterion by criterion as the seed
    log reports them."""
    metrics = seed_log_metrics()
    assert metrics["fits"]["isotropic_rademacher"]["slope_last4_D_inf_max"] == pytest.approx(-0.045, abs=0.002)
    rules = {c["id"]: c for c in CONFIG["c3"]["criteria"] + CONFIG["c3"]["consistency_checks"]}
    expected = {"C3a-isotropic": "FAIL", "C3a-anisotropic": "FAIL", "C3b-isotropic": "PASS",
                "C3b-anisotropic": "PASS", "C3c-isotropic": "FAIL", "C3c-anisotropic": "PASS",
                "C3d-threshold": "PASS", "C3e-i-isotropic": "INCONCLUSIVE", "C3e-i-anisotropic": "INCONCLUSIVE",
                "C3e-ii": "PASS", "C3-seed-log": "PASS"}
    assert CONFIG["c3"]["seed_log_outcome"] == expected
    got = {cid: verdict.evaluate(rules[cid], metrics, z=0)["status"] for cid in expected}
    assert got == expected
    counts = {s: sum(v == s for v in got.values()) for s in verdict.STATUSES}
    assert counts == {"PASS": 6, "FAIL": 3, "INCONCLUSIVE": 2}
    # every other criterion and check of the seed log's ten is a config criterion, unchanged in what it reads
    assert set(expected) - {"C3d-threshold", "C3-seed-log"} <= {c["id"] for c in CONFIG["c3"]["criteria"]}


def test_seed_log_outcome_through_seedlog_module():
    """softlin.claims.c3_seed_log.outcome on the same numbers: no status differs from the config's."""
    from softlin.claims import c3_seed_log
    rules = CONFIG["c3"]["criteria"] + CONFIG["c3"]["consistency_checks"]
    n_differ, rows = c3_seed_log.outcome(CONFIG["c3"]["seed_log_outcome"], rules, seed_log_metrics())
    assert n_differ == 0 and len(rows) == 11


def test_config_criteria_are_well_formed():
    """Every criterion and consistency check of C1-C5 has tests; a consistency check says why it is
    one; a criterion changed after a run says so in added_after_run (a non-empty reason)."""
    from softlin.claims.registry import IDS

    for claim in IDS:
        for c in CONFIG[claim]["criteria"] + CONFIG[claim].get("consistency_checks", []):
            assert c["all"], c["id"]
            if "added_after_run" in c:
                assert c["added_after_run"].strip(), c["id"]
        for c in CONFIG[claim].get("consistency_checks", []):
            assert c.get("reason", "").strip(), c["id"]
        ids = [c["id"] for c in CONFIG[claim]["criteria"] + CONFIG[claim].get("consistency_checks", [])]
        assert len(ids) == len(set(ids)), claim


def test_overview_table_counts_claims_only():
    """The table of every verdict: one row per criterion, value +/- s.e. (df, t) as in the claim's
    table, the family-wide status beside the raw one, tallies per claim of each; the
    reStructuredText version has the same rows."""
    crit = [{"id": "A1", "statement": "s", "all": [{"measured": "a.b.x", "op": "<", "value": 1}]},
            {"id": "A2", "statement": "s", "all": [{"measured": "a.b.x", "op": ">", "value": 0.7}]}]
    m = {"a": {"b": {"x": 0.5, "x_se": 0.1, "x_df": math.inf}}}
    claims = {"c8": [verdict.evaluate(c, m) for c in crit],
              "c9": [verdict.evaluate(crit[0], {"a": {"b": {"x": 2.0, "x_se": "exact"}}})]}
    md = verdict_report.overview_markdown(claims)
    # p by hand: A1 5 s.e. from its edge, 2 P(Z > 5) = 5.7e-7; C9's exact FAIL, 0; Holm over m = 3 at
    # alpha = 0.0455: C9 first (level alpha / 3 = 0.015), A1 second (alpha / 2 = 0.023)
    assert "| C8 | A1 | **PASS** | **PASS** | 5.7e-07 (0.023) | b.x = 0.5 +/- 0.1 (df inf, t 2) | `x < 1` |" in md
    assert "| C9 | A1 | **FAIL** | **FAIL** | 0 (0.015) | b.x = 2 (exact) [fails] | `x < 1` |" in md
    assert "C8: 1 PASS, 1 FAIL, 0 INCONCLUSIVE; C9: 0 PASS, 1 FAIL, 0 INCONCLUSIVE" in md
    rst = verdict_page.overview_rst(claims)
    heads = re.findall(r'<tr class="softlin-claim"><th colspan="\d+">(C\d)</th></tr>', rst)
    assert heads == ["C8", "C9"] and rst.count("<tr><td><b ") == 3


def test_threshold_of_a_criterion_with_a_precondition_is_not_garbled():
    """The overview's threshold cell cuts each path to its last part and keeps every number whole,
    preconditions included (README rows C3e-i showed "`05 (precondition)`": a dotted number cut)."""
    c = next(c for c in CONFIG["c3"]["criteria"] if c["id"] == "C3e-i-isotropic")
    m = {"fits": {"isotropic_gauss": {"D_inf_max_small_over_large": 8.0, "D_inf_max_small_over_large_se": 0.5,
                                      "D_inf_max_small_over_large_df": 4, "D_inf_max_rel_to_theta": 0.14,
                                      "D_inf_max_rel_to_theta_se": 0.036, "D_inf_max_rel_to_theta_df": 4}}}
    row = verdict_report.overview_rows({"c3": [verdict.evaluate(c, m)]})[0]
    assert row["threshold"] == ("`D_inf_max_small_over_large >= 5` (conclusive only if "
                                "`D_inf_max_rel_to_theta < 0.05`)")
    assert row["id"] == "C3e-i-isotropic (control)"


@pytest.mark.parametrize("value,se,n,thr,z,expected", [
    (0.9, 0.1, 10, 1.0, 2, 40.0),            # 10 (2 * 0.1 / 0.1)^2
    (-0.4, 0.05, 5, [-0.65, -0.35], 2, 20.0),  # nearest edge -0.35: 5 (0.1 / 0.05)^2
    (1.0, 0.1, 10, 1.0, 2, float("inf")),     # on the threshold
])
def test_replication_to_decide(value, se, n, thr, z, expected):
    """The one formula behind every "replication it would need", against hand computation."""
    assert verdict.replication_to_decide(value, se, n, thr, z) == pytest.approx(expected)
