"""Figures per student profile: where in the population a policy gains or loses.

A run's score sums over every arrival; which students the gain comes from is what it hides. Each
arrival of a stored run is given its student's profile (``student_profile``, through the run's own
schedule, ``online.schedule.make_schedule``), and a profile's score is the benchmark's score of the
regret summed over that profile's arrivals in one run (``online.scoring.benchmark_score``), then
mean ± s.e. over seeds. Against another policy, the paired difference on common seeds is the
regret saved on those arrivals over their random excess, x 100 (the two runs of a seed serve the
same students, so their random regret and floor are the same). Where a profile's arrivals in a run
have no random excess (every persona as good as the best), its score there is undefined and that
run is left out of the profile's line.
"""
from __future__ import annotations

import numpy as np

from diagnostics.table_cell import cell

from diagnostics.segments import masked_score
from diagnostics.stats import mean_se, t_interval
from online.schedule import make_schedule

MAX_PROFILES = 40            # more distinct profiles than this (e.g. one per student) are not tabulated


def arrival_profiles(world, row: dict) -> np.ndarray:
    """The student profile of each arrival of a stored run: [arrivals] strings."""
    sched = make_schedule(world, int(row["seed"]), row.get("arrivals_limit"))
    profiles = np.asarray(world["student_profile"].values).astype(str)[sched.student]
    if len(profiles) != len(row["per_user"]["regret"]):
        raise ValueError(f"row of {row['policy']!r}, seed {row['seed']}: {len(row['per_user']['regret'])} arrivals, "
                         f"the world's schedule gives {len(profiles)}")
    return profiles


def profile_table(by_policy: dict, world, against: str | None = None) -> list[dict]:
    """Per policy and profile, the score over that profile's arrivals, and with `against` the paired difference.

    Parameters
    ----------
    by_policy : dict
        {policy: {seed: row}} of one world and truncation.
    world : xarray.Dataset
        The world the rows ran on.
    against : str or None
        A policy of `by_policy` to pair the others with, seed by seed.

    Returns
    -------
    list of dict
        One per (policy, profile) that some run of the policy met, sorted by policy then profile:
        "name", "profile", "n" (seeds), "arrivals" (mean per run), "score" (mean, s.e.), and with
        `against` "n_common" and "diff" (mean, 95% t half-width) over the seeds both have.
    """
    who = {}
    for seeds in by_policy.values():
        for s, row in seeds.items():
            if s not in who:
                who[s] = arrival_profiles(world, row)
    lines = []
    for spec, seeds in sorted(by_policy.items()):
        order = sorted(seeds)
        for name in sorted({p for s in order for p in who[s]}):
            arrivals = float(np.mean([(who[s] == name).sum() for s in order if (who[s] == name).any()]))
            met = [s for s in order if np.isfinite(masked_score(seeds[s], who[s] == name))]    # NaN: undefined
            line = {"name": spec, "profile": name, "n": len(met), "arrivals": arrivals,
                    "score": mean_se([masked_score(seeds[s], who[s] == name) for s in met]) if met
                    else (float("nan"), float("nan"))}
            if against is not None and spec != against and against in by_policy:
                base = by_policy[against]
                common = [s for s in met if s in base]
                if common:
                    line.update({"against": against, "n_common": len(common), "diff": t_interval(
                        [masked_score(seeds[s], who[s] == name) - masked_score(base[s], who[s] == name)
                         for s in common])})
            lines.append(line)
    return lines


def profile_count(world) -> int:
    """How many distinct student profiles the world has."""
    return len(np.unique(np.asarray(world["student_profile"].values).astype(str)))


def format_profile_table(lines: list[dict]) -> str:
    """Markdown: each profile's score by policy; the paired differences when present."""
    def pm(m, s):
        if not np.isfinite(m):
            return "undefined (no random excess)"
        return f"{m:.1f}" + (f" ± {s:.1f}" if np.isfinite(s) else "")

    def diff(m, h):
        return f"{m:+.1f}" + (f" [{m - h:+.1f}, {m + h:+.1f}]" if np.isfinite(h) else "")

    out = ["| policy | profile | seeds | arrivals a run | score |", "|---|---|---|---|---|"]
    out += [f"| {cell(ln['name'])} | {cell(ln['profile'])} | {ln['n']} | {ln['arrivals']:.1f} | {pm(*ln['score'])} |"
            for ln in lines]
    paired = [ln for ln in lines if "against" in ln]
    if paired:
        out += ["", f"paired against {paired[0]['against']} (95% intervals, common seeds):", "",
                "| policy | profile | seeds | difference |", "|---|---|---|---|"]
        out += [f"| {cell(ln['name'])} | {cell(ln['profile'])} | {ln['n_common']} | {diff(*ln['diff'])} |" for ln in paired]
    return "\n".join(out)
