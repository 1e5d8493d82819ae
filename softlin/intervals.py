"""One test on one entry (docs/decision_rule.md): the interval a value's standard error and degrees
of freedom give, its outcome (holds / fails / undecided) and the p-values behind it.

* :func:`decide`: a value ``x +/- m se`` (``m`` the multiplier, :func:`softlin.student.multiplier`)
  against a threshold; ``se`` None is an exact value (the interval is the point).
* :func:`decide_bounds`: the same on an interval ``[lo, hi]`` given directly;
* :func:`count_bounds`: a count of rises ("at most one increase") as an interval: at its
  favourable end the rises significantly above 0 (``d - m se > 0``), at its unfavourable end every
  rise not significantly below 0 (``d + m se > 0``), so noisier data pass less easily;
* :func:`entry_p` / :func:`count_p`: the two p-values of an entry (``p_hold``: the smallest level
  at which the test holds; ``p_fail``: at which it fails; 1 where the point estimate is on the
  other side), from the ``t(df)`` law: the per-test outcome at level ``1 - level(z)`` is exactly
  "p below that level", and :mod:`softlin.family` combines them over the criteria.
"""

from __future__ import annotations

import math

from . import student

OPS = ("<", "<=", ">", ">=", "==", "between", "outside")


def holds_at(op: str, x: float, v) -> bool:
    """Whether ``x op v`` (``between``/``outside``: ``v = [low, high]``, closed band)."""
    if op == "<":
        return x < v
    if op == "<=":
        return x <= v
    if op == ">":
        return x > v
    if op == ">=":
        return x >= v
    if op == "==":
        return x == v
    if op == "between":
        return v[0] <= x <= v[1]
    if op == "outside":
        return not v[0] <= x <= v[1]
    raise ValueError(f"unknown operator {op!r} (one of {', '.join(OPS)})")


def decide_bounds(op: str, threshold, lo: float, hi: float) -> tuple[str, str]:
    """The outcome on the interval ``[lo, hi]``: holds if the test holds at every point, fails if it
    fails at every point, else undecided (the tests are monotone, so the ends decide; a band by overlap)."""
    if op in ("between", "outside"):
        a, b = threshold
        inside_all = a <= lo and hi <= b          # the whole interval inside the band
        outside_all = hi < a or lo > b            # the whole interval outside it
        if op == "between":
            return ("holds", "inside") if inside_all else ("fails", "outside") if outside_all \
                else ("undecided", "straddles the band's edge")
        return ("holds", "outside") if outside_all else ("fails", "inside") if inside_all \
            else ("undecided", "straddles the band's edge")
    at_lo, at_hi = holds_at(op, lo, threshold), holds_at(op, hi, threshold)
    if at_lo and at_hi:
        return "holds", "at both ends of the interval"
    if not at_lo and not at_hi:
        return "fails", "at both ends of the interval"
    return "undecided", "the interval straddles the threshold"


def decide(op: str, threshold, x: float, se: float | None, m: float) -> tuple[str, str]:
    """One test on one number: ``(outcome, reason)`` on the interval ``x -/+ m se`` (``m`` the
    multiplier; ``se`` None: exact).  ``==`` on an interval of positive width never holds."""
    if op not in OPS:
        raise ValueError(f"unknown operator {op!r} (one of {', '.join(OPS)})")
    if math.isnan(x) or (se is not None and math.isnan(se)):
        return "undecided", "NaN value" if math.isnan(x) else "NaN standard error"
    if se is not None and se < 0:
        raise ValueError(f"negative standard error {se!r}")
    w = 0.0 if se is None else m * se
    if op == "==" and w > 0:  # an interval of positive width never equals a point
        return ("fails", f"|x - {threshold}| > t se") if abs(x - threshold) > w else \
            ("undecided", "equality cannot be established from a value with an error")
    return decide_bounds(op, threshold, x - w, x + w)


def count_bounds(rises, rises_se, m: float) -> tuple[float, float]:
    """``(lo, hi)`` of a count of rises: ``lo`` = rises with ``d - m se > 0`` (significantly up),
    ``hi`` = rises with ``d + m se > 0`` (not significantly down).  NaN if any input is NaN."""
    if any(math.isnan(d) or math.isnan(s) for d, s in zip(rises, rises_se)):
        return float("nan"), float("nan")
    return (float(sum(d - m * s > 0 for d, s in zip(rises, rises_se))),
            float(sum(d + m * s > 0 for d, s in zip(rises, rises_se))))


P_UNDERFLOW = 5e-324   # the smallest positive double: a sampled value's p that underflowed (exact values' p is 0)


def _p_of(distance: float, se: float, df) -> float:
    if se == 0:
        return 0.0 if distance != 0 else 1.0
    return max(student.p_two_sided(distance / se, df), P_UNDERFLOW)


def entry_p(op: str, threshold, x: float, se: float, df) -> tuple[float, float]:
    """``(p_hold, p_fail)`` of one value with a standard error: the two-sided ``t(df)`` p-value of
    its distance to the nearest threshold edge, on the side its point estimate lies (1 on the
    other); ``==`` never holds (``p_hold = 1``)."""
    if math.isnan(x) or math.isnan(se):
        return 1.0, 1.0
    edges = threshold if op in ("between", "outside") else [threshold]
    p = _p_of(min(abs(x - e) for e in edges), se, df)
    if op == "==":
        return 1.0, p
    return (p, 1.0) if holds_at(op, x, threshold) else (1.0, p)


def count_p(op: str, threshold, rises, rises_se, df) -> tuple[float, float]:
    """``(p_hold, p_fail)`` of a count of rises: ``p_hold`` the smallest level at which the count of
    rises not significantly down satisfies the test, ``p_fail`` the smallest at which the count of
    rises significantly up violates it (order statistics of the rises' two-sided p-values)."""
    if any(math.isnan(d) or math.isnan(s) for d, s in zip(rises, rises_se)):
        return 1.0, 1.0
    p = [_p_of(d, s, df) for d, s in zip(rises, rises_se)]
    up = sorted(q for d, q in zip(rises, p) if d > 0)
    down = sorted(q for d, q in zip(rises, p) if d <= 0)
    p_hold = next((a for a in [0.0] + down if holds_at(op, len(up) + sum(q > a for q in down), threshold)), 1.0)
    p_fail = next((a for a in [0.0] + up if not holds_at(op, sum(q <= a for q in up), threshold)), 1.0)
    return p_hold, p_fail
