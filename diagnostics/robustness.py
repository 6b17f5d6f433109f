"""The robustness rule: a policy is shown as a default only where it is at least a baseline's equal on every
world it must hold on.

On each world, the paired score difference from the baseline over common seeds gets a 95% t interval; the
policy passes when the interval's lower end is above `margin` (-1 score point) on every world.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from diagnostics.stats import t_interval

MARGIN = -1.0                # the lowest lower end of the paired 95% interval that passes, score points
BASELINE = "coduel"


class WorldVerdict(NamedTuple):
    """A policy's paired score difference from the baseline on one world."""
    world: str
    n: int                   # common seeds
    mean: float
    lo: float
    hi: float

    @property
    def passes(self) -> bool:
        return bool(self.n >= 2 and self.lo > MARGIN)


def robustness(rows_by_world: dict, baseline: str = BASELINE) -> dict[str, list[WorldVerdict]]:
    """{policy: [WorldVerdict per world]} of every policy but the baseline (and random) against the baseline, on
    every world that has rows; a world where the policy or the baseline has none (or one common seed) fails it.

    Parameters
    ----------
    rows_by_world : dict
        {world: [rows]} of stored runs (canonical policy specs in ``row["policy"]``).
    """
    scores: dict[str, dict[str, dict[int, float]]] = {}
    for world, rows in rows_by_world.items():
        for r in rows:
            scores.setdefault(world, {}).setdefault(r["policy"], {})[int(r["seed"])] = float(r["score"])
    policies = sorted({p for by in scores.values() for p in by} - {baseline, "random"})
    out: dict[str, list[WorldVerdict]] = {p: [] for p in policies}
    for world, by in scores.items():
        base = by.get(baseline, {})
        for spec in policies:               # a world without the policy's or the baseline's rows fails it
            common = sorted(set(by.get(spec, {})) & set(base))
            diffs = [by[spec][s] - base[s] for s in common]
            m, h = t_interval(diffs) if diffs else (float("nan"), float("nan"))
            out[spec].append(WorldVerdict(world, len(common), m, m - h, m + h))
    return out


def passes(verdicts: list[WorldVerdict]) -> bool:
    """Whether a policy passes on every world."""
    return bool(verdicts) and all(v.passes for v in verdicts)


def format_robustness(by_policy: dict[str, list[WorldVerdict]], baseline: str = BASELINE) -> str:
    """Markdown: per policy, its worst world (the lowest lower end) and whether it passes everywhere."""
    out = [f"| policy | worlds | worst world | score - {baseline} there | passes (lower end > {MARGIN:g} everywhere) |",
           "|---|---|---|---|---|"]
    for spec, vs in sorted(by_policy.items()):
        w = min(vs, key=lambda v: v.lo if np.isfinite(v.lo) else -np.inf)
        out.append(f"| {spec} | {len(vs)} | {w.world} | {w.mean:+.1f} [{w.lo:+.1f}, {w.hi:+.1f}] over {w.n} seeds "
                   f"| {'yes' if passes(vs) else 'no'} |")
    return "\n".join(out)


__all__ = ["MARGIN", "BASELINE", "WorldVerdict", "robustness", "passes", "format_robustness"]
