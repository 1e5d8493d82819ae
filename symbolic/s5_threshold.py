"""S5 — E exp(s) finite iff lambda_max(M) < 1/2; RMS-gap exponent beta = min(1/2, 1/(4 lambda_max)); theta* threshold."""
from __future__ import annotations

import sympy as sp

from .core import Derivation, register
from .s1_tilt import d
from .tools import gaussian_expectation, is_zero, sym_matrix, sym_vector

lam = sp.Symbol("lambda", positive=True)       # lambda_max(M)
T = sp.Symbol("T", positive=True)              # T = log L


def _exponent(expr_of_x, x_of_T):
    """lim_{T -> oo} log(leading term)/T, the power of L = e^T, from the asymptotic series at x = oo."""
    x = sp.Symbol("x", positive=True)
    lead = sp.expand(expr_of_x(x).series(x, sp.oo, 2)).removeO()
    lead = sp.Add(*[t for t in sp.Add.make_args(lead) if not t.has(sp.I)])  # erfi's constant -i
    return lead, sp.limit(sp.log(lead.subs(x, x_of_T)) / T, T, sp.oo)


TITLE = "Exponential-moment threshold and the concentration exponent beta"


@register("S5", version="2", title=TITLE)
def derive_s5() -> Derivation:
    """Score variance s(x_q), Gaussian integral with its condition, the det formula, beta and the theta* threshold."""
    steps, res = [], {}
    n = 2
    A_n, S_n, xq = sym_matrix("A", n), sym_matrix("Sigma", n, symmetric=True), sym_vector("x_q", n)
    xk = sym_vector("x", n)
    var = gaussian_expectation(((xk.T * A_n * xq)[0, 0]) ** 2, list(xk), S_n)
    ok = is_zero(var - (xq.T * A_n.T * S_n * A_n * xq)[0, 0])
    steps.append((f"block theta: score x_k^T A x_q, x_k ~ N(0, Sigma); Var = x_q^T A^T Sigma A x_q (d = 2 Isserlis): {ok} "
                  "(= x_q^T A Sigma A x_q of SPEC when A is symmetric)", var))
    assert ok
    xi, s = sp.Symbol("xi", real=True), sp.Symbol("s", positive=True)
    dens = sp.exp(-xi ** 2 / (2 * s)) / sp.sqrt(2 * sp.pi * s)
    m1 = sp.simplify(sp.integrate(sp.exp(xi) * dens, (xi, -sp.oo, sp.oo)))
    m2 = sp.simplify(sp.integrate(sp.exp(2 * xi) * dens, (xi, -sp.oo, sp.oo)))
    rel = sp.simplify((m2 / m1 ** 2 - 1).replace(sp.erfc, lambda a: 1 - sp.erf(a)))
    steps.append(("log-normal weights e^xi, xi ~ N(0, s): relative variance E[e^{2 xi}]/E[e^xi]^2 - 1 "
                  "(the self-normalised average has MSE ~ (e^s - 1)/L)", rel))
    res["relative_variance"] = rel
    g, lm = sp.Symbol("g", real=True), sp.Symbol("lambda", real=True)
    I1 = sp.integrate(sp.exp(lm * g ** 2) * sp.exp(-g ** 2 / 2) / sp.sqrt(2 * sp.pi), (g, -sp.oo, sp.oo), conds="piecewise")
    steps.append(("1-d: E[exp(lambda g^2)], g ~ N(0, 1), with sympy's convergence conditions", I1))
    ok = sp.simplify(I1.subs(lm, sp.Rational(1, 4)) - sp.sqrt(2)) == 0 and isinstance(I1.subs(lm, 1), sp.Integral)
    steps.append((f"finite (= (1 - 2 lambda)^(-1/2)) iff lambda < 1/2; lambda = 1/4 gives sqrt 2, lambda = 1 diverges: {ok}", None))
    assert ok
    M = sp.MatrixSymbol("M", d, d)
    lams = sp.symbols("lambda1:4", positive=True)
    det = sp.det(sp.eye(3) - 2 * sp.diag(*lams))
    ok = is_zero(det - sp.prod([1 - 2 * li for li in lams]))
    steps.append(("x_q = Sigma^(1/2) g: s = g^T M g, M = Sigma^(1/2) A^T Sigma A Sigma^(1/2) = Q diag(lambda_i) Q^T; "
                  f"Q^T g ~ N(0, I) so E exp(s) = prod_i (1 - 2 lambda_i)^(-1/2) = det(I - 2M)^(-1/2) (d = 3: {ok})", det))
    assert ok
    Eexp = sp.Determinant(sp.Identity(d) - 2 * M) ** sp.Rational(-1, 2)
    res["E_exp_s"] = Eexp
    res["finite_iff"] = sp.StrictLessThan(sp.Symbol("lambda_max(M)"), sp.Rational(1, 2))
    steps.append(("E_{x_q} exp(s) finite iff lambda_max(M) < 1/2", res["finite_iff"]))
    # exponent of E[min(1, (e^{lambda g^2} - 1)/L)], L = e^T, cut at g^2 = T/lambda
    lead_t, e_tail = _exponent(sp.erfc, sp.sqrt(T / (2 * lam)))
    steps.append(("tail |g| > sqrt(log L / lambda) (where the capped term is 1): P = erfc(sqrt(T/(2 lambda))), "
                  "leading term at oo and its L-exponent", sp.Tuple(lead_t, e_tail)))
    k = sp.Symbol("kappa", positive=True)
    J = sp.integrate(sp.exp(k * g ** 2), (g, 0, sp.Symbol("t", positive=True)))
    steps.append(("bulk, lambda > 1/2 (kappa = lambda - 1/2): (2/L) int_0^t e^{kappa g^2} dg / sqrt(2 pi) with", J))
    lead_b, e_erfi = _exponent(sp.erfi, sp.sqrt(k * T / lam))
    e_bulk = sp.simplify(e_erfi.subs(k, lam - sp.Rational(1, 2)) - 1)
    steps.append(("its L-exponent (erfi asymptotics, then the 1/L factor)", sp.Tuple(lead_b, e_bulk)))
    steps.append(("bulk, lambda < 1/2: int (e^{lambda g^2} - 1) phi -> (1 - 2 lambda)^(-1/2) - 1 finite, so the bulk is ~ 1/L: exponent -1", None))
    ok = is_zero(e_tail + 1 / (2 * lam)) and is_zero(e_bulk + 1 / (2 * lam))
    ms_exp = sp.Piecewise((-1, lam < sp.Rational(1, 2)), (-1 / (2 * lam), True))
    steps.append((f"both pieces scale as L^(-1/(2 lambda)) for lambda > 1/2: {ok}; mean square ~ L^(-min(1, 1/(2 lambda)))", ms_exp))
    assert ok
    beta = sp.Min(sp.Rational(1, 2), 1 / (4 * lam))
    steps.append(("RMS = sqrt(mean square): RMS gap ~ L^(-beta) up to logarithms, with the largest eigenvalue dominating", beta))
    res["beta"] = beta
    # theta*
    c = sp.Symbol("c", positive=True)
    Astar = S_n.inv() / c
    Msim = (Astar.T * S_n * Astar * S_n).applyfunc(sp.simplify)
    ok = is_zero(Msim - sp.eye(n) / c ** 2)
    steps.append((f"theta*: A = Sigma^-1 / c; M is similar to A^T Sigma A Sigma = I / c^2 (d = 2, general Sigma): {ok}", Msim))
    assert ok
    tr = sp.Symbol("tr(Sigma^-2)", positive=True)
    lam_star = 1 / sp.sqrt(tr)
    cond = sp.solve(sp.Eq(lam_star, sp.Rational(1, 2)), tr)
    steps.append(("c^2 = tr(Sigma^-2)^(1/2): lambda_max = tr(Sigma^-2)^(-1/2); threshold lambda_max = 1/2 at tr(Sigma^-2) =", sp.Tuple(*cond)))
    res["lambda_max_theta_star"] = lam_star
    res["threshold_tr_Sigma_inv2"] = cond[0]
    for label, S in (("isotropic d = 3", sp.eye(3)), ("Sigma = diag(2, 1, 1/2)", sp.diag(2, 1, sp.Rational(1, 2)))):
        t_ = sp.trace(S.inv() ** 2)
        l_ = 1 / sp.sqrt(t_)
        b_ = beta.subs(lam, l_)
        side = "above (lambda_max < 1/2, beta = 1/2)" if t_ > 4 else "below (lambda_max > 1/2, slow)"
        steps.append((f"{label}: tr(Sigma^-2) = {t_} ({float(t_):.2f}), lambda_max = {float(l_):.4f}, beta = {float(b_):.4f}: {side}",
                      sp.Tuple(t_, l_, b_)))
        res[f"beta_{'isotropic' if t_ == 3 else 'anisotropic'}"] = b_
    return Derivation("S5", TITLE, steps, res)
