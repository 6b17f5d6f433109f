"""A self-contained HTML report of a validation (the InferenceData `tutorduel validate` writes):
summary and per-user table, k-hat per user, forest overlays (NUTS against the online belief),
pair plots of a few users, rank plots of the NUTS chains, the reliability diagram of the
click predictions, and (with a population reference) co-clustering heatmaps side by side and
new-user densities at test points with the reference's intervals. Figures are embedded as PNG; the report reads only the netCDF, so it can
be rebuilt from the file alone (``write_report(az.from_netcdf(path), out)``).
"""
from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import arviz as az
import numpy as np

from diagnostics.figures import new_figure
from diagnostics.leaderboard_report import PAGE_STYLE
from diagnostics.page_links import GENERATOR_META, nav, save_page
from diagnostics.posterior_checks import KHAT_MAX


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return f'<img src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}"/>'


def _khat_figure(chk):
    fig, ax = new_figure(figsize=(7, 3))
    k = chk.khat.values
    ax.scatter(np.arange(len(k)), k, s=12, c=np.where(k > KHAT_MAX, "tab:red", "tab:blue"))
    for level, style in ((0.5, ":"), (KHAT_MAX, "--")):
        ax.axhline(level, color="grey", ls=style, lw=1)
    ax.set(xlabel="user", ylabel="PSIS k-hat", title="k-hat of the online belief as proposal for the exact posterior")
    return fig


def _forest_figure(post, online, users):
    fig, axes = new_figure(1, len(users), figsize=(3.2 * len(users), 3.2), sharey=True, squeeze=False)
    d = post.sizes["dim"]
    ref = post.theta.stack(sample=("chain", "draw")).transpose("sample", "user", "dim").values
    onl = online.theta.values
    for ax, u in zip(axes[0], users):
        for k, (draws, colour, off) in enumerate(((ref[:, u], "black", -0.12), (onl[:, u], "tab:orange", 0.12))):
            lo, mid, hi = np.percentile(draws, [5, 50, 95], axis=0)
            ax.errorbar(mid, np.arange(d) + off, xerr=[mid - lo, hi - mid], fmt="o", ms=3, color=colour,
                        label=("NUTS" if k == 0 else "online") if u == users[0] else None)
        ax.set(title=f"user {u}", xlabel="theta (90% interval)")
    axes[0][0].set(yticks=np.arange(d), yticklabels=[f"theta[{i}]" for i in range(d)])
    axes[0][0].legend(loc="best", fontsize=8)
    return fig


def _pair_figure(post, online, chk, users):
    fig, axes = new_figure(1, len(users), figsize=(3.2 * len(users), 3.2), squeeze=False)
    ref = post.theta.stack(sample=("chain", "draw")).transpose("sample", "user", "dim").values
    onl = online.theta.values
    for ax, u in zip(axes[0], users):
        i, j = np.argsort(-chk.w1.values[u] / chk.w1_floor.values[u])[:2]     # the two worst-matched coordinates
        n = min(1000, len(ref))
        ax.scatter(ref[:n, u, i], ref[:n, u, j], s=3, alpha=0.4, color="black", label="NUTS")
        ax.scatter(onl[:n, u, i], onl[:n, u, j], s=3, alpha=0.4, color="tab:orange", label="online")
        ax.set(title=f"user {u}", xlabel=f"theta[{i}]", ylabel=f"theta[{j}]")
    axes[0][0].legend(loc="best", fontsize=8, markerscale=3)
    return fig


