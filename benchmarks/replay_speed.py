"""Full replays of one roster, each policy against random pairs in the same process."""
from __future__ import annotations

import time

from benchmarks.measure import Ratio
from online.replay import replay
from tdmodels.world import session_length

ROUNDS_REF = 350 * 24              # the paper's 350 arrivals x 24 rounds


def best_replay_times(world, specs: list[str], repeats: int, arrivals: int | None = None) -> dict[str, float]:
    """Each spec's best-of-`repeats` replay time (seeds 0..), the kernels warmed up first and the repeats
    interleaved (every spec once, `repeats` times over), so that a machine that slows down or speeds up
    during the measurement moves every spec alike."""
    for spec in specs:
        replay(world, 0, spec, arrivals=min(arrivals or 4, 4))      # compile or load the kernels, fill the caches
    times = {spec: float("inf") for spec in specs}
    for r in range(repeats):
        for spec in specs:
            t0 = time.perf_counter()
            replay(world, r, spec, arrivals)
            times[spec] = min(times[spec], time.perf_counter() - t0)
    return times


def measure_replays(world, policies: list[str], repeats: int, arrivals: int | None = None) -> list[Ratio]:
    """Each policy's best-of-`repeats` replay time (seeds 0..) against random pairs', and tempered-KG's
    against CODuel's where both run; compiled kernels are warmed up first. The repeats are interleaved
    (random, then every policy, `repeats` times over), so that a machine that slows down or speeds up
    during the measurement moves a policy and its reference alike."""
    n = min(arrivals or int(world.attrs["arrivals"]), int(world.attrs["arrivals"]))
    S = session_length(world)
    times = best_replay_times(world, ["random", *policies], repeats, arrivals)
    ref = times.pop("random")
    note = f"{n * S} rounds a run; per 8400 rounds: "
    rows = [Ratio("replay", spec, t, "random", ref, note=note + f"{t * ROUNDS_REF / (n * S):.2f} s")
            for spec, t in times.items()]
    if "coduel" in times and "tempered-kg" in times:
        rows.append(Ratio("replay", "tempered-kg", times["tempered-kg"], "coduel", times["coduel"]))
    return rows
