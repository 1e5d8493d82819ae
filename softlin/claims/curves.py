"""Curves over nested prompt lengths measured on independent task blocks (C1, C2): slopes, ratios
and increases, each with its delete-one jackknife standard error over the blocks (issue 23).

The prompt lengths are nested (prompt ``L`` is the first ``L`` tokens of prompt ``2L``), so the
points of one curve are correlated and the OLS residuals of a slope fit are no standard error.
The unit of replication is the task block: every statistic is recomputed on each delete-one
replicate (the curve reduced over the remaining blocks, then its slope, ratio, differences) and
:func:`softlin.metrics.jackknife` gives the standard error.  The OLS standard error is kept beside
it only as a diagnostic (``slope_se_ols``).
"""

from __future__ import annotations

import math

import numpy as np

from .. import importance, intervals, metrics, verdict
from ..metrics import EXACT


def log_slopes(Ls, y, mask=None) -> np.ndarray:
    """OLS slopes of ``log10 y`` on ``log10 L`` along the last axis of ``y`` (over ``mask``)."""
    x = np.log10(np.asarray(Ls, dtype=np.float64))
    y = np.log10(np.maximum(np.asarray(y, dtype=np.float64), 1e-300))
    if mask is not None:
        x, y = x[mask], y[..., mask]
    xc = x - x.mean()
    return (y - y.mean(axis=-1, keepdims=True)) @ xc / np.sum(xc ** 2)


def shape(Ls, curve) -> dict:
    """The statistics of curves ``(..., n_L)`` the criteria read: slopes over the upper half of the
    L range (``slope``), the whole range (``slope_full``) and the last four L (``slope_last4``),
    first/last values, ``ratio`` last/first and the consecutive differences ``diffs`` (..., n_L - 1)."""
    curve = np.asarray(curve, dtype=np.float64)
    Ls = np.asarray(Ls)
    out = dict(curve=curve, slope=log_slopes(Ls, curve, metrics.upper_half(Ls)),
               slope_full=log_slopes(Ls, curve), first=curve[..., 0], last=curve[..., -1],
               ratio=curve[..., -1] / curve[..., 0], diffs=np.diff(curve, axis=-1))
    if len(Ls) >= 4:
        out["slope_last4"] = log_slopes(Ls[-4:], curve[..., -4:])
    return out


def jackknife_shape(Ls, blocks, reduce):
    """``(value, se)`` of :func:`shape` of ``reduce(blocks)`` (the curve from the blocks on the
    leading axis), jackknifed over the blocks; with 3 or more blocks also ``last_over_se``, the last
    point over its own jackknife s.e. (a signal-to-noise ratio, random: its s.e. is the outer
    jackknife's, the inner s.e. recomputed on every delete-one replicate)."""
    n = np.shape(blocks)[0]

    def stat(b):
        out = shape(Ls, reduce(b))
        if n >= 3:
            inner = metrics.jackknife(lambda bb: np.asarray(reduce(bb))[..., -1], b)[1]
            out["last_over_se"] = np.asarray(out["last"]) / np.maximum(inner, 1e-300)
        return out
    return metrics.jackknife(stat, blocks)


def jackknife_shape_of_mean(Ls, blocks, of_mean, l_axis: int = -1):
    """:func:`jackknife_shape` of ``reduce(b) = of_mean(b.mean(axis=0))`` in O(n) evaluations of
    ``of_mean`` (the generic path costs O(n^2) for its inner ``last_over_se`` jackknife, each over the
    blocks): delete-one means ``(S - x_i) / (n - 1)`` and delete-two means ``(S - x_i - x_j) / (n - 2)``
    at the last L only (``l_axis``: the L axis of ``blocks``).  ``of_mean`` maps a mean (or a stack of
    means on a leading axis) to curves with L last.  The same values as the generic path up to rounding."""
    x = np.asarray(blocks, dtype=np.float64)
    n = x.shape[0]
    S = x.sum(axis=0)
    xl = np.take(x, [-1], axis=l_axis % x.ndim)                 # the blocks at the last L
    Sl = xl.sum(axis=0)

    def inner_se(total_last, rows) -> np.ndarray:
        m = len(rows)
        v = np.asarray(of_mean((total_last[None] - xl[rows]) / (m - 1)))[..., -1]
        return np.sqrt((m - 1) / m * np.sum((v - v.mean(axis=0)) ** 2, axis=0))

    def stat(mean, total_last, rows) -> dict:
        out = shape(Ls, of_mean(mean))
        if n >= 3:
            out["last_over_se"] = np.asarray(out["last"]) / np.maximum(inner_se(total_last, rows), 1e-300)
        return out

    idx = np.arange(n)
    full = metrics._tree_map(metrics._to_py, stat(S / n, Sl, idx))
    return full, metrics.jackknife_se([stat((S - x[i]) / (n - 1), Sl - xl[i], np.delete(idx, i)) for i in range(n)])


