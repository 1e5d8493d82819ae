"""S7's limit test, read and shown (docs/c5_limit.md): K per set of replicates, the page, the figure."""

from __future__ import annotations

import re

import numpy as np

from ..plots import plt, save
from .c5_limit import limit_estimate, mean_se


def trained_rows(table) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per-replicate gap x L from a c5_replicates_risks.csv-like table (columns ``gap_L@<name>``): L, (n, n_L), names."""
    cols = [c for c in table.columns if c.startswith("gap_L@")]
    return table["L"].to_numpy(), table[cols].to_numpy().T, [c.split("@", 1)[1] for c in cols]


def _precondition(fit: dict, runs: list[str]) -> dict:
    """A trained set's K is read only if every run in its fit range converged (C5c, as for C5a, b, e, f):
    else the reading is 'inconclusive' with the runs ("replicate:model_L<L>") that were not shown converged."""
    lo, hi = fit["L_range"]
    bad = [r for r in runs if lo <= int(re.search(r"_L(\d+)$", r).group(1)) <= hi]
    return {**fit, "not_converged": bad, "reading": "inconclusive (runs not converged in the fit range)"} if bad else fit


def analyse(family: dict, trained: dict, limit: dict, z: float, convergence: dict | None = None) -> dict:
    """K with its interval for every set of trained replicates (and all pooled), the family's member c* (blocks)
    over family_fit_L and, as a diagnostic, over the trained range fit_L; per-L means +/- s.e. for the figure.
    ``convergence``: per set, the runs not shown converged (``unconverged + undecided`` of its metrics)."""
    convergence = convergence or {}
    ref, L = family["gap_constant"], np.asarray(family["L"])
    for key in ("fit_L", "family_fit_L"):
        lo, hi = limit[key]
        if sum(lo <= x <= hi for x in L) < 3 or lo > hi:
            raise ValueError(f"c5.limit.{key} = {limit[key]}: the fit of K - a/L - b/L^2 needs 3 or more of c5.limit.L in it")
    gap = np.asarray(family["gap_L"])
    m, s = mean_se(gap)
    fam = {"L": L.tolist(), "gap_L": m.tolist(), "gap_L_se": s.tolist(),
           "soft_L": mean_se(family["soft_L"])[0].tolist(), "soft_L_se": mean_se(family["soft_L"])[1].tolist(),
           "lin_L": mean_se(family["lin_L"])[0].tolist(), "lin_L_se": mean_se(family["lin_L"])[1].tolist(),
           "lin_L_exact": family["lin_L_exact"], "scan_L": family["scan_L"],
           "best_gap_L": mean_se(family["best_gap_L"])[0].tolist(), "best_gap_L_se": mean_se(family["best_gap_L"])[1].tolist(),
           "best_t": [sorted(set(c)) for c in np.asarray(family["best_t"]).T.tolist()]}
    fits = {"family member c*": limit_estimate(L, gap, limit["family_fit_L"], z, ref),
            "family member c*, trained range (diagnostic)": limit_estimate(L, gap, limit["fit_L"], z, ref)}
    unpaired = np.asarray(family["soft_L"]) - np.asarray(family["lin_L_exact"])   # added after the run (docs/c5_limit.md)
    fam["unpaired_gap_L"], fam["unpaired_gap_L_se"] = (v.tolist() for v in mean_se(unpaired))
    fits["family member c* - S6's exact linear (added after the run)"] = limit_estimate(
        L, unpaired, limit["family_fit_L"], z, ref)
    fits["family member c* - S6's exact linear, trained range (added after the run)"] = limit_estimate(
        L, unpaired, limit["fit_L"], z, ref)
    if len(family["scan_L"]) >= 3:
        fits["family best member, trained range (diagnostic)"] = limit_estimate(
            family["scan_L"], family["best_gap_L"], limit["fit_L"], z, ref)
    sets, pooled = {}, []
    for name, table in trained.items():
        Lt, rows, names = trained_rows(table)
        mt, st = mean_se(rows)
        sets[name] = {"L": Lt.tolist(), "gap_L": mt.tolist(), "gap_L_se": st.tolist(), "replicates": names}
        fits[f"trained, {name}"] = _precondition(limit_estimate(Lt, rows, limit["fit_L"], z, ref),
                                                 convergence.get(name, []))
        pooled.append((Lt, rows))
    if len(pooled) > 1 and all(np.array_equal(pooled[0][0], q[0]) for q in pooled):
        fits["trained, all replicates pooled"] = _precondition(
            limit_estimate(pooled[0][0], np.vstack([q[1] for q in pooled]), limit["fit_L"], z, ref),
            [r for runs in convergence.values() for r in runs])
    return {"reference": ref, "c_star": family["c_star"], "K_soft_star": family["K_soft_star"],
            "K_lin": family["K_lin"], "n_blocks": family["n_blocks"], "block_prompts": family["block_prompts"],
            "seed": family["seed"], "family": fam, "trained": sets, "fits": fits,
            "family_at_Lmax": {"L": int(L[-1]), "gap_L": float(m[-1]), "gap_L_se": float(s[-1]),
                               "df": len(gap) - 1}}


def _pm(x, s, d=2):
    return f"{x:.{d}f} +/- {s:.{d}f}"


def page(res: dict) -> str:
    """docs/c5_limit/c5_limit.md: the K table, the family's gap x L against the trained models', per L."""
    f = res["family"]
    lines = ["# S7's limit: measured (target `c5_limit`)\n",
             f"S7: K_soft(c*) - K_lin = {res['K_soft_star']:.3f} - {res['K_lin']:.3f} = **{res['reference']:.3f}** "
             f"(c* = {res['c_star']:.4f}). Model of the approach: gap x L = K - a/L - b/L^2, one OLS fit per "
             "independent replicate; K = mean +/- s.e. over replicates, df = n - 1, interval K +/- t s.e. "
             "(Student t at the level of decision.z); declared in docs/c5_limit.md before the fit.\n",
             "| fit | L range | n | K | s.e. | df | t | interval | reading | mean a | mean b |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, k in res["fits"].items():
        lines.append(f"| {name} | {k['L_range'][0]}-{k['L_range'][1]} ({k['n_points']} L) | {k['df'] + 1} | "
                     f"{k['K']:.2f} | {k['se']:.2f} | {k['df']} | {k['t']:.2f} | [{k['interval'][0]:.2f}, "
                     f"{k['interval'][1]:.2f}] | {k['reading']} | {k['a']:.0f} | {k['b']:.3g} |")
    for name, k in res["fits"].items():
        if k.get("not_converged"):
            lines.append(f"\n{name}: not read (precondition C5c): runs not shown converged in the fit range: "
                         + ", ".join(k["not_converged"]) + ".")
    a = res["family_at_Lmax"]
    lines += ["", f"The family's gap x L at the largest L = {a['L']}: **{_pm(a['gap_L'], a['gap_L_se'])}** "
              f"({res['n_blocks']} blocks of {res['block_prompts']} prompts, df {a['df']}, seed {res['seed']}).", "",
              "Per L (mean +/- s.e.; family: over blocks; trained: over seeds; trained - best member: independent "
              "sources, s.e.s combined in quadrature). The linear optimum's Monte Carlo L x excess is checked "
              "against S6's exact value (last two columns).", ""]
    names = list(res["trained"])
    lines += ["| L | family member c* gap x L | family best member gap x L | "
              + " | ".join(f"trained ({n}) gap x L" for n in names)
              + "".join(f" | trained ({n}) - best member" for n in names)
              + " | member c* L x excess | linear L x excess (MC) | linear (S6 exact) | member c* - S6 exact linear |",
              "|---" * (7 + 2 * len(names)) + "|"]
    best = dict(zip(f["scan_L"], zip(f["best_gap_L"], f["best_gap_L_se"])))
    for i, L in enumerate(f["L"]):
        tr, dif = [], []
        for n in names:
            t = res["trained"][n]
            j = t["L"].index(L) if L in t["L"] else None
            tr.append("-" if j is None else _pm(t["gap_L"][j], t["gap_L_se"][j]))
            dif.append("-" if j is None or L not in best else
                       _pm(t["gap_L"][j] - best[L][0], float(np.hypot(t["gap_L_se"][j], best[L][1]))))
        b = _pm(*best[L]) if L in best else "-"
        lines.append(f"| {L} | {_pm(f['gap_L'][i], f['gap_L_se'][i])} | {b} | " + " | ".join(tr + dif)
                     + f" | {_pm(f['soft_L'][i], f['soft_L_se'][i])} | {_pm(f['lin_L'][i], f['lin_L_se'][i])} | "
                     f"{f['lin_L_exact'][i]:.3f} | {_pm(f['unpaired_gap_L'][i], f['unpaired_gap_L_se'][i])} |")
    lines += ["", "Score scales chosen for the best member (in units of 1/c*, over the blocks' cross-fits), per L: "
              + "; ".join(f"{L}: {', '.join(f'{t:g}' for t in ts)}" for L, ts in zip(f["scan_L"], f["best_t"])), ""]
    return "\n".join(lines)


def figure(res: dict, png) -> None:
    """gap x L against L: trained replicates, the family's member c* and best member, S7's constant, the fits."""
    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    f = res["family"]
    ax.errorbar(f["L"], f["gap_L"], yerr=f["gap_L_se"], fmt="o-", color="tab:purple", ms=4, capsize=2,
                label=f"family: member c* vs linear optimum (Monte Carlo, {res['n_blocks']} x {res['block_prompts']} prompts)")
    ax.errorbar(f["scan_L"], f["best_gap_L"], yerr=f["best_gap_L_se"], fmt="^-", color="tab:green", ms=4, capsize=2,
                label="family: best member (score and output scales) vs linear optimum")
    for (name, t), col in zip(res["trained"].items(), ("tab:red", "tab:orange", "tab:brown")):
        bad = res["fits"][f"trained, {name}"].get("not_converged")
        ax.errorbar(t["L"], t["gap_L"], yerr=t["gap_L_se"], fmt="s", color=col, ms=4, capsize=2,
                    label=f"trained softmax - linear ({name}, {len(t['replicates'])} seeds)"
                    + (f"; not read: {', '.join(bad)} not converged" if bad else ""))
    ax.axhline(res["reference"], color="k", ls="--", lw=1, label=f"S7: K_soft(c*) - K_lin = {res['reference']:.2f}")
    xs = np.geomspace(100, max(f["L"]), 200)
    for name, col in (("family member c*", "tab:purple"), ("trained, exploratory", "tab:red"),
                      ("trained, confirmatory", "tab:orange")):
        k = res["fits"].get(name)
        if k and not k.get("not_converged"):
            ax.plot(xs, k["K"] - k["a"] / xs - k["b"] / xs ** 2, color=col, lw=0.8, alpha=0.7)
            ax.axhspan(*k["interval"], color=col, alpha=0.08)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.2 * res["reference"])   # an unconverged run's gap may lie outside (see the page)
    ax.set_xlabel("prompt length L")
    ax.set_ylabel("gap x L = L (R_softmax - R_linear)")
    ax.set_title("C5 task: gap x L against S7's limit (bands: K's intervals, lines: fits K - a/L - b/L^2)", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    save(fig, png)

