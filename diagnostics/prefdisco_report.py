"""Statistics and plots of PrefDisco runs, in the style of TutorDuel's: world seeds are the
replicates, every figure is a mean over seeds with a 95% t-interval, policies are compared by
paired differences over the same worlds and scenarios.

Results are an xarray Dataset with dims (policy, seed, scenario) holding baseline, oracle and
discovery PrefAlign, NormAlign (NaN where the oracle does not beat the baseline), questions
asked and the scenario's domain; ``run_grid`` makes one, ``save_results`` stores it as netCDF.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

from diagnostics.stats import t_interval
from online.process_pool import map_in_workers
from tdmodels.atomic_file import atomic_save
from tdmodels.netcdf_file import dataset_bytes, save_netcdf

FIELDS = ("baseline", "oracle", "discovery", "norm_align", "asked")


def _run_seed(args) -> dict:
    from online.prefdisco_run import run_world
    from tdmodels.prefdisco_world import build_prefdisco_world

    seed, policies, questions, answer_noise, cost, scenarios = args
    world = build_prefdisco_world(seed=seed)
    return {p: run_world(world, p, questions, seed=seed, scenarios=scenarios, answer_noise=answer_noise, cost=cost)
            for p in policies}


def run_grid(seeds, policies, questions: int, answer_noise: float = 0.0, cost: float | None = None,
             scenarios: int | None = None, jobs: int = 1) -> xr.Dataset:
    """Every policy on the world of every seed (the same scenarios for all policies of a seed)."""
    from online.prefdisco_bayes import COST

    cost = COST if cost is None else cost
    tasks = [(int(s), tuple(policies), questions, answer_noise, cost, scenarios) for s in seeds]
    runs = map_in_workers(_run_seed, tasks, jobs)
    data = {f: (("policy", "seed", "scenario"), np.array([[r[p][f] for r in runs] for p in policies], dtype=float))
            for f in FIELDS}
    data["domain"] = (("seed", "scenario"), np.array([runs[k][policies[0]]["domain"] for k in range(len(runs))]))
    return xr.Dataset(data, coords={"policy": list(policies), "seed": [int(s) for s in seeds]},
                      attrs={"questions": questions, "answer_noise": answer_noise, "cost": cost})


def save_results(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write the results atomically as netCDF."""
    return save_netcdf(path, dataset_bytes(ds))


def fmt(x, digits: int = 2) -> str:
    """'mean ± half-width' of the 95% t-interval of x, with `digits` decimals."""
    m, h = t_interval(x)
    return f"{m:.{digits}f}" + (f" ± {h:.{digits}f}" if np.isfinite(h) else " (one seed: no interval)")


def per_seed(ds: xr.Dataset) -> xr.Dataset:
    """Per (policy, seed): mean PrefAlign of each condition, mean NormAlign, share of scenarios
    with NormAlign < 0 (among those where it is defined), questions asked."""
    na = ds["norm_align"]
    defined = np.isfinite(na)
    return xr.Dataset({"baseline": ds["baseline"].mean("scenario"), "oracle": ds["oracle"].mean("scenario"),
                       "discovery": ds["discovery"].mean("scenario"), "norm_align": na.mean("scenario", skipna=True),
                       "negative": ((na < 0) & defined).sum("scenario") / defined.sum("scenario"),
                       "asked": ds["asked"].mean("scenario")})


def summary_table(ds: xr.Dataset) -> str:
    """Markdown table, one line per policy: PrefAlign of each condition, NormAlign, its share below 0 and questions asked (mean ± 95% t-interval over seeds)."""
    s = per_seed(ds)
    lines = ["| policy | baseline | oracle | discovery | NormAlign | share NormAlign < 0 | questions asked |",
             "|---|---|---|---|---|---|---|"]
    for p in ds["policy"].values:
        r = s.sel(policy=p)
        lines.append(f"| {p} | {fmt(r['baseline'], 3)} | {fmt(r['oracle'], 3)} | {fmt(r['discovery'], 3)} | "
                     f"{fmt(r['norm_align'], 1)} | {fmt(r['negative'], 3)} | {fmt(r['asked'], 2)} |")
    return "\n".join(lines)


def paired_table(ds: xr.Dataset, policy: str) -> str:
    """NormAlign and discovery PrefAlign of `policy` minus each other policy, paired over seeds."""
    s = per_seed(ds)
    lines = [f"| {policy} minus | NormAlign (95%) | discovery PrefAlign (95%) | seeds where {policy} is ahead |",
             "|---|---|---|---|"]
    for p in ds["policy"].values:
        if p == policy:
            continue
        d = s["norm_align"].sel(policy=policy) - s["norm_align"].sel(policy=p)
        dd = s["discovery"].sel(policy=policy) - s["discovery"].sel(policy=p)
        m, h = t_interval(d)
        lines.append(f"| {p} | {m:+.1f} [{m - h:+.1f}, {m + h:+.1f}] | {fmt(dd, 4)} | {int((d > 0).sum())} of {d.size} |")
    return "\n".join(lines)


def domain_table(ds: xr.Dataset, domains) -> str:
    """Mean NormAlign per domain (mean ± 95% over seeds)."""
    lines = ["| policy | " + " | ".join(domains) + " |", "|---" * (len(domains) + 1) + "|"]
    for p in ds["policy"].values:
        cells = []
        for d in range(len(domains)):
            mask = ds["domain"] == d
            cells.append(fmt(ds["norm_align"].sel(policy=p).where(mask).mean("scenario", skipna=True), 1))
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def curve_table(curves: dict[int, xr.Dataset]) -> str:
    """NormAlign (and questions asked) against the question budget; curves: budget -> results."""
    budgets = sorted(curves)
    policies = list(curves[budgets[0]]["policy"].values)
    lines = ["| policy | " + " | ".join(f"at most {q}" for q in budgets) + " |", "|---" * (len(budgets) + 1) + "|"]
    for p in policies:
        cells = []
        for q in budgets:
            s = per_seed(curves[q]).sel(policy=p)
            cells.append(f"{fmt(s['norm_align'], 1)} ({float(s['asked'].mean()):.2f} asked)")
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_curves(curves: dict[int, xr.Dataset], path: str | os.PathLike) -> Path:
    """NormAlign against questions actually asked (mean over seeds, 95% bands), one line per policy."""
    from diagnostics.figures import new_figure

    budgets = sorted(curves)
    fig, ax = new_figure(figsize=(6, 4))
    for p in curves[budgets[0]]["policy"].values:
        x, y, h = [], [], []
        for q in budgets:
            s = per_seed(curves[q]).sel(policy=p)
            m, hw = t_interval(s["norm_align"])
            x.append(float(s["asked"].mean()))
            y.append(m)
            h.append(0.0 if np.isnan(hw) else hw)
        x, y, h = map(np.asarray, (x, y, h))
        ax.plot(x, y, marker="o", label=p)
        ax.fill_between(x, y - h, y + h, alpha=0.2)
    ax.set_xlabel("questions asked (mean per scenario)")
    ax.set_ylabel("NormAlign")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.legend()
    ax.set_title(f"PrefDisco, simulated: {curves[budgets[0]].sizes['seed']} world seeds, 95% bands")
    fig.tight_layout()
    return atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
