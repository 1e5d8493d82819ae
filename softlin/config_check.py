"""The semantic check of a run's config: what the JSON schema cannot say, before any job starts.

:func:`check` is what ``workflow/rules/common.smk`` calls on the merged, schema-validated config.
Every error is a ``ValueError`` with one line ``config key '<key>': <reason>``.  The parts:
:func:`check_semantics` (dimensions, divisors, orders of the protocol), :func:`check_names`
(setting names and labels safe and unique), :func:`check_tests` (each criterion's value of the
shape its operator needs), :func:`softlin.claims.metric_names.check_config` (each ``measured``
a metric its claim computes under the configured options), :func:`check_guards` (the C5
plateau test keeps its power), :mod:`softlin.config_plot` (colours, colour maps, markers and
mathtext) and :mod:`softlin.config_cost` (memory and time within bounds).
"""

from __future__ import annotations

import re

import numpy as np

from .claims import metric_names, registry
from .config_cost import n_recorded
from .tasks import check_sigma

# a name the config gives (a setting, a label) becomes part of a file path or of a metric path:
# a letter or digit first, then letters, digits, '_' and '-' (no '/', '.', space or '..')
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
CLAIMS_WITH_SETTINGS = tuple(c.id for c in registry.CLAIMS if c.settings)  # c1, c3, c4
BAND_OPS = ("between", "outside")
# the C5 plateau test's weakest allowed form (docs/faults.md#guards): the flatness window holds at
# least MIN_WINDOW_POINTS log points, and flags an end slope of max_rel_drop / window_frac (the
# relative fall over one training length at the end rate) no larger than the default's 0.02 / 0.1
MIN_WINDOW_POINTS = 3
MAX_END_RATE = 0.2
# the C5 within-reference test (a run's test risk at most (1 + reference_tol) x its class reference's):
# at most the predeclared 0.05, the relative gap C5a reads at the largest L, so that a run missing
# its reference by more than the effect a criterion measures is not counted converged
MAX_REFERENCE_TOL = 0.05
# C4's "reaches theta*" (distance below c4.tol at t_max), which places the boundary alpha_c of C4c:
# at most the predeclared 1e-6, the distance C4a and C4c require of the flows they call converged
MAX_C4_TOL = 1.0e-6
# C3d's "a run's off-block mass grows" (softlin.claims.c3.growth_rate): the peak OLS slope of ln(mass) over
# `records` consecutive records, masses below `floor` counted as it, exceeds `grow_rate`.  A larger
# grow_rate or floor, or a longer window (which averages a burst of growth with the flat records around
# it), lets fewer runs grow: bounded by the predeclared values (tighter is free)
MAX_C3_OFFBLOCK = {"grow_rate": 1.0e-3, "floor": 1.0e-14, "records": 6}


def fail(key: str, reason: str):
    raise ValueError(f"config key '{key}': {reason}")


def sigma_matrix(spec, key):
    """Covariance from its config form (diagonal list or full matrix), checked by
    :func:`softlin.tasks.check_sigma` (square, finite, symmetric, positive definite); an error names ``key``."""
    a = np.asarray(spec, dtype=float)
    try:
        return check_sigma(np.diag(a) if a.ndim == 1 else a)
    except ValueError as err:
        raise ValueError(f"config key '{key}': {err}") from None


def check(cfg: dict) -> dict:
    """Every semantic check of a validated config (module docstring); returns every claim setting's
    covariance ``{(claim, setting): Sigma}`` (:func:`check_semantics`)."""
    from . import config_cost, config_plot

    sigmas = check_semantics(cfg)
    check_names(cfg)
    check_tests(cfg)
    metric_names.check_config(cfg)
    check_seed_log(cfg)
    check_guards(cfg)
    config_plot.check(cfg)
    config_cost.check(cfg)
    return sigmas


