"""S1 — Lemma 2.1: exponentially tilted Gaussian mean mu + Gamma a; Gamma_w; the linear(inf) predictor."""
from __future__ import annotations

import sympy as sp

from .core import Derivation, register
from .tools import is_zero, matrix_grad, sym_matrix, sym_vector, symmetrize

d = sp.Symbol("d", integer=True, positive=True)


def matrix_symbols():
    """Generic-d MatrixSymbols of the setting: Sigma (d,d), w (d,1), U (d+1,d+1), v (d+1,1), z_q."""
    return dict(
        Sigma=sp.MatrixSymbol("Sigma", d, d), w=sp.MatrixSymbol("w", d, 1),
        U=sp.MatrixSymbol("U", d + 1, d + 1), v=sp.MatrixSymbol("v", d + 1, 1),
        zq=sp.MatrixSymbol("z_q", d + 1, 1), x_q=sp.MatrixSymbol("x_q", d, 1))


def gamma_w_block(Sigma, w):
    """Gamma_w = P_w Sigma P_w^T as a 2x2 BlockMatrix, P_w = [I; w^T] (shape (d+1, d))."""
    P = sp.BlockMatrix([[sp.Identity(Sigma.shape[0])], [w.T]])
    return P, sp.block_collapse(P * Sigma * P.T)


TITLE = "Lemma 2.1: tilted Gaussian mean and the linear(inf) predictor"


@register("S1", version="1", title=TITLE)
def derive_s1() -> Derivation:
    """Lemma 2.1 via the Gaussian MGF, Gamma_w, and f_inf = v^T Gamma_w U z_q."""
    steps, results = [], {}
    # 1-d MGF from the Gaussian integral
    t, m, x = sp.symbols("t m x", real=True)
    s = sp.Symbol("sigma", positive=True)
    dens = sp.exp(-(x - m) ** 2 / (2 * s ** 2)) / sp.sqrt(2 * sp.pi * s ** 2)
    mgf1 = sp.simplify(sp.integrate(sp.exp(t * x) * dens, (x, -sp.oo, sp.oo)))
    steps.append(("1-d Gaussian integral: E[exp(t x)] for x ~ N(m, sigma^2)", sp.Eq(sp.Symbol("M(t)"), mgf1)))
    # d-dim MGF M(a) = exp(a.mu + a.Gamma a/2) (by a^T z ~ N(a.mu, a^T Gamma a)); tilted mean = grad log M
    n = 3
    a, mu, G = sym_vector("a", n), sym_vector("mu", n), sym_matrix("Gamma", n, symmetric=True)
    logM = (a.T * mu)[0, 0] + (a.T * G * a)[0, 0] / 2
    steps.append(("a^T z ~ N(a^T mu, a^T Gamma a), so by step 1 (t=1) log M(a) = a^T mu + a^T Gamma a / 2 (n = 3, symbolic)", logM))
    steps.append(("E[z e^{a^T z}] / E[e^{a^T z}] = grad_a M / M = grad_a log M", None))
    tilt = sp.Matrix([sp.diff(logM, ai) for ai in a])
    ok = is_zero(tilt - (mu + G * a))
    steps.append((f"grad_a log M computed entrywise; equals mu + Gamma a: {ok}", tilt))
    assert ok
    # generic-d matrix calculus
    A, Mu, Gm = sp.MatrixSymbol("a", d, 1), sp.MatrixSymbol("mu", d, 1), sp.MatrixSymbol("Gamma", d, d)
    gen = symmetrize(matrix_grad(sp.Trace(A.T * Mu) + sp.Trace(A.T * Gm * A) / 2, A), Gm)
    steps.append(("generic d, matrix calculus (Gamma symmetric): grad_a log M", gen))
    results["tilted_mean"] = gen
    # Gamma_w
    ms = matrix_symbols()
    P, Gw = gamma_w_block(ms["Sigma"], ms["w"])
    steps.append(("z = (x, w^T x) = P_w x with P_w = [I; w^T]", P))
    steps.append(("Cov(z) = P_w Sigma P_w^T = Gamma_w (block form)", Gw))
    S2, w2 = sym_matrix("Sigma", 2, symmetric=True), sym_vector("w", 2)
    P2 = sp.Matrix.vstack(sp.eye(2), w2.T)
    ref = sp.Matrix([[S2, S2 * w2], [w2.T * S2, w2.T * S2 * w2]])
    ok = is_zero(P2 * S2 * P2.T - ref)
    steps.append((f"explicit check at d = 2: P_w Sigma P_w^T == [[Sigma, Sigma w], [w^T Sigma, w^T Sigma w]]: {ok}", P2 * S2 * P2.T))
    assert ok
    results["Gamma_w"] = Gw
    # predictor
    f = ms["v"].T * Gw * ms["U"] * ms["zq"]
    steps.append(("tilt a = U z_q with mu = 0, Gamma = Gamma_w: softmax(L) -> v^T (Gamma_w U z_q) (LLN): linear(inf)", f))
    results["f_inf"] = f
    return Derivation("S1", TITLE, steps, results)
