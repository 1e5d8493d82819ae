"""Compare C3's numbers with the seed log's printed digits (workflow/resources/seed_log_c3.json).

Each number is formatted exactly as the seed script printed it and compared as a string, our
numbers read from the seed log's seeds only (the workflow runs more).  The seed log's off-block
values are rounding noise of its run (see ``known_exceptions`` in the JSON) and are reported but
not counted as mismatches.  Beside the digits, the seed log's outcome under its own rule: the
criteria it was judged by (config ``c3.seed_log_outcome``) evaluated with ``z = 0`` on the same
seeds (:func:`outcome`).  Both are consistency checks (C3-seed-log, C3-seed-log-outcome), not
verdicts on the paper.
"""

from __future__ import annotations

FIT_NAMES = {"isotropic_gauss": "isotropic_gauss", "anisotropic_gauss": "anisotropic_gauss",
             "isotropic_RADEMACHER_control": "isotropic_rademacher"}
ROW_KEYS = ("D_inf_max", "D_linL_max", "R_pop_at_L", "dist_bayes")
FIT_KEYS = ("slope", "slope_se", "n_increases", "first", "last", "ratio")


def _seed_booleans(f: dict) -> dict:
    """The seed script's own pass flags (its ``fit_block``), applied to our fit for comparison."""
    return {
        "C3a_PASS": f["n_increases_D_inf_max"] <= 1 and -0.65 <= f["slope_D_inf_max"] <= -0.35
        and f["D_inf_max_rel_to_theta"] < 0.05,
        "C3b_PASS": f["n_increases_R_pop_at_L"] <= 1 and f["R_pop_rel_to_init"] < 0.02,
        "C3c_PASS": f["dist_bayes_ratio"] < 0.25,
    }


def compare(seed_log: dict, per_seed: list[dict], infos: list[dict], fits: dict) -> list[dict]:
    """Rows ``{where, quantity, seed_log, ours, match}`` for every number the seed log prints."""
    fmt = seed_log["formats"]
    out = []

    def add(where, quantity, seed_val, ours, fmt_key=None, counted=True):
        ours_s = fmt[fmt_key].format(ours) if fmt_key else str(ours)
        out.append(dict(where=where, quantity=quantity, seed_log=str(seed_val), ours=ours_s,
                        match=(ours_s == str(seed_val)) if counted else None))

    for run in seed_log["runs"]:
        where = f"{run['setting']}/{run['token_kind']} seed {run['seed']}"
        info = next((i for i in infos if i["setting"] == run["setting"]
                     and i["token_kind"] == run["token_kind"] and i["seed"] == run["seed"]), None)
        if info is None:
            continue
        ti = run["theta_inf"]
        add(where, "theta_inf R_init", ti["R_init"], info["R_init"], "theta_inf.R_init")
        add(where, "theta_inf R_final", ti["R_final"], info["R_final"], "theta_inf.R_final")
        add(where, "theta_inf dist_bayes", ti["dist_bayes"], info["dist_bayes_inf"], "theta_inf.dist_bayes")
        add(where, "theta_inf offblock_U", ti["offblock_U"], info["offblock_inf_U"], "theta_inf.offblock", False)
        for srow in run["rows"]:
            mine = next((r for r in per_seed if r["setting"] == run["setting"] and r["token_kind"]
                         == run["token_kind"] and r["seed"] == run["seed"] and r["L"] == srow["L"]), None)
            if mine is None:
                continue
            for k in ROW_KEYS:
                add(f"{where} L={srow['L']}", k, srow[k], mine[k], k)
            add(f"{where} L={srow['L']}", "offblock_U", srow["offblock_U"], mine["offblock_U"],
                "offblock_U", False)
    for sfit in seed_log["fits"]:
        f = fits.get(FIT_NAMES[sfit["config"]])
        if f is None:
            continue
        where = f"fit {sfit['config']}"
        for k in ("D_inf_max", "D_linL_max", "R_pop_at_L", "dist_bayes"):
            for q in FIT_KEYS:
                ours = {"slope": f[f"slope_{k}"], "slope_se": f[f"slope_{k}_ols_se"],
                        "n_increases": f[f"n_increases_{k}"], "first": f[f"{k}_first"],
                        "last": f[f"{k}_last"], "ratio": f[f"{k}_ratio"]}[q]
                add(where, f"{k} {q}", sfit[k][q], ours, None if q == "n_increases" else f"fit.{q}")
        add(where, "D_inf/||theta_inf||", sfit["D_inf_max_rel_to_theta"], f["D_inf_max_rel_to_theta"],
            "fit.D_inf_max_rel_to_theta")
        add(where, "R_pop/R_init", sfit["R_pop_rel_to_init"], f["R_pop_rel_to_init"], "fit.R_pop_rel_to_init")
        for k, v in _seed_booleans(f).items():
            add(where, k, sfit[k], bool(v))
    return out


