"""C3 against the seed log's printed digits (workflow/resources/seed_log_c3.json).

The seed log (docs/maths.md#c3; its numbers in workflow/resources/seed_log_c3.json) printed, per setting and seed, the
``theta_inf`` line and one line per L.  Re-running its protocol for L = 8 and 16 (cheap) must
give the same digits at the printed precision; the full table is checked by the workflow's
verdict (consistency check C3-seed-log).
"""

import json
from pathlib import Path

import numpy as np
import pytest

from softlin import tasks as tasks_mod
from softlin.claims import c3

from helpers import schema_defaults

SEED_LOG = json.loads((Path(__file__).parents[1] / "workflow" / "resources" / "seed_log_c3.json").read_text())
FMT = SEED_LOG["formats"]
SIGMA = {"isotropic": np.eye(3), "anisotropic": np.diag([2.0, 1.0, 0.5])}
RUNS = [r for r in SEED_LOG["runs"] if r["token_kind"] == "gauss"]


@pytest.fixture(scope="module", params=RUNS, ids=lambda r: f"{r['setting']}-{r['seed']}")
def reproduced(request):
    run = request.param
    sigma = SIGMA[run["setting"]]
    train = tasks_mod.sample(run["seed"], 3, sigma, 48, 2, 4096)
    ev = tasks_mod.sample(run["seed"] + 999983, 3, sigma, 256, 4, 4096)
    traj = c3.train_setting(train, [8, 16], 0.01, 2500, 20, "seed", progress=lambda m: None)
    rows, info = c3.seed_rows(traj, ev, sigma, [8, 16], 4096, run["setting"], "gauss", run["seed"],
                              schema_defaults("c3", "offblock_rate"))
    return run, rows, info


def test_theta_inf_line(reproduced):
    run, _, info = reproduced
    ti = run["theta_inf"]
    assert FMT["theta_inf.R_init"].format(info["R_init"]) == ti["R_init"]
    assert FMT["theta_inf.R_final"].format(info["R_final"]) == ti["R_final"]
    assert FMT["theta_inf.dist_bayes"].format(info["dist_bayes_inf"]) == ti["dist_bayes"]
    # the seed's off-block values are rounding noise (~1e-18); ours must be at that level too
    assert max(info["offblock_inf_U"], info["offblock_inf_v"]) < 1e-15


@pytest.mark.parametrize("L", [8, 16])
@pytest.mark.parametrize("key", ["D_inf_max", "D_linL_max", "R_pop_at_L", "dist_bayes"])
def test_per_L_line(reproduced, L, key):
    run, rows, _ = reproduced
    seed_row = next(r for r in run["rows"] if r["L"] == L)
    mine = next(r for r in rows if r["L"] == L)
    assert FMT[key].format(mine[key]) == seed_row[key]


def test_block_structure_exact(reproduced):
    _, rows, _ = reproduced
    # antithetic partners are summed first, so the off-block parts cancel exactly
    assert all(r["offblock_U"] == 0.0 and r["offblock_v"] == 0.0 for r in rows)


def test_seed_log_comparison_not_applicable_at_other_seeds():
    """The seed log's runs (isotropic and anisotropic 777, 790; Rademacher 777) against a run's
    seeds: all present (the default, or more seeds from the same seed0) -> nothing missing; another
    seed0 -> every one missing, and the page says NOT APPLICABLE with both seed lists."""
    from softlin.claims import c3_seed_log

    def rows(seeds, rad):
        return ([dict(setting=s, token_kind="gauss", seed=x, L=8) for s in ("isotropic", "anisotropic") for x in seeds]
                + [dict(setting="isotropic", token_kind="rademacher", seed=x, L=8) for x in rad])

    assert c3_seed_log.missing_seeds(SEED_LOG, rows([777 + 13 * i for i in range(20)], [777, 790, 803])) == {}
    assert c3_seed_log.missing_seeds(SEED_LOG, rows([777], [777])) == {"isotropic_gauss": [790], "anisotropic_gauss": [790]}
    other = rows([842, 855], [842])
    missing = c3_seed_log.missing_seeds(SEED_LOG, other)
    assert missing == {"isotropic_gauss": [777, 790], "anisotropic_gauss": [777, 790], "isotropic_rademacher": [777]}
    md = c3_seed_log.not_applicable_markdown(["C3-seed-log", "C3-seed-log-outcome"], missing, other)
    assert "C3-seed-log, C3-seed-log-outcome: NOT APPLICABLE" in md and "isotropic_gauss: 842, 855" in md
