"""Figures (matplotlib, Agg): one function per claim figure; PNG and PDF side by side."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLORS = {"isotropic_gauss": "tab:blue", "anisotropic_gauss": "tab:green",
          "isotropic_rademacher": "tab:red"}


def save(fig, png, pdf=None) -> None:
    """Write ``fig`` as PNG (and PDF) with fixed metadata, so reruns give identical files."""
    fig.savefig(png, dpi=130, bbox_inches="tight", metadata={"Software": None})
    if pdf:
        fig.savefig(pdf, bbox_inches="tight", metadata={"Creator": None, "Producer": None,
                                                        "CreationDate": None})
    plt.close(fig)


def preset_note(preset: str) -> str:
    return "" if preset == "default" else f"  [preset '{preset}': scaled down, not the paper's protocol]"


def c3_transfer(table, preset: str, protocol: dict, png, pdf) -> None:
    """C3: D_inf vs L with the L^-1/2 guide; D_linL against D_inf; held-out risk vs L."""
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.3))
    groups = list(table.groupby(["setting", "token_kind"], sort=False))
    for (setting, kind), g in groups:
        key = f"{setting}_{kind}"
        c = COLORS.get(key)
        lab = f"{setting}, {kind} ({int(g['n_seed'].iloc[0])} seed{'s' if g['n_seed'].iloc[0] > 1 else ''})"
        ax[0].errorbar(g["L"], g["D_inf_max"], yerr=g["D_inf_max_sem"], marker="o", ms=4, color=c,
                       capsize=2, label=lab)
        ax[1].errorbar(g["D_inf_max"], g["D_linL_max"], xerr=g["D_inf_max_sem"],
                       yerr=g["D_linL_max_sem"], marker="o", ms=4, ls="none", color=c, label=lab)
        ax[2].errorbar(g["L"], g["R_pop_at_L"], yerr=g["R_pop_at_L_sem"], marker="o", ms=4,
                       color=c, capsize=2, label=lab)
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
    ax[0].set_ylabel(r"$\max_t \|\theta_L(t) - \theta_\infty(t)\|_F$")
    ax[0].set_title("softmax(L) vs linear(inf) trajectory")
    ax[1].set_xlabel(r"$D_\infty$: softmax(L) vs linear(inf)")
    ax[1].set_ylabel(r"$D_{lin,L}$: softmax(L) vs linear(L)")
    ax[1].set_title("same-L linear attention vs the limit")
    ax[2].set_ylabel("held-out risk of trained softmax(L)")
    ax[2].set_title(r"risk $\to R^* = 0$ (Thm 4.3 / 5.1)")
    for a in ax:
        a.legend(fontsize=7)
        a.grid(alpha=0.3, which="both")
    fig.suptitle(f"C3 transfer: lr {protocol['lr']}, T = {protocol['steps']}, "
                 f"{2 * protocol['n_pairs']} tasks x {protocol['n_query']} queries"
                 + preset_note(preset), fontsize=10)
    save(fig, png, pdf)
