"""Verdicts as the reader meets them: each claim's ``verdict.json`` / ``verdict.md`` / ``verdict.html``
(the verdict table, the consistency checks in their own labelled table) and the overview of every
claim (``results/verdicts.md``; its ``.rst`` for the report: :mod:`softlin.verdict_page`).  The decision
itself is :mod:`softlin.verdict`."""

from __future__ import annotations

import math
from collections.abc import Mapping

from . import family, student
from .io import dumps_json, write_text
from .revision import code_revision, revision_line
from .status_badge import STYLE as BADGE_STYLE
from .status_badge import status_html
from .verdict import DEFAULT_Z, STATUSES, evaluate


def _fmt(x) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _num(x) -> str:
    return f"{x:g}" if isinstance(x, float) and (not math.isfinite(x) or x == int(x)) else _fmt(x)  # nan: "nan"


def fmt_p(p: float) -> str:
    """A p-value for the tables: two significant digits; a sampled value's p below 1e-300 (hundreds of
    standard errors from its threshold; :data:`softlin.intervals.P_UNDERFLOW` where the double
    underflowed) as ``<1e-300``; an exact value's 0 as ``0``."""
    return "<1e-300" if 0 < p < 1e-300 else f"{p:.2g}"


def fmt_test(r: dict) -> str:
    """A test's reading for the table: the last two parts of its path, ``value +/- se`` (a count:
    ``n in [lo, hi]``, its interval from the rises'; ``(exact)``), the degrees of freedom and the
    multiplier ``t`` of a random value, for a mapping the entry that decided it, and the outcome
    (with its reason where the error is a lower bound) when not holds."""
    d = r["decided_by"]
    name = ".".join(r["measured"].split(".")[-2:]) + (f"[{d['label']}]" if d["label"] is not None else "")
    if "lo" in d:
        val = f"{_num(d['value'])} in [{_num(d['lo'])}, {_num(d['hi'])}]"
    elif d["se"] is not None:
        val = f"{_fmt(d['value'])} +/- {_fmt(d['se'])}"
    else:
        val = _fmt(d["value"]) + (" (exact)" if r.get("exact") else "")
    if d.get("df") is not None and r.get("z", 0) > 0:
        val += f" (df {_num(d['df'])}, t {d['multiplier']:.3g})"
    tail = "" if r["outcome"] == "holds" else f" [{r['outcome']}" + (
        f": {d['reason']}" if d["reason"] == "s.e. is a lower bound" else "") + "]"
    return f"`{name}` = {val}{tail}"


def marks(v: dict, mark_after_run: bool = True) -> str:
    """The id's marks: ``(control)``, ``(added after a run)``, ``(changed after a run)``."""
    out = " (control)" if v.get("role") == "control" else ""
    if mark_after_run:
        out += " (added after a run)" if "added_after_run" in v else ""
        out += " (changed after a run)" if v.get("changed_after_run") else ""
    return out


def _short(t: str) -> str:
    """A described test ``a.b.c op value`` with its path cut to the last part (the numbers kept whole)."""
    path, rest = t.split(" ", 1)
    return f"{path.split('.')[-1]} {rest}"


def threshold_cell(v: dict, short: bool = False) -> str:
    """The thresholds of a criterion in one cell: its main tests, then its preconditions
    (``conclusive only if ...``); ``short`` cuts each path to its last part."""
    f = _short if short else (lambda t: t)
    out = "; ".join(f"`{f(t)}`" for t in v["threshold"])
    if v["preconditions"]:
        out += " (conclusive only if " + "; ".join(f"`{f(p['test'])}`" for p in v["preconditions"]) + ")"
    return out


def _table(verdicts: list[dict], mark_after_run: bool = True, escape_pipes: bool = False) -> list[str]:
    """The verdict table's Markdown lines; ``escape_pipes``: a ``|`` inside a cell (``|theta_inf|``)
    written ``\\|`` (for :func:`markdown_to_html`; verdict.md keeps the plain text it always had)."""
    def row(*cells):
        return "| " + " | ".join(c.replace("|", "\\|") if escape_pipes else c for c in cells) + " |"
    lines = ["| id | status | p | statement | measured (value +/- s.e.) | threshold |", "|---|---|---|---|---|---|"]
    for v in verdicts:
        measured = "; ".join(fmt_test(r) for r in v["tests"])
        thr = "; ".join(f"`{t}`" for t in v["threshold"])
        if v["preconditions"]:
            thr += " (conclusive only if " + "; ".join(
                f"`{p['test']}`" + ("" if p["holds"] else f" [{p['outcome']}: {fmt_test(p)}]")
                for p in v["preconditions"]) + ")"
        p = fmt_p(v["p"]) if "p" in v else "-"
        lines.append(row(f"{v['id']}{marks(v, mark_after_run)}", f"**{v['status']}**", p, v["statement"], measured, thr))
    return lines


