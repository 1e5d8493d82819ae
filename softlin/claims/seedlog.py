"""Compare C3's numbers with the seed log's printed digits (workflow/resources/seed_log_c3.json).

Each number is formatted exactly as the seed script printed it and compared as a string.  The
seed log's off-block values are rounding noise of its run (see ``known_exceptions`` in the JSON)
and are reported but not counted as mismatches.
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
                ours = {"slope": f[f"slope_{k}"], "slope_se": f[f"slope_{k}_se"],
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


CRITERION = {"id": "C3-seed-log",
             "statement": "every number the seed log prints (per seed and L, theta_inf lines, fits, flags) "
                          "equals our value at its printed precision",
             "all": [{"measured": "seed_log.n_mismatch", "op": "==", "value": 0}]}


def with_comparison(criteria: list[dict], metrics: dict, seed_log: dict, per_seed: list[dict]):
    """C3's verdict inputs with the seed-log comparison added: ``(criteria + [CRITERION], metrics
    with seed_log = {n_compared, n_mismatch}, the comparison table as Markdown)``; the arguments
    are left unchanged.  ``per_seed``: the rows of ``results/c3/c3_per_seed.csv``."""
    rows = compare(seed_log, per_seed, metrics["infos"], metrics["fits"])
    metrics = dict(metrics, seed_log={"n_compared": sum(r["match"] is not None for r in rows),
                                      "n_mismatch": sum(r["match"] is False for r in rows)})
    return list(criteria) + [CRITERION], metrics, to_markdown(rows)
