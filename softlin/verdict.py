"""Predeclared criteria -> verdicts (docs/maths.md#conventions): PASS / FAIL / INCONCLUSIVE per criterion.

A criterion (written in the config before a run) is a mapping::

    id: C3a
    statement: trajectory gap shrinks like L^-1/2 ...
    all:                       # every test must hold for PASS
      - {measured: fits.isotropic_gauss.slope_D_inf_max, op: between, value: [-0.65, -0.35]}
    inconclusive_unless:       # optional preconditions; unless each one holds, INCONCLUSIVE
      - {measured: fits.isotropic_gauss.D_inf_max_rel_to_theta, op: "<", value: 0.05}
    added_after_run: "why"     # only for a criterion added or changed after a run it judges

``measured`` is a dotted path into the claim's metrics (nested dicts; list items by index).  The
value there is a number, or a mapping ``{label: number}`` (a test over it is a test of every
entry: "at every probe").  Beside it, under the same name with ``_se`` appended, the metrics
carry its **standard error from independent replication** (task blocks, seeds), of the same
shape, or the string ``"exact"`` for a deterministic quantity (:func:`lookup_se`).

Decision rule (:func:`decide`, ``z`` from the config's ``decision.z``, 2 by default): a test
*holds* if it holds at the unfavourable end of ``value +/- z se``, *fails* if it fails at the
favourable end, and is *undecided* otherwise (a NaN value or standard error is undecided, with
the reason).  ``==`` on a value with a standard error never holds (only an exact value can).  A
test over a mapping holds if every entry holds and fails if one entry fails.

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

OPS = ("<", "<=", ">", ">=", "==", "between", "outside")
STATUSES = ("PASS", "FAIL", "INCONCLUSIVE")
OUTCOMES = ("holds", "fails", "undecided")
EXACT = "exact"
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


def lookup_se(metrics, path: str):
    """The standard error beside ``path``: the value at ``path + "_se"`` (a number, a mapping like
    the value's, or ``"exact"``); for a list item ``a.b.0``, item 0 of ``a.b_se``.  KeyError naming
    the path expected if absent."""
    parts = path.split(".")
    k = len(parts) - 1
    while k > 0 and parts[k].isdigit():
        k -= 1
    se_path = ".".join(parts[:k] + [parts[k] + "_se"] + parts[k + 1:])
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


def _holds(op: str, x: float, v) -> bool:
    if op == "<":
        return x < v
    if op == "<=":
        return x <= v
    if op == ">":
        return x > v
    if op == ">=":
        return x >= v
    if op == "==":
        return x == v
    if op == "between":
        return v[0] <= x <= v[1]
    if op == "outside":
        return not v[0] <= x <= v[1]
    raise ValueError(f"unknown operator {op!r} (one of {', '.join(OPS)})")


def decide(op: str, threshold, x: float, se: float | None, z: float) -> tuple[str, str]:
    """One test on one number: ``(outcome, reason)``, outcome holds / fails / undecided.

    ``se`` None means exact (the interval is the point).  With ``lo, hi = x -/+ z se``: the test
    holds if it holds at every point of ``[lo, hi]`` and fails if it fails at every point (the
    tests are monotone in ``x``, so the two ends decide; ``between``/``outside`` are checked at both
    ends and, for the interval straddling the band, by overlap)."""
    if op not in OPS:
        raise ValueError(f"unknown operator {op!r} (one of {', '.join(OPS)})")
    if math.isnan(x) or (se is not None and math.isnan(se)):
        return "undecided", "NaN value" if math.isnan(x) else "NaN standard error"
    if se is not None and se < 0:
        raise ValueError(f"negative standard error {se!r}")
    w = 0.0 if se is None else z * se
    if op == "==" and w > 0:  # an interval of positive width never equals a point
        return ("fails", f"|x - {threshold}| > z se") if abs(x - threshold) > w else \
            ("undecided", "equality cannot be established from a value with an error")
    lo, hi = x - w, x + w
    if op in ("between", "outside"):
        a, b = threshold
        inside_all = a <= lo and hi <= b          # the whole interval inside the band
        outside_all = hi < a or lo > b            # the whole interval outside it
        if op == "between":
            return ("holds", "inside") if inside_all else ("fails", "outside") if outside_all \
                else ("undecided", "straddles the band's edge")
        return ("holds", "outside") if outside_all else ("fails", "inside") if inside_all \
            else ("undecided", "straddles the band's edge")
    at_lo, at_hi = _holds(op, lo, threshold), _holds(op, hi, threshold)
    if at_lo and at_hi:
        return "holds", "at both ends of the interval"
    if not at_lo and not at_hi:
        return "fails", "at both ends of the interval"
    return "undecided", "the interval straddles the threshold"


def _entries(x, se, path: str):
    """``[(label, value, se or None)]`` of a measured value: one unlabelled entry, or one per key."""
    if isinstance(x, Mapping):
        if not x:
            raise ValueError(f"metric {path!r} is an empty mapping: nothing to test")
        if se is not None and not isinstance(se, Mapping):
            raise TypeError(f"metric {path!r} is a mapping but its standard error is not")
        return [(str(k), _number(v, f"{path}[{k}]"),
                 None if se is None else _se_number(se.get(k), f"{path}_se[{k}]"))
                for k, v in x.items()]
    return [(None, _number(x, path), None if se is None else _se_number(se, path + "_se"))]


def _se_number(se, what: str):
    if isinstance(se, str) and se == EXACT:
        return None
    if se is None:
        raise KeyError(f"{what} is missing")
    return _number(se, what)


def check(test: dict, metrics, z: float = DEFAULT_Z) -> dict:
    """One test of a criterion on the metrics: the value(s), standard error(s), the outcome and the
    entry that decided it."""
    path, op, thr = test["measured"], test["op"], test["value"]
    x = lookup(metrics, path)
    if z > 0:
        se = lookup_se(metrics, path)
        se = None if (isinstance(se, str) and se == EXACT) else se
    else:
        se = None  # the point-estimate rule reads no standard error
    rows = []
    for label, xv, sv in _entries(x, se, path):
        outcome, reason = decide(op, thr, xv, sv, z)
        rows.append(dict(label=label, value=xv, se=sv, outcome=outcome, reason=reason))
    outcomes = [r["outcome"] for r in rows]
    outcome = "fails" if "fails" in outcomes else "undecided" if "undecided" in outcomes else "holds"
    if outcome == "holds":  # the entry closest to its threshold
        decider = min(rows, key=lambda r: _margin(op, thr, r["value"], r["se"]))
    else:
        decider = next(r for r in rows if r["outcome"] == outcome)
    exact = all(r["se"] is None for r in rows) and z > 0 and se is None
    out = dict(measured=path, op=op, threshold=thr, z=z, outcome=outcome,
               value=x if isinstance(x, Mapping) else rows[0]["value"],
               decided_by=dict(label=decider["label"], value=decider["value"], se=decider["se"],
                               reason=decider["reason"]))
    if exact:
        out["exact"] = True
    elif z > 0:
        out["se"] = se if isinstance(se, Mapping) else rows[0]["se"]
    return out


def _margin(op, thr, x, se) -> float:
    """Distance in standard errors (or absolute, if exact) from ``x`` to the nearest threshold."""
    edges = thr if op in ("between", "outside") else [thr]
    d = min(abs(x - e) for e in edges)
    return d / se if se else d


def replication_to_decide(value: float, se: float, n: float, threshold, z: float) -> float:
    """Replicates at which ``value +/- z se`` would clear the nearest edge of ``threshold`` (a number
    or ``[low, high]``), if the value stays and ``se`` falls like ``1 / sqrt(n)``:
    ``n (z se / |value - edge|)^2`` (inf on an edge).  The one formula behind every verdict's
    "replication it would need"."""
    edges = threshold if isinstance(threshold, (list, tuple)) else [threshold]
    margin = min(abs(value - e) for e in edges)
    return math.inf if margin == 0 else float(n * (z * se / margin) ** 2)


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


def evaluate(criterion: dict, metrics, z: float = DEFAULT_Z) -> dict:
    """Evaluate one criterion: ``{id, statement, status, tests, preconditions, measured, threshold,
    z}`` (plus ``why`` when INCONCLUSIVE, ``note``, ``added_after_run``, ``reason`` when the
    criterion has them).  ``tests``/``preconditions``: :func:`check` of each test."""
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
    out.update({k: criterion[k] for k in ("note", "added_after_run", "reason") if k in criterion})
    return out