def tally(verdicts: list[dict], key: str = "status") -> str:
    """``n PASS, n FAIL, n INCONCLUSIVE`` of the claims, then of the controls apart (``key``: which status)."""
    def count(vs):
        return ", ".join(f"{sum(v[key] == s for v in vs)} {s}" for s in STATUSES)
    claims = [v for v in verdicts if v.get("role", "claim") != "control"]
    controls = [v for v in verdicts if v.get("role") == "control"]
    return count(claims) + (f" (controls apart: {count(controls)})" if controls else "")


RULE_TEXT = ("Decision rule: a test holds if it holds at the unfavourable end of value +/- t standard errors "
             "(from independent task blocks or seeds; `exact`: no sampling noise), where t is the Student "
             "quantile at the two-sided level of +/- {z} under the normal law ({level:.2%}) with the error's "
             "degrees of freedom (df, n - 1 for n replicates); it fails if it fails at the favourable end, else "
             "it is undecided. A count of rises is an interval: for a PASS every rise not significantly below 0 "
             "counts, for a FAIL only the rises significantly above. An error known to be a lower bound grants "
             "no PASS. A criterion is PASS when every test holds, FAIL when one fails, otherwise INCONCLUSIVE "
             "(also when a precondition does not hold). p: the p-value its raw status carries (PASS: the largest "
             "over its tests; FAIL: the smallest failing one times the entries that could fail; "
             "INCONCLUSIVE: 1). The family-wide status (Holm over every criterion of C1-C5 at {alpha:.4f}) is "
             "in `results/verdicts.md`: docs/decision_rule.md.")


def to_markdown(claim: str, title: str, verdicts: list[dict], extra: str = "",
                checks: list[dict] | None = None, revision: str | None = None, escape_pipes: bool = False) -> str:
    """A verdict table in Markdown: the decision rule, the criteria added or changed after a run listed
    under it, then the consistency checks (a separate table, not verdicts), then optional extra sections;
    ``revision`` (:mod:`softlin.revision`), when given, is a paragraph of one line under the title;
    ``escape_pipes``: see :func:`_table`."""
    lines = [f"# {claim.upper()} verdict: {title}", ""] + ([revision_line(revision), ""] if revision is not None else [])
    z = next((v["z"] for v in verdicts + (checks or [])), None)
    if z is not None:
        lines += [RULE_TEXT.format(z=_fmt(z), level=student.level(z), alpha=student.alpha(z)), ""]
    if verdicts:
        lines += _table(verdicts, escape_pipes=escape_pipes) + ["", "Summary (raw status): " + tally(verdicts), ""]
    else:
        lines += ["No criterion of the paper is decided here: every test of this claim is a consistency "
                  "check (below).", ""]
    undecided = [v for v in verdicts if v["status"] == "INCONCLUSIVE"]
    if undecided:
        lines += ["Why INCONCLUSIVE:", ""] + [f"* **{v['id']}**: {v['why']}" for v in undecided] + [""]
    late = [v for v in verdicts if "added_after_run" in v]
    if late:
        lines += ["Criteria added or changed after a run they judge (not predeclared):", ""] + [
            f"* **{v['id']}**: {v['added_after_run']}" for v in late] + [""]
    changed = [v for v in verdicts if v.get("changed_after_run")]
    if changed:
        lines += ["Changes made after seeing data that can move these statuses:", ""] + [
            f"* **{v['id']}**: {c['what']} ({c['why']})" for v in changed for c in v["changed_after_run"]] + [""]
    notes = [v for v in verdicts if "note" in v]
    if notes:
        lines += ["Notes:", ""] + [f"* **{v['id']}**: {v['note']}" for v in notes] + [""]
    if checks:
        lines += ["## Consistency checks (not verdicts on the paper)", "",
                  "These hold by construction, cannot fail, or test the protocol rather than a claim of "
                  "the paper; they are not counted in the summary above.", ""] + _table(checks, escape_pipes=escape_pipes)
        lines += [""] + [f"* **{c['id']}**: {c['reason']}" for c in checks if "reason" in c] + [""]
        late_c = [c for c in checks if "added_after_run" in c]
        if late_c:
            lines += [f"* **{c['id']}** (added after a run): {c['added_after_run']}" for c in late_c] + [""]
        lines += [f"* **{c['id']}** (changed after a run): {x['what']} ({x['why']})"
                  for c in checks for x in c.get("changed_after_run", [])]
    return "\n".join(lines) + ("\n" + extra if extra else "")


