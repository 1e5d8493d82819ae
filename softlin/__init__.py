"""softlin: JAX kernels reproducing *Softmax as Linear Attention in the Large-Prompt Regime*.

Modules (import the ones you need; only the JAX ones pull in jax, with float64 enabled):
``tasks`` (sampling, numpy), ``params`` (Params, Eq. 9 init, Bayes optimum), ``models``
(predictors, risks, gradients), ``train`` (gradient-descent trajectories), ``metrics``,
``numpy_reference`` (independent plain-numpy implementation used by tests and benchmarks).
The package knows nothing of the workflow: no module imports Snakemake.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("softlin")  # the one source: pyproject.toml's [project] version
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
