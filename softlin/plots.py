"""Figures (matplotlib, Agg): one function per claim figure; PNG and PDF side by side.

Colours, colour maps, markers and legend labels are arguments (the config's ``plot`` section,
handed over by the figure rules), as is the note a title ends with (:func:`preset_note`)."""

from __future__ import annotations

import re
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import ticker  # noqa: E402

from . import config_cost  # noqa: E402


def save(fig, png, pdf=None) -> None:
    """Write ``fig`` as PNG (and PDF) with fixed metadata, so reruns give identical files (each
    atomically and sealed: :func:`softlin.io.sealed_path`)."""
    from .io import sealed_path

    with sealed_path(png) as tmp:
        fig.savefig(tmp, dpi=130, bbox_inches="tight", metadata={"Software": None})
    if pdf:
        with sealed_path(pdf) as tmp:
            fig.savefig(tmp, bbox_inches="tight", metadata={"Creator": None, "Producer": None,
                                                            "CreationDate": None})
    plt.close(fig)


def preset_note(preset: str, description: str, width: int = 130) -> str:
    """The lines a figure title ends with: the preset's name and what it is, as its config says
    (the ``description`` of ``config/config.yaml`` or of ``config/presets/NAME.yaml``), wrapped
    (never inside a number written with thin groups, ``40 000``)."""
    text = re.sub(r"(?<=\d) (?=\d{3}\b)", "\u00a0", f"[preset '{preset}': {description}]")
    return "\n" + "\n".join(textwrap.wrap(text, width))


def suptitle(fig, text: str, fontsize: float = 10) -> None:
    """A figure title of any number of lines, set above the panels' own titles (growing upwards)."""
    fig.suptitle(text, fontsize=fontsize, y=0.94, va="bottom")


