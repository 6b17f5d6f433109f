"""The simulator calibration's posterior predictive report (reads the InferenceData ``tutorduel worlds
calibrate`` writes, so ``write_calibration_report(az.from_netcdf(path), out)`` rebuilds it from the file alone).

Per figure: the target with its 95% interval (published rows: +-3 points; the sample's statistics: their
bootstrap interval), sim-1's value, the simulator's posterior predictive median with its 90% interval
(simulations at posterior draws, not the emulator), the calibrated draw's value and whether it is inside;
per parameter: its prior, posterior mean and 90% interval, sim-1's and the calibrated value. Plots: the
predictive intervals against the targets, standardised, and the posterior marginals.
"""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from diagnostics.figures import new_figure
from diagnostics.leaderboard_report import PAGE_STYLE
from diagnostics.page_links import GENERATOR_META, nav, save_page
from diagnostics.validation_report import _png


def figure_table(idata) -> list[dict]:
    """One dict per figure: target, lo, hi (95%), sim1, ppc median / 5% / 95%, calibrated, inside."""
    obs = idata.observed_data["statistics"]
    c = idata.constant_data
    ppc = idata.posterior_predictive["statistics"].values.reshape(-1, obs.sizes["figure"])
    rows = []
    for i, name in enumerate(map(str, obs["figure"].values)):
        t, sd = float(obs.values[i]), float(c["sd"].values[i])
        lo, hi = t - 1.96 * sd, t + 1.96 * sd
        q = np.quantile(ppc[:, i], [0.05, 0.5, 0.95])
        cal = float(c["calibrated"].values[i])
        rows.append(dict(figure=name, target=t, lo=lo, hi=hi, sim1=float(c["sim1"].values[i]), ppc_lo=q[0],
                         ppc_mid=q[1], ppc_hi=q[2], calibrated=cal, inside=bool(lo <= cal <= hi),
                         sim1_inside=bool(lo <= float(c["sim1"].values[i]) <= hi)))
    return rows


def parameter_table(idata) -> list[dict]:
    """One dict per fitted parameter: prior bounds, posterior mean and 90% interval, sim-1's and calibrated value."""
    c = idata.constant_data
    rows = []
    for i, name in enumerate(map(str, c["parameter"].values)):
        x = idata.posterior[name].values.reshape(-1)
        q = np.quantile(x, [0.05, 0.95])
        rows.append(dict(parameter=name, lo=float(c["prior_lo"].values[i]), hi=float(c["prior_hi"].values[i]),
                         mean=float(x.mean()), q05=q[0], q95=q[1], sim1=float(c["sim1_theta"].values[i]),
                         calibrated=float(c["calibrated_theta"].values[i])))
    return rows


def _digits(row) -> int:
    return 1 if row["hi"] - row["lo"] >= 0.99 else 3


def format_figure_table(rows) -> str:
    """Markdown: figure, target [95%], sim-1, predictive median [90%], calibrated, inside."""
    out = ["| figure | target [95%] | sim-1 | posterior predictive [90%] | calibrated | inside |", "|---|---|---|---|---|---|"]
    for r in rows:
        d = _digits(r)
        out.append(f"| {r['figure']} | {r['target']:.{d}f} [{r['lo']:.{d}f}, {r['hi']:.{d}f}] | {r['sim1']:.{d}f} | "
                   f"{r['ppc_mid']:.{d}f} [{r['ppc_lo']:.{d}f}, {r['ppc_hi']:.{d}f}] | {r['calibrated']:.{d}f} | "
                   f"{'yes' if r['inside'] else 'no'} |")
    out.append(f"\ninside: sim-1 {sum(r['sim1_inside'] for r in rows)} of {len(rows)}, calibrated "
               f"{sum(r['inside'] for r in rows)} of {len(rows)}")
    return "\n".join(out)


