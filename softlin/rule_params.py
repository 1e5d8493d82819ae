"""The per-claim parameters the rules read (C1-C5 settings, C3 seeds, C5 groups and replicates).

:class:`RuleParams` binds them to one validated config; ``workflow/rules/common.smk`` puts its
methods (:data:`EXPORTED`) in the Snakefile's namespace under the same names, so a rule calls
``c3_runs()`` or ``c5_replicate_dir(name)``.  Nothing here imports Snakemake.
"""

from __future__ import annotations

import inspect

import numpy as np

from . import config_check, config_cost
from .claims import c5_protocol as c5_protocol_text

C5_TASK_KEYS = ("d", "kms_rho", "noise_var", "w_var", "covariance_mode", "sample_dtype")
C5_TRAIN_KEYS = C5_TASK_KEYS + ("parametrisation", "models", "seed", "init_seed", "restarts",
                                "restart_select_frac", "steps", "batch", "optimizer", "streams",
                                "log_every", "chunk")
EXPORTED = ("c3_runs", "c3_setting", "claim_setting", "c5_train_config", "c5_record_config",
            "c5_metrics_config", "c5_replicates", "c5_confirm_replicates", "c5_any_replicate", "c5_is_default",
            "c5_replicate_dir", "c5_replicate_train_config", "c5_replicate_metrics_config",
            "c5_groups", "c5_runtime_min", "c5_mem_mb", "c5_protocol", "c5_section", "c5_sets", "c5_set_members")


BY_NAME = "by_name"  # the params entry that carries the names (:func:`named`)
DERIVING_ARGS = {"input", "output", "threads", "resources"}  # a params function naming one is derived


def _is_derived(value):
    """Whether Snakemake derives a param from the job (a function of input / output / threads /
    resources): it records no such param, and a change of those reruns the job anyway."""
    return callable(value) and bool(DERIVING_ARGS & set(inspect.signature(value).parameters))


def named(**params):
    """A rule's ``params`` plus the entry ``by_name``: ``{name: value}`` of its non-derived params.

    Snakemake records a job's params as the set of their values' reprs, names dropped, so a change
    that keeps that set (one param taking another's value) plans no rerun; ``by_name``'s repr
    pairs each value with its name.  With a function of the wildcards among them, ``by_name`` is
    itself one (of ``wildcards`` only, so Snakemake records it); derived params are left out.
    Use: ``params: **named(a=..., b=...)``.  ``params``: name -> value or function."""
    if BY_NAME in params:
        raise ValueError(f"params: the name {BY_NAME!r} is reserved for softlin.rule_params.named")
    kept = {k: v for k, v in params.items() if not _is_derived(v)}
    if not any(callable(v) for v in kept.values()):
        return {**params, BY_NAME: kept}

    def by_name(wildcards):
        return {k: v(wildcards) if callable(v) else v for k, v in kept.items()}

    return {**params, BY_NAME: by_name}


def pow2_range(cfg):
    """Nested prompt lengths 2^log2_L_min .. 2^log2_L_max of a claim's config section."""
    return [2 ** j for j in range(cfg["log2_L_min"], cfg["log2_L_max"] + 1)]


def c5_group_name(Ls):
    """Wildcard value of a group: '10' for one length, '10+20+30' for several."""
    return "+".join(str(L) for L in Ls)


def c5_group_Ls(name):
    """The prompt lengths of a group's wildcard value (:func:`c5_group_name`'s inverse)."""
    return [int(L) for L in name.split("+")]


def _c5_named(entries):
    """Replicate entries as ``{name: {seed, init_seed, eval_seed}}`` (name ``s2026_i10_e31338``)."""
    return {f"s{r['seed']}_i{r['init_seed']}_e{r['eval_seed']}": dict(r) for r in entries}


