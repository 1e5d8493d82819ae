"""Numeric callables lambdified from the derived results (numpy or jax backends), fixed argument orders."""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from . import core
from .tools import lambdify, xnp


@functools.lru_cache(maxsize=None)
def lambdify_result(derivation_id: str, result_name: str, args: tuple, backend: str = "numpy"):
    """Lambdify results[result_name] of derivation `derivation_id` in the sympy `args` (a tuple)."""
    return lambdify(args, core.get(derivation_id).results[result_name], backend)


def _blocks(U, v, Sigma, backend):
    """(U, v, Sigma) -> (B_x, u, v_x, v_y, Sigma, d) as the S2 expressions take them (column vectors)."""
    n = Sigma.shape[-1]
    m = xnp(backend)
    U, v, Sigma = m.asarray(U), m.asarray(v), m.asarray(Sigma)
    return U[:n, :n], m.reshape(U[n, :n], (n, 1)), m.reshape(v[:n], (n, 1)), v[n], Sigma, n


def population_risk_fn(backend: str = "numpy"):
    """S2: (U (d+1,d+1), v (d+1,), Sigma (d,d)) -> R = E_{w,x_q} 1/2 (v^T Gamma_w U z_q - w^T x_q)^2, any d."""
    from .s2_population import RISK_ARGS
    f = lambdify_result("S2", "R", RISK_ARGS, backend)

    def risk(U, v, Sigma):
        return f(*_blocks(U, v, Sigma, backend))
    return risk


def population_risk_grad_fn(backend: str = "numpy"):
    """S2: (U, v, Sigma) -> (dR/dU (d+1,d+1), dR/dv (d+1,)) from the derived matrix-form gradient."""
    from .s2_population import RISK_ARGS
    gs = {k: lambdify_result("S2", f"dR_d{k}", RISK_ARGS, backend) for k in ("B_x", "u", "v_x", "v_y")}
    m = xnp(backend)

    def grad(U, v, Sigma):
        a = _blocks(U, v, Sigma, backend)
        n = a[-1]
        gB, gu, gvx, gvy = (gs[k](*a) for k in ("B_x", "u", "v_x", "v_y"))
        top = m.concatenate([m.reshape(gB, (n, n)), m.reshape(gu, (1, n))], axis=0)
        gU = m.concatenate([top, m.zeros((n + 1, 1), dtype=top.dtype)], axis=1)
        gv = m.concatenate([m.reshape(gvx, (n,)), m.reshape(m.asarray(gvy, dtype=top.dtype), (1,))])
        return gU, gv
    return grad


def limit_predictor_fn(backend: str = "numpy"):
    """S1: (U, v, Sigma, w (d,), xq (d,)) -> f = v^T Gamma_w U z_q, z_q = (x_q, 0)."""
    from .s1_tilt import matrix_symbols
    ms = matrix_symbols()
    f = lambdify_result("S1", "f_inf", (ms["v"], ms["Sigma"], ms["w"], ms["U"], ms["zq"]), backend)
    m = xnp(backend)

    def predict(U, v, Sigma, w, xq):
        U, v, Sigma, w, xq = (m.asarray(a) for a in (U, v, Sigma, w, xq))
        n = Sigma.shape[-1]
        zq = m.concatenate([m.reshape(xq, (n,)), m.zeros((1,), dtype=m.result_type(xq, float))]).reshape(n + 1, 1)
        return m.reshape(f(m.reshape(v, (n + 1, 1)), Sigma, m.reshape(w, (n, 1)), U, zq), ())
    return predict


