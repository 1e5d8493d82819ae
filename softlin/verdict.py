"""Predeclared criteria -> verdicts (SPEC section 7): PASS / FAIL / INCONCLUSIVE per criterion.

A criterion (written in the config before a run) is a mapping::

    id: C3a
    statement: trajectory gap shrinks like L^-1/2 ...
    all:                       # every test must hold for PASS
      - {measured: isotropic_gauss.slope_D_inf_max, op: between, value: [-0.65, -0.35]}
    inconclusive_unless:       # optional preconditions; if one fails the verdict is INCONCLUSIVE
      - {measured: isotropic_gauss.D_inf_max_rel_to_theta, op: "<", value: 0.05}

``measured`` is a dotted path into the claim's metrics (nested dicts; list items by index).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

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


def evaluate(criterion: dict, metrics) -> dict:
    """Evaluate one criterion: ``{id, statement, measured, threshold, status}``."""
    tests = criterion["all"]
    results = [_check(t, metrics) for t in tests]
    pre = [_check(t, metrics) for t in criterion.get("inconclusive_unless", [])]
    if all(ok for ok, _ in results):
        status = "PASS"
    elif pre and not all(ok for ok, _ in pre):
        status = "INCONCLUSIVE"
    else:
        status = "FAIL"
    return {
        "id": criterion["id"],
        "statement": criterion["statement"],
        "measured": {t["measured"]: x for t, (_, x) in zip(tests, results)},
        "threshold": [_describe(t) for t in tests],
        "preconditions": [{"test": _describe(t), "measured": x, "holds": ok}
                          for t, (ok, x) in zip(criterion.get("inconclusive_unless", []), pre)],
        "status": status,
        **({"note": criterion["note"]} if "note" in criterion else {}),
    }


def _fmt(x) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, (int,)):
        return str(x)
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def to_markdown(claim: str, title: str, verdicts: list[dict], extra: str = "") -> str:
    """A verdict table in Markdown, followed by optional extra sections."""
    lines = [f"# {claim.upper()} verdict: {title}", "",
             "| id | status | statement | measured | threshold |", "|---|---|---|---|---|"]
    for v in verdicts:
        measured = "; ".join(f"`{k.split('.')[-1]}` = {_fmt(x)}" for k, x in v["measured"].items())
        thr = "; ".join(f"`{t}`" for t in v["threshold"])
        if v["preconditions"]:
            thr += " (conclusive only if " + "; ".join(
                f"`{p['test']}`" for p in v["preconditions"]) + ")"
        lines.append(f"| {v['id']} | **{v['status']}** | {v['statement']} | {measured} | {thr} |")
    counts = {s: sum(v["status"] == s for v in verdicts) for s in STATUSES}
    lines += ["", "Summary: " + ", ".join(f"{n} {s}" for s, n in counts.items()), ""]
    notes = [v for v in verdicts if "note" in v]
    if notes:
        lines += ["Notes:", ""] + [f"* **{v['id']}**: {v['note']}" for v in notes] + [""]
    return "\n".join(lines) + ("\n" + extra if extra else "")


def write(claim: str, title: str, criteria: list[dict], metrics, json_path, md_path,
          extra_md: str = "") -> list[dict]:
    """Evaluate ``criteria`` on ``metrics``; write ``verdict.json`` (a list) and ``verdict.md``."""
    verdicts = [evaluate(c, metrics) for c in criteria]
    Path(json_path).write_text(json.dumps(verdicts, indent=2, default=float) + "\n")
    Path(md_path).write_text(to_markdown(claim, title, verdicts, extra_md))
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


def write_html(path, claim: str, title: str, verdicts: list[dict], extra_md: str = "") -> None:
    """The verdict table (and extra Markdown sections) as a standalone HTML page for the report."""
    Path(path).write_text(markdown_to_html(to_markdown(claim, title, verdicts, extra_md)))


def publish(claim: str, title: str, criteria: list[dict], metrics, outputs, extra_md: str = "",
            log=None) -> list[dict]:
    """A verdict rule's whole job: ``outputs.json`` / ``.md`` / ``.html`` written, one log line per criterion."""
    verdicts = write(claim, title, criteria, metrics, outputs.json, outputs.md, extra_md)
    write_html(outputs.html, claim, title, verdicts, extra_md)
    for v in verdicts:
        if log:
            log(f"{v['id']}: {v['status']}")
    return verdicts
