"""The code's git revision in every verdict file (softlin.revision): a commit, ``-dirty`` for
uncommitted code, ``unknown`` outside a checkout; never an error, one line of each page."""
import json
import shutil
import subprocess

import pytest

from softlin import revision, verdict_report

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _repo(tmp_path):
    root = tmp_path / "checkout"
    (root / "softlin").mkdir(parents=True)
    (root / "softlin" / "m.py").write_text("x = 1\n")
    (root / ".gitignore").write_text("results/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "c"]):
        subprocess.run(GIT + ["-C", str(root)] + args, check=True)
    head = (root / ".git" / "HEAD").read_text().split()[-1]           # the commit, read from git's files
    commit = (root / ".git" / head).read_text().strip()
    return root, commit


def test_a_clean_checkout_gives_its_commit_and_results_do_not_dirty_it(tmp_path):
    root, commit = _repo(tmp_path)
    assert len(commit) == 40
    (root / "results").mkdir()
    (root / "results" / "r.json").write_text("{}")                     # ignored
    (root / "notes.txt").write_text("not code")                          # untracked, outside the code
    assert revision.code_revision(root) == commit


@pytest.mark.parametrize("change", ["edit", "untracked"])
def test_uncommitted_code_is_dirty(tmp_path, change):
    root, commit = _repo(tmp_path)
    target = root / "softlin" / ("m.py" if change == "edit" else "new.py")
    target.write_text("x = 2\n")
    assert revision.code_revision(root) == f"{commit}-dirty"


def test_outside_a_checkout_it_is_unknown_and_never_fails(tmp_path, monkeypatch):
    plain = tmp_path / "tarball"
    (plain / "softlin").mkdir(parents=True)
    assert revision.code_revision(plain) == "unknown"                    # no .git at all
    root, _ = _repo(tmp_path)
    assert revision.code_revision(root / "softlin") == "unknown"         # inside another checkout
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))                  # no git program
    assert revision.code_revision(root) == "unknown"


def test_publish_adds_exactly_the_revision(tmp_path):
    """verdict.md / .html: one paragraph (md) or line (html) more than without it; verdict.json:
    the same list under "verdicts" (the lead's comparison of results before and after)."""
    crit = [{"id": "K1", "statement": "s", "all": [{"measured": "x", "op": "<", "value": 1}]}]
    m = {"x": 0.5, "x_se": 0.1, "x_df": 30}
    paths = {k: tmp_path / f"v.{k}" for k in ("json", "md", "html")}
    vs = verdict_report.publish("c9", "t", crit, m, paths, revision="abc123-dirty")
    md = paths["md"].read_text()
    assert md.splitlines()[1:4] == ["", "Code revision: abc123-dirty", ""]
    plain = verdict_report.to_markdown("c9", "t", vs, "", [])
    assert md.replace("Code revision: abc123-dirty\n\n", "", 1) == plain
    html = paths["html"].read_text().splitlines()
    assert [ln for ln in html if "Code revision" not in ln] == verdict_report.markdown_to_html(plain, badges=True).splitlines()
    assert sum("<p>Code revision: abc123-dirty</p>" == ln for ln in html) == 1
    doc = json.loads(paths["json"].read_text())
    assert doc["revision"] == "abc123-dirty" and doc["verdicts"] == json.loads(json.dumps(vs))
    assert verdict_report.verdicts_of(doc) == verdict_report.verdicts_of(doc["verdicts"])  # the older bare list


def test_overview_names_each_claims_revision_when_they_differ():
    same = verdict_report.overview_revision({"c1": "a", "c2": "a"})
    assert same == "a"
    assert verdict_report.overview_revision({"c1": "a", "c2": "b-dirty"}) == "C1 a; C2 b-dirty"
    md = verdict_report.overview_markdown({"c1": []}, {"c1": "a"})
    assert md.startswith("Code revision: a\n\n| claim |")
