"""S6 — C5 baselines: one-step preconditioned GD (predictor and risk), the Bayes posterior, the infinite-prompt optimum.

C5 task (docs/maths.md#c5, #s6): w ~ N(0, sigma_w^2 I), prompt covariates x_l ~ N(0, Sigma_p), query x_q ~ N(0, Sigma_q),
labels y = w^T x + eps with eps ~ N(0, sigma_eps^2) (query target included). The correct task has
Sigma_p = Sigma_q = Sigma; the authors' covariance slip has Sigma_p = C C (C C)^T and Sigma_q = I.
"""
from __future__ import annotations

import sympy as sp

from .core import Derivation, register
from .s1_tilt import d, gamma_w_block, matrix_symbols, n, tilt_at
from .tools import (
    expand_traces,
    explicit,
    gaussian_expectation,
    is_zero,
    matrix_grad,
    quadratic_forms_moment,
    sym_matrix,
    sym_vector,
    symmetrize,
)

L = sp.Symbol("L", integer=True, positive=True)
s2 = sp.Symbol("sigma_eps2", positive=True)     # label-noise variance
wv = sp.Symbol("sigma_w2", positive=True)       # prior variance of each entry of w
Sp, Sq = sp.MatrixSymbol("Sigma_p", d, d), sp.MatrixSymbol("Sigma_q", d, d)
X, y = sp.MatrixSymbol("X", L, d), sp.MatrixSymbol("y", L, 1)
w, x_q = sp.MatrixSymbol("w", d, 1), sp.MatrixSymbol("x_q", d, 1)
G_xx, G_xy = sp.MatrixSymbol("G_xx", d, d), sp.MatrixSymbol("G_xy", d, 1)   # Ghat_L blocks: X^T X / L, X^T y / L
P = sp.MatrixSymbol("P", d, d)                   # preconditioner
A = sp.MatrixSymbol("A", d, d)
b = sp.Symbol("b", positive=True)

# fixed argument orders of the exported results
GD_PREDICT_ARGS = (G_xy, x_q, Sp, d)
GD_RISK_ARGS = (L, Sp, Sq, s2, wv, d)
BAYES_ARGS = (G_xx, G_xy, x_q, L, s2, wv, d)
NOISY_GAMMA_ARGS = (Sp, w, s2, d)
OPT_PREDICT_ARGS = (w, x_q)
BLOCK_RISK_ARGS = (A, b, Sp, Sq, s2, wv, d)


def _tr_doit(expr):
    """Evaluate products inside traces (Sigma_p Sigma_p^-1 -> I), then expand the traces."""
    return expand_traces(expr.replace(lambda e: isinstance(e, sp.Trace), lambda e: sp.Trace(e.arg.doit())))


def _sym(expr):
    return symmetrize(symmetrize(expr, Sp), Sq)


TITLE = "C5 baselines: one-step preconditioned GD, the Bayes posterior mean, the infinite-prompt optimum"


@register("S6", version="2", title=TITLE)
def derive_s6() -> Derivation:
    """GD predictor and its risk (Isserlis), the best preconditioner at length L (the linear-attention
    class optimum), Bayes posterior mean / covariance, infinite-prompt optimum risk."""
    steps, res = [], {}
    _gd(steps, res)
    _class_optimum(steps, res)
    _bayes(steps, res)
    _infinite(steps, res)
    return Derivation("S6", TITLE, steps, res)


