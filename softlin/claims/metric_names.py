"""The metric paths each claim's metrics JSON defines: what a criterion's ``measured`` may name.

The workflow checks every ``criteria`` and ``consistency_checks`` test of the config against this
registry when it parses the config (``workflow/rules/common.smk``), so a misspelt ``measured``
stops ``snakemake -n`` with one line naming the criterion and the path, before any job runs,
instead of failing in the verdict job after all training.

Each claim has a list of patterns, dotted like the paths (:func:`softlin.verdict.lookup`):

* a plain segment matches itself;
* ``{name}`` matches one of the values :func:`placeholders` gives for ``name`` from the config
  (a setting of the claim, a fit block ``<label>_<token_kind>``, a C5 run ``softmax_L10``);
* ``*`` matches any one segment (a name computed by the metrics job, e.g. a C1 probe
  ``isotropic/star_x0.779``);
* ``{a,b,c}`` (a brace list of literals) matches any one of them;
* a segment ending in ``?se`` (``slope?se``) also matches its standard-error sibling
  ``slope_se``: see :data:`SE`.

To add a metric, add its pattern here (a test checks that every criterion of config.yaml and of
every preset matches, and that the patterns match the metrics a smoke run writes).  A metric that
exists only under some options (a probe switched on, the seed-order runs, four prompt lengths)
also gets an entry in :data:`REQUIRES`, so a criterion reading it under other options is refused
at parse time with the option it needs.
"""

from __future__ import annotations

import re

from . import registry

# leaves of one fit of a decay (softlin.metrics: slope over L and its diagnostics)
_FIT = "{slope,slope_se,slope_full,slope_full_se,fit_L,n_increases,first,last,ratio,slope_last4," \
       "slope_last4_se,rel_se_max,rel_se_last,last_over_se,slope_plus_beta,max}"
_PROBE = "{setting,token_kind,probe,kind,s,lambda_max,beta,pred_slope,below_threshold}"
_C3_SERIES = ("D_inf_max", "D_linL_max", "R_pop_at_L", "dist_bayes")
_C3_FIT = "{" + ",".join(
    [f"{k}_{x}" for x in _C3_SERIES for k in ("slope", "monotone", "n_increases", "n_sig_increases", "diff")]
    + [f"slope_{x}_ols_se" for x in _C3_SERIES]
    + [f"slope_{x}_se" for x in _C3_SERIES]
    + [f"{x}_{k}" for x in _C3_SERIES for k in ("first", "last", "ratio")]
    + ["config", "slope_last4_D_inf_max", "slope_last4_D_inf_max_se", "D_inf_max_small_over_large",
       "D_inf_max_rel_to_theta", "R_pop_rel_to_init", "offblock_softmax_max"]) + "}"
_C4_SETTING = "{setting,label,alpha,alpha_max,t_max,ode_dist_final,gd_dist_final,sampled_dist_final," \
              "ode_risk_final,gd_risk_final,risk_init,ode_conservation_max,gd_conservation_max," \
              "sampled_conservation_max,ode_offblock_max,gd_offblock_max,ode_vs_reduced_max," \
              "sampled_gap_max,ode_nfev,ode_reaches_star,gd_reaches_star,ntasks_slope,ntasks_slope_se," \
              "ntasks_n_tasks,ntasks_gap_mean,ntasks_gap_se}"
_C5_EXCESS = "{excess_rel_at_Lmax,excess_rel_at_Lmin,excess_ratio,R_at_Lmax,R_at_Lmin,excess_L_at_Lmax}"
_C5_RUN = "{initial,final,escape_step,rel_drop_end,reference,risk,risk_over_reference,converged,init_seed," \
          "converged_by_old_rule,flat,n_window,rel_drop_end_old_rule,risk_minus_tol_reference,status," \
          "within_reference}"

