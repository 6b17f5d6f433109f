"""One user's session under CODuel, traced: the prior the user arrived under, the pairs shown, and how the
belief's broad weight and the gate's log-likelihood ratio moved.

Behind the traced user in docs/results/stress.md (the first user after stress-shift's switch). The user's
score (100 (random - regret) / (random - floor), over the session's questions) is then compared with
no-transfer's on the same arrival over several seeds (the same student on each seed where the world's
students arrive in a fixed order, as on the stress worlds).

    python examples/trace_user.py --world stress-shift --seed 0 --arrival 175 --seeds 8
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import numpy as np

from online.policies.coduel import recalibrate
from online.replay import play, prepare_run
from online.schedule import make_schedule
from online.scoring import benchmark_score
from online.verify import score_played
from tdmodels.rosters import open_world


def user_score(world, seed, policy, arrival, arrivals, observe=None):
    """The arrival's score under `policy` on `seed`, the run's setup and what it played."""
    run = prepare_run(world, seed, policy, arrivals)
    played = play(run, observe=observe)
    u = score_played(world, seed, arrivals, played.pairs, played.clicks, run.sched)["per_user"]
    return float(benchmark_score(*(u[k][arrival] for k in ("regret", "floor", "random")))), run, played


def trace(world, seed, arrival, arrivals=None):
    """Print what CODuel saw and did in the arrival's session."""
    infos = {}

    def observe(kind, a, t, info):
        if a == arrival:
            infos.setdefault(kind, []).append(info)

    score, run, played = user_score(world, seed, "coduel", arrival, arrivals, observe)
    start, rounds = infos["start_session"][0], infos["update"]
    feats = world["features"].values
    student, questions = run.sched.student[arrival], run.sched.question[arrival]
    best = run.U[arrival].argmax(axis=1)                             # [S] the user's best persona per question
    fav = int(np.bincount(best).argmax())
    prior = start.prior
    P = np.stack([recalibrate(feats[q], start.A) for q in questions])   # [S, K, d]
    sd = np.sqrt(np.einsum("skd,cde,ske->csk", P, prior.covs[:-1], P)).mean(axis=(1, 2))
    mean_u = np.einsum("skd,cd->csk", P, prior.means[:-1]).mean(axis=1)  # [C-1, K] learned components
    ranks = (-mean_u).argsort(axis=1).argsort(axis=1)[:, fav] + 1
    heavy = prior.weights[:-1] >= 0.05
    print(f"world {world.attrs['roster']}, seed {seed}, arrival {arrival} (student {student}); transfer "
          f"{'on' if start.transfer else 'off'}")
    spread = f", per-persona sd {sd.mean():.2f} on average" if len(sd) else ""
    print(f"prior: {len(prior.weights) - 1} learned components{spread}; broad weight {prior.weights[-1]:.2f}")
    print(f"the user's best persona: {world.persona.values[fav]} on {np.mean(best == fav):.0%} of the questions; "
          f"its rank (of {P.shape[1]}) under the components of weight >= 0.05: {sorted(ranks[heavy].tolist())}")
    pairs, clicks = played.pairs[arrival], played.clicks[arrival]
    shown = (pairs == fav).any(axis=1)
    won = ((pairs[:, 0] == fav) & (clicks == 1)) | ((pairs[:, 1] == fav) & (clicks == 0))
    broad = np.array([np.exp(u.belief.log_w[-1]) for u in rounds])
    w = np.exp(rounds[-1].belief.log_w)
    end_mean = (w[:, None] * np.nan_to_num(rounds[-1].belief.means)).sum(axis=0)
    print(f"shown in {shown.sum()} of {len(shown)} rounds, won {won.sum()}; broad weight peaked at {broad.max():.2f}, "
          f"ended at {broad[-1]:.2f}; the session's log-likelihood ratio (population - alone) ended at "
          f"{rounds[-1].gate_llr:+.1f}")
    print(f"posterior mean utility of {world.persona.values[fav]} at the end (last question): "
          f"{P[-1, fav] @ end_mean:+.2f}; the user's score {score:.1f}")


def main(args):
    world = open_world(args.world, allow_test=args.allow_test)
    n = int(world.attrs["arrivals"]) if args.arrivals is None else min(args.arrivals, int(world.attrs["arrivals"]))
    if not 0 <= args.arrival < n:
        raise SystemExit(f"--arrival {args.arrival}: the run has arrivals 0..{n - 1}")
    if args.seed < 0 or args.seeds < 1:
        raise SystemExit(f"--seed {args.seed}, --seeds {args.seeds}: a seed is >= 0, and --seeds at least 1")
    trace(world, args.seed, args.arrival, args.arrivals)
    seeds = range(args.seeds)
    students = [int(make_schedule(world, seed, args.arrivals).student[args.arrival]) for seed in seeds]
    for policy in ("coduel", "no-transfer"):
        s = [user_score(world, seed, policy, args.arrival, args.arrivals)[0] for seed in seeds]
        print(f"{policy:12s} arrival {args.arrival}'s score over {len(s)} seeds: {np.mean(s):.1f}")
    if len(set(students)) > 1:          # on a world whose students arrive in another order on each seed
        print(f"(arrival {args.arrival} is a different student on each seed: {students})")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", default="stress-shift")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--arrival", type=int, default=175)
    p.add_argument("--seeds", type=int, default=8, help="seeds over which the user's score is compared")
    p.add_argument("--arrivals", type=int, default=None)
    p.add_argument("--allow-test", action="store_true", help="allow held-out rosters (evaluation only)")
    main(p.parse_args())
