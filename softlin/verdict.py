"""Predeclared criteria -> verdicts (docs/maths.md#conventions): PASS / FAIL / INCONCLUSIVE per criterion.

A criterion (written in the config before a run) is a mapping::

    id: C3a
    statement: trajectory gap shrinks like L^-1/2 ...
    all:                       # every test must hold for PASS
      - {measured: fits.isotropic_gauss.slope_D_inf_max, op: between, value: [-0.65, -0.35]}
    inconclusive_unless:       # optional preconditions; unless each one holds, INCONCLUSIVE
      - {measured: fits.isotropic_gauss.D_inf_max_rel_to_theta, op: "<", value: 0.05}
    added_after_run: "why"     # only for a criterion added or changed after a run it judges
    changed_after_run:         # every change made after seeing data that can move its status
      - {what: "c1.n_blocks 8 -> 24", why: "..."}
    role: control              # a negative control (default: claim), tallied apart

``measured`` is a dotted path into the claim's metrics (nested dicts; list items by index).  The
value there is a number, or a mapping ``{label: number}`` (a test over it is a test of every
entry: "at every probe").  Beside it, under the same name with a suffix, the metrics carry:

* ``_se``: its **standard error from independent replication** (task blocks, seeds), of the same
  shape, or the string ``"exact"`` for a deterministic quantity (:func:`lookup_se`);
* ``_df``: the degrees of freedom of that error (``n - 1`` for ``n`` replicates; a number, or a
  mapping like the value; ``"inf"`` for an interval calibrated on the normal law), required for
  every error that is not exact: a KeyError names the path;
* ``_rises`` and ``_rises_se`` (instead of ``_se``): the value is a count of rises ("at most k
  increases"), read as the interval from the rises' own intervals
  (:func:`softlin.intervals.count_bounds`): for a PASS a rise counts unless its interval lies
  wholly below 0, for a FAIL only where it lies wholly above (so noisier data pass less easily);
* ``_se_lower_bound`` (optional; a bool or a mapping of bools): the error is known to be a lower
  bound (heavy tails, docs/c1c2_uncertainty.md); a test that would hold on such an entry is
  *undecided* ("s.e. is a lower bound"); it may still fail.

Decision rule (:func:`decide_entry`, ``z`` from the config's ``decision.z``, 2 by default): ``z``
names the two-sided level ``P(|Z| < z)`` (95.45 % at 2); an entry's multiplier ``t`` is the
Student quantile at that level with its ``df`` (:func:`softlin.student.multiplier`; 0 when exact).
A test *holds* if it holds at the unfavourable end of ``value +/- t se``, *fails* if it fails at
the favourable end, and is *undecided* otherwise (a NaN value or standard error is undecided, with
the reason).  ``==`` on a value with a standard error never holds (only an exact value can).  A
test over a mapping holds if every entry holds and fails if one entry fails.  Every test records
its ``df``, ``multiplier`` and its p-values ``p_hold`` / ``p_fail`` (:mod:`softlin.intervals`);
each criterion the p-value of its raw status, from which :mod:`softlin.family` gives the
family-wide status (Holm over every criterion of C1-C5).

Status rule (:func:`status_of`), in this order:

1. a precondition (``inconclusive_unless``) that does not hold (fails or is undecided) ->
   **INCONCLUSIVE** (a PASS whose preconditions fail is not a PASS);
2. a main test (``all``) fails -> **FAIL**;
3. every main test holds -> **PASS**;
4. otherwise (a main test undecided) -> **INCONCLUSIVE**.

``z = 0`` is the point-estimate rule (every finite test decides; no standard error is read):
the seed log's own rule, kept for the consistency check of our numbers against it.
``added_after_run`` is copied into the verdict, marked in the table and listed under it: git
cannot show when a criterion was written, so a criterion written or changed after seeing a run's
data says so.

*Consistency checks* (the config's ``consistency_checks``) use the same schema but are not
verdicts on the paper: they hold by construction, cannot fail, or test the protocol rather than a
claim (each carries a ``reason``).  :func:`publish` evaluates them with the same rule and prints
them in a separate, labelled table, never in the verdict list or its summary.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

from . import family, intervals, student
from .intervals import OPS, decide  # noqa: F401  (decide: one home, re-exported)

STATUSES = ("PASS", "FAIL", "INCONCLUSIVE")
OUTCOMES = ("holds", "fails", "undecided")
EXACT = "exact"
INF_DF = "inf"   # a ``_df`` of a normal-law interval (e.g. a binomial's Agresti-Coull): t = z
DEFAULT_Z = 2.0


def lookup(metrics, path: str):
    """Value at a dotted ``path`` in nested dicts/lists; KeyError naming the path if absent."""
    node = metrics
    for part in path.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(f"metric {path!r} not found (missing {part!r})")
    return node


def sibling_path(path: str, suffix: str) -> str:
    """The path of ``path``'s sibling ``<name><suffix>`` (``_se``, ``_df``, ...); for a list item
    ``a.b.0``, item 0 of ``a.b<suffix>``."""
    parts = path.split(".")
    k = len(parts) - 1
    while k > 0 and parts[k].isdigit():
        k -= 1
    return ".".join(parts[:k] + [parts[k] + suffix] + parts[k + 1:])


def lookup_sibling(metrics, path: str, suffix: str, default=KeyError):
    """The value at :func:`sibling_path`; ``default`` if absent (KeyError naming both paths when no
    default is given)."""
    sp = sibling_path(path, suffix)
    try:
        return lookup(metrics, sp)
    except (KeyError, IndexError, ValueError):
        if default is KeyError:
            raise KeyError(f"metric {path!r} needs {sp!r} beside it") from None
        return default


def lookup_se(metrics, path: str):
    """The standard error beside ``path``: the value at ``path + "_se"`` (a number, a mapping like
    the value's, or ``"exact"``); for a list item ``a.b.0``, item 0 of ``a.b_se``.  KeyError naming
    the path expected if absent."""
    se_path = sibling_path(path, "_se")
    try:
        return lookup(metrics, se_path)
    except (KeyError, IndexError, ValueError):
        raise KeyError(f"metric {path!r} has no standard error: the metrics must carry {se_path!r} "
                       f"(a standard error from independent replication, or \"exact\")") from None


def _number(x, what: str) -> float:
    """``x`` as a float; TypeError for what cannot be compared with a threshold (bool, str, None)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{what} = {x!r} ({type(x).__name__}) cannot be compared with a threshold: "
                        f"a criterion reads numbers")
    return float(x)


