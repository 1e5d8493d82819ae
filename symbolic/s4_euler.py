"""S4 — Euler identity <U, dR/dU> = <v, dR/dv> for bilinear predictors; its defect for softmax."""
from __future__ import annotations

import sympy as sp

from .core import Derivation, register
from .tools import is_zero, sym_matrix, sym_vector

N, L = 2, 3                     # token dimension d + 1 = 2, prompt length 3
f_, m_s, m_vs, y_q, lr = sp.symbols("f E_p[s] E_p[v.z*s] y_q lr", real=True)


def _inner(M, G):
    return sum(M[i] * G[i] for i in range(len(M)))


TITLE = "Euler identity and the softmax conservation defect"


@register("S4", version="1", title=TITLE)
def derive_s4() -> Derivation:
    """Homogeneity defect <U, dl/dU> - <v, dl/dv> of the per-sample loss l = 1/2 (f - y_q)^2."""
    steps, res = [], {}
    U, v, zq = sym_matrix("U", N), sym_vector("v", N), sym_vector("z_q", N)
    zs = [sym_vector(f"z{k}", N) for k in range(L)]
    Gam = sym_matrix("Gamma", N, symmetric=True)
    y = sp.Symbol("y_q", real=True)
    gradU = lambda e: U.applyfunc(lambda p: sp.diff(e, p))
    gradv = lambda e: v.applyfunc(lambda p: sp.diff(e, p))
    defect = lambda e: _inner(U, gradU(e)) - _inner(v, gradv(e))
    bilinear = {"linear_inf": (v.T * Gam * U * zq)[0, 0],
                "linear_L": (v.T * (sum((z * z.T for z in zs), sp.zeros(N)) / L) * U * zq)[0, 0]}
    for name, f in bilinear.items():
        ok = is_zero(_inner(U, gradU(f)) - f) and is_zero(_inner(v, gradv(f)) - f)
        loss = (f - y) ** 2 / 2
        ok &= is_zero(defect(loss))
        steps.append((f"{name}: f is degree 1 in U and in v, so <U, df/dU> = f = <v, df/dv>; "
                      f"with dl = (f - y_q) df the defect of l = 1/2 (f - y_q)^2 is 0: {ok}", sp.expand(defect(loss))))
        assert ok
    GU, Gv = sym_matrix("G_U", N), sym_vector("G_v", N)
    nrm = lambda M: sum(e ** 2 for e in M)
    change = sp.expand(nrm(U - lr * GU) - nrm(v - lr * Gv) - (nrm(U) - nrm(v)))
    euler = _inner(U, GU) - _inner(v, Gv)
    rest = sp.expand(change + 2 * lr * euler)
    ok = is_zero(rest - lr ** 2 * (nrm(GU) - nrm(Gv)))
    steps.append(("one GD step U -= lr G_U, v -= lr G_v changes ||U||^2 - ||v||^2 by "
                  f"-2 lr (<U,G_U> - <v,G_v>) + lr^2 (||G_U||^2 - ||G_v||^2): {ok}", sp.factor(rest)))
    assert ok
    steps.append(("gradient flow: d/dt (||U||^2 - ||v||^2) = -2 (<U, dR/dU> - <v, dR/dv>) = 0 for bilinear f; "
                  "GD: exact change lr^2 (||dR/dU||^2 - ||dR/dv||^2)", None))
    res["gd_step_change_bilinear"] = lr ** 2 * (sp.Symbol("||dR/dU||^2") - sp.Symbol("||dR/dv||^2"))
    # softmax
    s = [(z.T * U * zq)[0, 0] for z in zs]
    e = [sp.exp(si) for si in s]
    p = [ei / sum(e) for ei in e]
    vz = [(v.T * z)[0, 0] for z in zs]
    f = sum(pk * vk for pk, vk in zip(p, vz))
    cov = sum(pk * vk * sk for pk, vk, sk in zip(p, vz, s)) - f * sum(pk * sk for pk, sk in zip(p, s))
    okv = is_zero(_inner(v, gradv(f)) - f)
    okU = is_zero(sp.simplify(_inner(U, gradU(f)) - cov))
    steps.append((f"softmax(L), L = {L}: <v, df/dv> = f: {okv}; <U, df/dU> = Cov_p(v.z, s) = "
                  f"sum_k p_k (v.z_k) s_k - f sum_k p_k s_k, s_k = z_k^T U z_q: {okU}", None))
    assert okv and okU
    loss = (f - y) ** 2 / 2
    ok = is_zero(sp.simplify(defect(loss) - (f - y) * (cov - f)))
    steps.append((f"per-sample defect <U, dl/dU> - <v, dl/dv> = r (Cov_p(v.z, s) - f), r = f - y_q: {ok}", None))
    assert ok
    d_mom = (f_ - y_q) * (m_vs - f_ * m_s - f_)
    steps.append(("in moments of p (f = E_p[v.z]):", d_mom))
    steps.append(("hence d/dt (||U||^2 - ||v||^2) = -2 E[r (Cov_p(v.z, s) - f)] for softmax", None))
    res["softmax_defect"] = d_mom
    res["softmax_norm_drift"] = -2 * sp.Function("E")(d_mom)
    return Derivation("S4", TITLE, steps, res)
