"""Calibration of the standard errors: two independent replications of a claim side by side.

For every entry a criterion reads (each test and precondition; each label of a mapping), the
replications' values ``v1 +/- se1`` and ``v2 +/- se2`` give ``z = (v1 - v2) / sqrt(se1^2 + se2^2)``.
If the standard errors are right and the replications independent (disjoint seeds or task blocks),
each ``z`` is about standard normal, so the RMS of ``z`` over a claim is about 1; an RMS far above 1
says the errors are too small (the verdicts that read them decide too easily).  Entries are
correlated within a claim (nested prompt lengths, shared fits), so the RMS is a diagnostic, not a
test.  Beside it, each criterion's status in both replications: a PASS in one and FAIL in the other
is a flip.

Input: a claim's ``verdict.json`` (every entry of every mapping) or ``verdict.md`` (the entry
printed per test; used for committed replicates that keep only the page).  ``python -m
softlin.calibration --pair C1 A/results/c1/verdict.json B/results/c1/verdict.json ... -o PAGE``
writes the page (docs/calibration.md: how the lead regenerates it).
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

from .verdict_report import verdicts_of

NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)"
MD_READING = re.compile(rf"`([^`]+)` = ({NUM}) \+/- ({NUM})")
MD_STATUS = re.compile(r"^\|\s*([^|]+?)\s*\|\s*\*\*(PASS|FAIL|INCONCLUSIVE)\*\*\s*\|")
FLIP_PAIRS = ({"PASS", "FAIL"},)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def entries_from_verdicts(verdicts: list[dict]) -> tuple[dict, dict]:
    """``({(id, measured, label): (value, se)}, {id: status})`` from a claim's ``verdict.json``
    records: every test and precondition with a standard error (``exact`` ones carry none and
    are left out), every label of a mapping (``label`` None for a scalar)."""
    out, status = {}, {}
    for v in verdicts:
        status[v["id"]] = v["status"]
        for r in v["tests"] + v.get("preconditions", []):
            if r.get("exact"):
                continue
            vals, ses = r["value"], r.get("se")
            items = vals.items() if isinstance(vals, dict) else [(None, vals)]
            for lab, x in items:
                s = ses.get(lab) if isinstance(ses, dict) else ses
                if _finite(x) and _finite(s):
                    out[(v["id"], r["measured"], lab)] = (float(x), float(s))
    return out, status


def entries_from_markdown(text: str) -> tuple[dict, dict]:
    """The same from a claim's ``verdict.md`` (the criteria table, before the consistency checks):
    one entry per test as printed (``measured`` its last two path parts, a mapping's deciding label)."""
    out, status = {}, {}
    for line in text.split("## Consistency checks")[0].splitlines():
        m = MD_STATUS.match(line)
        if not m:
            continue
        cid = m.group(1).replace("(added after a run)", "").strip()
        status[cid] = m.group(2)
        for name, x, s in MD_READING.findall(line):
            measured, lab = (name[:-1].split("[", 1) + [None])[:2] if name.endswith("]") else (name, None)
            if _finite(float(x)) and _finite(float(s)):
                out[(cid, measured, lab)] = (float(x), float(s))
    return out, status


def read(path) -> tuple[dict, dict]:
    """:func:`entries_from_verdicts` of a ``.json`` file, :func:`entries_from_markdown` of a ``.md`` one."""
    p = Path(path)
    if p.suffix == ".json":
        return entries_from_verdicts(verdicts_of(json.loads(p.read_text())))
    if p.suffix == ".md":
        return entries_from_markdown(p.read_text())
    raise ValueError(f"{path}: expected a verdict.json or verdict.md")


def z_score(v1: float, se1: float, v2: float, se2: float) -> float:
    """``(v1 - v2) / sqrt(se1^2 + se2^2)`` (NaN when both errors are 0)."""
    den = math.hypot(se1, se2)
    return (v1 - v2) / den if den > 0 else float("nan")


def compare(a: dict, b: dict) -> list[dict]:
    """One row per entry in both replications (in ``a``'s order): ``{id, measured, label, v1, se1,
    v2, se2, z}``."""
    return [dict(id=k[0], measured=k[1], label=k[2], v1=a[k][0], se1=a[k][1], v2=b[k][0], se2=b[k][1],
                 z=z_score(*a[k], *b[k])) for k in a if k in b]


def summarize(rows: list[dict]) -> dict:
    """``{n, rms, max_abs, worst}``: the RMS of the finite ``z``, the largest ``|z|`` and its row."""
    zs = [r for r in rows if math.isfinite(r["z"])]
    if not zs:
        return dict(n=0, rms=float("nan"), max_abs=float("nan"), worst=None)
    worst = max(zs, key=lambda r: abs(r["z"]))
    return dict(n=len(zs), rms=math.sqrt(sum(r["z"] ** 2 for r in zs) / len(zs)),
                max_abs=abs(worst["z"]), worst=worst)


def flips(s1: dict, s2: dict) -> list[str]:
    """Criteria that are PASS in one replication and FAIL in the other."""
    return [cid for cid in s1 if cid in s2 and {s1[cid], s2[cid]} in FLIP_PAIRS]


def verdict_on_rms(rms: float, n: int) -> str:
    """How to read a claim's RMS of ``z`` over ``n`` entries: about 1 if the errors are right.  The
    band is the RMS of ``n`` independent standard normals (chi-square, ``n`` df) at about 3 sigma,
    ``1 +/- 3 / sqrt(2 n)``, widened to at least [0.5, 2]: correlated entries scatter more."""
    if n == 0 or not math.isfinite(rms):
        return "no entry with an error in both"
    hi, lo = max(2.0, 1 + 3 / math.sqrt(2 * n)), min(0.5, 1 - 3 / math.sqrt(2 * n))
    if rms > hi:
        return f"far above 1 (> {hi:.2g}): the standard errors are too small"
    if rms < lo:
        return f"far below 1 (< {lo:.2g}): the standard errors are too large (or the replications not independent)"
    return "consistent with 1: the standard errors are of the right size"


def _g(x) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.4g}"


