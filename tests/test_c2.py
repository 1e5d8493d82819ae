"""C2 metrics against independent computations: gradient gap vs autodiff oracle, bootstrap s.e."""
import numpy as np
import pytest

from softlin import concentration as conc
from softlin import metrics, models, population
from softlin import tasks as T
from softlin.claims import c2, c2e
from softlin.params import Params


def test_grad_gap_matches_autodiff_oracle():
    """grad_gaps = autodiff(softmax risk) - autodiff(limit risk), on the same tasks, for several
    parameters in one call (C2e's trajectory iterates: U's label row not 0)."""
    import jax
    sigma = np.diag([2.0, 1.0, 0.5])
    tk = T.sample(9, 3, sigma, 3, 2, 40)
    p = population.bayes_optimum(sigma)
    rng = np.random.default_rng(5)
    plist = [Params(0.8 * p.U, p.v), Params(0.3 * rng.standard_normal((4, 4)), rng.standard_normal(4))]
    Ls = [5, 17, 40]
    for p, diff in zip(plist, conc.grad_gaps(plist, tk, Ls)):
        p = Params(np.asarray(p.U), np.asarray(p.v))
        g_inf = jax.grad(models.linear_risk)(p, models.model_data("limit", tk))
        for j, L in enumerate(Ls):
            g = jax.grad(models.softmax_risk_autodiff)(p, models.prompt_data(tk, L))
            want = np.concatenate([np.ravel(g.U - g_inf.U), np.ravel(g.v - g_inf.v)])
            np.testing.assert_allclose(diff[j], want, rtol=1e-10, atol=1e-13)


def test_grad_gap_zero_at_U_zero_v_part_closed_form():
    """U = 0, v = e_{d+1}: f_L = mean y_k, limit f = 0; dR/dv_{d+1} gap = mean_t,q (f_L - y_q) ybar - (0 - y_q) * 0."""
    sigma = np.eye(3)
    tk = T.sample(2, 3, sigma, 4, 3, 30)
    p = Params(np.zeros((4, 4)), np.eye(4)[3])
    diff = conc.grad_gaps([p], tk, [30])[0, 0]
    ybar = tk.y.mean(axis=1)  # (n,)
    r = ybar[:, None] - tk.yq  # residual of softmax(L) (f = ybar)
    want_vy = np.mean(r * ybar[:, None])  # dR/dv_{d+1}: mean r * m1_{d+1}, m1 = zbar
    assert diff[-1] == pytest.approx(want_vy, rel=1e-10)


def test_norm_over_blocks_bootstrap_se():
    rng = np.random.default_rng(1)
    vals, ses = [], []
    for _ in range(200):
        vecs = 1.0 + rng.standard_normal((20, 1, 1))  # norm of mean of N(1, 1): s.e. 1/sqrt(20)
        v, s = metrics.norm_over_blocks(vecs, 300, 0)
        vals.append(v[0])
        ses.append(s[0])
    assert np.std(vals) == pytest.approx(1 / np.sqrt(20), rel=0.2)
    assert np.mean(ses) == pytest.approx(1 / np.sqrt(20), rel=0.2)


def test_sweep_probes_hit_target_lambda():
    sigma = np.diag([2.0, 1.0, 0.5])
    for pr, target in zip(c2.sweep_probes(sigma, [0.3, 0.9]), [0.3, 0.9]):
        A = np.asarray(pr["U"])[:3, :3]
        root = np.sqrt(sigma)
        assert np.linalg.eigvalsh(root @ A @ sigma @ A @ root).max() == pytest.approx(target, rel=1e-10)
        assert pr["beta"] == pytest.approx(min(0.5, 1 / (4 * target)))
        assert pr["v"] == population.bayes_optimum(sigma).v.tolist()


