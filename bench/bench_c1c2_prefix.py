"""Benchmark of C1's and C2's measurement per task block: the per-length kernel (the code of
54c5f67, one ``softmax_moments`` call and one host sync per probe and L) against the prefix kernel
(``softmax_moments_prefix``: every L in one pass, one call per probe); not a test.

Per setting (C1's settings, its exponent sweep, C2's settings with the sweep) and block, at the
config's protocol, in one process: the block's sampling, then both paths, their order alternating
from block to block so that a shared machine's load falls on both alike (JAX programs compiled on
one block first, untimed); with the largest relative difference of every record field (old vs new).
Then the projected C1 + C2 work of (a) the old code at ``c1.n_blocks``/``c2.n_blocks`` against (b) the
new code with C1 at ``--c1-blocks`` (132) and C2 at ``c2.n_blocks``: one core's sum, and the wall
time of the measure jobs scheduled on two cores (longest first).  One thread per job, as the rules
(``threads: 1``).

    PYTHONPATH=$PWD python bench/bench_c1c2_prefix.py [--blocks 2] [--c1-blocks 132] [--preset default]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # the measure rules' threads (before the kernel loads)

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_c1c2_estimator import _config, _settings  # noqa: E402

from softlin import concentration as conc  # noqa: E402
from softlin import importance, models, params  # noqa: E402
from softlin._jax import jax, jnp  # noqa: E402
from softlin.claims import c1, c2  # noqa: E402
from softlin.kernels.softmax_moments import softmax_moments  # noqa: E402
from softlin.params import Params  # noqa: E402


# --------------------------------------------------------------------------- the old path (54c5f67)
def old_weighted_output_sq_gaps(probes, tasks, Ls, tilts):
    """C1's measure of 54c5f67: one kernel call and one host sync per probe and L."""
    data = models.prompt_data(tasks, max(Ls))
    d = tasks.d
    out = np.empty((len(probes), len(Ls)))
    diag = np.empty((len(probes), 2, 3))
    for i, pr in enumerate(probes):
        p = conc.probe_params(pr)
        tk, log_w = importance.tilted_queries(tasks, np.asarray(pr["U"])[:d, :d], float(tilts[i]))
        w = jnp.asarray(np.exp(log_w))
        f_inf = conc._limit_out(p, models.model_data("limit", tk))
        dq = data._replace(zq=models.query_tokens(tk)) if tilts[i] else data
        for j, L in enumerate(Ls):
            terms = w * (conc.softmax_output(p, models.with_length(dq, L)) - f_inf) ** 2
            out[i, j] = float(jnp.mean(terms))
        diag[i] = [importance.sums(importance.unit_terms(terms)), importance.sums(importance.unit_terms(w))]
    return out, diag


@jax.jit
def _old_per_query_grads(U, v, zT, zq, yq, L, G):
    m1, m2 = softmax_moments(U, v, zT, zq, L)
    f = m1 @ v
    r = f - yq
    gv_L = r[..., None] * m1
    gU_L = (r[..., None] * (m2 - f[..., None] * m1))[..., :, None] * zq[..., None, :]
    a = zq @ U.T
    Ga = jnp.einsum("njk,nqk->nqj", G, a)
    r_inf = Ga @ v - yq
    gv_inf = r_inf[..., None] * Ga
    Gv = jnp.einsum("nji,j->ni", G, v)
    gU_inf = (r_inf[..., None] * Gv[:, None, :])[..., :, None] * zq[..., None, :]
    return gU_L, gv_L, gU_inf, gv_inf


