"""C3's verdict notes (rule c3_verdict): the seeds each undecided test would need, and C3d's runs.

Apart from :mod:`softlin.claims.c3` (an input of the training jobs), so that a change here reruns
the verdict only."""

from __future__ import annotations

import numpy as np

from .. import verdict


def _n_seed_of(metrics: dict, path: str, label) -> int | None:
    """Seeds behind the value at ``path`` (entry ``label`` of a mapping)."""
    parts = path.split(".")
    if parts[0] == "fits":
        return metrics["fits"][parts[1]]["n_seed"]
    if parts[:2] == ["offblock", "seed_order"] and label is not None:
        return metrics["offblock"]["seed_order"]["n_seed"].get(label)
    return None


def replication_needed(verdicts: list[dict], metrics: dict, z: float) -> list[dict]:
    """For every undecided test of an INCONCLUSIVE criterion among the evaluated ``verdicts`` (main
    or precondition; main tests only where no precondition fails), the seeds it would need to
    decide (:func:`softlin.verdict.replication_to_decide`, the worst undecided entry of a mapping): rows
    ``{id, measured, label, value, se, n_seed, needed}``."""
    out = []
    for v in verdicts:
        if v["status"] != "INCONCLUSIVE":  # decided: a FAIL stays a FAIL whatever its other tests
            continue
        # a precondition that fails makes the criterion INCONCLUSIVE whatever its main tests say
        blocked = any(r["outcome"] == "fails" for r in v["preconditions"])
        for r in ([] if blocked else v["tests"]) + v["preconditions"]:
            if r["outcome"] != "undecided" or r.get("exact") or "count" in r:
                continue
            vals, ses = r["value"], r.get("se")
            entries = vals.items() if isinstance(vals, dict) else [(None, vals)]
            worst = None
            for lab, x in entries:
                s = ses[lab] if isinstance(ses, dict) else ses
                m = r["multiplier"][lab] if isinstance(r["multiplier"], dict) else r["multiplier"]
                n = _n_seed_of(metrics, r["measured"], lab)
                if n is None or s is None or not np.isfinite(s) or not np.isfinite(x):
                    continue
                if verdict.decide(r["op"], r["threshold"], x, s, m)[0] != "undecided":
                    continue
                need = verdict.replication_to_decide(x, s, n, r["threshold"], z, t_law=True)
                if worst is None or need > worst["needed"]:
                    worst = dict(id=v["id"], measured=r["measured"], label=lab, value=x, se=s, n_seed=n, needed=need)
            if worst is not None:
                out.append(worst)
    return out


def notes_markdown(verdicts: list[dict], metrics: dict, z: float) -> str:
    """The verdict's extra sections: the replication each undecided test would need, and C3d's runs
    (growth rate at the end of training and final off-block mass of every run that grows)."""
    lines = []
    need = replication_needed(verdicts, metrics, z)
    if need:
        lines += ["## What would decide the undecided tests", "",
                  "Seeds per setting for `value +/- t se` to clear the threshold (t the Student quantile at "
                  f"the level of +/- {z:g} with n - 1 degrees of freedom), from the standard error's `1/sqrt(n)` "
                  "scaling across seeds (an estimate: the value itself moves with more seeds).", "",
                  "| criterion | measured | value +/- se | seeds now | seeds needed |", "|---|---|---|---|---|"]
        lines += [f"| {r['id']} | `{r['measured']}`{'' if r['label'] is None else ' [' + r['label'] + ']'} "
                  f"| {r['value']:.4g} +/- {r['se']:.2g} | {r['n_seed']} | "
                  f"{'inf' if not np.isfinite(r['needed']) else int(np.ceil(r['needed']))} |" for r in need]
        lines.append("")
    so = metrics.get("offblock", {}).get("seed_order")
    if so:
        rec = metrics["offblock_rate"]
        lines += ["## C3d: the runs without pair summation", "",
                  f"Growth rate per step of the off-block mass: OLS slope of ln(mass) over the last "
                  f"{rec['records']} records (masses below {rec['floor']:g}, "
                  "rounding level, count as that floor: a run at rounding level has rate 0); the peak rate "
                  "is the largest such slope over any window of as many consecutive records. Largest final "
                  f"mass: softmax {so['softmax_max']:.2g}, linear(inf) {so['limit_max']:.2g}. Runs whose mass "
                  "grew or ends above 1e-12:", ""]
        lines += [f"* {x}" for x in so["runs"]] or ["* none"]
        grow = so.get("n_grow", {})
        lines += ["", f"C3d reads, per (setting, L), the fraction of seeds whose peak rate exceeds "
                  f"{so.get('grow_rate', 0):g} per step (Agresti-Coull estimate (k + 2) / (n + 4) with its binomial "
                  "standard error; the mean of rates floored at 0 it replaced had value = s.e. with one growing "
                  "seed). Seeds that grow: " + (", ".join(f"{k}: {v} of {so['n_seed'][k]}"
                                                        for k, v in grow.items() if v) or "none")]
        lines.append("")
    return "\n".join(lines) + ("\n" if lines else "")
