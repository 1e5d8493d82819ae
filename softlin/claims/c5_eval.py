"""C5 evaluation and convergence: test risks of the trained models and baselines, per-run convergence, metrics.

``evaluate`` scores every trained model and the baselines (:mod:`softlin.baselines`) on one fixed
held-out test set (nested prompts: the length-L test prompt is the first L tokens of the longest,
same queries, same prompts for both models); ``run_convergence`` reads one run's logged training
loss; ``summarize`` turns the per-L table and the loss logs into the metrics the predeclared
criteria read.  Kept apart from :mod:`softlin.claims.c5` (training) so that a change here reruns
the evaluation, not the training.
"""

from __future__ import annotations

import numpy as np

from .. import baselines, metrics, models, online, online_task, optim, stream
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


def plateau_drop(loss, frac: float, x=None) -> float:
    """Relative decrease of the logged loss over the last ``frac`` of training, from an OLS line:
    ``-slope * extent / mean`` (positive: still falling).  ``x``: the training time of each log point
    (default: its index, so the extent is ``frac`` x the number of points); the window is the points in
    the last ``frac`` of ``x``'s range (at least 3), the extent ``frac x (x[-1] - x[0] + x[1] - x[0])``."""
    return end_drop(loss, frac, x)[0]


def _window(loss, frac: float, x=None):
    loss = np.asarray(loss, dtype=float)
    x = np.arange(1, loss.size + 1, dtype=float) if x is None else np.asarray(x, dtype=float)
    total = x[-1] - x[0] + (x[1] - x[0])          # the first point stands for one window of time
    keep = x > x[-1] - frac * total + 1e-12 * abs(total)
    if keep.sum() < 3:
        keep = np.arange(loss.size) >= loss.size - 3
    return x[keep], loss[keep], frac * total


def end_drop(loss, frac: float, x=None, se: bool = False):
    """(drop, se) of :func:`plateau_drop`; ``se`` (if asked; else None): delete-one jackknife over the
    window's log points, which are independent (each averages its own ``log_every`` batches), so the
    error is the noise of the logged loss itself."""
    xw, yw, extent = _window(loss, frac, x)

    def drop(arrs):
        xx, yy = arrs
        return float(-np.polyfit(xx, yy, 1)[0] * extent / yy.mean())

    value = drop((xw, yw))
    return value, (metrics.jackknife(drop, (xw, yw))[1] if se else None)


def learning_time(opt: optim.Optimizer, loss_step) -> np.ndarray:
    """Cumulative learning rate (the sum of lr_t over the steps before) at the middle of each logging
    window (``loss_step``: the step count at the end of each window, evenly spaced): the schedule's
    own clock, in which a window_frac of training is a window_frac of what the optimiser can still move."""
    loss_step = np.asarray(loss_step, dtype=np.int64)
    t = np.arange(int(loss_step[-1]), dtype=float)
    lr = np.full(t.size, float(opt.lr))
    if opt.schedule == "cosine":
        lr = lr * 0.5 * (1.0 + np.cos(np.pi * t / opt.steps))
    if opt.warmup > 0:
        lr = lr * np.minimum(1.0, (t + 1) / opt.warmup)
    cum = np.cumsum(lr)
    every = int(loss_step[1] - loss_step[0]) if loss_step.size > 1 else int(loss_step[0])
    return np.array([cum[max(0, s - every):s].mean() for s in loss_step])