def rms(msq):
    """RMS over blocks of per-block mean squares (equal block sizes): ``sqrt(mean_b msq_b)``."""
    return np.sqrt(np.mean(msq, axis=0))


def fit(val: dict, se: dict, idx, Ls, z: float, beta: float | None = None, df=None,
        se_lower_bound: bool = False) -> dict:
    """One curve's fit (entry ``idx`` of :func:`jackknife_shape`'s arrays) with its standard errors
    and their degrees of freedom ``df`` (blocks - 1): slopes, ratio, last value; ``n_increases``:
    the count of rises, read with each rise's interval (:func:`softlin.metrics.put_count`: a PASS
    counts every rise not significantly below 0); ``n_increases_raw``: every rise (diagnostic);
    ``last_over_se`` where :func:`jackknife_shape` gave it; ``slope_plus_beta = slope + beta`` when
    ``beta`` is given.  ``se_lower_bound``: the errors are known to be lower bounds (heavy tails:
    docs/c1c2_uncertainty.md), flagged ``<name>_se_lower_bound`` beside every non-exact quantity, so
    none of them can grant a PASS.  ``z`` is kept for callers (the count is judged by the rule)."""
    if df is None:
        raise ValueError("curves.fit needs df, the degrees of freedom of the standard errors (n_blocks - 1)")

    def g(d, k):
        return np.asarray(d[k])[idx]
    curve, curve_se = g(val, "curve"), g(se, "curve")
    up = metrics.upper_half(Ls)
    out = dict(fit_L=[int(L) for L in np.asarray(Ls)[up]],
               slope_se_ols=metrics.fit_slope(Ls, curve, up)[1])
    for k in ("slope", "slope_full", "slope_last4", "ratio", "first", "last", "last_over_se"):
        if k in val:
            metrics.put(out, k, float(g(val, k)), float(g(se, k)), df)
    diffs, diffs_se = g(val, "diffs"), g(se, "diffs")
    metrics.put_count(out, "n_increases", diffs, diffs_se, df)
    out["n_increases_raw"] = int(np.sum(diffs > 0))
    rel = curve_se / curve
    metrics.put(out, "rel_se_max", float(rel.max()), EXACT)
    out["rel_se_last"] = float(rel[-1])
    if beta is not None:
        metrics.put(out, "slope_plus_beta", out["slope"] + beta, out["slope_se"], df)
    if se_lower_bound:
        for k in [k[:-3] for k in out if k.endswith("_df")]:
            out[k + "_se_lower_bound"] = True
    return out


def rows(val: dict, se: dict, idx) -> tuple[np.ndarray, np.ndarray]:
    """The curve and its jackknife standard error at entry ``idx``."""
    return np.asarray(val["curve"])[idx], np.asarray(se["curve"])[idx]


def mapping(fits: dict, key: str) -> tuple[dict, dict]:
    """``({label: fit[key]}, {label: fit[key + "_se"]})`` over ``fits`` (label -> fit)."""
    return {k: f[key] for k, f in fits.items()}, {k: f[key + "_se"] for k, f in fits.items()}


