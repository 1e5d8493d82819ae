"""softlin.calibration on synthetic replications with a known answer."""
import math

import numpy as np
import pytest

from softlin import calibration, verdict_report


def _verdict(cid, status, tests):
    """A verdict.json record: ``tests`` as ``(measured, value, se)`` (mappings or scalars; se
    ``"exact"`` for an exact one)."""
    recs = []
    for measured, value, se in tests:
        lab = next(iter(value)) if isinstance(value, dict) else None  # a mapping: its first entry decides
        r = dict(measured=measured, op="<", threshold=1.0, z=2, outcome="holds", value=value,
                 decided_by=dict(label=lab, value=value if lab is None else value[lab],
                                 se=None if se == "exact" else (se if lab is None else se[lab]), reason=""))
        if se == "exact":
            r["exact"] = True
        else:
            r["se"] = se
        recs.append(r)
    return dict(id=cid, statement="s", status=status, z=2, tests=recs, preconditions=[],
                measured={}, threshold=[f"{m} < 1" for m, _, _ in tests])


A = [_verdict("X1", "PASS", [("a.b", 1.0, 0.3), ("a.n", 3, "exact")]),
     _verdict("X2", "FAIL", [("a.m", {"p": 2.0, "q": 0.0}, {"p": 0.6, "q": 0.8})])]
B = [_verdict("X1", "FAIL", [("a.b", 0.6, 0.4), ("a.n", 1, "exact")]),
     _verdict("X2", "FAIL", [("a.m", {"p": 2.0, "q": 1.0}, {"p": 0.8, "q": 0.6})])]


def test_z_rms_and_largest_by_hand():
    """z = (1.0 - 0.6) / 0.5 = 0.8 (scalar), 0 and -1 / 1 = -1 (mapping entries p, q); the exact
    count carries no error and is left out; RMS = sqrt((0.64 + 0 + 1) / 3), largest |z| = 1 at q."""
    a, s1 = calibration.entries_from_verdicts(A)
    b, s2 = calibration.entries_from_verdicts(B)
    rows = calibration.compare(a, b)
    assert [(r["id"], r["label"], round(r["z"], 12)) for r in rows] == [("X1", None, 0.8), ("X2", "p", 0.0), ("X2", "q", -1.0)]
    s = calibration.summarize(rows)
    assert s["n"] == 3 and s["rms"] == pytest.approx(math.sqrt(1.64 / 3), rel=1e-12)
    assert s["max_abs"] == pytest.approx(1.0) and s["worst"]["label"] == "q"
    assert calibration.flips(s1, s2) == ["X1"]  # PASS in one, FAIL in the other


def test_markdown_reader_matches_the_json_reader_on_a_rendered_page():
    """The verdict page rendered by verdict_report from the same records, read back: the scalar
    test's value and error at the page's 4 significant digits, the statuses, no exact entry."""
    verdicts = [dict(v, why="w") for v in A]
    md = verdict_report.to_markdown("cx", "t", verdicts)
    entries, status = calibration.entries_from_markdown(md)
    assert status == {"X1": "PASS", "X2": "FAIL"}
    assert entries[("X1", "a.b", None)] == (1.0, 0.3)
    assert entries[("X2", "a.m", "p")] == (2.0, 0.6)   # a mapping: the entry the page prints
    assert not any(k[1] == "a.n" for k in entries)


def test_rms_near_one_with_right_errors_and_far_above_with_errors_three_times_too_small():
    """Monte Carlo: 400 entries, two replications v_i ~ N(mu_i, sigma_i^2) each; with the true
    sigma as the error the RMS of z is 1 within 3 / sqrt(2 * 400) = 0.106 (chi-square, 400 df,
    3 sigma); with sigma / 3 reported it is 3 within the same relative band, and read as too small."""
    rng = np.random.default_rng(5)
    mu, sig = rng.normal(size=400), rng.uniform(0.1, 2.0, size=400)

    def run(shrink):
        v1, v2 = mu + sig * rng.normal(size=400), mu + sig * rng.normal(size=400)
        a = {("C", "m", i): (v1[i], sig[i] / shrink) for i in range(400)}
        b = {("C", "m", i): (v2[i], sig[i] / shrink) for i in range(400)}
        return calibration.summarize(calibration.compare(a, b))

    right, small = run(1.0), run(3.0)
    assert abs(right["rms"] - 1) < 0.106, right["rms"]
    assert abs(small["rms"] / 3 - 1) < 0.106, small["rms"]
    assert calibration.verdict_on_rms(right["rms"], 400).startswith("consistent")
    assert calibration.verdict_on_rms(small["rms"], 400).startswith("far above")


def test_cli_writes_the_page(tmp_path):
    import json

    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(A))
    pb.write_text(json.dumps(B))
    out = tmp_path / "cal.md"
    calibration.main(["--pair", "CX", str(pa), str(pb), "--note", "CX", "seeds 1-5 vs 6-20", "-o", str(out)])
    text = out.read_text()
    assert "| CX | 3 | 0.7394 | 1 | X1 |" in text and "seeds 1-5 vs 6-20" in text
    with pytest.raises(SystemExit):
        calibration.main(["--pair", "CX", str(pa), str(tmp_path / "missing.json")])