def verdicts_of(doc) -> list[dict]:
    """The verdicts of a loaded ``verdict.json``: ``{"revision", "verdicts"}``, or a bare list (the
    form written before the revision was recorded, e.g. committed snapshots under docs/)."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, Mapping) and isinstance(doc.get("verdicts"), list):
        return doc["verdicts"]
    raise ValueError("not a verdict.json: expected a list or a mapping with a list 'verdicts'")


def write(claim: str, title: str, criteria: list[dict], metrics, json_path, md_path,
          extra_md: str = "", checks: list[dict] | None = None,
          checks_path=None, z: float = DEFAULT_Z, revision: str | None = None) -> list[dict]:
    """Evaluate ``criteria`` on ``metrics``; write ``verdict.json`` (``{"revision": ..., "verdicts":
    [...]}``) and ``verdict.md`` (each atomically: a temporary file in the same directory, then a
    rename).  ``revision``: the code's git revision (default: :func:`softlin.revision.code_revision`).

    ``checks`` (consistency checks) are evaluated by the same rule, printed in their own table in
    the Markdown and, when ``checks_path`` is given, written there as a JSON list; never in
    ``verdict.json``.  Returns the verdicts (criteria only).
    """
    revision = code_revision() if revision is None else revision
    verdicts = [evaluate(c, metrics, z) for c in criteria]
    checked = [evaluate(c, metrics, z) for c in (checks or [])]
    write_text(json_path, dumps_json({"revision": revision, "verdicts": verdicts}))
    if checks_path is not None:
        write_text(checks_path, dumps_json(checked))
    write_text(md_path, to_markdown(claim, title, verdicts, extra_md, checked, revision))
    return verdicts


def _reading(v: dict) -> str:
    """A criterion's main reading in one cell: every test as ``value +/- se`` (plain text)."""
    return "; ".join(fmt_test(r).replace("`", "") for r in v["tests"])


def overview_rows(claims: Mapping) -> list[dict]:
    """One row per criterion of every claim (``claims``: ``{claim: [verdicts]}``): claim, id (with
    its :func:`marks`), role, statement, reading, threshold (:func:`threshold_cell`, paths cut to
    their last part, preconditions included), the raw status, its p-value and the family-wide status
    (:func:`softlin.family.family_status`: Holm over every criterion of ``claims`` as one family)."""
    flat = [v for vs in claims.values() for v in vs]
    z = next((v["z"] for v in flat), DEFAULT_Z)
    fam = family.family_status(flat, student.alpha(z)) if z > 0 else [
        dict(family=v["status"], p=v.get("p", 1.0), holm_level=float("nan")) for v in flat]
    rows = []
    for (claim, v), f in zip(((c, v) for c, vs in claims.items() for v in vs), fam):
        rows.append(dict(claim=claim.upper(), id=v["id"] + marks(v), role=v.get("role", "claim"),
                         statement=v["statement"], reading=_reading(v), threshold=threshold_cell(v, short=True),
                         status=v["status"], family=f["family"], p=f["p"], holm_level=f["holm_level"]))
    return rows


def _tallies(claims: Mapping, rows: list[dict], key: str) -> str:
    by = {c.upper(): [r for r in rows if r["claim"] == c.upper()] for c in claims}
    return "; ".join(f"{c}: " + (tally(rs, key) if rs else "no criterion (consistency checks only)")
                     for c, rs in by.items())


def overview_revision(revisions: Mapping) -> str:
    """The code revision of the claims' verdicts (``{claim: revision}``) in one line: the one
    revision they share, else each claim's."""
    if len(set(revisions.values())) == 1:
        return next(iter(revisions.values()))
    return "; ".join(f"{c.upper()} {r}" for c, r in revisions.items())


