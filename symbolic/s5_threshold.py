"""S5 — E exp(s) finite iff lambda_max(M) < 1/2; RMS-gap exponent beta = min(1/2, 1/(4 lambda_max)); theta* threshold."""
from __future__ import annotations

import sympy as sp

from .core import Derivation, register
from .s1_tilt import d
from .tools import LambdaMax, gaussian_expectation, is_zero, sym_matrix, sym_vector

lam = sp.Symbol("lambda", positive=True)       # lambda_max(M)
T = sp.Symbol("T", positive=True)              # T = log L


def _exponent(expr_of_x, x_of_T):
    """lim_{T -> oo} log(leading term)/T, the power of L = e^T, from the asymptotic series at x = oo."""
    x = sp.Symbol("x", positive=True)
    lead = sp.expand(expr_of_x(x).series(x, sp.oo, 2)).removeO()
    lead = sp.Add(*[t for t in sp.Add.make_args(lead) if not t.has(sp.I)])  # erfi's constant -i
    return lead, sp.limit(sp.log(lead.subs(x, x_of_T)) / T, T, sp.oo)


TITLE = "Exponential-moment threshold and the concentration exponent beta"


@register("S5", version="4", title=TITLE)
def derive_s5() -> Derivation:
    """Score variance s(x_q), Gaussian integral with its condition, the det formula, beta and the theta* threshold."""
    steps, res = [], {}
    n = 2
    A_n, S_n, xq = sym_matrix("A", n), sym_matrix("Sigma", n, symmetric=True), sym_vector("x_q", n)
    xk = sym_vector("x", n)
    var = gaussian_expectation(((xk.T * A_n * xq)[0, 0]) ** 2, list(xk), S_n)
    ok = is_zero(var - (xq.T * A_n.T * S_n * A_n * xq)[0, 0])
    steps.append((f"block theta: score x_k^T A x_q, x_k ~ N(0, Sigma); Var = x_q^T A^T Sigma A x_q (d = 2 Isserlis): {ok} "
                  "(= x_q^T A Sigma A x_q of docs/maths.md#threshold when A is symmetric)", var))
    assert ok
    xi, s = sp.Symbol("xi", real=True), sp.Symbol("s", positive=True)
    dens = sp.exp(-xi ** 2 / (2 * s)) / sp.sqrt(2 * sp.pi * s)
    m1 = sp.simplify(sp.integrate(sp.exp(xi) * dens, (xi, -sp.oo, sp.oo)))
    m2 = sp.simplify(sp.integrate(sp.exp(2 * xi) * dens, (xi, -sp.oo, sp.oo)))
    rel = sp.simplify((m2 / m1 ** 2 - 1).replace(sp.erfc, lambda a: 1 - sp.erf(a)))
    steps.append(("log-normal weights e^xi, xi ~ N(0, s): relative variance E[e^{2 xi}]/E[e^xi]^2 - 1 "
                  "(the self-normalised average has MSE ~ (e^s - 1)/L)", rel))
    res["relative_variance"] = rel
    # the moment generating function of the quadratic form, and its pole
    g, lm, t = sp.Symbol("g", real=True), sp.Symbol("lambda", real=True), sp.Symbol("t", real=True)
    I1 = sp.integrate(sp.exp(t * lm * g ** 2) * sp.exp(-g ** 2 / 2) / sp.sqrt(2 * sp.pi), (g, -sp.oo, sp.oo),
                      conds="piecewise")
    steps.append(("1-d: E[exp(t lambda g^2)], g ~ N(0, 1), with sympy's convergence conditions", I1))
    branch = sp.simplify(I1.args[0][0]) if isinstance(I1, sp.Piecewise) else None
    u = sp.Symbol("u", positive=True)
    ok = (branch is not None and is_zero(branch ** -2 - (1 - 2 * t * lm))
          and sp.simplify(I1.subs({t: 1, lm: sp.Rational(1, 4)}) - sp.sqrt(2)) == 0
          and isinstance(I1.subs({t: 1, lm: 1}), sp.Integral))
    fin = branch.args[-1][0] if isinstance(branch, sp.Piecewise) else branch
    steps.append((f"i.e. (1 - 2 t lambda)^(-1/2) where finite; t lambda = 1/4 gives sqrt 2, t lambda = 1 diverges: {ok}", fin))
    assert ok
    S, A, K = (sp.MatrixSymbol(nm, d, d) for nm in ("Sigma", "A", "K"))
    lams = sp.symbols("lambda1:4", positive=True)
    det3 = sp.det(sp.eye(3) - 2 * t * sp.diag(*lams))
    ok = is_zero(det3 - sp.prod([1 - 2 * t * li for li in lams]))
    steps.append(("x = Sigma^(1/2) g: x^T K x = g^T M g, M = Sigma^(1/2) K Sigma^(1/2) = Q diag(lambda_i) Q^T; Q^T g ~ N(0, I) "
                  "has independent coordinates, so the MGF is the product of step 1: prod_i (1 - 2 t lambda_i)^(-1/2) = "
                  f"det(I - 2 t M)^(-1/2) (d = 3: {ok})", det3))
    assert ok
    R2, K2 = sym_matrix("R", 2, symmetric=True), sym_matrix("K", 2, symmetric=True)
    ok = is_zero(sp.det(sp.eye(2) - 2 * t * R2 * K2 * R2) - sp.det(sp.eye(2) - 2 * t * R2 * R2 * K2))
    steps.append(("Sylvester, det(I - X Y) = det(I - Y X) (checked at d = 2, symmetric R = Sigma^(1/2) and K): "
                  f"det(I - 2 t M) = det(I - 2 t Sigma K), no square root needed: {ok}", None))
    assert ok
    mgf = sp.Determinant(sp.Identity(d) - 2 * t * S * K) ** sp.Rational(-1, 2)
    steps.append(("E_{x ~ N(0, Sigma)} exp(t x^T K x) =", mgf))
    res["mgf_quadratic_form"] = mgf
    M2 = sym_matrix("M", 2, symmetric=True)
    mu_ = sp.Symbol("mu")
    cp = M2.charpoly(mu_).as_expr()
    ok = is_zero(sp.det(sp.eye(2) - 2 * t * M2) - sp.expand((2 * t) ** 2 * cp.subs(mu_, 1 / (2 * t))))
    poles = sp.solve(det3, t)
    ok &= set(poles) == {1 / (2 * li) for li in lams}
    steps.append(("det(I - 2 t M) = (2 t)^d charpoly_M(1 / (2 t)) (d = 2, symmetric M): it vanishes at t = 1 / (2 lambda_i); "
                  f"d = 3 diagonal, sympy's roots in t: {ok}", sp.Tuple(*poles)))
    assert ok
    lmax = LambdaMax(A.T * S * A * S)
    t_star = 1 / (2 * lmax)
    steps.append(("the MGF is finite for t below its first pole t* = 1 / (2 lambda_max(M)) and infinite beyond "
                  "(step 1 per eigen-direction); block theta: K = A^T Sigma A, and lambda_max(M) is the largest eigenvalue of "
                  "the similar matrix A^T Sigma A Sigma (same det(I - 2 t .) for every t)", sp.Eq(sp.Symbol("t*"), t_star)))
    res["lambda_max"] = lmax
    res["t_pole"] = t_star
    Eexp = mgf.subs(t, 1).xreplace({K: A.T * S * A})
    res["E_exp_s"] = Eexp
    res["finite_iff"] = sp.StrictLessThan(sp.Symbol("lambda_max(M)"), sp.Rational(1, 2))
    steps.append(("E_{x_q} exp(s) is the MGF at t = 1 with K = A^T Sigma A: finite iff 1 < t*, i.e. lambda_max(M) < 1/2", Eexp))
    # exponent of E[min(1, (e^{lambda g^2} - 1)/L)], L = e^T, cut at g^2 = T/lambda
    lead_t, e_tail = _exponent(sp.erfc, sp.sqrt(T / (2 * lam)))
    steps.append(("tail |g| > sqrt(log L / lambda) (where the capped term is 1): P = erfc(sqrt(T/(2 lambda))), "
                  "leading term at oo and its L-exponent (both regimes)", sp.Tuple(lead_t, e_tail)))
    k = sp.Symbol("kappa", positive=True)
    tt = sp.Symbol("t", positive=True)
    J = sp.integrate(sp.exp(k * g ** 2), (g, 0, tt))
    steps.append(("bulk, lambda > 1/2 (kappa = lambda - 1/2 > 0): (2/L) int_0^t e^{kappa g^2} dg / sqrt(2 pi) with", J))
    lead_b, e_erfi = _exponent(sp.erfi, sp.sqrt(k * T / lam))
    e_bulk_hi = sp.simplify(e_erfi.subs(k, lam - sp.Rational(1, 2)) - 1)
    steps.append(("its L-exponent (erfi asymptotics, then the 1/L factor)", sp.Tuple(lead_b, e_bulk_hi)))
    kn = sp.Symbol("kappa", negative=True)
    Jn = sp.integrate(sp.exp(kn * g ** 2), (g, 0, tt))
    bracket = 2 * Jn / sp.sqrt(2 * sp.pi) - sp.erf(tt / sp.sqrt(2))
    lim = sp.simplify(sp.limit(bracket, tt, sp.oo))
    lim_l = sp.simplify(lim.subs(kn, lam - sp.Rational(1, 2)))
    steps.append(("bulk, lambda < 1/2 (kappa < 0): L x bulk = int_{|g|<t} (e^{lambda g^2} - 1) phi = "
                  "2 int_0^t e^{kappa g^2} dg / sqrt(2 pi) - erf(t / sqrt 2), with the integral", Jn))
    ok = is_zero(lim_l.subs(lam, sp.Rational(1, 4)) - (sp.sqrt(2) - 1))
    steps.append((f"its limit t -> oo (sympy), with kappa = lambda - 1/2: finite, (1 - 2 lambda)^(-1/2) - 1 > 0 "
                  f"(lambda = 1/4: sqrt 2 - 1: {ok})", lim_l))
    assert ok
    c_b = sp.Symbol("c_bulk", positive=True)   # the finite positive limit of step above
    e_bulk_lo = sp.limit(sp.log(sp.exp(-T) * c_b) / T, T, sp.oo)
    steps.append(("so the bulk is c_bulk / L (c_bulk that positive constant): its L-exponent lim log(bulk) / log L", e_bulk_lo))
    # the mean square is the larger piece, regime by regime (lambda parametrised by u > 0)
    lo_sub, hi_sub = {lam: 1 / (2 * (1 + u))}, {lam: (1 + u) / 2}
    ms_lo = sp.simplify(sp.Max(e_bulk_lo, e_tail.subs(lo_sub)))
    ms_hi = sp.simplify(sp.Max(e_bulk_hi.subs(hi_sub), e_tail.subs(hi_sub)))
    steps.append(("mean-square L-exponent max(bulk, tail): lambda = 1/(2(1+u)) < 1/2 and lambda = (1+u)/2 > 1/2 (u > 0)",
                  sp.Tuple(ms_lo, ms_hi)))
    ms_exp = sp.Piecewise((ms_lo, lam < sp.Rational(1, 2)), (sp.simplify(ms_hi.subs(u, 2 * lam - 1)), True))
    steps.append(("mean square ~ L^(exponent)", ms_exp))
    beta = sp.piecewise_fold(-ms_exp / 2)
    ok = (e_bulk_lo == -1 and is_zero(ms_lo + 1) and is_zero(ms_hi.subs(u, 2 * lam - 1) + 1 / (2 * lam))
          and is_zero(e_tail + 1 / (2 * lam)) and is_zero(e_bulk_hi + 1 / (2 * lam)))
    ok &= all(is_zero(beta.subs(sub) - sp.Min(sp.Rational(1, 2), 1 / (4 * lam)).subs(sub)) for sub in (lo_sub, hi_sub))
    steps.append(("RMS = sqrt(mean square): the RMS gap ~ L^(-beta) up to logarithms, the largest eigenvalue dominating; "
                  f"beta == min(1/2, 1/(4 lambda)) in both regimes: {ok}", beta))
    assert ok
    res["ms_exponent"] = ms_exp
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
    steps.append(("c^2 = tr(Sigma^-2)^(1/2): lambda_max = tr(Sigma^-2)^(-1/2); "
                  "threshold lambda_max = 1/2 at tr(Sigma^-2) =", sp.Tuple(*cond)))
    res["lambda_max_theta_star"] = lam_star
    res["threshold_tr_Sigma_inv2"] = cond[0]
    for label, S in (("isotropic d = 3", sp.eye(3)), ("Sigma = diag(2, 1, 1/2)", sp.diag(2, 1, sp.Rational(1, 2)))):
        t_ = sp.trace(S.inv() ** 2)
        l_ = 1 / sp.sqrt(t_)
        b_ = beta.subs(lam, l_)
        side = "above (lambda_max < 1/2, beta = 1/2)" if t_ > 4 else "below (lambda_max > 1/2, slow)"
        steps.append((f"{label}: tr(Sigma^-2) = {t_} ({float(t_):.2f}), lambda_max = {float(l_):.4f}, "
                      f"beta = {float(b_):.4f}: {side}",
                      sp.Tuple(t_, l_, b_)))
        res[f"beta_{'isotropic' if t_ == 3 else 'anisotropic'}"] = b_
    _importance_steps(steps, res, t, lm, lams, T)
    return Derivation("S5", TITLE, steps, res)