def bayes_optimum_fn():
    """S2 / Remark 5.2: Sigma (d,d) -> (U* = blockdiag(Sigma^-1/c, 0), v* = c e_{d+1}), c = tr(Sigma^-2)^(1/4)."""
    from .s2_population import Sigma as S
    res = core.get("S2").results
    fA = lambdify((S,), res["U_star_A"], "numpy")
    fc = lambdify((S,), res["c"], "numpy")

    def optimum(Sigma):
        Sigma = np.asarray(Sigma, dtype=float)
        n = Sigma.shape[0]
        U = np.zeros((n + 1, n + 1))
        U[:n, :n] = fA(Sigma)
        v = np.zeros(n + 1)
        v[n] = fc(Sigma)
        return U, v
    return optimum


def reduced_risk_fn(backend: str = "numpy"):
    """S2 block reduction: (A (d,d), b scalar, Sigma (d,d)) -> R(A, b) = 1/2 tr((b Sigma A - I) Sigma (b Sigma A - I)^T)."""
    from .s1_tilt import d
    from .s2_population import A, Sigma, b
    f = lambdify_result("S2", "R_reduced", (A, b, Sigma, d), backend)
    m = xnp(backend)
    return lambda A_, b_, S_: f(m.asarray(A_), b_, m.asarray(S_), S_.shape[-1])


def reduced_flow_fn(backend: str = "numpy"):
    """S2 block flow: (A, b, Sigma) -> (dA/dt = b S^2 - b^2 S^2 A S, db/dt = tr(A^T S^2) - b tr(A^T S^2 A S))."""
    from .s1_tilt import d
    from .s2_population import A, Sigma, b
    fA = lambdify_result("S2", "dA_dt", (A, b, Sigma, d), backend)
    fb = lambdify_result("S2", "db_dt", (A, b, Sigma, d), backend)
    m = xnp(backend)

    def flow(A_, b_, S_):
        A_, S_ = m.asarray(A_), m.asarray(S_)
        return fA(A_, b_, S_, S_.shape[-1]), fb(A_, b_, S_, S_.shape[-1])
    return flow


def euler_defect_fn(backend: str = "numpy"):
    """S4: softmax sample (U, v, z (L,d+1), zq (d+1,), yq) -> <U,dl/dU> - <v,dl/dv> = r (Cov_p(v.z, s) - f)."""
    from .s4_euler import f_, m_s, m_vs, y_q
    g = lambdify_result("S4", "softmax_defect", (f_, m_vs, m_s, y_q), backend)
    m = xnp(backend)

    def defect(U, v, z, zq, yq):
        U, v, z, zq = (m.asarray(a) for a in (U, v, z, zq))
        s = z @ (U @ zq)
        p = m.exp(s - m.max(s))
        p = p / m.sum(p)
        vz = z @ v
        return g(m.sum(p * vz), m.sum(p * vz * s), m.sum(p * s), yq)
    return defect


def beta_fn():
    """S5: lambda_max(M) -> beta = min(1/2, 1/(4 lambda_max)) (numpy), the derived piecewise exponent."""
    from .s5_threshold import lam
    f = lambdify_result("S5", "beta", (lam,), "numpy")
    return lambda lmax: float(f(float(lmax)))


def _s5_args():
    from .s1_tilt import d
    return sp.MatrixSymbol("A", d, d), sp.MatrixSymbol("Sigma", d, d), d


def threshold_M(A, Sigma) -> float:
    """S5: lambda_max(M), M = Sigma^(1/2) A^T Sigma A Sigma^(1/2): the lambdified largest eigenvalue of the similar
    matrix A^T Sigma A Sigma (the MGF's first pole is t* = 1 / (2 lambda_max))."""
    A_, S_, d_ = _s5_args()
    f = lambdify_result("S5", "lambda_max", (A_, S_), "numpy")
    return float(f(np.asarray(A, float), np.asarray(Sigma, float)))


