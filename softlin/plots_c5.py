"""C5's figures (matplotlib, Agg): test risk against L with the first-order prediction, the
replicates, the training curves; PNG and PDF side by side (:func:`softlin.plots.save`)."""

from __future__ import annotations

import numpy as np

from .claims.c5_protocol import describe
from .plots import matplotlib, plt, save


def _c5_title(protocol: dict, note: str) -> str:
    head = (f"C5 (paper Sec. 6): d = {protocol['d']}, KMS {protocol['kms_rho']}, "
            f"noise {protocol['noise_var']}, {protocol['parametrisation']}, covariance "
            f"{protocol['covariance_mode']}, batch {protocol['batch']}, {describe(protocol, short=True)}"
            f", {protocol['streams']} stream, {protocol['n_test']} test prompts")
    if protocol.get("deviation"):
        head += f"\nDEVIATION FROM THE PAPER: {protocol['deviation']}"
    if protocol.get("scaled_down"):
        head += f"\nSCALED DOWN: {len(protocol['L'])} prompt lengths, {protocol['steps']} steps"
    return head + note


def c5_risk_vs_L(table, metrics: dict, note: str, protocol: dict, curves: dict, png, pdf) -> None:
    """C5 (paper Sec. 6): test risk vs L of trained softmax / linear attention, baselines, noise
    floor; the paired gap; per-run convergence (escape step, final flatness). ``curves``: per
    curve key (softmax, linear, ridge, gd, limit_opt) its ``label``, ``color`` and ``marker``."""
    fig, ax = plt.subplots(1, 4, figsize=(22, 4.8))
    L = table["L"].to_numpy()
    for key in ("softmax", "linear", "ridge", "gd", "limit_opt"):
        cv = curves[key]
        ax[0].errorbar(L, table[f"R_{key}"], yerr=table[f"R_{key}_se"], marker=cv["marker"], ms=4, capsize=2,
                       color=cv["color"], label=cv["label"], lw=1.5 if key in ("softmax", "linear") else 1)
    for key in ("softmax", "linear"):
        ax[0].plot(L, table[f"R_{key}_at_inf"], ls=":", color=curves[key]["color"], lw=1,
                   label=f"trained {key} params at L = inf")
    ax[0].plot(L, table["R_gd_closed"], "k--", lw=0.8, label="one-step GD, closed form")
    ax[0].plot(L, table["R_linear_class_closed"], color=curves["linear"]["color"], ls="--", lw=0.8,
               label="linear class optimum, closed form")
    ax[0].plot(L, table["R_softmax_ref"], color=curves["softmax"]["color"], ls="--", lw=0.8,
               label="softmax reference family (test set)")
    ax[0].axhline(metrics["R_inf_exact"], color="k", lw=1, label=f"noise floor {metrics['R_inf_exact']}")
    ax[0].set_xscale("log")
    ax[0].set_yscale("log")
    ax[0].set_xlabel("prompt length L")
    ax[0].set_ylabel("test mean squared error")
    ax[0].set_title("test risk vs L")
    gap_vs_prediction(ax[1], ax[2], L, table["gap"].to_numpy(), table["gap_se"].to_numpy(),
                      metrics.get("prediction"), "test-sampling se (paired)")
    ax = [ax[0], ax[1], ax[3]]
    runs = metrics["convergence"]["runs"]
    steps = protocol["steps"]
    for model in ("softmax", "linear"):
        c, mk = curves[model]["color"], curves[model]["marker"]
        esc = [runs[f"{model}_L{x}"]["escape_step"] for x in L]
        ok = [runs[f"{model}_L{x}"]["converged"] for x in L]
        y = [e if e is not None else steps for e in esc]
        ax[2].scatter(L, y, marker=mk, facecolors=[c if o else "none" for o in ok], edgecolors=c,
                      label=f"{model} (filled: converged = within its class reference, not shown still falling)")
    ax[2].axhline(steps, color="gray", ls="--", lw=0.8, label="end of training (never escaped)")
    ax[2].set_xscale("log")
    ax[2].set_xlabel("prompt length L")
    ax[2].set_ylabel("escape step: loss below half its first value")
    ax[2].set_title(f"convergence (C5c): {metrics['convergence']['n_unconverged']} of "
                    f"{metrics['convergence']['n_runs']} runs not converged")
    for a in fig.axes:
        a.grid(alpha=0.3, which="both")
    ax[0].legend(fontsize=6.5)
    ax[2].legend(fontsize=6.5)
    title = _c5_title(protocol, note)
    fig.suptitle(title, fontsize=9, y=1.02 + 0.03 * title.count("\n"))
    save(fig, png, pdf)


