"""S7 — C5's finite-prompt excess to first order in 1/L: linear attention's class optimum (S6 expanded) and
softmax attention's reference family (delta method on the ratio of sums, Gaussian tilts of S1, the MGF of S5).

Task as in S6 (docs/maths.md#c5, #s6, #s7): w ~ N(0, sigma_w^2 I), prompt covariates N(0, Sigma_p), query
N(0, Sigma_q), label noise sigma_eps^2; risk E (f - y_q)^2 (no 1/2, as C5 reports it).  Softmax reference
family: U = blockdiag(Sigma_p^-1 / c, 0), v = c e_(d+1), i.e. f = c sum_l e^{s_l} y_l / sum_l e^{s_l},
s_l = x_l^T Sigma_p^-1 x_q / c.  Results (generic d, MatrixSymbols, lambdified in symbolic.export):
R_lin(L) = s^2 + K_lin / L + O(1/L^2) and R_soft(c, L) = s^2 + K_soft(c) / L + o(1/L).
"""
from __future__ import annotations

import sympy as sp

from . import s5_threshold  # noqa: F401  (S7 reads S5's results through core.get)
from .core import Derivation, register
from .s1_tilt import d, n, tilt_at
from .s6_baselines import L, Sp, Sq, s2, wv
from .tools import expand_traces, explicit, gaussian_expectation, is_zero, quadratic_forms_moment, sym_matrix, sym_vector

c = sp.Symbol("c", positive=True)           # scale of the reference family
T = sp.Symbol("T", positive=True)           # tr Sigma (correct mode)
eps = sp.Symbol("epsilon", positive=True)   # 1 / L
xq = sp.MatrixSymbol("x_q", d, 1)
w = sp.MatrixSymbol("w", d, 1)

# fixed argument orders of the exported results
K_LIN_ARGS = (Sp, Sq, s2, wv, d)
K_SOFT_ARGS = (c, Sp, Sq, s2, wv, d)
CORRECT_ARGS = (c, T, s2, wv, d)            # Sigma_p = Sigma_q = Sigma, T = tr Sigma
CORRECT_STAR_ARGS = (T, s2, wv, d)

TITLE = "C5 finite-prompt excess to first order in 1/L: linear class optimum and the softmax reference family"


def _explicit(expr, sub):
    """Explicit sympy value of a matrix / trace expression once MatrixSymbols and d are replaced (Identity included)."""
    e = expr.xreplace(sub)
    e = e.replace(lambda t: isinstance(t, sp.Trace), lambda t: sp.Matrix(t.arg.as_explicit()).trace())
    if isinstance(e, sp.MatrixExpr):
        return sp.Matrix(e.as_explicit()).applyfunc(sp.cancel)
    return sp.cancel(sp.sympify(e))


def _centred(result, Gamma_, a_):
    """An S1 result at mu = 0 (dropped before the blocks go in), covariance Gamma_ and tilt a_ (dimension d + 1)."""
    D1 = d + 1
    e = result.xreplace({n: D1}).xreplace({sp.MatrixSymbol("mu", D1, 1): sp.ZeroMatrix(D1, 1)}).doit()
    return tilt_at(e, sp.ZeroMatrix(D1, 1), Gamma_, a_, D1)


def _tr(expr):
    """A 1x1 matrix expression as a scalar trace expression, products inside traces evaluated."""
    e = sp.Trace(expr) if isinstance(expr, sp.MatrixExpr) else expr
    return expand_traces(e.replace(lambda t: isinstance(t, sp.Trace), lambda t: sp.Trace(t.arg.doit())))


@register("S7", version="1", title=TITLE)
def derive_s7() -> Derivation:
    """K_lin (Neumann expansion of S6's P*), K_soft(c) (delta method, S1 tilts, S5 MGF), c*, the gap constant,
    and the zero-excess set of the full softmax class at L = oo (the reference family, nothing else)."""
    steps, res = [], {}
    _linear(steps, res)
    _delta_method(steps, res)
    _softmax(steps, res)
    _correct_mode(steps, res)
    _full_class(steps, res)
    return Derivation("S7", TITLE, steps, res)