def _sparse_log_labels(axis) -> None:
    """Labels of a log axis that do not overlap: whole decades over a range of two decades or
    more, else 1, 2, 5 x 10^k; never the minor ticks (matplotlib labels every minor tick over a
    range of less than two decades, and on a narrow panel they run into each other)."""
    lo, hi = axis.get_view_interval()
    if np.log10(hi / lo) < 2:
        axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def c3_transfer(table, note: str, protocol: dict, colors: dict, png, pdf, fits: dict | None = None) -> None:
    """C3: D_inf vs L with the L^-1/2 guide; D_linL against D_inf; held-out risk vs L; with the runs
    without pair summation (table columns ``offblock_seed_order_rate``), a fourth panel: C3d's
    growth rate of the off-block mass at the end of training against L.  Error bars: standard
    errors across seeds; ``fits`` (the metrics' ``fits``, keyed ``<setting>_<token_kind>`` like
    ``colors``) puts each fitted slope with its jackknife standard error in the legends."""
    fits = fits or {}
    rate = "offblock_seed_order_rate" in table.columns
    fig, ax = plt.subplots(1, 4 if rate else 3, figsize=(20 if rate else 15, 4.3))
    fig.subplots_adjust(wspace=0.3)  # room for the middle and right panels' y labels
    groups = list(table.groupby(["setting", "token_kind"], sort=False))

    def fitted(key, name):
        f = fits.get(key, {})
        s, se = f.get(f"slope_{name}"), f.get(f"slope_{name}_se")
        if s is None:
            return ""
        return f", slope {s:+.3f}" + (f" +/- {se:.3f}" if isinstance(se, (int, float)) and np.isfinite(se) else "")
    for (setting, kind), g in groups:
        key = f"{setting}_{kind}"
        c = colors.get(key)
        n = int(g["n_seed"].iloc[0])
        lab = f"{setting}, {kind} ({n} seed{'s' if n > 1 else ''})"
        ax[0].errorbar(g["L"], g["D_inf_max"], yerr=g["D_inf_max_sem"], marker="o", ms=4, color=c,
                       capsize=2, label=lab + fitted(key, "D_inf_max"))
        ax[1].errorbar(g["D_inf_max"], g["D_linL_max"], xerr=g["D_inf_max_sem"],
                       yerr=g["D_linL_max_sem"], marker="o", ms=4, ls="none", color=c, label=lab)
        ax[2].errorbar(g["L"], g["R_pop_at_L"], yerr=g["R_pop_at_L_sem"], marker="o", ms=4,
                       color=c, capsize=2, label=lab + fitted(key, "R_pop_at_L"))
        if rate:
            ax[3].errorbar(g["L"], g["offblock_seed_order_rate"], yerr=g["offblock_seed_order_rate_sem"],
                           marker="o", ms=4, color=c, capsize=2, label=lab + ": at the end")
            if "offblock_seed_order_peak_rate" in g:
                ax[3].errorbar(g["L"], g["offblock_seed_order_peak_rate"], yerr=g["offblock_seed_order_peak_rate_sem"],
                               marker="s", ms=5, mfc="none", ls="--", color=c, capsize=2, label=lab + ": peak")
    L = np.asarray(sorted(table["L"].unique()), dtype=float)
    y0 = float(groups[0][1]["D_inf_max"].iloc[0])
    ax[0].plot(L, y0 * (L / L[0]) ** -0.5, "k--", lw=1, label=r"$L^{-1/2}$")
    lim = [table[["D_inf_max", "D_linL_max"]].min().min() * 0.8,
           table[["D_inf_max", "D_linL_max"]].max().max() * 1.2]
    ax[1].plot(lim, lim, "k:", lw=1, label="equal")
    for a in (ax[0], ax[2]):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("prompt length L")
    ax[1].set_xscale("log")
    ax[1].set_yscale("log")
    _sparse_log_labels(ax[1].xaxis)
    _sparse_log_labels(ax[1].yaxis)
    ax[0].set_ylabel(r"$\max_t \|\theta_L(t) - \theta_\infty(t)\|_F$")
    ax[0].set_title("softmax(L) vs linear(inf) trajectory")
    ax[1].set_xlabel(r"$D_\infty$: softmax(L) vs linear(inf)")
    ax[1].set_ylabel(r"$D_{lin,L}$: softmax(L) vs linear(L)")
    ax[1].set_title(r"$D_{lin,L}$ against $D_\infty$ (one point per L)")
    ax[2].set_ylabel("held-out risk of trained softmax(L)")
    ax[2].set_title(r"risk $\to R^* = 0$ (Thm 4.3 / 5.1)")
    if rate:
        ax[3].axhline(0, color="k", lw=1, ls=":")
        ax[3].set_xscale("log", base=2)
        ax[3].set_xlabel("prompt length L")
        ax[3].set_ylabel("growth rate of the off-block mass per step (seed mean)")
        ax[3].set_title("C3d: off-block mass growth, no pair summation")
    for a in ax:
        a.legend(fontsize=7, loc="upper left" if rate and a is ax[3] else "best")
        a.grid(alpha=0.3, which="both")
    suptitle(fig, f"C3 transfer: lr {protocol['lr']}, T = {protocol['steps']}, "
             f"{2 * protocol['n_pairs']} tasks x {protocol['n_query']} queries; error bars: standard errors "
             "across seeds (slopes: delete-one-seed jackknife)" + note)
    save(fig, png, pdf)


# --------------------------------------------------------------------------- C1, C2, C4
def _loglog(a, xlabel="prompt length L"):
    a.set_xscale("log", base=2)
    a.set_yscale("log")
    a.set_xlabel(xlabel)
    a.grid(alpha=0.3, which="both")


def _probe_lines(a, g, col, se_col, cmap: str, guide=True):
    """One line per probe (error bars, colour map ``cmap`` over lambda_max), with an L^-beta guide
    anchored at the probe's last point."""
    cmap = plt.get_cmap(cmap)
    probes = list(g.groupby("probe", sort=False))
    lam_max = max(float(pg["lambda_max"].iloc[0]) for _, pg in probes)
    for name, pg in probes:
        lam, beta = float(pg["lambda_max"].iloc[0]), float(pg["beta"].iloc[0])
        c = cmap(min(lam / max(lam_max, 1.0), 1.0) * 0.9)
        L = pg["L"].to_numpy(float)
        a.errorbar(L, pg[col], yerr=pg[se_col], marker="o", ms=3, color=c, capsize=1.5,
                   label=f"{name}: $\\lambda$={lam:.2f}, $\\beta$={beta:.2f}")
        if guide:
            y1 = float(pg[col].iloc[-1])
            a.plot(L, y1 * (L / L[-1]) ** -beta, ls="--", lw=0.8, color=c)


