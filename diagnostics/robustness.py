"""The robustness rule: a policy is shown as a default only where it is at least a baseline's equal on every
world it must hold on.

On each world, the paired score difference from the baseline over common seeds gets a 95% t interval; the
policy passes when the interval's lower end is above `margin` (-1 score point) on every world.

A stress preset is a family of worlds, and a policy that is the baseline's equal on a preset fails the rule on
some single world of it by noise alone; so over a family (`family_robustness`) the rule is read once, on the
paired differences of every (world, seed) pair of at least `MIN_WORLDS` worlds pooled into one t interval, each
world's own interval shown beside it.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from diagnostics.stats import t_interval

MARGIN = -1.0                # the lowest lower end of the paired 95% interval that passes, score points
BASELINE = "coduel"
MIN_WORLDS = 4               # the fewest worlds of a family (a stress preset's knobs) the rule is read over


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


class FamilyVerdict(NamedTuple):
    """A policy's paired score difference from the baseline over a family of worlds: pooled over every (world,
    seed) pair, and each world's own."""
    family: str
    pooled: WorldVerdict     # world = the family's name, n = the pairs pooled
    worlds: tuple            # (WorldVerdict, ...) one per world of the family
    needs: int               # the fewest worlds the family is read over (1 for a roster)

    @property
    def passes(self) -> bool:
        return bool(len(self.worlds) >= self.needs and all(w.n >= 2 for w in self.worlds) and self.pooled.passes)


def family_robustness(rows_by_world: dict, family_of: dict, specs, baseline: str = BASELINE,
                      min_worlds: int = MIN_WORLDS) -> dict[str, list[FamilyVerdict]]:
    """{spec: [FamilyVerdict per family]} of each of `specs` against the baseline.

    Parameters
    ----------
    rows_by_world : dict
        {world: [rows]} of stored runs (canonical policy specs in ``row["policy"]``).
    family_of : dict
        {world: family}: the worlds of one family (the fresh worlds of a stress preset's knobs) are read as one
        paired comparison and need `min_worlds` of them; a world that is its own family (a roster) needs itself.
        A world missing here is its own family.
    specs : iterable of str
        The policies judged (those beyond the paper's; the baseline and random are skipped).

    Returns
    -------
    dict
        In the order of the families' first worlds; a world without the policy's or the baseline's rows (or with
        one common seed) fails its family.
    """
    by_world = robustness(rows_by_world, baseline)
    families: dict[str, list[str]] = {}
    for world in rows_by_world:
        families.setdefault(family_of.get(world, world), []).append(world)
    diffs: dict[tuple, list[float]] = {}
    for world, rows in rows_by_world.items():
        score = {(r["policy"], int(r["seed"])): float(r["score"]) for r in rows}
        for (spec, seed), v in score.items():
            if (baseline, seed) in score:
                diffs.setdefault((spec, world), []).append(v - score[baseline, seed])
    out: dict[str, list[FamilyVerdict]] = {}
    for spec in specs:
        if spec in (baseline, "random"):
            continue
        verdicts = {v.world: v for v in by_world.get(spec, [])}
        for family, worlds in families.items():
            pooled = [d for w in worlds for d in diffs.get((spec, w), [])]
            m, h = t_interval(pooled) if pooled else (float("nan"), float("nan"))
            each = tuple(verdicts.get(w, WorldVerdict(w, 0, float("nan"), float("nan"), float("nan"))) for w in worlds)
            needs = min_worlds if family != worlds[0] or len(worlds) > 1 else 1
            out.setdefault(spec, []).append(FamilyVerdict(family, WorldVerdict(family, len(pooled), m, m - h, m + h),
                                                          each, needs))
    return out


def format_family_robustness(by_policy: dict[str, list[FamilyVerdict]], baseline: str = BASELINE) -> str:
    """Markdown: per policy and family, the pooled interval, each world's, and whether the rule holds there; then
    per policy whether it holds on every family."""
    out = [f"| policy | worlds | score - {baseline}, pooled | each world | holds (lower end > {MARGIN:g}) |",
           "|---|---|---|---|---|"]
    for spec, fs in by_policy.items():
        for f in fs:
            p = f.pooled
            each = "; ".join(f"{w.world} {w.mean:+.1f} [{w.lo:+.1f}, {w.hi:+.1f}] ({w.n})" for w in f.worlds)
            short = "" if len(f.worlds) >= f.needs else f", {len(f.worlds)} of the {f.needs} worlds it needs"
            out.append(f"| {spec} | {f.family} ({len(f.worlds)}) | {p.mean:+.1f} [{p.lo:+.1f}, {p.hi:+.1f}] over "
                       f"{p.n} pairs | {each} | {'yes' if f.passes else 'no'}{short} |")
    out += [""] + [f"- {spec}: {'holds on every family' if fs and all(f.passes for f in fs) else 'does not hold on '}"
                   f"{', '.join(f.family for f in fs if not f.passes)}" for spec, fs in by_policy.items()]
    return "\n".join(out)


def format_world_differences(by_policy: dict[str, list[WorldVerdict]], baseline: str = BASELINE) -> str:
    """Markdown: per policy and world, the paired score difference from the baseline with its 95% interval, the
    common seeds, and whether its lower end is above `MARGIN`."""
    out = [f"| policy | roster | score - {baseline}, paired | seeds | lower end > {MARGIN:g} |", "|---|---|---|---|---|"]
    for spec, vs in by_policy.items():
        for v in vs:
            out.append(f"| {spec} | {v.world} | {v.mean:+.1f} [{v.lo:+.1f}, {v.hi:+.1f}] | {v.n} | "
                       f"{'yes' if v.passes else 'no'} |")
    return "\n".join(out)


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


__all__ = ["MARGIN", "BASELINE", "MIN_WORLDS", "WorldVerdict", "FamilyVerdict", "robustness", "family_robustness",
           "passes", "format_robustness", "format_family_robustness",
           "format_world_differences"]