def _gd(steps, res):
    wq = sp.MatrixSymbol("w", d, 1)
    loss = (y - X * wq).T * (y - X * wq) / (2 * L)
    grad = loss.diff(wq)
    g0 = grad.xreplace({wq: sp.ZeroMatrix(d, 1)}).doit()
    steps.append(("empirical loss l(w) = |y - X w|^2 / (2 L) of the prompt (X: L x d covariates, y labels); "
                  "its gradient at w = 0", g0))
    w1 = (-P * g0).doit().subs(X.T * y, L * G_xy)
    steps.append(("one preconditioned step from 0 with lr 1, w_1 = -P grad l(0), with X^T y = L Ghat[:d, d] = L G_xy", w1))
    # explicit check d = 2, L = 3
    X2, y2, v2 = sym_matrix("X", 3, 2), sym_vector("y", 3), sym_vector("u", 2)
    l2 = ((y2 - X2 * v2).T * (y2 - X2 * v2))[0, 0] / 6
    ok = is_zero(sp.Matrix([sp.diff(l2, vi) for vi in v2]).subs({vi: 0 for vi in v2}) + X2.T * y2 / 3)
    steps.append((f"check d = 2, L = 3 (entries symbolic): entrywise gradient at 0 == -X^T y / L: {ok}", None))
    assert ok
    w_gd = w1.xreplace({P: Sp.I})
    steps.append(("preconditioner P = Sigma_p^-1 (the prompt covariance): the GD weights and prediction x_q^T w_1", w_gd))
    res["gd_w"] = w_gd
    res["gd_predict"] = x_q.T * w_gd
    # risk: y_q - f = w^T x_q + eps_q - x_q^T P h, h = X^T y / L
    W, K = sp.MatrixSymbol("W", d, d), sp.MatrixSymbol("K", d, d)
    steps.append(("risk E (f - y_q)^2, f = x_q^T P h, h = X^T y / L: over x_q ~ N(0, Sigma_q) and eps_q, "
                  "s^2 + E[(P h - w)^T Sigma_q (P h - w)]; below W = w w^T and K = P^T Sigma_q P", None))
    m4 = quadratic_forms_moment([W, K], Sp)
    m2 = quadratic_forms_moment([K], Sp)
    steps.append(("one prompt token, given w: E[y^2 x^T K x] = E[(x^T W x)(x^T K x)] + s^2 E[x^T K x]; Isserlis pairings, "
                  "x ~ N(0, Sigma_p)", sp.Tuple(m4, m2)))
    W2, K2, S2_ = sym_matrix("W", 2, symmetric=True), sym_matrix("K", 2), sym_matrix("S", 2, symmetric=True)
    x2 = sym_vector("x", 2)
    bf = gaussian_expectation((x2.T * W2 * x2)[0, 0] * (x2.T * K2 * x2)[0, 0], list(x2), S2_)
    sub2 = {W: W2, K: K2, Sp: S2_, d: 2}
    ok = is_zero(explicit(m4, sub2) - bf)
    steps.append((f"check d = 2 (W symmetric, K general, all entries symbolic) against the brute-force Isserlis sum: {ok}", None))
    assert ok
    EyX = quadratic_forms_moment([W], Sp)
    steps.append(("E[y x | w] = Sigma_p w (Isserlis, order 2), so two distinct tokens give w^T Sigma_p K Sigma_p w = "
                  "tr(W Sigma_p K Sigma_p); E[w^T Sigma_q P h | w] = tr(W Sigma_q P Sigma_p); E[w^T Sigma_q w] = tr(W Sigma_q)",
                  EyX))
    Ehh = (m4 + s2 * m2) / L + (1 - 1 / L) * sp.Trace(W * Sp * K * Sp)
    risk_w = s2 + Ehh - 2 * sp.Trace(W * Sq * P * Sp) + sp.Trace(W * Sq)
    risk_w = expand_traces(risk_w.xreplace({K: P.T * Sq * P}))
    steps.append(("given w: E[h^T K h] = (1/L) E[y^2 x^T K x] + (1 - 1/L) tr(W Sigma_p K Sigma_p); the risk given w", risk_w))
    sc = sp.Symbol("k")
    deg = sp.degree(expand_traces(risk_w.xreplace({W: sc * W})), sc)
    steps.append((f"it is linear in W (degree {deg} under W -> k W), so E_w replaces W by E[w w^T] = sigma_w^2 I", None))
    assert deg == 1
    risk_P = _sym(expand_traces(risk_w.xreplace({W: wv * sp.Identity(d)})))
    steps.append(("risk of x_q^T P h for any preconditioner P", risk_P))
    res["gd_risk_P"] = risk_P
    risk = _sym(_tr_doit(risk_P.xreplace({P: Sp.I})))
    risk = sp.collect(sp.expand(risk), 1 / L)
    steps.append(("P = Sigma_p^-1: the one-step GD risk", risk))
    res["gd_risk"] = risk
    lim = sp.limit(risk, L, sp.oo)
    steps.append((f"L -> oo: the risk tends to the noise variance: {lim == s2}", lim))
    assert lim == s2


