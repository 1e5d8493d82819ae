"""C5 evaluation: test risks of the trained models and baselines.

``evaluate`` scores every trained model and the baselines (:mod:`softlin.baselines`) on one fixed
held-out test set (nested prompts: the length-L test prompt is the first L tokens of the longest,
same queries, same prompts for both models), in blocks of independent test prompts
(:func:`evaluate_with_blocks`).  Per-run convergence is :mod:`softlin.claims.c5_convergence`, the
criteria's metrics :mod:`softlin.claims.c5_summary`.  Kept apart from :mod:`softlin.claims.c5`
(training) so that a change here reruns the evaluation, not the training.
"""

from __future__ import annotations

import numpy as np

from .. import baselines, models, online, online_task, stream
from .._jax import jax, jnp
from ..params import Params
from .c5 import task_of

PREDICTORS = ("softmax", "linear", "ridge", "gd", "limit_opt", "softmax_at_inf", "linear_at_inf",
              "linear_ref", "softmax_ref")
PAIRS = {"gap": ("softmax", "linear"), "softmax_minus_ridge": ("softmax", "ridge"),
         "linear_minus_ridge": ("linear", "ridge"), "softmax_minus_ref": ("softmax", "softmax_ref"),
         "linear_minus_ref": ("linear", "linear_ref")}
FAMILY_SCALES = np.geomspace(1 / 64, 64, 49)   # the grid of a in the softmax reference family
REFERENCE_STREAM = 1                           # stream of the eval seed the softmax family is fitted on
N_BLOCKS = 64                                  # blocks of independent test prompts (jackknife of test sampling)


def class_preconds(task: online_task.TaskLaw, Ls) -> np.ndarray:
    """P*(L) of the linear-attention class optimum (symbolic S6) at every L, (n_L, d, d)."""
    return np.stack([baselines.linear_class_precond(L, task.sigma_prompt, task.noise_var, task.w_var)
                     for L in Ls])


def reference_params(P, a=None, c=None) -> Params:
    """Reference members as (U, v) stacked over L: ``U = blockdiag(a P^T, 0)``, ``v = c e_D``.

    ``a = c = 1`` in linear attention gives ``x_q^T P Ghat_xy`` (the class optimum at P = P*);
    in softmax attention, ``c sum_l softmax_l(a x_l^T P^T x_q) y_l`` (P* is symmetric).  P (n_L, d, d), a, c (n_L,)."""
    P = np.asarray(P, float)
    n_L, d = P.shape[0], P.shape[-1]
    a = np.ones(n_L) if a is None else np.asarray(a, float)
    c = np.ones(n_L) if c is None else np.asarray(c, float)
    U = np.zeros((n_L, d + 1, d + 1))
    U[:, :d, :d] = a[:, None, None] * np.swapaxes(P, -1, -2)
    v = np.zeros((n_L, d + 1))
    v[:, d] = c
    return Params(jnp.asarray(U), jnp.asarray(v))


def _make_family_fit(task: online_task.TaskLaw, n: int, l_max: int, f64: bool):
    """A compiled chunk of the softmax family fit: for every L and scale a, the sums
    (sum g y, sum g^2) with ``g = sum_l softmax_l(a x_l^T P*_L x_q) y_l``, (n_L, n_a, 2), and sum y_q^2."""
    law = task.law()
    scales = jnp.asarray(FAMILY_SCALES)

    @jax.jit
    def chunk(key, j, Ls, P):
        b = stream.sample(law, key, j, n, l_max, f64)
        d = P.shape[-1]

        def per_L(args):
            L, Pl = args

            def per_a(a):
                U = jnp.zeros((d + 1, d + 1), P.dtype).at[:d, :d].set(a * Pl.T)
                g = online.predict_on_batch("softmax", Params(U, jnp.zeros(d + 1, P.dtype).at[d].set(1.0)), b, L)
                return jnp.stack([(g * b.yq).sum(), (g * g).sum()])

            return jax.lax.map(per_a, scales)

        return jax.lax.map(per_L, (Ls, P)), (b.yq ** 2).sum()

    return chunk


