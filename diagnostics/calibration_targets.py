"""What the real data pin down about the simulator, and how far our worlds are from it.

Two kinds of target:

- the published world-level rows of the reference leaderboard (no policy affects them): the best
  fixed pair for everyone and the per-user linear oracle on the five rosters, the best fixed pair
  per user on test_profiles, composite and quirky. Published as integers (+-0.5); the interval is
  the acceptance band of issue 19, +-3 points; ours is the mean over seeds of
  ``diagnostics.stats.reference_table``;
- statistics of the real sample's 48 arrivals, each a mean over sessions of a per-session figure
  (``session_statistics``: P cells at the clip bounds, floor and random excess per session, how often
  each persona is best), with a 95% bootstrap interval over the sessions. Ours is the same mean over
  the sessions of a roster's seed-0 schedule (test_profiles: the sample is a held-out-profile roster).

A figure is "inside" when ours falls in the target's interval. No policy's score enters any of it.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr

from diagnostics.leaderboard_report import PUBLISHED, PUBLISHED_ROSTERS
from diagnostics.stats import checked_level, reference_table
from online.schedule import make_schedule, session_utilities
from online.scoring import floor_regret, random_regret
from tdmodels import ties
from tdmodels.bradley_terry import order_averaged
from tdmodels.run_inputs import check_pair_memory, checked_count
from tdmodels.errors import InputError

PER_USER_PAIR = {"test_profiles": 76, "composite": 66, "quirky": 68}    # quoted in the reference text
WORLD_ROWS = {"best-pair-everyone": "best fixed pair (everyone, hindsight)", "linear-oracle": "per-user linear oracle"}
BAND = 3.0                 # points: how close a world-level row must come to the published one
SAMPLE_ROSTER = "test_profiles"


class Target(NamedTuple):
    """One figure: its target with an interval, ours, and whether ours is inside."""
    figure: str
    target: float
    lo: float
    hi: float
    ours: float
    ours_se: float            # NaN where ours is one figure (sample statistics on one schedule)

    @property
    def inside(self) -> bool:
        return bool(self.lo <= self.ours <= self.hi)


def session_statistics(world: xr.Dataset, seed: int = 0, arrivals: int | None = None) -> dict[str, np.ndarray]:
    """Per-session figures [N] of a world on one seed's schedule: the share of order-averaged P cells at
    0.1 and at 0.9, the floor and random excess per session, and the share of questions on which each
    persona is best."""
    sched = make_schedule(world, seed, arrivals)
    check_pair_memory(world, len(sched.student), "the session statistics")
    U = session_utilities(world, sched)                                                # [N, S, K]
    P = world["probs"].values[sched.student[:, None], sched.question]
    K = U.shape[-1]
    iu, ju = np.triu_indices(K, 1)
    pb = np.round(order_averaged(P)[..., iu, ju], 6)                                  # [N, S, 15]
    G, Rr = floor_regret(U), random_regret(U)
    out = {"P at 0.1 (share)": np.mean(pb <= 0.1 + 1e-6, axis=(1, 2)),
           "P at 0.9 (share)": np.mean(pb >= 0.9 - 1e-6, axis=(1, 2)),
           "floor / session": G.sum(1), "random excess / session": (Rr - G).sum(1)}
    best = ties.argmax(U)
    for k, name in enumerate(map(str, world["persona"].values)):
        out[f"best persona share: {name}"] = np.mean(best == k, axis=1)
    return out


def bootstrap_means(stats: dict[str, np.ndarray], draws: int = 2000, seed: int = 0,
                    level: float = 0.95) -> dict[str, tuple[float, float, float]]:
    """Mean and percentile bootstrap interval over sessions (the same resamples for every figure): each figure
    [sessions], all of one length, finite."""
    if not stats:
        raise InputError("a bootstrap needs at least one figure")
    stats = {k: np.asarray(v, dtype=float) for k, v in stats.items()}
    lengths = {v.shape for v in stats.values()}
    if len(lengths) != 1 or len(next(iter(lengths))) != 1:
        raise InputError(f"a bootstrap needs every figure as one value per session, got shapes {sorted(lengths)}")
    bad = [k for k, v in stats.items() if not np.isfinite(v).all()]
    if bad:
        raise InputError(f"figure {bad[0]!r} holds a non-finite value: a bootstrap of it would be NaN")
    checked_count(draws, "draws (bootstrap resamples)", 100, 10**6)
    level = checked_level(level)
    n = len(next(iter(stats.values())))
    if n < 2:
        raise InputError(f"a bootstrap over sessions needs at least 2 sessions, got {n}")
    idx = np.random.default_rng(seed).integers(n, size=(draws, n))
    q = [(1 - level) / 2, (1 + level) / 2]
    return {k: (float(v.mean()), *map(float, np.quantile(v[idx].mean(1), q))) for k, v in stats.items()}


def published_rows(roster: str) -> dict[str, float]:
    """The published world-level rows of a roster: reference key -> score (empty if none is published)."""
    if roster not in PUBLISHED_ROSTERS:
        return {}
    col = PUBLISHED_ROSTERS.index(roster)
    wanted = {key: PUBLISHED[label][col] for key, label in WORLD_ROWS.items()}
    if roster in PER_USER_PAIR:
        wanted["best-fixed-pair"] = PER_USER_PAIR[roster]
    return wanted


def figure_name(roster: str, key: str) -> str:
    """How a world-level figure is named in the targets' tables: 'ROSTER: row label'."""
    return f"{roster}: {_LABEL[key]}"


