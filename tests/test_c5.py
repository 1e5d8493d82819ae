"""C5's training jobs and replicates (softlin.claims.c5, c5_replicates): a job's runs, random
restarts selected on training data, aggregation across replicates."""
import numpy as np
import pytest

from softlin import qkvo
from softlin._jax import jnp
from softlin.claims import c5, c5_eval
from softlin.params import Params

from helpers import C5_D as D
from helpers import c5_risk_table, schema_defaults


def test_train_run_and_split():
    """train_run writes per-model arrays over the group's lengths; split_runs gives each (model, L)
    its own run, the (U, v) image of its raw parameters."""
    cfg = dict(d=5, kms_rho=0.5, noise_var=0.1, w_var=0.2, covariance_mode="correct",
               parametrisation="qkvo", models=["softmax", "linear"], seed=3, init_seed=0, steps=40,
               batch=8, optimizer={**schema_defaults("c5", "optimizer"), "name": "sgd", "lr": 1e-2},
               streams="shared", log_every=10,
               chunk=20, sample_dtype="float32", restarts=1, restart_select_frac=0.1)
    job = c5.train_run(cfg, [6, 11])
    runs = c5.split_runs(job, cfg["models"])
    assert runs["softmax", 6]["init_seed"] == 0
    assert sorted(runs) == [("linear", 6), ("linear", 11), ("softmax", 6), ("softmax", 11)]
    assert runs["linear", 6]["U"].shape == (D, D) and runs["linear", 6]["loss"].shape == (4,)
    raw = qkvo.QKVO(*(jnp.asarray(x[1]) for x in job.runs["softmax"].raw))
    np.testing.assert_allclose(runs["softmax", 11]["U"], np.asarray(qkvo.to_uv(raw).U), rtol=1e-14)


def test_best_of_restarts_keeps_the_lowest_end_loss_per_run():
    """Restarts are chosen per (model, L) on the mean of the last 10% of the logged training loss
    (here the last 2 of 20 windows), whatever the earlier windows say; every array of a run comes
    from the same restart."""
    L, steps = np.array([10, 20]), np.arange(1, 21) * 50

    def job(k, loss, L=L):
        return c5.Job(L, steps, np.asarray(1000), {"softmax": c5.Run(
            np.full((2, 6, 6), float(k)), np.full((2, 6), float(k)), loss, np.full(2, k), Params(
                np.full((2, 6, 6), float(k)), np.full((2, 6), float(k))))})

    early_low = np.ones((2, 20))
    early_low[:, :18] = 0.1            # lowest early, ends at 1.0 on both lengths
    a = np.full((2, 20), 0.5)          # 0.5 at L = 10 ...
    a[1, -2:] = [0.3, 0.5]             # ... 0.4 at L = 20
    b = np.full((2, 20), 0.45)         # 0.45 on both lengths
    out = c5.best_of_restarts([job(0, early_low), job(1, a), job(2, b)], ["softmax"], 0.1)
    r = out.runs["softmax"]
    assert r.restart.tolist() == [2, 1] and r.init_seed.tolist() == [2, 1]
    assert r.U[:, 0, 0].tolist() == [2.0, 1.0] and r.raw.U[:, 0, 0].tolist() == [2.0, 1.0]
    assert r.v[:, 0].tolist() == [2.0, 1.0]
    np.testing.assert_array_equal(r.loss[0], b[0])
    np.testing.assert_array_equal(r.loss[1], a[1])
    np.testing.assert_allclose(r.end_loss, [[1.0, 1.0], [0.5, 0.4], [0.45, 0.45]])
    with pytest.raises(ValueError, match="share"):
        c5.best_of_restarts([job(0, a), job(1, a, np.array([10, 30]))], ["softmax"], 0.1)


def test_train_run_restarts_keep_the_lone_run_of_lowest_end_loss(tmp_path):
    """Restarts train in one program on one stream: each (model, L) run equals (1e-12) a lone
    training from the init_seed it reports, and that seed's mean loss over the last half of the
    log is the lowest of the restarts (recomputed here from lone runs); one checkpoint holds them."""
    cfg = dict(d=5, kms_rho=0.5, noise_var=0.1, w_var=0.2, covariance_mode="correct",
               parametrisation="qkvo", models=["softmax", "linear"], seed=3, init_seed=4, steps=40,
               batch=8, optimizer={**schema_defaults("c5", "optimizer"), "name": "adam", "lr": 3e-2},
               streams="shared", log_every=10,
               chunk=20, sample_dtype="float32", restarts=3, restart_select_frac=0.5)
    ck = tmp_path / "L.npz"
    job = c5.train_run(cfg, [6, 11], checkpoint=ck)
    # one checkpoint for all restarts (and the one before it, kept in case the last fails to load)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["L.npz", "L.prev.npz"]
    lone = {s: c5.train_run({**cfg, "init_seed": s, "restarts": 1}, [6, 11]) for s in (4, 5, 6)}
    for m in cfg["models"]:
        for i in range(2):
            ends = {s: lone[s].runs[m].loss[i][2:].mean() for s in lone}
            s = int(job.runs[m].init_seed[i])
            assert s == min(ends, key=ends.get) and len(set(ends.values())) == 3
            for k in ("U", "v", "loss"):
                np.testing.assert_allclose(getattr(job.runs[m], k)[i], getattr(lone[s].runs[m], k)[i],
                                           rtol=1e-12, atol=1e-15)
    again = c5.train_run(cfg, [6, 11], checkpoint=ck)  # every restart resumes at its end
    np.testing.assert_array_equal(again.runs["softmax"].U, job.runs["softmax"].U)


