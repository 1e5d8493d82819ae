"""C5's evaluation, per-run convergence and metrics (softlin.claims.c5_eval, c5_convergence,
c5_summary) against numpy, closed forms and simulated runs."""
import numpy as np
import pytest

from softlin import models, online, optim, stream
from softlin._jax import jnp
from softlin.claims import c5, c5_convergence, c5_eval, c5_summary
from softlin.claims.c5_convergence import run_convergence
from softlin.params import Params

from helpers import C5_D as D
from helpers import c5_risk_table, optimizer
from helpers import c5_task as _task


def test_plateau_drop():
    """plateau_drop: ~0 on a flat noisy curve, the fitted relative fall on a linear one."""
    rng = np.random.default_rng(0)
    assert abs(c5_convergence.plateau_drop(1 + 0.001 * rng.normal(size=1000), 0.1)) < 0.01
    y = np.linspace(2.0, 1.0, 1000)
    assert c5_convergence.plateau_drop(y, 0.1) == pytest.approx(0.1 * 1.0 / 1.05, rel=0.02)


def test_run_convergence():
    """Flat at the end and within the class reference: converged; the escape step is reported but not
    required (a run on its class optimum above half its first loss is converged); flat on a plateau
    above the reference, or still falling: not converged."""
    conv = {"window_frac": 0.1, "max_rel_drop": 0.02, "escape_frac": 0.5, "reference_tol": 0.05}
    step = np.arange(1, 101) * 10
    curve = np.where(step < 400, 1.0, 0.2)
    r = run_convergence(curve, step, conv)
    assert r["escape_step"] == 400 and r["converged"] and r["final"] == pytest.approx(0.2)
    stuck = run_convergence(np.full(100, 0.7), step, conv, risk=0.7, reference=0.3)
    assert stuck["escape_step"] is None and not stuck["converged"] and abs(stuck["rel_drop_end"]) < 1e-12
    at_optimum = run_convergence(np.full(100, 0.7), step, conv, risk=0.71, reference=0.7)
    assert at_optimum["escape_step"] is None and at_optimum["converged"]
    falling = run_convergence(np.linspace(1.0, 0.1, 100), step, conv)
    assert falling["escape_step"] is not None and not falling["converged"]
    # escaped and flat, but on an intermediate plateau above a member of the class: not converged
    assert run_convergence(curve, step, conv, reference=0.15)["converged"] is False
    assert run_convergence(curve, step, conv, reference=0.195)["converged"] is True
    # the test risk, when given, is what is compared (0.16 <= 1.05 x 0.155 < 0.17)
    assert run_convergence(curve, step, conv, risk=0.16, reference=0.155)["converged"] is True
    assert run_convergence(curve, step, conv, risk=0.17, reference=0.155)["converged"] is False


def test_reference_params_predictions():
    """reference_params: linear attention gives x_q^T P Ghat_xy; softmax attention gives
    c sum_l softmax_l(a x_l^T P^T x_q) y_l (numpy, on the prompt's first L tokens)."""
    b = stream.sample(_task().law(), stream.stream_key(12), 0, 6, 20)
    zT, zq = np.asarray(b.zT), np.asarray(b.zq)
    P = np.random.default_rng(5).normal(size=(5, 5))
    a, c, L = 0.7, 1.9, 13
    lin = c5_eval.reference_params(P[None])
    soft = c5_eval.reference_params(P[None], [a], [c])
    G = np.einsum("nil,njl->nij", zT[..., :L], zT[..., :L]) / L
    f_lin = np.asarray(models.linear_output(Params(lin.U[0], lin.v[0]), jnp.asarray(G), b.zq))
    f_soft = np.asarray(online.predict_on_batch("softmax", Params(soft.U[0], soft.v[0]), b, L))
    for i in range(6):
        X, y, xq = zT[i, :5, :L].T, zT[i, 5, :L], zq[i, :5]
        np.testing.assert_allclose(f_lin[i], xq @ P @ (X.T @ y / L), rtol=1e-12, atol=1e-13)
        s = a * X @ P.T @ xq  # score z_l^T U z_q with U = blockdiag(a P^T, 0)
        p = np.exp(s - s.max())
        np.testing.assert_allclose(f_soft[i], c * (p / p.sum()) @ y, rtol=1e-11, atol=1e-13)


