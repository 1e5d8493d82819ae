"""S1 exported: the Gaussian tilt: the linear(inf) predictor and the tilt's log-MGF, mean and covariance
(:mod:`symbolic.s1_tilt`)."""
from __future__ import annotations

import functools

from .. import s1_tilt  # noqa: F401  (S1: the derivation exported here)
from ..tools import xnp
from . import lambdify_result


@functools.cache
def limit_predictor_fn(backend: str = "numpy"):
    """S1: (U, v, Sigma, w (d,), xq (d,)) -> f = v^T Gamma_w U z_q, z_q = (x_q, 0)."""
    from ..s1_tilt import matrix_symbols
    ms = matrix_symbols()
    f = lambdify_result("S1", "f_inf", (ms["v"], ms["Sigma"], ms["w"], ms["U"], ms["zq"]), backend)
    m = xnp(backend)

    def predict(U, v, Sigma, w, xq):
        U, v, Sigma, w, xq = (m.asarray(a) for a in (U, v, Sigma, w, xq))
        n = Sigma.shape[-1]
        zq = m.concatenate([m.reshape(xq, (n,)), m.zeros((1,), dtype=m.result_type(xq, float))]).reshape(n + 1, 1)
        return m.reshape(f(m.reshape(v, (n + 1, 1)), Sigma, m.reshape(w, (n, 1)), U, zq), ())
    return predict


@functools.cache
def tilt_fns(backend: str = "numpy"):
    """S1: {'log_mgf', 'tilted_mean', 'tilted_cov'} as functions of (a (n,), mu (n,), Gamma (n,n))."""
    from ..s1_tilt import TILT_ARGS
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