def mgf_quadratic_form_fn():
    """S5: (t, K (d,d), Sigma (d,d)) -> E_{x ~ N(0, Sigma)} exp(t x^T K x) = det(I - 2 t Sigma K)^(-1/2) below the pole."""
    _, S_, d_ = _s5_args()
    t, K = sp.Symbol("t", real=True), sp.MatrixSymbol("K", d_, d_)
    f = lambdify_result("S5", "mgf_quadratic_form", (t, K, S_, d_), "numpy")
    return lambda t_, K_, Sigma: float(f(float(t_), np.asarray(K_, float), np.asarray(Sigma, float), np.shape(Sigma)[0]))


def exp_moment_fn():
    """S5: (A, Sigma) -> E_{x_q ~ N(0,Sigma)} exp(x_q^T A^T Sigma A x_q) = det(I - 2M)^(-1/2), inf if lambda_max >= 1/2."""
    A_, S_, d_ = _s5_args()
    f = lambdify_result("S5", "E_exp_s", (A_, S_, d_), "numpy")

    def moment(A, Sigma):
        A, Sigma = np.asarray(A, float), np.asarray(Sigma, float)
        if threshold_M(A, Sigma) >= 0.5:
            return float("inf")
        return float(f(A, Sigma, Sigma.shape[0]))
    return moment


# --------------------------------------------------------------------------- S1 (generic Gaussian tilt)
def tilt_fns(backend: str = "numpy"):
    """S1: {'log_mgf', 'tilted_mean', 'tilted_cov'} as functions of (a (n,), mu (n,), Gamma (n,n))."""
    from .s1_tilt import TILT_ARGS
    m = xnp(backend)
    out = {}
    for name in ("log_mgf", "tilted_mean", "tilted_cov"):
        f = lambdify_result("S1", name, TILT_ARGS, backend)

        def fn(a, mu, Gamma, _f=f, _name=name):
            a, mu, Gamma = m.asarray(a, dtype=float), m.asarray(mu, dtype=float), m.asarray(Gamma, dtype=float)
            k = Gamma.shape[-1]
            r = _f(m.reshape(a, (k, 1)), m.reshape(mu, (k, 1)), Gamma, k)
            if _name == "log_mgf":
                return m.reshape(r, ())
            if _name == "tilted_mean":
                return m.reshape(r, (k,))
            return m.broadcast_to(r, (k, k))
        out[name] = fn
    return out


# --------------------------------------------------------------------------- S6 (C5 baselines), batched
def _s6(name, args, backend):
    return lambdify_result("S6", name, args, backend)


def gd_risk_fn():
    """S6: (L, Sigma_p, Sigma_q, noise_var, w_var) -> E (f_GD - y_q)^2 of one preconditioned GD step (numpy float)."""
    from .s6_baselines import GD_RISK_ARGS
    f = _s6("gd_risk", GD_RISK_ARGS, "numpy")

    def risk(L, sigma_prompt, sigma_query, noise_var, w_var):
        Sp, Sq = np.asarray(sigma_prompt, float), np.asarray(sigma_query, float)
        return float(f(L, Sp, Sq, float(noise_var), float(w_var), Sp.shape[0]))
    return risk


def linear_class_risk_fn():
    """S6: (L, Sigma_p, Sigma_q, noise_var, w_var) -> min over P of E (x_q^T P h - y_q)^2: the linear-attention
    class optimum at prompt length L (numpy float)."""
    from .s6_baselines import GD_RISK_ARGS
    f = _s6("linear_class_risk", GD_RISK_ARGS, "numpy")

    def risk(L, sigma_prompt, sigma_query, noise_var, w_var):
        Sp, Sq = np.asarray(sigma_prompt, float), np.asarray(sigma_query, float)
        return float(np.reshape(f(L, Sp, Sq, float(noise_var), float(w_var), Sp.shape[0]), ()))
    return risk


def linear_class_precond_fn():
    """S6: (L, Sigma_p, noise_var, w_var) -> P*(L) (d, d), the preconditioner of the linear-attention class
    optimum x_q^T P* h at prompt length L (it does not depend on Sigma_q)."""
    from .s6_baselines import GD_RISK_ARGS
    f = _s6("linear_class_P", GD_RISK_ARGS, "numpy")

    def precond(L, sigma_prompt, noise_var, w_var):
        Sp = np.asarray(sigma_prompt, float)
        return np.asarray(f(L, Sp, Sp, float(noise_var), float(w_var), Sp.shape[0]), float)
    return precond