def _eval_cfg(n_test=64, chunk=32, Ls=(4, 8, 12)):
    return dict(d=5, kms_rho=0.5, noise_var=0.1, w_var=0.2, covariance_mode="correct", sample_dtype="float32",
                L=list(Ls), models=["softmax", "linear"],
                eval={"n_test": n_test, "chunk": chunk, "seed": 7},
                convergence={"window_frac": 0.1, "max_rel_drop": 0.02, "escape_frac": 0.5, "reference_tol": 0.05})


def test_softmax_family_against_numpy():
    """The softmax reference family's fit (best scale a on the grid, least-squares c) against a plain
    numpy brute force over the same reference prompts."""
    cfg = _eval_cfg()
    task = c5.task_of(cfg)
    fam = c5_eval.softmax_family(cfg, cfg["L"])
    P = c5_eval.class_preconds(task, cfg["L"])
    key = stream.stream_key(7, c5_eval.REFERENCE_STREAM)
    bs = [stream.sample(task.law(), key, j, 32, 12) for j in range(2)]
    zT = np.concatenate([np.asarray(b.zT) for b in bs])
    zq = np.concatenate([np.asarray(b.zq) for b in bs])
    yq = np.concatenate([np.asarray(b.yq) for b in bs])
    for i, L in enumerate(cfg["L"]):
        X, y = np.swapaxes(zT[:, :5, :L], 1, 2), zT[:, 5, :L]
        best = (np.inf, None, None)
        for a in c5_eval.FAMILY_SCALES:
            s = a * np.einsum("nld,de,ne->nl", X, P[i], zq[:, :5])
            p = np.exp(s - s.max(1, keepdims=True))
            g = (p * y).sum(1) / p.sum(1)
            c = (g @ yq) / (g @ g)
            r = np.mean((c * g - yq) ** 2)
            if r < best[0]:
                best = (r, a, c)
        assert fam["a"][i] == best[1]
        np.testing.assert_allclose([fam["fit_risk"][i], fam["c"][i]], [best[0], best[2]], rtol=1e-9)


def test_linear_reference_risk_vs_closed_form():
    """On the test set, the linear reference member's risk matches the closed-form class optimum
    (symbolic S6) within 4 standard errors, and is below one-step GD's."""
    cfg = _eval_cfg(n_test=4096, chunk=1024, Ls=(5, 10, 20))
    zero = Params(np.zeros((3, D, D)), np.zeros((3, D)))
    rows = c5_eval.evaluate(cfg, cfg["L"], zero, zero)
    for r in rows:
        assert abs(r["R_linear_ref"] - r["R_linear_class_closed"]) < 4 * r["R_linear_ref_se"], r
        assert r["R_linear_class_closed"] < r["R_gd_closed"]


