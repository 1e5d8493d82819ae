"""Study: importance sampling of the prompt's largest-score token for C2's U part (issue 31; not a test).

With the task vector integrated out (``task_integral``), C2's U mean square is carried by rare prompt
events: at a query with score scale ``kappa = |Sigma^1/2 A x_q|``, one token whose standardized score
``t = x . c_hat`` lies near ``t*(L) = log(L) / kappa + kappa / 2`` takes a large share of the softmax
of the first ``L`` tokens (its weight ``exp(kappa t)`` matches the other tokens' ``L exp(kappa^2 / 2)``),
and its covariate enters the U gradient squared (docs/c1c2_uncertainty.md, "fourth pass").

Estimator ``plant`` (one query per prompt): given the query, the prompt is drawn from the defensive
mixture ``q = (1 - eps) p + eps sum_k pi_k q_k``, where ``q_k`` redraws one position ``J``, uniform in
``[0, L_k)``, from ``h_k = N(tau_k c_hat, Sigma)`` (the exponential tilt of the token law along the score
direction, in whitened coordinates), ``tau_k = min(t*(L_k), tau_max)``.  Its likelihood ratio is
``q / p = (1 - eps) + eps sum_k pi_k mean_{l < L_k} r_k(x_l)``, ``r_k(x) = exp(tau_k t - tau_k^2 / 2)``,
so the weight ``p / q <= 1 / (1 - eps)`` is bounded; every length's term is weighted by it (and by S5's
query weight), which keeps the estimator unbiased for every L.  ``eps``, the lengths ``L_k`` (the upper
half of C2's range, where C2's slopes are read, and L_max) and ``tau_max`` are fixed here, before any gap
is seen; ``tau_k`` comes from the query alone.

Against ``task_integral`` at the default's 4 prompts x 4 queries per block (``ti``) and at 16 prompts x
1 query (``ti16``, the plant's layout without the plant): equal kernel cost per block (16 x 2^16 token x
query pairs). Any Gaussian setting: the score direction is taken in whitened coordinates,
``c = Sigma^1/2 A x_q``, ``t = (Sigma^-1/2 x) . c_hat``, and the planted token is ``Sigma^1/2 (tau c_hat + g)``.
Fresh seeds, never the claims'.

    PYTHONPATH=$PWD python bench/study_c2_planted_token.py isotropic/sweep_lam0.55 --blocks 256 --groups 8
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from diag_c1c2_prompt_level import probe  # noqa: E402
from study_c2_task_integral import groups_line  # noqa: E402
from study_c2_token_strata import ratio_se, slope_se  # noqa: E402

from softlin import concentration as conc  # noqa: E402
from softlin import importance  # noqa: E402
from softlin import task_integral as ti  # noqa: E402
from softlin._jax import jnp  # noqa: E402
from softlin.tasks import Tasks, sample, sqrtm_sym  # noqa: E402

EPS = 0.5
LOG2_LK = (10, 12, 14, 16)
TAU_MAX = 6.5
ESTIMATORS = ("ti", "ti16", "plant")


def terms(pr: dict, x: np.ndarray, xq: np.ndarray, Ls, sigma) -> tuple[np.ndarray, np.ndarray]:
    """task_integral's E_w terms (U, v) of prompts x (n, l_max, d) at queries xq (n, Q, d): (n_L, n, Q) each."""
    return ti.per_query_terms(conc.probe_params(pr), jnp.asarray(ti.moment_tokens(x)), xq, sigma, Ls)[:2]


def plain_block(pr, t, Ls, seed: int, pairs: int, query: int, sigma):
    """task_integral on one block of tasks.sample (pairs prompts x query queries): per-L means (2, n_L)."""
    tasks = sample(seed, len(sigma), sigma, pairs, query, max(Ls))
    msq_U, msq_v, _ = ti.grad_gaps_task_integral([conc.probe_params(pr)], tasks, Ls, np.array([t]))
    return np.stack([msq_U[0], msq_v[0]]), np.ones(1)


