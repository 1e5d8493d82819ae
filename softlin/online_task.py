"""C5's task law (the authors' public code): covariates ``x ~ N(0, Sigma)`` in dimension ``d``, task
``w ~ N(0, w_var I)``, labels ``y = w^T x + eps``, ``eps ~ N(0, noise_var)``; prompt tokens
``z_l = (x_l, y_l)``, query ``z_q = (x_q, 0)``.

Covariance modes: ``correct`` (prompt and query covariates ``C g``, ``C`` the lower Cholesky factor
of Sigma) and ``as_in_authors_code`` (the public code: row vectors multiplied by ``C^T`` twice,
``x = C C g``, so the prompt covariance is ``C C C^T C^T``, and the query never transformed).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import stream
from .tasks import check_sigma

COVARIANCE_MODES = ("correct", "as_in_authors_code")


class TaskLaw(NamedTuple):
    """The C5 task law: covariance roots of prompt and query covariates, noise and prior variances."""

    d: int
    root_prompt: np.ndarray  # x_prompt = root_prompt @ g
    root_query: np.ndarray   # x_query = root_query @ g
    noise_var: float
    w_var: float

    @property
    def sigma_prompt(self) -> np.ndarray:
        return self.root_prompt @ self.root_prompt.T

    @property
    def sigma_query(self) -> np.ndarray:
        return self.root_query @ self.root_query.T

    def law(self) -> stream.Law:
        return stream.make_law(self.root_prompt, self.root_query, self.w_var, self.noise_var)


def kms_sigma(d: int, rho: float) -> np.ndarray:
    """Kac-Murdock-Szego covariance ``Sigma_ij = rho^|i-j|``; (d, d)."""
    i = np.arange(d)
    return float(rho) ** np.abs(i[:, None] - i[None, :])


def make_task(sigma, noise_var: float, w_var: float | None = None,
              covariance_mode: str = "correct") -> TaskLaw:
    """The C5 task law; ``w_var`` defaults to ``1/d``."""
    s = check_sigma(sigma)
    d = s.shape[0]
    if covariance_mode not in COVARIANCE_MODES:
        raise ValueError(f"covariance_mode must be one of {COVARIANCE_MODES}, got {covariance_mode!r}")
    C = np.linalg.cholesky(s)
    if covariance_mode == "correct":
        rp, rq = C, C
    else:  # the public code: x @ C^T @ C^T on row vectors, i.e. x = C C g; the query untouched
        rp, rq = C @ C, np.eye(d)
    return TaskLaw(d, rp, rq, float(noise_var), float(1.0 / d if w_var is None else w_var))