class RuleParams:
    """The rules' parameters of one validated ``config`` and its checked covariances ``sigmas``."""

    def __init__(self, config: dict, sigmas: dict):
        self.config, self.sigmas = config, sigmas

    # ----------------------------------------------------------------------- C3
    def c3_runs(self, n_seed=None):
        """(setting, seed) pairs of C3; ``n_seed``: ``{setting: seeds}`` instead of each setting's own
        (c3.replicates: the same seed0 and stride, so the default's seeds come first)."""
        c3 = self.config["c3"]
        return [(name, c3["seed0"] + c3["seed_stride"] * i)
                for name, st in c3["settings"].items() for i in range((n_seed or {}).get(name, st["n_seed"]))]

    def c3_setting(self, name):
        """The resolved description of one C3 setting (label, token kind, covariance as a nested list)."""
        st = self.config["c3"]["settings"][name]
        s = self.sigmas[("c3", name)]
        label = st.get("label") or ("isotropic" if np.array_equal(s, np.eye(len(s))) else name)
        # (no n_seed here: it is not a property of one seed's run, and as a param it made a change of
        # n_seed resample and retrain every existing seed of the setting)
        return {"name": name, "label": label, "token_kind": st.get("token_kind", "gauss"),
                "sigma": s.tolist()}

    # ----------------------------------------------------------------------- C1 / C2 / C4
    def claim_setting(self, claim, name):
        """Resolved setting of claim c1 / c4: name, label, token kind, covariance (nested list), probe overrides."""
        st = self.config[claim]["settings"][name]
        s = self.sigmas[(claim, name)]
        return {"name": name, "label": st.get("label") or name, "token_kind": st.get("token_kind", "gauss"),
                "sigma": s.tolist(), "probes": st.get("probes") or {}}

    # ----------------------------------------------------------------------- C5
    def c5_section(self, keys):
        """The C5 keys a job reads (``w_var: null`` stays null: softlin.online_task.make_task defaults it to 1/d)."""
        return {k: self.config["c5"][k] for k in keys}

    def c5_train_config(self):
        """The C5 settings a training job reads: the task law and the optimiser, nothing else (so a
        change of the test set, the criteria or the L list reruns no finished training)."""
        return self.c5_section(C5_TRAIN_KEYS)

    def c5_record_config(self):
        """The C5 settings the shape of a training job's record depends on (softlin.claims.c5.job_like)."""
        return self.c5_section(("d", "parametrisation", "models", "restarts", "steps", "log_every"))

    def c5_metrics_config(self):
        """The C5 settings the metrics job reads: the task law, the L list, the test set, the
        convergence rule."""
        return self.c5_section(C5_TASK_KEYS + ("L", "models", "eval", "convergence", "optimizer", "steps"))

    def c5_replicates(self):
        """The c5.replicates entries as ``{name: {seed, init_seed, eval_seed}}`` (name ``s2026_i10_e31338``)."""
        return _c5_named(self.config["c5"]["replicates"])

    def c5_confirm_replicates(self):
        """The c5.confirm.replicates entries (fresh seeds, target c5_confirm), named as :meth:`c5_replicates`'."""
        return _c5_named(self.config["c5"].get("confirm", {}).get("replicates", []))

    def c5_sets(self):
        """The sets of replicates, ``{set: {name: seeds}}``: ``c5_replicates`` (c5.replicates) and
        ``c5_confirm`` (c5.confirm.replicates)."""
        return {"c5_replicates": self.c5_replicates(), "c5_confirm": self.c5_confirm_replicates()}

    def c5_set_members(self, c5_set):
        """The replicate names of a set of :meth:`c5_sets`, at least 2 of them: called from an input
        function, so that planning c5_confirm without replicates (c5.confirm.replicates empty and no
        criteria, which the config check allows) stops the dry run naming the key."""
        key = {"c5_replicates": "c5.replicates", "c5_confirm": "c5.confirm.replicates"}[c5_set]
        names = list(self.c5_sets()[c5_set])
        config_check.needs_replicates(key, len(names), f"the target {c5_set}")
        return names

    def c5_any_replicate(self, name):
        """One replicate's seeds, exploratory (c5.replicates) or confirmatory (c5.confirm.replicates)."""
        return {**self.c5_confirm_replicates(), **self.c5_replicates()}[name]

    def c5_is_default(self, rep):
        """Whether the replicate ``rep`` has the default run's seeds (c5.seed, c5.init_seed, c5.eval.seed)."""
        c5 = self.config["c5"]
        return (rep["seed"], rep["init_seed"], rep["eval_seed"]) == (c5["seed"], c5["init_seed"], c5["eval"]["seed"])

    def c5_replicate_dir(self, name):
        """Where a replicate's results are: the default run's own (results/c5) for the replicate equal to
        the default settings, else results/c5_replicates/<name>."""
        return "results/c5" if self.c5_is_default(self.c5_any_replicate(name)) else f"results/c5_replicates/{name}"

    def c5_replicate_train_config(self, name):
        """The training settings of a replicate: :meth:`c5_train_config` with its seed and init_seed."""
        rep = self.c5_any_replicate(name)
        return {**self.c5_train_config(), "seed": rep["seed"], "init_seed": rep["init_seed"]}

    def c5_replicate_metrics_config(self, name):
        """The metrics settings of a replicate: :meth:`c5_metrics_config` with its test-set seed."""
        cfg = self.c5_metrics_config()
        return {**cfg, "eval": {**cfg["eval"], "seed": self.c5_any_replicate(name)["eval_seed"]}}

    def c5_groups(self):
        """The prompt-length groups of the training jobs: consecutive runs of ``c5.L_per_job``
        lengths (0: all lengths in one job, the layout that draws each batch once)."""
        Ls, k = self.config["c5"]["L"], self.config["c5"]["L_per_job"]
        k = k or len(Ls)
        return [Ls[i:i + k] for i in range(0, len(Ls), k)]

    def c5_runtime_min(self, Ls):
        """Minutes a c5_train job may take: 1.5 x the CPU prediction on the job's threads +
        compilation; on a GPU far less (the CPU seconds of one joint step: softlin.config_cost)."""
        c5 = self.config["c5"]
        return 5 + int(1.5 * config_cost.c5_train_seconds(c5, Ls) / c5["threads"] / 60)

    def c5_mem_mb(self, Ls):
        """Memory (MB) a c5_train job of the group ``Ls`` asks for (softlin.config_cost)."""
        return config_cost.c5_mem_mb(self.config["c5"], Ls)

    def c5_protocol(self):
        """What the figure and the verdict print about the run."""
        c5 = self.config["c5"]
        keys = ("d", "kms_rho", "noise_var", "covariance_mode", "parametrisation", "batch", "optimizer",
                "restarts", "streams", "steps", "L", "scaled_down", "deviation", "sample_dtype", "log_every",
                "description")
        out = {k: c5[k] for k in keys}
        out["deviation"] = c5_protocol_text.deviation(c5)  # from the settings, never c5.deviation's free text
        out["n_test"] = c5["eval"]["n_test"]
        out["convergence"] = dict(c5["convergence"])
        return out

    def exported(self) -> dict:
        """``{name: bound method}`` of :data:`EXPORTED`, for the Snakefile's namespace."""
        return {name: getattr(self, name) for name in EXPORTED}