def section(claim: str, path1: str, path2: str, note: str = "") -> tuple[str, dict]:
    """One claim's Markdown section and its summary ``{claim, n, rms, max_abs, flips, reading}``."""
    a, s1 = read(path1)
    b, s2 = read(path2)
    rows = compare(a, b)
    summ = summarize(rows)
    fl = flips(s1, s2)
    reading = verdict_on_rms(summ["rms"], summ["n"])
    lines = [f"## {claim}", "", f"Replication 1: `{path1}`; replication 2: `{path2}`." + (f" {note}" if note else ""), "",
             f"{summ['n']} entries with an error in both: RMS of z = {_g(summ['rms'])}, largest |z| = "
             f"{_g(summ['max_abs'])}" + (f" ({summ['worst']['id']} `{summ['worst']['measured']}`"
                                       + (f"[{summ['worst']['label']}]" if summ['worst']['label'] is not None else "")
                                       + ")" if summ["worst"] else "") + f": {reading}.", "",
             "| criterion | status 1 | status 2 | |", "|---|---|---|---|"]
    for cid in s1:
        mark = "**FLIP**" if cid in fl else ("same" if s1[cid] == s2.get(cid) else "differs")
        lines.append(f"| {cid} | {s1[cid]} | {s2.get(cid, '(absent)')} | {mark} |")
    lines += ["", "| criterion | measured | entry | value 1 +/- se | value 2 +/- se | z |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['id']} | `{r['measured']}` | {'' if r['label'] is None else r['label']} | "
              f"{_g(r['v1'])} +/- {_g(r['se1'])} | {_g(r['v2'])} +/- {_g(r['se2'])} | {r['z']:+.2f} |" for r in rows]
    return "\n".join(lines) + "\n", dict(claim=claim, n=summ["n"], rms=summ["rms"], max_abs=summ["max_abs"],
                                         flips=fl, reading=reading)


READING = ("For every entry a criterion reads, `z = (v1 - v2) / sqrt(se1^2 + se2^2)`; if the standard "
           "errors are right and the replications independent, `z` is about standard normal and its RMS "
           "about 1 (far above 1: the errors are too small, and the verdicts reading them decide too easily). "
           "Entries with no error (counts, deterministic quantities) are left out. Entries of one claim share "
           "data (nested prompt lengths, one fit), so the RMS scatters more than for independent entries. Two "
           "replications cannot show an error that fails only in rare draws: where one task block can carry "
           "most of the mean square (C1/C2 beyond `lambda_max(M) = 1/4`, docs/c1c2_uncertainty.md) both "
           "replications usually lack such a block and agree; an RMS near 1 does not clear those errors.")


def page(pairs: list[tuple[str, str, str, str]], preamble: str = "") -> str:
    """The calibration page: a summary table over the claims, then one section per claim
    (``pairs``: ``(claim, path1, path2, note)``)."""
    parts, summ = [], []
    for claim, p1, p2, note in pairs:
        text, s = section(claim, p1, p2, note)
        parts.append(text)
        summ.append(s)
    head = ["# Calibration: two independent replications side by side", ""]
    head += [preamble, ""] if preamble else []
    head += [READING, ""]
    head += ["| claim | entries | RMS of z | largest abs z | PASS <-> FAIL flips | reading |", "|---|---|---|---|---|---|"]
    head += [f"| {s['claim']} | {s['n']} | {_g(s['rms'])} | {_g(s['max_abs'])} | "
             f"{', '.join(s['flips']) or 'none'} | {s['reading']} |" for s in summ]
    return "\n".join(head) + "\n\n" + "\n".join(parts)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m softlin.calibration", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", nargs=3, action="append", required=True, metavar=("CLAIM", "FILE1", "FILE2"),
                    help="a claim and the verdict.json / verdict.md of its two replications")
    ap.add_argument("--note", nargs=2, action="append", default=[], metavar=("CLAIM", "TEXT"),
                    help="what the two replications are (seeds, blocks), printed under the claim")
    ap.add_argument("--preamble", default="", help="a paragraph under the title (how the page was made)")
    ap.add_argument("-o", "--output", help="write the page here (default: print it)")
    args = ap.parse_args(argv)
    for _, f1, f2 in args.pair:
        for f in (f1, f2):
            if not Path(f).is_file():
                ap.error(f"no such file: {f}")
    notes = dict(args.note)
    text = page([(c, f1, f2, notes.get(c, "")) for c, f1, f2 in args.pair], args.preamble)
    if args.output:
        from .io import write_text
        write_text(args.output, text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