def test_end_drop_se_matches_the_spread_over_simulated_runs():
    """end_drop's jackknife se over the window's log points against the spread of the drop over 2000
    independent simulated noisy logs (flat, and falling by 5% over the window), within 15%; a
    noiseless flat log decides flat at z = 2, a log falling by 3% decides 'still falling' (unconverged),
    one falling by ~2% (on the threshold) with noise leaves flatness undecided, which does not make
    the run unconverged; the within-reference test decides the status."""
    rng = np.random.default_rng(1)
    n, sigma = 160, 0.007
    conv = {"window_frac": 0.1, "max_rel_drop": 0.02, "escape_frac": 0.5, "reference_tol": 0.05}
    step = np.arange(1, n + 1) * 250
    t = np.arange(n)
    for fall in (0.0, 0.05):
        mean = 0.3 * (1 - fall * (t - (n - 16)) / 16 * (t >= n - 16))
        drops, ses = [], []
        for _ in range(2000):
            y = mean * (1 + sigma * rng.normal(size=n))
            d, se = c5_convergence.end_drop(y, 0.1, se=True)
            drops.append(d)
            ses.append(se)
        assert np.mean(drops) == pytest.approx(fall, abs=3 * np.std(drops) / np.sqrt(2000) + 0.002)
        assert np.sqrt(np.mean(np.square(ses))) == pytest.approx(np.std(drops), rel=0.15)
    sd = np.std(drops)  # ~ 0.006 for 16 points at sigma = 0.007
    flat = run_convergence(0.3 * (1 + sigma * rng.normal(size=n)), step, conv, z=2.0)
    assert flat["flat"] in ("holds", "undecided") and flat["rel_drop_end_se"] == pytest.approx(sd, rel=0.5)
    noiseless = {"window_frac": 0.1, "max_rel_drop": 0.02, "escape_frac": 0.5, "reference_tol": 0.05}
    assert run_convergence(np.full(n, 0.3) + 1e-6 * rng.normal(size=n), step, noiseless, z=2.0)["flat"] == "holds"
    falling = 0.3 * (1 - 0.3 * t / n)  # 3% over the last 10%: fails at any z with no noise
    r = run_convergence(falling * (1 + 1e-4 * rng.normal(size=n)), step, conv, z=2.0)
    assert r["flat"] == "fails" and r["status"] == "unconverged"
    edge = 0.3 * (1 - 0.2 * t / n) * (1 + sigma * rng.normal(size=n))  # ~2.1% over the window, se ~0.006
    r = run_convergence(edge, step, conv, z=2.0)
    assert r["flat"] == "undecided" and r["status"] == "converged"   # flatness counts only where it fails
    # within reference decides: paired (value, se) of risk - 1.05 reference
    assert run_convergence(edge, step, conv, 0.3, 0.3, z=2.0, over_reference=(-0.01, 0.006, 63))["status"] == "undecided"
    assert run_convergence(edge, step, conv, 0.3, 0.3, z=2.0, over_reference=(-0.02, 0.006, 63))["status"] == "converged"
    assert run_convergence(edge, step, conv, 0.3, 0.3, z=2.0, over_reference=(0.02, 0.006, 63))["status"] == "unconverged"


def test_learning_time_follows_the_schedule():
    """learning_time: cumulative learning rate at each logging window's middle; constant lr -> the
    step count x lr; cosine with warm-up -> the numpy sum of the schedule written here."""
    step = np.arange(1, 41) * 25
    const = optimizer("adam", 0.1, steps=1000)
    x = c5_convergence.learning_time(const, step)
    np.testing.assert_allclose(x, 0.1 * (step - 12), rtol=1e-12)  # mean of 0.1 (t + 1), t = s - 25 .. s - 1
    cos = optimizer("adam", 0.1, schedule="cosine", steps=1000, warmup=200)
    tt = np.arange(1000)
    lr = 0.1 * 0.5 * (1 + np.cos(np.pi * tt / 1000)) * np.minimum(1, (tt + 1) / 200)
    cum = np.cumsum(lr)
    np.testing.assert_allclose(c5_convergence.learning_time(cos, step), [cum[s - 25:s].mean() for s in step], rtol=1e-12)
    # in the schedule's time, the last 10% of cosine training spans far more than the last 10% of the steps
    xw, _, _ = c5_convergence._window(np.ones(40), 0.1, c5_convergence.learning_time(cos, step))
    assert xw.size > 8


def test_schedule_has_one_home_read_by_jax_and_numpy():
    """optim.learning_rate is the one schedule: under jax.numpy (training) and numpy (learning_time)
    it gives the same rates (to the two cos' last bits), and the closed form at its landmarks: lr / warmup
    at step 0, lr / 2 half way through the cosine, lr (1 + cos(pi t / T)) / 2 after the warm-up."""
    opt = optimizer("adam", 0.1, schedule="cosine", steps=1000, warmup=200)
    t = np.arange(1000.0)
    lr_np, lr_jax = optim.learning_rate(opt, t, np), np.asarray(optim.learning_rate(opt, jnp.asarray(t)))
    np.testing.assert_allclose(lr_jax, lr_np, rtol=1e-14, atol=1e-16)  # near its end 1 + cos cancels
    assert lr_np[0] == pytest.approx(0.1 / 200 * 0.5 * (1 + np.cos(0.0)), rel=1e-15)
    assert lr_np[500] == pytest.approx(0.05, rel=1e-15)
    assert lr_np[700] == pytest.approx(0.05 * (1 + np.cos(0.7 * np.pi)), rel=1e-14)
    const = optimizer("sgd", 0.02, steps=1000)
    np.testing.assert_array_equal(np.broadcast_to(optim.learning_rate(const, t, np), t.shape), np.full(1000, 0.02))