def put_mapping(out: dict, name: str, fits: dict, key: str) -> dict:
    """``out[name]`` with what the rule reads beside it, each a mapping ``{label: fit[...]}``:
    ``_se`` (``"exact"`` if every se is), ``_df``, a count's ``_rises`` / ``_rises_se``, and
    ``_se_lower_bound`` where a fit carries it."""
    if fits and all(key + "_rises" in f for f in fits.values()):
        metrics.put_count(out, name, {k: f[key + "_rises"] for k, f in fits.items()},
                          {k: f[key + "_rises_se"] for k, f in fits.items()},
                          {k: f[key + "_df"] for k, f in fits.items()})
    else:
        v, s = mapping(fits, key)
        if s and all(x == EXACT for x in s.values()):
            s, df = EXACT, None
        else:
            df = {k: f[key + "_df"] for k, f in fits.items()}
        metrics.put(out, name, v, s, df)
    if any(key + "_se_lower_bound" in f for f in fits.values()):
        out[name + "_se_lower_bound"] = {k: bool(f.get(key + "_se_lower_bound", False)) for k, f in fits.items()}


def estimator_diagnostics(block_msq_last, tilt: float, diag, lambda_heavy: float,
                          name: str | None = None) -> dict:
    """Which estimator gave a probe's values and how far its standard errors can be trusted:
    ``estimator`` (``task_integral`` or ``plant`` where ``name`` says so, else ``importance`` at tilt > 0, else
    ``blocks``), ``tilt``; ``share_max``: the largest
    block's share of the mean square at L_max (block_msq_last (n_blocks,)); ``ess``: Kish's effective
    number of independent queries of the weighted terms at L_max over ``n_units`` (diag (n_blocks, k, 3):
    sums of each weighted term, the weights last); ``weight_ess``: that of the weights; ``df``:
    blocks - 1; ``se_lower_bound``: the plain estimator at lambda_heavy >= 1/4 (infinite variance of a
    block's mean square, docs/maths.md#threshold; lambda_heavy = 0 for bounded tokens) or a block
    holding more than max(:data:`softlin.importance.SHARE_MAX`, 2 / n_blocks) of the mean square."""
    m = np.asarray(block_msq_last, float)
    share = importance.largest_share(m)
    label = name if name in ("task_integral", "plant") else "importance" if tilt > 0 else "blocks"
    out = dict(estimator=label, tilt=float(tilt), share_max=share,
               df=int(m.shape[0]) - 1)
    if diag is not None:
        tot = np.asarray(diag, float).sum(axis=0)
        out.update(n_units=int(tot[0, 2]), ess=importance.kish_ess(tot[0]), weight_ess=importance.kish_ess(tot[-1]))
        if tot.shape[0] > 2:
            out["ess_v"] = importance.kish_ess(tot[1])
    out["se_lower_bound"] = bool((tilt == 0 and lambda_heavy >= 0.25) or share > max(importance.SHARE_MAX, 2 / m.shape[0]))
    return out


# --------------------------------------------------------------------------- replication needed
SE_NOTE = (
    "## Standard errors\n\n"
    "Every slope, ratio and rise is recomputed on each delete-one replicate of the independent task "
    "blocks and its standard error is the jackknife's (the prompt lengths are nested, so OLS residuals "
    "over L are no standard error; the OLS value is kept in the metrics as `slope_se_ols`, often 2x "
    "smaller). For a PASS a rise counts unless its interval lies wholly below 0, for a FAIL only "
    "where it lies wholly above (the count is random: it is read with the rises' own intervals). "
    "Caveat: the variance of a block's mean squared gap is finite only "
    "for lambda_max(M) < 1/4 (it involves E[exp(2 s)], docs/maths.md#threshold); at probes beyond 1/4 "
    "the jackknife standard error is itself a noisy, optimistic estimate, so decisions there rest on "
    "heavy-tailed data, and the projection below (se ~ 1/sqrt(n)) does not hold there: in C1, "
    "8 blocks made C1d look about 20 blocks from deciding, while 24 blocks gave 3-5x larger standard "
    "errors (docs/c1c2_uncertainty.md). Since issue 31 the queries of Gaussian probes are drawn by importance "
    "sampling from S5's tilted Gaussian, which removes the query-level heavy tail of the first-order term (C1: "
    "estimator `importance`; C2: `task_integral` and `plant`, which also integrate the task vector out and, "
    "in `plant`, importance-sample the prompt's largest-score token; the table below names each probe's); "
    "where a single block still holds a large share of the mean square "
    "the standard error is marked a lower bound.\n")

