"""Study: stratify C2's prompts on their largest token (issue 31; not a test, not used by the workflow).

The event ``E_r = {some token of the L_max prompt has |Sigma^-1/2 x| > r}`` splits every L's
expectation exactly (shorter prompts are prefixes of the L_max one):
``E[g_L] = (1 - P) E[g_L | not E_r] + P E[g_L | E_r]``, ``P = 1 - (1 - p_r)^L_max``,
``p_r = P(chi_d > r)``.  ``r`` is fixed before any gap is seen, from ``d``, ``L_max`` and the number
of prompts of the default run (``n_blocks * n_pairs``): ``L_max p_r = 1 / n_prompts``.

A stratified block spends the kernel cost of one block of the present estimator (``n_pairs``
prompts, S5's query tilt, ``c2.estimator: importance``) on ``n_pairs - n_tail`` prompts of the body
(every token with whitened norm beyond ``r`` redrawn) and ``n_tail`` prompts of the tail (``K >= 1``
exceedances from the exact conditional binomial law, positions uniform without replacement, whitened
norms from the chi tail beyond ``r``, directions uniform, the other tokens from the body), and
combines the strata's per-query means with the exact weights.  Both estimators run on fresh seeds
(never the claims'), side by side, and print per probe: the mean square at every L (a: agreement),
the largest block's share and Kish's ESS at L_max (b), and the U slope over disjoint groups of blocks
with their jackknife errors (c).  Results: docs/c1c2_uncertainty.md, "stratifying C2's prompts".

    PYTHONPATH=$PWD nice -n 19 python bench/study_c2_token_strata.py isotropic/star anisotropic/star \
        isotropic/star_x0.589 --blocks 512 --groups 16 --seed 910001 --save /tmp/s1.npz
    PYTHONPATH=$PWD python bench/study_c2_token_strata.py <probes> --groups 32 --load /tmp/both.npz
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from diag_c1c2_prompt_level import probe  # noqa: E402

from softlin import concentration as conc  # noqa: E402
from softlin import metrics  # noqa: E402
from softlin.claims import curves  # noqa: E402
from softlin.tasks import Tasks, sample, sqrtm_sym  # noqa: E402


def tail_radius(d: int, L_max: int, n_prompts: int) -> float:
    """``r`` with ``L_max P(chi_d > r) = 1 / n_prompts``: one expected tail prompt per run."""
    return float(stats.chi(d).isf(1.0 / (n_prompts * L_max)))


def tail_weight(d: int, L_max: int, r: float) -> tuple[float, float]:
    """``(p_r, P(E_r))``: a token's and an L_max prompt's probability of a token beyond ``r``."""
    p = float(stats.chi(d).sf(r))
    return p, float(-np.expm1(L_max * np.log1p(-p)))


def body_tokens(rng, n: int, L: int, d: int, r: float) -> np.ndarray:
    """Whitened tokens ``g ~ N(0, I_d)`` given ``|g| <= r`` (redrawn until inside); (n, L, d)."""
    g = rng.standard_normal((n, L, d))
    out = np.linalg.norm(g, axis=-1) > r
    while out.any():
        g[out] = rng.standard_normal((int(out.sum()), d))
        out = np.linalg.norm(g, axis=-1) > r
    return g


def tail_tokens(rng, n: int, L: int, d: int, r: float, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Whitened prompts given ``E_r``: ``K ~ Bin(L, p) | K >= 1`` tokens beyond ``r`` (positions
    uniform, norms from the chi tail, directions uniform), the rest from the body; ((n, L, d), (n,))."""
    g = body_tokens(rng, n, L, d, r)
    k = np.arange(1, 41)
    pmf = stats.binom(L, p).pmf(k)
    K = rng.choice(k, size=n, p=pmf / pmf.sum())
    for i in range(n):
        pos = rng.choice(L, size=K[i], replace=False)
        rho = stats.chi(d).isf(rng.uniform(size=K[i]) * p)
        u = rng.standard_normal((K[i], d))
        g[i, pos] = rho[:, None] * u / np.linalg.norm(u, axis=-1, keepdims=True)
    return g, K