METRICS: dict[str, list[str]] = {
    "c1": [
        f"fits.{{c1_setting}}/*.{_FIT}", f"fits.{{c1_setting}}/*.{_PROBE}",
        "summary.gauss_all.n", "summary.gauss_all.{n_increases,ratio}.*",
        "summary.{gauss_below,gauss_above}.n",
        "summary.{gauss_below,gauss_above}.{dev,slope,rel_se_max}",
        "summary.{gauss_below,gauss_above}.{dev,slope,rel_se_max}.*",
        "summary.gauss_all.{n_increases,ratio}",
        "summary.exponent.{lambda_max,pred_slope,band_low,band_high,slope,slope_se,fit_L,shallowing,shallowing_df}",
        "summary.exponent.{above_low,above_high}", "summary.exponent.{above_low,above_high}.*",
        "protocol.*",
    ],
    "c2": [
        f"fits.{{c1_setting}}/*.{_PROBE}",
        f"fits.{{c1_setting}}/*.{{U,v,pooled_U,pooled_v,blockrms_U,blockrms_v}}.{_FIT}",
        "summary.{U,v}.{n_increases,ratio}", "summary.{U,v}.{n_increases,ratio}.*",
        "summary.{U,v}.{above,below}.n",
        "summary.{U,v}.above.{dev,slope}", "summary.{U,v}.above.{dev,slope}.*",
        "summary.{U,v}.below.{dev,rel_se_max}", "summary.{U,v}.below.{dev,rel_se_max}.*",
        "sweep.{c2_sweep}.{lambda_max,pred_slope}",
        "sweep.{c2_sweep}.{U,v}.{dev,dev_below_max_abs,dev_max_abs,shallowing,slope,slope_above_min,"
        "slope_full,slope_se}",
        "sweep.{c2_sweep}.{U,v}.dev.*",
        "trajectory.{c2_trajectory}.seed_log_slope",
        f"trajectory.{{c2_trajectory}}.{{U,v,full}}.{_FIT}",
        "protocol.*",
    ],
    "c3": [
        f"fits.{{c3_fit}}.{_C3_FIT}",
        "offblock.{limit_max,softmax_max}",
        "offblock.seed_order.{limit_max,softmax_max,limit_max_along,softmax_max_along,softmax_above_1e-12,runs}",
        "offblock.seed_order.{rate,peak_rate,limit_final,final,n_seed,n_grow,grow_frac}",
        "offblock.seed_order.{rate,peak_rate,limit_final,final,n_seed,n_grow,grow_frac}.*",
        "seed_log.{n_compared,n_mismatch,outcome_n_differ}",
        "L", "L.*", "protocol.*", "protocol.eval.*",
    ],
    "c4": [
        f"settings.{{c4_setting}}.{_C4_SETTING}",
        "summary.{ode_dist_final_max,gd_dist_final_max,ode_conservation_max,gd_conservation_max,"
        "ode_vs_reduced_max,offblock_max,ntasks_slope,alpha_admissible_n,"
        "alpha_admissible_converged,alpha_admissible_unconverged,alpha_admissible_dist_max,"
        "alpha_beyond_n,alpha_beyond_converged,alpha_all_converged,alpha_c_ratio}",
        "summary.{ntasks_slope,alpha_c_ratio}.*",
        "protocol.*", "protocol.*.*",
    ],
    "c5": [
        "{L_min,L_max,gap_rel_at_Lmax,gap_rel_at_Lmin,gap_abs_low_third,gap_abs_high_third,"
        "gap_shrink_ratio,n_below_bayes_3se,R_inf_test,R_inf_exact,replication,n_blocks,gap_slope_top_third,"
        "gap_L_at_Lmax,gap_L_over_predicted_at_Lmax,predicted_gap_constant,"
        "excess_ratio_softmax_over_linear_at_Lmax,n_seeds,seeds}",
        "{gap_L,gap_rel,gap_L_over_predicted}", "{gap_L,gap_rel,gap_L_over_predicted}{,_se}.*",
        "L", "L.*",
        f"{{softmax,linear}}.{_C5_EXCESS}",
        "convergence.{n_runs,n_unconverged,n_never_escaped,rel_drop_end_max,worst_run,n_failed,n_undecided,"
        "n_flat_undecided}",
        f"convergence.runs.{{c5_run}}.{_C5_RUN}",
    ],
}
SE = "_se"  # every leaf X may also be named X_se (its standard error), where the metrics define one
# ... and what the decision rule reads beside it (softlin/verdict.py): degrees of freedom, a count's
# rises and their errors, the flag of an error known to be a lower bound
SIBLINGS = (SE, "_df", "_rises", "_rises_se", "_se_lower_bound")


