"""S3 exported: the w -> -w parity table (:mod:`symbolic.s3_parity`)."""
from __future__ import annotations

from .. import (
    core,
    s3_parity,  # noqa: F401  (S3: the derivation exported here)
)


def parity_table(model: str) -> dict:
    """S3: model in {'linear_inf', 'linear_L', 'softmax_L'} -> {'U[i,j]' / 'v[i]': +1 (even) / -1 (odd)} at d = 2."""
    key = {"linear(inf)": "linear_inf", "linear(L)": "linear_L", "softmax(L)": "softmax_L"}.get(model, model)
    return {k: int(v) for k, v in core.get("S3").results[f"parity_{key}"].items()}
