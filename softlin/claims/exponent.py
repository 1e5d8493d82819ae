"""C1's concentration exponent across the threshold (issue 31): a sweep of ``lambda_max(M)`` at one
setting (``theta*`` scaled, so ``M = lambda I``), the measured slope against ``-beta`` and against
the predicted finite-L band.

The prediction (not fitted): S5's capped model of the mean squared gap,
``m(L) = E[min(kappa, (exp(s) - 1) / L)]``, ``s = lambda chi^2_d`` (``M = lambda I``), whose RMS decays
as ``L^-beta`` only asymptotically (docs/maths.md#threshold); over the fitted L range its log-log
slope ``1/2 d log m / d log L`` is shallower near and beyond the threshold.  The cap ``kappa`` (the
saturated gap relative to the first-order term's scale) is not known: the band spans the slopes
for ``kappa`` in the config's range together with ``-beta``.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, stats

from .. import metrics
from . import curves


def capped_mean_square(lam: float, L: float, kappa: float, d: int) -> float:
    """``E[min(kappa, (exp(lam u) - 1) / L)]``, ``u ~ chi^2_d``, by quadrature (bulk below the cap, tail above)."""
    uc = np.log1p(kappa * L) / lam
    bulk = integrate.quad(lambda u: np.expm1(lam * u) / L * stats.chi2.pdf(u, d), 0, uc,
                          limit=400, epsabs=0, epsrel=1e-10)[0]
    return bulk + kappa * float(stats.chi2.sf(uc, d))


def predicted_slope(lam: float, Ls, kappa: float, d: int) -> float:
    """OLS slope of ``log10 sqrt(m(L))`` on ``log10 L`` over ``Ls`` (:func:`capped_mean_square`)."""
    m = [capped_mean_square(lam, float(L), kappa, d) for L in Ls]
    return float(curves.log_slopes(Ls, np.sqrt(m)))


def band(lam: float, Ls, kappas, d: int) -> tuple[float, float]:
    """The predicted interval of the fitted slope at ``lambda_max = lam``: the finite-L slopes for
    ``kappa`` in ``kappas`` together with ``-beta = -min(1/2, 1/(4 lam))``; (low, high)."""
    from symbolic.export.s5 import beta_fn

    vals = [predicted_slope(lam, Ls, k, d) for k in kappas] + [-beta_fn()(lam)]
    return min(vals), max(vals)


def summarize(setting: dict, fits: dict, msq, Ls, kappas) -> dict:
    """What C1g reads: per sweep probe ``{name: slope - low}`` and ``{name: slope - high}`` with the
    slope's jackknife se (and df, lower-bound flags), the bands, and ``shallowing`` (slope at the
    largest lambda minus at the smallest, jackknifed jointly over the task blocks)."""
    d = len(setting["sigma"])
    fit_L = np.asarray(Ls)[metrics.upper_half(Ls)]
    probes = sorted(range(len(setting["probes"])), key=lambda i: setting["probes"][i]["lambda_max"])
    out = dict(lambda_max=[], pred_slope=[], band_low=[], band_high=[], slope=[], slope_se=[], fit_L=fit_L.tolist())
    lo_fits, hi_fits = {}, {}
    for i in probes:
        pr = setting["probes"][i]
        f = fits[f"{setting['name']}/{pr['name']}"]
        lo, hi = band(pr["lambda_max"], fit_L, kappas, d)
        for k, v in (("lambda_max", pr["lambda_max"]), ("pred_slope", -pr["beta"]), ("band_low", lo),
                     ("band_high", hi), ("slope", f["slope"]), ("slope_se", f["slope_se"])):
            out[k].append(float(v))
        lo_fits[pr["name"]] = dict(f, above_low=f["slope"] - lo)
        hi_fits[pr["name"]] = dict(f, above_high=f["slope"] - hi)
        lo_fits[pr["name"]]["above_low_se"] = hi_fits[pr["name"]]["above_high_se"] = f["slope_se"]
        lo_fits[pr["name"]]["above_low_df"] = hi_fits[pr["name"]]["above_high_df"] = f["slope_df"]
        lo_fits[pr["name"]]["above_low_se_lower_bound"] = hi_fits[pr["name"]]["above_high_se_lower_bound"] = \
            bool(f.get("slope_se_lower_bound", False))
    curves.put_mapping(out, "above_low", lo_fits, "above_low")
    curves.put_mapping(out, "above_high", hi_fits, "above_high")
    first, last = probes[0], probes[-1]
    val, se = metrics.jackknife(lambda b: float(np.diff(curves.shape(Ls, curves.rms(b[:, [first, last]]))["slope"])[0]),
                                np.asarray(msq))
    metrics.put(out, "shallowing", val, se, int(np.asarray(msq).shape[0]) - 1)
    return out