def check_semantics(cfg):
    """The protocol's own constraints (each error names its key).
    Returns every claim setting's covariance, checked once here: ``{(claim, setting): Sigma}``."""
    sigmas = {}
    for claim in ("c3", "c1", "c4"):
        for name, st in ((cfg.get(claim) or {}).get("settings") or {}).items():
            key = f"{claim}.settings.{name}.sigma"
            s = sigmas[(claim, name)] = sigma_matrix(st["sigma"], key)
            if claim == "c3" and s.shape[0] != cfg["c3"]["d"]:
                raise ValueError(f"config key '{key}': dimension {s.shape[0]} != c3.d = {cfg['c3']['d']}")
            if claim != "c4" and st.get("token_kind", "gauss") == "rademacher" and not np.array_equal(s, np.eye(len(s))):
                raise ValueError(f"config key '{key}': Rademacher tokens need sigma = I")
    c3 = cfg.get("c3")
    if c3 is not None:
        if c3["steps"] % c3["record_every"]:
            raise ValueError("config key 'c3.record_every': must divide c3.steps")
        if sorted(set(c3["L"])) != list(c3["L"]):
            raise ValueError("config key 'c3.L': prompt lengths must be strictly increasing")
        if c3["eval"]["L"] < max(c3["L"]):
            raise ValueError("config key 'c3.eval.L': must be at least max(c3.L)")
        n_rec = n_recorded(c3)
        if c3.get("offblock_seed_order") and c3["offblock_rate"]["records"] > n_rec:
            fail("c3.offblock_rate.records", f"{c3['offblock_rate']['records']} records, but a run records "
                 f"only {n_rec} (c3.steps / c3.record_every + 1)")
    c1 = cfg.get("c1")
    for claim in ("c1", "c2"):
        sec = cfg.get(claim)
        if sec is not None and sec["log2_L_max"] - sec["log2_L_min"] < 4:
            raise ValueError(f"config key '{claim}.log2_L_max': need at least 5 prompt lengths (log2_L_max - log2_L_min >= 4)")
    c2 = cfg.get("c2")
    if c2 is not None:
        if c1 is None:
            raise ValueError("config key 'c2': C2 probes the C1 settings, so the c1 section is required")
        for name in c2["sweep"]["settings"]:
            if name not in c1["settings"] or c1["settings"][name].get("token_kind", "gauss") != "gauss":
                raise ValueError(f"config key 'c2.sweep.settings': {name!r} is not a Gaussian c1 setting")
        for name in c2.get("blocks_factor") or {}:
            if name not in c1["settings"]:
                raise ValueError(f"config key 'c2.blocks_factor': {name!r} is not a c1 setting "
                                 f"(C2 measures the c1 settings: {sorted(c1['settings'])})")
        for name in c2["trajectory"]["settings"]:
            if name not in (c3 or {}).get("settings", {}):
                raise ValueError(f"config key 'c2.trajectory.settings': {name!r} is not a c3 setting")
        if c2["trajectory"]["settings"] and c3["n_pairs"] % c2["trajectory"]["n_blocks"]:
            raise ValueError("config key 'c2.trajectory.n_blocks': must divide c3.n_pairs (blocks of whole antithetic pairs)")
    c4 = cfg.get("c4")
    if c4 is not None:
        if c4["steps"] % c4["record_every"]:
            raise ValueError("config key 'c4.record_every': must divide c4.steps")
        nt = c4["n_tasks"]
        if nt["steps"] > c4["steps"] or nt["steps"] % c4["record_every"]:
            raise ValueError("config key 'c4.n_tasks.steps': must be a multiple of c4.record_every and at most c4.steps")
        if nt["n_seed"] < 2:
            fail("c4.n_tasks.n_seed", "need at least 2 seeds (the jackknife over seeds of the n_tasks slope)")
    c5 = cfg.get("c5")
    if c5 is not None:
        if sorted(set(c5["L"])) != list(c5["L"]):
            raise ValueError("config key 'c5.L': prompt lengths must be strictly increasing")
        if len(c5["L"]) < 3:
            raise ValueError("config key 'c5.L': need at least 3 prompt lengths (the gap criterion compares thirds)")
        if c5["chunk"] % c5["log_every"]:
            raise ValueError("config key 'c5.log_every': must divide c5.chunk")
        if c5["steps"] % c5["chunk"]:
            raise ValueError("config key 'c5.chunk': must divide c5.steps")
        if c5["steps"] // c5["log_every"] < 30:
            raise ValueError("config key 'c5.log_every': need at least 30 logged losses (c5.steps / c5.log_every) "
                             "for the plateau criterion")
        if c5["optimizer"].get("warmup", 0) >= c5["steps"]:
            raise ValueError("config key 'c5.optimizer.warmup': must be less than c5.steps")
        if c5["eval"]["n_test"] % c5["eval"]["chunk"]:
            raise ValueError("config key 'c5.eval.chunk': must divide c5.eval.n_test")
        if sorted(c5["models"]) != ["linear", "softmax"]:
            raise ValueError("config key 'c5.models': must be [softmax, linear] (the claim compares the two)")
        _replicates("c5.replicates", c5.get("replicates") or [])
        confirm = c5.get("confirm") or {}
        if confirm.get("criteria") or confirm.get("replicates"):  # c5_confirm's errors are a jackknife too
            _replicates("c5.confirm.replicates", confirm.get("replicates") or [])
            _fresh(c5, confirm.get("replicates") or [])
        _limit_ranges(c5)
    return sigmas


