"""Bring your own world: utilities (and optionally judge probabilities) as arrays, replayed like a roster.

Makes a world of students from three taste groups (each group prefers some personas on every
question, with question-to-question noise), saves it in the world
format, and runs random pairs, no-transfer and CODuel on it through the run store, as
`tutorduel replay --world mine` would.

    python examples/bring_your_own_world.py --students 30 --seeds 2
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse
import tempfile
from pathlib import Path

import numpy as np

from diagnostics.stats import leaderboard, format_table
from online.store import RunStore
from online.sweep import run_sweep
from tdmodels.from_arrays import world_from_arrays
from tdmodels.world import save_world, world_digest


def main(args):
    rng = np.random.default_rng(args.seed)
    taste = rng.uniform(size=(3, 6))                                         # three kinds of students
    group = rng.integers(3, size=args.students)
    noise = 0.15 * rng.standard_normal((args.students, args.questions, 6))
    U = np.clip(taste[group][:, None, :] + noise, 0, 1)                      # [students, questions, personas]
    world = world_from_arrays(U, name="mine", arrivals=args.arrivals)       # BTL clicks, beta 11, P in [0.1, 0.9]
    with tempfile.TemporaryDirectory() as tmp:
        path = save_world(world, Path(tmp) / "mine.nc")
        store = RunStore(Path(tmp) / "runs")
        run_sweep([str(path)], list(range(args.seeds)), ["random", "no-transfer", "coduel"], store, progress=False)
        rows = list(store.rows(world_digest(world)))
        print(format_table(leaderboard(rows, world), title=f"mine ({args.arrivals} arrivals)"))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--students", type=int, default=60)
    ap.add_argument("--questions", type=int, default=60)
    ap.add_argument("--arrivals", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=4)
    main(ap.parse_args())