def _rank_figure(idata, user):
    sub = idata.posterior.theta.isel(user=user).to_dataset(name="theta")
    d = sub.sizes["dim"]
    fig, axes = new_figure(2, (d + 1) // 2, figsize=(11, 5.5), squeeze=False, layout="constrained")
    for ax in axes.ravel()[d:]:
        ax.set_visible(False)
    az.plot_rank(az.convert_to_inference_data(sub), kind="vlines", ax=axes.ravel()[:d])
    for i, ax in enumerate(axes.ravel()[:d]):      # ArviZ's own titles are long and set in a large font
        ax.set_title(f"theta[{i}]", fontsize=10)
        ax.set_xlabel("rank (all chains)", fontsize=8)
        ax.set_ylabel("chain", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"user {user}: ranks of each chain's draws (uniform when the chains mix)", fontsize=11)
    return fig


SUMMARY = {   # the checks' summary keys: (label, one-line meaning)
    "users": ("users", "users checked"),
    "khat_median": ("k-hat, median", "PSIS k-hat of the online belief as a proposal for the exact posterior; < 0.7 usable"),
    "khat_max": ("k-hat, max", "the worst user's k-hat"),
    "khat_replicates": ("proposal samples", "independent samples of the belief each k-hat is averaged over"),
    "khat_mc_sd_median": ("k-hat MC sd, median", "k-hat's spread between those samples: its own Monte Carlo error"),
    "share_khat_over_0.7": ("share over 0.7", "users whose k-hat is over 0.7, mean over the samples"),
    "share_khat_over_0.7_range": ("share over 0.7, range", "the same share, lowest and highest over the samples"),
    "share_flagged_in_some_replicates_only": ("flagged in some samples only",
                                              "users over 0.7 in some samples and not in others"),
    "mean_abs_error_sd": ("mean |error| (sd)", "|posterior mean error| in exact posterior sd, over users and coordinates"),
    "max_abs_error_sd": ("max |error| (sd)", "the largest of those errors"),
    "sd_ratio_median": ("sd ratio, median", "online sd / exact sd; 1 is the right width"),
    "sd_ratio_range": ("sd ratio, range", "lowest and highest sd ratio over users and coordinates"),
    "w1_over_floor_median": ("W1 / floor, median", "marginal W1 to the exact draws over W1 between two halves of them"),
    "weights_tv_median": ("weights TV, median", "total variation between online and exact component weights"),
    "weights_tv_max": ("weights TV, max", "the worst user's"),
}


def summary_table(attrs: dict) -> str:
    """The checks' summary as a labelled HTML table, each figure with its one-line meaning (keys this
    module does not know are shown under their own names)."""
    rows = []
    for k, v in attrs.items():
        label, meaning = SUMMARY.get(k, (k, ""))
        rows.append(f"<tr><td>{html.escape(label)}</td><td>{html.escape(_shown(v))}</td>"
                    f"<td>{html.escape(meaning)}</td></tr>")
    return "<table class='lb'><tr><th>figure</th><th>value</th><th>meaning</th></tr>" + "".join(rows) + "</table>"


def _belief_figure(rows, key):
    from diagnostics.belief_comparison import MEASURES

    names = list(dict.fromkeys(r["belief"] for r in rows))
    blocks = [r["arrivals"] for r in rows if r["belief"] == names[0] and r["arrivals"] != "all"]
    fig, ax = new_figure(figsize=(6.5, 3.2), layout="constrained")
    width = 0.8 / len(names)
    for n, name in enumerate(names):
        vals = [r[key] for r in rows if r["belief"] == name and r["arrivals"] != "all"]
        x = np.arange(len(vals)) + (n - (len(names) - 1) / 2) * width
        if key == "share_khat_over":
            mid = np.array([v[0] for v in vals])
            ax.bar(x, mid, width, label=name, yerr=[mid - [v[1] for v in vals], [v[2] for v in vals] - mid],
                   capsize=2)
        else:
            ax.bar(x, vals, width, label=name)
    if key == "share_khat_over":
        ax.axhline(0.05, color="grey", ls="--", lw=1)
    ax.set_xticks(np.arange(len(blocks)), [f"arrivals {lo}-{hi}" for lo, hi in blocks], fontsize=8)
    ax.set_title(MEASURES[key], fontsize=8, wrap=True)
    ax.legend(fontsize=7)
    return fig


def _beliefs_section(ds) -> list[str]:
    from diagnostics.belief_comparison import HEAD, MEASURES, belief_table, table_cells

    rows = belief_table(ds)
    table = ("<table class='lb beliefs'><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in HEAD) + "</tr>"
             + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in line) + "</tr>"
                       for line in table_cells(rows)) + "</table>")
    legend = "".join(f"<li>{html.escape(m)}</li>" for m in MEASURES.values())
    return (["<h2>Online beliefs side by side (the same clicks, the same reference)</h2>", table,
             f"<ul>{legend}</ul>"] + [_png(_belief_figure(rows, k)) for k in MEASURES])


def _reliability_figure(cal):
    fig, ax = new_figure(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls=":")
    for name, colour in (("population", "tab:orange"), ("alone", "tab:blue")):
        if f"{name}_observed" not in cal:
            continue
        ok = cal[f"{name}_count"].values > 0
        ax.errorbar(cal[f"{name}_predicted"].values[ok], cal[f"{name}_observed"].values[ok],
                    yerr=cal[f"{name}_stderr"].values[ok], fmt="o-", ms=3, color=colour,
                    label=f"{name} (log loss {cal.attrs[name + '_log_loss']:.3f})")
    ax.set(xlabel="predicted P(first wins)", ylabel="observed frequency", title="click predictions")
    ax.legend(fontsize=8)
    return fig


