"""S1 — Lemma 2.1: the Gaussian log-MGF derived, its gradient (tilted mean) and Hessian; Gamma_w; linear(inf)."""
from __future__ import annotations

import sympy as sp

from .core import Derivation, register
from .tools import is_zero, matrix_grad, sym_matrix, sym_vector, symmetrize

d = sp.Symbol("d", integer=True, positive=True)
n = sp.Symbol("n", integer=True, positive=True)   # dimension of a generic Gaussian vector z

# generic-n symbols of the lemma: z ~ N(mu, Gamma), tilt a, Gamma = C C^T (C any square root)
a, mu = sp.MatrixSymbol("a", n, 1), sp.MatrixSymbol("mu", n, 1)
Gamma, C = sp.MatrixSymbol("Gamma", n, n), sp.MatrixSymbol("C", n, n)
TILT_ARGS = (a, mu, Gamma, n)


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


def _contract_root(expr, root, full):
    """Replace every adjacent pair root * root^T inside a matrix product by `full` (C C^T -> Gamma)."""
    def rep(mm):
        out, args, i = [], list(mm.args), 0
        while i < len(args):
            if i + 1 < len(args) and args[i] == root and args[i + 1] == root.T:
                out.append(full)
                i += 2
            else:
                out.append(args[i])
                i += 1
        return sp.MatMul(*out)
    return expr.replace(lambda e: isinstance(e, sp.MatMul) and root in e.args, rep)


def tilt_at(result, mu_, Gamma_, a_, dim):
    """Substitute (mu, Gamma, a) of dimension `dim` into a generic-n S1 result."""
    e = result.xreplace({n: dim})
    e = e.xreplace({sp.MatrixSymbol("mu", dim, 1): mu_, sp.MatrixSymbol("Gamma", dim, dim): Gamma_,
                    sp.MatrixSymbol("a", dim, 1): a_})
    if isinstance(e, sp.MatAdd):  # drop the zero mean
        e = sp.MatAdd(*[t for t in e.args if not getattr(t, "is_ZeroMatrix", False)])
    return e


TITLE = "Lemma 2.1: Gaussian log-MGF, tilted mean and covariance, and the linear(inf) predictor"


