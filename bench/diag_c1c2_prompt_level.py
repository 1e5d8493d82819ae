"""Diagnostics of the prompt-level error left in C1/C2's importance estimator (issue 31; not a test).

Two measurements at one probe, on fresh task blocks (seed 777, not the claims' seeds), at the
config's probes and S5's tilt (``c1.estimator: importance``), written up in docs/c1c2_uncertainty.md:

* ``parts``: the variance of one query's weighted term at ``L_max`` split into the part between
  queries and the part within a query (over ``m`` independent prompts for the same ``w``, ``x_q``):
  what several prompt draws per query (conditional averaging) could remove;
* ``cv``: a prompt-level control variate with a known mean, the linearised gap
  ``c = (mean_l e_l psi(z_l))^2`` (``e_l`` the softmax weights normalised to mean 1; output gap:
  ``psi = v^T z - f_inf``, ``E[c] = exp(s') (v^T Gamma_w v + f_inf^2) / L``; C2's U part: the
  linearised U gradient gap, ``E[c]`` by Gauss-Hermite quadrature, exact for its polynomial), used
  where ``k s' < log L`` (``s'`` the variance of the log-weights); the per-L standard errors of the
  plain and the controlled estimators over the blocks, and their difference in units of the
  combined error (both are unbiased).

    PYTHONPATH=$PWD python bench/diag_c1c2_prompt_level.py parts isotropic/star_x0.589 U --m 4 --blocks 4 --pairs 32
    PYTHONPATH=$PWD python bench/diag_c1c2_prompt_level.py cv anisotropic/star out --blocks 16 --pairs 8 --k 4
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from softlin import concentration as conc  # noqa: E402
from softlin import importance, models  # noqa: E402
from softlin.claims import c1, c2  # noqa: E402
from softlin.tasks import sample, sqrtm_sym  # noqa: E402


def design(cfg: dict) -> dict:
    """C1's probe design (``c1.design``) of every setting of the config ``cfg``, as rule c1_probes builds it."""
    sts = []
    for name, st in cfg["c1"]["settings"].items():
        s = np.asarray(st["sigma"], float)
        sts.append(dict(name=name, token_kind=st.get("token_kind", "gauss"),
                        sigma=(np.diag(s) if s.ndim == 1 else s).tolist(), probes=st.get("probes") or {}))
    return c1.design(sts, cfg["c1"]["probes"], cfg["c1"]["exponent"])