def run_convergence(loss, loss_step, conv: dict, risk: float | None = None,
                    reference: float | None = None, z: float = 0.0,
                    over_reference: tuple | None = None, x_learning=None) -> dict:
    """Per-run convergence from the logged training loss and the run's test risk.

    ``initial``: the first logged loss; ``escape_step``: the first logged step at which the loss is
    below ``escape_frac`` x initial (None: never; a diagnostic); ``rel_drop_end`` (+ ``_se``):
    :func:`end_drop` over the last ``window_frac`` of the log points; ``final``: the mean loss over
    that window.  ``reference``: the test risk of a member of the run's model class (linear: the
    class optimum at its L; softmax: the best member of the reference family), which a converged run
    does not exceed by more than ``reference_tol`` (relative), compared with ``risk`` (the final
    training loss if None).

    Two tests, each decided by the project's rule at ``z`` (``z = 0``: the point estimate), holds /
    fails / undecided: *within reference*, ``risk - (1 + tol) reference <= 0`` (``over_reference``:
    its value and paired standard error over the test prompts; else exact), the test of convergence;
    *flat*, ``drop < max_rel_drop``, a guard against a run still falling, which counts only where it
    fails (the data show a fall of more than max_rel_drop).  ``status``: unconverged if either test
    fails, converged if within reference holds (and flat does not fail), else undecided.
    ``x_learning``: the log points' training time in the schedule's own clock (:func:`learning_time`),
    for the diagnostic ``rel_drop_learning`` (+ ``_se``): the same drop over the last window_frac of
    the learning (not part of the status; see docs/c5_decisions.md, issue 24)."""
    from .. import verdict

    loss = np.asarray(loss, dtype=float)
    initial = float(loss[0])
    below = np.nonzero(loss < conv["escape_frac"] * initial)[0]
    escape = int(loss_step[below[0]]) if below.size else None
    drop, drop_se = end_drop(loss, conv["window_frac"], se=True)
    _, yw, _ = _window(loss, conv["window_frac"])
    out = {"initial": initial, "final": float(yw.mean()), "escape_step": escape, "rel_drop_end": drop,
           "rel_drop_end_se": drop_se, "n_window": int(yw.size)}
    if x_learning is not None:
        out["rel_drop_learning"], out["rel_drop_learning_se"] = end_drop(loss, conv["window_frac"], x_learning, se=True)
    flat = verdict.decide("<", conv["max_rel_drop"], drop, drop_se, z)[0]
    out["flat"] = flat
    within = "holds"
    if reference is not None:
        r = out["final"] if risk is None else float(risk)
        out.update(reference=float(reference), risk=r, risk_over_reference=r / reference)
        v, se = over_reference if over_reference is not None else (r - (1 + conv["reference_tol"]) * reference, None)
        out["risk_minus_tol_reference"], out["risk_minus_tol_reference_se"] = float(v), se
        within = verdict.decide("<=", 0.0, float(v), se, z)[0]
        out["within_reference"] = within
    out["status"] = ("unconverged" if "fails" in (flat, within) else "converged" if within == "holds"
                     else "undecided")
    out["converged"] = out["status"] == "converged"
    return out