def c1_concentration(table, note: str, protocol: dict, cmap: str, png, pdf) -> None:
    """C1: RMS output gap vs L per setting, one line per probe, dashed L^-beta guides (not the exponent sweep)."""
    groups = list(table[table["kind"] != "sweep"].groupby("setting", sort=False))
    fig, ax = plt.subplots(1, len(groups), figsize=(4.6 * len(groups), 4.2), squeeze=False)
    for a, (setting, g) in zip(ax[0], groups):
        _probe_lines(a, g, "rms_gap", "rms_gap_se", cmap)
        _loglog(a)
        a.set_title(f"{setting} ({g['token_kind'].iloc[0]})")
        a.legend(fontsize=6)
    ax[0, 0].set_ylabel(r"RMS $|f_{softmax(L)} - f_{linear(\infty)}|$")
    suptitle(fig, f"C1 output concentration: {protocol['n_blocks']} blocks x {2 * protocol['n_pairs']} tasks x "
             f"{protocol['n_query']} queries; dashed: $L^{{-\\beta}}$, $\\beta$ = min(1/2, 1/(4 $\\lambda_{{max}}(M)$))"
             + note)
    save(fig, png, pdf)


def c1_exponent(ex: dict, protocol: dict, cfg: dict, note: str, png, pdf) -> None:
    """C1: measured slope vs lambda_max(M) (2 s.e. bars), -beta and the predicted finite-L band (issue 31)."""
    fig, a = plt.subplots(figsize=(7.5, 4.6))
    lam = np.asarray(ex["lambda_max"])
    grid = np.linspace(min(0.05, lam.min()), max(1.5, lam.max()), 300)
    a.fill_between(lam, ex["band_low"], ex["band_high"], color="0.8", label="predicted band (finite L, S5's capped model)")
    a.plot(grid, -np.minimum(0.5, 1 / (4 * grid)), "k-", lw=1.2, label=r"$-\beta = -\min(1/2, 1/(4\lambda_{max}))$")
    a.errorbar(lam, ex["slope"], yerr=2 * np.asarray(ex["slope_se"]), marker="o", ms=4, capsize=2, ls="none",
               color="tab:blue", label=f"measured (upper-half fit, L = {ex['fit_L'][0]} .. {ex['fit_L'][-1]}), 2 s.e.")
    a.axvline(0.5, color="r", ls="--", lw=0.8, label=r"threshold $\lambda_{max}(M) = 1/2$")
    a.set_xlabel(r"$\lambda_{max}(M)$ ($\theta^*$ of " + cfg["setting"] + " scaled)")
    a.set_ylabel("slope of the RMS output gap (log-log)")
    a.grid(alpha=0.3)
    a.legend(fontsize=7)
    suptitle(fig, f"C1 exponent across the threshold: {protocol['n_blocks']} blocks x {2 * protocol['n_pairs']} "
             f"tasks x {protocol['n_query']} queries, estimator {protocol.get('estimator', 'blocks')}" + note)
    save(fig, png, pdf)