def _at(obj, label, what: str):
    """Entry ``label`` of a mapping, the object itself for a scalar (one value for every entry)."""
    if label is None or not isinstance(obj, Mapping):
        return obj
    if label not in obj:
        raise KeyError(f"{what} has no entry {label!r}")
    return obj[label]


def _entries(x, path: str):
    """``[(label, value)]`` of a measured value: one unlabelled entry, or one per key."""
    if isinstance(x, Mapping):
        if not x:
            raise ValueError(f"metric {path!r} is an empty mapping: nothing to test")
        return [(str(k), _number(v, f"{path}[{k}]")) for k, v in x.items()]
    return [(None, _number(x, path))]


def _se_number(se, what: str):
    if isinstance(se, str) and se == EXACT:
        return None
    if se is None:
        raise KeyError(f"{what} is missing")
    return _number(se, what)


def _df_number(df, what: str) -> float:
    """Degrees of freedom as a float; ``"inf"`` (JSON has no infinity) is the normal law."""
    if df is None:
        raise KeyError(f"{what} is missing: a standard error needs its degrees of freedom")
    return math.inf if df == INF_DF else student.check_df(_number(df, what), what)


def _read(metrics, path: str, z: float):
    """Every entry of the value at ``path`` with what the rule reads beside it: ``se`` (None if
    exact), ``df``, ``lower_bound`` (``<name>_se_lower_bound``), ``rises`` (a count of rises:
    ``<name>_rises`` and ``<name>_rises_se``, read instead of ``<name>_se``)."""
    x = lookup(metrics, path)
    keys = {k: lookup_sibling(metrics, path, "_" + k, None) for k in ("rises", "rises_se", "se_lower_bound")}
    if z > 0 and keys["rises"] is None:
        se = lookup_se(metrics, path)
        se = None if (isinstance(se, str) and se == EXACT) else se
    else:
        se = None
    if isinstance(x, Mapping) and se is not None and not isinstance(se, Mapping):
        raise TypeError(f"metric {path!r} is a mapping but its standard error is not")
    need_df = z > 0 and (se is not None or keys["rises"] is not None)
    df = lookup_sibling(metrics, path, "_df") if need_df else None
    out = []
    for label, xv in _entries(x, path):
        def where(suffix, label=label):
            return sibling_path(path, suffix) + ("" if label is None else f"[{label}]")
        e = dict(label=label, value=xv, se=None, df=None, lower_bound=False, rises=None)
        if keys["rises"] is not None:
            e["rises"] = [float(r) for r in _at(keys["rises"], label, sibling_path(path, "_rises"))]
            e["rises_se"] = [float(r) for r in _at(keys["rises_se"], label, sibling_path(path, "_rises_se"))]
        elif se is not None:
            e["se"] = _se_number(_at(se, label, sibling_path(path, "_se")), where("_se"))
        noisy = [e["se"]] if e["se"] is not None else (e["rises"] or []) + (e.get("rises_se") or [])
        if need_df and noisy and not any(math.isnan(v) for v in noisy):  # a NaN error decides nothing
            e["df"] = _df_number(_at(df, label, sibling_path(path, "_df")), where("_df"))
        lb = keys["se_lower_bound"]
        e["lower_bound"] = bool(_at(lb, label, sibling_path(path, "_se_lower_bound"))) if lb is not None else False
        out.append(e)
    return x, se, df, out


