"""Predeclared criteria -> verdicts (docs/maths.md#conventions): PASS / FAIL / INCONCLUSIVE per criterion.

A criterion (written in the config before a run) is a mapping::

    id: C3a
    statement: trajectory gap shrinks like L^-1/2 ...
    all:                       # every test must hold for PASS
      - {measured: isotropic_gauss.slope_D_inf_max, op: between, value: [-0.65, -0.35]}
    inconclusive_unless:       # optional preconditions; if one fails the verdict is INCONCLUSIVE
      - {measured: isotropic_gauss.D_inf_max_rel_to_theta, op: "<", value: 0.05}
    added_after_run: "why"     # only for a criterion added or changed after a run it judges

``measured`` is a dotted path into the claim's metrics (nested dicts; list items by index).

Status rule (:func:`evaluate`), in this order:

1. a precondition (``inconclusive_unless``) does not hold -> **INCONCLUSIVE**, whatever the main
   tests say (a PASS whose preconditions fail is not a PASS);
2. every main test (``all``) holds -> **PASS**;
3. otherwise -> **FAIL**.

A NaN measurement never satisfies a test (a NaN precondition gives INCONCLUSIVE, a NaN main
test FAIL).  ``added_after_run`` is copied into the verdict, marked in the table and listed under
it: git cannot show when a criterion was written, so a criterion written or changed after
seeing a run's data says so.

*Consistency checks* (the config's ``consistency_checks``) use the same schema but are not
verdicts on the paper: they verify a code path or hold by construction (each carries a
``reason``).  :func:`publish` evaluates them with the same rule and prints them in a separate,
labelled table, never in the verdict list or its summary.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from .io import write_text

OPS = {
    "<": lambda x, v: x < v,
    "<=": lambda x, v: x <= v,
    ">": lambda x, v: x > v,
    ">=": lambda x, v: x >= v,
    "==": lambda x, v: x == v,
    "between": lambda x, v: v[0] <= x <= v[1],
    "outside": lambda x, v: not v[0] <= x <= v[1],
}
STATUSES = ("PASS", "FAIL", "INCONCLUSIVE")


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


def _check(test: dict, metrics) -> tuple[bool, object]:
    x = lookup(metrics, test["measured"])
    if isinstance(x, float) and math.isnan(x):
        return False, x
    return bool(OPS[test["op"]](x, test["value"])), x


def _describe(test: dict) -> str:
    v = test["value"]
    if test["op"] in ("between", "outside"):
        return f"{test['measured']} {test['op']} [{v[0]}, {v[1]}]"
    return f"{test['measured']} {test['op']} {v}"


def status_of(main_ok: list[bool], pre_ok: list[bool]) -> str:
    """The status rule: a failed precondition -> INCONCLUSIVE; else all main tests -> PASS; else FAIL."""
    if not all(pre_ok):
        return "INCONCLUSIVE"
    return "PASS" if all(main_ok) else "FAIL"


def evaluate(criterion: dict, metrics) -> dict:
    """Evaluate one criterion: ``{id, statement, measured, threshold, preconditions, status}``
    (plus ``note``, ``added_after_run``, ``reason`` when the criterion has them)."""
    tests = criterion["all"]
    if not tests:
        raise ValueError(f"criterion {criterion.get('id')!r} has no test in `all`")
    results = [_check(t, metrics) for t in tests]
    pre = [_check(t, metrics) for t in criterion.get("inconclusive_unless", [])]
    status = status_of([ok for ok, _ in results], [ok for ok, _ in pre])
    return {
        "id": criterion["id"],
        "statement": criterion["statement"],
        "measured": {t["measured"]: x for t, (_, x) in zip(tests, results)},
        "threshold": [_describe(t) for t in tests],
        "preconditions": [{"test": _describe(t), "measured": x, "holds": ok}
                          for t, (ok, x) in zip(criterion.get("inconclusive_unless", []), pre)],
        "status": status,
        **{k: criterion[k] for k in ("note", "added_after_run", "reason") if k in criterion},
    }


def _fmt(x) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, (int,)):
        return str(x)
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _table(verdicts: list[dict], mark_after_run: bool = True) -> list[str]:
    lines = ["| id | status | statement | measured | threshold |", "|---|---|---|---|---|"]
    for v in verdicts:
        measured = "; ".join(f"`{k.split('.')[-1]}` = {_fmt(x)}" for k, x in v["measured"].items())
        thr = "; ".join(f"`{t}`" for t in v["threshold"])
        if v["preconditions"]:
            thr += " (conclusive only if " + "; ".join(
                f"`{p['test']}`" + ("" if p["holds"] else f" [does not hold: {_fmt(p['measured'])}]")
                for p in v["preconditions"]) + ")"
        vid = v["id"] + (" (added after a run)" if mark_after_run and "added_after_run" in v else "")
        lines.append(f"| {vid} | **{v['status']}** | {v['statement']} | {measured} | {thr} |")
    return lines


def to_markdown(claim: str, title: str, verdicts: list[dict], extra: str = "",
                checks: list[dict] | None = None) -> str:
    """A verdict table in Markdown: the criteria added after a run listed under it, then the
    consistency checks (a separate table, not verdicts), then optional extra sections."""
    lines = [f"# {claim.upper()} verdict: {title}", ""] + _table(verdicts)
    counts = {s: sum(v["status"] == s for v in verdicts) for s in STATUSES}
    lines += ["", "Summary: " + ", ".join(f"{n} {s}" for s, n in counts.items()), ""]
    late = [v for v in verdicts if "added_after_run" in v]
    if late:
        lines += ["Criteria added or changed after a run they judge (not predeclared):", ""] + [
            f"* **{v['id']}**: {v['added_after_run']}" for v in late] + [""]
    notes = [v for v in verdicts if "note" in v]
    if notes:
        lines += ["Notes:", ""] + [f"* **{v['id']}**: {v['note']}" for v in notes] + [""]
    if checks:
        lines += ["## Consistency checks (not verdicts on the paper)", "",
                  "These hold by construction or cannot fail; they verify the code path, not the "
                  "paper's claim, and are not counted in the summary above.", ""] + _table(checks)
        lines += [""] + [f"* **{c['id']}**: {c['reason']}" for c in checks if "reason" in c] + [""]
        late_c = [c for c in checks if "added_after_run" in c]
        if late_c:
            lines += [f"* **{c['id']}** (added after a run): {c['added_after_run']}" for c in late_c] + [""]
    return "\n".join(lines) + ("\n" + extra if extra else "")


def write(claim: str, title: str, criteria: list[dict], metrics, json_path, md_path,
          extra_md: str = "", checks: list[dict] | None = None,
          checks_path=None) -> list[dict]:
    """Evaluate ``criteria`` on ``metrics``; write ``verdict.json`` (a list) and ``verdict.md``
