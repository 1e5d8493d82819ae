"""Study: C2's gradient gaps with the task vector integrated out exactly (issue 31; not a test).

Estimator ``task_integral`` (:mod:`softlin.task_integral`): at C2's probes the scores do not read the
labels, so the squared gradient gaps are polynomials of degree <= 6 in ``w`` and a 4^d-node
Gauss-Hermite rule averages them over ``w ~ N(0, I_d)`` exactly; one prompt per antithetic pair.
Against the present estimator (``importance``, :func:`softlin.concentration.grad_gaps_per_query`) on
independent blocks of the same protocol (``--pairs`` prompts of ``2^log2_L`` tokens and ``--query``
S5-tilted queries each; present at ``seed``, integral at ``seed + 1``; fresh seeds, never the claims').

Printed per probe and part (U, v): slope over C2's upper half of L and ``slope + beta``, C2a's ratio,
each with its jackknife s.e. over blocks; the largest block's share and Kish's ESS at L_max; the
scatter of the slopes and ratios over disjoint groups of blocks against their median jackknife s.e.
(``sum z^2`` against chi^2 on groups - 1 df); the per-L variance ratio present / integral; and the
seconds each estimator spent.

    PYTHONPATH=$PWD python bench/study_c2_task_integral.py isotropic/star anisotropic/sweep_lam0.55 \
        --blocks 512 --groups 16 --seed 950001 --save /tmp/ti.npz
    PYTHONPATH=$PWD python bench/study_c2_task_integral.py <probes> --groups 32 --load /tmp/a.npz /tmp/b.npz
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
from study_c2_token_strata import ratio_se, slope_se  # noqa: E402

from softlin import concentration as conc  # noqa: E402
from softlin.task_integral import grad_gaps_task_integral  # noqa: E402
from softlin.tasks import sample  # noqa: E402

ESTIMATORS = ("present", "integral")


def block(which_est: str, st, pr, t: float, Ls, b: int, seed: int, pairs: int, query: int):
    """One block: per L mean squared U and v gaps (2, n_L), the ESS sums at L_max (2, 3), seconds."""
    tk = sample(conc.block_seed(seed, b), len(st["sigma"]), st["sigma"], pairs, query, max(Ls))
    fn = conc.grad_gaps_per_query if which_est == "present" else grad_gaps_task_integral
    t0 = time.perf_counter()
    mU, mv, _, terms = fn([conc.probe_params(pr)], tk, Ls, np.array([t]), with_terms=True)
    return np.stack([mU[0], mv[0]]), terms[0][:2], time.perf_counter() - t0


def groups_line(Ls, M, groups: int, fn) -> tuple[str, float]:
    """Scatter of ``fn`` over disjoint groups against their median s.e., and sum z^2 about the pooled value."""
    pooled = fn(Ls, M)
    gs = np.array([fn(Ls, g) for g in np.array_split(M, groups)])
    sd = float(gs[:, 0].std(ddof=1))
    chi2 = float(np.sum(((gs[:, 0] - pooled[0]) / gs[:, 1]) ** 2))
    return f"scatter {sd:.4f} / median s.e. {np.median(gs[:, 1]):.4f}, sum z^2 {chi2:.0f} ({groups - 1} df)", sd


def report(which: str, part: int, Ls, data: dict, groups: int, beta: float) -> list[str]:
    rows = []
    sds = {}
    for e in ESTIMATORS:
        M, S = data[e][:, part], data[f"ess_{e}"][:, part]
        sl, ra = slope_se(Ls, M), ratio_se(Ls, M)
        gl_s, sds[e, "s"] = groups_line(Ls, M, groups, slope_se)
        gl_r, sds[e, "r"] = groups_line(Ls, M, groups, ratio_se)
        share = M[:, -1].max() / M[:, -1].sum()
        ess = S[:, 0].sum() ** 2 / S[:, 1].sum()
        rows.append(f"  {e:8s} slope {sl[0]:+.3f} +/- {sl[1]:.3f} (dev {sl[0] + beta:+.3f}); ratio {ra[0]:.4f} +/- {ra[1]:.4f}; "
                    f"share {share:.2f}, ESS {ess:.0f} of {int(S[:, 2].sum())}; {data[f'sec_{e}'].sum():.1f} s")
        rows.append(f"           slope groups: {gl_s}; ratio groups: {gl_r}")
    vp = data["present"][:, part].var(0, ddof=1)
    vi = data["integral"][:, part].var(0, ddof=1)
    rows.append("  var ratio present/integral per L: " + " ".join(f"{v:.1f}" for v in vp / vi))
    mp, mi = data["present"][:, part].mean(0), data["integral"][:, part].mean(0)
    z = (mp - mi) / np.sqrt(vp / len(data["present"]) + vi / len(data["integral"]))
    rows.append("  z present - integral per L: " + " ".join(f"{v:+.1f}" for v in z))
    rows.append(f"  scatter ratio present/integral: slope {sds['present', 's'] / sds['integral', 's']:.2f}, "
                f"ratio {sds['present', 'r'] / sds['integral', 'r']:.2f}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("probes", nargs="+")
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--query", type=int, default=4)
    ap.add_argument("--log2-L", type=int, default=16)
    ap.add_argument("--seed", type=int, default=950001)
    ap.add_argument("--paired", action="store_true", help="both estimators on the same blocks (seed)")
    ap.add_argument("--save")
    ap.add_argument("--load", nargs="+")
    args = ap.parse_args()
    Ls = [2 ** j for j in range(3, args.log2_L + 1)]
    saved: dict = {}
    for f in args.load or ():
        for k, v in np.load(f).items():
            saved[k] = np.concatenate([saved[k], v]) if k in saved and k != "Ls" else v
    for which in args.probes:
        st, pr, t = probe(which, max(Ls))
        if not args.load:
            for e, s in zip(ESTIMATORS, (args.seed, args.seed if args.paired else args.seed + 1)):
                out = [block(e, st, pr, t, Ls, b, s, args.pairs, args.query) for b in range(args.blocks)]
                saved[f"{which}/{e}"], saved[f"{which}/ess_{e}"], saved[f"{which}/sec_{e}"] = (np.stack(x) for x in zip(*out))
        data = {k.split("/", 2)[-1]: v for k, v in saved.items() if k.startswith(which + "/")}
        print(f"{which}: lambda_max {pr['lambda_max']:.3f}, beta {pr['beta']:.3f}, tilt {t:.3f}, "
              f"{data['present'].shape[0]} blocks each")
        for part, name in enumerate(("U", "v")):
            print(f" {name}:")
            print("\n".join(report(which, part, Ls, data, args.groups, pr["beta"])))
        sys.stdout.flush()
    if args.save:
        np.savez(args.save, Ls=np.asarray(Ls), **saved)


if __name__ == "__main__":
    main()
