"""C5 per-run convergence: does a run's logged training loss still fall at the end, and does its test
risk reach its reference (the best member of the softmax family, or linear's optimum) within a
tolerance?  Decided at ``z`` standard errors (:func:`softlin.verdict.decide`)."""

from __future__ import annotations

import numpy as np

from .. import metrics, optim


def plateau_drop(loss, frac: float, x=None) -> float:
    """Relative decrease of the logged loss over the last ``frac`` of training, from an OLS line:
    ``-slope * extent / mean`` (positive: still falling).  ``x``: the training time of each log point
    (default: its index, so the extent is ``frac`` x the number of points); the window is the points in
    the last ``frac`` of ``x``'s range (at least 3), the extent ``frac x (x[-1] - x[0] + x[1] - x[0])``."""
    return end_drop(loss, frac, x)[0]


def _window(loss, frac: float, x=None):
    loss = np.asarray(loss, dtype=float)
    x = np.arange(1, loss.size + 1, dtype=float) if x is None else np.asarray(x, dtype=float)
    total = x[-1] - x[0] + (x[1] - x[0])          # the first point stands for one window of time
    keep = x > x[-1] - frac * total + 1e-12 * abs(total)
    if keep.sum() < 3:
        keep = np.arange(loss.size) >= loss.size - 3
    return x[keep], loss[keep], frac * total


def end_drop(loss, frac: float, x=None, se: bool = False):
    """(drop, se) of :func:`plateau_drop`; ``se`` (if asked; else None): delete-one jackknife over the
    window's log points, which are independent (each averages its own ``log_every`` batches), so the
    error is the noise of the logged loss itself."""
    xw, yw, extent = _window(loss, frac, x)

    def drop(arrs):
        xx, yy = arrs
        return float(-np.polyfit(xx, yy, 1)[0] * extent / yy.mean())

    value = drop((xw, yw))
    return value, (metrics.jackknife(drop, (xw, yw))[1] if se else None)


def learning_time(opt: optim.Optimizer, loss_step) -> np.ndarray:
    """Cumulative learning rate (the sum of lr_t over the steps before) at the middle of each logging
    window (``loss_step``: the step count at the end of each window, evenly spaced): the schedule's
    own clock, in which a window_frac of training is a window_frac of what the optimiser can still move."""
    loss_step = np.asarray(loss_step, dtype=np.int64)
    t = np.arange(int(loss_step[-1]), dtype=float)
    cum = np.cumsum(np.broadcast_to(optim.learning_rate(opt, t, np), t.shape))
    every = int(loss_step[1] - loss_step[0]) if loss_step.size > 1 else int(loss_step[0])
    return np.array([cum[max(0, s - every):s].mean() for s in loss_step])