def _probe_present(claim: str):
    """A C1 / C2 fit ``fits.<setting>/<probe>`` exists only where the setting probes it
    (``c1.probes`` with the setting's overrides: ``eq9``, ``star``)."""
    def need(cfg: dict, path: str) -> str | None:
        setting, _, probe = path.split(".")[1].partition("/")
        c1 = cfg.get("c1") or {}
        st = (c1.get("settings") or {}).get(setting) or {}
        on = {**(c1.get("probes") or {}), **(st.get("probes") or {})}
        if probe in ("eq9", "star") and not on.get(probe, True):
            return f"needs the probe {probe!r} of c1 setting {setting!r} (c1.probes.{probe} or " \
                   f"c1.settings.{setting}.probes.{probe} is false)"
        return None
    return need


def _probe_lambdas(cfg: dict, star: bool) -> list[float]:
    """lambda_max(M) of the Gaussian C1 probes (eq9: 1 / (2 d^3/2) at every covariance of dimension
    d, by its scale; the scaled probes: their targets; theta*, if ``star``: computed, which imports JAX)."""
    c1 = cfg["c1"]
    out = []
    for st in c1["settings"].values():
        if st.get("token_kind", "gauss") != "gauss":
            continue
        on = {**c1["probes"], **(st.get("probes") or {})}
        out += [0.5 * len(st["sigma"]) ** -1.5] * bool(on["eq9"]) + list(on["scaled_lambda"])
        if on["star"] and star:
            import numpy as np

            from ..concentration import probe_design  # JAX: only for a config that needs it

            a = np.asarray(st["sigma"], dtype=float)
            out += [p["lambda_max"] for p in probe_design(np.diag(a) if a.ndim == 1 else a, eq9=False)]
    return out


def _c1_side(below: bool):
    """``summary.gauss_below`` / ``gauss_above`` exist where a Gaussian probe lies on that side of 1/2."""
    def need(cfg, path):
        if any((lam < 0.5) == below for lam in _probe_lambdas(cfg, star=False)):
            return None
        lams = _probe_lambdas(cfg, star=True)
        if not any((lam < 0.5) == below for lam in lams):
            return (f"needs a Gaussian c1 probe with lambda_max(M) {'<' if below else '>='} 1/2 "
                    f"(c1.probes; the probes' lambda_max: {', '.join(f'{x:.3g}' for x in sorted(lams)) or 'none'})")
        return None
    return need


def _c1_exponent(cfg, path):
    n = len((cfg["c1"].get("exponent") or {}).get("lambda") or [])
    return None if n >= 2 else f"needs at least 2 c1.exponent.lambda values (the sweep across the threshold), has {n}"


def _three_blocks(claim: str):
    """``last_over_se`` (the last point over its own jackknife s.e., :func:`softlin.claims.curves.jackknife_shape`)
    exists with 3 or more task blocks (an inner jackknife on every delete-one replicate)."""
    def need(cfg, path):
        n = cfg[claim]["n_blocks"]
        return None if n >= 3 else f"needs {claim}.n_blocks >= 3 (the inner jackknife of last_over_se), has {n}"
    return need