@register("S1", version="2", title=TITLE)
def derive_s1() -> Derivation:
    """log M(a) of N(mu, Gamma) from the 1-d integral; tilted mean / covariance by differentiation; f_inf."""
    steps, res = [], {}
    # 1-d integral, the only integral the lemma needs
    g, t = sp.Symbol("g", real=True), sp.Symbol("t", real=True)
    phi = sp.exp(-g ** 2 / 2) / sp.sqrt(2 * sp.pi)
    m1 = sp.simplify(sp.integrate(sp.exp(t * g) * phi, (g, -sp.oo, sp.oo)).rewrite(sp.erf))
    steps.append(("1-d Gaussian integral (sympy): E[exp(t g)] for g ~ N(0, 1)", sp.Eq(sp.Symbol("E[e^{t g}]"), m1)))
    log1 = sp.expand_log(sp.log(m1), force=True)
    # general n: z = mu + C g, Gamma = C C^T, g ~ N(0, I_n) with independent coordinates
    bvec = C.T * a
    steps.append(("z = mu + C g, Gamma = C C^T, g ~ N(0, I_n): a^T z = a^T mu + b^T g with b = C^T a; the "
                  "coordinates of g are independent, so E[exp(a^T z)] = exp(a^T mu) prod_i E[exp(b_i g_i)]", bvec))
    bi = sp.Symbol("b_i", real=True)
    per = log1.subs(t, bi)
    steps.append(("log of each factor (step 1 at t = b_i); summed over i this is b^T b times", sp.cancel(per / bi ** 2)))
    coef = sp.cancel(per / bi ** 2)
    assert is_zero(coef - sp.Rational(1, 2))
    logM = _contract_root(sp.expand((a.T * mu + coef * bvec.T * bvec).doit()), C, Gamma)
    steps.append(("log M(a) = a^T mu + (1/2) b^T b, and b^T b = a^T C C^T a = a^T Gamma a:", logM))
    res["log_mgf"] = logM
    # explicit check: completing the square in the exponent (n = 2, general symmetric Gamma)
    k = 2
    a2, mu2, z2 = sym_vector("a", k), sym_vector("mu", k), sym_vector("z", k)
    G2 = sym_matrix("Gamma", k, symmetric=True)
    P2 = G2.inv()
    shift = mu2 + G2 * a2
    lhs = (a2.T * z2)[0, 0] - ((z2 - mu2).T * P2 * (z2 - mu2))[0, 0] / 2
    rhs = -((z2 - shift).T * P2 * (z2 - shift))[0, 0] / 2 + (a2.T * mu2)[0, 0] + (a2.T * G2 * a2)[0, 0] / 2
    ok = is_zero(sp.cancel(sp.together(lhs - rhs)))
    steps.append(("check n = 2 (all entries symbolic), completing the square in the density's exponent: "
                  "a^T z - (z - mu)^T Gamma^-1 (z - mu) / 2 = -(z - mu - Gamma a)^T Gamma^-1 (z - mu - Gamma a) / 2 "
                  f"+ a^T mu + a^T Gamma a / 2, so the tilted law is N(mu + Gamma a, Gamma): {ok}", None))
    assert ok
    # n = 1 reduces to the integral of step 1 (with z = m + s g)
    m, s = sp.Symbol("m", real=True), sp.Symbol("s", positive=True)
    direct = sp.simplify(sp.integrate(sp.exp(t * (m + s * g)) * phi, (g, -sp.oo, sp.oo)).rewrite(sp.erf))
    ok = is_zero(sp.expand_log(sp.log(direct), force=True) - (t * m + s ** 2 * t ** 2 / 2))
    steps.append((f"check n = 1: log E[exp(t (m + s g))] by direct integration == t m + s^2 t^2 / 2: {ok}", None))
    assert ok
    # tilted mean and covariance by differentiation
    steps.append(("E[z e^{a^T z}] / E[e^{a^T z}] = grad_a M / M = grad_a log M; the tilted covariance is the Hessian", None))
    mean = symmetrize(matrix_grad(sp.Trace(logM), a), Gamma)
    steps.append(("tilted mean, grad_a log M (generic n, Gamma symmetric)", mean))
    cov = symmetrize(mean.diff(a), Gamma)
    steps.append(("tilted covariance, Hessian of log M", cov))
    res["tilted_mean"], res["tilted_cov"] = mean, cov
    k = 3
    a3, mu3, G3 = sym_vector("a", k), sym_vector("mu", k), sym_matrix("Gamma", k, symmetric=True)
    lm3 = (a3.T * mu3)[0, 0] + (a3.T * G3 * a3)[0, 0] / 2
    grad3 = sp.Matrix([sp.diff(lm3, ai) for ai in a3])
    hess3 = sp.hessian(lm3, list(a3))
    ok = is_zero(grad3 - tilt_at(mean, mu3, G3, a3, k).as_explicit()) and is_zero(hess3 - G3)
    steps.append((f"check n = 3, entrywise: gradient == mu + Gamma a and Hessian == Gamma: {ok}", grad3))
    assert ok
    # Gamma_w and the predictor
    ms = matrix_symbols()
    P, Gw = gamma_w_block(ms["Sigma"], ms["w"])
    steps.append(("token z = (x, w^T x) = P_w x with P_w = [I; w^T]", P))
    steps.append(("Cov(z) = P_w Sigma P_w^T = Gamma_w (block form)", Gw))
    S2, w2 = sym_matrix("Sigma", 2, symmetric=True), sym_vector("w", 2)
    P2 = sp.Matrix.vstack(sp.eye(2), w2.T)
    ref = sp.Matrix([[S2, S2 * w2], [w2.T * S2, w2.T * S2 * w2]])
    ok = is_zero(P2 * S2 * P2.T - ref)
    steps.append((f"explicit check at d = 2: P_w Sigma P_w^T == [[Sigma, Sigma w], [w^T Sigma, w^T Sigma w]]: {ok}",
                  P2 * S2 * P2.T))
    assert ok
    res["Gamma_w"] = Gw
    tilted = tilt_at(mean, sp.ZeroMatrix(d + 1, 1), Gw, ms["U"] * ms["zq"], d + 1)
    steps.append(("tilted mean at mu = 0, Gamma = Gamma_w, a = U z_q (the softmax scores z_k^T U z_q are a^T z_k)", tilted))
    f = ms["v"].T * tilted
    steps.append(("softmax(L) -> v^T (tilted mean) by the law of large numbers: linear(inf)", f))
    res["f_inf"] = f
    return Derivation("S1", TITLE, steps, res)
