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

import json
import math
import numbers
from collections.abc import Mapping

from .io import write_text

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


def _fmt(x) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def fmt_test(r: dict) -> str:
    """A test's reading for the table: the last two parts of its path, ``value +/- se``
    (``(exact)``), for a mapping the entry that decided it, and the outcome when not holds."""
    d = r["decided_by"]
    name = ".".join(r["measured"].split(".")[-2:]) + (f"[{d['label']}]" if d["label"] is not None else "")
    if d["se"] is not None:
        val = f"{_fmt(d['value'])} +/- {_fmt(d['se'])}"
    else:
        val = _fmt(d["value"]) + (" (exact)" if r.get("exact") else "")
    tail = "" if r["outcome"] == "holds" else f" [{r['outcome']}]"
    return f"`{name}` = {val}{tail}"


def _table(verdicts: list[dict], mark_after_run: bool = True) -> list[str]:
    lines = ["| id | status | statement | measured (value +/- s.e.) | threshold |", "|---|---|---|---|---|"]
    for v in verdicts:
        measured = "; ".join(fmt_test(r) for r in v["tests"])
        thr = "; ".join(f"`{t}`" for t in v["threshold"])
        if v["preconditions"]:
            thr += " (conclusive only if " + "; ".join(
                f"`{p['test']}`" + ("" if p["holds"] else f" [{p['outcome']}: {fmt_test(p)}]")
                for p in v["preconditions"]) + ")"
        vid = v["id"] + (" (added after a run)" if mark_after_run and "added_after_run" in v else "")
        lines.append(f"| {vid} | **{v['status']}** | {v['statement']} | {measured} | {thr} |")
    return lines


def to_markdown(claim: str, title: str, verdicts: list[dict], extra: str = "",
                checks: list[dict] | None = None) -> str:
    """A verdict table in Markdown: the decision rule, the criteria added after a run listed under
    it, then the consistency checks (a separate table, not verdicts), then optional extra sections."""
    lines = [f"# {claim.upper()} verdict: {title}", ""]
    z = next((v["z"] for v in verdicts + (checks or [])), None)
    if z is not None:
        lines += [f"Decision rule: a test holds if it holds at the unfavourable end of value +/- {_fmt(z)} "
                  "standard errors (from independent task blocks or seeds; `exact`: no sampling noise), "
                  "fails if it fails at the favourable end, else it is undecided; a criterion is PASS when "
                  "every test holds, FAIL when one fails, otherwise INCONCLUSIVE (also when a "
                  "precondition does not hold).", ""]
    lines += _table(verdicts)
    counts = {s: sum(v["status"] == s for v in verdicts) for s in STATUSES}
    lines += ["", "Summary: " + ", ".join(f"{n} {s}" for s, n in counts.items()), ""]
    undecided = [v for v in verdicts if v["status"] == "INCONCLUSIVE"]
    if undecided:
        lines += ["Why INCONCLUSIVE:", ""] + [f"* **{v['id']}**: {v['why']}" for v in undecided] + [""]
    late = [v for v in verdicts if "added_after_run" in v]
    if late:
        lines += ["Criteria added or changed after a run they judge (not predeclared):", ""] + [
            f"* **{v['id']}**: {v['added_after_run']}" for v in late] + [""]
    notes = [v for v in verdicts if "note" in v]
    if notes:
        lines += ["Notes:", ""] + [f"* **{v['id']}**: {v['note']}" for v in notes] + [""]
    if checks:
        lines += ["## Consistency checks (not verdicts on the paper)", "",
                  "These hold by construction, cannot fail, or test the protocol rather than a claim of "
                  "the paper; they are not counted in the summary above.", ""] + _table(checks)
        lines += [""] + [f"* **{c['id']}**: {c['reason']}" for c in checks if "reason" in c] + [""]
        late_c = [c for c in checks if "added_after_run" in c]
        if late_c:
            lines += [f"* **{c['id']}** (added after a run): {c['added_after_run']}" for c in late_c] + [""]
    return "\n".join(lines) + ("\n" + extra if extra else "")


def _json_default(x):
    if isinstance(x, numbers.Integral):
        return int(x)
    return float(x)


def write(claim: str, title: str, criteria: list[dict], metrics, json_path, md_path,
          extra_md: str = "", checks: list[dict] | None = None,
          checks_path=None, z: float = DEFAULT_Z) -> list[dict]:
    """Evaluate ``criteria`` on ``metrics``; write ``verdict.json`` (a list) and ``verdict.md``
    (each atomically: a temporary file in the same directory, then a rename).

    ``checks`` (consistency checks) are evaluated by the same rule, printed in their own table in
    the Markdown and, when ``checks_path`` is given, written there as a JSON list; never in
    ``verdict.json``.  Returns the verdicts (criteria only).
    """
    verdicts = [evaluate(c, metrics, z) for c in criteria]
    checked = [evaluate(c, metrics, z) for c in (checks or [])]
    write_text(json_path, json.dumps(verdicts, indent=2, default=_json_default) + "\n")
    if checks_path is not None:
        write_text(checks_path, json.dumps(checked, indent=2, default=_json_default) + "\n")
    write_text(md_path, to_markdown(claim, title, verdicts, extra_md, checked))
    return verdicts


