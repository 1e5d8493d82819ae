"""Helpers shared by the tests (imported as ``helpers``: pytest puts this folder on the path).

Numerics: a random SPD matrix, random parameters, the numpy reference's view of a task sample, a
pytree comparison.  Workflow: copies of the repository and ``snakemake`` run on them.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np

from softlin import numpy_reference as ref
from softlin.params import Params

ROOT = Path(__file__).resolve().parents[1]
ANISO = np.diag([2.0, 1.0, 0.5])


def spd(rng, d):
    """A random, well conditioned, non-diagonal SPD matrix."""
    X = rng.normal(size=(d, d))
    return X @ X.T / d + 0.5 * np.eye(d)


def gamma_w_np(S, w):
    """``Gamma_w = [[S, S w], [w^T S, w^T S w]]`` in numpy (an independent reference); (d+1, d+1)."""
    top = np.concatenate([S, (S @ w)[:, None]], axis=1)
    bot = np.concatenate([w @ S, [w @ S @ w]])[None, :]
    return np.concatenate([top, bot], axis=0)


def fd_grad(fun, x, h=1e-6):
    """Central finite differences of a scalar ``fun`` at ``x`` (any shape), step ``h``."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


def gauss_hermite_2d(n_nodes=60):
    """2-d Gauss-Hermite (probabilists') nodes and weights for E f(g), g ~ N(0, I_2)."""
    g, wts = np.polynomial.hermite_e.hermegauss(n_nodes)
    G = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    return G, np.outer(wts, wts).ravel() / (2 * np.pi)


def softmax_predict_np(U, v, Z, zq):
    """One softmax-attention prediction ``v^T sum_l softmax_l(z_l^T U z_q) z_l`` in numpy; Z (L, D)."""
    s = Z @ U @ zq
    p = np.exp(s - s.max())
    return v @ ((p / p.sum()) @ Z)


def tree_allclose(a, b, rtol=1e-12, atol=0.0):
    """Leaf-wise ``|a - b| <= atol + rtol * scale``, ``scale = max |b|`` over the whole tree.

    (One scale for the whole tree: a leaf that is zero in exact arithmetic, e.g. the U-gradient
    of softmax at L = 1, is compared at the scale of the others.)  Raises with detail.
    """
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb), f"pytree sizes differ: {len(la)} vs {len(lb)}"
    la = [np.asarray(x, dtype=np.float64) for x in la]
    lb = [np.asarray(y, dtype=np.float64) for y in lb]
    scale = max((np.max(np.abs(y)) for y in lb if y.size), default=0.0)
    for i, (x, y) in enumerate(zip(la, lb)):
        assert x.shape == y.shape, f"leaf {i}: shape {x.shape} vs {y.shape}"
        err = np.max(np.abs(x - y)) if x.size else 0.0
        tol = atol + rtol * scale
        assert err <= tol, f"leaf {i}: max abs err {err:.3e} > tol {tol:.3e}"
    return True


def random_params(rng, d, scale=0.4):
    """Dense (non-block) random parameters of moderate norm."""
    return Params(scale * rng.normal(size=(d + 1, d + 1)), scale * rng.normal(size=d + 1))


def ref_tasks(t):
    """The numpy reference's view of a softlin Tasks (same arrays, reference-computed labels)."""
    return ref.ICLTasks.from_arrays(t.x, t.w, t.xq, t.sigma)


# --------------------------------------------------------------------------- the workflow
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
COPY = ["Snakefile", "config", "workflow", "softlin", "symbolic"]
SMOKE = ["--config", "preset=smoke"]


def copy_repo(dst: Path) -> Path:
    """The workflow's files (not results/) copied to ``dst``."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dst / name)
    return dst


def smk_start(cwd, *args, stdout=subprocess.PIPE) -> subprocess.Popen:
    """``snakemake --cores 2 ARGS`` started in ``cwd`` with the copy's package first on the path
    (``stdout``: a file for a run nobody reads while it works, with stderr folded into it)."""
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.Popen([*SNAKEMAKE, "--cores", "2", *args], cwd=cwd, env=env, stdout=stdout,
                            stderr=subprocess.STDOUT if stdout is not subprocess.PIPE else subprocess.PIPE,
                            text=True)


def smk_wait(proc: subprocess.Popen, args, check=True, timeout=900) -> subprocess.CompletedProcess:
    """Wait for :func:`smk_start`'s process; raise with its output's tail if it failed."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out or "", err or "")
    if check and done.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def smk(cwd, *args, check=True, timeout=900):
    """``snakemake --cores 2 ARGS`` in ``cwd`` with the copy's package first on the path."""
    return smk_wait(smk_start(cwd, *args), args, check=check, timeout=timeout)


# --------------------------------------------------------------------------- C5's task (tests of C5's modules)
C5_D = 6


def c5_task(mode="correct"):
    """C5's task at d = 5: KMS covariance rho = 0.5, noise 0.1, w_var 1/d, covariance ``mode``."""
    from softlin import online_task

    return online_task.make_task(online_task.kms_sigma(5, 0.5), 0.1, None, mode)


def schema_defaults(*path):
    """The defaults of the schema's object at ``path`` (``"c3", "offblock_rate"``): ``{key: default}``,
    read from workflow/schemas/config.schema.yaml, their one home."""
    import yaml

    node = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    for key in path:
        node = node["properties"][key]
    return {k: v["default"] for k, v in node["properties"].items() if "default" in v}


def optimizer(name, lr, **fields):
    """``optim.Optimizer(name, lr, **fields)``, every other field the schema's default of
    ``c5.optimizer`` (``steps`` 1 unless given: ``online.train`` sets its own)."""
    from softlin import optim

    values = {**schema_defaults("c5", "optimizer"), "steps": 1, **fields, "name": name, "lr": lr}
    return optim.Optimizer(**{k: values[k] for k in optim.Optimizer._fields})


def cov_ok(samples, target, n_se=5.0):
    """Sample covariance (mean known to be 0) within ``n_se`` standard errors of ``target``,
    entry-wise; SE of entry (i, j) for Gaussian data: sqrt((S_ii S_jj + S_ij^2) / N)."""
    X = np.asarray(samples).reshape(-1, target.shape[0])
    N = X.shape[0]
    C = X.T @ X / N
    se = np.sqrt((np.outer(np.diag(target), np.diag(target)) + target ** 2) / N)
    err = np.abs(C - target) / se
    assert err.max() < n_se, f"covariance off by {err.max():.2f} SE:\n{C}\nvs\n{target}"
    m = X.mean(0) / np.sqrt(np.diag(target) / N)
    assert np.abs(m).max() < n_se, f"mean off by {np.abs(m).max():.2f} SE"


def c5_risk_table(gap_c=14.0, Ls=(100, 200, 500, 1000), scale=1.0):
    """A risk table (n_L, n_pred): linear 0.1 + 6.5 / L, softmax linear + gap_c / L, Bayes opt 0.1."""
    from softlin.claims.c5_eval import PREDICTORS

    Ls = np.asarray(Ls, float)
    R = np.full((Ls.size, len(PREDICTORS)), 0.2)
    col = {p: i for i, p in enumerate(PREDICTORS)}
    R[:, col["linear"]] = 0.1 + 6.5 / Ls
    R[:, col["softmax"]] = R[:, col["linear"]] + scale * gap_c / Ls
    R[:, col["limit_opt"]] = 0.1
    return R