def _importance_steps(steps, res, t, lm, lams, T):
    """Issue 31: the query proposal q_t = p e^{t s} / mgf(t), its weight, and the tilt t per probe."""
    sq = sp.Symbol("s", nonnegative=True)
    mgf1 = sp.Symbol("m_t", positive=True)               # mgf(t) = det(I - 2 t M)^(-1/2), above
    w = mgf1 * sp.exp(-t * sq)
    steps.append(("importance sampling of the query: q_t(x) = p(x) exp(t s(x)) / mgf(t) is the Gaussian "
                  "N(0, (Sigma^-1 - 2 t K)^-1) (K = A^T Sigma A; a density for t < t*), and the weight "
                  "p / q_t = mgf(t) exp(-t s) has E_q[weight h] = E_p[h] for every h", w))
    res["importance_log_weight"] = sp.log(mgf1) - t * sq
    bounded = sp.simplify(w.subs(t, 1) * (sp.exp(sq) - 1) - mgf1 * (1 - sp.exp(-sq)))
    ok = bounded == 0
    steps.append(("t = 1 (admissible iff lambda_max < 1/2): the weighted first-order term weight (e^s - 1) / L = "
                  f"mgf(1) (1 - e^-s) / L lies in [0, mgf(1) / L): bounded, every moment finite: {ok}", bounded))
    assert ok
    logJ = -t * T + sum(-sp.log(1 - 2 * t * li) / 2 for li in lams)
    stat = sp.diff(logJ, t)
    term = sp.diff(-sp.log(1 - 2 * t * lm) / 2, t)
    ok = is_zero(stat - (sum(term.subs(lm, li) for li in lams) - T))
    ok &= is_zero(sp.diff(term, t) - 2 * lm ** 2 / (1 - 2 * t * lm) ** 2)   # > 0: convex
    steps.append(("capped first-order term h = min(1, (e^s - 1) / L), L = e^T, lambda > 1/2 (or t < 2 - 1/(2 lambda)): "
                  "E_q[(weight h)^2] / E_p[h]^2 ~ L^(c - t) mgf(t) up to logarithms (the integrals of the bulk and the "
                  "tail meet at s = T); log of it, -t T + log mgf(t) (d = 3), is convex in t on (0, t*) and stationary at "
                  f"sum_i lambda_i / (1 - 2 t lambda_i) = T: {ok}", sp.Eq(stat, 0)))
    assert ok
    res["importance_tilt_term"] = term
    steps.append(("the tilt of a probe: t = min(1, root of sum_i lambda_i / (1 - 2 t lambda_i) = log L_max) (the root "
                  "lies in (0, t*) whenever sum_i lambda_i < log L_max; t = 1 where the root exceeds 1: there the "
                  "first-order term is bounded); t = 0 is the plain estimator", term))