def _c3_seed_order(cfg, path):
    if not cfg["c3"].get("offblock_seed_order", True):
        return "needs c3.offblock_seed_order: true (the runs trained without pair summation)"
    return None


def _c3_last4(cfg, path):
    n = len(cfg["c3"]["L"])
    return None if n >= 4 else f"needs at least 4 prompt lengths in c3.L (a slope over the last four), has {n}"


def _c4_fractions(admissible: bool):
    def need(cfg, path):
        fr = cfg["c4"]["alpha_sweep"]["fractions"]
        if admissible and not any(f < 1 for f in fr):
            return "needs a c4.alpha_sweep.fractions entry < 1 (an admissible alpha); with none the test is vacuous"
        if not admissible and not any(f >= 1 for f in fr):
            return "needs a c4.alpha_sweep.fractions entry >= 1 (beyond the admissible interval)"
        return None
    return need


# Where a metric exists only under some options: ``{claim: [(pattern, need)]}``, the pattern in
# :data:`METRICS`' language (it matches a path and everything below it), ``need(cfg, path)`` None
# where the metric exists, else the reason it does not (checked with the names, :func:`check_config`)
REQUIRES: dict[str, list] = {
    "c1": [("fits.*", _probe_present("c1")), ("fits.*.last_over_se", _three_blocks("c1")),
           ("summary.gauss_below.{dev,slope,rel_se_max}", _c1_side(True)),
           ("summary.gauss_above.{dev,slope,rel_se_max}", _c1_side(False)), ("summary.exponent", _c1_exponent)],
    "c2": [("fits.*", _probe_present("c2")), ("fits.*.*.last_over_se", _three_blocks("c2")),
           ("summary.*.below.{dev,rel_se_max}", _c1_side(True)),
           ("summary.*.above.{dev,slope}", _c1_side(False))],  # C2's summary: C1's probes
    "c3": [("offblock.seed_order", _c3_seed_order),
           ("fits.*.{slope_last4_D_inf_max}", _c3_last4)],
    "c4": [("summary.alpha_admissible_*", _c4_fractions(True)),
           ("summary.alpha_beyond_*", _c4_fractions(False))],
    "c5": [],
}


def placeholders(cfg: dict) -> dict[str, list[str]]:
    """Values of the ``{name}`` placeholders of :data:`METRICS` for a validated config."""
    out: dict[str, list[str]] = {}
    c1 = cfg.get("c1") or {}
    out["c1_setting"] = list((c1.get("settings") or {}))
    c2 = cfg.get("c2") or {}
    both = ["isotropic", "anisotropic"]  # the schema's defaults, for a config not yet validated
    out["c2_sweep"] = list((c2.get("sweep") or {}).get("settings", both))
    out["c2_trajectory"] = list((c2.get("trajectory") or {}).get("settings", both))
    c3 = cfg.get("c3") or {}
    fits = []
    for name, st in (c3.get("settings") or {}).items():
        sigma = st.get("sigma")
        iso = sigma is not None and _is_identity(sigma)
        label = st.get("label") or ("isotropic" if iso else name)
        fits.append(f"{label}_{st.get('token_kind', 'gauss')}")
    out["c3_fit"] = fits
    out["c4_setting"] = list(((cfg.get("c4") or {}).get("settings")) or {})
    c5 = cfg.get("c5") or {}
    out["c5_run"] = [f"{m}_L{L}" for m in c5.get("models", ()) for L in c5.get("L", ())]
    return out


def _is_identity(sigma) -> bool:
    import numpy as np

    a = np.asarray(sigma, dtype=float)
    a = np.diag(a) if a.ndim == 1 else a
    return bool(np.array_equal(a, np.eye(len(a))))