def plant_block(pr, t, Ls, seed: int, n: int, sigma, eps: float = EPS):
    """One block of the planted estimator: n prompts, one S5-tilted query each; per-L weighted means
    (2, n_L) and the prompt weights (n,)."""
    rng = np.random.default_rng(seed)
    sigma = np.asarray(sigma, float)
    d, l_max = sigma.shape[0], max(Ls)
    root = sqrtm_sym(sigma)
    x = rng.standard_normal((n, l_max, d)) @ root
    g = rng.standard_normal((n, 1, d)) @ root
    A = np.asarray(pr["U"])[:d, :d]
    tk, log_wq = importance.tilted_queries(Tasks(x=x[:, :1], w=np.zeros((n, d)), xq=g, sigma=sigma), A, t)
    xq = tk.xq                                                  # (n, 1, d)
    c = xq[:, 0] @ A.T @ root                                   # whitened score vectors Sigma^1/2 A x_q
    kappa = np.linalg.norm(c, axis=1)
    chat = c / kappa[:, None]
    u = chat @ np.linalg.inv(root)                              # t = x . u = (Sigma^-1/2 x) . c_hat
    Lk = np.array([2 ** j for j in LOG2_LK])
    tau = np.minimum(np.log(Lk)[None, :] / kappa[:, None] + kappa[:, None] / 2, TAU_MAX)   # (n, K)
    plant = rng.random(n) < eps
    k = rng.integers(0, len(Lk), size=n)
    J = (rng.random(n) * Lk[k]).astype(np.int64)
    fresh = rng.standard_normal((n, d))
    rows = np.nonzero(plant)[0]
    x[rows, J[rows]] = (tau[rows, k[rows], None] * chat[rows] + fresh[rows]) @ root
    tstd = np.einsum("nld,nd->nl", x, u)                        # standardized scores
    mix = np.zeros(n)
    for j, L in enumerate(Lk):
        r = np.exp(tau[:, j, None] * tstd[:, :L] - tau[:, j, None] ** 2 / 2)
        mix += r.mean(axis=1) / len(Lk)
    W = 1.0 / ((1 - eps) + eps * mix)
    tU, tv = terms(pr, x, xq, Ls, sigma)
    wt = (W * np.exp(log_wq[:, 0]))[None, :, None]
    return np.stack([(wt * tU).mean(axis=(1, 2)), (wt * tv).mean(axis=(1, 2))]), W


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("probes", nargs="+", help="setting/probe (Gaussian settings)")
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--seed", type=int, default=970001)
    ap.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=ESTIMATORS,
                    help="which to run (ti is the reference the others are compared with)")
    ap.add_argument("--save")
    ap.add_argument("--load", nargs="+")
    args = ap.parse_args()
    if args.groups < 2 or (not args.load and args.blocks < 2 * args.groups):
        ap.error("need --groups >= 2 and at least two blocks per group")
    run = [e for e in ESTIMATORS if e in args.estimators]
    if "ti" not in run:
        ap.error("--estimators must include ti, the reference")
    Ls = [2 ** j for j in range(3, 17)]
    saved: dict = {}
    for f in args.load or ():
        for key, v in np.load(f).items():
            saved[key] = np.concatenate([saved[key], v]) if key in saved else v
    for which in args.probes:
        st, pr, t = probe(which, max(Ls))
        sig = np.asarray(st["sigma"], float)
        if not args.load:
            secs = {}
            for e, off in ((e, ESTIMATORS.index(e)) for e in run):
                t0 = time.perf_counter()
                out = []
                for b in range(args.blocks):
                    s = conc.block_seed(args.seed + off, b)
                    out.append(plain_block(pr, t, Ls, s, 4, 4, sig) if e == "ti" else
                               plain_block(pr, t, Ls, s, 16, 1, sig) if e == "ti16" else plant_block(pr, t, Ls, s, 16, sig))
                saved[f"{which}/{e}"] = np.stack([o[0] for o in out])
                if e == "plant":
                    saved[f"{which}/W"] = np.concatenate([o[1] for o in out])
                secs[e] = time.perf_counter() - t0
            print("seconds: " + ", ".join(f"{e} {secs[e]:.1f}" for e in secs))
        W = saved[f"{which}/W"]
        n = saved[f"{which}/ti"].shape[0]
        print(f"{which}: lambda_max {pr['lambda_max']:.3f}, beta {pr['beta']:.3f}, tilt {t:.3f}, {n} blocks each; "
              f"plant weights: mean {W.mean():.3f} (1 expected), min {W.min():.3f}, max {W.max():.3f}")
        for part, name in enumerate(("U", "v")):
            print(f" {name}:")
            means = {}
            for e in [e for e in ESTIMATORS if f"{which}/{e}" in saved]:
                M = saved[f"{which}/{e}"][:, part]
                sl, ra = slope_se(Ls, M), ratio_se(Ls, M)
                gs, sd = groups_line(Ls, M, args.groups, slope_se)
                share = M[:, -1].max() / M[:, -1].sum()
                means[e] = (M.mean(0), M.std(0, ddof=1) / np.sqrt(M.shape[0]))
                print(f"  {e:6s} slope {sl[0]:+.3f} +/- {sl[1]:.3f} (dev {sl[0] + pr['beta']:+.3f}); ratio {ra[0]:.4f} +/- "
                      f"{ra[1]:.4f}; share at L_max {share:.2f}; slope {gs}")
            for e in [e for e in ("ti16", "plant") if e in means]:
                z = (means[e][0] - means["ti"][0]) / np.hypot(means[e][1], means["ti"][1])
                vr = (means["ti"][1] / means[e][1]) ** 2
                print(f"  {e} vs ti: z per L " + " ".join(f"{v:+.1f}" for v in z))
                print(f"  {e} vs ti: variance ratio ti/{e} per L " + " ".join(f"{v:.1f}" for v in vr))
        sys.stdout.flush()
    if args.save:
        np.savez(args.save, **saved)


if __name__ == "__main__":
    main()