def gd_predict_fn(backend: str = "numpy"):
    """S6: (G_xy (n, d), x_q (n, d), Sigma_p (d, d)) -> x_q^T Sigma_p^-1 G_xy, (n,)."""
    from .s6_baselines import GD_PREDICT_ARGS
    f = _s6("gd_predict", GD_PREDICT_ARGS, backend)
    m = xnp(backend)

    def one(gxy, xq, Sp):
        k = Sp.shape[-1]
        return m.reshape(f(m.reshape(gxy, (k, 1)), m.reshape(xq, (k, 1)), Sp, k), ())
    return _batched(one, backend, (0, 0, None))


def bayes_fns(backend: str = "numpy"):
    """S6: {'predict', 'conditional_risk'}: (G_xx (n,d,d), G_xy (n,d), x_q (n,d), L, noise_var, w_var) -> (n,)."""
    from .s6_baselines import BAYES_ARGS
    m = xnp(backend)
    out = {}
    for key, name in (("predict", "bayes_predict"), ("conditional_risk", "bayes_conditional_risk")):
        f = _s6(name, BAYES_ARGS, backend)

        def one(gxx, gxy, xq, L, s2, wv, _f=f):
            k = gxx.shape[-1]
            return m.reshape(_f(gxx, m.reshape(gxy, (k, 1)), m.reshape(xq, (k, 1)), L, s2, wv, k), ())
        out[key] = _batched(one, backend, (0, 0, 0, None, None, None))
    return out


def gamma_w_noisy_fn(backend: str = "numpy"):
    """S6: (Sigma_p (d,d), w (n, d), noise_var) -> Cov(z | w) with label noise, (n, d+1, d+1)."""
    from .s6_baselines import NOISY_GAMMA_ARGS
    f = _s6("Gamma_w_noisy", NOISY_GAMMA_ARGS, backend)
    m = xnp(backend)

    def one(Sp, w, s2):
        k = Sp.shape[-1]
        return m.reshape(f(Sp, m.reshape(w, (k, 1)), s2, k), (k + 1, k + 1))
    return _batched(one, backend, (None, 0, None))


def limit_optimum_predict_fn(backend: str = "numpy"):
    """S6: (w (n, d), x_q (n, d)) -> the infinite-prompt optimum prediction w^T x_q, (n,)."""
    from .s6_baselines import OPT_PREDICT_ARGS
    f = _s6("limit_optimum_predict", OPT_PREDICT_ARGS, backend)
    m = xnp(backend)

    def one(w, xq):
        k = w.shape[-1]
        return m.reshape(f(m.reshape(w, (k, 1)), m.reshape(xq, (k, 1))), ())
    return _batched(one, backend, (0, 0))


def limit_optimum_risk_fn():
    """S6: (noise_var) -> the infinite-prompt optimum risk (both covariance modes): the noise variance."""
    from .s6_baselines import s2
    f = _s6("limit_optimum_risk", (s2,), "numpy")
    return lambda noise_var: float(f(float(noise_var)))


def limit_block_risk_fn():
    """S6: (A, b, Sigma_p, Sigma_q, noise_var, w_var) -> risk of the block-structured infinite-prompt predictor."""
    from .s6_baselines import BLOCK_RISK_ARGS
    f = _s6("limit_block_risk", BLOCK_RISK_ARGS, "numpy")

    def risk(A, b, sigma_prompt, sigma_query, noise_var, w_var):
        Sp = np.asarray(sigma_prompt, float)
        return float(f(np.asarray(A, float), float(b), Sp, np.asarray(sigma_query, float), float(noise_var),
                       float(w_var), Sp.shape[0]))
    return risk


