"""A verdict status in HTML: a coloured badge led by a text mark that survives printing in black and
white (:data:`MARK`).  One helper for the report's first page (:mod:`softlin.verdict_page`) and each
claim's ``verdict.html`` (:func:`softlin.verdict_report.markdown_to_html`)."""

from __future__ import annotations

MARK = {"PASS": "\u2713", "FAIL": "\u2717", "INCONCLUSIVE": "?"}  # check mark, ballot x, question mark
STYLE = """\
.softlin-status{display:inline-block;white-space:nowrap;font-weight:bold;font-size:.9em;padding:0 .35em;border-radius:.25em;
  border:1px solid currentColor}
.softlin-pass{color:#116329;background:#dafbe1}
.softlin-fail{color:#a40e26;background:#ffebe9}
.softlin-inconclusive{color:#7d4e00;background:#fff8c5}
@media print{.softlin-status{background:none}}"""


def status_html(status: str, kind: str = "raw status") -> str:
    """A status as a coloured badge led by its text mark, ``kind`` its tooltip:
    ``<span class="softlin-status softlin-pass" title="raw status">✓ PASS</span>``."""
    return f'<span class="softlin-status softlin-{status.lower()}" title="{kind}">{MARK[status]} {status}</span>'