def to_markdown(rows: list[dict]) -> str:
    """The comparison as a Markdown table, mismatches first."""
    n_bad = sum(r["match"] is False for r in rows)
    n_ok = sum(r["match"] is True for r in rows)
    lines = ["## The seed log's printed numbers beside ours", "",
             f"{n_ok} equal to the printed digits, {n_bad} different, "
             f"{sum(r['match'] is None for r in rows)} not compared (off-block rounding noise).", "",
             "| where | quantity | seed log | ours | |", "|---|---|---|---|---|"]
    order = sorted(rows, key=lambda r: {False: 0, True: 1, None: 2}[r["match"]])
    for r in order:
        mark = {True: "=", False: "**MISMATCH**", None: "(not compared)"}[r["match"]]
        lines.append(f"| {r['where']} | {r['quantity']} | {r['seed_log']} | {r['ours']} | {mark} |")
    return "\n".join(lines) + "\n"


def seed_log_seeds(seed_log: dict) -> dict:
    """``{"<setting>_<token_kind>": [seed, ...]}``: the seeds the seed log ran (its runs)."""
    out: dict[str, list[int]] = {}
    for run in seed_log["runs"]:
        out.setdefault(f"{run['setting']}_{run['token_kind']}", []).append(int(run["seed"]))
    return out


def missing_seeds(seed_log: dict, per_seed: list[dict]) -> dict:
    """The seed log's runs that this run does not have: ``{"<setting>_<token_kind>": [seed, ...]}``
    (empty when every seed the seed log ran is among ``per_seed``'s rows).  Where it is not empty
    (another ``c3.seed0``, ``seed_stride`` or fewer seeds) the seed-log comparisons read nothing of
    ours and are not applicable (:func:`not_applicable_markdown`), rather than passed or failed."""
    ours = {(f"{r['setting']}_{r['token_kind']}", int(r["seed"])) for r in per_seed}
    return {lab: miss for lab, seeds in seed_log_seeds(seed_log).items()
            if (miss := [s for s in seeds if (lab, s) not in ours])}


def not_applicable_markdown(ids: list[str], missing: dict, per_seed: list[dict]) -> str:
    """Why the seed-log checks ``ids`` were not evaluated: the seed log's seeds this run lacks."""
    ours: dict[str, list[int]] = {}
    for r in per_seed:
        lab = f"{r['setting']}_{r['token_kind']}"
        if int(r["seed"]) not in ours.setdefault(lab, []):
            ours[lab].append(int(r["seed"]))
    fmt = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in missing.items())
    run = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in ours.items())
    return ("## The seed log's comparisons: not applicable\n\n"
            f"{', '.join(ids)}: NOT APPLICABLE (not evaluated, neither passed nor failed): this run lacks "
            f"the seed log's seeds ({fmt}); its seeds: {run}.\n")


def seed_log_metrics(metrics: dict, per_seed: list[dict], seed_log: dict) -> dict:
    """C3's metrics recomputed from the seed log's seeds only, with the seed log's point-estimate
    reading (``z = 0``: the trend counts are plain counts of increases): ``{"fits", "offblock",
    "infos"}``, the same paths as the full metrics, so the config's criteria read them unchanged
    (C3d's growth threshold: the run's ``offblock_rate.grow_rate``)."""
    from . import c3  # c3 imports the training stack; the digits comparison alone does not need it

    seeds = seed_log_seeds(seed_log)
    infos = [i for i in metrics["infos"]
             if int(i["seed"]) in seeds.get(f"{i['setting']}_{i['token_kind']}", ())]
    rows = [r for r in per_seed if int(r["seed"]) in seeds.get(f"{r['setting']}_{r['token_kind']}", ())]
    offblock = c3.offblock_summary(rows, infos, metrics["offblock_rate"]["grow_rate"])  # the run's c3.offblock_rate
    return {"fits": c3.fit_all(rows, 0.0, seeds), "offblock": offblock, "infos": infos}


