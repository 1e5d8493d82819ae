"""The Student-t law behind every interval of the decision rule (docs/decision_rule.md).

The config's ``decision.z`` names a two-sided *level*, the one the normal law gives ``z``
(:func:`level`: ``z = 2`` -> ``P(|Z| < 2) = 95.45 %``).  A standard error from ``n`` independent
replicates has ``df = n - 1`` degrees of freedom, and its interval at that level is
``value +/- t_{df, (1 + level)/2} se`` (:func:`multiplier`), wider than ``z se`` when ``df`` is
small (``df = 4``: 3.0 s.e. at ``z = 2``); ``df = inf`` gives back ``z``; an exact value has
multiplier 0.  :func:`p_two_sided` is the matching two-sided p-value of a distance in standard
errors (the interval excludes a point exactly when its p-value is below ``1 - level``).
"""

from __future__ import annotations

import math

from scipy import special, stats


def level(z: float) -> float:
    """Two-sided level of ``+/- z`` under the normal law: ``P(|Z| < z) = erf(z / sqrt 2)``."""
    return float(special.erf(z / math.sqrt(2.0)))


def alpha(z: float) -> float:
    """The per-test error rate of the rule: ``1 - level(z)`` (``z = 2``: 0.0455)."""
    return float(special.erfc(z / math.sqrt(2.0)))


def check_df(df, what: str = "df") -> float:
    """``df`` as a float, > 0 (``inf`` allowed: a normal interval); ValueError naming ``what``."""
    if isinstance(df, bool) or not isinstance(df, (int, float)) or math.isnan(df) or df <= 0:
        raise ValueError(f"{what} = {df!r}: degrees of freedom must be a number > 0")
    return float(df)


def multiplier(z: float, df) -> float:
    """Half-width in standard errors of the two-sided interval at level ``level(z)`` with ``df``
    degrees of freedom: ``t_{df}^{-1}((1 + level(z)) / 2)``; ``z`` itself for ``df = inf``; 0 at ``z = 0``."""
    df = check_df(df)
    if z == 0:
        return 0.0
    if math.isinf(df):
        return float(z)
    return float(stats.t.isf(alpha(z) / 2.0, df))


def p_two_sided(distance: float, df) -> float:
    """Two-sided p-value of ``distance`` standard errors under ``t(df)``: ``2 P(T > |distance|)``."""
    df = check_df(df)
    d = abs(float(distance))
    if math.isinf(d):
        return 0.0
    return float(2.0 * (stats.norm.sf(d) if math.isinf(df) else stats.t.sf(d, df)))