def _population_figure(pf):
    names = [k for k in ("reference", "em", "truth") if f"co_clustering_{k}" in pf]
    fig, axes = new_figure(1, len(names) + 1, figsize=(3.6 * (len(names) + 1), 3.4))
    order = np.argsort(pf["co_clustering_truth"].values.argmax(1)) if "truth" in names else slice(None)
    for ax, k in zip(axes, names):
        P = pf[f"co_clustering_{k}"].values[np.ix_(order, order)] if "truth" in names else pf[f"co_clustering_{k}"].values
        ax.imshow(P, vmin=0, vmax=1, cmap="Greys", interpolation="nearest")
        ax.set(title={"reference": "co-clustering, reference", "em": "co-clustering, EM",
                      "truth": "same student"}[k], xticks=[], yticks=[])
    ax = axes[-1]
    ref = pf["log_density_reference"].values
    order = np.argsort(ref)
    x = np.arange(len(ref))
    if "log_density_reference_interval" in pf:
        lo, hi = pf["log_density_reference_interval"].values[:, order]
        ax.fill_between(x, lo, hi, color="grey", alpha=0.3, lw=0, label="reference, 90% over draws")
    ax.plot(x, ref[order], color="black", lw=1.5, label="reference predictive")
    for k, colour in (("em", "tab:blue"), ("online", "tab:orange")):
        if f"log_density_{k}" in pf:
            ax.scatter(x, pf[f"log_density_{k}"].values[order], s=10, color=colour, label=k, zorder=3)
    ax.set(xlabel="test point (sorted by the reference)", ylabel="log density of a new user's theta",
           title="test points: held-out arrivals' modes")
    ax.legend(fontsize=7)
    return fig


def _shown(value) -> str:
    """A figure as a reader wants it: floats to 4 significant digits, also inside tuples and lists."""
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    if isinstance(value, (tuple, list, np.ndarray)):
        return "(" + ", ".join(_shown(x) for x in value) + ")"
    return str(value)


def write_report(idata: az.InferenceData, path: str | Path, n_users: int = 3) -> Path:
    """Write the HTML report of a validation InferenceData to `path`."""
    post, online, chk = idata.posterior, idata["online"], idata["checks"]
    U = post.sizes["user"]
    worst = [int(u) for u in np.argsort(-chk.khat.values)[:n_users]]
    attrs = post.attrs
    title = f"Validation: {attrs.get('policy')} on {attrs.get('world')}, seed {attrs.get('seed')}, {U} users"
    rows = "".join(
        f"<tr><td>{u}</td><td>{chk.khat.values[u]:.2f}</td><td>{np.abs(chk.mean_error.values[u]).max():.3f}</td>"
        f"<td>{chk.sd_ratio.values[u].min():.2f}-{chk.sd_ratio.values[u].max():.2f}</td>"
        f"<td>{(chk.w1.values[u] / chk.w1_floor.values[u]).max():.2f}</td><td>{chk.weights_tv.values[u]:.3f}</td></tr>"
        for u in range(U))
    health = html.escape(str(attrs.get("reference_health", "not recorded")))
    parts = [f"<h1>{html.escape(title)}</h1>", "<h2>Summary</h2>", summary_table(chk.attrs),
             f"<p>NUTS reference health: {health}</p>",
             "<h2>k-hat per user</h2>", _png(_khat_figure(chk)),
             f"<h2>Forest overlays (the {n_users} users with the largest k-hat)</h2>",
             _png(_forest_figure(post, online, worst)),
             "<h2>Pair plots (each user's two worst-matched coordinates)</h2>",
             _png(_pair_figure(post, online, chk, worst)),
             f"<h2>Rank plots of the NUTS chains (user {worst[0]})</h2>", _png(_rank_figure(idata, worst[0]))]
    if "beliefs" in idata.groups():
        parts += _beliefs_section(idata["beliefs"])
    if "population" in idata.groups():
        pop = idata["population"]
        base = pop["log_pred_isotropic"].values
        items = "".join(
            f"<li>{html.escape(v.removeprefix('log_pred_'))} prior: {pop[v].values.mean():.3f} nats per user "
            f"({(pop[v].values - base).mean():+.3f} against the broad prior)</li>" for v in pop.data_vars)
        parts += [f"<h2>Held-out arrivals' clicks ({pop.sizes['heldout_user']} users): log predictive</h2>",
                  f"<ul>{items}</ul>"]
    if "population_fits" in idata.groups():
        pf = idata["population_fits"]
        items = "".join(f"<li>{html.escape(k)}: {html.escape(_shown(v))}</li>" for k, v in pf.attrs.items())
        verdict = ("converged: healthy on every label-invariant diagnostic" if pf.attrs.get("reference_healthy")
                   else "NOT converged: these are figures against an unconverged fit")
        parts += ["<h2>Population: batch EM and the online prior against the hierarchical model's exact reference</h2>",
                  f"<p>Reference ({html.escape(str(pf.attrs.get('reference_sampler')))}): {verdict}.</p>",
                  f"<ul>{items}</ul>", _png(_population_figure(pf))]
    if "reliability" in idata.groups() and idata["reliability"].data_vars:
        parts += ["<h2>Reliability of click predictions</h2>", _png(_reliability_figure(idata["reliability"]))]
    parts += ["<h2>Per user</h2>", "<table class='lb users'><tr><th>user</th><th>k-hat</th>"
              "<th>max |mean error| (sd)</th><th>sd ratio</th><th>max W1 / floor</th><th>weights TV</th></tr>"
              f"{rows}</table>"]
    page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>{GENERATOR_META}<title>{html.escape(title)}</title>"
            f"<style>{PAGE_STYLE}</style></head><body>{nav(path)}" + "\n".join(parts) + "</body></html>")
    return save_page(path, page)
