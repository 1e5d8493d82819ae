"""Progress lines report work done, not work dispatched (JAX dispatch is asynchronous)."""
import re

import numpy as np

from softlin.claims import c3
from softlin.tasks import sample


def test_c3_progress_line_follows_its_arrays(monkeypatch):
    """Each ``L=... done`` line of a C3 training job comes after the job has fetched (waited for)
    that L's softmax and linear trajectories; the job's output holds numpy arrays only."""
    events, label = [], {}
    real_get, real_gd = c3.jax.device_get, c3.train.gradient_descent

    def gradient_descent(model, *args, L=None, **kw):
        traj = real_gd(model, *args, L=L, **kw)
        label[id(traj)] = (model, L)
        return traj

    def device_get(tree):
        out = real_get(tree)
        events.append(("fetched", {label.get(id(tree))}))
        return out

    monkeypatch.setattr(c3.train, "gradient_descent", gradient_descent)
    monkeypatch.setattr(c3.jax, "device_get", device_get)
    tasks = sample(7, 2, np.eye(2), 2, 1, 16, "gauss")
    out = c3.train_setting(tasks, [4, 16], 0.01, 20, 10, "seed",
                           progress=lambda msg: events.append(("progress", msg)))
    fetched = set()
    n_lines = 0
    for kind, what in events:
        if kind == "fetched":
            fetched |= what
            continue
        n_lines += 1
        if what.startswith("linear(inf) done"):
            assert ("limit", None) in fetched, events
        m = re.match(r"L=(\d+) done", what)
        if m:
            assert {("softmax", int(m.group(1))), ("linear", int(m.group(1)))} <= fetched, (what, events)
    assert n_lines == 3
    leaves = c3.jax.tree.leaves(out)
    assert len(leaves) == 5 * 6 and all(isinstance(v, np.ndarray) for v in leaves), [type(v) for v in leaves]


def test_detail_goes_to_the_log_only(tmp_path, capsys):
    """The terminal (stderr) keeps short lines; the long per-run detail is in the job's log."""
    from softlin.progress import Progress

    log = tmp_path / "job.log"
    p = Progress(log, "t")
    p("short")
    p.detail("long " + "x" * 500)
    p.close()
    err = capsys.readouterr().err
    assert "short" in err and "long" not in err
    text = log.read_text()
    assert "short" in text and "long " + "x" * 500 in text