# --------------------------------------------------------------------------- linear attention
def _linear(steps, res):
    from . import core
    s6 = core.get("S6").results
    beta = wv * sp.Trace(Sp) + s2
    Nm = (beta / wv) * sp.Identity(d) + Sp
    P_inv = Sp + eps * Nm
    steps.append(("S6: P*(L) = ((tr Sigma_p + s^2 / sigma_w^2) / L I + (1 + 1/L) Sigma_p)^-1 = (Sigma_p + eps N)^-1, "
                  "eps = 1/L, N = (tr Sigma_p + s^2 / sigma_w^2) I + Sigma_p", Nm))
    P1 = Sp.I - eps * Sp.I * Nm * Sp.I
    prod = sp.expand((P_inv * P1).doit())
    rem = sp.expand((prod - sp.Identity(d)).doit())
    steps.append(("Neumann: P1 = Sigma_p^-1 - eps Sigma_p^-1 N Sigma_p^-1; (Sigma_p + eps N) P1 - I (only eps^2 left, "
                  "so P* = P1 + O(eps^2))", rem))
    coeffs = [sp.expand(t.as_coeff_mmul()[0]) for t in sp.MatAdd.make_args(rem)]
    ok = all(is_zero(k.subs(eps, 0)) and is_zero(sp.diff(k, eps).subs(eps, 0)) for k in coeffs)
    assert ok
    # explicit check of the same at d = 2 with the S6 P* (exact rationals, both modes) and of the S6 form of P*
    S2n = sp.Matrix([[1, sp.Rational(1, 2)], [sp.Rational(1, 2), 1]])
    nums = {s2: sp.Rational(1, 10), wv: sp.Rational(1, 5)}
    P6 = _explicit(s6["linear_class_P"], {Sp: S2n, Sq: S2n, d: 2}).subs(nums).subs(L, 1 / eps)
    Pn = _explicit(P_inv, {Sp: S2n, d: 2}).subs(nums).inv()
    ok = is_zero((P6 - Pn).applyfunc(sp.cancel))
    Pser = Pn.applyfunc(lambda e: sp.series(e, eps, 0, 2).removeO())
    ok &= is_zero((Pser - _explicit(P1, {Sp: S2n, d: 2}).subs(nums)).applyfunc(sp.expand))
    steps.append(("check d = 2 (KMS rho = 1/2, s^2 = 1/10, sigma_w^2 = 1/5, exact): S6's sigma_w^2 Sigma_p M^-1 == "
                  f"(Sigma_p + eps N)^-1, and its sympy series in eps to order 1 == P1: {ok}", None))
    assert ok
    R6 = s6["linear_class_risk"]
    steps.append(("S6: R*(L) = s^2 + sigma_w^2 tr Sigma_q - sigma_w^2 tr(Sigma_q P* Sigma_p), linear in P*", R6))
    R1 = _tr(s2 + wv * sp.Trace(Sq) - wv * sp.Trace(Sq * P1 * Sp))
    R1 = sp.collect(sp.expand(R1), eps)
    K_lin = sp.expand(R1.coeff(eps, 1))
    ok = is_zero(R1.coeff(eps, 0) - s2)
    steps.append((f"so R*(L) = s^2 + eps K_lin + O(eps^2) (constant term == s^2: {ok}); K_lin =", K_lin))
    assert ok
    for label, Spn, Sqn in _modes2():
        Rex = _explicit(R6, {Sp: Spn, Sq: Sqn, d: 2}).subs(nums)
        lim = sp.limit(sp.cancel((Rex - nums[s2]) * L), L, sp.oo)
        Kn = _explicit(K_lin, {Sp: Spn, Sq: Sqn, d: 2}).subs(nums)
        ok = is_zero(lim - Kn)
        steps.append((f"check d = 2, {label}: lim_(L -> oo) L (R*(L) - s^2) of the exact S6 risk (sympy limit) == "
                      f"K_lin: {ok}", sp.Tuple(lim, Kn)))
        assert ok
    res["K_lin"] = K_lin


