"""C2e — the gradient gap along C3's ``linear(inf)`` trajectories (the seed log's "C2e"; Sec. 4's
stability along training): per task seed, the gap ``||grad R_L - grad R_inf||`` of the training batch
(C3's 48 pairs and one prompt draw) at every recorded iterate and L (:func:`along_trajectory`), its max
over the steps, averaged over the seed's prompt draws (each draw is the seed log's quantity, so the
average estimates it whatever the number of draws); C2e reads the mean of these curves over the seeds
with the seed-to-seed spread as its error (:func:`trajectory_fit`), each seed's prompt-sampling error
beside it (:func:`prompt_fit`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import concentration as conc
from .. import metrics, train
from ..params import Params, split_flat
from ..records import Spec
from ..tasks import Tasks, redraw_prompts
from ..train import Trajectory
from . import curves


class Parts(NamedTuple):
    """One quantity for the ``U`` part, the ``v`` part and the ``full`` gradient."""

    U: np.ndarray
    v: np.ndarray
    full: np.ndarray


class AlongTrajectory(NamedTuple):
    """Along C3's linear(inf) run: step (n_rec,), L (n_L,), block_diff (n_prompts n_blocks, n_rec, n_L, K),
    n_pairs (), per part (:class:`Parts`) the gap (n_rec, n_L) of the training batch averaged over the prompt
    draws, max_gap (n_L) the draws' mean of each draw's max over the steps, argmax_step (n_L) the first draw's
    (:func:`along_trajectory`)."""

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
    each block and draw.  Per draw the gap is the norm of the mean over its blocks (the training
    batch's gradient difference, the seed log's quantity); ``gap`` (n_rec, n_L) is its mean over the
    draws, ``max_gap`` (n_L) the mean over the draws of each draw's max over steps, ``argmax_step`` where
    the first draw's (C3's own prompts) peaks.  linear(inf) never sees the prompt tokens (its risk reads
    w and the queries), so given the trajectory the units' prompts are independent: the jackknife over
    them (:func:`prompt_fit`) is the prompt-sampling error of the gaps along this trajectory."""
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
    norms = _gap_norms(per_draw(block_diff, n_prompts), tasks.d)          # part -> (n_prompts, n_rec, n_L)
    step = np.asarray(step)
    gap = Parts(*(norms[k].mean(axis=0) for k in Parts._fields))
    return AlongTrajectory(step, np.asarray(Ls, dtype=np.int64), block_diff, np.asarray(tasks.n_pairs, np.int64), gap,
                           Parts(*(norms[k].max(axis=1).mean(axis=0) for k in Parts._fields)),
                           Parts(*(step[norms[k][0].argmax(axis=0)] for k in Parts._fields)))


def per_draw(block_diff, n_prompts: int) -> np.ndarray:
    """Each prompt draw's gradient difference, the mean over its blocks: block_diff (n_prompts n_blocks,
    n_rec, n_L, K), draw-major as :func:`along_trajectory` writes it -> (n_prompts, n_rec, n_L, K)."""
    bd = np.asarray(block_diff)
    if bd.shape[0] % int(n_prompts):
        raise ValueError(f"{bd.shape[0]} units do not split into n_prompts = {n_prompts} draws of equal size")
    return bd.reshape((int(n_prompts), -1) + bd.shape[1:]).mean(axis=1)


def _gap_norms(diff, d: int) -> dict:
    """The gap norms (U, v, full) of differences (..., K): part -> (...)."""
    dU, dv = split_flat(diff, d)
    return {"U": np.linalg.norm(dU, axis=-1), "v": np.linalg.norm(dv, axis=-1), "full": np.linalg.norm(diff, axis=-1)}


def _d_of(K: int) -> int:
    """``d`` from the flat gradient's length ``K = (d+1)^2 + (d+1)``."""
    return int(round((np.sqrt(4 * K + 1) - 1) / 2)) - 1


def prompt_fit(along: AlongTrajectory, z: float = 2.0, n_prompts: int = 1) -> dict:
    """One trajectory's fit: slopes of its max-over-steps gap curve (the mean over its ``n_prompts``
    draws of each draw's max over steps: :func:`along_trajectory`; full L range: the seed's C2e; upper
    half), ratios and rises, jackknifed over its units (one block of training pairs of one draw
    deleted at a time, its draw's mean taken over the others): the prompt-sampling error given this
    trajectory, which does not cover the trajectory's own variation with C3's training tasks."""
    bd, Ls = np.asarray(along.block_diff), along.L
    d, k = _d_of(bd.shape[-1]), int(n_prompts)
    draws = per_draw(bd, k)                                                     # (k, n_rec, n_L, K)
    units = bd.reshape((k, -1) + bd.shape[1:])                                  # (k, n_blocks, n_rec, n_L, K)
    nb = units.shape[1]
    if nb < 2:
        raise ValueError(f"prompt_fit needs >= 2 blocks per draw; got {nb}")
    S = units.sum(axis=1)                                                       # each draw's sum: its delete-one means

    def draw_max(diff):                                                         # (n_rec, n_L, K) -> (3, n_L)
        g = _gap_norms(diff, d)
        return np.array([g[p].max(axis=0) for p in Parts._fields])

    def stat(c):                                                                # c (k, 3, n_L): each draw's maxima
        m = c.mean(axis=0)
        return {p: curves.shape(Ls, m[i]) for i, p in enumerate(Parts._fields)}
    base = np.array([draw_max(m) for m in draws])
    reps = []
    for r in range(k):
        for b in range(nb):
            c = base.copy()
            c[r] = draw_max((S[r] - units[r, b]) / (nb - 1))
            reps.append(stat(c))
    val, se = stat(base), metrics.jackknife_se(reps)
    out = dict(n_blocks=int(bd.shape[0]), n_pairs=int(along.n_pairs), n_prompts=k)
    for p in Parts._fields:
        out[p] = curves.fit(val[p], se[p], (), Ls, z, df=int(bd.shape[0]) - 1)
        out[p]["max"], out[p]["max_se"] = (x.tolist() for x in curves.rows(val[p], se[p], ()))
    return out