def estimator_markdown(fits: dict, parts=(None,)) -> str:
    """Which estimator gave each probe's values (issue 31): a Markdown table of
    :func:`estimator_diagnostics` per probe (and part: ``fits[label][part]``)."""
    lines = ["## Estimator of each probe's mean square (issue 31, docs/c1c2_uncertainty.md)", "",
             "`importance`: queries from S5's tilted Gaussian with tilt t and weights p/q_t; `task_integral` (C2): "
             "the same queries, the task vector integrated out exactly (Gauss-Hermite), one prompt per antithetic "
             "pair; `plant` (C2): as `task_integral`, each prompt drawn from a defensive mixture that plants one token "
             "along a query's score direction, weighted by p/q <= 2; `blocks`: the plain mean. ESS: Kish's effective "
             "number of independent (prompt, query) units of the weighted terms at L_max, of n. "
             "share: the largest task block's share of the mean square at L_max. se lower bound: no PASS on it.", "",
             "| probe | part | lambda_max | estimator | t | ESS / n | share | se lower bound |",
             "|---|---|---|---|---|---|---|---|"]
    for label, f in fits.items():
        for part in parts:
            g = f if part is None else f[part]
            if "estimator" not in g:
                continue
            ess = f"{g['ess']:.0f} / {g['n_units']}" if "ess" in g else "-"
            lines.append(f"| {label} | {part or 'output'} | {f['lambda_max']:.3f} | {g['estimator']} | {g['tilt']:.3f} "
                         f"| {ess} | {g['share_max']:.2f} | {'yes' if g['se_lower_bound'] else 'no'} |")
    return "\n".join(lines) + "\n"


def count_needed(rises, rises_se, n: int, op: str, k: float, z: float, m: float) -> tuple[float, str]:
    """The replication that would decide an undecided count "at most k rises" (``op`` ``<=`` or ``<``),
    read with the rises' intervals at multiplier ``m`` (:func:`softlin.intervals.count_bounds`): to
    PASS, enough of the rises counted now (not significantly below 0) but negative must become
    significantly negative; to FAIL, enough positive ones significantly positive.  Each rise's own
    need is :func:`softlin.verdict.replication_to_decide` against 0 (se ~ 1/sqrt(n), the Student
    multiplier at its df); ``(n_needed, "PASS" or "FAIL")``, the cheaper direction (inf: neither
    at the present estimates)."""
    k_ok = k if op == "<=" else k - 1                            # the largest count that holds
    r, s = np.asarray(rises, float), np.asarray(rises_se, float)
    lo, hi = intervals.count_bounds(r, s, m)

    def kth(mask, j):
        needs = sorted(verdict.replication_to_decide(a, b, n, 0.0, z, t_law=True) for a, b in zip(r[mask], s[mask]))
        return math.ceil(needs[j - 1]) if 0 < j <= len(needs) and math.isfinite(needs[j - 1]) else math.inf
    to_pass = kth((r + m * s > 0) & (r < 0), int(hi) - k_ok)
    to_fail = kth((r - m * s <= 0) & (r > 0), k_ok + 1 - int(lo))
    return (to_pass, "PASS") if to_pass <= to_fail else (to_fail, "FAIL")