def probe(which: str, Lmax: int, tilt: str = "s5"):
    """The setting dict, the probe (C1's, the exponent sweep's or C2's sweep) and its tilt (``s5``: S5's rule)."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    design_ = design(cfg)
    sname, pname = which.split("/")
    st = design_[sname]
    pr = next(p for p in c2.probes_of(st, cfg["c2"]["sweep"]["lambda"]) if p["name"] == pname)
    return st, pr, importance.probe_tilt(pr, st["sigma"], "gauss", Lmax, "importance") if tilt == "s5" else float(tilt)


def per_query_terms(p, tk, w, part: str, Lmax: int) -> np.ndarray:
    """Weighted per-query term at L_max of the output gap (``out``) or a gradient part (``U``, ``v``); (n, Q)."""
    data = models.prompt_data(tk, Lmax)
    lim = models.model_data("limit", tk)
    if part == "out":
        return np.asarray(w * (conc.softmax_output(p, data) - conc._limit_out(p, lim)) ** 2)
    gU_L, gv_L, gU_inf, gv_inf = conc._per_query_grads(p.U, p.v, data.zT, data.zq, data.yq, data.L, lim.G)
    if part == "U":
        return w * np.sum(np.asarray(gU_L - gU_inf) ** 2, axis=(-2, -1))
    return w * np.sum(np.asarray(gv_L - gv_inf) ** 2, axis=-1)


def parts(args) -> None:
    Lmax = 2 ** args.log2_L
    st, pr, t = probe(args.probe, Lmax, args.tilt)
    d, p = len(st["sigma"]), conc.probe_params(pr)
    X = []
    for b in range(args.blocks):
        base = sample(conc.block_seed(777, b), d, st["sigma"], args.pairs, 4, Lmax)
        tk, log_w = importance.tilted_queries(base, np.asarray(pr["U"])[:d, :d], t)
        T = np.stack([per_query_terms(p, dataclasses.replace(tk, x=sample(50000 + 131 * b + k, d, st["sigma"], args.pairs,
                                                                            1, Lmax).x), np.exp(log_w), args.part, Lmax)
                      for k in range(args.m)], -1)
        X.append(((T[: args.pairs] + T[args.pairs:]) / 2).reshape(-1, args.m))
    X = np.concatenate(X)
    within = X.var(axis=1, ddof=1).mean()
    total = X.reshape(-1).var(ddof=1)
    qm = X.mean(axis=1)
    ess = lambda x: x.sum() ** 2 / (x ** 2).sum()  # noqa: E731
    print(f"{args.probe} {args.part} lambda_max={pr['lambda_max']:.3f} t={t:.3f} queries={X.shape[0]} m={args.m} "
          f"L=2^{args.log2_L}: within/total {within / total:.2f}, "
          f"between/total {(qm.var(ddof=1) - within / args.m) / total:.2f}; "
          f"ESS of one prompt {ess(X[:, 0]):.1f}, of the {args.m}-prompt means {ess(qm):.1f} (of {X.shape[0]})")


def gh_nodes(n: int = 7, d: int = 3):
    """Probabilists' Gauss-Hermite nodes and weights in ``d`` dimensions (exact to degree 2n - 1)."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    nodes = np.stack(np.meshgrid(*([x] * d), indexing="ij"), -1).reshape(-1, d)
    return nodes, np.prod(np.stack(np.meshgrid(*([w / w.sum()] * d), indexing="ij"), -1).reshape(-1, d), -1)


def cv_block(st, pr, t, b, pairs, Ls, part, k):
    """Per L the block's plain and controlled estimates of the mean square of ``part``; (2, n_L)."""
    d, Sig = len(st["sigma"]), np.asarray(st["sigma"])
    U, v = np.asarray(pr["U"]), np.asarray(pr["v"])
    base = sample(conc.block_seed(777, b), d, Sig, pairs, 4, max(Ls))
    tk, log_w = importance.tilted_queries(base, U[:d, :d], t)
    wq = np.exp(log_w)
    data = models.prompt_data(tk, max(Ls))
    G = np.asarray(models.model_data("limit", tk).G)
    zT, zq, yq = np.asarray(data.zT), np.asarray(data.zq), np.asarray(data.yq)
    bv = zq @ U.T                                     # the score of a token z is z . b
    s2 = np.einsum("nqi,nij,nqj->nq", bv, G, bv)
    mu = np.einsum("nij,nqj->nqi", G, bv)             # the tilted mean of z
    Gv = np.einsum("nij,j->ni", G, v)
    finf = np.einsum("nqi,i->nq", mu, v)
    rinf, mu2 = finf - yq, Gv[:, None, :] + mu * finf[..., None]
    e = np.exp(np.einsum("ndl,nqd->nql", zT, bv) - s2[..., None] / 2)
    gz = np.einsum("ndl,d->nl", zT, v)
    idx, L = np.asarray(Ls) - 1, np.asarray(Ls, float)
    E = np.cumsum(e, -1)[..., idx]

    def csum(x):
        return np.cumsum(x, -1)[..., idx]

    if part == "out":
        h = e * (gz[:, None, :] - finf[..., None])
        term = wq[..., None] * (csum(h) / E) ** 2
        c = wq[..., None] * (csum(h) / L) ** 2
        Ec = wq[..., None] * (np.exp(s2) * (np.einsum("i,nij,j->n", v, G, v)[:, None] + finf ** 2))[..., None] / L
    else:
        D = zT.shape[1]
        m1 = np.stack([csum(e * zT[:, None, i]) for i in range(D)], -1) / E[..., None]
        m2 = np.stack([csum(e * (zT[:, i] * gz)[:, None]) for i in range(D)], -1) / E[..., None]
        f = np.einsum("nqli,i->nql", m1, v)
        gvec = (f - yq[..., None])[..., None] * (m2 - f[..., None] * m1) - (rinf[..., None] * Gv[:, None, :])[:, :, None]
        zq2 = wq * np.sum(zq ** 2, -1)
        term = zq2[..., None] * np.sum(gvec ** 2, -1)

        def psi(z, gzz):  # the linearised U gap's vector per token, zero mean under the tilt; z (n, Q, k, D)
            dz = gzz - finf[..., None]
            m_, m2_ = mu[:, :, None], mu2[:, :, None]
            return (dz[..., None] * Gv[:, None, None] + rinf[..., None, None]
                    * (z * gzz[..., None] - m2_ - finf[..., None, None] * (z - m_) - m_ * dz[..., None]))

        ps = psi(np.einsum("ndl->nld", zT)[:, None], np.broadcast_to(gz[:, None], e.shape))
        c = zq2[..., None] * np.sum(np.stack([csum(e * ps[..., i]) for i in range(D)], -1) ** 2, -1) / L ** 2
        nodes, wts = gh_nodes(7, d)
        a = bv[..., :d] + bv[..., d:] * tk.w[:, None, :]                   # score = x . a
        xn = 2 * np.einsum("ij,nqj->nqi", Sig, a)[:, :, None, :] + nodes @ sqrtm_sym(Sig)   # x under the 2a tilt
        zn = np.concatenate([xn, np.einsum("nqki,ni->nqk", xn, tk.w)[..., None]], -1)
        Ec = zq2[..., None] * (np.exp(s2) * np.einsum("nqk,k->nq", np.sum(psi(zn, zn @ v) ** 2, -1), wts))[..., None] / L
    use = (k * s2[..., None] < np.log(L)).astype(float)
    pair = lambda x: ((x[:pairs] + x[pairs:]) / 2).mean(axis=(0, 1))  # noqa: E731
    return np.stack([pair(term), pair(term - use * (c - Ec))])