def _segment_regex(seg: str, values: dict[str, list[str]]) -> str:
    if seg == "*":
        return r"[^.]+"
    parts, pos = [], 0
    for m in re.finditer(r"\{([^{}]*)\}", seg):
        parts.append(re.escape(seg[pos:m.start()]))
        inner = m.group(1)
        alts = values[inner] if inner in values else inner.split(",")
        parts.append("(?:" + "|".join(re.escape(a) for a in alts) + ")" if alts else "(?!)")
        pos = m.end()
    parts.append(re.escape(seg[pos:]))
    return "".join(parts).replace(r"\*", r"[^.]*")


def _split(pattern: str) -> list[str]:
    """Dotted segments of a pattern (dots inside braces do not split)."""
    out, depth, cur = [], 0, ""
    for ch in pattern:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "." and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def alternatives(claim: str, cfg: dict) -> dict[str, re.Pattern]:
    """Every name of :data:`METRICS` with its brace lists of literals expanded (one entry per
    alternative, ``{placeholders}`` and ``*`` kept): ``{name: regex of it and everything below it}``,
    for checking that a metrics file defines each (tests/test_workflow.py)."""
    import itertools

    values = placeholders(cfg)
    out = {}
    for pattern in METRICS[claim]:
        parts = re.split(r"(\{[^{}]*\})", pattern)
        opts = [p[1:-1].split(",") if p.startswith("{") and p[1:-1] not in values else [p] for p in parts]
        for combo in itertools.product(*opts):
            name = "".join(combo)
            out[name] = re.compile(r"\.".join(_segment_regex(s, values) for s in _split(name)) + r"(?:\..*)?")
    return out


def compile_patterns(claim: str, cfg: dict) -> list[re.Pattern]:
    """Regular expressions of the paths ``claim`` defines under ``cfg`` (KeyError: unknown claim)."""
    values = placeholders(cfg)
    out = []
    for pattern in METRICS[claim]:
        segs = [_segment_regex(s, values) for s in _split(pattern)]
        segs[-1] = f"(?:{segs[-1]})(?:{'|'.join(re.escape(x) for x in SIBLINGS)})?"
        out.append(re.compile(r"\.".join(segs)))
    return out


def unknown_paths(claim: str, cfg: dict, paths) -> list[str]:
    """The paths of ``paths`` that ``claim`` does not define."""
    pats = compile_patterns(claim, cfg)
    return [p for p in paths if not any(r.fullmatch(p) for r in pats)]


def missing_reason(claim: str, cfg: dict, path: str) -> str | None:
    """Why the metric ``path`` of ``claim`` is not computed under ``cfg`` (:data:`REQUIRES`), or None."""
    values = placeholders(cfg)
    for pattern, need in REQUIRES[claim]:
        regex = r"\.".join(_segment_regex(s, values) for s in _split(pattern))
        if re.fullmatch(f"(?:{regex})(?:{re.escape(SE)})?(?:\\..*)?", path):
            why = need(cfg, path)
            if why:
                return why
    return None


def check_config(cfg: dict) -> None:
    """ValueError (one line: claim, criterion, path) for the first ``measured`` of a criterion or a
    consistency check that names no metric of its claim, or one its claim does not compute under
    the configured options (:data:`REQUIRES`)."""
    for claim in registry.IDS:  # every registered claim has its patterns here (KeyError otherwise)
        sec = cfg.get(claim)
        if not sec:
            continue
        pats = compile_patterns(claim, cfg)
        for kind in ("criteria", "consistency_checks"):
            for crit in sec.get(kind) or []:
                for part in ("all", "inconclusive_unless"):
                    for test in crit.get(part) or []:
                        path = test.get("measured", "")
                        if not any(r.fullmatch(path) for r in pats):
                            raise ValueError(
                                f"config key '{claim}.{kind}': {crit.get('id', '?')} measures {path!r}, "
                                f"which no {claim} metric defines (registry: softlin/claims/metric_names.py)")
                        why = missing_reason(claim, cfg, path)
                        if why:
                            raise ValueError(f"config key '{claim}.{kind}': {crit.get('id', '?')} measures "
                                             f"{path!r}, which {why}")
