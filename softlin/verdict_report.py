"""Verdicts as the reader meets them: each claim's ``verdict.json`` / ``verdict.md`` / ``verdict.html``
(the verdict table, the consistency checks in their own labelled table) and the overview of every
claim (``results/verdicts.md`` / ``.rst``).  The decision itself is :mod:`softlin.verdict`."""

from __future__ import annotations

from collections.abc import Mapping

from .io import dumps_json, write_text
from .verdict import DEFAULT_Z, STATUSES, evaluate


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
    write_text(json_path, dumps_json(verdicts))
    if checks_path is not None:
        write_text(checks_path, dumps_json(checked))
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