def test_train_run_record_is_the_same_bytes_on_every_run(tmp_path):
    """The same settings give the same record file, byte for byte, on two trainings (a record holds
    no wall-clock quantity: a speed stored in it made every run's record differ)."""
    from softlin import records

    cfg = dict(d=3, kms_rho=0.5, noise_var=0.1, w_var=0.2, covariance_mode="correct",
               parametrisation="uv", models=["softmax", "linear"], seed=1, init_seed=2, steps=20,
               batch=4, optimizer={**schema_defaults("c5", "optimizer"), "name": "adam", "lr": 1e-2},
               streams="shared", log_every=10, chunk=10, sample_dtype="float64", restarts=1, restart_select_frac=0.5)
    for name in ("a.npz", "b.npz"):
        records.save(tmp_path / name, c5.train_run(cfg, [4, 8]))
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()


def test_replicate_aggregation_against_numpy():
    """c5_replicates.per_L: mean and std(ddof=1)/sqrt(n) across seeds of the gap, gap / R_linear and
    gap x L per L (numpy on the hand-made tables); aggregate: the criteria's metrics of the mean
    table with the delete-one jackknife over seeds (here gap_rel_at_Lmax, recomputed by hand), and
    convergence counts summed over replicates."""
    import pandas as pd

    from softlin.claims import c5_replicates

    Ls = np.array([100, 200, 500, 1000])
    scales = [0.9, 1.0, 1.2]
    tabs = []
    for k, s in enumerate(scales):
        R = c5_risk_table(14.0, Ls, s)
        R[:, 1] += 1e-4 * k                     # linear column shifted per seed
        tabs.append(pd.DataFrame({"L": Ls, **{f"R_{p}": R[:, i] for i, p in enumerate(c5_eval.PREDICTORS)},
                                  "gap": R[:, 0] - R[:, 1]}))
    names = ["a", "b", "c"]
    df = c5_replicates.per_L(tabs, names)
    gaps = np.stack([t["gap"].to_numpy() for t in tabs])
    lin = np.stack([t["R_linear"].to_numpy() for t in tabs])
    np.testing.assert_allclose(df["gap"], gaps.mean(0), rtol=1e-12)
    np.testing.assert_allclose(df["gap_se"], gaps.std(0, ddof=1) / np.sqrt(3), rtol=1e-12)
    np.testing.assert_allclose(df["gap_L_se"], (gaps * Ls).std(0, ddof=1) / np.sqrt(3), rtol=1e-12)
    np.testing.assert_allclose(df["gap_rel"], (gaps / lin).mean(0), rtol=1e-12)
    np.testing.assert_allclose(df["gap@b"], gaps[1], rtol=1e-12)
    conv = {"convergence": {"n_runs": 8, "n_failed": 0, "n_undecided": 1, "n_unconverged": 1,
                            "unconverged": [], "undecided": ["softmax_L100"]},
            "n_below_bayes_3se": 0, "softmax": {"excess_rel_at_Lmax": 0.2}, "linear": {"excess_rel_at_Lmax": 0.1}}
    out = c5_replicates.aggregate(tabs, [conv] * 3, names, 0.1, gap_constant=14.0)
    rel = gaps[:, -1] / lin[:, -1]

    def rel_of(idx):
        return gaps[idx, -1].mean() / lin[idx, -1].mean()
    loo = np.array([rel_of([j for j in range(3) if j != i]) for i in range(3)])
    assert out["gap_rel_at_Lmax"] == pytest.approx(rel_of([0, 1, 2]), rel=1e-12)
    assert out["gap_rel_at_Lmax_se"] == pytest.approx(np.sqrt(2 / 3 * np.sum((loo - loo.mean()) ** 2)), rel=1e-10)
    # for a mean the jackknife se is the textbook one
    assert out["gap_L_at_Lmax_se"] == pytest.approx(np.std(gaps[:, -1] * 1000, ddof=1) / np.sqrt(3), rel=1e-10)
    assert abs(rel.mean() - out["gap_rel_at_Lmax"]) < 1e-3
    assert out["convergence"]["n_unconverged"] == 3 and out["convergence"]["n_unconverged_se"] == "exact"
    assert out["convergence"]["undecided"] == ["a:softmax_L100", "b:softmax_L100", "c:softmax_L100"]