# --------------------------------------------------------------------------- delta method (scalar)
def _delta_method(steps, res):
    t, mN, mD, dN, dD = sp.symbols("t mu_N mu_D deltaN deltaD", real=True)
    m = mN / mD
    R = (mN + t * dN) / (mD + t * dD)
    ser = sp.expand(sp.series(R, t, 0, 3).removeO())
    steps.append(("ratio of prompt means R = N / D, N = (1/L) sum e_l y_l = mu_N + dN, D = (1/L) sum e_l = mu_D + dD "
                  "(e_l = e^{s_l}); expansion in the fluctuations (t counts their order)", ser))
    vNN, vND, vDD, Lsym = sp.symbols("v_NN v_ND v_DD L", positive=True)
    mom2 = {dN ** 2: vNN / Lsym, dN * dD: vND / Lsym, dD ** 2: vDD / Lsym, dN: 0, dD: 0}

    def expect(e):  # E over the prompt to order 1/L: E dN = E dD = 0, second moments v / L (iid tokens)
        e = sp.expand(e)
        out = 0
        for term in sp.Add.make_args(e):
            coeff, rest = term.as_independent(dN, dD)
            out += coeff * mom2.get(rest, 0 if rest != 1 else 1)
        return sp.expand(out)
    bias = sp.factor(expect(ser.coeff(t, 2)))
    mse = sp.factor(expect((ser.coeff(t, 1)) ** 2))
    steps.append(("E[R] - m (m = mu_N / mu_D) to order 1/L: the bias, and E (R - m)^2 to order 1/L (third moments of "
                  "dN, dD are O(1/L^2))", sp.Tuple(bias, mse)))
    Mee, Meey, Meeyy = sp.symbols("E[e^2] E[e^2*y] E[e^2*y^2]", real=True)
    cov = {vNN: Meeyy - mN ** 2, vND: Meey - mN * mD, vDD: Mee - mD ** 2}
    v1 = sp.factor(sp.simplify(mse.subs(cov) * Lsym))
    target = (Meeyy - 2 * m * Meey + m ** 2 * Mee) / mD ** 2
    ok = is_zero(sp.together(v1 - target))
    steps.append(("with v_NN = Var(e y), v_ND = Cov(e y, e), v_DD = Var(e): L E (R - m)^2 -> "
                  f"E[e^2 (y - m)^2] / E[e]^2 (the mu_N - m mu_D terms vanish): {ok}", v1))
    assert ok
    g, bb, vv, eq, Lr, rr = sp.symbols("g b V eps_q L r", real=True)
    # f - y_q = c r + g - eps_q, r = R - m, g = c m - w^T x_q the limit error; E over eps_q (Isserlis), then over the
    # prompt with E r = b / L, E r^2 = V / L (+ O(1/L^2), the two steps above)
    e_eq = gaussian_expectation(sp.expand((c * rr + g - eq) ** 2), [eq], sp.Matrix([[s2]]))
    poly = sp.Poly(e_eq, rr)
    risk = sp.expand(sum(coef * {0: 1, 1: bb / Lr, 2: vv / Lr}[k[0]] for k, coef in poly.terms()))
    assert is_zero(risk - (s2 + g ** 2 + 2 * g * c * bb / Lr + c ** 2 * vv / Lr))
    steps.append(("f - y_q = c (R - m) + g - eps_q with g = c m - w^T x_q (the infinite-prompt error) and eps_q "
                  "independent: E over eps_q (Isserlis), then the prompt: E[(f - y_q)^2 | w, x_q] = "
                  "s^2 + g^2 + 2 g c b / L + c^2 V / L + O(1/L^2), "
                  "b = L (E R - m), V = L E (R - m)^2; the bias enters squared (O(1/L^2)) except through 2 g c b / L",
                  risk))
    res["conditional_risk_first_order"] = risk


