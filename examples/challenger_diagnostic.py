"""How often does CODuel's challenger fire, and is its pick better than the persona it replaces?

The diagnostic behind the `coduel-challenger` policy (docs/results/stress.md). It replays
`coduel[challenger=X]` and, every round, also asks CODuel's own rule (challenger 0) for its pair on the
same state. Where the two pairs differ, the challenger fired: its pick is compared with CODuel's first
and second persona by the student's true utility on that question.

    python examples/challenger_diagnostic.py --world dev --seeds 1
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse
import numpy as np

from online.policies import coduel as cd
from online.replay import play, prepare_run, replay
from online.verify import score_played
from tdmodels.rosters import open_world


def diagnose(world, seed, threshold, arrivals=None):
    """Counts of the rounds with transfer on and of those challenged, and [challenged, 3] the student's
    utilities of the pick, CODuel's first and CODuel's second in each challenged round. The run's score is
    checked against the registered policy's."""
    run = prepare_run(world, seed, f"coduel[challenger={threshold}]", arrivals)
    own = cd.check_settings(cd.Settings())            # CODuel's own rule: the challenger off
    where = {"arrival": 0, "round": 0}
    counts = {"transfer": 0, "challenged": 0}
    triples = []

    def select(state, Phi, rng):
        pair, info = run.learner.select(state, Phi, rng)
        if state.transfer:
            counts["transfer"] += 1
            first, second = cd.select(state, Phi, own, rng)
            if tuple(pair) != (first, second):
                counts["challenged"] += 1
                u = run.U[where["arrival"], where["round"]]
                triples.append((u[pair[1]], u[first], u[second]))
        return pair, info

    def observe(kind, a, t, info):
        if kind in ("start_session", "update"):       # the next select is this arrival's round t + 1
            where["arrival"], where["round"] = a, t + 1

    played = play(run._replace(learner=run.learner._replace(select=select)), observe=observe)
    score = score_played(world, seed, arrivals, played.pairs, played.clicks, run.sched)["score"]
    registered = replay(world, seed, f"coduel[challenger={threshold}]", arrivals=arrivals)["score"]
    if score != registered:             # the diagnostic must watch the very rows the policy plays
        raise SystemExit(f"seed {seed}: the diagnosed run scored {score}, the registered policy {registered}")
    return counts, np.array(triples).reshape(-1, 3)


def main(args):
    world = open_world(args.world, allow_test=args.allow_test)
    if not 0.5 <= args.threshold < 1:
        raise SystemExit(f"--threshold {args.threshold}: the challenger acts in [0.5, 1)")
    if args.seeds < 1:
        raise SystemExit(f"--seeds {args.seeds}: at least 1")
    print("world     rounds challenged (of transfer-on)  pick beats first  pick beats second  "
          "utility gained on the second")
    for seed in range(args.seeds):
        counts, t = diagnose(world, seed, args.threshold, args.arrivals)
        share = counts["challenged"] / max(counts["transfer"], 1)
        if len(t) == 0:
            print(f"{args.world} seed {seed}: never challenged in {counts['transfer']} rounds")
            continue
        print(f"{args.world} seed {seed}: {share:6.1%} ({counts['challenged']} of {counts['transfer']})   "
              f"{np.mean(t[:, 0] > t[:, 1]):4.0%}   {np.mean(t[:, 0] > t[:, 2]):4.0%}   "
              f"{np.mean(t[:, 0] - t[:, 2]):+.3f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", default="dev")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--arrivals", type=int, default=None)
    p.add_argument("--threshold", type=float, default=0.7, help="the challenger setting (0.7 is coduel-challenger)")
    p.add_argument("--allow-test", action="store_true", help="allow held-out rosters (evaluation only)")
    main(p.parse_args())