def _class_optimum(steps, res):
    """min over P of the risk of x_q^T P h at length L: the optimum of the linear-attention class."""
    risk_P = res["gd_risk_P"]
    M = (wv * sp.Trace(Sp) + s2) / L * Sp + (1 + 1 / L) * wv * Sp * Sp
    quad = s2 + wv * sp.Trace(Sq) - 2 * wv * sp.Trace(Sq * P * Sp) + sp.Trace(P.T * Sq * P * M)
    steps.append(("the risk of x_q^T P h is quadratic in P: "
                  "R(P) = s^2 + sigma_w^2 tr Sigma_q - 2 sigma_w^2 tr(Sigma_q P Sigma_p) "
                  "+ tr(P^T Sigma_q P M), M = E[h h^T] = ((sigma_w^2 tr Sigma_p + s^2) / L) Sigma_p "
                  "+ (1 + 1/L) sigma_w^2 Sigma_p^2", quad))
    grad = matrix_grad(quad, P)
    steps.append(("dR/dP = 2 Sigma_q P M - 2 sigma_w^2 Sigma_q Sigma_p (Sigma_p, Sigma_q, M symmetric): zero at "
                  "P* = sigma_w^2 Sigma_p M^-1 whatever Sigma_q", grad))
    P_opt = wv * Sp * M.I
    R_opt = s2 + wv * sp.Trace(Sq) - wv * sp.Trace(Sq * P_opt * Sp)
    steps.append(("P* = sigma_w^2 Sigma_p M^-1 = ((tr Sigma_p + s^2 / sigma_w^2) / L I + (1 + 1/L) Sigma_p)^-1 and its risk "
                  "R*(L) = s^2 + sigma_w^2 tr Sigma_q - sigma_w^2 tr(Sigma_q P* Sigma_p)", sp.Tuple(P_opt, R_opt)))
    P2 = sym_matrix("P", 2)
    Sp2, Sq2 = sym_matrix("S", 2, symmetric=True), sym_matrix("Q", 2, symmetric=True)
    sub = {P: P2, Sp: Sp2, Sq: Sq2, d: 2}
    ok = is_zero(explicit(quad, sub) - explicit(risk_P, sub))
    steps.append((f"check d = 2 (P general, Sigma_p and Sigma_q symmetric, all entries symbolic): the quadratic form "
                  f"== the Isserlis risk of x_q^T P h above: {ok}", None))
    assert ok
    nums = {L: 7, s2: sp.Rational(1, 10), wv: sp.Rational(1, 5)}
    for label, Sp_n, Sq_n in _modes():
        sub_n = {Sp: Sp_n, Sq: Sq_n, d: 2}
        Pn = explicit(P_opt, sub_n).subs(nums)
        g = explicit(grad, {**sub_n, P: Pn}).subs(nums)
        Rn = explicit(risk_P, {**sub_n, P: Pn}).subs(nums) - explicit(R_opt, sub_n).subs(nums)
        hess_pd = all(ev > 0 for S_ in (Sp_n, Sq_n) for ev in S_.eigenvals())
        ok = is_zero(g) and is_zero(Rn) and hess_pd
        steps.append((f"{label}, L = 7, s^2 = 1/10, sigma_w^2 = 1/5 (exact rationals): dR/dP vanishes at P*, "
                      f"R(P*) == R*(L), and Sigma_p, Sigma_q are positive definite (so are M and the quadratic's "
                      f"Hessian Sigma_q (x) M): P* is the minimiser: {ok}", None))
        assert ok
    R_corr = explicit(R_opt, {Sp: _modes()[0][1], Sq: _modes()[0][2], d: 2}).subs({s2: nums[s2], wv: nums[wv]})
    lim = sp.limit(sp.cancel(R_corr), L, sp.oo)
    steps.append((f"L -> oo (correct mode, d = 2, s^2 = 1/10): R*(L) -> the noise variance: {lim == nums[s2]}", lim))
    assert lim == nums[s2]
    res["linear_class_P"] = P_opt
    res["linear_class_risk"] = R_opt


