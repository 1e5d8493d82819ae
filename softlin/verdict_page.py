"""The report's first page: the table of every verdict as reStructuredText around one raw HTML
table (``results/verdicts.rst``, read after workflow/report/workflow.rst).

The same rows as ``results/verdicts.md`` (:func:`softlin.verdict_report.overview_rows`), laid out
for a browser: each status coloured and led by a text mark that survives printing in black and
white (:mod:`softlin.status_badge`, as on each claim's ``verdict.html``), every test of a reading
and of a threshold on its own line, long names broken
where they must be so a row fits the page's width, an id's marks under it in small type and its
statement as the id's tooltip.  The page's layout (the text and this table above the rule graph)
is workflow/report/workflow.rst's style.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping

from . import student
from .revision import revision_line
from .status_badge import MARK, status_html  # noqa: F401  (MARK: the marks, re-exported)
from .status_badge import STYLE as BADGE_STYLE
from .verdict import DEFAULT_Z
from .verdict_report import _tallies, fmt_p, fmt_test, marks, overview_revision, overview_rows

# (header, width: the short columns in em of the table's type, a status badge's width; the reading
# takes what is left, so a row fits any width from about 900 px)
COLUMNS = (("id", "8.5em"), ("status: raw, family-wide", "9.6em"), ("p (Holm level)", "5.6em"),
           ("measured (value +/- s.e.)", None), ("threshold", "24%"))
CAPTION = ("Every verdict (claims of the paper; consistency checks in each claim's verdict page); "
           "status: raw, family-wide: Holm over every criterion (docs/decision_rule.md)")
STYLE = """\
table.softlin-verdicts{width:100%;table-layout:fixed;border-collapse:collapse;font-size:.8rem;line-height:1.35}
table.softlin-verdicts caption{caption-side:top;text-align:left;font-style:italic;padding-bottom:.4em}
table.softlin-verdicts th,table.softlin-verdicts td{border:1px solid #d0d7de;padding:.3em .45em;vertical-align:top;
  text-align:left;overflow-wrap:break-word}
table.softlin-verdicts td.softlin-wrap{overflow-wrap:anywhere}
table.softlin-verdicts thead th{background:#f6f8fa}
table.softlin-verdicts tr.softlin-claim th{background:#eaeef2;padding:.2em .45em}
table.softlin-verdicts td .softlin-status{margin-bottom:.2em}
table.softlin-verdicts code{font-size:.95em;background:none;padding:0;font-weight:normal}
table.softlin-verdicts code::before,table.softlin-verdicts code::after{content:none}
table.softlin-verdicts .softlin-line{margin:0 0 .2em 0}
table.softlin-verdicts .softlin-marks{display:block;font-size:.85em;color:#57606a}
""" + BADGE_STYLE


def _html(text: str) -> str:
    """``text`` as HTML: escaped, ```code``` as <code>, braces as entities (the report passes the
    page through Jinja, which would read ``{{`` or ``{%``)."""
    out = re.sub(r"`(.+?)`", r"<code>\1</code>", html.escape(text))
    return out.replace("{", "&#123;").replace("}", "&#125;")


def _lines(items: list[str]) -> str:
    return "".join(f'<div class="softlin-line">{_html(t)}</div>' for t in items)


def _id_cell(v: dict) -> str:
    """The id in bold (its statement as tooltip), its marks (control, added/changed after a run) under it."""
    m = marks(v).strip()
    return (f'<b title="{_html(v["statement"])}">{_html(v["id"])}</b>'
            + (f'<span class="softlin-marks">{_html(m)}</span>' if m else ""))


def _threshold_cell(v: dict) -> str:
    """Each test of the threshold on a line (paths cut to their last part), then the preconditions."""
    def short(t):
        path, rest = t.split(" ", 1)
        return f"`{path.split('.')[-1]} {rest}`"
    out = _lines([short(t) for t in v["threshold"]])
    if v["preconditions"]:
        out += _lines(["conclusive only if:"] + [short(p["test"]) for p in v["preconditions"]])
    return out


def _row(v: dict, r: dict) -> str:
    """One criterion: its id, the raw status over the family-wide one, p, the reading, the threshold."""
    cells = [_id_cell(v), status_html(r["status"]) + "<br>" + status_html(r["family"], "family-wide status (Holm)"),
             _html(f"{fmt_p(r['p'])} ({r['holm_level']:.2g})")]
    wrapped = [_lines([fmt_test(t) for t in v["tests"]]), _threshold_cell(v)]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "".join(
        f'<td class="softlin-wrap">{c}</td>' for c in wrapped) + "</tr>"


def _claim_rows(claim: str, verdicts: list[dict], rows: list[dict]) -> list[str]:
    """A claim's heading row (its id across the table), then one row per criterion."""
    head = f'<tr class="softlin-claim"><th colspan="{len(COLUMNS)}">{_html(claim.upper())}</th></tr>'
    return [head] + [_row(v, r) for v, r in zip(verdicts, rows)]


def table_html(claims: Mapping) -> list[str]:
    """The table of every verdict (``claims``: ``{claim: [verdicts]}``) as HTML lines, its style first."""
    rows, body = overview_rows(claims), []
    for claim, vs in claims.items():
        body += _claim_rows(claim, vs, rows[:len(vs)])
        rows = rows[len(vs):]
    return (["<style>"] + STYLE.splitlines() + ["</style>", '<table class="softlin-verdicts">',
            f"<caption>{_html(CAPTION)}</caption>", "<colgroup>"]
            + [f'<col style="width:{w}">' if w else "<col>" for _, w in COLUMNS] + ["</colgroup>", "<thead><tr>"
            + "".join(f"<th>{_html(h)}</th>" for h, _ in COLUMNS) + "</tr></thead>", "<tbody>"]
            + body + ["</tbody>", "</table>"])


def overview_rst(claims: Mapping, revisions: Mapping | None = None) -> str:
    """The report's table of every verdict: a raw HTML block (:func:`table_html`), then the tallies
    of the raw and of the family-wide status and, given ``revisions`` (``{claim: revision}``), the
    code revision, each a paragraph of reStructuredText."""
    def para(text):
        return text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "").replace("|", "\\|")
    rows = overview_rows(claims)
    z = next((v["z"] for vs in claims.values() for v in vs), DEFAULT_Z)
    out = [".. raw:: html", ""] + [f"   {line}" for line in table_html(claims)]
    out += ["", para(f"Tallies of the raw status: {_tallies(claims, rows, 'status')}"), "",
            para(f"Tallies of the family-wide status (Holm at {student.alpha(z):.4f}): "
                 f"{_tallies(claims, rows, 'family')}")]
    if revisions:
        out += ["", para(revision_line(overview_revision(revisions)))]
    return "\n".join(out) + "\n"