def decide_entry(op: str, thr, e: dict, z: float) -> dict:
    """One entry (:func:`_read`) under the rule at ``z``: outcome, reason, multiplier, interval,
    ``p_hold`` / ``p_fail`` (:mod:`softlin.intervals`)."""
    if e["rises"] is not None:  # a count of rises: its interval from the rises' own intervals
        m = student.multiplier(z, e["df"]) if (z > 0 and e["df"] is not None) else 0.0
        lo, hi = intervals.count_bounds(e["rises"], e["rises_se"], m)
        outcome, reason = ("undecided", "NaN rise") if math.isnan(lo) else intervals.decide_bounds(op, thr, lo, hi)
        p_hold, p_fail = intervals.count_p(op, thr, e["rises"], e["rises_se"], e["df"] or math.inf)
        r = dict(lo=lo, hi=hi)
    elif e["se"] is None:  # exact (or the point-estimate rule)
        m = 0.0
        outcome, reason = intervals.decide(op, thr, e["value"], None, m)
        p_hold, p_fail = float(outcome != "holds"), float(outcome != "fails")
        r = {}
    else:  # a NaN error has no df: undecided whatever the multiplier
        m = student.multiplier(z, e["df"]) if e["df"] is not None else None
        outcome, reason = intervals.decide(op, thr, e["value"], e["se"], m)
        p_hold, p_fail = intervals.entry_p(op, thr, e["value"], e["se"], e["df"])
        r = {}
    if e["lower_bound"] and outcome == "holds":
        outcome, reason, p_hold = "undecided", "s.e. is a lower bound", 1.0
    return dict(label=e["label"], value=e["value"], se=e["se"], df=e["df"], multiplier=m, outcome=outcome,
                reason=reason, p_hold=p_hold, p_fail=p_fail, **r)


def check(test: dict, metrics, z: float = DEFAULT_Z) -> dict:
    """One test of a criterion on the metrics: the value(s), standard error(s), degrees of freedom,
    multiplier(s), the outcome, the entry that decided it, and the test's ``p_hold`` (largest over
    its entries), ``p_fail`` (smallest) and ``n_entries``."""
    path, op, thr = test["measured"], test["op"], test["value"]
    if op not in OPS:
        raise ValueError(f"unknown operator {op!r} (one of {', '.join(OPS)})")
    x, se, df, entries = _read(metrics, path, z)
    rows = [decide_entry(op, thr, e, z) for e in entries]
    outcomes = [r["outcome"] for r in rows]
    outcome = "fails" if "fails" in outcomes else "undecided" if "undecided" in outcomes else "holds"
    if outcome == "holds":  # the entry closest to its threshold
        decider = min(rows, key=lambda r: _margin(op, thr, r["value"], r["se"]))
    else:
        decider = next(r for r in rows if r["outcome"] == outcome)
    mapping = isinstance(x, Mapping)

    def shaped(key):
        return {r["label"]: r[key] for r in rows} if mapping else rows[0][key]
    out = dict(measured=path, op=op, threshold=thr, z=z, outcome=outcome,
               value=x if mapping else rows[0]["value"],
               decided_by={k: decider[k] for k in ("label", "value", "se", "df", "multiplier", "reason")
                           + (("lo", "hi") if "lo" in decider else ())},
               df=shaped("df"), multiplier=shaped("multiplier"),
               p_hold=max(r["p_hold"] for r in rows), p_fail=min(r["p_fail"] for r in rows), n_entries=len(rows))
    if any(r["lower_bound"] for r in entries):
        out["se_lower_bound"] = {r["label"]: r["lower_bound"] for r in entries} if mapping else entries[0]["lower_bound"]
    if entries[0]["rises"] is not None:
        out["count"] = {r["label"]: [r["lo"], r["hi"]] for r in rows} if mapping else [rows[0]["lo"], rows[0]["hi"]]
    elif all(r["se"] is None for r in rows) and z > 0:
        out["exact"] = True
    elif z > 0:
        out["se"] = se if mapping else rows[0]["se"]
    return out