def needed(verdicts: list[dict], units, metrics_: dict | None = None) -> list[dict]:
    """For every undecided test entry (value +/- t se straddling its threshold, ``t`` the entry's
    multiplier): the replication that would decide it at the present estimate, from se ~ 1/sqrt(n)
    and the Student multiplier at ``n_needed - 1`` df (:func:`softlin.verdict.replication_to_decide`
    with ``t_law``; at least ``ceil(n (z se / |value - threshold|)^2)``).  ``units(path, label)`` gives
    ``(n, unit)``, the replication behind the value at ``path`` (its entry ``label``, None for a scalar).
    One row per undecided entry; with ``metrics_`` (the metrics the verdicts read) also one per
    undecided count of rises (:func:`count_needed`)."""
    out = []
    for v in verdicts:
        for t in v["tests"] + v.get("preconditions", []):
            if t["outcome"] == "undecided" and "count" in t and metrics_ is not None and t["op"] in ("<=", "<"):
                out += _count_rows(v["id"], t, units, metrics_)
                continue
            if t["outcome"] != "undecided" or t.get("exact") or "count" in t:
                continue
            z, mult = t["z"], t["multiplier"]
            x, s = t["value"], t.get("se")
            entries = ([(k, x[k], s[k] if isinstance(s, dict) else s) for k in x] if isinstance(x, dict)
                       else [(None, x, s)])
            for label, xv, sv in entries:
                if sv is None or isinstance(sv, str):
                    continue
                n, unit = units(t["measured"], label)
                m = mult[label] if isinstance(mult, dict) else mult
                outcome, _ = verdict.decide(t["op"], t["threshold"], xv, sv, m)
                if outcome != "undecided":
                    continue
                need = verdict.replication_to_decide(xv, sv, n, t["threshold"], z, t_law=True)
                n_need = need if math.isinf(need) else math.ceil(need)
                out.append(dict(id=v["id"], measured=t["measured"], label=label, value=xv, se=sv,
                                threshold=t["threshold"], op=t["op"], n=n, unit=unit, n_needed=n_need,
                                factor=n_need / n))
    return out


def _count_rows(cid: str, t: dict, units, metrics_: dict) -> list[dict]:
    """:func:`needed`'s rows of one undecided count test (each undecided entry of it)."""
    rises = verdict.lookup_sibling(metrics_, t["measured"], "_rises")
    rises_se = verdict.lookup_sibling(metrics_, t["measured"], "_rises_se")
    counts = t["count"] if isinstance(t["count"], dict) else {None: t["count"]}
    mult = t["multiplier"]
    out = []
    for label, (lo, hi) in counts.items():
        m = mult[label] if isinstance(mult, dict) else mult
        if intervals.decide_bounds(t["op"], t["threshold"], lo, hi)[0] != "undecided":
            continue
        r, s = (rises[label], rises_se[label]) if label is not None else (rises, rises_se)
        n, unit = units(t["measured"], label)
        n_need, way = count_needed(r, s, n, t["op"], t["threshold"], t["z"], m)
        out.append(dict(id=cid, measured=t["measured"], label=label, count=(int(lo), int(hi)),
                        value=int(t["value"][label] if label is not None else t["value"]), se=None,
                        threshold=t["threshold"], op=t["op"],
                        n=n, unit=unit, n_needed=n_need, factor=n_need / n, direction=way))
    return out


def needed_markdown(rows_: list[dict]) -> str:
    """The rows of :func:`needed` as a Markdown section (empty string if none)."""
    if not rows_:
        return ""
    lines = ["## Replication needed to decide the undecided tests", "",
             "At the present estimate, with the standard error shrinking as 1/sqrt(n) (n the independent "
             "replicates behind it), a test decides once t se < |value - threshold| (t the rule's Student "
             "quantile at n_needed - 1 degrees of freedom): the smallest such n_needed, at least "
             "ceil(n (z se / |value - threshold|)^2). A count of rises decides once enough of its undecided "
             "rises do (each the same way against 0): the replication of the last one it needs, to PASS or to "
             "FAIL, whichever comes first.", "",
             "| criterion | measured | value +/- se | threshold | n now | n needed (x now) |",
             "|---|---|---|---|---|---|"]
    for r in rows_:
        name = r["measured"] + (f"[{r['label']}]" if r["label"] is not None else "")
        if "count" in r:
            need = "not at the present estimates" if math.isinf(r["n_needed"]) else \
                f"{r['n_needed']} ({r['factor']:.1f}x), to {r['direction']}"
            value = f"{r['value']} in [{r['count'][0]}, {r['count'][1]}]"
        else:
            need = "never (on the threshold)" if math.isinf(r["n_needed"]) else \
                f"{r['n_needed']} ({r['factor']:.1f}x)"
            value = f"{r['value']:.4g} +/- {r['se']:.3g}"
        lines.append(f"| {r['id']} | `{name}` | {value} | {r['op']} {r['threshold']} "
                     f"| {r['n']} {r['unit']} | {need} |")
    return "\n".join(lines) + "\n"