def test_optimizer_of_reads_every_key_and_defaults_none():
    """c5.optimizer_of takes every field from the validated section (the schema's defaults filled in
    by validation); a key missing is a clear error, not a silent default."""
    o = {"name": "adam", "lr": 0.1, "momentum": 0.0, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6,
         "schedule": "cosine", "warmup": 7}
    assert c5.optimizer_of({"optimizer": o, "steps": 600}) == optim.Optimizer("adam", 0.1, 0.0, 0.8, 0.99, 1e-6,
                                                                              "cosine", 600, 7)
    with pytest.raises(KeyError, match="beta2"):
        c5.optimizer_of({"optimizer": {k: v for k, v in o.items() if k != "beta2"}, "steps": 600})
    assert optim.Optimizer._field_defaults == {}   # the schema is the defaults' one home


def test_claim_metrics_rate_and_prediction():
    """A gap exactly C / L: log-log slope over the top third -1, gap x L = C everywhere, C / S7 = 1;
    excesses paired with the Bayes-optimal column; a gap C / sqrt(L): slope -1/2."""
    Ls = np.array([10, 20, 50, 100, 200, 500, 1000])
    R = c5_risk_table(14.0, Ls)
    m = c5_summary.claim_metrics(R, Ls, 0.1, gap_constant=14.0)
    assert m["gap_slope_top_third"] == pytest.approx(-1.0, abs=1e-12)
    assert m["gap_L_at_Lmax"] == pytest.approx(14.0) and m["gap_L_over_predicted_at_Lmax"] == pytest.approx(1.0)
    assert m["gap_L"]["10"] == pytest.approx(14.0)
    assert m["linear"]["excess_rel_at_Lmax"] == pytest.approx(6.5e-3 / 0.1)
    assert m["excess_ratio_softmax_over_linear_at_Lmax"] == pytest.approx(20.5 / 6.5)
    R2 = R.copy()
    col = {p: i for i, p in enumerate(c5_eval.PREDICTORS)}
    R2[:, col["softmax"]] = R[:, col["linear"]] + 0.3 / np.sqrt(Ls)
    assert c5_summary.claim_metrics(R2, Ls, 0.1)["gap_slope_top_third"] == pytest.approx(-0.5, abs=1e-12)
    R2[-1, col["softmax"]] = R2[-1, col["linear"]] - 1e-3   # a negative gap: no slope
    assert np.isnan(c5_summary.claim_metrics(R2, Ls, 0.1)["gap_slope_top_third"])


def test_evaluate_blocks_match_the_rows():
    """evaluate_with_blocks: the blocks partition the test prompts (their mean is each row's risk), and
    the jackknife se of a risk over the blocks is close to the per-prompt standard error (same data)."""
    cfg = _eval_cfg(n_test=1024, chunk=256, Ls=(5, 10, 20))
    zero = Params(np.zeros((3, D, D)), np.zeros((3, D)))
    rows, blocks = c5_eval.evaluate_with_blocks(cfg, cfg["L"], zero, zero)
    assert blocks.shape == (64, 3, len(c5_eval.PREDICTORS))
    col = c5_eval.PREDICTORS.index("linear_ref")
    for i, r in enumerate(rows):
        assert blocks[:, i, col].mean() == pytest.approx(r["R_linear_ref"], rel=1e-12)
        se = blocks[:, i, col].std(ddof=1) / np.sqrt(64)
        assert se == pytest.approx(r["R_linear_ref_se"], rel=0.3)
