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
# A block's parts: its first arrival (whom no learned prior can protect), arrivals 2-5, and arrivals 6 on
BLOCK_PARTS = (("first arrival", 0, 1), ("arrivals 2-5", 1, 5), ("arrivals 6 on", 5, None))
SHOWN_BLOCKS = 40            # a block table longer than this shows its first and last halves of it
SHOWN_FAILURES = 12          # a verdict names at most this many blocks below a floor, then counts the rest


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
    by = _by_policy(rows)
    against = against if against in by else None
    return switch_starts(segments), format_segment_table(segment_table(by, segments, against, first), first)


def block_part_masks(segments: np.ndarray) -> list[tuple[int, list[np.ndarray]]]:
    """Per segment (block), the first one included: (its first arrival, one mask [arrivals] per part of
    `BLOCK_PARTS`; a part beyond the block's end is empty)."""
    n = len(segments)
    starts = [0] + switch_starts(segments)
    out = []
    for k, a in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else n
        parts = []
        for _, lo, hi in BLOCK_PARTS:
            m = np.zeros(n, dtype=bool)
            m[a + lo:end if hi is None else min(a + hi, end)] = True
            parts.append(m)
        out.append((a, parts))
    return out


def block_table(by_policy: dict, segments: np.ndarray, against: str) -> list[dict]:
    """Each policy's score minus `against`'s, paired over their common seeds, on each part of each block.

    Parameters
    ----------
    by_policy : dict
        {policy: {seed: row}} of one world and truncation.
    segments : array [arrivals]
        `arrival_segments` of that world.
    against : str
        The policy to pair against.

    Returns
    -------
    list of dict
        Per policy other than `against` with common seeds: {"name", "against", "n_common", "blocks": [{"arrival":
        the block's first arrival, "parts": [(mean difference, 95% t half-width, seeds with a defined score) per
        part of `BLOCK_PARTS`]}]}; empty where `against` has no rows.
    """
    if against not in by_policy:
        return []
    base, blocks, lines = by_policy[against], block_part_masks(segments), []
    for spec, seeds in sorted(by_policy.items()):
        common = sorted(set(seeds) & set(base))
        if spec == against or not common:
            continue
        out = []
        for a, masks in blocks:
            parts = []
            for m in masks:
                d = np.array([masked_score(seeds[s], m) - masked_score(base[s], m) for s in common]) if m.any() \
                    else np.array([])
                d = d[np.isfinite(d)]
                parts.append((*t_interval(d), len(d)) if len(d) else (float("nan"), float("nan"), 0))
            out.append({"arrival": a, "parts": parts})
        lines.append({"name": spec, "against": against, "n_common": len(common), "blocks": out})
    return lines


def recovery_failures(line: dict, floors: tuple = (None, -10.0, -2.0)) -> list[str]:
    """The parts of the blocks of one `block_table` line whose mean difference is below its floor.

    Parameters
    ----------
    line : dict
        One line of `block_table`.
    floors : tuple
        One floor per part of `BLOCK_PARTS` (None: no floor); by default none for the first arrival, -10 for
        arrivals 2-5 and -2 for arrivals 6 on (issue 50's recovery floors).

    Returns
    -------
    list of str
        "block at A, PART: MEAN < FLOOR" per part below its floor; [] where every block holds.
    """
    bad = []
    for b in line["blocks"]:
        for (label, _, _), (m, _, k), floor in zip(BLOCK_PARTS, b["parts"], floors):
            if floor is not None and k and m < floor:
                bad.append(f"block at {b['arrival']}, {label}: {m:+.1f} < {floor:g}")
    return bad


def format_block_table(lines: list[dict]) -> str:
    """Markdown: per policy, a row per block with its paired difference on each part (95% intervals)."""
    out = []
    for ln in lines:
        out += ["" if out else None, f"{ln['name']} minus {ln['against']}, paired over {ln['n_common']} seed(s), 95% "
                f"intervals:", "", "| block (arrival) | " + " | ".join(p[0] for p in BLOCK_PARTS) + " |",
                "|---" * (len(BLOCK_PARTS) + 1) + "|"]
        blocks = ln["blocks"]
        for i, b in enumerate(blocks):
            if len(blocks) > SHOWN_BLOCKS and SHOWN_BLOCKS // 2 <= i < len(blocks) - SHOWN_BLOCKS // 2:
                if i == SHOWN_BLOCKS // 2:
                    out.append(f"| ... {len(blocks) - SHOWN_BLOCKS} more blocks | | | |")
                continue
            out.append(f"| {b['arrival']} | " + " | ".join(_diff(m, h) if k else "-" for m, h, k in b["parts"]) + " |")
    return "\n".join(x for x in out if x is not None)


def block_lines(rows: list[dict], world, against: str) -> list[dict]:
    """`block_table` of stored rows of one world and truncation against the policy `against`; [] where the world
    has no segments, the runs end before its first switch, or `against` has no rows."""
    segments = arrival_segments(world, int(rows[0]["arrivals"])) if rows else None
    if segments is None or not switch_starts(segments):
        return []
    return block_table(_by_policy(rows), segments, against)


def block_report(rows: list[dict], world, against: str) -> str | None:
    """`format_block_table` of `block_lines`, with a line per policy saying whether every block's arrivals 2-5 and
    6 on hold the recovery floors of `recovery_failures`; None where there are no lines."""
    lines = block_lines(rows, world, against)
    if not lines:
        return None
    verdicts = [f"- {ln['name']}: " + _verdict(recovery_failures(ln)) for ln in lines]
    return (format_block_table(lines) + f"\n\nagainst {against}, arrivals 2-5 at least -10 and arrivals 6 on at "
            "least -2 (mean over seeds), block by block:\n" + "\n".join(verdicts))


def _verdict(failures: list[str]) -> str:
    if not failures:
        return "every block within the floors"
    more = len(failures) - SHOWN_FAILURES
    return "; ".join(failures[:SHOWN_FAILURES]) + (f"; and {more} more" if more > 0 else "")


def _by_policy(rows: list[dict]) -> dict:
    """{policy: {seed: row}} of stored rows."""
    by: dict = {}
    for r in rows:
        by.setdefault(r["policy"], {})[int(r["seed"])] = r
    return by


def _diff(m: float, h: float) -> str:
    if not np.isfinite(m):
        return "undefined (no random excess)"
    return f"{m:+.1f}" + (f" [{m - h:+.1f}, {m + h:+.1f}]" if np.isfinite(h) else "")


__all__ = ["AFTER_SWITCH", "BLOCK_PARTS", "block_part_masks", "block_table", "recovery_failures", "format_block_table",
           "block_lines", "block_report", "arrival_segments", "switch_starts", "switch_masks", "masked_score",
           "segment_table",
           "format_segment_table", "segment_report"]
