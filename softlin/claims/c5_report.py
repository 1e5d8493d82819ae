"""C5 verdict text: the per-run convergence table, the replication an undecided test would need, and
the two questions C5 answers apart: (a) does the paper's protocol reproduce, (b) the claim itself."""

from __future__ import annotations

import math

from .. import verdict


def replication_needed(criteria: list[dict], metrics: dict, z: float, n: int, unit: str) -> list[str]:
    """Markdown lines: for every undecided test (value +/- z se straddling a threshold), the
    replication that would decide it if its standard error falls like 1 / sqrt(n) and the value stays:
    ``n x (z se / |value - threshold|)^2`` ``unit``."""
    lines = []
    for c in criteria:
        for t in c["all"] + c.get("inconclusive_unless", []):
            r = verdict.check(t, metrics, z)
            if r["outcome"] != "undecided":
                continue
            d = r["decided_by"]
            se, x = d["se"], d["value"]
            if "count" in r:
                lines.append(f"* {c['id']}: `{t['measured']}` undecided ({d['reason']}); no replication estimate")
                continue
            need = (verdict.replication_to_decide(x, se, n, t["value"], z, t_law=True)
                    if se and math.isfinite(x) else math.inf)
            if math.isinf(need):
                lines.append(f"* {c['id']}: `{t['measured']}` undecided ({d['reason']}); no replication estimate")
                continue
            need = math.ceil(need)
            lines.append(f"* {c['id']}: `{t['measured']}` = {x:.4g} +/- {se:.2g} against {t['value']}: "
                         f"would need about {need} {unit} (now {n})")
    return lines


def convergence_table(conv: dict) -> str:
    """Markdown table of every run's convergence (flatness with its error, reference, status)."""
    rows = ["| run | init seed | first loss | final loss | escape step (diagnostic) | end drop +/- se (points) | flat "
            "| drop over the last learning (diagnostic) | test risk | reference risk | ratio | within reference | status "
            "| by the rule before issue 24 |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for k, r in conv["runs"].items():
        ref = (f"{r['risk']:.4g} | {r['reference']:.4g} | {r['risk_over_reference']:.3f} | {r['within_reference']}"
               if "reference" in r else "- | - | - | -")
        seed = r.get("init_seed")
        old = r.get("converged_by_old_rule")
        rows.append(f"| {k} | {'-' if seed is None else seed} | {r['initial']:.4g} | {r['final']:.4g} | "
                    f"{r['escape_step'] if r['escape_step'] is not None else 'never'} | "
                    f"{r['rel_drop_end']:.3g} +/- {r['rel_drop_end_se']:.2g} ({r['n_window']}) | {r['flat']} | "
                    + (f"{r['rel_drop_learning']:.3g} +/- {r['rel_drop_learning_se']:.2g}" if "rel_drop_learning" in r else "-")
                    + f" | {ref} | "
                    f"{'**' + r['status'] + '**' if r['status'] != 'converged' else r['status']} | "
                    f"{'-' if old is None else ('converged' if old else 'NOT converged')} |")
    changed = [k for k, r in conv["runs"].items()
               if r.get("converged_by_old_rule") is not None and r["converged_by_old_rule"] != r["converged"]]
    note = (f"\n\nRuns whose status changed with the issue-24 flatness rule: {', '.join(changed)}" if changed
            else "\n\nNo run changed status with the issue-24 flatness rule.")
    return "\n".join(rows) + note + "\n"


def prediction_text(metrics: dict) -> str:
    p = metrics.get("prediction")
    if not p:
        return "S7 (the first-order prediction) is not available in this checkout.\n"
    g, ge = metrics["gap_L_at_Lmax"], metrics["gap_L_at_Lmax_se"]
    return (f"First-order prediction (symbolic S7, `python -m symbolic show S7`): R_linear* = R_inf + K_lin / L, "
            f"K_lin = {p['K_lin']:.4g}; the softmax reference family at its best scale c* = {p['c_star']:.4g}: "
            f"R_softmax = R_inf + K_soft / L, K_soft = {p['K_soft_star']:.4g}; predicted gap x L = "
            f"{p['gap_constant']:.4g}. Measured gap x L at L = {metrics['L_max']}: {g:.4g} +/- {ge:.2g} "
            f"({metrics['gap_L_over_predicted_at_Lmax']:.3f} +/- {metrics['gap_L_over_predicted_at_Lmax_se']:.2g} "
            f"of the prediction); softmax's excess over R_inf is {metrics['excess_ratio_softmax_over_linear_at_Lmax']:.3g} "
            f"+/- {metrics['excess_ratio_softmax_over_linear_at_Lmax_se']:.2g} x linear's at L = {metrics['L_max']} "
            f"(first order: {p['K_soft_star'] / p['K_lin']:.3g}).\n")