def outcome(expected: dict, rules: list[dict], block: dict) -> tuple[int, list[dict]]:
    """The seed log's outcome under its own rule: each criterion or check named in ``expected``
    (``{id: status}``; ``rules``: the config's criteria and consistency checks) evaluated with the
    point-estimate rule (``z = 0``) on ``block`` (:func:`seed_log_metrics`).  Returns (number of
    statuses that differ from ``expected``, one row ``{id, expected, ours, measured}`` each)."""
    from .. import verdict, verdict_report

    by_id = {c["id"]: c for c in rules}
    rows = []
    for cid, want in expected.items():
        v = verdict.evaluate(by_id[cid], block, z=0)
        rows.append(dict(id=cid, expected=want, ours=v["status"],
                         measured="; ".join(verdict_report.fmt_test(r) for r in v["tests"] + v["preconditions"])))
    return sum(r["expected"] != r["ours"] for r in rows), rows


def outcome_markdown(rows: list[dict], seeds: dict) -> str:
    """The seed log's outcome beside ours (its seeds, its rule) as a Markdown table."""
    n_bad = sum(r["expected"] != r["ours"] for r in rows)
    counts = {s: sum(r["ours"] == s for r in rows) for s in ("PASS", "FAIL", "INCONCLUSIVE")}
    lines = ["## The seed log's outcome under its own rule", "",
             "The criteria the seed log was judged by (C3d as it declared it: consistency check "
             "C3d-threshold), evaluated on our numbers from the seed log's seeds only ("
             + ", ".join(f"{k}: {', '.join(map(str, v))}" for k, v in seeds.items())
             + ") with its point-estimate rule (z = 0: no standard error read; the trend counts are "
             "plain counts of increases): " + ", ".join(f"{n} {s}" for s, n in counts.items())
             + f"; {n_bad} status(es) differ from the seed log's.", "",
             "| criterion | seed log | ours (its seeds, z = 0) | measured |", "|---|---|---|---|"]
    lines += [f"| {r['id']} | {r['expected']} | {r['ours']}{'' if r['ours'] == r['expected'] else ' **DIFFERS**'} "
              f"| {r['measured']} |" for r in rows]
    return "\n".join(lines) + "\n"


def with_comparison(metrics: dict, seed_log: dict, per_seed: list[dict], expected: dict | None = None,
                    rules: list[dict] | None = None) -> tuple[dict, str]:
    """C3's verdict inputs with the seed-log comparisons added (the arguments are left unchanged):
    ``(metrics with seed_log = {n_compared, n_mismatch, outcome_n_differ (when expected is given),
    each with se exact}, the comparison tables as Markdown)``.

    Both read our numbers from the seed log's seeds only (:func:`seed_log_metrics`): every printed
    digit against ours (consistency check C3-seed-log), and, given ``expected`` (config
    ``c3.seed_log_outcome``) and ``rules`` (the criteria and checks it names), the seed log's
    outcome under its own rule (check C3-seed-log-outcome).  ``per_seed``: the rows of
    ``results/c3/c3_per_seed.csv``."""
    block = seed_log_metrics(metrics, per_seed, seed_log)
    rows = compare(seed_log, per_seed, block["infos"], block["fits"])
    out = {"n_compared": sum(r["match"] is not None for r in rows),
           "n_mismatch": sum(r["match"] is False for r in rows)}
    out["n_compared_se"] = out["n_mismatch_se"] = "exact"
    block["seed_log"] = dict(out)  # C3-seed-log is part of the seed log's outcome
    md = ""
    if expected:
        n_differ, orows = outcome(expected, rules or [], block)
        out["outcome_n_differ"], out["outcome_n_differ_se"] = n_differ, "exact"
        md = outcome_markdown(orows, seed_log_seeds(seed_log)) + "\n"
    return dict(metrics, seed_log=out), md + to_markdown(rows)
