"""Which learner predicted a user's clicks better, CODuel or low-rank? Read off `coduel-or-low-rank`'s click log.

The diagnostic behind the `coduel-or-low-rank` rows of docs/results/stress.md. Both learners see every
click and record, before it, their probability that the first persona wins (the click log's
``predictions``). Per session this sums each learner's log predictive probability of the clicks, and
prints low-rank's minus CODuel's, averaged over sessions, and the share of sessions in which the policy
followed low-rank (its rule, recomputed from the log: the better sum over the last `memory` sessions).

    python examples/which_learner_predicted.py --world dev --seeds 2
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import numpy as np

from online.policies.predictive_selection import followed_from_log
from online.replay import replay_logged
from tdmodels.rosters import open_world


def session_log_predictive(log):
    """{learner: [N] summed log predictive probability of each session's clicks}."""
    y = log.outcome.astype(float)
    return {k: np.log(np.where(y == 1, p, 1.0 - p)).sum(axis=1) for k, p in log.predictions.items()}


def main(args):
    world = open_world(args.world, allow_test=args.allow_test)
    if args.seeds < 1:
        raise SystemExit(f"--seeds {args.seeds}: at least 1")
    print("world  seed  score  low-rank minus CODuel, nats a session  sessions following low-rank")
    for seed in range(args.seeds):
        row, log = replay_logged(world, seed, "coduel-or-low-rank", arrivals=args.arrivals)
        lp = session_log_predictive(log)
        diff = lp["low_rank"] - lp["coduel"]
        print(f"{args.world} {seed:4d}  {row['score']:5.1f}  {diff.mean():+.2f}  {followed_from_log(log.predictions, log.outcome).mean():.0%}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", default="dev")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--arrivals", type=int, default=None)
    p.add_argument("--allow-test", action="store_true", help="allow held-out rosters (evaluation only)")
    main(p.parse_args())
