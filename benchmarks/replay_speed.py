"""Full replays of one roster, each policy against random pairs in the same process."""
from __future__ import annotations

from benchmarks.measure import Ratio, best_of
from online.replay import replay
from tdmodels.world import session_length

ROUNDS_REF = 350 * 24              # the paper's 350 arrivals x 24 rounds


def measure_replays(world, policies: list[str], repeats: int, arrivals: int | None = None) -> list[Ratio]:
    """Each policy's best-of-`repeats` replay time (seeds 0..) against random pairs', and tempered-KG's
    against CODuel's where both run; compiled kernels are warmed up first."""
    n = arrivals or int(world.attrs["arrivals"])
    S = session_length(world)
    for spec in ["random", *policies]:
        replay(world, 0, spec, arrivals=min(n, 4))                # compile or load the kernels, fill the caches
    note = f"{n * S} rounds a run; per 8400 rounds: "
    ref = best_of(lambda r: replay(world, r, "random", arrivals), repeats)
    times = {spec: best_of(lambda r: replay(world, r, spec, arrivals), repeats) for spec in policies}
    rows = [Ratio("replay", spec, t, "random", ref, note=note + f"{t * ROUNDS_REF / (n * S):.2f} s")
            for spec, t in times.items()]
    if "coduel" in times and "tempered-kg" in times:
        rows.append(Ratio("replay", "tempered-kg", times["tempered-kg"], "coduel", times["coduel"]))
    return rows