def overview_markdown(claims: Mapping, revisions: Mapping | None = None) -> str:
    """The table of every verdict (the README's and the report's first page): the raw status, the
    family-wide status beside it, and the tallies of each (claims and controls apart); ``revisions``
    (``{claim: revision}`` of its ``verdict.json``), when given, a first paragraph of one line."""
    rows = overview_rows(claims)
    z = next((v["z"] for vs in claims.values() for v in vs), DEFAULT_Z)
    lines = [revision_line(overview_revision(revisions)), ""] if revisions else []
    lines += ["| claim | id | status | family-wide | p (Holm level) | measured (value +/- s.e.) | threshold |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['claim']} | {r['id']} | **{r['status']}** | **{r['family']}** | "
                     f"{fmt_p(r['p'])} ({r['holm_level']:.2g}) | {r['reading']} | {r['threshold']} |")
    return ("\n".join(lines) + "\n\n"
            f"Status: the raw status of each criterion at the two-sided level {student.level(z):.2%} per test "
            f"(Student t with each error's df). Family-wide: Holm's step-down over the {len(rows)} criteria above "
            f"as one family at {student.alpha(z):.4f}; a raw PASS or FAIL whose p-value Holm does not reject "
            "is INCONCLUSIVE (docs/decision_rule.md).\n\n"
            "Tallies of the raw status (consistency checks apart; controls apart): " + _tallies(claims, rows, "status")
            + "\n\nTallies of the family-wide status: " + _tallies(claims, rows, "family") + "\n")


def markdown_to_html(md: str, badges: bool = False) -> str:
    """Minimal Markdown (headers, pipe tables (``\\|`` a pipe in a cell), bullets, paragraphs, `code`, **bold**) to HTML;
    ``badges``: a table cell that is a bold status (``**PASS**``) as the report's coloured badge with
    its text mark (:func:`softlin.status_badge.status_html`, as on the report's first page)."""
    import html
    import re

    def inline(text):
        text = html.escape(text)
        text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
        return re.sub(r"`(.+?)`", r"<code>\1</code>", text)

    def cell(text):
        status = re.fullmatch(r"\*\*(" + "|".join(STATUSES) + r")\*\*", text) if badges else None
        return status_html(status.group(1)) if status else inline(text)

    out, table = [], []

    def flush():
        if table:
            rows = [r for r in table if not re.fullmatch(r"\|?[-| :]+\|?", r)]
            cells = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", r.strip().strip("|"))] for r in rows]
            head = "".join(f"<th>{inline(c)}</th>" for c in cells[0])
            body = "".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in r) + "</tr>" for r in cells[1:])
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
             "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}") + (BADGE_STYLE.replace("\n", "") if badges else "")
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{style}</style></head><body>" \
           + "\n".join(out) + "</body></html>\n"


def write_html(path, claim: str, title: str, verdicts: list[dict], extra_md: str = "",
               checks: list[dict] | None = None, revision: str | None = None) -> None:
    """The verdict table (and extra Markdown sections) as a standalone HTML page for the report;
    ``checks`` are already evaluated consistency checks."""
    md = to_markdown(claim, title, verdicts, extra_md, checks, revision, escape_pipes=True)
    write_text(path, markdown_to_html(md, badges=True))


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
            log=None, checks: list[dict] | None = None, z: float = DEFAULT_Z,
            revision: str | None = None) -> list[dict]:
    """A verdict rule's whole job: the files ``paths["json"]``, ``["md"]``, ``["html"]`` written
    (atomically), one log line per criterion.  ``checks``: the claim's consistency checks (config
    ``consistency_checks``), written to ``paths["consistency"]`` when given and shown in their own
    table.  ``paths`` is a mapping of plain paths; an object with attributes ``json``, ``md``,
    ``html`` (``consistency``) is read the same way.  ``z``: the decision rule's width in standard
    errors (config ``decision.z``).  ``revision``: the code's git revision written into each file
    (default: read now, :func:`softlin.revision.code_revision`)."""
    out = output_paths(paths)
    revision = code_revision() if revision is None else revision
    verdicts = write(claim, title, criteria, metrics, out["json"], out["md"], extra_md,
                     checks, out.get("consistency"), z, revision)
    checked = [evaluate(c, metrics, z) for c in (checks or [])]
    write_html(out["html"], claim, title, verdicts, extra_md, checked, revision)
    for v in verdicts + checked:
        if log:
            log(f"{v['id']}: {v['status']}" + (" (consistency check)" if v in checked else ""))
    return verdicts