def _batched(one, backend, in_axes):
    """Map a one-sample function over the leading axis of the arguments marked 0 in ``in_axes``."""
    if backend == "jax":
        import jax
        return jax.vmap(one, in_axes=in_axes)
    import numpy as np_

    def mapped(*args):
        args = [np_.asarray(a, dtype=float) for a in args]
        nb = next(a.shape[0] for a, ax in zip(args, in_axes) if ax == 0)
        return np_.stack([one(*[a[i] if ax == 0 else a for a, ax in zip(args, in_axes)]) for i in range(nb)])
    return mapped


def parity_table(model: str) -> dict:
    """S3: model in {'linear_inf', 'linear_L', 'softmax_L'} -> {'U[i,j]' / 'v[i]': +1 (even) / -1 (odd)} at d = 2."""
    key = {"linear(inf)": "linear_inf", "linear(L)": "linear_L", "softmax(L)": "softmax_L"}.get(model, model)
    return {k: int(v) for k, v in core.get("S3").results[f"parity_{key}"].items()}


# --------------------------------------------------------------------------- S7 (C5 excess to first order in 1/L)
@functools.lru_cache(maxsize=None)
def first_order_linear_fn():
    """S7: (Sigma_p, Sigma_q, noise_var, w_var) -> K_lin, with R_lin*(L) = noise_var + K_lin / L + O(1/L^2) for the
    linear-attention class optimum (S6's P*(L)); K_lin = w_var tr S_q + (w_var tr S_p + noise_var) tr(S_q S_p^-1)."""
    from .s7_first_order import K_LIN_ARGS
    f = lambdify_result("S7", "K_lin", K_LIN_ARGS, "numpy")

    def k_lin(sigma_prompt, sigma_query, noise_var, w_var):
        Sp = np.asarray(sigma_prompt, float)
        return float(np.reshape(f(Sp, np.asarray(sigma_query, float), float(noise_var), float(w_var), Sp.shape[0]), ()))
    return k_lin


def softmax_blow_up_c2(sigma_prompt, sigma_query) -> float:
    """S7: K_soft(c) is finite iff c^2 > 2 lambda_max(Sigma_q Sigma_p^-1) (2 in the correct mode)."""
    M = np.asarray(sigma_query, float) @ np.linalg.inv(np.asarray(sigma_prompt, float))
    return float(2.0 * np.max(np.linalg.eigvals(M).real))


@functools.lru_cache(maxsize=None)
def first_order_softmax_fn():
    """S7: (c, Sigma_p, Sigma_q, noise_var, w_var) -> K_soft(c), with R_soft(c, L) = noise_var + K_soft(c) / L + o(1/L)
    for the softmax reference family U = blockdiag(Sigma_p^-1 / c, 0), v = c e_(d+1); inf at or below the blow-up
    c^2 <= 2 lambda_max(Sigma_q Sigma_p^-1)."""
    from .s7_first_order import K_SOFT_ARGS
    f = lambdify_result("S7", "K_soft", K_SOFT_ARGS, "numpy")

    def k_soft(c, sigma_prompt, sigma_query, noise_var, w_var):
        Sp, Sq = np.asarray(sigma_prompt, float), np.asarray(sigma_query, float)
        if float(c) ** 2 <= softmax_blow_up_c2(Sp, Sq) * (1 + 1e-12):
            return float("inf")
        return float(np.reshape(f(float(c), Sp, Sq, float(noise_var), float(w_var), Sp.shape[0]), ()))
    return k_soft


@functools.lru_cache(maxsize=None)
def _correct_fns():
    from .s7_first_order import CORRECT_ARGS, CORRECT_STAR_ARGS
    return (lambdify_result("S7", "K_soft_correct", CORRECT_ARGS, "numpy"),
            lambdify_result("S7", "c_star_correct", CORRECT_STAR_ARGS, "numpy"),
            lambdify_result("S7", "gap_constant_correct", CORRECT_STAR_ARGS, "numpy"))