# --------------------------------------------------------------------------- softmax: the tilts and the MGF
def _softmax(steps, res):
    from . import core
    s1, s5, s6 = core.get("S1").results, core.get("S5").results, core.get("S6").results
    a = sp.MatrixSymbol("a", d, 1)                     # score vector: s_l = a^T x_l
    Gn = s6["Gamma_w_noisy"]                           # Cov(z | w), z = (x, y)
    za = sp.BlockMatrix([[a], [sp.ZeroMatrix(1, 1)]])
    logM = lambda vec: _centred(s1["log_mgf"], Gn, vec)  # noqa: E731
    steps.append(("the score reads x only: the tilt vector on z = (x, y) is (a, 0), a = U_xx x_q; S1 log-MGF of "
                  "z ~ N(0, Gamma_w + s^2 e e^T) at (a, 0)", logM(za)))
    lm1 = _tr(sp.block_collapse(logM(za)))
    lm2 = _tr(sp.block_collapse(logM(sp.BlockMatrix([[2 * a], [sp.ZeroMatrix(1, 1)]]))))
    ratio_log = sp.expand(lm2 - 2 * lm1)
    steps.append(("log(E[e^2] / E[e]^2) = log M(2a) - 2 log M(a)", ratio_log))
    q_a = _tr(a.T * Sp * a)
    assert is_zero(ratio_log - q_a)

    def tmean(vec):
        return sp.block_collapse(_centred(s1["tilted_mean"], Gn, vec))
    mu1, mu2 = tmean(za), tmean(sp.BlockMatrix([[2 * a], [sp.ZeroMatrix(1, 1)]]))
    m = _tr(mu1.blocks[1, 0])
    m2 = _tr(mu2.blocks[1, 0])
    covz = sp.block_collapse(_centred(s1["tilted_cov"], Gn, za))
    vy = _tr(covz.blocks[1, 1])
    steps.append(("S1 tilted means of y at tilts a and 2a (m = E[e y] / E[e] and the mean under e^2), and y's tilted "
                  "variance (the tilt does not change the covariance)", sp.Tuple(m, m2, vy)))
    # E[e^2 (y - m)^2] / E[e]^2 = (E[e^2]/E[e]^2) E_{2a}[(y - m)^2], y ~ N(m2, vy) under the 2a-tilt
    gq = sp.Symbol("g", real=True)                    # y - m2 ~ N(0, vy) under the 2a-tilt (Isserlis in g)
    Ey = gaussian_expectation(sp.expand((m2 - m + gq) ** 2), [gq], sp.Matrix([[vy]]))
    assert is_zero(Ey - sp.expand((m2 - m) ** 2 + vy))
    V_w = sp.expand(sp.exp(q_a) * Ey)
    steps.append(("V = E[e^2 (y - m)^2] / E[e]^2 = (E[e^2] / E[e]^2) E_{2a}[(y - m)^2] (change of measure to the 2a "
                  "tilt, under which y ~ N(2 w^T Sigma_p a, w^T Sigma_p w + s^2)), given w and a:", V_w))
    # E over w: every term is linear in W = w w^T
    W = sp.MatrixSymbol("W", d, d)
    # rewrite (w^T Sp a)^2 = tr(W Sp a a^T Sp), w^T Sp w = tr(W Sp) explicitly, then W -> sigma_w^2 I
    Ey_W = sp.Trace(W * Sp * a * a.T * Sp) + sp.Trace(W * Sp) + s2
    ok = _check_w_linear(Ey, Ey_W, W)
    steps.append((f"E_{{2a}}[(y - m)^2] = tr(W Sigma_p a a^T Sigma_p) + tr(W Sigma_p) + s^2, W = w w^T (checked at d = 2, "
                  f"entries symbolic: {ok}); linear in W, so E_w puts W = sigma_w^2 I", Ey_W))
    assert ok
    EwV = _tr(Ey_W.xreplace({W: wv * sp.Identity(d)}))
    steps.append(("E_w[V] / exp(a^T Sigma_p a) =", EwV))
    # the reference family: a = Sigma_p^-1 x_q / c, limit error g = 0
    A = Sp.I / c
    res_lim = sp.block_collapse(sp.BlockMatrix([[sp.ZeroMatrix(d, 1)], [c * sp.Identity(1)]]).T * mu1)
    g_lim = _tr(res_lim.xreplace({a: A * xq}) if not isinstance(res_lim, sp.BlockMatrix)
                else res_lim.blocks[0, 0].xreplace({a: A * xq})) - _tr(w.T * xq)
    ok = is_zero(g_lim)
    steps.append((f"reference family U = blockdiag(Sigma_p^-1 / c, 0), v = c e_(d+1): a = Sigma_p^-1 x_q / c and the "
                  f"limit error g = c m - w^T x_q == 0 (S1, as S6 found), so the 1/L coefficient given (w, x_q) is "
                  f"c^2 V: {ok}", g_lim))
    assert ok
    Qv, Jv = Sp.I / c ** 2, sp.Identity(d) / c ** 2
    K_cond = c ** 2 * sp.exp(_tr(q_a.xreplace({a: A * xq}))) * _tr(EwV.xreplace({a: A * xq}))
    K_form = c ** 2 * sp.exp(_tr(xq.T * Qv * xq)) * (wv * _tr(xq.T * Jv * xq) + wv * sp.Trace(Sp) + s2)
    S2, x2 = sym_matrix("S", 2, symmetric=True), sym_vector("x", 2)
    ok = is_zero(sp.simplify(_explicit(K_cond - K_form, {Sp: S2, xq: x2, d: 2})))
    steps.append(("E_w of c^2 V given x_q, and the same as c^2 exp(x_q^T Q x_q) (sigma_w^2 x_q^T J x_q + sigma_w^2 tr "
                  f"Sigma_p + s^2) with Q = Sigma_p^-1 / c^2, J = I / c^2 (checked at d = 2, entries symbolic: {ok})",
                  sp.Tuple(K_cond, K_form)))
    assert ok
    res["K_soft_given_xq"] = K_cond
    # E over x_q: exponential tilt of a Gaussian by a quadratic form (S5's MGF and a completed square)
    Q, J = sp.MatrixSymbol("Q", d, d), sp.MatrixSymbol("J", d, d)
    mgf = s5["mgf_quadratic_form"].xreplace({sp.Symbol("t", real=True): 1}).xreplace(
        {sp.MatrixSymbol("K", d, d): Q, sp.MatrixSymbol("Sigma", d, d): Sq})
    Sq_t = (Sq.I - 2 * Q).I
    EJ = quadratic_forms_moment([J], Sq_t)
    ok = _check_quadratic_tilt()
    steps.append(("E_{x ~ N(0, Sigma_q)}[x^T J x exp(x^T Q x)] = E[exp(x^T Q x)] E_{N(0, S')}[x^T J x], "
                  "S' = (Sigma_q^-1 - 2 Q)^-1: completing the square, exp(x^T Q x) N(x; 0, Sigma_q) = "
                  "det(I - 2 Sigma_q Q)^(-1/2) N(x; 0, S') (checked at d = 2, entries symbolic: exponent and "
                  f"normaliser det Sigma_q det(Sigma_q^-1 - 2 Q) == det(I - 2 Sigma_q Q): {ok}); the first factor is "
                  "S5's MGF at t = 1, the second an Isserlis pairing", sp.Tuple(mgf, EJ)))
    assert ok
    mgf_v = mgf.xreplace({Q: Qv})
    K_soft = c ** 2 * mgf_v * (wv * _tr(EJ.xreplace({Q: Qv, J: Jv})) + wv * sp.Trace(Sp) + s2)
    K_soft = K_soft.replace(lambda e: isinstance(e, sp.Trace), lambda e: sp.Trace(e.arg.doit()))
    steps.append(("at Q = Sigma_p^-1 / c^2, J = I / c^2: K_soft(c) = E over x_q, finite iff "
                  "c^2 > 2 lambda_max(Sigma_q Sigma_p^-1) (S5's pole)", K_soft))
    res["K_soft"] = K_soft
    res["blow_up_c2"] = 2 * sp.Symbol("lambda_max(Sigma_q Sigma_p^-1)", positive=True)
    steps.append(("not derived here (stated): the remainder. Given x_q every moment is finite and the next terms are "
                  "O(1/L^2), but after the x_q average they involve E[e^3] / E[e]^3 = exp(3 x_q^T Sigma_p^-1 x_q / c^2), "
                  "finite only for c^2 > 6 lambda_max(Sigma_q Sigma_p^-1): R_soft = s^2 + K_soft / L + o(1/L), with "
                  "O(1/L^2) for c^2 above that", None))


