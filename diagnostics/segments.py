"""Figures per segment of a world whose population changes as students arrive.

An ordered world (``tdmodels.world``: student i is arrival i) may number its students' segments
(``student_segment``), e.g. the blocks of a drifting stress world. A switch is an arrival where a new
segment starts. What a policy does just after a switch is what a run's total hides: the first
`first` arrivals after every switch are scored apart from the rest, and each switch on its own, with
the benchmark's score summed over those arrivals (``online.scoring.benchmark_score``).
"""
from __future__ import annotations

import numpy as np

from diagnostics.stats import mean_se, t_interval
from online.scoring import benchmark_score

AFTER_SWITCH = 5             # arrivals after a switch scored apart


def arrival_segments(world, n_arrivals: int) -> np.ndarray | None:
    """Segment numbers [n_arrivals] of a run's arrivals, or None where the world has no segments."""
    if "student_segment" not in world.variables or str(world.attrs["arrival_mode"]) != "ordered":
        return None
    return np.asarray(world["student_segment"].values)[:n_arrivals].astype(np.int64)


def switch_starts(segments: np.ndarray) -> list[int]:
    """The arrivals at which a segment starts, the first arrival's excepted."""
    return (np.flatnonzero(np.diff(segments)) + 1).tolist()


def switch_masks(segments: np.ndarray, first: int = AFTER_SWITCH) -> list[np.ndarray]:
    """One boolean mask [arrivals] per switch: its first `first` arrivals (fewer where the segment or the run
    ends sooner); `first` is at least 1."""
    if isinstance(first, bool) or not isinstance(first, (int, np.integer)) or first < 1:
        raise ValueError(f"first {first!r}: the arrivals after a switch to score apart, an integer >= 1")
    n, out = len(segments), []
    starts = switch_starts(segments)
    for k, s in enumerate(starts):
        end = min(s + first, starts[k + 1] if k + 1 < len(starts) else n)
        m = np.zeros(n, dtype=bool)
        m[s:end] = True
        out.append(m)
    return out


def masked_score(row: dict, mask: np.ndarray) -> float:
    """The benchmark score of one run over the arrivals in `mask` (its per-arrival regret, floor and random
    regret summed over them); NaN where those arrivals have no random excess (the score is undefined)."""
    pu = row["per_user"]
    R, G, Rr = (float(np.asarray(pu[k], dtype=float)[mask].sum()) for k in ("regret", "floor", "random"))
    return float(benchmark_score(R, G, Rr)) if Rr > G else float("nan")      # NaN: no random excess to score on


def segment_table(by_policy: dict, segments: np.ndarray, against: str | None = None,
                  first: int = AFTER_SWITCH) -> list[dict]:
    """Per policy: its score over the first `first` arrivals after every switch, over the rest, and at its worst
    switch (the lowest mean over seeds), each mean +- s.e. over its seeds; with `against`, the paired differences
    from that policy over common seeds (95% t intervals), the worst switch being the one with the lowest mean
    difference.

    Parameters
    ----------
    by_policy : dict
        {policy: {seed: row}} of one world and truncation.
    segments : array [arrivals]
        `arrival_segments` of that world.
    """
    masks = switch_masks(segments, first)
    if not masks:
        return []
    after = np.any(masks, axis=0)
    lines = []
    for spec, seeds in sorted(by_policy.items()):
        order = sorted(seeds)
        per_switch = np.array([[masked_score(seeds[s], m) for m in masks] for s in order])       # [seeds, switches]
        line = {"name": spec, "n": len(order), "after": mean_se([masked_score(seeds[s], after) for s in order]),
                "rest": mean_se([masked_score(seeds[s], ~after) for s in order]),
                "worst_switch": _worst(per_switch, masks)}
        if against is not None and spec != against and against in by_policy:
            common = sorted(set(seeds) & set(by_policy[against]))
            if len(common) >= 1:
                base = by_policy[against]
                diff = lambda m: [masked_score(seeds[s], m) - masked_score(base[s], m) for s in common]  # noqa: E731
                per = np.array([diff(m) for m in masks]).T                                   # [seeds, switches]
                line.update({"against": against, "n_common": len(common), "after_diff": t_interval(diff(after)),
                             "rest_diff": t_interval(diff(~after)), "worst_switch_diff": _worst(per, masks, True)})
        lines.append(line)
    return lines


def _worst(per_switch: np.ndarray, masks: list[np.ndarray], interval: bool = False) -> dict:
    """The switch with the lowest mean over seeds: its first arrival, mean and s.e. (or t half-width)."""
    means = per_switch.mean(0)
    k = int(np.argmin(means))
    m, spread = (t_interval if interval else mean_se)(per_switch[:, k])
    return {"arrival": int(np.flatnonzero(masks[k])[0]), "mean": m, "spread": spread}


def format_segment_table(lines: list[dict], first: int = AFTER_SWITCH) -> str:
    """Markdown: the score after switches, at the worst switch and elsewhere; paired differences when present."""
    def pm(m, s):
        if not np.isfinite(m):
            return "undefined (no random excess)"
        return f"{m:.1f}" + (f" ± {s:.1f}" if np.isfinite(s) else "")

    out = [f"| policy | seeds | first {first} after a switch | worst switch (arrival) | the rest |",
           "|---|---|---|---|---|"]
    for ln in lines:
        w = ln["worst_switch"]
        out.append(f"| {ln['name']} | {ln['n']} | {pm(*ln['after'])} | {pm(w['mean'], w['spread'])} ({w['arrival']}) "
                   f"| {pm(*ln['rest'])} |")
    paired = [ln for ln in lines if "against" in ln]
    if paired:
        out += ["", f"paired against {paired[0]['against']} (95% intervals, common seeds):", "",
                f"| policy | seeds | first {first} after a switch | worst switch (arrival) | the rest |",
                "|---|---|---|---|---|"]
        for ln in paired:
            a, r, w = ln["after_diff"], ln["rest_diff"], ln["worst_switch_diff"]
            out.append(f"| {ln['name']} | {ln['n_common']} | {_diff(*a)} | {_diff(w['mean'], w['spread'])} "
                       f"({w['arrival']}) | {_diff(*r)} |")
    return "\n".join(out)


def segment_report(rows: list[dict], world, against: str | None = None,
                   first: int = AFTER_SWITCH) -> tuple[list[int], str] | None:
    """(the switches' arrivals, `format_segment_table` of `segment_table`) for stored rows of one world and
    truncation; None where the world has no segments or the runs end before its first switch."""
    segments = arrival_segments(world, int(rows[0]["arrivals"])) if rows else None
    if segments is None or not switch_starts(segments):
        return None
    by: dict = {}
    for r in rows:
        by.setdefault(r["policy"], {})[int(r["seed"])] = r
    against = against if against in by else None
    return switch_starts(segments), format_segment_table(segment_table(by, segments, against, first), first)


def _diff(m: float, h: float) -> str:
    if not np.isfinite(m):
        return "undefined (no random excess)"
    return f"{m:+.1f}" + (f" [{m - h:+.1f}, {m + h:+.1f}]" if np.isfinite(h) else "")


__all__ = ["AFTER_SWITCH", "arrival_segments", "switch_starts", "switch_masks", "masked_score", "segment_table",
           "format_segment_table", "segment_report"]