def softmax_family(cfg: dict, Ls, progress=None) -> dict:
    """The softmax reference: per L, the best member of ``{U = blockdiag(a P*_L^T, 0), v = c e_D}``
    (a on the grid FAMILY_SCALES, c by least squares given a), fitted on ``eval.n_test`` prompts of the
    reference stream (eval seed, stream 1; independent of training and of the test set).  The family is
    inside the softmax class and contains the infinite-prompt optimum (a c = 1 as L -> oo); a converged
    softmax run is not worse than its best member.  Returns ``a``, ``c``, ``fit_risk`` (n_L,)."""
    task = task_of(cfg)
    ev = cfg["eval"]
    n, n_chunks = ev["chunk"], ev["n_test"] // ev["chunk"]
    P = class_preconds(task, Ls)
    fn = _make_family_fit(task, n, max(Ls), cfg["sample_dtype"] == "float64")
    key = stream.stream_key(ev["seed"], REFERENCE_STREAM)
    sums = np.zeros((len(Ls), FAMILY_SCALES.size, 2))
    syy = 0.0
    for j in range(n_chunks):
        part, yy = fn(key, j, jnp.asarray(Ls, jnp.int64), jnp.asarray(P))
        sums += np.asarray(part)
        syy += float(yy)
        if progress and (j + 1) % max(1, n_chunks // 4) == 0:
            progress(f"softmax reference family: fitted on {(j + 1) * n} / {n_chunks * n} prompts")
    gy, gg = sums[..., 0], sums[..., 1]
    risk = (syy - gy ** 2 / gg) / (n * n_chunks)          # (n_L, n_a) at the best c for each a
    best = np.argmin(risk, axis=1)
    idx = np.arange(len(Ls))
    return {"a": FAMILY_SCALES[best], "c": gy[idx, best] / gg[idx, best], "fit_risk": risk[idx, best],
            "a_at_grid_edge": bool(np.any((best == 0) | (best == FAMILY_SCALES.size - 1)))}


def _make_eval(task: online_task.TaskLaw, n: int, l_max: int, f64: bool):
    """A compiled chunk evaluation: squared errors (n_L, n_predictors, n) on one test batch."""
    sp = jnp.asarray(task.sigma_prompt)
    law = task.law()

    @jax.jit
    def chunk(key, j, Ls, soft: Params, lin: Params, lref: Params, sref: Params):
        b = stream.sample(law, key, j, n, l_max, f64)
        zq = b.zq[:, None, :]
        f_opt = baselines.limit_optimum_predict(b.w, zq)
        y = b.yq

        def per_L(args):
            L, ps, pl, plr, psr = args
            G = models.prompt_moment(b.zT, L)
            preds = (online.predict_on_batch("softmax", ps, b, L), models.linear_output(pl, G, b.zq),
                     baselines.ridge_predict(G, zq, L, task.noise_var, task.w_var),
                     baselines.gd_predict(G, zq, sp), f_opt,
                     baselines.limit_predict(ps, b.w, zq, sp, task.noise_var),
                     baselines.limit_predict(pl, b.w, zq, sp, task.noise_var),
                     models.linear_output(plr, G, b.zq), online.predict_on_batch("softmax", psr, b, L))
            return jnp.stack([(f - y) ** 2 for f in preds])

        return jax.lax.map(per_L, (Ls, soft, lin, lref, sref))

    return chunk


def evaluate(cfg: dict, Ls, soft: Params, lin: Params, progress=None) -> list[dict]:
    """Test risks per L (the rows of :func:`evaluate_with_blocks`)."""
    return evaluate_with_blocks(cfg, Ls, soft, lin, progress)[0]


def block_split(n: int, n_chunks: int) -> int:
    """Blocks per test chunk: about :data:`N_BLOCKS` blocks in all, a divisor of the chunk size ``n``."""
    k = max(1, N_BLOCKS // n_chunks)
    while n % k:
        k -= 1
    return k


def evaluate_with_blocks(cfg: dict, Ls, soft: Params, lin: Params, progress=None) -> tuple[list[dict], np.ndarray]:
    """Test risks (mean squared error, standard error over test prompts) per L, and the mean squared
    error of every predictor on each block of test prompts, (n_blocks, n_L, n_predictors) (blocks of
    equal size, independent prompts: the replication unit of the test-sampling jackknife).

    ``soft`` / ``lin``: trained (U, v) stacked over ``Ls``.  The test set is the stream of the
    evaluation seed (independent of training), step ``j`` = test chunk ``j``, prompts at the
    largest L (nested).  Also paired differences (same test prompts) with their standard errors,
    the reference members of both classes (``linear_ref``: the class optimum x_q^T P*_L h;
    ``softmax_ref``: :func:`softmax_family`), the closed-form one-step GD risk and class optimum.
    """
    task = task_of(cfg)
    ev = cfg["eval"]
    n, n_chunks = ev["chunk"], ev["n_test"] // ev["chunk"]
    l_max = max(Ls)
    fam = softmax_family(cfg, Ls, progress)
    P = class_preconds(task, Ls)
    lref, sref = reference_params(P), reference_params(P, fam["a"], fam["c"])
    fn = _make_eval(task, n, l_max, cfg["sample_dtype"] == "float64")
    key = stream.stream_key(ev["seed"], 0)
    Ls_j = jnp.asarray(Ls, jnp.int64)
    soft = Params(jnp.asarray(soft.U), jnp.asarray(soft.v))
    lin = Params(jnp.asarray(lin.U), jnp.asarray(lin.v))
    s1 = np.zeros((len(Ls), len(PREDICTORS)))
    s2 = np.zeros_like(s1)
    d1 = {k: np.zeros(len(Ls)) for k in PAIRS}
    d2 = {k: np.zeros(len(Ls)) for k in PAIRS}
    idx = {p: i for i, p in enumerate(PREDICTORS)}
    n_sub = block_split(n, n_chunks)
    blocks = []
    for j in range(n_chunks):
        e = np.asarray(fn(key, j, Ls_j, soft, lin, lref, sref))  # (n_L, n_pred, n)
        blocks.append(e.reshape(e.shape[0], e.shape[1], n_sub, n // n_sub).mean(-1).transpose(2, 0, 1))
        s1 += e.sum(-1)
        s2 += (e ** 2).sum(-1)
        for k, (a, b) in PAIRS.items():
            diff = e[:, idx[a]] - e[:, idx[b]]
            d1[k] += diff.sum(-1)
            d2[k] += (diff ** 2).sum(-1)
        if progress and (j + 1) % max(1, n_chunks // 4) == 0:
            progress(f"evaluated {(j + 1) * n} / {n_chunks * n} test prompts")
    N = n * n_chunks

    def mean_se(a1, a2):
        m = a1 / N
        return m, np.sqrt(np.maximum(a2 / N - m ** 2, 0.0) / (N - 1))

    rows = []
    for i, L in enumerate(Ls):
        row = {"L": int(L), "n_test": N}
        for p in PREDICTORS:
            m, se = mean_se(s1[i, idx[p]], s2[i, idx[p]])
            row[f"R_{p}"], row[f"R_{p}_se"] = float(m), float(se)
        for k in PAIRS:
            m, se = mean_se(d1[k][i], d2[k][i])
            row[k], row[f"{k}_se"] = float(m), float(se)
        row["R_gd_closed"] = baselines.gd_risk_closed(L, task.sigma_prompt, task.sigma_query,
                                                      task.noise_var, task.w_var)
        row["R_inf_exact"] = float(baselines.limit_optimum_risk(task.noise_var))
        row["R_linear_class_closed"] = baselines.linear_class_risk(L, task.sigma_prompt, task.sigma_query,
                                                                   task.noise_var, task.w_var)
        row["softmax_ref_a"], row["softmax_ref_c"] = float(fam["a"][i]), float(fam["c"][i])
        row["softmax_ref_fit_risk"] = float(fam["fit_risk"][i])
        row["softmax_ref_a_at_grid_edge"] = fam["a_at_grid_edge"]
        rows.append(row)
    return rows, np.concatenate(blocks)
