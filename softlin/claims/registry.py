"""The registry of the paper's claims: one :class:`Claim` per claim, the only list of their ids.

The workflow's verdict table (workflow/rules/report.smk), the config's semantic checks
(softlin.config_check, softlin.claims.metric_names), the README table (softlin.readme_table) and
the tests read :data:`CLAIMS`; docs/extending.md says how to add one.  Pure data: importing this
module imports nothing else of the package.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """One claim: its id (= its config section, results/<id>/, target rule), its report category,
    its rule file, its metrics JSON (what a criterion's ``measured`` reads; the names a criterion may
    use: softlin.claims.metric_names), its figure functions (softlin.plots*), its report captions,
    its SLURM groups."""

    id: str
    title: str
    rules: str
    metrics: str
    figures: tuple[str, ...]
    captions: tuple[str, ...]
    slurm_groups: tuple[str, ...] = ()
    settings: bool = False  # has ``<id>.settings`` with covariances (softlin.config_check)

    @property
    def section(self) -> str:
        """The claim's config section (``config.yaml``'s key)."""
        return self.id


CLAIMS: tuple[Claim, ...] = (
    Claim("c1", "C1 concentration", "c1_concentration.smk", "results/c1/c1_concentration.json",
          ("softlin.plots.c1_concentration", "softlin.plots.c1_exponent"),
          ("c1_concentration.rst", "c1_exponent.rst"), ("c1_probe",), settings=True),
    Claim("c2", "C2 gradient concentration", "c2_gradients.smk", "results/c2/c2_gradients.json",
          ("softlin.plots.c2_gradients", "softlin.plots.c2_threshold"),
          ("c2_gradients.rst", "c2_threshold.rst"), ("c2_probe",)),
    Claim("c3", "C3 transfer", "c3_transfer.smk", "results/c3/c3_transfer.json", ("softlin.plots.c3_transfer",),
          ("c3_transfer.rst",), ("c3_train",), settings=True),
    Claim("c4", "C4 infinite-prompt dynamics", "c4_dynamics.smk", "results/c4/c4_dynamics.json",
          ("softlin.plots.c4_dynamics",),
          ("c4_dynamics.rst",), ("c4_flow",), settings=True),
    Claim("c5", "C5 Sec. 6 experiment", "c5_experiment.smk", "results/c5/c5_metrics.json",
          ("softlin.plots_c5.c5_risk_vs_L", "softlin.plots_c5.c5_training"),
          ("c5_risk_vs_L.rst", "c5_training.rst"), ("c5_train",)),
)
IDS: tuple[str, ...] = tuple(c.id for c in CLAIMS)
BY_ID: dict[str, Claim] = {c.id: c for c in CLAIMS}
VERDICT_CAPTION = "verdict.rst"  # every claim's verdict page (workflow/report/)


def claim(cid: str) -> Claim:
    """The registered claim ``cid``; KeyError naming the known ids."""
    if cid not in BY_ID:
        raise KeyError(f"no claim {cid!r}; known: {', '.join(IDS)}")
    return BY_ID[cid]
