"""README.md's verdict table is the committed snapshot of the default run (docs/default_run/verdicts.md)."""
from pathlib import Path

import pytest

from softlin import readme_table as rt

ROOT = Path(__file__).resolve().parents[1]
SNAP = """| claim | id | status | measured (value +/- s.e.) | threshold |
|---|---|---|---|---|
| C1 | C1a | **PASS** | a.ratio = 0.1 +/- 0.05 | `ratio < 0.3` |
| C3 | C3d | **INCONCLUSIVE** | so.rate = 0.01 +/- 0.01 [undecided] | `rate <= 0` |

Tallies: C1: 1 PASS
"""


def _readme(table: str) -> str:
    return f"# x\n\nprose\n\n{rt.BEGIN}\n\n{table}\n{rt.END}\n\nmore prose\n"


def test_rewrite_puts_the_overview_between_the_markers_and_agrees_with_it():
    old = _readme("| claim | id | status |\n|---|---|---|\n| C1 | C1a | **FAIL** |\n")
    new = rt.rewrite(old, SNAP)
    assert new.startswith("# x\n\nprose\n\n") and new.endswith(f"{rt.END}\n\nmore prose\n")
    assert rt.differences(new, SNAP) == []
    assert rt.differences(old, SNAP) == ["C1 C1a column 'status': README '**FAIL**' vs snapshot '**PASS**'",
                                         "rows differ: README [('C1', 'C1a')] vs snapshot [('C1', 'C1a'), ('C3', 'C3d')]"][::-1]


def test_a_subset_of_columns_passes_and_a_changed_reading_or_extra_column_fails():
    sub = _readme("| claim | id | status |\n|---|---|---|\n| C1 | C1a | **PASS** |\n| C3 | C3d | **INCONCLUSIVE** |\n")
    assert rt.differences(sub, SNAP) == []
    changed = _readme(SNAP.replace("0.01 +/- 0.01", "0.01 +/- 0.005"))
    assert rt.differences(changed, SNAP) == [
        "C3 C3d column 'measured (value +/- s.e.)': README 'so.rate = 0.01 +/- 0.005 [undecided]' "
        "vs snapshot 'so.rate = 0.01 +/- 0.01 [undecided]'"]
    extra = _readme("| claim | id | status | df |\n|---|---|---|---|\n"
                    "| C1 | C1a | **PASS** | 4 |\n| C3 | C3d | **INCONCLUSIVE** | 4 |\n")
    assert rt.differences(extra, SNAP) == ["README column 'df' is not in the snapshot"]
    with pytest.raises(ValueError, match="markers"):
        rt.differences("no table here", SNAP)


def test_main_copies_the_snapshot_and_rewrites_the_readme(tmp_path):
    res = tmp_path / "results"
    for c in rt.CLAIMS:
        (res / c).mkdir(parents=True)
        (res / c / "verdict.md").write_text(f"# {c}\n")
    (res / "verdicts.md").write_text(SNAP)
    readme = tmp_path / "README.md"
    readme.write_text(_readme("| claim | id |\n|---|---|\n"))
    rt.main([str(res / "verdicts.md"), "--readme", str(readme), "--snapshot", str(tmp_path / "snap")])
    assert (tmp_path / "snap" / "verdicts.md").read_text() == SNAP
    assert (tmp_path / "snap" / "c3_verdict.md").read_text() == "# c3\n"
    assert rt.differences(readme.read_text(), SNAP) == []


def test_readme_table_matches_the_committed_default_run():
    """Every row's status and reading in README.md's table equals docs/default_run/verdicts.md
    (refresh both with `python -m softlin.readme_table results/verdicts.md` after a default run)."""
    snap = (ROOT / "docs" / "default_run" / "verdicts.md").read_text()
    assert rt.differences((ROOT / "README.md").read_text(), snap) == []