def _check_w_linear(Ey_expr, Ey_W, W):
    """d = 2, entries symbolic: the scalar E_{2a}[(y - m)^2] == its trace form with W = w w^T."""
    a2, w2, S2 = sym_vector("a", 2), sym_vector("w", 2), sym_matrix("S", 2, symmetric=True)
    a = sp.MatrixSymbol("a", d, 1)
    sub = {a: a2, w: w2, Sp: S2, d: 2}
    lhs = sp.expand(Ey_expr.xreplace(sub).doit().replace(
        lambda e: isinstance(e, sp.Trace), lambda e: e.arg.as_explicit().trace()))
    rhs = explicit(Ey_W.xreplace({W: w * w.T}), sub)
    return is_zero(lhs - rhs)


def _check_quadratic_tilt():
    """d = 2: x^T Q x - x^T Sq^-1 x / 2 == -x^T (Sq^-1 - 2Q) x / 2 and det Sq det(Sq^-1 - 2Q) == det(I - 2 Sq Q)."""
    x2, Q2, S2 = sym_vector("x", 2), sym_matrix("Q", 2, symmetric=True), sym_matrix("S", 2, symmetric=True)
    Si = S2.inv()
    e1 = (x2.T * Q2 * x2)[0, 0] - (x2.T * Si * x2)[0, 0] / 2 + (x2.T * (Si - 2 * Q2) * x2)[0, 0] / 2
    e2 = S2.det() * (Si - 2 * Q2).det() - (sp.eye(2) - 2 * S2 * Q2).det()
    return is_zero(sp.cancel(sp.together(e1))) and is_zero(sp.cancel(sp.together(e2)))