def _bayes(steps, res):
    wq = sp.MatrixSymbol("w", d, 1)
    logp = -(y - X * wq).T * (y - X * wq) / (2 * s2) - wq.T * wq / (2 * wv)
    steps.append(("Bayes: log posterior of w (Gaussian prior sigma_w^2 I, Gaussian likelihood, noise known), up to a constant",
                  logp))
    grad = logp.diff(wq)
    H = grad.diff(wq)
    steps.append(("its gradient and Hessian (constant: the log posterior is quadratic, so the posterior is Gaussian)",
                  sp.Tuple(grad, H)))
    g0 = grad.xreplace({wq: sp.ZeroMatrix(d, 1)}).doit()
    V = sp.Inverse(-H)
    mean = V * g0
    steps.append(("posterior covariance V = (-Hessian)^-1 and mean = the exact Newton step from 0, V grad(0)", sp.Tuple(V, mean)))
    # explicit check d = 2, L = 3: gradient vanishes at the mean; ridge form
    X2, y2, u2 = sym_matrix("X", 3, 2), sym_vector("y", 3), sym_vector("u", 2)
    lp2 = -((y2 - X2 * u2).T * (y2 - X2 * u2))[0, 0] / (2 * s2) - (u2.T * u2)[0, 0] / (2 * wv)
    m2 = (X2.T * X2 / s2 + sp.eye(2) / wv).inv() * X2.T * y2 / s2
    g2 = sp.Matrix([sp.diff(lp2, ui) for ui in u2]).subs(dict(zip(u2, m2)))
    ridge = (X2.T * X2 + (s2 / wv) * sp.eye(2)).inv() * X2.T * y2
    H2 = sp.hessian(lp2, list(u2))
    ok = is_zero(g2.applyfunc(lambda e: sp.cancel(sp.together(e)))) and is_zero((m2 - ridge).applyfunc(sp.cancel))
    ok &= is_zero(H2 + X2.T * X2 / s2 + sp.eye(2) / wv)
    steps.append(("check d = 2, L = 3 (entries symbolic): the gradient vanishes at the mean, the Hessian is "
                  "-(X^T X / s^2 + I / sigma_w^2), and the mean is the ridge solution "
                  f"(X^T X + (s^2 / sigma_w^2) I)^-1 X^T y: {ok}", None))
    assert ok
    sub = {X.T * X: L * G_xx, X.T * y: L * G_xy}
    mean_G, V_G = mean.subs(sub), V.subs(sub)
    steps.append(("with X^T X = L G_xx, X^T y = L G_xy (the prompt's second moment Ghat_L): mean, covariance",
                  sp.Tuple(mean_G, V_G)))
    res["posterior_mean"], res["posterior_cov"] = mean_G, V_G
    res["bayes_predict"] = x_q.T * mean_G
    # conditional risk of the posterior-mean prediction
    eq, delta = sp.Symbol("eps_q", real=True), sp.Symbol("delta", real=True)
    r = gaussian_expectation((delta + eq) ** 2, [eq], sp.Matrix([[s2]]))
    steps.append(("y_q - x_q^T mean = x_q^T (w - mean) + eps_q = delta + eps_q, eps_q independent: "
                  "E over eps_q of (delta + eps_q)^2", r))
    Kq = sp.MatrixSymbol("K_q", d, d)
    Ed = quadratic_forms_moment([Kq], V_G)
    risk = s2 + Ed.xreplace({Kq: x_q * x_q.T})
    steps.append(("E[delta^2 | prompt, x_q] = E[(w - mean)^T x_q x_q^T (w - mean)], w - mean ~ N(0, V): the Bayes risk "
                  "given the prompt and the query (the smallest of any predictor)", risk))
    res["bayes_conditional_risk"] = risk