# --------------------------------------------------------------------------- the criteria's metrics
def claim_metrics(R, Ls, noise: float, gap_constant: float | None = None) -> dict:
    """The criteria's quantities from a table of mean test risks ``R`` (n_L, len(PREDICTORS)) (columns
    :data:`PREDICTORS`): one function for every replication unit (:func:`with_se` jackknifes it over
    blocks of test prompts, or over seeds).

    Excesses over R_inf are paired with the Bayes-optimal predictor on the same test prompts
    (``R_m - R_limit_opt``: the same expectation R_m - noise, without the test set's own noise floor
    error).  ``gap_slope_top_third``: OLS slope of log(gap) on log(L) over the top third of L (NaN if a
    gap there is not positive); ``gap_L``: gap x L per L; ``gap_constant``: the first-order
    prediction of gap x L (S7), giving ``gap_L_over_predicted`` per L and at the largest L."""
    R = np.asarray(R, dtype=float)
    Ls = np.asarray(Ls)
    col = {p: i for i, p in enumerate(PREDICTORS)}
    soft, lin, opt = R[:, col["softmax"]], R[:, col["linear"]], R[:, col["limit_opt"]]
    gap = soft - lin
    rel = gap / lin
    third = max(1, len(Ls) // 3)
    out = {"gap_rel_at_Lmax": float(abs(rel[-1])), "gap_rel_at_Lmin": float(abs(rel[0])),
           "gap_abs_low_third": float(np.mean(np.abs(gap[:third]))),
           "gap_abs_high_third": float(np.mean(np.abs(gap[-third:])))}
    out["gap_shrink_ratio"] = out["gap_abs_high_third"] / max(out["gap_abs_low_third"], 1e-300)
    exc = {}
    for m, r in (("softmax", soft), ("linear", lin)):
        e = exc[m] = r - opt
        out[m] = {"excess_rel_at_Lmax": float(e[-1] / noise), "excess_rel_at_Lmin": float(e[0] / noise),
                  "excess_ratio": float(e[-1] / e[0]) if e[0] > 0 else float("nan"),
                  "R_at_Lmax": float(r[-1]), "R_at_Lmin": float(r[0]), "excess_L_at_Lmax": float(e[-1] * Ls[-1])}
    top = slice(len(Ls) - max(2, third), None)
    g = gap[top]
    out["gap_slope_top_third"] = (float(np.polyfit(np.log(Ls[top]), np.log(g), 1)[0]) if np.all(g > 0)
                                  else float("nan"))
    out["gap_L"] = {str(int(L)): float(x * L) for L, x in zip(Ls, gap)}
    out["gap_L_at_Lmax"] = float(gap[-1] * Ls[-1])
    out["gap_rel"] = {str(int(L)): float(x) for L, x in zip(Ls, rel)}
    out["excess_ratio_softmax_over_linear_at_Lmax"] = float(exc["softmax"][-1] / exc["linear"][-1])
    if gap_constant is not None:
        out["gap_L_over_predicted"] = {str(int(L)): float(x * L / gap_constant) for L, x in zip(Ls, gap)}
        out["gap_L_over_predicted_at_Lmax"] = float(gap[-1] * Ls[-1] / gap_constant)
    return out


NESTED = ("softmax", "linear")


def with_se(value: dict, se: dict) -> dict:
    """``value`` with every quantity's standard error beside it (``name_se``; nested for softmax/linear)."""
    out = {}
    for k, v in value.items():
        if k in NESTED:
            out[k] = with_se(v, se[k])
        else:
            out[k], out[f"{k}_se"] = v, se[k]
    return out


def jackknifed_metrics(tables, Ls, noise: float, gap_constant: float | None = None) -> dict:
    """:func:`claim_metrics` of the mean of ``tables`` (n_rep, n_L, n_pred: independent replicates of
    equal weight, blocks of test prompts or seeds) with delete-one jackknife standard errors."""
    value, se = metrics.jackknife(lambda t: claim_metrics(np.mean(t, axis=0), Ls, noise, gap_constant),
                                  np.asarray(tables, dtype=float))
    return with_se(value, se)


def prediction(cfg: dict) -> dict | None:
    """S7's first-order prediction for the task of ``cfg``: {c_star, K_soft_star, K_lin, gap_constant,
    ...} (symbolic.export.first_order_gap); None if this checkout has no S7."""
    try:
        from symbolic.export import first_order_gap
    except ImportError:
        return None
    task = task_of(cfg)
    return first_order_gap(task.sigma_prompt, task.sigma_query, task.noise_var, task.w_var)


def _over_reference(blocks, i: int, m: str, tol: float) -> tuple[float, float]:
    """Paired (value, se) of R_m - (1 + tol) R_m_ref at L index ``i`` over the test blocks."""
    col = {p: k for k, p in enumerate(PREDICTORS)}
    d = blocks[:, i, col[m]] - (1 + tol) * blocks[:, i, col[f"{m}_ref"]]
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))


def convergence_summary(runs: dict) -> dict:
    """Counts over per-run :func:`run_convergence` entries (``n_unconverged``: runs not shown
    converged, unconverged or undecided; counts are exact functions of the data and z)."""
    st = {k: r["status"] for k, r in runs.items()}
    bad = sorted(k for k, s in st.items() if s == "unconverged")
    und = sorted(k for k, s in st.items() if s == "undecided")
    drops = {k: r["rel_drop_end"] for k, r in runs.items()}
    flat_und = sorted(k for k, r in runs.items() if r["flat"] == "undecided")
    # a NaN (a diverged run, a NaN risk) makes every count and maximum over the runs NaN: a count
    # that skips it would read as a clean result
    nan_run = any(not np.isfinite(r["rel_drop_end"]) or not np.isfinite(r.get("risk", 0.0))
                  for r in runs.values())

    def count(n):
        return float("nan") if nan_run else n
    out = {"runs": runs, "n_runs": len(runs), "n_failed": count(len(bad)), "n_undecided": count(len(und)),
           "n_unconverged": count(len(bad) + len(und)), "unconverged": bad, "undecided": und,
           "n_flat_undecided": count(len(flat_und)), "flat_undecided": flat_und,
           "n_never_escaped": count(sum(r["escape_step"] is None for r in runs.values())),
           "rel_drop_end_max": float(np.max(list(drops.values()))),
           "worst_run": max(drops, key=lambda k: np.inf if np.isnan(drops[k]) else drops[k])}
    for k in ("n_runs", "n_failed", "n_undecided", "n_unconverged", "n_never_escaped", "n_flat_undecided"):
        out[f"{k}_se"] = metrics.EXACT
    return out


