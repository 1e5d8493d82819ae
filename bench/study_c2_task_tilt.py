"""Study: importance sample C2's task vector (issue 31; not a test, not used by the workflow).

C2's U-part mean square is carried by rare tasks: at fixed tokens the per-query squared U gap grows
about as ``|w|^6`` at large ``|w|`` (docs/c1c2_uncertainty.md, "third pass"), so under
``w ~ p = N(0, I_d)`` the few tasks with ``|w| > 3`` carry much of it.  Estimator ``wtilt``: each block
as C2's ``importance`` estimator draws it (S5's query tilt, the same prefix kernel through
:func:`softlin.concentration._per_query_grad_gaps`), except that the task vectors come from
``q = N(0, tau^2 I_d)`` (antithetic pairs ``w, -w`` kept; the rng draws ``w``, prompts, queries in
:func:`softlin.tasks.sample`'s order, ``w`` then scaled by ``tau``, so ``tau = 1`` gives its tasks
bit for bit, checked at start) and every per-query term is multiplied by the task weight
``p(w) / q(w) = tau^d exp(-|w|^2 (1 - 1/tau^2) / 2)`` times the query weight.

``tau`` is fixed before any gap is seen, from the ``|w|^6`` growth alone: it minimises the weighted
second moment ``E_p[|w|^12 p/q] = tau^d (2 - 1/tau^2)^-(d/2 + 6) E|g|^12`` (``g ~ N(0, I_d)``), whose
stationary point is ``tau^2 = 1 + 6/d``: ``tau = sqrt(3) = 1.732`` at ``d = 3`` (the script checks the
closed form by a 1-D numeric minimisation and prints the ideal variance ratio for ``|w|^6``).

Both estimators run on fresh seeds (never the claims'; ``plain`` at ``seed``, ``wtilt`` at
``seed + 1``), side by side, with token_strata's diagnostics: per-L agreement (z), largest block's
share and Kish's ESS at L_max, U slopes over disjoint groups of blocks.  Results:
docs/c1c2_uncertainty.md, "Issue 31: importance sampling the task vector (a study)".

    PYTHONPATH=$PWD nice -n 10 python bench/study_c2_task_tilt.py isotropic/star anisotropic/star \
        isotropic/star_x0.589 nondiagonal/star_x0.695 --blocks 2048 --groups 64 --seed 930001 --save /tmp/t.npz
    PYTHONPATH=$PWD python bench/study_c2_task_tilt.py <probes> --groups 128 --load /tmp/both.npz  # two seeds
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize, special

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from diag_c1c2_prompt_level import probe  # noqa: E402
from study_c2_token_strata import report, slope_se  # noqa: E402

from softlin import concentration as conc  # noqa: E402
from softlin import importance, models  # noqa: E402
from softlin._jax import jnp  # noqa: E402
from softlin.tasks import Tasks, sample, sqrtm_sym  # noqa: E402

GROWTH = 6  # the per-query squared U gap grows as |w|^GROWTH at large |w| (third pass)


def log_moment(tau: float, d: int, k: int = GROWTH) -> float:
    """``log E_p[|w|^(2k) p/q_tau] - log E|g|^(2k)`` for ``p = N(0, I_d)``, ``q = N(0, tau^2 I_d)``:
    ``d log tau - (d/2 + k) log(2 - 1/tau^2)``."""
    return d * np.log(tau) - (d / 2 + k) * np.log(2 - tau ** -2)


def best_tau(d: int, k: int = GROWTH) -> tuple[float, float, float]:
    """``(closed form sqrt(1 + k/d), numeric argmin of log_moment, variance ratio of |w|^k's weighted
    estimator to the plain one)``; the variance of ``|w|^k`` is ``m_2 - m_1^2`` with ``m_j = E|g|^(jk)``."""
    closed = float(np.sqrt(1 + k / d))
    num = optimize.minimize_scalar(lambda t: log_moment(t, d, k), bounds=(0.75, 5), method="bounded",
                                   options={"xatol": 1e-10}).x

    def chi_moment(j):  # E|g|^j = 2^(j/2) Gamma((d+j)/2) / Gamma(d/2)
        return 2 ** (j / 2) * special.gamma((d + j) / 2) / special.gamma(d / 2)

    m1, m2 = chi_moment(k), chi_moment(2 * k)
    return closed, float(num), float((m2 * np.exp(log_moment(closed, d, k)) - m1 ** 2) / (m2 - m1 ** 2))


def tilted_tasks(seed: int, sigma, n_pairs: int, n_query: int, l_max: int, tau: float):
    """Antithetic Gaussian tasks in :func:`softlin.tasks.sample`'s rng order with ``w ~ N(0, tau^2 I)``,
    and the per-task log-weights ``log p/q = d log tau - |w|^2 (1 - 1/tau^2) / 2``; (Tasks, (2 n_pairs,))."""
    sigma = np.asarray(sigma, float)
    d = sigma.shape[0]
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n_pairs, d))
    root = sqrtm_sym(sigma)
    x = rng.standard_normal((n_pairs, l_max, d)) @ root
    xq = rng.standard_normal((n_pairs, n_query, d)) @ root
    w = tau * w if tau != 1 else w
    log_w = d * np.log(tau) - np.sum(w * w, axis=1) * (1 - tau ** -2) / 2
    tk = Tasks(x=np.concatenate([x, x]), w=np.concatenate([w, -w]), xq=np.concatenate([xq, xq]),
               sigma=sigma, seed=int(seed))
    return tk, np.concatenate([log_w, log_w])


def weighted_u_gaps(pr: dict, tasks, Ls, t: float, task_log_w) -> tuple[np.ndarray, np.ndarray]:
    """Mean over tasks and queries of ``(p/q)_task (p/q_t)_query ||grad_U l_L - grad_U l_inf||^2`` per L
    (as :func:`softlin.concentration.grad_gaps_per_query`'s ``msq_U``), and at L_max the
    :func:`softlin.importance.sums` of the independent queries' weighted terms; ((n_L,), (3,))."""
    p = conc.probe_params(pr)
    D = tasks.d + 1
    tk, log_wq = importance.tilted_queries(tasks, np.asarray(p.U)[: D - 1, : D - 1], float(t))
    wt = np.exp(log_wq + np.asarray(task_log_w)[:, None])      # (n, Q)
    lim = models.model_data("limit", tk)
    dU, _ = conc._per_query_grad_gaps(p.U, p.v, jnp.asarray(models.all_tokens(tasks)), models.query_tokens(tk),
                                      np.asarray(tk.yq), lim.G, tuple(int(L) for L in Ls))
    tU = wt * np.sum(np.asarray(dU) ** 2, axis=(-2, -1))       # (n_L, n, Q)
    return tU.mean(axis=(1, 2)), importance.sums(importance.unit_terms(tU[-1]))


def check_tau_one(st, pr, t, Ls, seed: int, n_pairs: int) -> None:
    """``tau = 1``: the sampler's tasks equal :func:`softlin.tasks.sample`'s bit for bit, the weights are 1,
    and the mean squares equal ``grad_gaps_per_query``'s ``msq_U`` bit for bit; raises otherwise."""
    ref = sample(seed, len(st["sigma"]), st["sigma"], n_pairs, 4, max(Ls))
    tk, lw = tilted_tasks(seed, st["sigma"], n_pairs, 4, max(Ls), 1.0)
    same = all(np.array_equal(getattr(ref, a), getattr(tk, a)) for a in ("w", "x", "xq")) and not lw.any()
    mine = weighted_u_gaps(pr, tk, Ls, t, lw)[0]
    theirs = np.asarray(conc.grad_gaps_per_query([conc.probe_params(pr)], ref, Ls, np.array([t]))[0])[0]
    if not (same and np.array_equal(mine, theirs)):
        raise SystemExit(f"tau = 1 does not reproduce the present estimator (tasks equal: {same}; "
                         f"max |diff| of msq_U {np.max(np.abs(mine - theirs)):.3e})")
    print(f"check: tau = 1 reproduces sample() and grad_gaps_per_query's msq_U bit for bit (seed {seed})")


def block_pair(st, pr, t, Ls, b: int, seed: int, n_pairs: int, n_query: int, tau: float):
    """Block ``b`` of each estimator (plain at ``seed``, wtilt at ``seed + 1``): per L mean squared U gaps
    and the ESS sums at L_max, and wtilt's task-weight-free squared |w| maximum; equal kernel cost."""
    plain, z = tilted_tasks(conc.block_seed(seed, b), st["sigma"], n_pairs, n_query, max(Ls), 1.0)
    tilt, lw = tilted_tasks(conc.block_seed(seed + 1, b), st["sigma"], n_pairs, n_query, max(Ls), tau)
    (mp, sp), (mt, stt) = weighted_u_gaps(pr, plain, Ls, t, z), weighted_u_gaps(pr, tilt, Ls, t, lw)
    return mp, mt, sp, stt


def flag_rate(M, size: int = 128) -> tuple[float, int]:
    """Over disjoint runs of ``size`` blocks (C2's default ``n_blocks``): the fraction whose largest block holds
    more than ``max(SHARE_MAX, 2 / size)`` of the mean square at L_max (C2's lower-bound flag,
    :data:`softlin.importance.SHARE_MAX`), and the number of runs."""
    bound = max(importance.SHARE_MAX, 2 / size)
    runs = M[: M.shape[0] // size * size, -1].reshape(-1, size)
    if not runs.size:
        return 0.0, 0
    return float(np.mean(runs.max(axis=1) / runs.sum(axis=1) > bound)), runs.shape[0]


def table_row(which: str, name: str, Ls, M, S, groups: int, beta: float) -> str:
    """One markdown row: slope (jackknife), slope + beta, largest block's share and Kish's ESS at L_max,
    s.d. of the group slopes, their median jackknife s.e., ``sum z^2``, the blocks for a slope s.e. of 0.05
    and :func:`flag_rate`."""
    n = M.shape[0]
    fr, nr = flag_rate(M)
    sl = slope_se(Ls, M)
    gs = np.array([slope_se(Ls, g) for g in np.array_split(M, groups)])
    sd = float(gs[:, 0].std(ddof=1))
    chi2 = float(np.sum(((gs[:, 0] - sl[0]) / gs[:, 1]) ** 2))
    return (f"| {which} | {name} | {sl[0]:+.3f} +/- {sl[1]:.3f} | {sl[0] + beta:+.3f} | {M[:, -1].max() / M[:, -1].sum():.2f} "
            f"| {S[:, 0].sum() ** 2 / S[:, 1].sum():.1f} | {sd:.3f} | {np.median(gs[:, 1]):.3f} | {chi2:.0f} "
            f"| {n / groups * (sd / 0.05) ** 2:.0f} | {fr * nr:.0f} of {nr} |")


def compare(Ls, d: dict, groups: int, beta: float) -> None:
    """Print the two estimators side by side: share, ESS and groups (report), per-L z and variance ratio."""
    mp, sp = report("plain", Ls, d["plain"], d["ess_plain"], groups, beta)
    mt, stt = report("wtilt", Ls, d["wtilt"], d["ess_wtilt"], groups, beta)
    print("  L:    " + " ".join(f"{int(np.log2(L)):>6d}" for L in Ls))
    z = (mp - mt) / np.hypot(sp, stt)
    print("  z:    " + " ".join(f"{v:+6.2f}" for v in z) + f"   (sum z^2 {np.sum(z * z):.1f}, {len(Ls)} L, correlated)")
    print("  var ratio plain/wtilt: " + " ".join(f"{v:6.2f}" for v in (sp / stt) ** 2))
    print(f"  max |z| {np.abs(z).max():.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("probes", nargs="+", help="setting/probe, e.g. isotropic/star")
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=4, help="prompts per block (the default's c2.n_pairs)")
    ap.add_argument("--query", type=int, default=4, help="queries per prompt (the default's c2.n_query)")
    ap.add_argument("--log2-L", type=int, default=16)
    ap.add_argument("--seed", type=int, default=930001)
    ap.add_argument("--save", help="write the per-block mean squares to this .npz (keys <probe>/<what>)")
    ap.add_argument("--load", help="report from a --save file instead of computing")
    args = ap.parse_args()
    if args.groups < 2 or (not args.load and args.blocks < 2 * args.groups):
        ap.error("need --groups >= 2 and at least two blocks per group")
    Ls = [2 ** j for j in range(3, args.log2_L + 1)]
    saved = dict(np.load(args.load)) if args.load else {}
    d, rows = None, []
    for which in args.probes:
        st, pr, t = probe(which, max(Ls))
        if d is None:
            d = len(st["sigma"])
            closed, num, vr = best_tau(d)
            tau = closed
            print(f"tau: argmin of E_p[|w|^{2 * GROWTH} p/q] at d = {d}: closed form sqrt(1 + {GROWTH}/d) = "
                  f"{closed:.6f}, numeric {num:.6f}; ideal variance ratio wtilt/plain for |w|^{GROWTH}: {vr:.3f}")
            if not args.load:
                check_tau_one(st, pr, t, Ls, args.seed + 99, args.pairs)
        t0 = time.perf_counter()
        if not args.load:
            out = [block_pair(st, pr, t, Ls, b, args.seed, args.pairs, args.query, tau) for b in range(args.blocks)]
            saved.update({f"{which}/{k}": np.stack(x) for k, x in
                          zip(("plain", "wtilt", "ess_plain", "ess_wtilt"), zip(*out))})
        n = saved[f"{which}/plain"].shape[0]
        print(f"{which} U lambda_max={pr['lambda_max']:.3f} beta={pr['beta']:.3f} t={t:.3f} tau={tau:.3f} "
              f"blocks={n} pairs={args.pairs} query={args.query} [{time.perf_counter() - t0:.0f} s]")
        compare(Ls, {k.split("/")[-1]: v for k, v in saved.items() if k.startswith(which + "/")},
                args.groups, pr["beta"])
        rows += [table_row(which, e, Ls, saved[f"{which}/{e}"], saved[f"{which}/ess_{e}"], args.groups, pr["beta"])
                 for e in ("plain", "wtilt")]
    print("\n".join(rows))
    if args.save:
        np.savez(args.save, Ls=np.asarray(Ls), **saved)


if __name__ == "__main__":
    main()
