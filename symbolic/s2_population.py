"""S2 — closed-form population risk of linear(inf) (Isserlis), its gradient, the block-reduced flow, theta*."""
from __future__ import annotations

import sympy as sp

from .core import Derivation, register
from .s1_tilt import d, gamma_w_block
from .tools import (
    expand_traces,
    explicit,
    gaussian_expectation,
    is_zero,
    matrix_grad,
    quadratic_form_moment,
    scalar_grad,
    sym_matrix,
    sym_vector,
    symmetrize,
)

Sigma = sp.MatrixSymbol("Sigma", d, d)
B_x = sp.MatrixSymbol("B_x", d, d)        # U[:d, :d]
u = sp.MatrixSymbol("u", d, 1)            # U[d, :d]^T  (the brief's "b" row of B = U[:, :d])
v_x = sp.MatrixSymbol("v_x", d, 1)        # v[:d]
v_y = sp.Symbol("v_y", real=True)         # v[d]
w = sp.MatrixSymbol("w", d, 1)
A = sp.MatrixSymbol("A", d, d)            # block of U
b = sp.Symbol("b", real=True)             # v = b e_{d+1}
RISK_ARGS = (B_x, u, v_x, v_y, Sigma, d)


def mm(*mats):
    """Matrix product of a list (identity if empty)."""
    return sp.MatMul(*mats).doit() if mats else sp.Identity(d)


def _split(term, w):
    coeff, mats = term.as_coeff_matrices()
    return coeff, list(mats), sum(1 for m in mats if m in (w, w.T))


def decompose_residual(gT):
    """Split the row residual g^T = c0^T + w^T C1^T + q(w) u^T by degree in w (sympy finds the pieces)."""
    c0T, C1T, q, suffix = [], [], [], []
    for term in sp.Add.make_args(sp.expand(gT)) if not isinstance(gT, sp.MatAdd) else gT.args:
        coeff, mats, deg = _split(term, w)
        if deg == 0:
            c0T.append(term)
        elif deg == 1:
            j = next(i for i, m in enumerate(mats) if m in (w, w.T))
            if mats[j] == w.T and j == 0:
                C1T.append(coeff * mm(*mats[1:]))
            else:  # prefix * w is 1x1: rewrite as w^T prefix^T
                assert mats[j] == w
                C1T.append(coeff * mm(*mats[:j]).T * mm(*mats[j + 1:]))
        elif deg == 2:
            assert mats[0] == w.T
            j = next(i for i, m in enumerate(mats) if m == w)
            q.append(coeff * mm(*mats[: j + 1]))
            suffix.append(mm(*mats[j + 1:]))
        else:
            raise ValueError(term)
    assert len(set(suffix)) == 1 and suffix[0] == u.T and len(q) == 1
    return symmetrize(sp.MatAdd(*c0T).T.doit(), Sigma), symmetrize(sp.MatAdd(*C1T).T.doit(), Sigma), q[0]


def expectation_over_w(quad, Q, EQ, EQ2):
    """E_w of g^T S g with g = c0 + C1 w + Q u: odd degree -> 0, E[w w^T] = I, E[Q], E[Q^2]."""
    out = []
    for term in sp.expand(quad).args:
        coeff, mats, deg = _split(term, w)
        k = sp.degree(coeff, Q)
        coeff = coeff.subs(Q, 1)
        if (deg + 2 * k) % 2:
            continue
        if deg == 2:
            assert mats[0] == w.T and mats[-1] == w and k == 0
            out.append(coeff * sp.Trace(mm(*mats[1:-1])))
        else:
            out.append(coeff * {0: 1, 1: EQ, 2: EQ2}[k] * sp.Trace(mm(*mats)))
    return sp.Add(*out)


def explicit_subs(U, v, S):
    """MatrixSymbol -> explicit matrix substitution from explicit U, v, Sigma."""
    n = S.shape[0]
    return {B_x: U[:n, :n], u: U[n, :n].T, v_x: v[:n, :], Sigma: S, d: n}


TITLE = "Population risk of linear(inf), its gradient, the block flow and theta*"