# --------------------------------------------------------------------------- correct mode: c* in closed form
def _correct_mode(steps, res):
    S = sp.MatrixSymbol("Sigma", d, d)
    Kc = res["K_soft"].xreplace({Sp: S, Sq: S}).doit()
    Kc = Kc.replace(lambda e: isinstance(e, sp.Determinant) and e.arg == sp.Identity(d), lambda e: sp.Integer(1))
    Kc = sp.simplify(Kc.xreplace({sp.Trace(S): T}))
    steps.append(("correct mode Sigma_p = Sigma_q = Sigma (T = tr Sigma): Sigma_q Sigma_p^-1 = I, so "
                  "det(I - 2 I / c^2) = (1 - 2/c^2)^d and (Sigma^-1 (1 - 2/c^2))^-1 = Sigma / (1 - 2/c^2)", Kc))
    res["K_soft_correct"] = Kc
    Kl = _tr(res["K_lin"].xreplace({Sp: S, Sq: S})).xreplace({sp.Trace(S): T})
    res["K_lin_correct"] = sp.expand(Kl)
    steps.append(("K_lin in the correct mode", res["K_lin_correct"]))
    x = sp.Symbol("x", positive=True)            # x = c^2
    Kx = Kc.subs(c, sp.sqrt(x))
    dK = sp.diff(sp.log(Kx), x)
    Bv = wv * T
    quad = sp.expand((Bv + s2) * x ** 2 - (d + 4) * (Bv + s2) * x + (d + 2) * (Bv + 2 * s2))
    den = x * (x - 2) * ((Bv + s2) * x - Bv - 2 * s2)
    ok = is_zero(sp.simplify(sp.powsimp(sp.expand_log(dK * den, force=True), force=True) - quad))
    steps.append(("d log K / d(c^2) = q(x) / (x (x - 2) ((sigma_w^2 T + s^2) x - sigma_w^2 T - 2 s^2)), x = c^2; the "
                  f"denominator is positive for x > 2 (its last factor exceeds sigma_w^2 T there): {ok}",
                  sp.Eq(sp.Symbol("q(x)"), quad)))
    assert ok
    q2 = sp.factor(quad.subs(x, 2))
    ok = is_zero(q2 + (d + 2) * Bv)
    steps.append((f"q(2) = -(d + 2) sigma_w^2 T < 0 and q's leading coefficient > 0: exactly one root x* > 2, where K "
                  f"(-> oo as x -> 2+ and as x -> oo) is smallest: {ok}", q2))
    assert ok
    roots = sp.solve(quad, x)
    xs = [r for r in roots if is_zero(sp.simplify(r - ((d + 4) / 2 + sp.sqrt(sp.expand(((d + 4) * (Bv + s2)) ** 2
                                                         - 4 * (Bv + s2) * (d + 2) * (Bv + 2 * s2))) / (2 * (Bv + s2)))))]
    if not xs:  # the larger root, whatever form sympy gave it
        xs = [max(roots, key=lambda r: float(r.subs({T: 5, wv: sp.Rational(1, 5), s2: sp.Rational(1, 10), d: 5})))]
    x_star = xs[0]
    c_star = sp.sqrt(x_star)
    steps.append(("c*^2 = the larger root of q", x_star))
    res["c_star_correct"] = c_star
    res["K_soft_star_correct"] = Kc.subs(c, c_star)
    res["gap_constant_correct"] = res["K_soft_star_correct"] - res["K_lin_correct"]
    task = {T: 5, wv: sp.Rational(1, 5), s2: sp.Rational(1, 10), d: 5}
    cn, Kn, Ln = (sp.N(res[k].subs(task), 6) for k in ("c_star_correct", "K_soft_star_correct", "K_lin_correct"))
    steps.append((f"C5's task (d = 5, KMS rho = 1/2 so T = 5, sigma_w^2 = 1/5, s^2 = 1/10): c* = {cn}, "
                  f"K_soft(c*) = {Kn}, K_lin = {Ln}, gap constant K_soft(c*) - K_lin = {sp.N(Kn - Ln, 6)}",
                  sp.Tuple(cn, Kn, Ln)))