# --------------------------------------------------------------------------- per-query gap (issue #12)
def _sub_tasks(t, pairs, n_query=None):
    """The antithetic pairs ``pairs`` of ``t`` (both partners), optionally only the first queries."""
    rows = np.concatenate([pairs, np.asarray(pairs) + t.n_pairs])
    q = slice(None) if n_query is None else slice(0, n_query)
    return T.Tasks(x=t.x[rows], w=t.w[rows], xq=t.xq[rows][:, q], sigma=t.sigma, token_kind=t.token_kind)


def test_per_query_gaps_vs_autodiff_of_the_naive_loss():
    """grad_gaps_per_query against per-(task, query) jacobians of the naive losses (plain autodiff of
    softmax_predict / linear_predict): the mean squared gaps and the pooled difference."""
    import jax
    import jax.numpy as jnp
    sigma = np.diag([2.0, 1.0, 0.5])
    tk = T.sample(21, 3, sigma, 3, 2, 40)
    star = population.bayes_optimum(sigma)
    rng = np.random.default_rng(3)
    plist = [Params(0.8 * star.U, star.v), Params(star.U + 0.2 * rng.normal(size=(4, 4)), star.v + 0.2 * rng.normal(size=4))]
    Ls = [5, 40]
    msq_U, msq_v, diff = conc.grad_gaps_per_query(plist, tk, Ls)
    lim = models.model_data("limit", tk)

    def per_query_loss(predict, data):
        return lambda p: 0.5 * (predict(p, data) - data.yq) ** 2          # (n, Q)

    for i, p in enumerate(plist):
        p = Params(jnp.asarray(p.U), jnp.asarray(p.v))
        J_inf = jax.jacrev(per_query_loss(models.linear_predict, lim))(p)
        for j, L in enumerate(Ls):
            J_L = jax.jacrev(per_query_loss(models.softmax_predict, models.prompt_data(tk, L)))(p)
            dU = np.asarray(J_L.U - J_inf.U)                               # (n, Q, D, D)
            dv = np.asarray(J_L.v - J_inf.v)
            assert msq_U[i, j] == pytest.approx(np.mean(np.sum(dU ** 2, axis=(-2, -1))), rel=1e-10)
            assert msq_v[i, j] == pytest.approx(np.mean(np.sum(dv ** 2, axis=-1)), rel=1e-10)
            want = np.concatenate([dU.mean(axis=(0, 1)).ravel(), dv.mean(axis=(0, 1))])
            np.testing.assert_allclose(diff[i, j], want, rtol=1e-10, atol=1e-13)
    # the pooled difference is the gradient gap of the risks (grad_gaps, the softmax-moment kernel)
    np.testing.assert_allclose(diff, conc.grad_gaps(plist, tk, Ls), rtol=1e-10, atol=1e-13)


def test_slope_does_not_depend_on_block_size():
    """The same 16 antithetic pairs x 4 queries split into 16 blocks of 1 pair or into 2 blocks of
    8 pairs: the per-query gap (what the criteria read) gives the same curve and slopes, while the
    former block-RMS estimator's slope moves (by more than 0.1 at some probe), so this test tells
    the two apart."""
    sigma = np.diag([2.0, 1.0, 0.5])
    setting = dict(name="anisotropic", sigma=sigma.tolist(), token_kind="gauss")
    probes = conc.probe_design(sigma, eq9=True, star=True, scaled_lambda=[0.2])
    plist = [conc.probe_params(p) for p in probes]
    Ls = [2 ** k for k in range(4, 13)]
    big = T.sample(4711, 3, sigma, 16, 4, max(Ls))
    fits = {}
    for n_blocks in (16, 2):
        per = 16 // n_blocks
        blocks = [conc.grad_gaps_per_query(plist, _sub_tasks(big, np.arange(b * per, (b + 1) * per)), Ls)
                  for b in range(n_blocks)]
        msq = {"U": np.asarray([b[0] for b in blocks]), "v": np.asarray([b[1] for b in blocks])}
        diff = np.asarray([b[2] for b in blocks])
        _, fits[n_blocks], _ = c2.summarize(setting, probes, diff, Ls, 50, 0, msq)
    moved = []
    for name in fits[16]:
        a, b = fits[16][name], fits[2][name]
        for k in ("U", "v"):
            assert a[k]["slope"] == pytest.approx(b[k]["slope"], abs=1e-9), (name, k)
            assert a[k]["last"] == pytest.approx(b[k]["last"], rel=1e-9), (name, k)
            moved.append(abs(a[f"blockrms_{k}"]["slope"] - b[f"blockrms_{k}"]["slope"]))
    assert max(moved) > 0.1, moved