def old_grad_gaps_per_query(plist, tasks, Ls, tilts):
    """C2's measure of 54c5f67: one kernel call and its host transfers per probe and L."""
    data = models.prompt_data(tasks, max(Ls))
    D = tasks.d + 1
    n, Q = np.asarray(tasks.yq).shape
    msq_U, msq_v = np.empty((len(plist), len(Ls))), np.empty((len(plist), len(Ls)))
    diff, terms = np.empty((len(plist), len(Ls), D * D + D)), np.empty((len(plist), 3, 3))
    for i, p in enumerate(plist):
        U, v = jnp.asarray(p.U), jnp.asarray(p.v)
        tk, log_w = importance.tilted_queries(tasks, np.asarray(p.U)[: D - 1, : D - 1], float(tilts[i]))
        w = np.exp(log_w)
        lim = models.model_data("limit", tk)
        dq = data._replace(zq=models.query_tokens(tk), yq=jnp.asarray(tk.yq)) if tilts[i] else data
        for j, L in enumerate(Ls):
            gU_L, gv_L, gU_inf, gv_inf = _old_per_query_grads(U, v, dq.zT, dq.zq, dq.yq,
                                                              jnp.asarray(int(L), dtype=jnp.int64), lim.G)
            dU, dv = np.asarray(gU_L - gU_inf), np.asarray(gv_L - gv_inf)
            tU, tv = w * np.sum(dU ** 2, axis=(-2, -1)), w * np.sum(dv ** 2, axis=-1)
            msq_U[i, j], msq_v[i, j] = float(np.mean(tU)), float(np.mean(tv))
            if tilts[i]:
                dU, dv = dU * w[..., None, None], dv * w[..., None]
            mU = np.asarray(models.pair_sum(jnp.sum(jnp.asarray(dU), axis=1))) / (n * Q)
            mv = np.asarray(models.pair_sum(jnp.sum(jnp.asarray(dv), axis=1))) / (n * Q)
            diff[i, j] = params.flatten(Params(mU, mv))
        terms[i] = [importance.sums(importance.unit_terms(x)) for x in (tU, tv, w)]
    return msq_U, msq_v, diff, terms