def format_parameter_table(rows) -> str:
    """Markdown: parameter, prior, posterior mean [90%], sim-1, calibrated."""
    out = ["| parameter | prior | posterior mean [90%] | sim-1 | calibrated |", "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['parameter']} | U({r['lo']:g}, {r['hi']:g}) | {r['mean']:.3f} [{r['q05']:.3f}, {r['q95']:.3f}] | "
                   f"{r['sim1']:g} | {r['calibrated']:.3f} |")
    return "\n".join(out)


def _ppc_figure(rows):
    fig, ax = new_figure(figsize=(8, 0.32 * len(rows) + 1))
    for i, r in enumerate(rows):
        sd = (r["hi"] - r["lo"]) / (2 * 1.96)
        z = lambda v: (v - r["target"]) / sd
        ax.plot([z(r["ppc_lo"]), z(r["ppc_hi"])], [i, i], color="tab:blue", lw=3, alpha=0.6)
        ax.plot(z(r["sim1"]), i, "x", color="tab:red")
        ax.plot(z(r["calibrated"]), i, "o", color="tab:blue", ms=4)
    ax.axvspan(-1.96, 1.96, color="0.9")
    ax.set_yticks(range(len(rows)), [r["figure"] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("(figure - target) / target sd; band: the target's 95% interval; bar: predictive 90%; "
                  "x sim-1, o calibrated", fontsize=7)
    return fig


def _marginals_figure(idata, prows):
    n = len(prows)
    cols = 4
    fig, axes = new_figure(nrows=(n + cols - 1) // cols, ncols=cols, figsize=(10, 2 * ((n + cols - 1) // cols)),
                           squeeze=False)
    for ax, r in zip(axes.flat, prows):
        ax.hist(idata.posterior[r["parameter"]].values.reshape(-1), bins=40, range=(r["lo"], r["hi"]), color="tab:blue")
        ax.axvline(r["sim1"], color="tab:red", ls="--")
        ax.axvline(r["calibrated"], color="k")
        ax.set_title(r["parameter"], fontsize=8)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    return fig


def _html_table(md: str) -> str:
    lines = [ln for ln in md.splitlines() if ln.startswith("|") and not ln.startswith("|---")]
    rows = [[html.escape(c.strip()) for c in ln.strip("|").split("|")] for ln in lines]
    head = "".join(f"<th>{c}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows[1:])
    tail = [html.escape(ln) for ln in md.splitlines() if ln and not ln.startswith("|")]
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>" + "".join(f"<p>{t}</p>" for t in tail)


def _seeds(idata) -> str:
    seeds = list(np.atleast_1d(idata.constant_data.attrs.get("confirm_seeds", [])))
    return f"{seeds[0]}-{seeds[-1]}" if seeds else "as fitted"


def write_calibration_report(idata, path: str | Path) -> Path:
    """Write the self-contained HTML report of a calibration's InferenceData to `path`."""
    rows, prows = figure_table(idata), parameter_table(idata)
    sims = idata.simulations
    waves = np.bincount(sims["wave"].values)
    figs = [_ppc_figure(rows), _marginals_figure(idata, prows)]
    imgs = [_png(f) for f in figs]
    page = (f"<!doctype html><html><head><meta charset='utf-8'>{GENERATOR_META}<title>simulator calibration</title>"
            f"<style>{PAGE_STYLE}</style></head><body>{nav(path)}<h1>Simulator calibration</h1>"
            f"<p>{len(sims['simulation'])} simulations: {waves[0]} in the design, then "
            f"{', '.join(str(w) for w in waves[1:])} at each wave's posterior draws (the last wave's are the posterior "
            f"predictive check below, made with the simulator itself).</p>"
            f"<h2>Figures against their targets</h2><p>The posterior predictive intervals are the simulations at the "
            f"last wave's draws, on the fit's schedule seeds; sim-1's and the calibrated figures are on schedule seeds "
            f"{_seeds(idata)}.</p>{_html_table(format_figure_table(rows))}{imgs[0]}"
            f"<h2>Parameters</h2>{_html_table(format_parameter_table(prows))}{imgs[1]}</body></html>")
    return save_page(path, page)


__all__ = ["figure_table", "parameter_table", "format_figure_table", "format_parameter_table",
           "write_calibration_report"]