def summarize(rows: list[dict], losses: dict, loss_step, cfg: dict, init_seeds: dict | None = None,
              blocks=None, z: float = 2.0, gap_constant: float | None = None) -> dict:
    """Metrics of the criteria (see config ``c5.criteria``) with test-sampling standard errors: the
    delete-one jackknife over ``blocks`` (:func:`evaluate_with_blocks`: blocks of independent test
    prompts; one training run, so only the test set is replicated).  ``init_seeds``: the restart each
    run (``softmax_L10``, ...) was kept from.  Per-run convergence reads the loss in the schedule's
    log points and decides at ``z`` (the drop in the schedule's time, cfg ``optimizer`` and ``steps``,
    is a diagnostic)."""
    Ls = np.array([r["L"] for r in rows])
    noise = cfg["noise_var"]
    out = {"L": Ls.tolist(), "L_min": int(Ls[0]), "L_max": int(Ls[-1]), "replication": "test prompts",
           "n_blocks": int(len(blocks))}
    out.update(jackknifed_metrics(blocks, Ls, noise, gap_constant))
    if gap_constant is not None:
        out["predicted_gap_constant"], out["predicted_gap_constant_se"] = float(gap_constant), metrics.EXACT
    x = None
    if "optimizer" in cfg and "steps" in cfg:
        from .c5 import optimizer_of
        x = learning_time(optimizer_of(cfg), loss_step)
    by_L = {int(r["L"]): (i, r) for i, r in enumerate(rows)}
    runs = {}
    conv = cfg["convergence"]
    for k, v in losses.items():
        m, L = k.split("_L")
        i, r = by_L[int(L)]
        runs[k] = run_convergence(v, loss_step, conv, r[f"R_{m}"], r[f"R_{m}_ref"], z=z,
                                  over_reference=_over_reference(blocks, i, m, conv["reference_tol"]),
                                  x_learning=x)
        # the rule before issue 24 (point estimates; flat required), for the record
        old = run_convergence(v, loss_step, conv, r[f"R_{m}"], r[f"R_{m}_ref"], z=0.0)
        old["converged"] = old["flat"] == "holds" and old["within_reference"] == "holds"
        runs[k]["converged_by_old_rule"] = old["converged"]
        runs[k]["rel_drop_end_old_rule"] = old["rel_drop_end"]
        if init_seeds is not None:
            runs[k]["init_seed"] = init_seeds[k]
    out["convergence"] = convergence_summary(runs)
    col = {p: k for k, p in enumerate(PREDICTORS)}
    # a NaN (a diverged run, a NaN risk) makes the count NaN: a count that skips it (NaN < x is
    # False) would read as a clean result
    below = 0.0
    for i in range(len(Ls)):
        for m in ("softmax", "linear"):
            d = blocks[:, i, col[m]] - blocks[:, i, col["ridge"]]
            mean, se = float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))
            below += float("nan") if not (np.isfinite(mean) and np.isfinite(se)) else int(mean < -3 * se)
    out["n_below_bayes_3se"] = below if np.isnan(below) else int(below)
    out["n_below_bayes_3se_se"] = metrics.EXACT
    out["R_inf_test"] = float(np.mean([r["R_limit_opt"] for r in rows]))
    out["R_inf_exact"] = noise
    return out