def _reading(v: dict) -> str:
    """A criterion's main reading in one cell: every test as ``value +/- se`` (plain text)."""
    return "; ".join(fmt_test(r).replace("`", "") for r in v["tests"])


def overview_rows(claims: Mapping) -> list[dict]:
    """One row per criterion of every claim (``claims``: ``{claim: [verdicts]}``): claim, id,
    statement, reading, threshold, status."""
    return [dict(claim=claim.upper(), id=v["id"], statement=v["statement"], reading=_reading(v),
                 threshold="; ".join(v["threshold"]), status=v["status"])
            for claim, vs in claims.items() for v in vs]


def overview_markdown(claims: Mapping) -> str:
    """The table of every verdict (the README's and the report's first page), with the tallies."""
    lines = ["| claim | id | status | measured (value +/- s.e.) | threshold |", "|---|---|---|---|---|"]
    for r in overview_rows(claims):
        lines.append(f"| {r['claim']} | {r['id']} | **{r['status']}** | {r['reading']} | `{r['threshold']}` |")
    tally = "; ".join(f"{c.upper()}: " + ", ".join(f"{sum(v['status'] == s for v in vs)} {s}" for s in STATUSES)
                      for c, vs in claims.items())
    return "\n".join(lines) + "\n\nTallies (claims of the paper only; consistency checks apart): " + tally + "\n"


def overview_rst(claims: Mapping) -> str:
    """The same table as reStructuredText (a list-table), for the report's front page."""
    def cell(text):
        return text.replace("*", "\\*").replace("`", "").replace("|", "\\|")
    out = [".. list-table:: Every verdict (claims of the paper; consistency checks in each claim's verdict page)",
           "   :header-rows: 1", "", "   * - claim", "     - id", "     - status",
           "     - measured (value +/- s.e.)", "     - threshold"]
    for r in overview_rows(claims):
        out += [f"   * - {r['claim']}", f"     - {r['id']}", f"     - {r['status']}",
                f"     - {cell(r['reading'])}", f"     - {cell(r['threshold'])}"]
    return "\n".join(out) + "\n"


def markdown_to_html(md: str) -> str:
    """Minimal Markdown (headers, pipe tables, bullets, paragraphs, `code`, **bold**) to HTML."""
    import html
    import re

    def inline(text):
        text = html.escape(text)
        text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
        return re.sub(r"`(.+?)`", r"<code>\1</code>", text)

    out, table = [], []

    def flush():
        if table:
            rows = [r for r in table if not re.fullmatch(r"\|?[-| :]+\|?", r)]
            cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
            head = "".join(f"<th>{inline(c)}</th>" for c in cells[0])
            body = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in cells[1:])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            table.clear()

    for line in md.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{inline(line.lstrip('#').strip())}</h{level}>")
        elif line.startswith("* "):
            out.append(f"<ul><li>{inline(line[2:])}</li></ul>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
    flush()
    style = ("body{font-family:sans-serif;font-size:14px} table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}")
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{style}</style></head><body>" \
           + "\n".join(out) + "</body></html>\n"


def write_html(path, claim: str, title: str, verdicts: list[dict], extra_md: str = "",
               checks: list[dict] | None = None) -> None:
    """The verdict table (and extra Markdown sections) as a standalone HTML page for the report;
    ``checks`` are already evaluated consistency checks."""
    write_text(path, markdown_to_html(to_markdown(claim, title, verdicts, extra_md, checks)))


OUTPUT_KEYS = ("json", "md", "html", "consistency")


def output_paths(paths) -> dict:
    """``{"json", "md", "html"[, "consistency"]}`` from a mapping of those keys (the form to use) or
    from any object with those attributes (an older call form, kept for callers not yet changed)."""
    if isinstance(paths, Mapping):
        out = {k: paths[k] for k in OUTPUT_KEYS if paths.get(k) is not None}
    else:
        out = {k: getattr(paths, k) for k in OUTPUT_KEYS if getattr(paths, k, None) is not None}
    missing = [k for k in ("json", "md", "html") if k not in out]
    if missing:
        raise ValueError(f"verdict output paths missing: {', '.join(missing)}")
    return out


def publish(claim: str, title: str, criteria: list[dict], metrics, paths, extra_md: str = "",
            log=None, checks: list[dict] | None = None, z: float = DEFAULT_Z) -> list[dict]:
    """A verdict rule's whole job: the files ``paths["json"]``, ``["md"]``, ``["html"]`` written
    (atomically), one log line per criterion.  ``checks``: the claim's consistency checks (config
    ``consistency_checks``), written to ``paths["consistency"]`` when given and shown in their own
    table.  ``paths`` is a mapping of plain paths; an object with attributes ``json``, ``md``,
    ``html`` (``consistency``) is read the same way.  ``z``: the decision rule's width in standard
    errors (config ``decision.z``)."""
    out = output_paths(paths)
    verdicts = write(claim, title, criteria, metrics, out["json"], out["md"], extra_md,
                     checks, out.get("consistency"), z)
    checked = [evaluate(c, metrics, z) for c in (checks or [])]
    write_html(out["html"], claim, title, verdicts, extra_md, checked)
    for v in verdicts + checked:
        if log:
            log(f"{v['id']}: {v['status']}" + (" (consistency check)" if v in checked else ""))
    return verdicts