def world_targets(worlds: dict[str, xr.Dataset], seeds) -> list[Target]:
    """The published world-level rows against ours, for the rosters in `worlds` (name -> world)."""
    out = []
    for roster, world in worlds.items():
        wanted = published_rows(roster)
        if not wanted:
            continue
        refs = reference_table(world, list(seeds))
        for key, value in wanted.items():
            x = np.array([v["score"] for v in refs[key].values()])
            se = float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")
            out.append(Target(figure_name(roster, key), float(value), value - BAND, value + BAND,
                              float(x.mean()), se))
    return out


_LABEL = {"best-pair-everyone": "best fixed pair (everyone)", "linear-oracle": "per-user linear oracle",
          "best-fixed-pair": "best fixed pair per user"}


def sample_targets(sample: xr.Dataset, ours: xr.Dataset, draws: int = 2000) -> list[Target]:
    """The real sample's statistics (bootstrap intervals over its sessions) against ours on `ours`'s
    seed-0 schedule."""
    boot = bootstrap_means(session_statistics(sample), draws)
    mine = session_statistics(ours)
    return [Target(f"sample: {k}", m, lo, hi, float(mine[k].mean()), float("nan"))
            for k, (m, lo, hi) in boot.items() if k in mine]


def format_targets(targets: list[Target]) -> str:
    """A markdown table: figure, target [interval], ours, inside."""
    lines = ["| figure | target [interval] | ours | inside |", "|---|---|---|---|"]
    for t in targets:
        ours = f"{t.ours:.3f}" if np.isnan(t.ours_se) else f"{t.ours:.1f} ± {t.ours_se:.1f}"
        digits = 1 if t.hi - t.lo >= 0.99 else 3
        lines.append(f"| {t.figure} | {t.target:.{digits}f} [{t.lo:.{digits}f}, {t.hi:.{digits}f}] | {ours} | "
                     f"{'yes' if t.inside else 'no'} |")
    n_in = sum(t.inside for t in targets)
    lines.append(f"\n{n_in} of {len(targets)} figures inside their target's interval")
    return "\n".join(lines)


__all__ = ["Target", "published_rows", "figure_name", "session_statistics", "bootstrap_means", "world_targets", "sample_targets", "format_targets",
           "PER_USER_PAIR", "SAMPLE_ROSTER"]