def c2_gradients(table, traj, metrics: dict, note: str, protocol: dict, seed_log_slope: float,
                 cmap: str, png, pdf) -> None:
    """C2: U and v gradient gaps vs L at the C1 probes (rows: U, v; columns: settings) + trajectory maxima."""
    t = table[table["kind"] != "sweep"]
    groups = list(t.groupby("setting", sort=False))
    n = len(groups) + 1
    fig, ax = plt.subplots(2, n, figsize=(4.2 * n, 7.6), squeeze=False)
    fig.subplots_adjust(hspace=0.32)  # room for the lower row's titles below the upper row's x labels
    for j, (setting, g) in enumerate(groups):
        for i, part in enumerate(("U", "v")):
            a = ax[i, j]
            _probe_lines(a, g, f"gap_{part}", f"gap_{part}_se", cmap)
            _loglog(a)
            a.set_title(f"{setting} ({g['token_kind'].iloc[0]}): {part} part", fontsize=9)
            if j == 0:
                a.set_ylabel(f"per-query L2 gap $(E\\|\\nabla_{part} \\ell_L - \\nabla_{part} \\ell_\\infty\\|^2)^{{1/2}}$")
        ax[0, j].legend(fontsize=5.5)
    is_mean = traj["seed"].astype(str) == "mean"
    mean, each = traj[is_mean], traj[~is_mean]
    n_seeds = next(iter(metrics["trajectory"].values()))["n_seeds"] if metrics["trajectory"] else 0
    for i, part in enumerate(("U", "v")):
        a = ax[i, -1]
        for setting, g in mean.groupby("setting", sort=False):
            L = g["L"].to_numpy(float)
            t = metrics["trajectory"][setting]
            key = "full" if part == "U" else part
            eb = a.errorbar(L, g[f"max_{key}"], yerr=g[f"max_{key}_se"], marker="o", ms=3, capsize=2,
                            label=f"{setting} ({key}), slope {t[key]['slope_full']:.2f} +/- {t[key]['slope_full_se']:.2f}")
            for _, gs in each[each["setting"] == setting].groupby("seed", sort=False):
                a.plot(L, gs[f"max_{key}"], color=eb[0].get_color(), lw=0.6, alpha=0.35)
        L = np.asarray(sorted(traj["L"].unique()), float)
        y0 = float(mean["max_full" if part == "U" else "max_v"].max())
        a.plot(L, y0 * (L / L[0]) ** seed_log_slope, "k--", lw=0.8, label=f"seed log C2e $L^{{{seed_log_slope}}}$")
        _loglog(a)
        a.set_title(f"along C3's linear(inf) trajectories: max over steps ({'full' if part == 'U' else part});\n"
                    f"mean over {n_seeds} seeds (s.e. over seeds), thin: each seed", fontsize=9)
        a.legend(fontsize=6)
    blocks = config_cost.blocks_text(protocol["n_blocks"], protocol.get("n_blocks_by_setting"))
    suptitle(fig, f"C2 gradient concentration: {blocks} x {2 * protocol['n_pairs']} tasks x "
             f"{protocol['n_query']} queries; dashed: $L^{{-\\beta}}$" + note)
    save(fig, png, pdf)


def c2_threshold(metrics: dict, note: str, protocol: dict, png, pdf) -> None:
    """C2: measured gradient-gap slope vs lambda_max(M), prediction -min(1/2, 1/(4 lambda)), threshold 1/2."""
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.3))
    grid = np.linspace(0.05, 1.5, 300)
    for a, part in zip(ax, ("U", "v")):
        for name, sw in metrics["sweep"].items():
            eb = a.errorbar(sw["lambda_max"], sw[part]["slope"], yerr=sw[part]["slope_se"], marker="o", ms=4,
                            capsize=2, label=f"{name}: upper-half fit")
            a.plot(sw["lambda_max"], sw[part]["slope_full"], marker="x", ls=":", lw=0.8,
                   color=eb[0].get_color(), label=f"{name}: full-range fit")
        probes = [f for f in metrics["fits"].values() if f["kind"] != "sweep" and f["token_kind"] == "gauss"]
        a.plot([f["lambda_max"] for f in probes], [f[part]["slope"] for f in probes], "k^", ms=4, ls="none",
               alpha=0.6, label="C1 probes (Gaussian settings, upper-half fit)")
        a.plot(grid, -np.minimum(0.5, 1 / (4 * grid)), "k-", lw=1.2, label=r"$-\min(1/2, 1/(4\lambda_{max}))$")
        a.axvline(0.5, color="r", ls="--", lw=0.8, label=r"threshold $\lambda_{max}(M) = 1/2$")
        a.set_xlabel(r"$\lambda_{max}(M)$, $M = \Sigma^{1/2} A \Sigma A \Sigma^{1/2}$")
        a.set_ylabel(f"slope of the {part}-gradient gap (log-log)")
        a.set_title(f"{part} part")
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    suptitle(fig, "C2 threshold sweep: measured exponent vs the S5 prediction" + note)
    save(fig, png, pdf)