def softmax_best_scale(sigma_prompt, sigma_query, noise_var, w_var) -> float:
    """S7: c* = argmin_c K_soft(c), by a bounded scalar minimisation of the lambdified K_soft over log(c^2) above the
    blow-up (any covariance mode); in the correct mode S7 also gives c* in closed form (``first_order_gap``)."""
    from scipy.optimize import minimize_scalar
    k = first_order_softmax_fn()
    lo = softmax_blow_up_c2(sigma_prompt, sigma_query)
    obj = lambda u: np.log(k(np.sqrt(lo * (1.0 + np.exp(u))), sigma_prompt, sigma_query, noise_var, w_var))  # noqa: E731
    r = minimize_scalar(obj, bounds=(-12.0, 8.0), method="bounded", options={"xatol": 1e-10})
    return float(np.sqrt(lo * (1.0 + np.exp(r.x))))


def first_order_gap(sigma_prompt, sigma_query, noise_var, w_var) -> dict:
    """S7: {'c_star', 'K_soft_star', 'K_lin', 'gap_constant' (= K_soft(c*) - K_lin), 'blow_up_c2', 'closed_form'}.
    In the correct mode (Sigma_p == Sigma_q) c* and the gap constant are the lambdified closed forms of S7 (the larger
    root of a quadratic in c^2); otherwise c* is found numerically (``softmax_best_scale``)."""
    Sp, Sq = np.asarray(sigma_prompt, float), np.asarray(sigma_query, float)
    k_lin = first_order_linear_fn()(Sp, Sq, noise_var, w_var)
    correct = Sp.shape == Sq.shape and np.allclose(Sp, Sq, rtol=0, atol=1e-14)
    if correct:
        _, fc, fg = _correct_fns()
        args = (float(np.trace(Sp)), float(noise_var), float(w_var), Sp.shape[0])
        c = float(fc(*args))
    else:
        c = softmax_best_scale(Sp, Sq, noise_var, w_var)
    k_soft = first_order_softmax_fn()(c, Sp, Sq, noise_var, w_var)
    return {"c_star": c, "K_soft_star": k_soft, "K_lin": k_lin, "gap_constant": k_soft - k_lin,
            "blow_up_c2": softmax_blow_up_c2(Sp, Sq), "closed_form": bool(correct)}


def first_order_risks(L, sigma_prompt, sigma_query, noise_var, w_var, c=None) -> dict:
    """S7 (+ S6): the predicted risks at prompt length(s) L (scalar or array): 'R_soft' = s2 + K_soft(c)/L (c = c* by
    default), 'R_lin' = s2 + K_lin/L, 'R_lin_exact' (S6's exact class-optimum risk), 'gap' = (K_soft - K_lin)/L and
    'gap_fraction' = gap / R_lin_exact (the first-order prediction of the measured gap as a fraction of R_linear)."""
    g = first_order_gap(sigma_prompt, sigma_query, noise_var, w_var)
    k_soft = g["K_soft_star"] if c is None else first_order_softmax_fn()(c, sigma_prompt, sigma_query, noise_var, w_var)
    Ls = np.atleast_1d(np.asarray(L, float))
    lin_exact = linear_class_risk_fn()
    r_exact = np.array([lin_exact(int(x), sigma_prompt, sigma_query, noise_var, w_var) for x in Ls])
    gap = (k_soft - g["K_lin"]) / Ls
    out = {"L": Ls, "R_soft": noise_var + k_soft / Ls, "R_lin": noise_var + g["K_lin"] / Ls,
           "R_lin_exact": r_exact, "gap": gap, "gap_fraction": gap / r_exact}
    if np.ndim(L) == 0:
        out = {k: float(v[0]) for k, v in out.items()}
    return out
