"""Recovery after a change, as a curve: a policy's score at each arrival within a block of a world whose
population changes (``diagnostics.segments``), the blocks after every switch taken together.

For one run (seed), the score at position k of a block is the benchmark score (``online.scoring``) over the
k-th arrival of every block that starts at a switch (the first block, which follows no change, is left out);
the curve is its mean over seeds with a 95% t band. Positions run to the shortest of those blocks, at most
`MAX_SPAN`. The figure shows no-transfer, CODuel and the change point (`SHOWN`), those of them that ran.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from diagnostics.segments import arrival_segments, masked_score, switch_starts
from diagnostics.stats import t_quantile

MAX_SPAN = 50                # positions within a block shown at most
SHOWN = ("no-transfer", "coduel", "coduel-change-point")


class RecoveryCurve(NamedTuple):
    """Score by position within a block after a switch, over seeds."""
    position: np.ndarray     # [L] 1 for a block's first arrival
    mean: np.ndarray         # [L] mean over seeds of the score at that position over every switched block
    lo: np.ndarray           # [L] 95% band (NaN below two seeds)
    hi: np.ndarray
    n_seeds: int
    blocks: int              # the switched blocks taken together


def block_positions(segments: np.ndarray, max_span: int = MAX_SPAN) -> list[np.ndarray]:
    """One mask [arrivals] per position k of a block: the k-th arrival of every block that starts at a switch,
    for k below the shortest such block's length (and `max_span`); empty where no switch is in the run."""
    n, starts = len(segments), switch_starts(segments)
    if not starts:
        return []
    ends = starts[1:] + [n]
    span = min(min(e - s for s, e in zip(starts, ends)), max_span)
    out = []
    for k in range(span):
        m = np.zeros(n, dtype=bool)
        m[[s + k for s in starts]] = True
        out.append(m)
    return out


def recovery_curve(rows: list[dict], world, max_span: int = MAX_SPAN) -> RecoveryCurve | None:
    """The recovery curve of one policy's stored rows (one per seed, one truncation) on a segmented world;
    None where the world has no segments, the runs end before the first switch or no row is given."""
    if not rows:
        return None
    segments = arrival_segments(world, int(rows[0]["arrivals"]))
    masks = block_positions(segments, max_span) if segments is not None else []
    if not masks:
        return None
    scores = np.array([[masked_score(r, m) for m in masks] for r in rows])     # [seeds, L]
    n = len(rows)
    mean = scores.mean(axis=0)
    if n >= 2:
        h = t_quantile(n) * scores.std(axis=0, ddof=1) / np.sqrt(n)
    else:
        h = np.full(len(masks), np.nan)
    return RecoveryCurve(np.arange(1, len(masks) + 1), mean, mean - h, mean + h, n, len(switch_starts(segments)))


def plot_recovery(curves: dict[str, RecoveryCurve], title: str, path) -> None:
    """One PNG: each policy's recovery curve with its 95% band over seeds."""
    from diagnostics.figures import new_figure
    from tdmodels.atomic_file import atomic_save

    fig, ax = new_figure(figsize=(8, 4.5))
    for name, c in curves.items():
        line, = ax.plot(c.position, c.mean, lw=1.4, marker="o", ms=2.5, label=f"{name} ({c.n_seeds} seeds)")
        ax.fill_between(c.position, c.lo, c.hi, color=line.get_color(), alpha=0.18, lw=0)
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set(xlabel="arrival within the block (1: the first user after the change)",
           ylabel=f"score over {blocks_after_a_change(max((c.blocks for c in curves.values()), default=0))}",
           title=title)
    ax.legend(fontsize=8)
    atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=100, bbox_inches="tight", format="png"))


def write_recovery_figure(rows: list[dict], world, name: str, folder) -> tuple[Path, int] | None:
    """folder/recovery-NAME.png: the recovery curves of the `SHOWN` policies among `rows` (stored rows of one world,
    one truncation) on a segmented world; returns (its path, the blocks after a change), or None where the world
    has no change in the runs or none of those policies ran."""
    from diagnostics.leaderboard_report import BEYOND_MARK, display_name
    from tdmodels.rosters import world_name

    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(display_name(r["policy"]).removesuffix(BEYOND_MARK), []).append(r)
    curves = {n: c for n in SHOWN if (c := recovery_curve(by.get(n, []), world)) is not None}
    if not curves:
        return None
    path = Path(folder) / f"recovery-{world_name(name)}.png"
    plot_recovery(curves, f"{name}: recovery after a change", path)
    return path, next(iter(curves.values())).blocks


def blocks_after_a_change(n: int) -> str:
    """"the block after the change" or "the N blocks after a change", for a figure's words."""
    return "the block after the change" if n == 1 else f"the {n} blocks after a change"


__all__ = ["blocks_after_a_change", "MAX_SPAN", "SHOWN", "RecoveryCurve", "block_positions", "recovery_curve", "plot_recovery", "write_recovery_figure"]
