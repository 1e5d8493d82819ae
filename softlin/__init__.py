"""softlin: the numerics reproducing *Softmax as Linear Attention in the Large-Prompt Regime* (JAX, float64).

Modules (import the ones you need; only the JAX ones pull in jax, with float64 enabled), one job each:

* C1-C4: ``tasks`` (sampling, numpy), ``params`` (Params, Eq. 9 init), ``models`` (the predictors,
  the masked prompt moment, risks, gradients: the model core), ``train`` (gradient-descent
  trajectories), ``population`` (S2: theta*, the population risk and its flow), ``concentration``;
* C5: ``stream`` (Philox batches), ``online_task`` (the task law), ``qkvo`` (the head's
  parametrisations), ``optim``, ``online`` (the trainer), ``checkpoint``, ``baselines`` (S6);
* shared: ``kernels`` (the C++ kernels and their XLA references), ``records`` (the pytree <-> npz
  codec), ``metrics`` (statistics, the uncertainty layer), ``verdict`` (the decision rule),
  ``verdict_report``, ``calibration`` (two replications side by side: docs/calibration.md),
  ``readme_table`` (the README's table from a run, docs/default_run/), ``plots``, ``plots_c5``, ``io``,
  ``progress``, ``claims`` (one module per claim),
  ``numpy_reference`` (an independent plain-numpy implementation for tests and benchmarks).

The package knows nothing of the workflow: no module imports Snakemake.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("softlin")  # the one source: pyproject.toml's [project] version
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
