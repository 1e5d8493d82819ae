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
from .. import importance
from ..records import Spec
from . import curves

EXPONENT = "exponent"  # the design entry (and gaps file) of the exponent sweep


class OutputGaps(NamedTuple):
    """Per task block, probe and L: the mean squared output gap msq (n_blocks, n_probes, n_L), at the lengths L (n_L,);
    per probe the query proposal's tilt (n_probes,) (0: plain queries), per block and probe the sums of the weighted
    terms and of the weights at L_max, diag (n_blocks, n_probes, 2, 3) (:func:`softlin.importance.sums`)."""

    msq: np.ndarray
    L: np.ndarray
    tilt: np.ndarray
    diag: np.ndarray


def output_gaps_like(n_blocks: int, n_probes: int, Ls) -> OutputGaps:
    """The template of :func:`measure`'s record (:mod:`softlin.records`): ``n_blocks`` blocks,
    ``n_probes`` probes (the setting's in ``probes.json``), the prompt lengths ``Ls``."""
    n_L, nb, npr = len(Ls), int(n_blocks), int(n_probes)
    return OutputGaps(Spec((nb, npr, n_L), np.float64), Spec((n_L,), np.int64), Spec((npr,), np.float64),
                      Spec((nb, npr, 2, 3), np.float64))


def design(settings: list[dict], probes_cfg: dict, exponent: dict | None = None) -> dict:
    """Probe parameters of every setting: ``{name: {setting..., probes: [...]}}``; with ``exponent``
    (``setting``, ``lambda``) also the exponent sweep ``EXPONENT``: ``theta*`` of that setting
    scaled to each ``lambda_max(M)`` (probes of kind ``sweep``, outside C1a-C1f's probes)."""
    out = {}
    for st in settings:
        cfg = {**probes_cfg, **(st.get("probes") or {})}
        out[st["name"]] = dict(st, probes=conc.probe_design(
            np.asarray(st["sigma"]), eq9=cfg["eq9"], star=cfg["star"],
            scaled_lambda=cfg["scaled_lambda"]))
    if exponent and exponent.get("lambda"):
        base = next((st for st in settings if st["name"] == exponent["setting"]), None)
        if base is None or base.get("token_kind", "gauss") != "gauss":
            raise ValueError(f"c1.exponent.setting must name a Gaussian C1 setting, got {exponent['setting']!r}")
        probes = conc.probe_design(np.asarray(base["sigma"]), eq9=False, star=False,
                                   scaled_lambda=exponent["lambda"])
        for pr, lam in zip(probes, exponent["lambda"]):
            pr.update(kind="sweep", name=f"lam{lam:g}")
        out[EXPONENT] = dict(base, name=EXPONENT, probes=probes)
    return out


def measure(setting: dict, Ls, seed: int, n_blocks: int, n_pairs: int, n_query: int,
            progress=print, estimator: str = "blocks") -> OutputGaps:
    """Per-block mean squared output gaps of every probe of ``setting`` at ``Ls`` (:class:`OutputGaps`),
    the queries plain (``blocks``) or from S5's proposal per probe (``importance``, :mod:`softlin.importance`)."""
    tilts = np.array([importance.probe_tilt(pr, setting["sigma"], setting["token_kind"], max(Ls), estimator)
                      for pr in setting["probes"]])
    msq, diag = [], []
    for b, tasks in enumerate(conc.task_blocks(seed, n_blocks, setting["sigma"], n_pairs, n_query,
                                               max(Ls), setting["token_kind"])):
        m, dg = conc.weighted_output_sq_gaps(setting["probes"], tasks, Ls, tilts)  # computed, not dispatched
        msq.append(m)
        diag.append(dg)
        progress(f"block {b + 1}/{n_blocks} done")
    return OutputGaps(np.asarray(msq), np.asarray(Ls, dtype=np.int64), tilts, np.asarray(diag))


def summarize(setting: dict, msq, Ls, z: float, tilt=None, diag=None) -> tuple[list[dict], dict]:
    """Rows (setting, probe, L, rms, se) and per-probe fits (slope vs -beta), every statistic with
    its delete-one jackknife standard error over the task blocks (:mod:`.curves`); ``z`` counts
    the increases larger than ``z`` standard errors; the estimator's diagnostics per probe
    (:func:`curves.estimator_diagnostics`) from the record's ``tilt`` and ``diag``."""
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
        dg = curves.estimator_diagnostics(msq[:, i, -1], 0.0 if tilt is None else float(tilt[i]),
                                          None if diag is None else np.asarray(diag)[:, i],
                                          pr["lambda_max"] if setting["token_kind"] == "gauss" else 0.0)
        f = curves.fit(val, se, i, Ls, z, beta=pr["beta"], df=msq.shape[0] - 1, se_lower_bound=dg["se_lower_bound"])
        f.update(setting=setting["name"], token_kind=setting["token_kind"], probe=pr["name"],
                 kind=pr["kind"], s=pr["s"], lambda_max=pr["lambda_max"], beta=pr["beta"],
                 pred_slope=-pr["beta"], below_threshold=bool(pr["lambda_max"] < 0.5))
        f.update(dg)
        fits[f"{setting['name']}/{pr['name']}"] = f
    return rows, fits


def aggregate(fits: dict) -> dict:
    """What the criteria read, over the Gaussian probes (all, below and above the threshold; not the
    exponent sweep's, :mod:`.exponent`): per
    probe mappings ``{setting/probe: value}`` with ``{setting/probe: se}`` beside them (the verdict
    tests every probe with its own error)."""
    gauss = {k: f for k, f in fits.items() if f["token_kind"] == "gauss" and f["kind"] != "sweep"}
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
