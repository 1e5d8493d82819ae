"""The family-wide status (docs/decision_rule.md): Holm's step-down procedure over the paper's
criteria of every claim as one family, so that the chance of any wrong PASS or FAIL among them
stays below the rule's per-test level ``alpha = 1 - level(z)`` (4.55 % at ``z = 2``).

Each criterion gets one p-value for its raw status (:func:`criterion_p`):

* PASS needs every test entry (main and precondition) to hold: intersection-union, so
  ``p_pass`` = the largest ``p_hold`` over the entries;
* FAIL needs one main entry to fail and every precondition to hold: Bonferroni over the ``N`` main
  entries that could fail, ``p_fail = max(min(1, N min p_fail), preconditions' p_pass)``;
* INCONCLUSIVE: ``p = 1`` (nothing to reject; it still counts in the family).

:func:`holm`: sort the ``m`` p-values, reject ``p_(i) <= alpha / (m - i + 1)`` (``i = 1 .. m``)
until the first that is not rejected; a raw PASS or FAIL that Holm does not reject is
INCONCLUSIVE in the family-wide status (:func:`family_status`).  Consistency checks are no part of
the family; negative controls (``role: control``) are.
"""

from __future__ import annotations


def criterion_p(main: list[dict], pre: list[dict], status: str) -> dict:
    """``{p_pass, p_fail, p}`` of one criterion from its checked tests (``p_hold``, ``p_fail``,
    ``n_entries`` of :func:`softlin.verdict.check`); ``p`` is the one for ``status``."""
    pre_p = max((t["p_hold"] for t in pre), default=0.0)
    p_pass = max([t["p_hold"] for t in main] + [pre_p])
    n = sum(t["n_entries"] for t in main)
    p_fail = max(min(1.0, n * min(t["p_fail"] for t in main)), pre_p)
    p = p_pass if status == "PASS" else p_fail if status == "FAIL" else 1.0
    return dict(p_pass=float(p_pass), p_fail=float(p_fail), p=float(p))


def holm(ps: list[float], alpha: float) -> list[bool]:
    """Holm's step-down: which of the hypotheses with p-values ``ps`` are rejected at family-wise
    level ``alpha`` (sorted ascending, ``p_(i) <= alpha / (m - i + 1)`` until the first failure)."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: (ps[i], i))
    out = [False] * m
    for rank, i in enumerate(order):
        if ps[i] > alpha / (m - rank):
            break
        out[i] = True
    return out


def family_status(verdicts: list[dict], alpha: float) -> list[dict]:
    """The family-wide status of every criterion in ``verdicts`` (one family, in order): rows
    ``{id, raw, family, p, holm_level}`` (``holm_level``: the level ``alpha / (m - rank)`` its
    p-value met or missed in the step-down order)."""
    ps = [v["p"] for v in verdicts]
    rejected = holm(ps, alpha)
    order = sorted(range(len(ps)), key=lambda i: (ps[i], i))
    level = {i: alpha / (len(ps) - rank) for rank, i in enumerate(order)}
    return [dict(id=v["id"], raw=v["status"], p=v["p"], holm_level=level[i],
                 family=v["status"] if (rejected[i] and v["status"] != "INCONCLUSIVE") else "INCONCLUSIVE")
            for i, v in enumerate(verdicts)]