# --------------------------------------------------------------------------- issue 23: trajectory blocks
def test_pair_blocks_partition_the_pairs_and_average_to_the_pooled_gap():
    """The blocks of whole antithetic pairs along C3's trajectory: every pair in exactly one block,
    partners together, and the mean of the blocks' gradient differences is the gradient difference
    of all tasks (conc.grad_gaps on the whole set, to 1e-10)."""
    sigma = np.diag([2.0, 1.0, 0.5])
    tk = T.sample(5, 3, sigma, 6, 2, 64)
    blocks = c2e.pair_blocks(tk, 3)
    assert [b.n_pairs for b in blocks] == [2, 2, 2]
    seen = np.concatenate([b.w[:b.n_pairs] for b in blocks])
    np.testing.assert_array_equal(seen, tk.w[:6])
    for b in blocks:
        np.testing.assert_array_equal(b.w[b.n_pairs:], -b.w[:b.n_pairs])       # partners kept together
        np.testing.assert_array_equal(b.x[b.n_pairs:], b.x[:b.n_pairs])
    star = population.bayes_optimum(sigma)
    plist = [Params(0.9 * star.U, star.v), Params(1.2 * star.U, 0.8 * star.v)]
    Ls = [8, 64]
    mean = np.mean([conc.grad_gaps(plist, b, Ls) for b in blocks], axis=0)
    np.testing.assert_allclose(mean, conc.grad_gaps(plist, tk, Ls), rtol=1e-10, atol=1e-13)
    with pytest.raises(ValueError, match="divide"):
        c2e.pair_blocks(tk, 4)


@pytest.mark.parametrize("n", [3, 7])
def test_jackknife_shape_of_mean_equals_the_generic_path(rng, n):
    """curves.jackknife_shape_of_mean (delete-one and delete-two means) against curves.jackknife_shape with
    reduce = of_mean(blocks.mean(0)) (np.delete replicates): every value and s.e., last_over_se included,
    to 1e-12, for the pooled norm (L on axis -2) and the RMS (L last)."""
    from softlin.claims import curves

    Ls = [4, 8, 16, 32, 64]
    vecs = rng.normal(size=(n, 2, len(Ls), 5)) + 1.0
    cases = [(vecs, lambda m: np.linalg.norm(m, axis=-1), -2), (np.sum(vecs ** 2, axis=-1), np.sqrt, -1)]
    for x, of_mean, axis in cases:
        fast = curves.jackknife_shape_of_mean(Ls, x, of_mean, l_axis=axis)
        slow = curves.jackknife_shape(Ls, x, lambda b: of_mean(np.mean(b, axis=0)))
        assert set(fast[0]) == set(slow[0]) and ("last_over_se" in fast[0]) == (n >= 3)
        for k in slow[0]:
            for a, b in ((fast[0][k], slow[0][k]), (fast[1][k], slow[1][k])):
                np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=1e-12, atol=1e-13)