def _margin(op, thr, x, se) -> float:
    """Distance in standard errors (or absolute, if exact) from ``x`` to the nearest threshold."""
    edges = thr if op in ("between", "outside") else [thr]
    d = min(abs(x - e) for e in edges)
    return d / se if se else d


def replication_to_decide(value: float, se: float, n: float, threshold, z: float, t_law: bool = False) -> float:
    """Replicates at which ``value +/- z se`` would clear the nearest edge of ``threshold`` (a number
    or ``[low, high]``), if the value stays and ``se`` falls like ``1 / sqrt(n)``:
    ``n (z se / |value - edge|)^2`` (inf on an edge).  With ``t_law`` the multiplier is the
    Student quantile at ``n' - 1`` degrees of freedom for ``n'`` replicates (the smallest integer
    ``n' >= 2`` that clears; the rule's own multiplier).  The one formula behind every verdict's
    "replication it would need"."""
    edges = threshold if isinstance(threshold, (list, tuple)) else [threshold]
    margin = min(abs(value - e) for e in edges)
    if margin == 0:
        return math.inf
    need = float(n * (z * se / margin) ** 2)
    if not t_law or z == 0:
        return need

    def clears(k: int) -> bool:
        return student.multiplier(z, k - 1) * se * math.sqrt(n / k) < margin
    lo = max(2, math.ceil(need))   # t >= z: never fewer than the normal law's
    hi = lo
    while not clears(hi):
        hi *= 2
        if hi > 1e12:
            return math.inf
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if clears(mid) else (mid + 1, hi)
    return float(lo)


def _describe(test: dict) -> str:
    v = test["value"]
    if test["op"] in ("between", "outside"):
        return f"{test['measured']} {test['op']} [{v[0]}, {v[1]}]"
    return f"{test['measured']} {test['op']} {v}"


def status_of(main: list[str], pre: list[str]) -> str:
    """The status rule on test outcomes (holds / fails / undecided): a precondition that does not
    hold -> INCONCLUSIVE; else a failed main test -> FAIL; every main test holds -> PASS; else
    INCONCLUSIVE."""
    if any(o != "holds" for o in pre):
        return "INCONCLUSIVE"
    if "fails" in main:
        return "FAIL"
    return "PASS" if all(o == "holds" for o in main) else "INCONCLUSIVE"


CARRIED = ("note", "added_after_run", "changed_after_run", "role", "reason")


def evaluate(criterion: dict, metrics, z: float = DEFAULT_Z) -> dict:
    """Evaluate one criterion: ``{id, statement, status, tests, preconditions, measured, threshold,
    z, p_pass, p_fail, p}`` (:func:`softlin.family.criterion_p`; plus ``why`` when INCONCLUSIVE, and
    the criterion's :data:`CARRIED` fields).  ``tests``/``preconditions``: :func:`check` of each test."""
    tests = criterion["all"]
    if not tests:
        raise ValueError(f"criterion {criterion.get('id')!r} has no test in `all`")
    if not (isinstance(z, numbers.Real) and math.isfinite(z) and z >= 0):
        raise ValueError(f"decision z = {z!r}: a finite number >= 0")
    main = [check(t, metrics, z) for t in tests]
    pre = [check(t, metrics, z) for t in criterion.get("inconclusive_unless", [])]
    status = status_of([r["outcome"] for r in main], [r["outcome"] for r in pre])
    out = {
        "id": criterion["id"],
        "statement": criterion["statement"],
        "status": status,
        "z": z,
        "tests": main,
        "preconditions": [dict(r, test=_describe(t), holds=r["outcome"] == "holds")
                          for t, r in zip(criterion.get("inconclusive_unless", []), pre)],
        "measured": {r["measured"]: r["value"] for r in main},
        "threshold": [_describe(t) for t in tests],
    }
    if status == "INCONCLUSIVE":
        bad = [p for p in out["preconditions"] if not p["holds"]]
        out["why"] = (f"precondition {bad[0]['test']} {bad[0]['outcome']}" if bad else
                      "; ".join(f"{r['measured']}: undecided ({r['decided_by']['reason']})"
                                for r in main if r["outcome"] == "undecided"))
    out.update(family.criterion_p(main, pre, status))
    out.update({k: criterion[k] for k in CARRIED if k in criterion})
    return out
