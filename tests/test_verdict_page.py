"""The report's first page (softlin.verdict_page + workflow/report/workflow.rst): one row per
criterion with its statuses as coloured badges led by a text mark, rendered by docutils without a
warning, unchanged by the Jinja pass Snakemake's report makes over it.  (How it looks in a browser
was checked by hand in headless Chromium at 1024, 1400 and 1920 px: docs/report.md.)"""
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from softlin import verdict, verdict_page

ROOT = Path(__file__).resolve().parents[1]
CRIT = [{"id": "A1", "statement": "below one {{ braces }}", "all": [{"measured": "a.b.x", "op": "<", "value": 1}]},
        {"id": "A2", "statement": "s", "all": [{"measured": "a.b.x", "op": ">", "value": 0.7}]},
        {"id": "A3", "statement": "s", "all": [{"measured": "a.b.x", "op": "<", "value": 0.6}],
         "changed_after_run": [{"what": "w", "why": "y"}]}]
# x = 0.5 +/- 0.1 (df inf, t 2): A1 holds at 0.7 (PASS), A2 fails at 0.7 (FAIL), A3: 0.3 .. 0.7 spans 0.6
METRICS = {"a": {"b": {"x": 0.5, "x_se": 0.1, "x_df": math.inf}}}
RAW = ["PASS", "FAIL", "INCONCLUSIVE"]


class Cells(HTMLParser):
    """Rows of the table as lists of (cell text, classes of the spans in it); tags checked balanced."""
    VOID = {"br", "col", "meta"}

    def __init__(self):
        super().__init__()
        self.rows, self.stack, self.spans = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)
        elif tag == "br":
            self.handle_data("\n")
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self.rows[-1].append(["", []])
        elif tag == "span" and self.rows and self.rows[-1]:
            self.rows[-1][-1][1].append(dict(attrs).get("class", ""))

    def handle_endtag(self, tag):
        assert self.stack.pop() == tag, tag

    def handle_data(self, data):
        if self.rows and self.rows[-1] and "tr" in self.stack:
            self.rows[-1][-1][0] += data


def _table(rst):
    block = rst.split("\n\n", 1)[1].split("\n\n", 1)[0]          # the indented raw HTML block
    p = Cells()
    p.feed("\n".join(line[3:] for line in block.splitlines()))
    assert p.stack == []
    return p.rows


def test_each_criterion_is_a_row_with_its_statuses_marked():
    claims = {"c8": [verdict.evaluate(c, METRICS) for c in CRIT], "c9": []}
    rows = _table(verdict_page.overview_rst(claims))
    assert [r[0][0] for r in rows if len(r) == 1] == ["C8", "C9"]              # a heading row per claim
    body = [r for r in rows[1:] if len(r) > 1]
    assert [r[0][0].split("(")[0] for r in body] == ["A1", "A2", "A3"]
    for r, raw in zip(body, RAW):
        text, spans = r[1]
        assert text.split()[:2] == [verdict_page.MARK[raw], raw]                 # the mark prints in black and white
        assert spans[0] == f"softlin-status softlin-{raw.lower()}"
        assert len(spans) == 2 and spans[1].startswith("softlin-status softlin-")  # the family-wide badge
    assert "changed after a run" in body[2][0][0]
    assert "b.x = 0.5 +/- 0.1 (df inf, t 2)" in body[0][3][0]


def test_front_page_renders_without_a_warning_and_survives_jinja():
    docutils_core = pytest.importorskip("docutils.core")
    jinja2 = pytest.importorskip("jinja2")
    claims = {"c8": [verdict.evaluate(c, METRICS) for c in CRIT]}
    page = (ROOT / "workflow" / "report" / "workflow.rst").read_text() + "\n\n" + verdict_page.overview_rst(
        claims, {"c8": "abc123"})
    assert jinja2.Environment().from_string(page).render() == page.rstrip("\n")   # no {{ }} / {% %} left to read
    html = docutils_core.publish_parts(page, writer="html",
                                       settings_overrides={"halt_level": 2, "report_level": 2})["html_body"]
    assert html.count('class="softlin-status softlin-') == 2 * len(CRIT)
    assert "#rulegraph" in html and 'class="softlin-verdicts"' in html          # the layout's style and the table
    assert re.search(r"Tallies of the raw status: C8: 1 PASS, 1 FAIL, 1 INCONCLUSIVE", html)
    assert "Code revision: abc123" in html and "{{" not in html


def test_each_claims_verdict_page_has_the_same_badges(tmp_path):
    """Each claim's verdict.html (softlin.verdict_report.write_html): every status cell of the verdict
    table and of the consistency checks is the first page's badge (one helper: softlin.status_badge),
    its style on the page; a statement with pipes (``|a - b|``) stays in its cell (it split the row
    before); verdict.md keeps its bold statuses and plain pipes; a page without badges (the symbolic
    derivations') is as before."""
    from softlin import verdict_report

    check = {"id": "K1", "statement": "a check", "all": [{"measured": "a.b.x", "op": ">", "value": 0}]}
    crit = [*CRIT[:2], {**CRIT[2], "statement": "|a - b| / |b| below 0.6"}]
    paths = {k: tmp_path / f"v.{k}" for k in ("json", "md", "html")}
    verdict_report.publish("c8", "t", crit, METRICS, paths, checks=[check], revision="r")
    p = Cells()
    p.feed(paths["html"].read_text())
    assert p.stack == []
    rows = [r for r in p.rows if len(r) > 2]
    status_col = [c for c, (h, _) in enumerate(rows[0]) if h == "status"]
    assert len(status_col) == 1 and [r[0][0] for r in rows] == ["id", "A1", "A2", "A3 (changed after a run)", "id", "K1"]
    for r, raw in zip([rows[i] for i in (1, 2, 3, 5)], RAW + ["PASS"]):
        text, spans = r[status_col[0]]
        assert text == f"{verdict_page.MARK[raw]} {raw}" and spans == [f"softlin-status softlin-{raw.lower()}"], r
    assert all(len(r) == 6 for r in rows) and rows[3][3][0] == "|a - b| / |b| below 0.6", rows[3]
    page = paths["html"].read_text()
    assert ".softlin-pass{color:#116329;background:#dafbe1}" in page and "<b>PASS</b>" not in page
    md = paths["md"].read_text()
    assert "| **PASS** |" in md and "| **FAIL** |" in md and "\u2713" not in md and "| |a - b| / |b| below 0.6 |" in md
    assert verdict_report.markdown_to_html("| s |\n|---|\n| **PASS** |\n") == (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><style>body{font-family:sans-serif;font-size:14px} "
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}</style></head>"
        "<body><table><thead><tr><th>s</th></tr></thead><tbody><tr><td><b>PASS</b></td></tr></tbody></table>"
        "</body></html>\n")