# --------------------------------------------------------------------------- the full softmax class at L = oo
def _full_class(steps, res):
    from . import core
    s6 = core.get("S6").results
    k = 2
    B2, u2, h2 = sym_matrix("B", k), sym_vector("u", k), sym_vector("h", k)
    vx, vy, kk = sym_vector("v", k), sp.Symbol("v_y", real=True), sp.Symbol("k", real=True)
    U2 = sp.Matrix(sp.BlockMatrix([[B2, h2], [u2.T, sp.Matrix([[kk]])]]))
    v2 = sp.Matrix.vstack(vx, sp.Matrix([[vy]]))
    w2, x2 = sym_vector("w", k), sym_vector("x", k)
    z2 = sp.Matrix.vstack(x2, sp.zeros(1, 1))
    for label, Spn, Sqn in _modes2():
        Gn = explicit(s6["Gamma_w_noisy"], {Sp: Spn, w: w2, d: k})
        f = (v2.T * Gn * U2 * z2)[0, 0]
        err = sp.expand(f - (w2.T * x2)[0, 0])
        eqs = sp.Poly(err, *w2, *x2).coeffs()
        unknowns = list(B2) + list(u2) + list(vx) + [vy]
        sols = sp.solve(eqs, unknowns, dict=True)
        target = Spn.inv() / vy
        ok = len(sols) == 1 and all(sp.simplify(sols[0].get(s, s)) == 0 for s in list(u2) + list(vx))
        ok &= is_zero(B2.xreplace(sols[0]) - target) if ok else False
        ok &= not any(s in sols[0] for s in (kk, *h2)) if ok else False
        steps.append((f"full class, d = 2, {label}: f_inf = v^T (Gamma_w + s^2 e e^T) U (x_q, 0) (S1, S6) equals "
                      "w^T x_q for all (w, x_q) iff (coefficients of the polynomial in w, x_q, solved by sympy) "
                      "u = 0 (the score does not read the labels), v_x = 0 and U_xx = Sigma_p^-1 / v_y; U's last column "
                      f"(h, k) multiplies z_q's zero entry and is free: the zero-excess set is the reference family: {ok}",
                      sols[0] if sols else None))
        assert ok
    steps.append(("hence, to first order in 1/L (argument, docs/maths.md#s7): R(theta, L) = s^2 + E(theta) + K(theta) / L "
                  "+ o(1/L) with E >= 0 the infinite-prompt excess, zero exactly on the family and quadratic across it "
                  "(checked numerically: tests/test_s7.py, the Gauss-Newton matrix of f_inf has the family's tangent as "
                  "its null space); a move delta off the family costs E ~ delta^2 and gains at most O(delta / L), so "
                  "inf over the full class = s^2 + min_c K_soft(c) / L + O(1/L^2)", None))


def _modes2():
    S = sp.Matrix([[1, sp.Rational(1, 2)], [sp.Rational(1, 2), 1]])
    C = S.cholesky(hermitian=False)
    return [("correct (KMS rho = 1/2)", S, S), ("as in the authors' code", (C * C) * (C * C).T, sp.eye(2))]