def needs_replicates(key: str, n: int, who: str = "") -> None:
    """At least 2 replicates (the standard errors are a jackknife over them); ``who``: what needs them."""
    if n < 2:
        fail(key, f"{n} replicate; {who + ' needs' if who else 'need'} at least 2 (the standard errors are a "
             "jackknife over replicates)")


def _replicates(key: str, reps: list) -> None:
    """At least 2 replicates (:func:`needs_replicates`), no two with the same seeds."""
    needs_replicates(key, len(reps))
    seen = [(r["seed"], r["init_seed"], r["eval_seed"]) for r in reps]
    if len(set(seen)) < len(seen):
        fail(key, "two replicates with the same seeds (they would be one run counted twice)")


def _fresh(c5: dict, confirm: list) -> None:
    """The confirmatory replicates share no training stream seed and no test-set seed with the
    exploratory ones (c5.replicates and the default run): a shared one would confirm on data seen
    before.  (Initialisations are not compared: their ranges move with c5.restarts.)"""
    explore = [*(c5.get("replicates") or []), {"seed": c5["seed"], "eval_seed": c5["eval"]["seed"]}]
    for i, r in enumerate(confirm):
        for key in ("seed", "eval_seed"):
            if r[key] in {e[key] for e in explore}:
                fail(f"c5.confirm.replicates[{i}].{key}", f"{r[key]} is already used by c5.replicates or the "
                     "default run (c5.seed, c5.eval.seed): a confirmation needs fresh seeds")


def _limit_ranges(c5: dict) -> None:
    """c5.limit's fit ranges ``[low, high]``: low < high; each holds at least 3 of c5.limit.L (a fit of
    K - a/L - b/L^2 has 3 parameters; the family is also fitted over fit_L, as a diagnostic, by
    softlin.claims.c5_limit_report.analyse; the trained fits read the committed replicates' lengths)."""
    lim = c5.get("limit") or {}
    if "L" in lim and sorted(set(lim["L"])) != list(lim["L"]):
        fail("c5.limit.L", "prompt lengths must be strictly increasing")
    for key in ("fit_L", "family_fit_L"):
        if key not in lim:
            continue
        lo, hi = lim[key]
        n = sum(lo <= L <= hi for L in lim.get("L", []))
        if lo >= hi:
            fail(f"c5.limit.{key}", f"[{lo}, {hi}]: need low < high")
        if n < 3:
            fail(f"c5.limit.{key}", f"[{lo}, {hi}] holds {n} of c5.limit.L; need at least 3 (a fit of K - a/L - b/L^2)")


