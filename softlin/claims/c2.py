"""C2 — gradient concentration (Prop. 3.4) and its stability along training (Sec. 4).

``||grad R_L(theta) - grad R_inf(theta)||`` on the same tasks (U and v parts separately):

* at the C1 probes and at a threshold sweep (``A`` of ``theta*`` scaled so that ``lambda_max(M)``
  crosses 1/2): the per-query L2 gap ``sqrt(E ||grad l_L - grad l_inf||^2)`` (``l`` the loss of
  one prompt and query; what Prop. 3.4 bounds), with standard errors over independent task blocks;
  its expectation does not depend on the block size.  (The former measure, the RMS over blocks of
  the block-mean gap, mixed an O(1/L) bias with a fluctuation divided by the tasks per block, so
  its slope moved with ``n_pairs`` and ``n_query``; it is kept as the diagnostic ``blockrms_*``.)
* along C3's ``linear(inf)`` trajectories (max over the recorded steps: the seed log's "C2e"), the
  mean over C3's seeds with the seed-to-seed spread as its error.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import concentration as conc
from .. import importance, metrics, train
from ..params import Params, split_flat
from ..planted import grad_gaps_plant, plant_probes
from ..records import Spec
from ..task_integral import grad_gaps_task_integral
from ..tasks import Tasks, check_sigma, redraw_prompts
from ..train import Trajectory
from . import curves

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


class Parts(NamedTuple):
    """One quantity for the ``U`` part, the ``v`` part and the ``full`` gradient."""

    U: np.ndarray
    v: np.ndarray
    full: np.ndarray


class AlongTrajectory(NamedTuple):
    """Along C3's linear(inf) run: step (n_rec,), L (n_L,), block_diff (n_blocks, n_rec, n_L, K), n_pairs (),
    per part (:class:`Parts`) the gap (n_rec, n_L) of all tasks, its max over the steps max_gap and argmax_step (n_L,)."""

    step: np.ndarray
    L: np.ndarray
    block_diff: np.ndarray
    n_pairs: np.ndarray
    gap: Parts
    max_gap: Parts
    argmax_step: Parts


def n_flat(d: int) -> int:
    """``K = (d+1)^2 + (d+1)``: the length of a flattened gradient (U, v) of ``d``-dimensional tasks."""
    return (d + 1) ** 2 + d + 1


def gradient_gaps_like(d: int, n_blocks: int, n_probes: int, Ls) -> GradientGaps:
    """The template of :func:`measure`'s record (:mod:`softlin.records`): ``d``-dimensional tasks,
    ``n_blocks`` blocks, ``n_probes`` probes (:func:`probes_of`), the prompt lengths ``Ls``."""
    msq = Spec((int(n_blocks), int(n_probes), len(Ls)), np.float64)
    return GradientGaps(msq, msq, Spec(msq.shape + (n_flat(d),), np.float64), Spec((len(Ls),), np.int64),
                        Spec((int(n_probes),), np.float64), Spec((int(n_blocks), int(n_probes), 3, 3), np.float64))


def along_like(cfg: dict) -> AlongTrajectory:
    """The template of :func:`along_trajectory`'s record from C3's ``d``, ``L``, ``steps``,
    ``record_every`` (its trajectory's recorded iterates) and C2's trajectory ``n_blocks`` and
    ``n_prompts`` (1 where absent)."""
    n_rec, n_L = train.trajectory_like(cfg["d"], cfg["steps"], cfg["record_every"]).step.shape[0], len(cfg["L"])
    f, i, g = Spec((n_L,), np.float64), Spec((n_L,), np.int64), Spec((n_rec, n_L), np.float64)
    units = int(cfg["n_blocks"]) * int(cfg.get("n_prompts", 1))
    block_diff = Spec((units, n_rec, n_L, n_flat(int(cfg["d"]))), np.float64)
    return AlongTrajectory(Spec((n_rec,), np.int64), i, block_diff, Spec((), np.int64), Parts(g, g, g),
                           Parts(f, f, f), Parts(i, i, i))


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


def pair_blocks(tasks, n_blocks: int) -> list:
    """``tasks`` split into ``n_blocks`` blocks of whole antithetic pairs (partners ``i`` and
    ``n_pairs + i`` share their tokens, so a pair is the unit of independence); the blocks are
    independent given ``w`` and the queries, and equal in size (``n_blocks`` must divide ``n_pairs``)."""
    n_pairs = tasks.n_pairs
    if n_blocks < 2 or n_pairs % n_blocks:
        raise ValueError(f"n_blocks = {n_blocks} must be >= 2 and divide the {n_pairs} antithetic pairs")
    per = n_pairs // n_blocks
    out = []
    for b in range(n_blocks):
        pairs = np.arange(b * per, (b + 1) * per)
        rows = np.concatenate([pairs, pairs + n_pairs])
        out.append(Tasks(x=tasks.x[rows], w=tasks.w[rows], xq=tasks.xq[rows], sigma=tasks.sigma,
                         token_kind=tasks.token_kind))
    return out


def along_trajectory(limit: Trajectory, tasks, Ls, n_blocks: int, progress=print, n_prompts: int = 1,
                     prompt_seed: int = 0) -> AlongTrajectory:
    """Gradient gaps (U, v, full) at every recorded iterate of the linear(inf) run ``limit``; max over steps.

    Computed on ``n_blocks`` blocks of C3's training pairs (:func:`pair_blocks`) for each of
    ``n_prompts`` prompt draws: the first C3's own prompts, draw ``r >= 1`` fresh covariates for
    every pair (:func:`softlin.tasks.redraw_prompts` with seed ``prompt_seed + r``; the same ``w``
    and queries).  ``block_diff`` (n_prompts n_blocks, n_rec, n_L, K), the gradient difference of
    each block and draw; the gap is the norm of their mean.  linear(inf) never sees the prompt tokens
    (its risk reads w and the queries), so given the trajectory the units' prompts are independent:
    the jackknife over them (:func:`trajectory_fit`) is the prompt-sampling error of the gaps along
    this trajectory."""
    rec, step = limit.params, limit.step
    plist = [Params(rec.U[t], rec.v[t]) for t in range(len(step))]
    block_diff = []
    for r in range(int(n_prompts)):
        draw = tasks if r == 0 else redraw_prompts(tasks, int(prompt_seed) + r)
        for b, blk in enumerate(pair_blocks(draw, n_blocks)):
            block_diff.append(np.asarray(conc.grad_gaps(plist, blk, Ls)))  # (n_rec, n_L, K), computed
            progress(f"prompt draw {r + 1}/{n_prompts}, block {b + 1}/{n_blocks}: {len(step)} recorded iterates x "
                     f"{len(Ls)} prompt lengths done")
    block_diff = np.asarray(block_diff)
    diff = block_diff.mean(axis=0)
    dU, dv = split_flat(diff, tasks.d)
    gap = Parts(np.linalg.norm(dU, axis=-1), np.linalg.norm(dv, axis=-1), np.linalg.norm(diff, axis=-1))
    return AlongTrajectory(np.asarray(step), np.asarray(Ls, dtype=np.int64), block_diff, np.asarray(tasks.n_pairs, np.int64),
                           gap, Parts(*(g.max(axis=0) for g in gap)), Parts(*(np.asarray(step)[g.argmax(axis=0)] for g in gap)))


def _max_gaps(diff, d: int) -> dict:
    """Max over the recorded steps of the gap norms (U, v, full) of a mean difference (n_rec, n_L, K)."""
    dU, dv = split_flat(diff, d)
    return {"U": np.linalg.norm(dU, axis=-1).max(axis=0), "v": np.linalg.norm(dv, axis=-1).max(axis=0),
            "full": np.linalg.norm(diff, axis=-1).max(axis=0)}


def _d_of(K: int) -> int:
    """``d`` from the flat gradient's length ``K = (d+1)^2 + (d+1)``."""
    return int(round((np.sqrt(4 * K + 1) - 1) / 2)) - 1


def prompt_fit(along: AlongTrajectory, z: float = 2.0, n_prompts: int = 1) -> dict:
    """One trajectory's fit: slopes of its max-over-steps gaps (full L range: the seed's C2e; upper
    half), ratios and rises, jackknifed over its blocks of training pairs and prompt draws
    (``n_prompts`` of them: :func:`along_trajectory`): the prompt-sampling error given this
    trajectory, which does not cover the trajectory's own variation with C3's training tasks."""
    bd, Ls = np.asarray(along.block_diff), along.L
    d = _d_of(bd.shape[-1])
    val, se = metrics.jackknife_of_mean(lambda m: {k: curves.shape(Ls, g) for k, g in _max_gaps(m, d).items()}, bd)
    out = dict(n_blocks=int(bd.shape[0]), n_pairs=int(along.n_pairs), n_prompts=int(n_prompts))
    for k in ("U", "v", "full"):
        out[k] = curves.fit(val[k], se[k], (), Ls, z, df=int(bd.shape[0]) - 1)
        out[k]["max"], out[k]["max_se"] = (x.tolist() for x in curves.rows(val[k], se[k], ()))
    return out


def seed_curves(alongs) -> dict:
    """Per part (U, v, full) the max-over-steps gap curves of several trajectories (n_seeds, n_L),
    each the norm of its units' mean gradient difference maximised over its recorded steps."""
    G = [_max_gaps(np.asarray(a.block_diff).mean(axis=0), _d_of(np.shape(a.block_diff)[-1])) for a in alongs]
    return {k: np.stack([g[k] for g in G]) for k in ("U", "v", "full")}


def trajectory_fit(alongs: dict, z: float = 2.0, n_prompts: int = 1) -> dict:
    """C2e across C3's seeds (``alongs``: seed -> :class:`AlongTrajectory`, one per seed, the same
    lengths): the mean over the seeds of their max-over-steps gap curves (:func:`seed_curves`), its
    slopes, ratios and rises jackknifed over the seeds (``n_seeds - 1`` degrees of freedom: the
    trajectory's variation with C3's training tasks and the prompt sampling both); beside it
    ``per_seed``, each seed's own fit with its prompt-sampling error (:func:`prompt_fit`)."""
    seeds = sorted(alongs)
    Ls = np.asarray(alongs[seeds[0]].L)
    if any(not np.array_equal(alongs[s].L, Ls) for s in seeds):
        raise ValueError("trajectory_fit: the seeds' records have different prompt lengths")
    G = seed_curves([alongs[s] for s in seeds])
    X = np.stack([G[k] for k in ("U", "v", "full")], axis=1)              # (n_seeds, 3, n_L)
    val, se = metrics.jackknife_of_mean(lambda m: {k: curves.shape(Ls, m[i]) for i, k in enumerate(("U", "v", "full"))}, X)
    a0 = alongs[seeds[0]]
    out = dict(seeds=[int(s) for s in seeds], n_seeds=len(seeds), n_blocks=int(np.shape(a0.block_diff)[0]),
               n_pairs=int(a0.n_pairs), n_prompts=int(n_prompts))
    for k in ("U", "v", "full"):
        out[k] = curves.fit(val[k], se[k], (), Ls, z, df=len(seeds) - 1)
        out[k]["max"], out[k]["max_se"] = (x.tolist() for x in curves.rows(val[k], se[k], ()))
    per = {s: prompt_fit(alongs[s], z, n_prompts) for s in seeds}
    out["per_seed"] = {str(s): {k: {q: per[s][k][q] for q in ("slope_full", "slope_full_se", "max", "max_se")}
                                for k in ("U", "v", "full")} for s in seeds}
    return out


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
        t = traj[name]
        for j, L in enumerate(alongs[t["seeds"][0]].L):
            traj_rows.append(dict(setting=name, seed="mean", L=int(L),
                                  **{f"max_{k}": t[k]["max"][j] for k in Parts._fields},
                                  **{f"max_{k}_se": t[k]["max_se"][j] for k in Parts._fields}))
        for s in t["seeds"]:
            a, ps = alongs[s], t["per_seed"][str(s)]
            for j, L in enumerate(a.L):
                traj_rows.append(dict(setting=name, seed=str(s), L=int(L), **{f"max_{k}": ps[k]["max"][j] for k in Parts._fields},
                                      **{f"max_{k}_se": ps[k]["max_se"][j] for k in Parts._fields},
                                      **{f"argmax_step_{k}": int(getattr(a.argmax_step, k)[j]) for k in Parts._fields}))
        progress(f"trajectory {name}: slope {t['full']['slope_full']:.3f} +- {t['full']['slope_full_se']:.3f} over seeds "
                 f"{t['seeds']} (seed log {seed_log_slope})")
    for k, f in fits.items():
        progress(f"{k}: lambda {f['lambda_max']:.3f} U {f['U']['slope']:.3f} +- {f['U']['slope_se']:.3f} "
                 f"v {f['v']['slope']:.3f} +- {f['v']['slope_se']:.3f} (pred {-f['beta']:.3f}); "
                 f"{f['U']['estimator']} t {f['U']['tilt']:.3f} share U {f['U']['share_max']:.2f} v {f['v']['share_max']:.2f}")
    return {"table": rows, "trajectory": traj_rows,
            "metrics": {"fits": fits, "summary": aggregate(fits), "sweep": sweep, "trajectory": traj,
                        "protocol": protocol}}
