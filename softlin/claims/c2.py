"""C2 — gradient concentration (Prop. 3.4) and its stability along training (Sec. 4).

``||grad R_L(theta) - grad R_inf(theta)||`` on the same tasks (U and v parts separately):

* at the C1 probes and at a threshold sweep (``A`` of ``theta*`` scaled so that ``lambda_max(M)``
  crosses 1/2): the per-query L2 gap ``sqrt(E ||grad l_L - grad l_inf||^2)`` (``l`` the loss of
  one prompt and query; what Prop. 3.4 bounds), with standard errors over independent task blocks;
  its expectation does not depend on the block size.  (The former measure, the RMS over blocks of
  the block-mean gap, mixed an O(1/L) bias with a fluctuation divided by the tasks per block, so
  its slope moved with ``n_pairs`` and ``n_query``; it is kept as the diagnostic ``blockrms_*``.)
* along C3's ``linear(inf)`` trajectory (max over the recorded steps: the seed log's "C2e").
"""

from __future__ import annotations

import json

import numpy as np

from .. import concentration as conc
from .. import metrics
from ..io import trajectory_from
from ..params import Params, split_flat
from ..tasks import check_sigma

PARTS = ("U", "v")


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
            n_query: int, progress=print) -> dict:
    """Per block: mean squared per-query gradient gaps ``msq_U``, ``msq_v`` (n_blocks, n_probes, n_L)
    and the block-mean gradient differences ``diff`` (n_blocks, n_probes, n_L, (d+1)^2 + d+1)."""
    plist = [conc.probe_params(p) for p in probes]
    msq_U, msq_v, diffs = [], [], []
    for b, tasks in enumerate(conc.task_blocks(seed, n_blocks, setting["sigma"], n_pairs, n_query,
                                               max(Ls), setting["token_kind"])):
        # computed, not dispatched: the progress line after this block reports work done
        mu, mv, df = (np.asarray(x) for x in conc.grad_gaps_per_query(plist, tasks, Ls))
        msq_U.append(mu)
        msq_v.append(mv)
        diffs.append(df)
        progress(f"block {b + 1}/{n_blocks} done")
    return dict(msq_U=np.asarray(msq_U), msq_v=np.asarray(msq_v), diff=np.asarray(diffs),
                Ls=np.asarray(Ls), probe_names=np.asarray([p["name"] for p in probes]))


def summarize(setting: dict, probes: list[dict], diff, Ls, n_boot: int, seed: int, msq=None):
    """Rows per (probe, L) and fits per probe and part.

    ``gap_U`` / ``gap_v``: the per-query L2 gradient gap ``sqrt(mean ||grad l_L - grad l_inf||^2)``
    over every task and query, from the per-block means ``msq = {"U": ..., "v": ...}``
    (n_blocks, n_probes, n_L) (delta-method s.e. over blocks; the criteria use it);
    ``pooled_U`` / ``pooled_v``: the gap of the gradients pooled over every task,
    ``||mean_b Delta_b||`` (block-bootstrap s.e.), the literal ``||grad R_L - grad R_inf||``;
    ``blockrms_U`` / ``blockrms_v``: the former measure, RMS over blocks of the block-mean gap
    ``sqrt(mean_b ||Delta_b||^2)`` (its slope depends on the block size; diagnostic only).
    """
    d = len(setting["sigma"])
    diff = np.asarray(diff)
    if msq is None:
        raise ValueError("summarize needs the per-query mean squared gaps msq (c2.measure's msq_U, msq_v)")
    parts = dict(zip(PARTS, split_flat(diff, d)))
    rms = {k: metrics.rms_over_blocks(np.asarray(msq[k])) for k in PARTS}
    blockrms = {k: metrics.rms_over_blocks(np.sum(x ** 2, axis=-1)) for k, x in parts.items()}
    pooled = {k: metrics.norm_over_blocks(x, n_boot, seed) for k, x in parts.items()}
    rows, fits = [], {}
    for i, pr in enumerate(probes):
        base = dict(setting=setting["name"], token_kind=setting["token_kind"], probe=pr["name"],
                    kind=pr["kind"], s=pr["s"], lambda_max=pr["lambda_max"], beta=pr["beta"])
        for j, L in enumerate(Ls):
            row = dict(base, L=int(L), n_blocks=int(diff.shape[0]))
            for k in PARTS:
                row.update({f"gap_{k}": float(rms[k][0][i, j]), f"gap_{k}_se": float(rms[k][1][i, j]),
                            f"pooled_{k}": float(pooled[k][0][i, j]),
                            f"pooled_{k}_se": float(pooled[k][1][i, j]),
                            f"blockrms_{k}": float(blockrms[k][0][i, j]),
                            f"blockrms_{k}_se": float(blockrms[k][1][i, j])})
            rows.append(row)
        f = dict(base, below_threshold=bool(pr["lambda_max"] < 0.5), pred_slope=-pr["beta"])
        for k in PARTS:
            cs = metrics.curve_summary(Ls, rms[k][0][i], rms[k][1][i])
            f[k] = dict(cs, slope_plus_beta=cs["slope"] + pr["beta"])
            pc = metrics.curve_summary(Ls, pooled[k][0][i], pooled[k][1][i])
            f[f"pooled_{k}"] = dict(pc, slope_plus_beta=pc["slope"] + pr["beta"])
            bc = metrics.curve_summary(Ls, blockrms[k][0][i], blockrms[k][1][i])
            f[f"blockrms_{k}"] = dict(bc, slope_plus_beta=bc["slope"] + pr["beta"])
        fits[f"{setting['name']}/{pr['name']}"] = f
    return rows, fits