def _unique(key: str, values, what: str):
    seen = set()
    for v in values:
        if v in seen:
            fail(key, f"{what} {v!r} appears twice")
        seen.add(v)


def check_names(cfg: dict) -> None:
    """Setting names and labels in :data:`SAFE_NAME`'s alphabet, and unique per claim: a C3 fit
    block ``<label>_<token_kind>`` names one setting (two settings sharing it would be pooled into
    one fit); the lists that name settings, probes or fractions hold no value twice."""
    for claim in CLAIMS_WITH_SETTINGS:
        settings = (cfg.get(claim) or {}).get("settings") or {}
        for name, st in settings.items():
            if not isinstance(name, str) or not SAFE_NAME.fullmatch(name):
                fail(f"{claim}.settings", f"setting name {name!r} is not allowed (letters, digits, '_', '-'; "
                     "a letter or digit first; at most 64 characters)")
            label = st.get("label")
            if label is not None and not SAFE_NAME.fullmatch(label):
                fail(f"{claim}.settings.{name}.label", f"{label!r} is not allowed (letters, digits, '_', '-')")
    c3 = cfg.get("c3")
    if c3 is not None:
        fits = metric_names.placeholders(cfg)["c3_fit"]
        names = list(c3["settings"])
        for i, f in enumerate(fits):
            if f in fits[:i]:
                other = names[fits.index(f)]
                fail(f"c3.settings.{names[i]}.label",
                     f"settings {other!r} and {names[i]!r} share the fit block {f!r} (label_token_kind; "
                     "identity covariances default to the label 'isotropic'): they would be pooled into one "
                     "fit; give one a distinct label")
    for claim in ("c1", "c4"):
        settings = (cfg.get(claim) or {}).get("settings") or {}
        _unique(f"{claim}.settings", [(st.get("label") or n, st.get("token_kind", "gauss"))
                                      for n, st in settings.items()], "(label, token kind)")
    c1, c2, c4 = cfg.get("c1"), cfg.get("c2"), cfg.get("c4")
    if c1 is not None:
        _unique("c1.probes.scaled_lambda", c1["probes"]["scaled_lambda"], "lambda_max target")
        _unique("c1.exponent.lambda", (c1.get("exponent") or {}).get("lambda") or [], "lambda_max target")
        for name, st in c1["settings"].items():
            _unique(f"c1.settings.{name}.probes.scaled_lambda",
                    (st.get("probes") or {}).get("scaled_lambda") or [], "lambda_max target")
    if c2 is not None:
        _unique("c2.sweep.settings", c2["sweep"]["settings"], "setting")
        _unique("c2.sweep.lambda", c2["sweep"]["lambda"], "lambda_max target")
        _unique("c2.trajectory.settings", c2["trajectory"]["settings"], "setting")
    if c4 is not None:
        _unique("c4.alpha_sweep.fractions", c4["alpha_sweep"]["fractions"], "fraction")
        _unique("c4.n_tasks.n_pairs", c4["n_tasks"]["n_pairs"], "number of pairs")
    for claim in metric_names.METRICS:
        sec = cfg.get(claim) or {}
        ids = [c.get("id") for kind in ("criteria", "consistency_checks") for c in sec.get(kind) or []]
        _unique(f"{claim}.criteria", ids, "criterion id")


def check_seed_log(cfg: dict) -> None:
    """With ``c3.compare_seed_log``, each id of ``c3.seed_log_outcome`` names a c3 criterion or
    consistency check (the seed log's outcome is evaluated criterion by criterion)."""
    c3 = cfg.get("c3") or {}
    if not c3.get("compare_seed_log"):
        return
    ids = {c.get("id") for kind in ("criteria", "consistency_checks") for c in c3.get(kind) or []}
    for cid in c3.get("seed_log_outcome") or {}:
        if cid not in ids:
            fail("c3.seed_log_outcome", f"{cid!r} is no c3 criterion or consistency check id "
                 "(the seed log's outcome is evaluated criterion by criterion)")


