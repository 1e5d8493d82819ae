"""C1 — output concentration (Lemma 2.1, Prop. 3.1): RMS gap between softmax(L) and linear(inf).

Per setting (covariance, token law): probe parameters (:func:`softlin.concentration.probe_design`),
independent task blocks, nested prompts ``L = 2^a .. 2^b``; per block and L the mean squared
output gap over its tasks and queries; pooled RMS with block standard errors; OLS slope over the
upper half of the L range against the predicted ``-beta`` (S5).
"""

from __future__ import annotations

import numpy as np

from .. import concentration as conc
from .. import metrics


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
            progress=print) -> dict:
    """Per-block mean squared output gaps ``msq`` (n_blocks, n_probes, n_L)."""
    msq = []
    for b, tasks in enumerate(conc.task_blocks(seed, n_blocks, setting["sigma"], n_pairs, n_query,
                                               max(Ls), setting["token_kind"])):
        msq.append(np.asarray(conc.output_sq_gaps(setting["probes"], tasks, Ls)))  # computed, not dispatched
        progress(f"block {b + 1}/{n_blocks} done")
    return dict(msq=np.asarray(msq), Ls=np.asarray(Ls),
                probe_names=np.asarray([p["name"] for p in setting["probes"]]))


def summarize(setting: dict, msq, Ls) -> tuple[list[dict], dict]:
    """Rows (setting, probe, L, rms, se) and per-probe fits (slope vs -beta)."""
    rms, se = metrics.rms_over_blocks(msq)  # (n_probes, n_L)
    rows, fits = [], {}
    for i, pr in enumerate(setting["probes"]):
        for j, L in enumerate(Ls):
            rows.append(dict(setting=setting["name"], token_kind=setting["token_kind"], probe=pr["name"],
                             kind=pr["kind"], s=pr["s"], lambda_max=pr["lambda_max"], beta=pr["beta"],
                             L=int(L), rms_gap=float(rms[i, j]), rms_gap_se=float(se[i, j]),
                             n_blocks=int(msq.shape[0])))
        f = metrics.curve_summary(Ls, rms[i], se[i])
        f.update(setting=setting["name"], token_kind=setting["token_kind"], probe=pr["name"],
                 kind=pr["kind"], s=pr["s"], lambda_max=pr["lambda_max"], beta=pr["beta"],
                 pred_slope=-pr["beta"], slope_plus_beta=f["slope"] + pr["beta"],
                 below_threshold=bool(pr["lambda_max"] < 0.5))
        fits[f"{setting['name']}/{pr['name']}"] = f
    return rows, fits


def _agg(fits, keys, fn):
    vals = [f[k] for f in fits for k in keys]
    return float(fn(vals)) if vals else float("nan")


def aggregate(fits: dict) -> dict:
    """Summaries the criteria read: over Gaussian probes (all, below and above the threshold)."""
    gauss = [f for f in fits.values() if f["token_kind"] == "gauss"]
    below = [f for f in gauss if f["below_threshold"]]
    above = [f for f in gauss if not f["below_threshold"]]
    return {
        "gauss_all": dict(n=len(gauss), max_n_increases=_agg(gauss, ["n_increases"], max),
                          max_ratio=_agg(gauss, ["ratio"], max)),
        "gauss_below": dict(n=len(below), dev_min=_agg(below, ["slope_plus_beta"], min),
                            dev_max=_agg(below, ["slope_plus_beta"], max),
                            rel_se_max=_agg(below, ["rel_se_max"], max)),
        "gauss_above": dict(n=len(above), slope_min=_agg(above, ["slope"], min),
                            slope_max=_agg(above, ["slope"], max),
                            dev_min=_agg(above, ["slope_plus_beta"], min),
                            dev_max=_agg(above, ["slope_plus_beta"], max),
                            rel_se_max=_agg(above, ["rel_se_max"], max)),
    }
