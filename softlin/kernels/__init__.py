"""The C++ kernels: small XLA FFI custom calls for the CPU, one shared library built on first use.

* :mod:`.build` builds, caches and loads the library (``python -m softlin.kernels.build``) and
  says whether the kernels serve this process (:func:`.build.use_kernels`);
* one module per target beside its pure-XLA reference: :mod:`.softmax_moments` (C1-C4's softmax
  moments), :mod:`.softmax_prefix` (C1/C2's measures: the moments at every length of a nested
  prompt family in one pass) and :mod:`.online_batch` (C5's batch stream: draw a step's prompts,
  and their moments);
* ``csrc/``: the C++ sources (``moments.h``, shared by both targets).

``SOFTLIN_KERNELS=0`` (or its older name ``SOFTLIN_FUSED=0``) disables them: every target then
runs its pure-XLA reference, as it does off the CPU or where no C++ compiler is available.
"""