# --------------------------------------------------------------------------- issue 31: C2e across C3's seeds
def test_trajectory_fit_is_the_seed_mean_curve_with_its_seed_level_error(rng):
    """c2e.trajectory_fit on four seeds' records (3 prompt draws x 2 blocks each) against numpy written
    here: each seed's curve the mean over its draws of the max over steps of the norm of the draw's mean
    difference over its blocks (U, v, full), the fitted curve their mean, its s.e. std(ddof=1) / sqrt(n)
    at each L (the jackknife of a mean), slope_full and each rise jackknifed over the seeds by np.delete
    and np.polyfit, df = n_seeds - 1; per_seed the seed's own fit."""
    d, n_rec, Ls = 2, 5, np.array([8, 16, 32, 64, 128])
    K = (d + 1) ** 2 + d + 1
    alongs = {}
    for s in (777, 790, 803, 816):
        bd = rng.normal(size=(6, n_rec, len(Ls), K)) * 0.3 + np.linspace(2.0, 0.5, len(Ls))[None, None, :, None]
        z = c2e.Parts(*(np.zeros((n_rec, len(Ls))) for _ in range(3)))
        alongs[s] = c2e.AlongTrajectory(np.arange(n_rec) * 10, Ls, bd, np.array(6), z, z, z)
    out = c2e.trajectory_fit(alongs, z=2.0, n_prompts=3)
    split = {"U": slice(0, (d + 1) ** 2), "v": slice((d + 1) ** 2, K), "full": slice(0, K)}

    def curve(bd, part):
        draws = bd.reshape((3, 2) + bd.shape[1:]).mean(axis=1)                  # (draw, n_rec, n_L, K)
        return np.linalg.norm(draws[..., split[part]], axis=-1).max(axis=1).mean(axis=0)

    def slope(y):
        return np.polyfit(np.log10(Ls), np.log10(y), 1)[0]
    assert out["seeds"] == [777, 790, 803, 816] and out["n_seeds"] == 4 and out["n_prompts"] == 3
    for part in ("U", "v", "full"):
        G = np.array([curve(alongs[s].block_diff, part) for s in out["seeds"]])
        f = out[part]
        np.testing.assert_allclose(f["max"], G.mean(axis=0), rtol=1e-12)
        np.testing.assert_allclose(f["max_se"], G.std(axis=0, ddof=1) / 2.0, rtol=1e-10)
        reps = np.array([slope(np.delete(G, i, axis=0).mean(axis=0)) for i in range(4)])
        assert f["slope_full"] == pytest.approx(slope(G.mean(axis=0)), rel=1e-10)
        assert f["slope_full_se"] == pytest.approx(np.sqrt(3 / 4 * np.sum((reps - reps.mean()) ** 2)), rel=1e-10)
        assert f["slope_full_df"] == 3 and f["n_increases_df"] == 3
        np.testing.assert_allclose(f["n_increases_rises"], np.diff(G.mean(axis=0)), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(f["n_increases_rises_se"], np.diff(G, axis=1).std(axis=0, ddof=1) / 2.0, rtol=1e-10)
        for i, s in enumerate(out["seeds"]):
            own = out["per_seed"][str(s)][part]
            np.testing.assert_allclose(own["max"], G[i], rtol=1e-12)
            assert own["slope_full"] == pytest.approx(slope(G[i]), rel=1e-10)
    # the largest seed's share of the seeds' sum (full gradient), at the L where it is largest
    G = np.array([curve(alongs[s].block_diff, "full") for s in out["seeds"]])
    share = G / G.sum(axis=0)
    i, j = np.unravel_index(np.argmax(share), share.shape)
    assert out["largest_seed"] == {"seed": out["seeds"][i], "share": pytest.approx(share[i, j], rel=1e-12), "L": int(Ls[j])}
    # each seed's prompt-sampling error: delete one block of one draw (its draw's mean over the other), loops here
    bd = alongs[790].block_diff.reshape((3, 2) + alongs[790].block_diff.shape[1:])
    reps = []
    for r in range(3):
        for b in range(2):
            draws = bd.mean(axis=1)
            draws[r] = bd[r, 1 - b]
            reps.append(np.linalg.norm(draws, axis=-1).max(axis=1).mean(axis=0))
    reps = np.array(reps)
    own = c2e.prompt_fit(alongs[790], 2.0, n_prompts=3)["full"]
    np.testing.assert_allclose(own["max_se"], np.sqrt(5 / 6 * np.sum((reps - reps.mean(axis=0)) ** 2, axis=0)), rtol=1e-10)
    assert own["n_increases_df"] == 5
    with pytest.raises(ValueError, match="do not split into n_prompts = 4"):
        c2e.per_draw(alongs[790].block_diff, 4)
    bad = dict(alongs)
    bad[777] = alongs[777]._replace(L=Ls * 2)
    with pytest.raises(ValueError, match="different prompt lengths"):
        c2e.trajectory_fit(bad)


def test_c2e_trains_c3s_linear_inf_run_bit_for_bit(smoke_built):
    """C2's trajectory job trains linear(inf) itself (it reads no prompt, so C2 needs C3's tasks, not its
    softmax(L) trainings): c3.train_limit on C3's smoke tasks, here, equals the limit run of C3's own
    record, written by its c3_train job in another process, bit for bit; C2e's record of that seed has
    its recorded steps."""
    import jax

    from softlin import records, workflow_config
    from softlin.claims import c3

    cfg = workflow_config.load(smoke_built, {"preset": "smoke"})[0]
    c = cfg["c3"]
    res = smoke_built / "results"
    for setting in cfg["c2"]["trajectory"]["settings"]:
        tasks = T.Tasks.load(res / "c3" / "tasks" / f"{setting}_s{c['seed0']}.npz")
        # the job draws C3's training tasks itself: c3_sample's file, written in another process, bit for bit
        st = c["settings"][setting]
        sigma = np.diag(st["sigma"]) if np.ndim(st["sigma"]) == 1 else np.asarray(st["sigma"])
        ours_tasks = c3.training_tasks({"sigma": sigma, "token_kind": st["token_kind"]}, c["seed0"], c["d"],
                                       c["n_pairs"], c["n_query"], max(c["L"]))
        for f in ("x", "w", "xq", "sigma"):
            np.testing.assert_array_equal(getattr(ours_tasks, f), getattr(tasks, f))
        assert (ours_tasks.token_kind, ours_tasks.seed) == (tasks.token_kind, tasks.seed)
        ours = c3.train_limit(tasks, c["lr"], c["steps"], c["record_every"], c["loop_convention"])
        theirs = records.load(res / "c3" / "trajectories" / f"{setting}_s{c['seed0']}.npz", c3.runs_like(c)).limit
        for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        along = records.load(res / "c2" / "trajectory" / f"{setting}_s{c['seed0']}.npz",
                             c2e.along_like(dict(c, n_blocks=cfg["c2"]["trajectory"]["n_blocks"],
                                                n_prompts=cfg["c2"]["trajectory"]["n_prompts"])))
        np.testing.assert_array_equal(along.step, theirs.step)


def test_each_entry_reads_the_blocks_of_its_own_setting():
    """c2.blocks_factor: the replication table's n for an entry is its setting's blocks (the metrics'
    protocol ``n_blocks_by_setting``), named by
    the path (sweep.<setting>, fits.<setting>/<probe>) or the entry (<setting>/<probe>); the fewest of
    any setting where neither names one; c2.n_blocks where no setting is given its own."""
    from softlin.claims import c2 as c2_

    protocol = {"n_blocks": 256, "n_blocks_by_setting": {"isotropic": 1024, "anisotropic": 256, "rademacher": 64}}
    cases = [("summary.U.ratio", "isotropic/star_x1.316", 1024), ("summary.U.ratio", "anisotropic/star", 256),
             ("sweep.isotropic.U.dev", "sweep_lam0.55", 1024), ("sweep.anisotropic.U.shallowing", None, 256),
             ("fits.rademacher/star.U.slope_last4", None, 64), ("summary.U.ratio", None, 64)]
    for path, label, want in cases:
        assert c2_.blocks_behind(protocol, path, label) == want, (path, label)
    assert c2_.blocks_behind({"n_blocks": 128}, "sweep.isotropic.U.dev", "sweep_lam0.55") == 128
