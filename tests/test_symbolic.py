"""Tests of symbolic/: every exported result against an independent numeric source (MC, FD, quadrature)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from symbolic import export as E  # noqa: E402
from symbolic import to_json, to_markdown, get, write_all  # noqa: E402


def spd(rng, d):
    X = rng.normal(size=(d, d))
    return X @ X.T / d + 0.5 * np.eye(d)


def sqrtm(S):
    ev, Q = np.linalg.eigh(S)
    return (Q * np.sqrt(ev)) @ Q.T


def gamma_w(S, w):
    top = np.concatenate([S, (S @ w)[:, None]], axis=1)
    bot = np.concatenate([w @ S, [w @ S @ w]])[None, :]
    return np.concatenate([top, bot], axis=0)


def fd_grad(fun, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


@pytest.fixture(scope="module")
def jax_x64():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


@pytest.mark.parametrize("d", [3, 4])
def test_population_risk_vs_monte_carlo(d):
    rng = np.random.default_rng(1234 + d)
    S = spd(rng, d)
    U, v = 0.4 * rng.normal(size=(d + 1, d + 1)), 0.6 * rng.normal(size=d + 1)
    n = 200_000
    W = rng.normal(size=(n, d))
    Xq = rng.normal(size=(n, d)) @ sqrtm(S)
    SW = W @ S                                       # rows Sigma w
    Uz = Xq @ U[:, :d].T                             # U z_q
    # v^T Gamma_w (U z_q) with Gamma_w = [[S, S w], [w^T S, w^T S w]] written out blockwise
    top = Uz[:, :d] @ S + SW * Uz[:, d:]
    bot = np.einsum("ni,ni->n", SW, Uz[:, :d]) + np.einsum("ni,ni->n", SW, W) * Uz[:, d]
    f = top @ v[:d] + bot * v[d]
    loss = 0.5 * (f - np.einsum("ni,ni->n", W, Xq)) ** 2
    mc, se = loss.mean(), loss.std() / np.sqrt(n)
    R = E.population_risk_fn()(U, v, S)
    assert abs(R - mc) < 5 * se, (R, mc, se)
    # a one-sample spot check of the predictor against an explicit Gamma_w
    assert np.isclose(f[0], v @ gamma_w(S, W[0]) @ U @ np.r_[Xq[0], 0], rtol=1e-12)


def test_limit_predictor(jax_x64):
    rng = np.random.default_rng(7)
    d = 3
    S, U, v, w, xq = spd(rng, d), rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=d), rng.normal(size=d)
    ref = v @ gamma_w(S, w) @ U @ np.r_[xq, 0]
    assert abs(E.limit_predictor_fn()(U, v, S, w, xq) - ref) < 1e-12
    assert abs(float(E.limit_predictor_fn("jax")(U, v, S, w, xq)) - ref) < 1e-12
    # softmax(L) -> linear(inf) at large L (small scores)
    L = 400_000
    Uc = 0.3 * U
    X = rng.normal(size=(L, d)) @ sqrtm(S)
    Z = np.c_[X, X @ w]
    s = Z @ (Uc @ np.r_[xq, 0])
    p = np.exp(s - s.max())
    p /= p.sum()
    f_soft = v @ (p @ Z)
    assert abs(f_soft - E.limit_predictor_fn()(Uc, v, S, w, xq)) < 0.05 * (1 + abs(f_soft))


def test_risk_backends_and_gradient(jax_x64):
    jax = jax_x64
    rng = np.random.default_rng(3)
    for d in (2, 4):
        S, U, v = spd(rng, d), rng.normal(size=(d + 1, d + 1)), rng.normal(size=d + 1)
        rn, rj = E.population_risk_fn("numpy"), E.population_risk_fn("jax")
        assert abs(rn(U, v, S) - float(rj(U, v, S))) < 1e-12 * max(1, abs(rn(U, v, S)))
        gU, gv = E.population_risk_grad_fn()(U, v, S)
        jgU, jgv = jax.jit(jax.grad(rj, argnums=(0, 1)))(U, v, S)
        assert np.allclose(gU, jgU, rtol=1e-10, atol=1e-10) and np.allclose(gv, jgv, rtol=1e-10, atol=1e-10)
        assert np.allclose(gU, fd_grad(lambda X: rn(X, v, S), U), rtol=1e-5, atol=1e-5)
        assert np.allclose(gv, fd_grad(lambda x: rn(U, x, S), v), rtol=1e-5, atol=1e-5)


def test_reduced_risk_and_flow():
    rng = np.random.default_rng(5)
    d = 3
    S, A, b = spd(rng, d), rng.normal(size=(d, d)), 0.8
    Rr = E.reduced_risk_fn()
    dA, db = E.reduced_flow_fn()(A, b, S)
    assert np.allclose(dA, -fd_grad(lambda X: Rr(X, b, S), A), atol=1e-6)
    assert np.isclose(db, -(Rr(A, b + 1e-6, S) - Rr(A, b - 1e-6, S)) / 2e-6, atol=1e-6)
    I = np.eye(d)
    M = b * S @ A - I
    assert np.isclose(Rr(A, b, S), 0.5 * np.trace(M @ S @ M.T), rtol=1e-12)
    U = np.zeros((d + 1, d + 1))
    U[:d, :d], U[d, d] = A, 0.37
    v = np.r_[np.zeros(d), b]
    assert np.isclose(Rr(A, b, S), E.population_risk_fn()(U, v, S), rtol=1e-12)
    # reduced flow == full gradient flow restricted to the blocks; off-block gradient is 0
    gU, gv = E.population_risk_grad_fn()(U, v, S)
    assert np.allclose(-gU[:d, :d], dA, atol=1e-12) and np.isclose(-gv[d], db, atol=1e-12)
    assert np.allclose(gU[d, :d], 0, atol=1e-12) and np.allclose(gU[:d, d], 0) and np.allclose(gv[:d], 0, atol=1e-12)


def test_bayes_optimum():
    rng = np.random.default_rng(11)
    sigmas = [np.eye(3), np.diag([2.0, 1.0, 0.5]), spd(rng, 4), spd(rng, 2)]
    risk = E.population_risk_fn()
    for S in sigmas:
        d = S.shape[0]
        U, v = E.bayes_optimum_fn()(S)
        c = np.trace(np.linalg.matrix_power(np.linalg.inv(S), 2)) ** 0.25
        assert np.allclose(U[:d, :d], np.linalg.inv(S) / c, atol=1e-12) and np.isclose(v[d], c)
        assert abs(risk(U, v, S)) < 1e-12
        assert np.allclose(fd_grad(lambda X: risk(X, v, S), U), 0, atol=1e-6)
        assert np.allclose(fd_grad(lambda x: risk(U, x, S), v), 0, atol=1e-6)
        assert np.isclose(np.linalg.norm(U), np.linalg.norm(v), rtol=1e-12)


def test_exp_moment_below_and_above_threshold():
    rng = np.random.default_rng(2)
    S = spd(rng, 2)
    A0 = rng.normal(size=(2, 2))
    A = A0 * np.sqrt(0.2 / E.threshold_M(A0, S))     # lambda_max(M) = 0.2
    assert np.isclose(E.threshold_M(A, S), 0.2)
    K = A.T @ S @ A
    g, wts = np.polynomial.hermite_e.hermegauss(80)
    G = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    W = np.outer(wts, wts).ravel() / (2 * np.pi)
    X = G @ sqrtm(S)
    quad = np.sum(W * np.exp(np.einsum("ni,ij,nj->n", X, K, X)))
    assert np.isclose(E.exp_moment_fn()(A, S), quad, rtol=1e-8)
    assert E.exp_moment_fn()(A * 1.7, S) == np.inf     # lambda_max = 0.578 > 1/2


def test_beta_and_threshold_at_theta_star():
    beta = E.beta_fn()
    assert beta(0.25) == 0.5 and np.isclose(beta(1.0), 0.25) and np.isclose(beta(0.6), 1 / 2.4)
    for S, tr in ((np.eye(3), 3.0), (np.diag([2.0, 1.0, 0.5]), 5.25)):
        U, _ = E.bayes_optimum_fn()(S)
        lam = E.threshold_M(U[:3, :3], S)
        assert np.isclose(np.trace(np.linalg.inv(S) @ np.linalg.inv(S)), tr)
        assert np.isclose(lam, 1 / np.sqrt(tr))
        assert (lam < 0.5) == (tr > 4)


def _softmax_pred(U, v, Z, zq):
    s = Z @ U @ zq
    p = np.exp(s - s.max())
    return v @ ((p / p.sum()) @ Z)


def test_euler_defect_softmax_fd():
    rng = np.random.default_rng(9)
    d, L = 3, 6
    U, v = rng.normal(size=(d + 1, d + 1)), rng.normal(size=d + 1)
    Z, zq, yq = rng.normal(size=(L, d + 1)), np.r_[rng.normal(size=d), 0.0], 0.4
    loss = lambda t: 0.5 * (_softmax_pred(np.exp(t) * U, np.exp(-t) * v, Z, zq) - yq) ** 2
    fd = (loss(1e-5) - loss(-1e-5)) / 2e-5
    assert np.isclose(E.euler_defect_fn()(U, v, Z, zq, yq), fd, rtol=1e-6, atol=1e-8)
    # linear(L) is bilinear: the same rescaling leaves the loss unchanged
    G = Z.T @ Z / L
    lin = lambda t: 0.5 * ((np.exp(-t) * v) @ G @ (np.exp(t) * U) @ zq - yq) ** 2
    assert abs((lin(1e-5) - lin(-1e-5)) / 2e-5) < 1e-8


def test_euler_defect_jax(jax_x64):
    rng = np.random.default_rng(19)
    U, v, Z, zq = rng.normal(size=(3, 3)), rng.normal(size=3), rng.normal(size=(4, 3)), np.r_[rng.normal(size=2), 0]
    assert np.isclose(float(E.euler_defect_fn("jax")(U, v, Z, zq, 0.1)), E.euler_defect_fn()(U, v, Z, zq, 0.1), rtol=1e-12)


def test_gd_step_conservation_linear_inf():
    rng = np.random.default_rng(4)
    d, lr = 3, 0.01
    S, U, v = spd(rng, d), rng.normal(size=(4, 4)), rng.normal(size=4)
    gU, gv = E.population_risk_grad_fn()(U, v, S)
    assert abs(np.sum(U * gU) - v @ gv) < 1e-9 * (1 + abs(v @ gv))          # Euler identity
    U1, v1 = U - lr * gU, v - lr * gv
    change = (np.sum(U1 ** 2) - v1 @ v1) - (np.sum(U ** 2) - v @ v)
    assert np.isclose(change, lr ** 2 * (np.sum(gU ** 2) - gv @ gv), rtol=1e-6, atol=1e-12)


def _model_loss(model, U, v, w, xq, X, S):
    d = len(w)
    zq = np.r_[xq, 0.0]
    Z = np.c_[X, X @ w]
    if model == "linear_inf":
        f = v @ gamma_w(S, w) @ U @ zq
    elif model == "linear_L":
        f = v @ (Z.T @ Z / len(Z)) @ U @ zq
    else:
        f = _softmax_pred(U, v, Z, zq)
    return 0.5 * (f - w @ xq) ** 2


@pytest.mark.parametrize("model", ["linear_inf", "linear_L", "softmax_L"])
def test_parity_table_numeric(model):
    rng = np.random.default_rng(21)
    d = 2
    S, w, xq, X = spd(rng, d), rng.normal(size=d), rng.normal(size=d), rng.normal(size=(5, d))
    U = np.zeros((d + 1, d + 1))
    U[:d, :d], U[d, d] = rng.normal(size=(d, d)), 0.3
    v = np.r_[np.zeros(d), 0.9]
    table = E.parity_table(model)
    assert len(table) == (d + 1) ** 2 + d + 1
    for sign, ww in ((1, w), (-1, -w)):
        gU = fd_grad(lambda P: _model_loss(model, P, v, ww, xq, X, S), U)
        gv = fd_grad(lambda p: _model_loss(model, U, p, ww, xq, X, S), v)
        if sign == 1:
            g_plus = {**{f"U[{i},{j}]": gU[i, j] for i in range(3) for j in range(3)}, **{f"v[{i}]": gv[i] for i in range(3)}}
        else:
            g_minus = {**{f"U[{i},{j}]": gU[i, j] for i in range(3) for j in range(3)}, **{f"v[{i}]": gv[i] for i in range(3)}}
    for name, par in table.items():
        assert np.isclose(g_minus[name], par * g_plus[name], atol=1e-6), (model, name)
        off = (name.startswith("v[") and name != "v[2]") or (name.startswith("U[") and (name[2] == "2") != (name[4] == "2"))
        assert par == (-1 if off else 1)


def test_rendering_and_write_all(tmp_path):
    der = get("S2")
    md = to_markdown(der)
    assert md.startswith("## S2") and "$$" in md
    js = to_json(der)
    json.dumps(js)
    assert "R" in js["results"] and "srepr" in js["results"]["R"]
    paths = write_all(str(tmp_path))
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted(f"S{i}.{e}" for i in range(1, 6) for e in ("md", "json"))
    json.loads((tmp_path / "S5.json").read_text())


def test_cli():
    env = {**os.environ, "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-m", "symbolic"], capture_output=True, text=True, env=env, cwd=ROOT, check=True).stdout
    assert all(f"S{i}" in out for i in range(1, 6))
    out = subprocess.run([sys.executable, "-m", "symbolic", "show", "S2"], capture_output=True, text=True, env=env, cwd=ROOT, check=True).stdout
    assert "theta*" in out and "R_reduced" in out
    out = subprocess.run([sys.executable, "-m", "symbolic", "markdown", "S5"], capture_output=True, text=True, env=env, cwd=ROOT, check=True).stdout
    assert "$$" in out


def test_cache_hit_and_invalidation_on_source_change(tmp_path, monkeypatch):
    """A second call is served from disk; a change of symbolic/'s source is a miss (no stale result)."""
    from symbolic import cache
    monkeypatch.setenv("SOFTLIN_SYMBOLIC_CACHE", str(tmp_path))
    calls = []

    def derive():
        calls.append(1)
        return {"n": len(calls)}

    assert cache.cached_call("Sx", "1", derive) == {"n": 1}
    assert cache.cached_call("Sx", "1", derive) == {"n": 1} and len(calls) == 1
    monkeypatch.setattr(cache, "source_digest", lambda: "edited")
    assert cache.cached_call("Sx", "1", derive) == {"n": 2}