def aggregate(fits: dict) -> dict:
    """Criteria summaries over the Gaussian C1 probes (not the sweep), per part."""
    gauss = [f for f in fits.values() if f["token_kind"] == "gauss" and f["kind"] != "sweep"]
    out = {}
    for k in PARTS:
        below = [f[k] for f in gauss if f["below_threshold"]]
        above = [f[k] for f in gauss if not f["below_threshold"]]
        out[k] = dict(
            max_n_increases=max(f[k]["n_increases"] for f in gauss),
            max_ratio=max(f[k]["ratio"] for f in gauss),
            below=dict(n=len(below), dev_min=min(f["slope_plus_beta"] for f in below),
                       dev_max=max(f["slope_plus_beta"] for f in below),
                       rel_se_max=max(f["rel_se_max"] for f in below)),
            above=dict(n=len(above), slope_min=min(f["slope"] for f in above),
                       slope_max=max(f["slope"] for f in above)))
    return out


def sweep_summary(fits: dict, setting: str) -> dict:
    """Measured slope against lambda_max(M) for one setting's sweep, with the prediction."""
    sw = sorted((f for f in fits.values() if f["setting"] == setting and f["kind"] == "sweep"),
                key=lambda f: f["lambda_max"])
    lam = np.array([f["lambda_max"] for f in sw])
    pred = np.array([f["pred_slope"] for f in sw])
    out = dict(lambda_max=lam.tolist(), pred_slope=pred.tolist())
    for k in PARTS:
        sl = np.array([f[k]["slope"] for f in sw])
        dev = sl - pred
        below = lam < 0.5
        out[k] = dict(slope=sl.tolist(), slope_se=[f[k]["slope_se"] for f in sw],
                      slope_full=[f[k]["slope_full"] for f in sw],
                      dev_max_abs=float(np.abs(dev).max()),
                      dev_below_max_abs=float(np.abs(dev[below]).max()) if below.any() else float("nan"),
                      shallowing=float(sl[-1] - sl[0]),
                      slope_above_min=float(sl[~below].min()) if (~below).any() else float("nan"))
    return out


def along_trajectory(traj, tasks, Ls, progress=print) -> dict:
    """Gradient gaps (U, v, full) at every recorded iterate of the linear(inf) run; max over steps."""
    rec, _, step, _ = trajectory_from(traj, "limit")
    plist = [Params(rec.U[t], rec.v[t]) for t in range(len(step))]
    diff = np.asarray(conc.grad_gaps(plist, tasks, Ls))  # (n_rec, n_L, K), computed before the progress line
    dU, dv = split_flat(diff, tasks.d)
    gaps = {"U": np.linalg.norm(dU, axis=-1), "v": np.linalg.norm(dv, axis=-1),
            "full": np.linalg.norm(diff, axis=-1)}
    progress(f"{len(step)} recorded iterates x {len(Ls)} prompt lengths done")
    out = dict(step=step, Ls=np.asarray(Ls))
    for k, g in gaps.items():
        out[f"gap_{k}"] = g
        out[f"max_{k}"] = g.max(axis=0)
        out[f"argmax_{k}"] = step[g.argmax(axis=0)]
    return out


def trajectory_fit(Ls, arrays: dict) -> dict:
    """Slopes of the max-over-steps gaps: full L range (the seed's C2e) and upper half."""
    out = {}
    for k in ("U", "v", "full"):
        vals = np.asarray(arrays[f"max_{k}"])
        out[k] = metrics.curve_summary(Ls, vals)
        out[k]["max"] = vals.tolist()
    return out


# --------------------------------------------------------------------------- the metrics job
def summarize_all(design: dict, gaps: dict, trajectories: dict, sweep_settings, n_boot: int, seed: int,
                  seed_log_slope: float, protocol: dict, progress=print) -> dict:
    """C2's metrics from every measured setting and trajectory.

    ``design``: the C1 probe design (``results/c1/probes.json``); ``gaps``: setting name -> the
    arrays of :func:`measure` as saved (``diff``, ``Ls``, ``msq_U``, ``msq_v``, ``probes_json``);
    ``trajectories``: C3 setting name -> the arrays of :func:`along_trajectory`.
    Returns ``{"table": rows, "trajectory": rows, "metrics": dict}`` (the gap rows per probe and L,
    the max-over-steps rows per L, and fits, summary, sweep and trajectory fits).
    """
    rows, fits = [], {}
    for name, f in gaps.items():
        probes = json.loads(str(f["probes_json"]))
        r, fi = summarize(design[name], probes, f["diff"], f["Ls"], n_boot, seed,
                          {"U": f["msq_U"], "v": f["msq_v"]})
        rows += r
        fits.update(fi)
    sweep = {name: sweep_summary(fits, name) for name in sweep_settings}
    traj, traj_rows = {}, []
    for name, arrays in trajectories.items():
        traj[name] = trajectory_fit(arrays["Ls"], arrays)
        traj[name]["seed_log_slope"] = seed_log_slope
        for j, L in enumerate(arrays["Ls"]):
            traj_rows.append(dict(setting=name, L=int(L), **{f"max_{k}": float(arrays[f"max_{k}"][j])
                                                              for k in ("U", "v", "full")},
                                  **{f"argmax_step_{k}": int(arrays[f"argmax_{k}"][j]) for k in ("U", "v", "full")}))
        progress(f"trajectory {name}: slope {traj[name]['full']['slope_full']:.3f} (seed log {seed_log_slope})")
    for k, f in fits.items():
        progress(f"{k}: lambda {f['lambda_max']:.3f} U {f['U']['slope']:.3f} v {f['v']['slope']:.3f} "
                 f"(pred {-f['beta']:.3f})")
    return {"table": rows, "trajectory": traj_rows,
            "metrics": {"fits": fits, "summary": aggregate(fits), "sweep": sweep, "trajectory": traj,
                        "protocol": protocol}}