def _infinite(steps, res):
    _, Gw = gamma_w_block(Sp, w)
    e = sp.BlockMatrix([[sp.ZeroMatrix(d, 1)], [sp.Identity(1)]])
    Gn = sp.block_collapse(Gw + s2 * e * e.T)
    steps.append(("infinite prompt with label noise: z = P_w x + eps e_(d+1), so Cov(z) = P_w Sigma_p P_w^T + s^2 e e^T", Gn))
    res["Gamma_w_noisy"] = Gn
    ms = matrix_symbols()
    f = ms["v"].T * tilt_at(sp.MatrixSymbol("Gamma", n, n) * sp.MatrixSymbol("a", n, 1) + sp.MatrixSymbol("mu", n, 1),
                            sp.ZeroMatrix(d + 1, 1), Gn, ms["U"] * ms["zq"], d + 1)
    steps.append(("S1's tilted mean with Gamma = Cov(z): the trained model's infinite-prompt prediction", f))
    res["f_inf_noisy"] = f
    r, eq = sp.Symbol("r", real=True), sp.Symbol("eps_q", real=True)
    dec = gaussian_expectation((r - eq) ** 2, [eq], sp.Matrix([[s2]]))
    steps.append(("any predictor f(w, x_q): f - y_q = r - eps_q with r = f - w^T x_q; eps_q independent of (w, x_q): "
                  "E (f - y_q)^2 = E r^2 + s^2 >= s^2, equal iff f = w^T x_q", dec))
    assert is_zero(dec - r ** 2 - s2)
    c = sp.Symbol("c", positive=True)
    vb = sp.BlockMatrix([[sp.ZeroMatrix(d, 1)], [c * sp.Identity(1)]])
    Ub = sp.BlockMatrix([[Sp.I / c, sp.ZeroMatrix(d, 1)], [sp.ZeroMatrix(1, d), sp.ZeroMatrix(1, 1)]])
    zb = sp.BlockMatrix([[x_q], [sp.ZeroMatrix(1, 1)]])
    f_opt = sp.block_collapse(vb.T * Gn * Ub * zb)
    f_opt = f_opt.blocks[0, 0] if isinstance(f_opt, sp.BlockMatrix) else f_opt
    f_opt = f_opt.doit()
    ok = f_opt == w.T * x_q
    steps.append((f"at U = blockdiag(Sigma_p^-1 / c, 0), v = c e_(d+1) (any c > 0) the prediction is w^T x_q: {ok}", f_opt))
    assert ok
    res["limit_optimum_predict"] = f_opt
    res["limit_optimum_risk"] = s2
    # block-structured risk, its minimiser in both covariance modes
    W = sp.MatrixSymbol("W", d, d)
    B = b * Sp * A - sp.Identity(d)
    Rw = quadratic_forms_moment([B.T * W * B], Sq)
    Rb = _sym(expand_traces(s2 + Rw.xreplace({W: wv * sp.Identity(d)})))
    steps.append(("block theta (v = b e_(d+1), U = blockdiag(A, .)): f - w^T x_q = w^T (b Sigma_p A - I) x_q; "
                  "E over x_q (Isserlis) then w: R(A, b) =", Rb))
    res["limit_block_risk"] = Rb
    dA = _sym(matrix_grad(Rb, A))
    steps.append(("dR/dA", dA))
    for label, Sp_n, Sq_n in _modes():
        A2 = sym_matrix("A", 2)
        sub = {A: A2, Sp: Sp_n, Sq: Sq_n, d: 2}
        sol = sp.solve(list(explicit(dA, sub)), list(A2), dict=True)
        assert len(sol) == 1
        A_sol = A2.xreplace(sol[0]).applyfunc(sp.cancel)
        Rmin = sp.simplify(explicit(Rb, {**sub, A: A_sol}))
        ok = is_zero(b * Sp_n * A_sol - sp.eye(2)) and Rmin == s2
        steps.append((f"{label}: dR/dA = 0 solved for A: b Sigma_p A = I, and R at the minimiser == s^2: {ok}",
                      sp.Tuple(Sp_n, Sq_n, A_sol)))
        assert ok
    steps.append(("the infinite-prompt optimum risk is the noise variance, in both covariance modes", s2))


def _modes():
    """d = 2, KMS Sigma (rho = 1/2): (label, Sigma_p, Sigma_q) correct and as in the authors' code."""
    S = sp.Matrix([[1, sp.Rational(1, 2)], [sp.Rational(1, 2), 1]])
    C = S.cholesky(hermitian=False)
    return [("correct, Sigma_p = Sigma_q = Sigma (KMS, d = 2)", S, S),
            ("authors' slip, Sigma_p = C C (C C)^T, Sigma_q = I (C the lower Cholesky factor)", (C * C) * (C * C).T, sp.eye(2))]