def stratum_tasks(seed: int, sigma, n_pairs: int, n_query: int, L: int, r: float, p: float, tail: bool):
    """Antithetic tasks (as :func:`softlin.tasks.sample`) with prompts from one stratum; Tasks."""
    sigma = np.asarray(sigma, float)
    d = sigma.shape[0]
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n_pairs, d))
    g = tail_tokens(rng, n_pairs, L, d, r, p)[0] if tail else body_tokens(rng, n_pairs, L, d, r)
    root = sqrtm_sym(sigma)
    xq = rng.standard_normal((n_pairs, n_query, d)) @ root
    x = g @ root
    return Tasks(x=np.concatenate([x, x]), w=np.concatenate([w, -w]), xq=np.concatenate([xq, xq]),
                 sigma=sigma, seed=int(seed))


def block_pair(st, pr, t, Ls, b: int, seed: int, n_pairs: int, n_tail: int, r: float, p: float, P: float):
    """One block of each estimator: per L the mean squared U gap (plain, stratified) and the per-query
    sums at L_max for Kish's ESS (plain (3,), stratified (3,)) and the strata's means (2, n_L); equal kernel cost."""
    plist = [conc.probe_params(pr)]
    tilts = np.array([t])
    Q = 4

    def run(tk):
        mu, _, _, terms = conc.grad_gaps_per_query(plist, tk, Ls, tilts, with_terms=True)
        return np.asarray(mu)[0], np.asarray(terms)[0, 0]

    plain = sample(conc.block_seed(seed, b), len(st["sigma"]), st["sigma"], n_pairs, Q, max(Ls))
    m_plain, s_plain = run(plain)
    body = stratum_tasks(conc.block_seed(seed + 1, b), st["sigma"], n_pairs - n_tail, Q, max(Ls), r, p, False)
    tail = stratum_tasks(conc.block_seed(seed + 2, b), st["sigma"], n_tail, Q, max(Ls), r, p, True)
    m_body, s_body = run(body)
    m_tail, s_tail = run(tail)
    m_strat = (1 - P) * m_body + P * m_tail
    # Kish's ESS pooled over blocks: sums of contributions c and c^2 (the weights of the strata's units)
    nb, nt = s_body[2], s_tail[2]
    a, c = (1 - P) / nb, P / nt
    s_strat = np.array([a * s_body[0] + c * s_tail[0], a * a * s_body[1] + c * c * s_tail[1], nb + nt])
    return m_plain, m_strat, s_plain, s_strat, np.stack([m_body, m_tail])


def slope_se(Ls, m):
    """The U slope over the upper half of L (C2's) and its jackknife s.e. over the blocks of ``m`` (n, n_L)."""
    val, se = metrics.jackknife(lambda x: curves.shape(Ls, curves.rms(x))["slope"], m)
    return float(val), float(se)


def ratio_se(Ls, m):
    """C2a's ``U.ratio`` gap(L_max) / gap(L_min) and its jackknife s.e. over the blocks of ``m`` (n, n_L)."""
    val, se = metrics.jackknife(lambda x: curves.shape(Ls, curves.rms(x))["ratio"], m)
    return float(val), float(se)


def report(name, Ls, M, S, groups: int, beta: float):
    """Print one estimator's slope, ratio, share and ESS at L_max, and its slopes over disjoint groups
    of blocks: their scatter (s.d.), median jackknife s.e., and the blocks at which the scatter,
    scaled as n^-1/2, reaches 0.05; returns the per-L mean and its s.e. over blocks."""
    n = M.shape[0]
    mean, se = M.mean(0), M.std(0, ddof=1) / np.sqrt(n)
    share = M[:, -1].max() / M[:, -1].sum()
    ess = S[:, 0].sum() ** 2 / S[:, 1].sum()
    sl, ra = slope_se(Ls, M), ratio_se(Ls, M)
    gs = np.array([slope_se(Ls, g) for g in np.array_split(M, groups)])
    chi2 = float(np.sum(((gs[:, 0] - sl[0]) / gs[:, 1]) ** 2))
    sd = float(gs[:, 0].std(ddof=1))
    print(f"  {name:5s} slope {sl[0]:+.3f} +/- {sl[1]:.3f} (slope + beta {sl[0] + beta:+.3f}), ratio {ra[0]:.3f} +/- "
          f"{ra[1]:.3f}; share {share:.2f} (block {int(M[:, -1].argmax()) + 1}), ESS {ess:.1f} of {int(S[:, 2].sum())}")
    print(f"        {groups} groups of {n // groups} blocks: " + ", ".join(f"{v:+.3f} +/- {e:.3f}" for v, e in gs))
    print(f"        s.d. of the group slopes {sd:.3f}, median group s.e. {np.median(gs[:, 1]):.3f}, sum z^2 about the "
          f"pooled slope {chi2:.1f} ({groups} groups); blocks for a slope s.e. of 0.05: {n / groups * (sd / 0.05) ** 2:.0f}")
    return mean, se