def cv(args) -> None:
    Ls = [2 ** j for j in range(3, args.log2_L + 1)]
    st, pr, t = probe(args.probe, max(Ls), args.tilt)
    R = np.stack([cv_block(st, pr, t, b, args.pairs, Ls, args.part, args.k) for b in range(args.blocks)])
    m, se = R.mean(0), R.std(0, ddof=1) / np.sqrt(R.shape[0])
    print(f"{args.probe} {args.part} lambda_max={pr['lambda_max']:.3f} t={t:.3f} blocks={args.blocks} "
          f"pairs={args.pairs} k={args.k}")
    for j, L in enumerate(Ls):
        share = R[:, :, j].max(0) / R[:, :, j].sum(0)
        print(f"L=2^{int(np.log2(L)):2d} plain {m[0, j]:.4e} +/- {se[0, j]:.1e} (share {share[0]:.2f})  "
              f"cv {m[1, j]:.4e} +/- {se[1, j]:.1e} (share {share[1]:.2f})  variance ratio {(se[0, j] / se[1, j]) ** 2:5.1f}  "
              f"z {(m[0, j] - m[1, j]) / np.hypot(se[0, j], se[1, j]):+.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=("parts", "cv"))
    ap.add_argument("probe", help="setting/probe, e.g. isotropic/star, exponent/lam0.3, isotropic/sweep_lam0.55")
    ap.add_argument("part", choices=("out", "U", "v"))
    ap.add_argument("--m", type=int, default=4, help="prompts per query (parts)")
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=32)
    ap.add_argument("--log2-L", type=int, default=16)
    ap.add_argument("--tilt", default="s5", help="the query proposal's tilt: s5 (S5's rule, the estimator's) or a number")
    ap.add_argument("--k", type=float, default=4.0, help="control variate where k s' < log L (cv)")
    args = ap.parse_args()
    if args.what == "cv" and args.part == "v":
        ap.error("cv: part out or U")
    (parts if args.what == "parts" else cv)(args)


if __name__ == "__main__":
    main()