def c4_dynamics(flows: dict, metrics: dict, note: str, protocol: dict, png, pdf) -> None:
    """C4 (``flows``: {label: c4.Setting}): risk and distance to theta* vs time (ODE, population GD,
    sampled GD); conservation; n_tasks."""
    fig, ax = plt.subplots(1, 4, figsize=(19, 4.3))
    fig.subplots_adjust(wspace=0.3)  # room for each panel's y label
    for k, (label, r) in enumerate(flows.items()):
        c = f"C{k}"
        t = r.t
        ax[0].plot(t, np.maximum(r.ode.along.risk, 1e-32), color=c, label=f"{label}: ODE")
        ax[0].plot(t, np.maximum(r.gd.along.risk, 1e-32), color=c, ls="--", label=f"{label}: population GD")
        ax[0].plot(t, np.maximum(r.sampled.risk, 1e-32), color=c, ls=":", label=f"{label}: sampled GD")
        ax[1].plot(t, r.ode.along.dist, color=c, label=f"{label}: ODE")
        ax[1].plot(t, r.gd.along.dist, color=c, ls="--", label=f"{label}: population GD")
        ax[1].plot(t, r.sampled.dist, color=c, ls=":", label=f"{label}: sampled GD")
        ax[2].plot(t, np.maximum(np.abs(r.ode.along.conservation), 1e-18), color=c, label=f"{label}: ODE")
        ax[2].plot(t, np.maximum(np.abs(r.gd.along.conservation), 1e-18), color=c, ls="--", label=f"{label}: population GD")
        ax[2].plot(t, np.maximum(np.abs(r.sampled.conservation), 1e-18), color=c, ls=":",
                   label=f"{label}: sampled GD")
        # mean and standard error (ddof = 1) over seeds as the metrics (and so the verdict) have them
        summ = next(x for x in metrics["settings"].values() if x["label"] == label)
        ax[3].errorbar(summ["ntasks_n_tasks"], summ["ntasks_gap_mean"], yerr=summ["ntasks_gap_se"], marker="o",
                       color=c, capsize=2, label=f"{label}: slope {summ['ntasks_slope']:.2f} "
                       f"+/- {summ['ntasks_slope_se']:.2f}")
    first = next(x for x in metrics["settings"].values() if x["label"] == next(iter(flows)))
    n = np.asarray(first["ntasks_n_tasks"], float)
    g0 = float(first["ntasks_gap_mean"][0])
    ax[3].plot(n, g0 * (n / n[0]) ** -0.5, "k--", lw=0.8, label=r"$n^{-1/2}$")
    for a in ax[:3]:
        a.set_yscale("log")
        a.set_xlabel("time t = step x lr")
        a.grid(alpha=0.3, which="both")
    ax[0].set_ylabel("population risk")
    ax[1].set_ylabel(r"$\|\theta(t) - \theta^*\|$")
    ax[2].set_ylabel(r"$| \|U\|_F^2 - \|v\|^2 |$")
    ax[0].set_title("risk (closed form S2)")
    ax[1].set_title(r"distance to $\theta^*$")
    ax[2].set_title("conservation defect")
    ax[3].set_xscale("log")
    ax[3].set_yscale("log")
    _sparse_log_labels(ax[3].xaxis)
    ax[3].set_xlabel("number of tasks")
    ax[3].set_ylabel(r"$\max_t \|\theta_{sampled}(t) - \theta_{pop. GD}(t)\|$")
    ax[3].set_title("sampled vs population GD")
    ax[3].grid(alpha=0.3, which="both")
    for a in ax:
        a.legend(fontsize=5.5)
    suptitle(fig, f"C4 infinite-prompt dynamics from Eq. (9): lr {protocol['lr']}, t_max = "
             f"{protocol['steps'] * protocol['lr']:g}; ODE {protocol['ode']['method']} "
             f"(rtol {protocol['ode']['rtol']:g})" + note)
    save(fig, png, pdf)
