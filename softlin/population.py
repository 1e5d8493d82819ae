"""The population (``L -> inf``) side, from the closed forms of S2 (docs/maths.md#s2, #bayes-optimum, #c4): the
optimum ``theta*`` (Remark 5.2), the population risk of ``linear(inf)`` and its gradient, and
gradient descent on it.  The only module of the numerics that evaluates S2 (so the workflow reruns
exactly its users when the derivation changes)."""

from __future__ import annotations

from ._jax import jax, jnp
from .models import check_params
from .params import Params
from .tasks import check_sigma
from .train import Trajectory, run_descent


def bayes_optimum(sigma) -> Params:
    """Remark 5.2: ``U* = blockdiag(Sigma^{-1} / c, 0)``, ``v* = c e_{d+1}``, ``c = tr(Sigma^{-2})^{1/4}``, the
    optimum solved for by sympy (symbolic S2, lambdified)."""
    from symbolic.export.s2 import bayes_optimum_fn  # sympy on first use only

    s = check_sigma(sigma)
    U, v = bayes_optimum_fn()(s)
    return Params(U, v)


def population_risk_kernel(params: Params, sigma) -> jax.Array:
    """Closed-form ``E_{w, x_q} 1/2 (v^T Gamma_w U z_q - w^T x_q)^2`` (symbolic S2); jax-traceable."""
    from symbolic.export.s2 import population_risk_fn  # sympy on first use only

    return population_risk_fn(backend="jax")(params.U, params.v, sigma)


def population_value_and_grad(params: Params, sigma):
    """(population risk, gradient) of the limit model, from the S2 closed form."""
    return jax.value_and_grad(population_risk_kernel)(params, sigma)


def population_risk(params: Params, sigma) -> jax.Array:
    """Population risk of ``linear(inf)`` for any ``(U, v)``, from the symbolic closed form (S2)."""
    s = check_sigma(sigma)
    p = check_params(params, s.shape[0])
    return jax.jit(population_risk_kernel)(p, jnp.asarray(s))


def population_gradient_descent(params0: Params, sigma, lr: float = 0.01, *, steps: int,
                                record_every: int, convention: str = "standard") -> Trajectory:
    """Gradient descent on the closed-form population risk of ``linear(inf)`` (S2)."""
    s = check_sigma(sigma)
    p0 = check_params(params0, s.shape[0])
    return run_descent(population_value_and_grad, jnp.asarray(s), p0, lr, steps, record_every, convention)