@register("S2", version="4", title=TITLE)
def derive_s2() -> Derivation:
    """Population risk R(U, v) = E_{w, x_q} 1/2 (v^T Gamma_w U z_q - w^T x_q)^2 in closed form, and theta*."""
    steps, res = [], {}
    P, _ = gamma_w_block(Sigma, w)
    Vy = sp.MatrixSymbol("v_y", 1, 1)
    Pv = sp.block_collapse(P.T * sp.BlockMatrix([[v_x], [Vy]]))
    PB = sp.block_collapse(P.T * sp.BlockMatrix([[B_x], [u.T]]))
    steps.append(("z_q = (x_q, 0) so U z_q = B x_q, B = U[:, :d] = [B_x; u^T]; "
                  "f = (P_w^T v)^T Sigma (P_w^T B) x_q with P_w^T v =", Pv))
    steps.append(("and P_w^T B =", PB))
    Pv = (v_x + v_y * w)
    gT = sp.expand((Pv.T * Sigma * PB - w.T).doit())
    steps.append(("residual f - y_q = g(w)^T x_q with g(w)^T =", gT))
    c0, C1, q = decompose_residual(gT)
    steps.append(("sorted by degree in w: g = c0 + C1 w + u q(w); c0 =", c0))
    steps.append(("C1 =", C1))
    steps.append(("q(w) =", q))
    g = sp.MatrixSymbol("g", d, 1)
    steps.append(("E_x[(g^T x_q)^2] = g^T E[x_q x_q^T] g =", g.T * Sigma * g))
    EQ = sp.expand(v_y * quadratic_form_moment(Sigma, 1))
    EQ2 = symmetrize(sp.expand(v_y ** 2 * quadratic_form_moment(Sigma, 2)), Sigma)
    steps.append(("Isserlis pairings, w ~ N(0, I): E[q] =", EQ))
    steps.append(("E[q^2] (three pairings, Sigma symmetric) =", EQ2))
    c0s, C1s, Q = sp.MatrixSymbol("c_0", d, 1), sp.MatrixSymbol("C_1", d, d), sp.Symbol("q")
    gs = c0s + C1s * w + Q * u
    Rabs = expectation_over_w(gs.T * Sigma * gs, Q, EQ, EQ2) / 2
    steps.append(("E_w: odd moments vanish, E[w w^T] = I; R = 1/2 E[g^T Sigma g] =", Rabs))
    res["R_blocks"] = Rabs
    R = symmetrize(expand_traces(Rabs.xreplace({c0s: c0, C1s: C1})), Sigma)
    steps.append(("substituting c0, C1 (traces expanded):", R))
    res["R"] = R
    # brute-force verification at d = 2, all-symbolic entries
    U2, v2, S2 = sym_matrix("U", 3), sym_vector("v", 3), sym_matrix("Sigma", 2, symmetric=True)
    w2, x2 = sym_vector("w", 2), sym_vector("x", 2)
    G2 = sp.Matrix([[S2, S2 * w2], [w2.T * S2, w2.T * S2 * w2]])
    r2 = (v2.T * G2 * U2 * sp.Matrix([x2[0], x2[1], 0]))[0, 0] - (w2.T * x2)[0, 0]
    cov = sp.diag(sp.eye(2), S2)
    Rbf = gaussian_expectation(r2 ** 2 / 2, list(w2) + list(x2), cov)
    sub = {**explicit_subs(U2, v2, S2), v_y: v2[2]}
    ok = is_zero(explicit(R, sub) - Rbf)
    steps.append((f"check d = 2, all entries symbolic: matrix form == brute-force Isserlis expectation of 1/2 r^2: {ok}", None))
    assert ok
    # gradient
    grads = {X.name: symmetrize(matrix_grad(R, X), Sigma) for X in (B_x, u, v_x)}
    grads["v_y"] = symmetrize(scalar_grad(R, v_y), Sigma)
    for k, gk in grads.items():
        steps.append((f"dR/d{k} (dR/dU = [[dR/dB_x, 0], [dR/du^T, 0]]: the last column of U meets z_q[d] = 0)", gk))
        res[f"dR_d{k}"] = gk
    ok = all(is_zero(explicit(grads["B_x"], sub)[i, j] - sp.diff(Rbf, U2[i, j])) for i in range(2) for j in range(2))
    ok &= all(is_zero(explicit(grads["u"], sub)[j] - sp.diff(Rbf, U2[2, j])) for j in range(2))
    ok &= all(is_zero(explicit(grads["v_x"], sub)[j] - sp.diff(Rbf, v2[j])) for j in range(2))
    ok &= is_zero(explicit(grads["v_y"], sub) - sp.diff(Rbf, v2[2]))
    ok &= all(sp.diff(Rbf, U2[i, 2]) == 0 for i in range(3))
    steps.append((f"check d = 2: matrix-form gradient == entrywise derivative of the brute-force risk: {ok}", None))
    assert ok
    _reduced(steps, res, R, grads)
    return Derivation("S2", TITLE, steps, res)