(each atomically: a temporary file in the same directory, then a rename).

    ``checks`` (consistency checks) are evaluated by the same rule, printed in their own table in
    the Markdown and, when ``checks_path`` is given, written there as a JSON list; never in
    ``verdict.json``.  Returns the verdicts (criteria only).
    """
    verdicts = [evaluate(c, metrics) for c in criteria]
    checked = [evaluate(c, metrics) for c in (checks or [])]
    write_text(json_path, json.dumps(verdicts, indent=2, default=float) + "\n")
    if checks_path is not None:
        write_text(checks_path, json.dumps(checked, indent=2, default=float) + "\n")
    write_text(md_path, to_markdown(claim, title, verdicts, extra_md, checked))
    return verdicts


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
            log=None, checks: list[dict] | None = None) -> list[dict]:
    """A verdict rule's whole job: the files ``paths["json"]``, ``["md"]``, ``["html"]`` written
    (atomically), one log line per criterion.  ``checks``: the claim's consistency checks (config
    ``consistency_checks``), written to ``paths["consistency"]`` when given and shown in their own
    table.  ``paths`` is a mapping of plain paths; an object with attributes ``json``, ``md``,
    ``html`` (``consistency``) is read the same way."""
    out = output_paths(paths)
    verdicts = write(claim, title, criteria, metrics, out["json"], out["md"], extra_md,
                     checks, out.get("consistency"))
    checked = [evaluate(c, metrics) for c in (checks or [])]
    write_html(out["html"], claim, title, verdicts, extra_md, checked)
    for v in verdicts + checked:
        if log:
            log(f"{v['id']}: {v['status']}" + (" (consistency check)" if v in checked else ""))
    return verdicts
