"""S4 exported: the Euler (homogeneity) defect of softmax attention (:mod:`symbolic.s4_euler`)."""
from __future__ import annotations

import functools

from .. import s4_euler  # noqa: F401  (S4: the derivation exported here)
from ..tools import xnp
from . import lambdify_result


@functools.cache
def euler_defect_fn(backend: str = "numpy"):
    """S4: softmax sample (U, v, z (L,d+1), zq (d+1,), yq) -> <U,dl/dU> - <v,dl/dv> = r (Cov_p(v.z, s) - f)."""
    from ..s4_euler import f_, m_s, m_vs, y_q
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