def trajectory_fit(alongs: dict, z: float = 2.0, n_prompts: int = 1) -> dict:
    """C2e across task seeds (``alongs``: seed -> :class:`AlongTrajectory`, one per seed, the same
    lengths): the mean over the seeds of their max-over-steps gap curves (each seed's :func:`prompt_fit` ``max``), its
    slopes, ratios and rises jackknifed over the seeds (``n_seeds - 1`` degrees of freedom: the
    trajectory's variation with C3's training tasks and the prompt sampling both); beside it
    ``per_seed``, each seed's own fit with its prompt-sampling error (:func:`prompt_fit`)."""
    seeds = sorted(alongs)
    Ls = np.asarray(alongs[seeds[0]].L)
    if any(not np.array_equal(alongs[s].L, Ls) for s in seeds):
        raise ValueError("trajectory_fit: the seeds' records have different prompt lengths")
    per = {s: prompt_fit(alongs[s], z, n_prompts) for s in seeds}
    X = np.array([[per[s][k]["max"] for k in ("U", "v", "full")] for s in seeds])   # (n_seeds, 3, n_L)
    val, se = metrics.jackknife_of_mean(lambda m: {k: curves.shape(Ls, m[i]) for i, k in enumerate(("U", "v", "full"))}, X)
    a0 = alongs[seeds[0]]
    out = dict(seeds=[int(s) for s in seeds], n_seeds=len(seeds), n_blocks=int(np.shape(a0.block_diff)[0]),
               n_pairs=int(a0.n_pairs), n_prompts=int(n_prompts))
    for k in ("U", "v", "full"):
        out[k] = curves.fit(val[k], se[k], (), Ls, z, df=len(seeds) - 1)
        out[k]["max"], out[k]["max_se"] = (x.tolist() for x in curves.rows(val[k], se[k], ()))
    out["per_seed"] = {str(s): {k: {q: per[s][k][q] for q in ("slope_full", "slope_full_se", "max", "max_se")}
                                for k in ("U", "v", "full")} for s in seeds}
    out["largest_seed"] = largest_seed(X[:, 2], seeds, Ls)
    return out


def largest_seed(curves_, seeds, Ls) -> dict:
    """The seed whose curve is the largest share of the seeds' sum (a diagnostic of a heavy tail across
    seeds, beside the seed-level error): ``curves_`` (n_seeds, n_L) -> ``{"seed", "share", "L"}`` at the
    length ``L`` of ``Ls`` where that share is largest."""
    c = np.asarray(curves_, float)
    share = c / c.sum(axis=0)
    i, j = np.unravel_index(np.argmax(share), share.shape)
    return {"seed": int(seeds[i]), "share": float(share[i, j]), "L": int(np.asarray(Ls)[j])}


def trajectory_rows(name: str, alongs: dict, fit: dict) -> list[dict]:
    """The CSV rows of one setting's C2e per L: ``seed`` "mean", the seed-mean curve with its
    seed-level error (``fit``: :func:`trajectory_fit`), then each seed's own curve with its
    prompt-sampling error and the step where it peaks."""
    rows = []
    for j, L in enumerate(alongs[fit["seeds"][0]].L):
        rows.append(dict(setting=name, seed="mean", L=int(L), **{f"max_{k}": fit[k]["max"][j] for k in Parts._fields},
                         **{f"max_{k}_se": fit[k]["max_se"][j] for k in Parts._fields}))
    for s in fit["seeds"]:
        a, ps = alongs[s], fit["per_seed"][str(s)]
        for j, L in enumerate(a.L):
            rows.append(dict(setting=name, seed=str(s), L=int(L), **{f"max_{k}": ps[k]["max"][j] for k in Parts._fields},
                             **{f"max_{k}_se": ps[k]["max_se"][j] for k in Parts._fields},
                             **{f"argmax_step_{k}": int(getattr(a.argmax_step, k)[j]) for k in Parts._fields}))
    return rows
