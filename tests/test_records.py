"""The record codec (softlin.records): pytrees <-> npz, read against a template."""

from typing import NamedTuple

import numpy as np
import pytest

from softlin import records
from softlin._jax import jax, jnp
from softlin.params import Params
from softlin.records import RecordError, Spec

from helpers import schema_defaults


class Pair(NamedTuple):
    a: object
    b: object


def _tree():
    """A nested tree: NamedTuples, a dict with int keys, a tuple, a 0-d leaf, a string, int dtypes."""
    return {"limit": Pair(np.arange(6.0).reshape(2, 3), np.array([1, 2, 3], np.int64)),
            "by_L": {10: Params(np.full((3, 3), 0.25), np.array([-1.5, 0.0, 2.0])),
                     200: Params(np.eye(3), np.array([1e-300, np.nan, -np.inf]))},
            "tup": (np.array(7, np.int64), np.float32([0.5, 1.5])),
            "fingerprint": np.array("0123456789abcdef")}


def test_round_trip_is_bit_for_bit(tmp_path):
    path = tmp_path / "r.npz"
    records.save(path, _tree())
    got = records.load(path, _tree())
    want = _tree()  # built again, independently of what the codec returned
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for x, y in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        assert isinstance(x, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()
    assert isinstance(got["limit"], Pair) and isinstance(got["by_L"][10], Params)
    assert sorted(got["by_L"]) == [10, 200] and str(got["fingerprint"]) == "0123456789abcdef"


def test_entries_are_named_by_tree_path(tmp_path):
    path = tmp_path / "r.npz"
    records.save(path, _tree())
    with np.load(path) as f:
        keys = set(f.keys())
        assert f["['by_L'][200].U"].tobytes() == np.eye(3).tobytes()
    assert keys == {"['limit'].a", "['limit'].b", "['by_L'][10].U", "['by_L'][10].v", "['by_L'][200].U",
                    "['by_L'][200].v", "['tup'][0]", "['tup'][1]", "['fingerprint']"}


def test_template_of_specs_and_jax_arrays(tmp_path):
    """A template of Spec / ShapeDtypeStruct / jax arrays; a None axis takes any length."""
    path = tmp_path / "r.npz"
    records.save(path, {"x": jnp.arange(4.0), "y": np.zeros((2, 5))})
    like = {"x": jax.ShapeDtypeStruct((4,), jnp.float64), "y": Spec((2, None), np.float64)}
    got = records.load(path, like)
    assert got["x"].tobytes() == np.array([0.0, 1.0, 2.0, 3.0]).tobytes() and got["y"].shape == (2, 5)
    assert records.spec_of(Params(np.zeros((3, 3)), np.zeros(3)), (7,)) == Params(
        Spec((7, 3, 3), np.float64), Spec((7, 3), np.float64))


def test_missing_key_is_refused(tmp_path):
    path = tmp_path / "r.npz"
    t = _tree()
    del t["by_L"][200]
    records.save(path, t)
    with pytest.raises(RecordError, match=r"lacks 2 entries of the template, first \"\['by_L'\]\[200\].U\""):
        records.load(path, _tree())


def test_extra_key_is_refused(tmp_path):
    path = tmp_path / "r.npz"
    records.save(path, {**_tree(), "more": np.zeros(2)})
    with pytest.raises(RecordError, match=r"has 1 entry the template does not, first \"\['more'\]\""):
        records.load(path, _tree())


def test_wrong_shape_is_refused(tmp_path):
    path = tmp_path / "r.npz"
    t = _tree()
    t["by_L"][10] = Params(np.zeros((4, 4)), np.zeros(3))
    records.save(path, t)
    with pytest.raises(RecordError, match=r"\['by_L'\]\[10\].U: shape \(4, 4\), the template expects \(3, 3\)"):
        records.load(path, _tree())
    with pytest.raises(RecordError, match=r"\['y'\]: shape \(2,\), the template expects \(2, \*, 1\)"):
        records.from_arrays({"['y']": np.zeros(2)}, {"y": Spec((2, None, 1), np.float64)})


def test_wrong_dtype_is_refused(tmp_path):
    path = tmp_path / "r.npz"
    t = _tree()
    t["limit"] = Pair(t["limit"].a.astype(np.float32), t["limit"].b)
    records.save(path, t)
    with pytest.raises(RecordError, match=r"\['limit'\].a: dtype float32, the template expects float64"):
        records.load(path, _tree())


def test_truncated_or_garbled_file_is_refused(tmp_path):
    path = tmp_path / "r.npz"
    records.save(path, _tree())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RecordError, match="does not read as a record"):
        records.load(path, _tree())
    path.write_bytes(b"not an npz file\n")
    with pytest.raises(RecordError, match="does not read as a record"):
        records.load(path, _tree())



