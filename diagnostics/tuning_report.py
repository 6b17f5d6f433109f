"""A tuning's tables and its plot, from its entry in a tuned-settings file (``diagnostics.tuned_settings``).

An entry (``tutorduel.tune.tuning_entry``) holds every evaluation: its spec, the searched settings' values
(`point`), its mean score over the tuning seeds with the standard error (`score`), and its paired difference
from the untuned defaults with the half-width of the 95% interval (`gain`).
"""
from __future__ import annotations

import json

import numpy as np


def _value(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return "default" if v is None else json.dumps(v) if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)


def tuning_table(entry: dict) -> str:
    """Markdown: the untuned defaults, then every evaluation in the order tried, each with its settings, its
    score ± s.e. over the seeds and its paired difference from the defaults [95%]; the chosen row in bold."""
    dims = [d["name"] for d in entry["dimensions"]]
    head = "| # | " + " | ".join(dims) + " | score ± s.e. | minus the defaults [95%] |"
    out = [head, "|---" * (len(dims) + 3) + "|"]
    rows = [("defaults", entry["default"], None)] + [(str(i + 1), e, e["gain"]) for i, e in enumerate(entry["evaluations"])]
    chosen = next((i for i, (_, e, _) in enumerate(rows) if e["spec"] == entry["spec"]), None)
    for i, (label, e, gain) in enumerate(rows):
        m, se = e["score"]
        diff = "" if gain is None else f"{gain[0]:+.1f} [{gain[0] - gain[1]:+.1f}, {gain[0] + gain[1]:+.1f}]"
        cells = [label, *(_value(e["point"].get(d)) for d in dims), f"{m:.1f} ± {se:.1f}", diff]
        if i == chosen:
            cells = [f"**{c}**" if c else c for c in cells]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


EDGE = 0.05          # a chosen number in the outer 5% of its search (on the log scale for a log search) is flagged


def edge_warnings(entry: dict) -> list[str]:
    """One line per searched number whose chosen value lies in the outer EDGE of its search (the best may lie
    beyond it: widen the search and tune again)."""
    import math

    chosen = next((e for e in entry["evaluations"] if e["spec"] == entry["spec"]), None)
    if chosen is None:          # the defaults were chosen
        return []
    out = []
    for d in entry["dimensions"]:
        lo, hi, v = d.get("lo"), d.get("hi"), chosen["point"].get(d["name"])
        if d.get("choices") or not all(isinstance(x, (int, float)) for x in (lo, hi, v)) or hi <= lo \
                or (d.get("log") and lo <= 0):
            continue
        f = math.log if d.get("log") else float
        where = (f(v) - f(lo)) / (f(hi) - f(lo))
        if where <= EDGE or where >= 1 - EDGE:
            out.append(f"{d['name']}={_value(v)} is at the {'low' if where <= EDGE else 'high'} end of its search "
                       f"[{lo:g}, {hi:g}]: the best may lie beyond it")
    return out


def tuning_summary(entries: dict[str, dict]) -> str:
    """Markdown, one row per tuned policy: the space, the chosen spec, the dev score of the defaults and of the
    chosen settings (± s.e.), the paired gain [95%], the evaluations, seeds and date."""
    out = ["| policy | searched | chosen spec | defaults | chosen | chosen minus defaults [95%] | evaluations | "
           "seeds | date |", "|---|---|---|---|---|---|---|---|---|"]
    for name, e in entries.items():
        g, seeds = e["gain"], e["seeds"]
        span = f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ",".join(map(str, seeds))
        out.append(f"| {name} | {e['space']} | `{e['spec']}` | {e['default_score'][0]:.1f} ± {e['default_score'][1]:.1f} "
                   f"| {e['score'][0]:.1f} ± {e['score'][1]:.1f} | {g[0]:+.1f} [{g[0] - g[1]:+.1f}, {g[0] + g[1]:+.1f}] "
                   f"| {len(e['evaluations'])} ({e['sampler']}) | {span} | {e['date']} |")
    return "\n".join(out)


def _panel(ax, entry: dict, dim: dict) -> None:
    name, evs = dim["name"], entry["evaluations"]
    xs = [e["point"][name] for e in evs]
    if dim.get("choices"):
        where = {json.dumps(c): i for i, c in enumerate(dim["choices"])}
        pos = np.array([where[json.dumps(x)] for x in xs], dtype=float)
        pos += np.linspace(-0.15, 0.15, len(pos)) if len(pos) > 1 else 0.0
        ax.set_xticks(range(len(dim["choices"])), [_value(c) for c in dim["choices"]])
    else:
        pos = np.array(xs, dtype=float)
        if dim.get("log"):
            from matplotlib.ticker import FuncFormatter, NullFormatter

            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
    m = np.array([e["score"][0] for e in evs])
    se = np.array([e["score"][1] for e in evs])
    ax.errorbar(pos, m, yerr=se, fmt="o", ms=3.5, lw=0.8, color="#475467", label="evaluation ± s.e.")
    d_m, d_se = entry["default_score"]
    ax.axhline(d_m, color="#1d4ed8", lw=1, ls="--", label="untuned defaults")
    ax.axhspan(d_m - d_se, d_m + d_se, color="#1d4ed8", alpha=0.08, lw=0)
    best = [i for i, e in enumerate(evs) if e["spec"] == entry["spec"]]
    if best:
        ax.plot(pos[best], m[best], "o", ms=7, mfc="none", mec="#d92d20", mew=1.6, label="chosen")
    ax.set_xlabel(name)


def plot_tuning(entries: dict[str, dict], path, world: str = "dev") -> None:
    """One PNG: a row of panels per tuned policy, one panel per searched setting, the mean score of every
    evaluation against that setting's value (error bars: s.e. over seeds), the defaults' score as a dashed
    line with its s.e. band, the chosen evaluation circled."""
    from diagnostics.figures import new_figure
    from tdmodels.atomic_file import atomic_save

    if not entries:
        raise ValueError("no tuned policies to plot")
    ncols = max(len(e["dimensions"]) for e in entries.values())
    fig, axes = new_figure(len(entries), ncols, figsize=(3.6 * ncols, 2.6 * len(entries)), layout="constrained",
                           squeeze=False)
    for row, (name, entry) in zip(axes, entries.items()):
        for ax, dim in zip(row, entry["dimensions"]):
            _panel(ax, entry, dim)
        row[0].set_ylabel(f"{name}\n{world} score")
        for ax in row[len(entry["dimensions"]):]:
            ax.set_visible(False)
    axes[0][0].legend(fontsize=7, loc="lower left")
    atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=90, format="png"))


__all__ = ["tuning_table", "tuning_summary", "plot_tuning", "edge_warnings"]
