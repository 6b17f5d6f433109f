"""The short benchmark and its regression check against a committed table.

    python -m benchmarks.run --short --json benchmarks/baseline.json   # measure and commit the table
    python -m benchmarks.run --check benchmarks/baseline.json          # CI: fail on a regression

The short form replays `SHORT_POLICIES` on the first `SHORT_ARRIVALS` arrivals of dev, best of
`SHORT_REPEATS`, each against random pairs in the same process. A check measures the same
replays (the table's own settings) and fails when a ratio exceeds the committed one by more than
`ALLOWANCE` (50%). The noise allowance: repeated short runs on one machine stayed within about 10%
of each other (replays interleaved with their reference); another processor may run every policy
faster or slower against random pairs, so the limits scale by the median shift over all figures when
it is above 1 (`machine_factor`, at most `MAX_MACHINE_FACTOR`), and what stands out is a policy that
became slower for itself; a slowdown shared by most policies fails once it passes 1.5 x 1.5. A figure
over its limit is measured again (`CONFIRM_REPEATS` x the repeats) and fails only when that measurement is
over the same limit too: on a busy machine one short ratio can jump past the allowance with nothing
changed in its policy, while a policy made slower stays slower.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from benchmarks.measure import Ratio
from tdmodels.file_read import read_regular_text

SHORT_POLICIES = "no-transfer,hierts,coduel,coduel-greedy,tempered-kg,colstim,coldb,coldb-lr"
SHORT_ARRIVALS = 150
SHORT_REPEATS = 5
ALLOWANCE = 1.5
MAX_MACHINE_FACTOR = 1.5    # however slow a machine looks, a ratio over ALLOWANCE x this x committed fails
MAX_TABLE_BYTES = 1 << 20   # a short table is a few kB
MAX_REPEATS = 20            # best of this many replays at most (a table asking more is refused, not obeyed)
MAX_TABLE_POLICIES = 64     # policies a table replays at most (each once)
CONFIRM_REPEATS = 2         # a figure over its limit is measured again, best of this many x the table's repeats


def load_baseline(path: str | Path) -> tuple[dict, dict]:
    """(meta, ratios) of a table written by ``--short --json``; ValueError naming what is wrong with it.

    A table is data: it may name only registered policies (nothing it names is imported to find out),
    one of the rosters, and sizes within the command line's own bounds."""
    try:
        data = json.loads(read_regular_text(path, MAX_TABLE_BYTES))
        meta, rows = data["meta"], data["rows"]
        if not isinstance(meta, dict) or not isinstance(rows, list):
            raise TypeError("meta must be an object and rows a list")
        ratios = {(r["group"], r["name"], r["reference"]): float(r["ratio"]) for r in rows}
        if not all(isinstance(x, str) for key in ratios for x in key):
            raise TypeError("every row's group, name and reference must be text")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:   # UnreadableFileError too
        raise ValueError(f"{path}: not a benchmark table written by --json ({type(exc).__name__}: {exc})") from None
    if not meta.get("short"):
        raise ValueError(f"{path}: not a short table (write one with --short --json)")
    if not ratios or not isinstance(meta.get("policies"), str) or not isinstance(meta.get("world"), str):
        raise ValueError(f"{path}: a table without rows, or without its policies or world as text")
    from online.registry import PolicySpecError, registered_target, split_specs
    from tdmodels.limits import MAX_ARRIVALS
    from tdmodels.rosters import ROSTERS

    try:
        specs = split_specs(meta["policies"])
    except PolicySpecError as exc:
        raise ValueError(f"{path}: meta policies: {exc}") from None
    if len(set(specs)) != len(specs) or len(specs) > MAX_TABLE_POLICIES:
        twice = next((s for s in specs if specs.count(s) > 1), None)
        raise ValueError(f"{path}: meta policies " + (f"name {twice!r} twice" if twice else
                                                      f"name {len(specs):,} policies; at most {MAX_TABLE_POLICIES}")
                         + " (a table this runner wrote names each policy once)")
    plugins = [s for s in specs if registered_target(s) is None]
    if plugins:
        raise ValueError(f"{path}: meta policies may name registered policies only, not {', '.join(map(repr, plugins))} "
                         "(a table is data: nothing it names is imported)")
    if meta["world"] not in ROSTERS:
        raise ValueError(f"{path}: meta world {meta['world']!r} is not a roster ({', '.join(ROSTERS)})")
    arrivals, repeats = meta.get("arrivals"), meta.get("repeats")
    for what, v, hi in (("arrivals", arrivals, MAX_ARRIVALS), ("repeats", repeats, MAX_REPEATS)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
            raise ValueError(f"{path}: meta {what} must be an integer in [1, {hi:,}], got {v!r}")
    bad = [f"{k[1]} / {k[2]}" for k, v in ratios.items() if not (math.isfinite(v) and v > 0)]
    if bad:
        raise ValueError(f"{path}: ratios must be finite and positive; not so for {', '.join(bad)}")
    return meta, ratios


def machine_factor(measured: list[Ratio], committed: dict) -> float:
    """The median over figures of measured ratio / committed ratio: how much slower than the table's machine
    this one runs the policies relative to their references (1 here, up to the noise)."""
    shifts = sorted(r.ratio / committed[(r.group, r.name, r.reference)] for r in measured
                    if (r.group, r.name, r.reference) in committed)
    if not shifts:
        return 1.0
    mid = len(shifts) // 2
    return shifts[mid] if len(shifts) % 2 else 0.5 * (shifts[mid - 1] + shifts[mid])


def limit(committed_ratio: float, factor: float, allowance: float = ALLOWANCE) -> float:
    """The largest ratio that passes: allowance x the committed one x the machine factor, the factor taken
    only when above 1 and at most `MAX_MACHINE_FACTOR`."""
    return allowance * committed_ratio * min(max(1.0, factor), MAX_MACHINE_FACTOR)


def over_limit(measured: list[Ratio], committed: dict, factor: float, allowance: float = ALLOWANCE) -> list[tuple]:
    """The keys (group, name, reference) of the measured figures over their `limit`."""
    return [(r.group, r.name, r.reference) for r in measured if (r.group, r.name, r.reference) in committed
            and r.ratio > limit(committed[(r.group, r.name, r.reference)], factor, allowance)]


def to_measure_again(keys: list[tuple]) -> list[str]:
    """The policies whose replays measure the figures `keys` again (a policy against random pairs, or
    tempered-KG against CODuel: both), in first-named order."""
    specs = []
    for _, name, reference in keys:
        for spec in (name, reference):
            if spec != "random" and spec not in specs:
                specs.append(spec)
    return specs


def compare(measured: list[Ratio], committed: dict, allowance: float = ALLOWANCE,
            factor: float | None = None) -> tuple[list[str], list[str]]:
    """(lines of the comparison, the regressions among them). A measured ratio over allowance x the committed
    one x the machine factor (`machine_factor`, when above 1: another processor may run every policy
    slower against its reference; a single policy that became slower stands out from the median) is a
    regression; a figure the table lacks, or lacks here, is named. `factor`: the machine factor to use
    (a measurement again of a few figures takes the factor of the whole first one); by default the
    measured figures' own."""
    lines, bad = [], []
    factor = machine_factor(measured, committed) if factor is None else factor
    lines.append(f"machine factor {factor:.2f} (median measured / committed ratio; limits scale by it when above 1, "
                 f"by at most {MAX_MACHINE_FACTOR})")
    seen = set()
    for r in measured:
        key = (r.group, r.name, r.reference)
        seen.add(key)
        if key not in committed:
            lines.append(f"{r.group} {r.name} / {r.reference}: {r.ratio:.2f}x, not in the committed table")
            continue
        most = limit(committed[key], factor, allowance)
        line = (f"{r.group} {r.name} / {r.reference}: {r.ratio:.2f}x, committed {committed[key]:.2f}x, "
                f"limit {most:.2f}x")
        if r.ratio > most:
            line += "  REGRESSION"
            bad.append(line)
        lines.append(line)
    for key in sorted(set(committed) - seen):
        line = f"{key[0]} {key[1]} / {key[2]}: in the committed table, not measured"
        lines.append(line)
        bad.append(line)
    return lines, bad