def test_partial_read_takes_only_the_templates_entries(tmp_path):
    path = tmp_path / "r.npz"
    records.save(path, _tree())
    got = records.load(path, {"fingerprint": np.array("0" * 16)}, partial=True)
    assert str(got["fingerprint"]) == "0123456789abcdef"
    with pytest.raises(RecordError, match="lacks 1 entry"):
        records.load(path, {"other": np.zeros(1)}, partial=True)


def _same_leaves(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("seed_order", [False, True])
def test_c3_record_reads_back_against_its_config_template(tmp_path, seed_order):
    """A c3_train job's record, read against c3.runs_like(config), is the trained Runs bit for bit."""
    from softlin.claims import c3
    from softlin.tasks import sample

    tasks = sample(7, 2, np.eye(2), 2, 1, 16, "gauss")
    cfg = {"d": 2, "L": [4, 16], "steps": 20, "record_every": 10, "offblock_seed_order": seed_order}
    runs = c3.train_setting(tasks, cfg["L"], 0.01, 20, 10, "seed", progress=lambda m: None, seed_order=seed_order)
    records.save(tmp_path / "t.npz", runs)
    _same_leaves(records.load(tmp_path / "t.npz", c3.runs_like(cfg)), runs)
    with pytest.raises(RecordError, match=r"\.softmax\[8\]"):  # another L list: refused, naming the run
        records.load(tmp_path / "t.npz", c3.runs_like({**cfg, "L": [4, 8, 16]}))


@pytest.mark.parametrize("parametrisation", ["qkvo", "uv"])
def test_c5_record_reads_back_against_its_config_template(tmp_path, parametrisation):
    """A c5_train job's record (2 restarts), read against c5.job_like(config, Ls), bit for bit."""
    from softlin.claims import c5

    cfg = dict(d=3, kms_rho=0.5, noise_var=0.1, w_var=0.2, covariance_mode="correct",
               parametrisation=parametrisation, models=["softmax", "linear"], seed=3, init_seed=0, steps=20,
               batch=4, optimizer={**schema_defaults("c5", "optimizer"), "name": "sgd", "lr": 1e-2},
               streams="shared", log_every=10,
               chunk=20, sample_dtype="float32", restarts=2, restart_select_frac=0.5)
    job = c5.train_run(cfg, [6, 4])
    records.save(tmp_path / "j.npz", job)
    back = records.load(tmp_path / "j.npz", c5.job_like(cfg, [6, 4]))
    _same_leaves(back, job)
    assert back.L.tolist() == [4, 6] and back.runs["softmax"].end_loss.shape == (2, 2)
    with pytest.raises(RecordError, match=r"\.runs\['linear'\]\.end_loss: shape \(2, 2\), the template expects \(3, 2\)"):
        records.load(tmp_path / "j.npz", c5.job_like({**cfg, "restarts": 3}, [6, 4]))


def _setting(d: int = 2) -> dict:
    """A small C1 setting: d-dimensional isotropic Gaussian tasks, the Eq. 9 and theta* probes."""
    from softlin.claims import c1

    st = dict(name="iso", label="iso", token_kind="gauss", sigma=np.eye(d).tolist())
    return c1.design([st], dict(eq9=True, star=True, scaled_lambda=[]))["iso"]


def test_c1_record_reads_back_against_its_template(tmp_path):
    """c1.OutputGaps, read against c1.output_gaps_like(n_blocks, n_probes, L): hand-built arrays bit for
    bit; what c1.measure writes matches the template; another block count or L list is refused."""
    from softlin.claims import c1

    msq = np.arange(24.0).reshape(3, 2, 4) / 7
    records.save(tmp_path / "g.npz", c1.OutputGaps(msq, np.array([4, 8, 16, 32]), np.array([0.0, 0.5]),
                                                   np.ones((3, 2, 2, 3))))
    back = records.load(tmp_path / "g.npz", c1.output_gaps_like(3, 2, [4, 8, 16, 32]))
    assert isinstance(back, c1.OutputGaps)
    assert back.msq.tobytes() == (np.arange(24.0).reshape(3, 2, 4) / 7).tobytes()
    assert back.L.dtype == np.int64 and back.L.tolist() == [4, 8, 16, 32]
    with pytest.raises(RecordError, match=r"\.msq: shape \(3, 2, 4\), the template expects \(4, 2, 4\)"):
        records.load(tmp_path / "g.npz", c1.output_gaps_like(4, 2, [4, 8, 16, 32]))
    with pytest.raises(RecordError, match=r"\.msq: shape \(3, 2, 4\), the template expects \(3, 2, 3\)"):
        records.load(tmp_path / "g.npz", c1.output_gaps_like(3, 2, [4, 8, 16]))

    st = _setting()
    out = c1.measure(st, [2, 4], 5, 2, 2, 1, progress=lambda m: None, estimator="importance")
    records.save(tmp_path / "m.npz", out)
    _same_leaves(records.load(tmp_path / "m.npz", c1.output_gaps_like(2, len(st["probes"]), [2, 4])), out)


def test_c2_gap_record_reads_back_against_its_template(tmp_path):
    """c2.GradientGaps against c2.gradient_gaps_like(d, n_blocks, n_probes, L): hand-built arrays bit
    for bit (K = (d+1)^2 + d+1 = 12 at d = 2); what c2.measure writes (C1's probes then the sweep's,
    c2.probes_of) matches the template; another probe count is refused."""
    from softlin.claims import c2

    msq_U, msq_v = np.linspace(0, 1, 12).reshape(2, 3, 2), -np.linspace(0, 1, 12).reshape(2, 3, 2)
    diff = np.arange(144.0).reshape(2, 3, 2, 12) - 70.5
    records.save(tmp_path / "g.npz", c2.GradientGaps(msq_U, msq_v, diff, np.array([8, 64]), np.zeros(3),
                                                     np.ones((2, 3, 3, 3))))
    back = records.load(tmp_path / "g.npz", c2.gradient_gaps_like(2, 2, 3, [8, 64]))
    assert isinstance(back, c2.GradientGaps)
    assert back.msq_U.tobytes() == np.linspace(0, 1, 12).reshape(2, 3, 2).tobytes()
    assert back.msq_v.tobytes() == (-np.linspace(0, 1, 12).reshape(2, 3, 2)).tobytes()
    assert back.diff.tobytes() == (np.arange(144.0).reshape(2, 3, 2, 12) - 70.5).tobytes()
    assert back.L.tolist() == [8, 64]
    with pytest.raises(RecordError, match=r"\.msq_U: shape \(2, 3, 2\), the template expects \(2, 4, 2\)"):
        records.load(tmp_path / "g.npz", c2.gradient_gaps_like(2, 2, 4, [8, 64]))
    with pytest.raises(RecordError, match=r"\.diff: shape \(2, 3, 2, 12\), the template expects \(2, 3, 2, 20\)"):
        records.load(tmp_path / "g.npz", c2.gradient_gaps_like(3, 2, 3, [8, 64]))

    st = _setting()
    probes = c2.probes_of(st, [0.3])
    assert [p["name"] for p in probes] == [p["name"] for p in st["probes"]] + ["sweep_lam0.3"]
    out = c2.measure(st, probes, [2, 4], 5, 2, 2, 1, progress=lambda m: None, estimator="importance")
    records.save(tmp_path / "m.npz", out)
    _same_leaves(records.load(tmp_path / "m.npz", c2.gradient_gaps_like(2, 2, len(probes), [2, 4])), out)


def test_c2_trajectory_record_reads_back_against_its_config_template(tmp_path):
    """c2e.AlongTrajectory against c2e.along_like(C3's d, L, steps, record_every + C2's n_blocks): what
    c2e.along_trajectory computes on a short C3 run, bit for bit against arrays built beside it; another
    block count is refused."""
    from softlin.claims import c2e, c3
    from softlin.tasks import sample

    tasks = sample(7, 2, np.eye(2), 4, 1, 16, "gauss")
    cfg = {"d": 2, "L": [4, 16], "steps": 20, "record_every": 10, "n_blocks": 2}
    limit = c3.train_setting(tasks, cfg["L"], 0.01, 20, 10, "seed", progress=lambda m: None).limit
    out = c2e.along_trajectory(limit, tasks, cfg["L"], 2, progress=lambda m: None)
    records.save(tmp_path / "t.npz", out)
    back = records.load(tmp_path / "t.npz", c2e.along_like(cfg))
    assert isinstance(back, c2e.AlongTrajectory) and isinstance(back.max_gap, c2e.Parts)
    # the expected leaves, computed from the block differences beside the codec
    bd = np.asarray(out.block_diff)
    mean = bd.mean(axis=0)
    gap = c2e.Parts(np.linalg.norm(mean[..., :9], axis=-1), np.linalg.norm(mean[..., 9:], axis=-1),
                   np.linalg.norm(mean, axis=-1))
    step = np.asarray(limit.step)
    want = c2e.AlongTrajectory(step, np.array([4, 16]), bd, np.array(4), gap, c2e.Parts(*(g.max(axis=0) for g in gap)),
                              c2e.Parts(*(step[g.argmax(axis=0)] for g in gap)))
    assert bd.shape == (2, len(step), 2, 12)
    _same_leaves(back, want)
    with pytest.raises(RecordError, match=r"\.block_diff: shape \(2, 3, 2, 12\), the template expects \(3, 3, 2, 12\)"):
        records.load(tmp_path / "t.npz", c2e.along_like({**cfg, "n_blocks": 3}))


def test_c2_trajectory_prompt_draws(tmp_path):
    """n_prompts = 2: the first draw's blocks are n_prompts = 1's bit for bit (C3's own prompts), the second
    draw's are conc.grad_gaps on tasks with the same w and queries and the covariates of
    tasks.redraw_prompts(seed + 1); the record reads back against along_like with n_prompts."""
    from softlin import concentration as conc
    from softlin.claims import c2e, c3
    from softlin.params import Params
    from softlin.tasks import redraw_prompts, sample

    tasks = sample(7, 2, np.eye(2), 4, 1, 16, "gauss")
    cfg = {"d": 2, "L": [4, 16], "steps": 20, "record_every": 10, "n_blocks": 2, "n_prompts": 2}
    limit = c3.train_setting(tasks, cfg["L"], 0.01, 20, 10, "seed", progress=lambda m: None).limit
    one = c2e.along_trajectory(limit, tasks, cfg["L"], 2, progress=lambda m: None)
    two = c2e.along_trajectory(limit, tasks, cfg["L"], 2, progress=lambda m: None, n_prompts=2, prompt_seed=40)
    bd = np.asarray(two.block_diff)
    assert bd.shape == (4, 3, 2, 12)
    np.testing.assert_array_equal(bd[:2], np.asarray(one.block_diff))
    fresh = redraw_prompts(tasks, 41)
    assert np.array_equal(fresh.w, tasks.w) and np.array_equal(fresh.xq, tasks.xq)
    assert not np.array_equal(fresh.x, tasks.x) and np.array_equal(fresh.x[:4], fresh.x[4:])
    plist = [Params(limit.params.U[t], limit.params.v[t]) for t in range(3)]
    first = c2e.pair_blocks(fresh, 2)[0]
    np.testing.assert_array_equal(bd[2], conc.grad_gaps(plist, first, cfg["L"]))
    # per draw the norm of its blocks' mean; gap their mean over draws, max_gap the mean of each draw's max over
    # steps, argmax_step where the first draw (C3's own prompts) peaks
    norms = np.linalg.norm(bd.reshape(2, 2, 3, 2, 12).mean(axis=1), axis=-1)       # (draw, n_rec, n_L)
    np.testing.assert_array_equal(one.gap.full, norms[0])
    np.testing.assert_allclose(two.gap.full, norms.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(two.max_gap.full, norms.max(axis=1).mean(axis=0), rtol=1e-14)
    np.testing.assert_array_equal(two.argmax_step.full, np.asarray(limit.step)[norms[0].argmax(axis=0)])
    records.save(tmp_path / "t.npz", two)
    assert records.load(tmp_path / "t.npz", c2e.along_like(cfg)).block_diff.shape == (4, 3, 2, 12)
    # the jobs' memory request counts this record's bytes
    from softlin import config_cost
    cost_cfg = {"c3": {k: cfg[k] for k in ("d", "L", "steps", "record_every")},
                "c2": {"trajectory": {k: cfg[k] for k in ("n_blocks", "n_prompts")}}}
    assert config_cost.trajectory_record_mb(cost_cfg) == pytest.approx(bd.nbytes / 1e6, rel=1e-12)


@pytest.mark.parametrize("token_kind", ["gauss", "rademacher"])
def test_redraw_prompts_law(token_kind):
    """Fresh covariates have the sampling law: mean 0 and covariance Sigma within 5 standard errors over
    2 x 20000 tokens (Gaussian: Sigma anisotropic; Rademacher: entries +-1)."""
    from softlin.tasks import redraw_prompts, sample

    sigma = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]]) if token_kind == "gauss" else np.eye(3)
    x = redraw_prompts(sample(3, 3, sigma, 2, 1, 20000, token_kind), 99).x[:2].reshape(-1, 3)
    if token_kind == "rademacher":
        assert set(np.unique(x)) == {-1.0, 1.0}
    n = x.shape[0]
    se_cov = np.sqrt((np.outer(np.diag(sigma), np.diag(sigma)) + sigma ** 2) / n)
    assert np.all(np.abs(x.mean(axis=0)) < 5 * np.sqrt(np.diag(sigma) / n))
    assert np.all(np.abs(x.T @ x / n - sigma) < 5 * se_cov)