def gap_vs_prediction(ax_gap, ax_gl, L, gap, se, pred, band: str, per_replicate=None) -> None:
    """The measured softmax - linear gap (log-log, +/- 1 se band) and gap x L against L, with the
    first-order prediction of symbolic S7 (gap = C / L, C = K_soft(c*) - K_lin) when ``pred`` is given.
    ``per_replicate``: {name: gap array} drawn thin."""
    L = np.asarray(L, float)
    for a, y, s_, lab in ((ax_gap, gap, se, "gap"), (ax_gl, gap * L, se * L, "gap x L")):
        a.fill_between(L, y - s_, y + s_, color="k", alpha=0.18, lw=0, label=f"+/- 1 {band}")
        a.plot(L, y, "ko-", ms=3.5, lw=1.2, label=f"measured {lab}")
        for name, g in (per_replicate or {}).items():
            a.plot(L, g if lab == "gap" else g * L, lw=0.7, alpha=0.6, marker=".", ms=3, label=name)
        a.set_xscale("log")
        a.set_xlabel("prompt length L")
    if pred:
        C = pred["gap_constant"]
        ax_gap.plot(L, C / L, "r--", lw=1.2, label=f"S7 first order: {C:.3g} / L")
        ax_gl.axhline(C, color="r", ls="--", lw=1.2, label=f"S7: K_soft(c*) - K_lin = {C:.3g}")
    ax_gap.set_yscale("log")
    ax_gap.set_ylabel(r"$R_{softmax} - R_{linear}$ (paired, same test prompts)")
    ax_gap.set_title("softmax - linear gap (C5a, C5e)")
    ax_gl.set_ylabel(r"$(R_{softmax} - R_{linear}) \times L$")
    ax_gl.set_title("gap x L against the first-order prediction (C5f)")
    ax_gl.set_ylim(bottom=0)
    ax_gap.legend(fontsize=6.5)
    ax_gl.legend(fontsize=6.5)


def c5_replicates(table, metrics: dict, protocol: dict, curves: dict, png, pdf) -> None:
    """C5 across replicates: risks of both models (mean +/- se across seeds, each replicate thin), the
    gap and gap x L with the S7 prediction."""
    fig, ax = plt.subplots(1, 3, figsize=(18, 4.8))
    L = table["L"].to_numpy()
    names = metrics["replicates"]
    for key in ("softmax", "linear"):
        cv = curves[key]
        m, s_ = table[f"R_{key}"].to_numpy(), table[f"R_{key}_se"].to_numpy()
        ax[0].fill_between(L, m - s_, m + s_, color=cv["color"], alpha=0.25, lw=0)
        ax[0].plot(L, m, marker=cv["marker"], ms=3.5, color=cv["color"], label=f"{cv['label']}: mean +/- se")
        for n in names:
            ax[0].plot(L, table[f"R_{key}@{n}"], color=cv["color"], lw=0.5, alpha=0.5)
        ax[0].plot(L, table[f"R_{key}_ref"], color=cv["color"], ls="--", lw=0.8, label=f"{key} class reference (mean)")
    ax[0].axhline(metrics["R_inf_exact"], color="k", lw=1, label=f"noise floor {metrics['R_inf_exact']}")
    ax[0].set_xscale("log")
    ax[0].set_yscale("log")
    ax[0].set_xlabel("prompt length L")
    ax[0].set_ylabel("test mean squared error")
    ax[0].set_title(f"test risk vs L ({len(names)} replicates)")
    ax[0].legend(fontsize=6.5)
    gap_vs_prediction(ax[1], ax[2], L, table["gap"].to_numpy(), table["gap_se"].to_numpy(), metrics.get("prediction"),
                      f"se across {len(names)} seeds", {n: table[f"gap@{n}"].to_numpy() for n in names})
    for a in ax:
        a.grid(alpha=0.3, which="both")
    title = _c5_title(protocol, f"\n{len(names)} independent replicates (training stream, initialisation, test set)")
    fig.suptitle(title, fontsize=9, y=1.02 + 0.03 * title.count("\n"))
    save(fig, png, pdf)


def c5_training(metrics: dict, note: str, protocol: dict, cmap: str, png, pdf) -> None:
    """C5: logged training loss against step for every L, one panel per model, colour = L (map ``cmap``)."""
    fig, ax = plt.subplots(1, 2, figsize=(14, 4.8), sharey=True)
    curves = metrics["loss_curves"]
    Ls = sorted({int(k.split("_L")[1]) for k in curves})
    norm = matplotlib.colors.LogNorm(vmin=min(Ls), vmax=max(Ls))
    cmap = plt.get_cmap(cmap)
    runs = metrics["convergence"]["runs"]
    for a, model in zip(ax, ("softmax", "linear")):
        for x in Ls:
            k = f"{model}_L{x}"
            cur = curves[k]
            a.plot(cur["step"], cur["loss"], lw=0.9, color=cmap(norm(x)))
            e = runs[k]["escape_step"]
            if e is not None:
                a.plot([e], [np.interp(e, cur["step"], cur["loss"])], "k|", ms=8)
        a.axhline(metrics["R_inf_exact"], color="k", lw=0.8, ls=":", label="noise floor")
        a.set_yscale("log")
        a.set_xlabel("training step")
        a.set_title(f"{model} attention (|: escape step)")
        a.grid(alpha=0.3, which="both")
        a.legend(fontsize=7)
    ax[0].set_ylabel(f"training loss (mean over {protocol.get('log_every', '')} steps)")
    fig.colorbar(matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label="prompt length L")
    title = _c5_title(protocol, note)
    fig.suptitle(title, fontsize=9, y=1.02 + 0.03 * title.count("\n"))
    save(fig, png, pdf)
