"""C1 — output concentration (Lemma 2.1, Prop. 3.1): RMS gap between softmax(L) and linear(inf).

Per setting (covariance, token law): probe parameters (:func:`softlin.concentration.probe_design`),
independent task blocks, nested prompts ``L = 2^a .. 2^b``; per block and L the mean squared
output gap over its tasks and queries; pooled RMS; slope over the upper half of the L range against
the predicted ``-beta`` (S5); every statistic with its delete-one jackknife standard error over the
task blocks (:mod:`.curves`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import concentration as conc
from ..records import Spec
from . import curves

# the block estimator's jackknife error is a lower bound where a block's mean squared gap has no
# finite variance, Gaussian tokens at lambda_max(M) >= 1/4 (docs/c1c2_uncertainty.md; bounded
# Rademacher scores have every moment): no PASS is read off it there
SE_LOWER_BOUND_LAMBDA = 0.25


class OutputGaps(NamedTuple):
    """Per task block, probe and L: the mean squared output gap msq (n_blocks, n_probes, n_L), at the lengths L (n_L,)."""

    msq: np.ndarray
    L: np.ndarray


def output_gaps_like(n_blocks: int, n_probes: int, Ls) -> OutputGaps:
    """The template of :func:`measure`'s record (:mod:`softlin.records`): ``n_blocks`` blocks,
    ``n_probes`` probes (the setting's in ``probes.json``), the prompt lengths ``Ls``."""
    n_L = len(Ls)
    return OutputGaps(Spec((int(n_blocks), int(n_probes), n_L), np.float64), Spec((n_L,), np.int64))


def design(settings: list[dict], probes_cfg: dict) -> dict:
    """Probe parameters of every setting: ``{name: {setting..., probes: [...]}}``."""
    out = {}
    for st in settings:
        cfg = {**probes_cfg, **(st.get("probes") or {})}
        out[st["name"]] = dict(st, probes=conc.probe_design(
            np.asarray(st["sigma"]), eq9=cfg["eq9"], star=cfg["star"],
            scaled_lambda=cfg["scaled_lambda"]))
    return out


def measure(setting: dict, Ls, seed: int, n_blocks: int, n_pairs: int, n_query: int,
            progress=print) -> OutputGaps:
    """Per-block mean squared output gaps of every probe of ``setting`` at ``Ls`` (:class:`OutputGaps`)."""
    msq = []
    for b, tasks in enumerate(conc.task_blocks(seed, n_blocks, setting["sigma"], n_pairs, n_query,
                                               max(Ls), setting["token_kind"])):
        msq.append(np.asarray(conc.output_sq_gaps(setting["probes"], tasks, Ls)))  # computed, not dispatched
        progress(f"block {b + 1}/{n_blocks} done")
    return OutputGaps(np.asarray(msq), np.asarray(Ls, dtype=np.int64))


def summarize(setting: dict, msq, Ls, z: float) -> tuple[list[dict], dict]:
    """Rows (setting, probe, L, rms, se) and per-probe fits (slope vs -beta), every statistic with
    its delete-one jackknife standard error over the task blocks (:mod:`.curves`); ``z`` counts
    the increases larger than ``z`` standard errors."""
    msq = np.asarray(msq)
    val, se = curves.jackknife_shape(Ls, msq, curves.rms)  # arrays (n_probes, ...)
    rows, fits = [], {}
    for i, pr in enumerate(setting["probes"]):
        rms, rms_se = curves.rows(val, se, i)
        for j, L in enumerate(Ls):
            rows.append(dict(setting=setting["name"], token_kind=setting["token_kind"], probe=pr["name"],
                             kind=pr["kind"], s=pr["s"], lambda_max=pr["lambda_max"], beta=pr["beta"],
                             L=int(L), rms_gap=float(rms[j]), rms_gap_se=float(rms_se[j]),
                             n_blocks=int(msq.shape[0])))
        f = curves.fit(val, se, i, Ls, z, beta=pr["beta"], df=msq.shape[0] - 1,
                       se_lower_bound=setting["token_kind"] == "gauss" and pr["lambda_max"] >= SE_LOWER_BOUND_LAMBDA)
        f.update(setting=setting["name"], token_kind=setting["token_kind"], probe=pr["name"],
                 kind=pr["kind"], s=pr["s"], lambda_max=pr["lambda_max"], beta=pr["beta"],
                 pred_slope=-pr["beta"], below_threshold=bool(pr["lambda_max"] < 0.5))
        fits[f"{setting['name']}/{pr['name']}"] = f
    return rows, fits


def aggregate(fits: dict) -> dict:
    """What the criteria read, over the Gaussian probes (all, below and above the threshold): per
    probe mappings ``{setting/probe: value}`` with ``{setting/probe: se}`` beside them (the verdict
    tests every probe with its own error)."""
    gauss = {k: f for k, f in fits.items() if f["token_kind"] == "gauss"}
    below = {k: f for k, f in gauss.items() if f["below_threshold"]}
    above = {k: f for k, f in gauss.items() if not f["below_threshold"]}
    out = {"gauss_all": dict(n=len(gauss)), "gauss_below": dict(n=len(below)),
           "gauss_above": dict(n=len(above))}
    curves.put_mapping(out["gauss_all"], "n_increases", gauss, "n_increases")
    curves.put_mapping(out["gauss_all"], "ratio", gauss, "ratio")
    for name, group in (("gauss_below", below), ("gauss_above", above)):
        if group:
            curves.put_mapping(out[name], "dev", group, "slope_plus_beta")
            curves.put_mapping(out[name], "slope", group, "slope")
            curves.put_mapping(out[name], "rel_se_max", group, "rel_se_max")
    return out