def compare(which, Ls, d: dict, groups: int, beta: float) -> None:
    """Print the two estimators side by side: (a) per-L agreement, (b) share and ESS, (c) groups."""
    Mp, Ms, Mbt, P = d["plain"], d["strat"], d["body_tail"], float(d["P"])
    mp, sp = report("plain", Ls, Mp, d["ess_plain"], groups, beta)
    ms, ss = report("strat", Ls, Ms, d["ess_strat"], groups, beta)
    print("  L:    " + " ".join(f"{int(np.log2(L)):>6d}" for L in Ls))
    print("  z:    " + " ".join(f"{v:+6.2f}" for v in (mp - ms) / np.hypot(sp, ss)))
    print("  tail's share of the stratified mean: " + " ".join(f"{v:6.3f}" for v in P * Mbt[:, 1].mean(0) / ms))
    print("  var ratio plain/strat: " + " ".join(f"{v:6.2f}" for v in (sp / ss) ** 2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("probes", nargs="+", help="setting/probe, e.g. isotropic/star")
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=4, help="prompts per block (the default's c2.n_pairs)")
    ap.add_argument("--tail", type=int, default=1, help="of them, prompts of the tail stratum")
    ap.add_argument("--run-prompts", type=int, default=128, help="prompts of the run that fixes r (32 blocks x 4)")
    ap.add_argument("--log2-L", type=int, default=16)
    ap.add_argument("--seed", type=int, default=910001)
    ap.add_argument("--save", help="write the per-block mean squares to this .npz (keys <probe>/<what>)")
    ap.add_argument("--load", help="report from a --save file instead of computing")
    args = ap.parse_args()
    if not 1 <= args.tail < args.pairs:
        ap.error("--tail must be in [1, pairs - 1]")
    Ls = [2 ** j for j in range(3, args.log2_L + 1)]
    saved = dict(np.load(args.load)) if args.load else {}
    for which in args.probes:
        st, pr, t = probe(which, max(Ls))
        d = len(st["sigma"])
        r = tail_radius(d, max(Ls), args.run_prompts)
        p, P = tail_weight(d, max(Ls), r)
        t0 = time.perf_counter()
        if not args.load:
            out = [block_pair(st, pr, t, Ls, b, args.seed, args.pairs, args.tail, r, p, P) for b in range(args.blocks)]
            saved.update({f"{which}/{k}": np.stack(x) for k, x in
                          zip(("plain", "strat", "ess_plain", "ess_strat", "body_tail"), zip(*out))})
            saved[f"{which}/P"] = np.float64(P)
        n = saved[f"{which}/plain"].shape[0]
        print(f"{which} U lambda_max={pr['lambda_max']:.3f} beta={pr['beta']:.3f} t={t:.3f} r={r:.3f} p_r={p:.3e} "
              f"P(E_r)={P:.5f} blocks={n} pairs={args.pairs} (tail {args.tail}) [{time.perf_counter() - t0:.0f} s]")
        compare(which, Ls, {k.split("/")[-1]: v for k, v in saved.items() if k.startswith(which + "/")},
                args.groups, pr["beta"])
    if args.save:
        np.savez(args.save, Ls=np.asarray(Ls), **saved)


if __name__ == "__main__":
    main()
