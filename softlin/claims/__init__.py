"""Claim-level computations (C1-C5): what the workflow's thin scripts call."""