def run_convergence(loss, loss_step, conv: dict, risk: float | None = None,
                    reference: float | None = None, z: float = 0.0,
                    over_reference: tuple | None = None, x_learning=None) -> dict:
    """Per-run convergence from the logged training loss and the run's test risk.

    ``initial``: the first logged loss; ``escape_step``: the first logged step at which the loss is
    below ``escape_frac`` x initial (None: never; a diagnostic); ``rel_drop_end`` (+ ``_se``):
    :func:`end_drop` over the last ``window_frac`` of the log points; ``final``: the mean loss over
    that window.  ``reference``: the test risk of a member of the run's model class (linear: the
    class optimum at its L; softmax: the best member of the reference family), which a converged run
    does not exceed by more than ``reference_tol`` (relative), compared with ``risk`` (the final
    training loss if None).

    Two tests, each decided by the project's rule at ``z`` (``z = 0``: the point estimate; the
    multiplier the Student quantile at the errors' degrees of freedom), holds /
    fails / undecided: *within reference*, ``risk - (1 + tol) reference <= 0`` (``over_reference``:
    its value, paired standard error over the test prompts and degrees of freedom; else exact), the test of convergence;
    *flat*, ``drop < max_rel_drop``, a guard against a run still falling, which counts only where it
    fails (the data show a fall of more than max_rel_drop).  ``status``: unconverged if either test
    fails, converged if within reference holds (and flat does not fail), else undecided.
    ``x_learning``: the log points' training time in the schedule's own clock (:func:`learning_time`),
    for the diagnostic ``rel_drop_learning`` (+ ``_se``): the same drop over the last window_frac of
    the learning (not part of the status; see docs/c5_decisions.md, issue 24)."""
    from .. import verdict

    loss = np.asarray(loss, dtype=float)
    initial = float(loss[0])
    below = np.nonzero(loss < conv["escape_frac"] * initial)[0]
    escape = int(loss_step[below[0]]) if below.size else None
    drop, drop_se = end_drop(loss, conv["window_frac"], se=True)
    _, yw, _ = _window(loss, conv["window_frac"])
    out = {"initial": initial, "final": float(yw.mean()), "escape_step": escape, "rel_drop_end": drop,
           "rel_drop_end_se": drop_se, "n_window": int(yw.size)}
    if x_learning is not None:
        out["rel_drop_learning"], out["rel_drop_learning_se"] = end_drop(loss, conv["window_frac"], x_learning, se=True)
    from .. import student
    out["rel_drop_end_df"] = int(yw.size) - 1   # the jackknife over the window's log points
    flat = verdict.decide("<", conv["max_rel_drop"], drop, drop_se,
                          student.multiplier(z, out["rel_drop_end_df"]) if z > 0 else 0.0)[0]
    out["flat"] = flat
    within = "holds"
    if reference is not None:
        r = out["final"] if risk is None else float(risk)
        out.update(reference=float(reference), risk=r, risk_over_reference=r / reference)
        v, se, df = over_reference if over_reference is not None else (r - (1 + conv["reference_tol"]) * reference, None, None)
        out["risk_minus_tol_reference"], out["risk_minus_tol_reference_se"] = float(v), se
        if df is not None:
            out["risk_minus_tol_reference_df"] = int(df)
        m = student.multiplier(z, df) if (z > 0 and se is not None) else 0.0
        within = verdict.decide("<=", 0.0, float(v), se, m)[0]
        out["within_reference"] = within
    out["status"] = ("unconverged" if "fails" in (flat, within) else "converged" if within == "holds"
                     else "undecided")
    out["converged"] = out["status"] == "converged"
    return out


def convergence_summary(runs: dict) -> dict:
    """Counts over per-run :func:`run_convergence` entries (``n_unconverged``: runs not shown
    converged, unconverged or undecided; counts are exact functions of the data and z)."""
    st = {k: r["status"] for k, r in runs.items()}
    bad = sorted(k for k, s in st.items() if s == "unconverged")
    und = sorted(k for k, s in st.items() if s == "undecided")
    drops = {k: r["rel_drop_end"] for k, r in runs.items()}
    flat_und = sorted(k for k, r in runs.items() if r["flat"] == "undecided")
    # a NaN (a diverged run, a NaN risk) makes every count and maximum over the runs NaN: a count
    # that skips it would read as a clean result
    nan_run = any(not np.isfinite(r["rel_drop_end"]) or not np.isfinite(r.get("risk", 0.0))
                  for r in runs.values())

    def count(n):
        return float("nan") if nan_run else n
    out = {"runs": runs, "n_runs": len(runs), "n_failed": count(len(bad)), "n_undecided": count(len(und)),
           "n_unconverged": count(len(bad) + len(und)), "unconverged": bad, "undecided": und,
           "n_flat_undecided": count(len(flat_und)), "flat_undecided": flat_und,
           "n_never_escaped": count(sum(r["escape_step"] is None for r in runs.values())),
           "rel_drop_end_max": float(np.max(list(drops.values()))),
           "worst_run": max(drops, key=lambda k: np.inf if np.isnan(drops[k]) else drops[k])}
    for k in ("n_runs", "n_failed", "n_undecided", "n_unconverged", "n_never_escaped", "n_flat_undecided"):
        out[f"{k}_se"] = metrics.EXACT
    return out