def check_tests(cfg: dict) -> None:
    """Each test's ``value`` of the shape its ``op`` needs: ``between`` / ``outside`` a band
    ``[low, high]`` with ``low < high``, every other operator one number."""
    for claim in metric_names.METRICS:
        sec = cfg.get(claim) or {}
        for kind in ("criteria", "consistency_checks"):
            for crit in sec.get(kind) or []:
                for part in ("all", "inconclusive_unless"):
                    for test in crit.get(part) or []:
                        op, v = test["op"], test["value"]
                        where = f"{claim}.{kind}"
                        what = f"{crit.get('id', '?')}'s test on {test['measured']!r}"
                        if op in BAND_OPS:
                            if not isinstance(v, list):
                                fail(where, f"{what}: op {op!r} needs value [low, high], got {v!r}")
                            if not v[0] < v[1]:
                                fail(where, f"{what}: the band {v!r} needs low < high")
                        elif isinstance(v, list):
                            fail(where, f"{what}: op {op!r} needs one number, got {v!r}")


def check_guards(cfg: dict) -> None:
    """The tests behind a precondition keep their power (docs/faults.md#guards): C5's plateau window
    (the last ``window_frac`` of the log) holds at least :data:`MIN_WINDOW_POINTS` log points and the
    end slope it can flag, ``max_rel_drop / window_frac``, is at most :data:`MAX_END_RATE`; C5's
    ``reference_tol`` is at most :data:`MAX_REFERENCE_TOL`; C4's ``tol`` at most :data:`MAX_C4_TOL`;
    C3d's growth test no looser than :data:`MAX_C3_OFFBLOCK`."""
    rate = (cfg.get("c3") or {}).get("offblock_rate") or {}
    for key, bound in MAX_C3_OFFBLOCK.items():
        if key in rate and rate[key] > bound * (1 + 1e-9):
            fail(f"c3.offblock_rate.{key}", f"{rate[key]:g} > {bound:g}: fewer runs would count as growing, so C3d "
                 "(the fraction of seeds whose off-block mass grows < 1/2) could pass on growth it no longer sees "
                 "(the predeclared value is the bound; tighter is free)")
    c4 = cfg.get("c4")
    if c4 is not None and c4["tol"] > MAX_C4_TOL * (1 + 1e-9):
        fail("c4.tol", f"{c4['tol']:g} > {MAX_C4_TOL:g}: a flow that stops short of theta* would count as reaching it, "
             "moving C4c's boundary alpha_c up (the distance C4a and C4c require is 1e-6; tighter is free)")
    c5 = cfg.get("c5")
    if c5 is None:
        return
    conv = c5["convergence"]
    n_log = c5["steps"] // c5["log_every"]
    if conv["window_frac"] * n_log < MIN_WINDOW_POINTS - 1e-9:
        fail("c5.convergence.window_frac", f"{conv['window_frac']:g} x {n_log} logged losses is fewer than "
             f"{MIN_WINDOW_POINTS} points: the flatness test would fit a shorter window than it scales its "
             "drop to, and 'flat' would hold for any run")
    if conv["reference_tol"] > MAX_REFERENCE_TOL * (1 + 1e-9):
        fail("c5.convergence.reference_tol", f"{conv['reference_tol']:g} > {MAX_REFERENCE_TOL:g}: a run whose test risk "
             "exceeds its reference by more than the 5% gap C5a measures would count as converged (the "
             "precondition of C5a, e and f; docs/faults.md#guards)")
    rate = conv["max_rel_drop"] / conv["window_frac"]
    if rate > MAX_END_RATE * (1 + 1e-9):
        fail("c5.convergence.window_frac", f"max_rel_drop / window_frac = {rate:.3g} > {MAX_END_RATE:g}: the "
             "flatness test would pass a run still falling by that fraction of its loss per training length "
             "(widen the window or lower max_rel_drop; docs/faults.md#guards)")