# --------------------------------------------------------------------------- the bench
def rel_diff(old, new) -> np.ndarray:
    """Largest ``|new - old| / |old|`` over the entries with ``old != 0``, and largest
    ``|new - old| / max |old|`` (the field's scale: entries that cancel to ~0 inflate the first)."""
    old, new = np.asarray(old), np.asarray(new)
    nz, scale = old != 0, np.max(np.abs(old))
    elem = float(np.max(np.abs(new - old)[nz] / np.abs(old[nz]))) if nz.any() else 0.0
    return np.array([elem, float(np.max(np.abs(new - old)) / scale) if scale else 0.0])


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def two_core_wall(jobs) -> float:
    """Wall time of independent jobs on two cores, longest first to the less loaded core."""
    cores = [0.0, 0.0]
    for t in sorted(jobs, reverse=True):
        cores[cores.index(min(cores))] += t
    return max(cores)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=2, help="blocks timed per setting")
    ap.add_argument("--c1-blocks", type=int, default=132, help="C1's blocks in the projection (b)")
    ap.add_argument("--preset", default="default")
    args = ap.parse_args()
    cfg = _config(args.preset)
    C1, C2 = cfg["c1"], cfg["c2"]
    design = c1.design(_settings(C1), C1["probes"], C1.get("exponent"))
    L1 = [2 ** a for a in range(C1["log2_L_min"], C1["log2_L_max"] + 1)]
    L2 = [2 ** a for a in range(C2["log2_L_min"], C2["log2_L_max"] + 1)]
    jobs = []  # (claim, setting, probes, Ls, protocol, tilts)
    for name, st in design.items():
        tilts = np.array([importance.probe_tilt(pr, st["sigma"], st["token_kind"], max(L1), C1["estimator"])
                          for pr in st["probes"]])
        jobs.append(("c1", name, st, st["probes"], L1, C1, tilts))
    for name in C1["settings"]:
        st = design[name]
        probes = c2.probes_of(st, C2["sweep"]["lambda"] if name in C2["sweep"]["settings"] else [])
        tilts = np.array([importance.probe_tilt(pr, st["sigma"], st["token_kind"], max(L2), C2["estimator"])
                          for pr in probes])
        jobs.append(("c2", name, st, probes, L2, C2, tilts))

    def sample(st, P, Ls, b):  # block b of the run (conc.task_blocks's seed for it)
        return next(conc.task_blocks(conc.block_seed(P["seed"], b), 1, st["sigma"], P["n_pairs"],
                                     P["n_query"], max(Ls), st["token_kind"]))

    def paths(claim, probes, tasks, Ls, tilts):
        if claim == "c1":
            return (lambda: old_weighted_output_sq_gaps(probes, tasks, Ls, tilts),
                    lambda: conc.weighted_output_sq_gaps(probes, tasks, Ls, tilts),
                    ("msq", "diag"))
        plist = [conc.probe_params(p) for p in probes]
        return (lambda: old_grad_gaps_per_query(plist, tasks, Ls, tilts),
                lambda: conc.grad_gaps_per_query(plist, tasks, Ls, tilts, with_terms=True),
                ("msq_U", "msq_v", "diff", "diag"))

    for claim in ("c1", "c2"):  # compile every program once, untimed
        job = next(j for j in jobs if j[0] == claim)
        tasks = sample(job[2], job[5], job[4], 0)
        for f in paths(claim, job[3], tasks, job[4], job[6])[:2]:
            f()
    rows = []
    for claim, name, st, probes, Ls, P, tilts in jobs:
        t_s, t_old, t_new, diffs = [], [], [], {}
        for b in range(args.blocks):
            ts, tasks = timed(sample, st, P, Ls, b)
            old, new, fields = paths(claim, probes, tasks, Ls, tilts)
            order = (old, new) if b % 2 == 0 else (new, old)
            (ta, ra), (tb, rb) = timed(order[0]), timed(order[1])
            (to, ro), (tn, rn) = ((ta, ra), (tb, rb)) if b % 2 == 0 else ((tb, rb), (ta, ra))
            t_s.append(ts)
            t_old.append(to)
            t_new.append(tn)
            for k, x, y in zip(fields, ro, rn):
                diffs[k] = np.maximum(diffs.get(k, 0.0), rel_diff(x, y))
        rows.append(dict(claim=claim, setting=name, n_probes=len(probes), sample=statistics.median(t_s),
                         old=statistics.median(t_old), new=statistics.median(t_new), diffs=diffs))
    load = os.getloadavg()
    print(f"# per block, median of {args.blocks} blocks; OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; "
          f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs")
    print(f"{'claim':5} {'setting':12} {'probes':>6} {'sample s':>9} {'old s':>7} {'new s':>7} {'old/new':>7}  "
          "largest relative difference old vs new per record field: per entry / to the field's max")
    for r in rows:
        dtext = ", ".join(f"{k} {v[0]:.1e}/{v[1]:.1e}" for k, v in r["diffs"].items())
        print(f"{r['claim']:5} {r['setting']:12} {r['n_probes']:>6} {r['sample']:>9.3f} {r['old']:>7.3f} "
              f"{r['new']:>7.3f} {r['old'] / r['new']:>7.2f}  {dtext}")
    nb = {"c1": C1["n_blocks"], "c2": C2["n_blocks"]}
    old_jobs = [nb[r["claim"]] * (r["sample"] + r["old"]) for r in rows]
    new_nb = {"c1": args.c1_blocks, "c2": C2["n_blocks"]}
    new_jobs = [new_nb[r["claim"]] * (r["sample"] + r["new"]) for r in rows]
    same_jobs = [nb[r["claim"]] * (r["sample"] + r["new"]) for r in rows]
    print("\n# projected measure jobs (blocks x per-block sample + measure), one core's sum / two cores' wall")
    for label, js in ((f"(a) old code, C1 {nb['c1']} blocks, C2 {nb['c2']}", old_jobs),
                      (f"    new code, C1 {nb['c1']} blocks, C2 {nb['c2']}", same_jobs),
                      (f"(b) new code, C1 {args.c1_blocks} blocks, C2 {nb['c2']}", new_jobs)):
        print(f"{label:40} {sum(js):8.1f} s  {two_core_wall(js):8.1f} s")


if __name__ == "__main__":
    main()
