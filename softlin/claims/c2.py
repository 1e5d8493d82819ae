"""C2 — gradient concentration (Prop. 3.4) and its stability along training (Sec. 4).

``||grad R_L(theta) - grad R_inf(theta)||`` on the same tasks (U and v parts separately):

* at the C1 probes and at a threshold sweep (``A`` of ``theta*`` scaled so that ``lambda_max(M)``
  crosses 1/2): the per-query L2 gap ``sqrt(E ||grad l_L - grad l_inf||^2)`` (``l`` the loss of
  one prompt and query; what Prop. 3.4 bounds), with standard errors over independent task blocks;
  its expectation does not depend on the block size.  (The former measure, the RMS over blocks of
  the block-mean gap, mixed an O(1/L) bias with a fluctuation divided by the tasks per block, so
  its slope moved with ``n_pairs`` and ``n_query``; it is kept as the diagnostic ``blockrms_*``.)
* along C3's ``linear(inf)`` trajectories (max over the recorded steps: the seed log's "C2e"), the
  mean over C3's seeds with the seed-to-seed spread as its error: :mod:`.c2e`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import concentration as conc
from .. import importance, metrics
from ..params import split_flat
from ..planted import grad_gaps_plant, plant_probes
from ..records import Spec
from ..task_integral import grad_gaps_task_integral
from ..tasks import check_sigma
from . import curves
from .c2e import n_flat, trajectory_fit, trajectory_rows

PARTS = ("U", "v")


class GradientGaps(NamedTuple):
    """Per task block, probe and L: mean squared per-query gaps msq_U, msq_v (n_blocks, n_probes, n_L) and the block-mean
    gradient difference diff (n_blocks, n_probes, n_L, K, K = (d+1)^2 + d+1); the lengths L (n_L,); per probe the query
    proposal's tilt (n_probes,); per block and probe the sums of the weighted U, v terms and of the weights at L_max,
    diag (n_blocks, n_probes, 3, 3) (:func:`softlin.importance.sums`)."""

    msq_U: np.ndarray
    msq_v: np.ndarray
    diff: np.ndarray
    L: np.ndarray
    tilt: np.ndarray
    diag: np.ndarray


def gradient_gaps_like(d: int, n_blocks: int, n_probes: int, Ls) -> GradientGaps:
    """The template of :func:`measure`'s record (:mod:`softlin.records`): ``d``-dimensional tasks,
    ``n_blocks`` blocks, ``n_probes`` probes (:func:`probes_of`), the prompt lengths ``Ls``."""
    msq = Spec((int(n_blocks), int(n_probes), len(Ls)), np.float64)
    return GradientGaps(msq, msq, Spec(msq.shape + (n_flat(d),), np.float64), Spec((len(Ls),), np.int64),
                        Spec((int(n_probes),), np.float64), Spec((int(n_blocks), int(n_probes), 3, 3), np.float64))


def probes_of(setting: dict, sweep) -> list[dict]:
    """The probes C2 measures in one setting: C1's (``setting["probes"]``), then the threshold sweep
    at the ``lambda_max`` targets ``sweep`` (empty outside the sweep's settings)."""
    return setting["probes"] + sweep_probes(np.asarray(setting["sigma"]), sweep)


def sweep_probes(sigma, lambdas, label: str = "sweep") -> list[dict]:
    """``U = blockdiag(s A*, 0)``, ``v = v*``, ``s`` such that ``lambda_max(M) = target`` (M scales as s^2)."""
    s = check_sigma(sigma)
    d = s.shape[0]
    star, scales = conc.star_scales(s, lambdas)
    out = []
    for target, scale in zip(lambdas, scales):
        U = scale * star.U
        lam, beta = conc.lambda_beta(U[:d, :d], s)
        out.append(dict(name=f"{label}_lam{target:g}", kind="sweep", s=scale, U=U.tolist(),
                        v=star.v.tolist(), lambda_max=lam, beta=beta))
    return out


def measure(setting: dict, probes: list[dict], Ls, seed: int, n_blocks: int, n_pairs: int,
            n_query: int, progress=print, estimator: str = "blocks") -> GradientGaps:
    """Per block: mean squared per-query gradient gaps ``msq_U``, ``msq_v`` (n_blocks, n_probes, n_L)
    and the block-mean gradient differences ``diff`` (n_blocks, n_probes, n_L, (d+1)^2 + d+1), the
    queries plain (``blocks``) or from S5's proposal per probe (``importance``, :mod:`softlin.importance`), the
    task vector integrated out (``task_integral``) and the prompts' largest-score token planted (``plant``,
    :mod:`softlin.planted`)."""
    plist = [conc.probe_params(p) for p in probes]
    tilts = np.array([importance.probe_tilt(p, setting["sigma"], setting["token_kind"], max(Ls), estimator)
                      for p in probes])
    lambdas = [p["lambda_max"] for p in probes]
    msq_U, msq_v, diffs, diag = [], [], [], []
    for b, tasks in enumerate(conc.task_blocks(seed, n_blocks, setting["sigma"], n_pairs, n_query,
                                               max(Ls), setting["token_kind"])):
        if estimator == "plant":
            out = grad_gaps_plant(plist, tasks, Ls, tilts, True, seed=conc.block_seed(seed, b), lambdas=lambdas)
        elif estimator == "task_integral":
            out = grad_gaps_task_integral(plist, tasks, Ls, tilts, with_terms=True)
        else:
            out = conc.grad_gaps_per_query(plist, tasks, Ls, tilts, with_terms=True)
        # computed, not dispatched: the progress line after this block reports work done
        mu, mv, df, dg = (np.asarray(x) for x in out)
        msq_U.append(mu)
        msq_v.append(mv)
        diffs.append(df)
        diag.append(dg)
        progress(f"block {b + 1}/{n_blocks} done")
    return GradientGaps(np.asarray(msq_U), np.asarray(msq_v), np.asarray(diffs), np.asarray(Ls, dtype=np.int64),
                        tilts, np.asarray(diag))


def summarize(setting: dict, probes: list[dict], diff, Ls, n_boot: int, seed: int, msq=None,
              z: float = 2.0, tilt=None, diag=None, estimator: str | None = None):
    """Rows per (probe, L), fits per probe and part, and the sweep's shallowing per part.

    ``gap_U`` / ``gap_v``: the per-query L2 gradient gap ``sqrt(mean ||grad l_L - grad l_inf||^2)``
    over every task and query, from the per-block means ``msq = {"U": ..., "v": ...}``
    (n_blocks, n_probes, n_L) (the criteria use it); ``pooled_U`` / ``pooled_v``: the gap of the
    gradients pooled over every task, ``||mean_b Delta_b||`` (row s.e. by block bootstrap), the
    literal ``||grad R_L - grad R_inf||``; ``blockrms_U`` / ``blockrms_v``: the former measure, RMS
    over blocks of the block-mean gap ``sqrt(mean_b ||Delta_b||^2)`` (its slope depends on the block
    size; diagnostic only).  Every slope, ratio and difference carries its delete-one jackknife
    standard error over the task blocks (:mod:`.curves`); ``n_increases`` counts the rises larger
    than ``z`` standard errors.  ``shallowing`` (per part): slope at the sweep's largest lambda minus
    slope at its smallest, jackknifed jointly.  Per probe and part the estimator's diagnostics
    (:func:`curves.estimator_diagnostics`) from the record's ``tilt`` and ``diag``, under the name
    ``estimator`` where given (``task_integral``).
    """
    d = len(setting["sigma"])
    diff = np.asarray(diff)
    if msq is None:
        raise ValueError("summarize needs the per-query mean squared gaps msq (c2.measure's msq_U, msq_v)")
    parts = dict(zip(PARTS, split_flat(diff, d)))
    sweep = sorted((i for i, p in enumerate(probes) if p["kind"] == "sweep"), key=lambda i: probes[i]["lambda_max"])

    def stat(blocks):
        out = {}
        for k, m in zip(PARTS, blocks):
            sh = curves.shape(Ls, curves.rms(m))
            if len(sweep) >= 2:
                sh["shallowing"] = sh["slope"][sweep[-1]] - sh["slope"][sweep[0]]
            out[k] = sh
        return out

    val, se = metrics.jackknife(stat, tuple(np.asarray(msq[k]) for k in PARTS))
    pooled_jk = {k: curves.jackknife_shape_of_mean(Ls, x, lambda m: np.linalg.norm(m, axis=-1), l_axis=-2)
                 for k, x in parts.items()}
    blockrms_jk = {k: curves.jackknife_shape_of_mean(Ls, np.sum(x ** 2, axis=-1), np.sqrt) for k, x in parts.items()}
    pooled = {k: metrics.norm_over_blocks(x, n_boot, seed) for k, x in parts.items()}
    rows, fits = [], {}
    for i, pr in enumerate(probes):
        base = dict(setting=setting["name"], token_kind=setting["token_kind"], probe=pr["name"],
                    kind=pr["kind"], s=pr["s"], lambda_max=pr["lambda_max"], beta=pr["beta"])
        for j, L in enumerate(Ls):
            row = dict(base, L=int(L), n_blocks=int(diff.shape[0]))
            for k in PARTS:
                row.update({f"gap_{k}": float(val[k]["curve"][i, j]), f"gap_{k}_se": float(se[k]["curve"][i, j]),
                            f"pooled_{k}": float(pooled[k][0][i, j]),
                            f"pooled_{k}_se": float(pooled[k][1][i, j]),
                            f"blockrms_{k}": float(blockrms_jk[k][0]["curve"][i, j]),
                            f"blockrms_{k}_se": float(blockrms_jk[k][1]["curve"][i, j])})
            rows.append(row)
        f = dict(base, below_threshold=bool(pr["lambda_max"] < 0.5), pred_slope=-pr["beta"])
        df = int(diff.shape[0]) - 1   # the jackknife over the task blocks
        heavy = pr["lambda_max"] if setting["token_kind"] == "gauss" else 0.0
        for j, k in enumerate(PARTS):
            dg = None if diag is None else np.asarray(diag)[:, i][:, [j, 2]]
            dgn = curves.estimator_diagnostics(np.asarray(msq[k])[:, i, -1],
                                               0.0 if tilt is None else float(tilt[i]), dg, heavy, estimator)
            f[k] = curves.fit(val[k], se[k], i, Ls, z, beta=pr["beta"], df=df, se_lower_bound=dgn["se_lower_bound"])
            f[k].update(dgn)
            f[f"pooled_{k}"] = curves.fit(*pooled_jk[k], i, Ls, z, beta=pr["beta"], df=df)
            f[f"blockrms_{k}"] = curves.fit(*blockrms_jk[k], i, Ls, z, beta=pr["beta"], df=df)
        fits[f"{setting['name']}/{pr['name']}"] = f
    shallowing = {k: dict(shallowing=float(val[k]["shallowing"]), shallowing_se=float(se[k]["shallowing"]),
                          shallowing_df=int(diff.shape[0]) - 1)
                  for k in PARTS if "shallowing" in val[k]}
    return rows, fits, shallowing


def aggregate(fits: dict) -> dict:
    """What the criteria read, over the Gaussian C1 probes (not the sweep), per part: mappings
    ``{setting/probe: value}`` with ``{setting/probe: se}`` beside them (every probe tested with its
    own error)."""
    gauss = {k: f for k, f in fits.items() if f["token_kind"] == "gauss" and f["kind"] != "sweep"}
    out = {}
    for k in PARTS:
        part = {name: f[k] for name, f in gauss.items()}
        below = {name: f[k] for name, f in gauss.items() if f["below_threshold"]}
        above = {name: f[k] for name, f in gauss.items() if not f["below_threshold"]}
        o = dict(below=dict(n=len(below)), above=dict(n=len(above)))
        curves.put_mapping(o, "n_increases", part, "n_increases")
        curves.put_mapping(o, "ratio", part, "ratio")
        if below:
            curves.put_mapping(o["below"], "dev", below, "slope_plus_beta")
            curves.put_mapping(o["below"], "rel_se_max", below, "rel_se_max")
        if above:
            curves.put_mapping(o["above"], "dev", above, "slope_plus_beta")
            curves.put_mapping(o["above"], "slope", above, "slope")
        out[k] = o
    return out


def sweep_summary(fits: dict, setting: str, shallowing: dict) -> dict:
    """Measured slope against lambda_max(M) for one setting's sweep, with the prediction: per part
    the lists (for the figure), ``dev`` ``{probe: slope - pred}`` with its jackknife ``dev_se``, and
    ``shallowing`` (slope at the largest lambda minus at the smallest) with its jackknife se."""
    sw = sorted((f for f in fits.values() if f["setting"] == setting and f["kind"] == "sweep"),
                key=lambda f: f["lambda_max"])
    lam = np.array([f["lambda_max"] for f in sw])
    pred = np.array([f["pred_slope"] for f in sw])
    out = dict(lambda_max=lam.tolist(), pred_slope=pred.tolist())
    for k in PARTS:
        sl = np.array([f[k]["slope"] for f in sw])
        dev = sl - pred
        below = lam < 0.5
        o = dict(slope=sl.tolist(), slope_se=[f[k]["slope_se"] for f in sw],
                 slope_full=[f[k]["slope_full"] for f in sw],
                 dev_max_abs=float(np.abs(dev).max()),
                 dev_below_max_abs=float(np.abs(dev[below]).max()) if below.any() else float("nan"),
                 slope_above_min=float(sl[~below].min()) if (~below).any() else float("nan"))
        metrics.put(o, "dev", {f["probe"]: float(x) for f, x in zip(sw, dev)},
                    {f["probe"]: f[k]["slope_se"] for f in sw}, {f["probe"]: f[k]["slope_df"] for f in sw})
        o["dev_se_lower_bound"] = {f["probe"]: bool(f[k]["se_lower_bound"]) for f in sw}
        o.update(shallowing.get(k, dict(shallowing=float("nan"), shallowing_se=float("nan"), shallowing_df=1)))
        out[k] = o
    return out


def blocks_behind(protocol: dict, path: str, label) -> int:
    """The task blocks behind a C2 metric's entry: those of its setting (named by ``sweep.<setting>``,
    ``fits.<setting>/<probe>`` or an entry ``<setting>/<probe>``; ``protocol["n_blocks_by_setting"]``),
    the fewest of any setting where neither names one."""
    by = protocol.get("n_blocks_by_setting") or {}
    parts = path.split(".")
    name = (parts[1] if parts[0] == "sweep" and len(parts) > 1 else
            parts[1].split("/")[0] if parts[0] == "fits" and len(parts) > 1 else
            label.split("/")[0] if isinstance(label, str) and "/" in label else None)
    if name in by:
        return int(by[name])
    return int(min(by.values())) if by and name is None else int(protocol["n_blocks"])


# --------------------------------------------------------------------------- the metrics job
def summarize_all(design: dict, gaps: dict, trajectories: dict, sweep_settings, n_boot: int, seed: int,
                  seed_log_slope: float, protocol: dict, z: float = 2.0, progress=print) -> dict:
    """C2's metrics from every measured setting and trajectory.

    ``design``: the C1 probe design (``results/c1/probes.json``); ``gaps``: setting name -> (its
    probes (:func:`probes_of`), its :class:`GradientGaps`); ``trajectories``: C3 setting name -> {C3
    seed: its :class:`AlongTrajectory`}.
    Returns ``{"table": rows, "trajectory": rows, "metrics": dict}`` (the gap rows per probe and L,
    the max-over-steps rows per L: ``seed`` "mean" for the seed-mean curve with its seed-level error,
    then each seed's own with its prompt-sampling error; and fits, summary, sweep and trajectory fits).
    """
    rows, fits, shallow = [], {}, {}
    for name, (probes, g) in gaps.items():
        est = protocol.get("estimator")
        if est == "plant" and not len(plant_probes([p["lambda_max"] for p in probes], design[name]["token_kind"])):
            est = "task_integral"   # no planted components (bounded tokens, or lambda_max < 1/4): task_integral's numbers
        r, fi, shallow[name] = summarize(design[name], probes, g.diff, g.L, n_boot, seed, {"U": g.msq_U, "v": g.msq_v}, z,
                                         g.tilt, g.diag, est)
        rows += r
        fits.update(fi)
    sweep = {name: sweep_summary(fits, name, shallow[name]) for name in sweep_settings}
    traj, traj_rows = {}, []
    for name, alongs in trajectories.items():
        traj[name] = trajectory_fit(alongs, z, protocol.get("trajectory_n_prompts", 1))
        traj[name]["seed_log_slope"] = seed_log_slope
        traj_rows += trajectory_rows(name, alongs, traj[name])
        t = traj[name]
        progress(f"trajectory {name}: slope {t['full']['slope_full']:.3f} +- {t['full']['slope_full_se']:.3f} over seeds "
                 f"{t['seeds']} (seed log {seed_log_slope})")
    for k, f in fits.items():
        progress(f"{k}: lambda {f['lambda_max']:.3f} U {f['U']['slope']:.3f} +- {f['U']['slope_se']:.3f} "
                 f"v {f['v']['slope']:.3f} +- {f['v']['slope_se']:.3f} (pred {-f['beta']:.3f}); "
                 f"{f['U']['estimator']} t {f['U']['tilt']:.3f} share U {f['U']['share_max']:.2f} v {f['v']['share_max']:.2f}")
    return {"table": rows, "trajectory": traj_rows,
            "metrics": {"fits": fits, "summary": aggregate(fits), "sweep": sweep, "trajectory": traj,
                        "protocol": protocol}}