def _reduced(steps, res, R, grads):
    """Block structure U = blockdiag(A, .), v = b e_{d+1}: R(A, b), the flow, and the Remark 5.2 optimum."""
    blk = {B_x: A, u: sp.ZeroMatrix(d, 1), v_x: sp.ZeroMatrix(d, 1), v_y: b}
    red = lambda e: symmetrize(expand_traces(e.xreplace(blk).doit()), Sigma)
    Rr = red(R)
    steps.append(("block structure (B_x = A, u = 0, v_x = 0, v_y = b): reduced risk", Rr))
    I = sp.Identity(d)
    spec_R = sp.Trace((b * Sigma * A - I) * Sigma * (b * Sigma * A - I).T) / 2
    dA = -symmetrize(matrix_grad(Rr, A), Sigma)
    db = -scalar_grad(Rr, b)
    spec_dA = b * Sigma ** 2 - b ** 2 * Sigma ** 2 * A * Sigma
    spec_db = sp.Trace(A.T * Sigma ** 2) - b * sp.Trace(A.T * Sigma ** 2 * A * Sigma)
    steps.append(("gradient flow dA/dt = -dR/dA", dA))
    steps.append(("db/dt = -dR/db", db))
    off = {k: red(grads[k]) for k in ("u", "v_x")}
    steps.append(("off-block gradient at block theta: dR/du, dR/dv_x =", sp.Tuple(*off.values())))
    for n in (2, 3):
        A_n, S_n = sym_matrix("A", n), sym_matrix("Sigma", n, symmetric=True)
        sub = {A: A_n, Sigma: S_n, d: n}
        ok = (is_zero(explicit(Rr, sub) - explicit(spec_R, sub))
              and is_zero(explicit(dA, sub) - explicit(spec_dA, sub))
              and is_zero(explicit(db, sub) - explicit(spec_db, sub))
              and all(is_zero(explicit(o, sub)) for o in off.values()))
        steps.append((f"check d = {n} (general A, symmetric Sigma): R(A,b) = 1/2 tr((b Sigma A - I) Sigma (b Sigma A - I)^T), "
                      f"dA/dt = b Sigma^2 - b^2 Sigma^2 A Sigma, db/dt = tr(A^T Sigma^2) - b tr(A^T Sigma^2 A Sigma), "
                      f"off-block gradient 0 (the C4 formulas, docs/maths.md#c4): {ok}", None))
        assert ok
    res.update(R_reduced=Rr, dA_dt=dA, db_dt=db)
    _optimum(steps, res, Rr, dA, db, R, grads)


def _optimum(steps, res, Rr, dA, db, R, grads):
    """Solve stationarity dA/dt = 0 and balance ||A||_F = b, b > 0 (d = 2 general Sigma, d = 3 diagonal)."""
    bp = sp.Symbol("b", positive=True)
    cases = [("d = 2, general symmetric Sigma", 2, sym_matrix("Sigma", 2, symmetric=True)),
             ("d = 3, Sigma = diag(s1, s2, s3)", 3, sp.diag(*sp.symbols("s1:4", positive=True)))]
    for label, n, S_n in cases:
        A_n = sym_matrix("A", n)
        sub = {A: A_n, Sigma: S_n, d: n, b: bp}
        eqs = list(explicit(dA, sub))
        solA = sp.solve(eqs, list(A_n), dict=True)
        assert len(solA) == 1
        A_sol = A_n.xreplace(solA[0]).applyfunc(sp.cancel)
        steps.append((f"{label}: dA/dt = 0 solved for A (b > 0)", sp.Eq(A_n, A_sol)))
        ok = is_zero(bp * S_n * A_sol - sp.eye(n))
        steps.append((f"i.e. b Sigma A = I: {ok}", None))
        assert ok
        balance = sp.expand(sum(a ** 2 for a in A_sol) - bp ** 2)
        sol_b = [s for s in sp.solve(sp.numer(sp.together(balance)), bp) if s.is_positive is not False]
        tr = sp.cancel(sp.trace(S_n.inv() ** 2))
        c = tr ** sp.Rational(1, 4)
        ok = len(sol_b) >= 1 and any(is_zero(sp.cancel(sp.expand(s ** 4) - tr)) for s in sol_b)
        steps.append((f"balance ||A||_F^2 = b^2 solved for b > 0; b^4 == tr(Sigma^-2): {ok}", sp.Tuple(*sol_b)))
        assert ok
        cs = sp.Symbol("c", positive=True)
        Astar = S_n.inv() / cs
        full = {B_x: Astar, u: sp.zeros(n, 1), v_x: sp.zeros(n, 1), v_y: cs, Sigma: S_n, d: n}
        def vanishes(e):  # rational in c: numerator reduced modulo c^4 = tr(Sigma^-2)
            num, den = sp.fraction(sp.cancel(sp.together(e)))
            return is_zero(sp.rem(sp.expand(num * sp.denom(tr)), sp.expand(cs ** 4 * sp.denom(tr) - sp.numer(tr)), cs))
        ok = vanishes(explicit(R, full))
        ok &= all(vanishes(explicit(grads[k], full)) if k == "v_y"
                  else all(vanishes(e) for e in explicit(grads[k], full)) for k in grads)
        steps.append((f"{label}: at U* = blockdiag(Sigma^-1/c, 0), v* = c e_(d+1), c = tr(Sigma^-2)^(1/4): "
                      f"R = 0 and the full gradient (U and v) vanishes: {ok}", sp.Eq(sp.Symbol("c"), c)))
        assert ok
    c = sp.Trace(Sigma ** -2) ** sp.Rational(1, 4)
    res.update(c=c, U_star_A=Sigma ** -1 / c, v_star_y=c)
    steps.append(("theta* (generic d): U* = blockdiag(Sigma^-1 / c, 0), v* = c e_(d+1), c = tr(Sigma^-2)^(1/4), R(theta*) = 0",
                  sp.Tuple(Sigma ** -1 / c, c)))
