"""What CODuel's gate and belief saw around a world's first switch, arrival window by window.

The diagnostic behind "Why the gate does not close" and the recent-broad diagnostic in
docs/results/stress.md. For each session of CODuel's run it reads, from the learner's infos, whether
transfer was on, the session's log-likelihood ratio at its end (the population learner against the
no-transfer learner, on the pairs CODuel showed) and the final belief's broad weight (the probability
that the user fits no learned type), and from the row the session's excess regret, beside
no-transfer's on the same seed. Windows: `--before` arrivals before the switch, the first `--first`
after it, and the `--after` after those; first of all, every arrival from the 20th on.

    python examples/gate_around_a_switch.py --world stress-shift --seeds 8
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import numpy as np

from diagnostics.segments import arrival_segments, switch_starts
from online.replay import play, prepare_run
from online.verify import score_played
from tdmodels.rosters import open_world


def per_session(world, seed, policy, arrivals=None):
    """[N] excess regret per session, and for CODuel [N] transfer on, final log-likelihood ratio and final
    broad weight (None for another policy)."""
    run = prepare_run(world, seed, policy, arrivals)
    N = run.sched.question.shape[0]
    transfer, llr, broad = np.zeros(N, bool), np.full(N, np.nan), np.full(N, np.nan)

    def observe(kind, a, t, info):
        if kind == "start_session":
            transfer[a] = info.transfer
        elif kind == "update":
            llr[a] = info.gate_llr                    # the running ratio; the last round's stays
        elif kind == "end_session":
            broad[a] = info.belief.weights[-1]

    played = play(run, observe=observe if policy == "coduel" else None)
    u = score_played(world, seed, arrivals, played.pairs, played.clicks, run.sched)["per_user"]
    excess = np.subtract(u["regret"], u["floor"])
    return excess, ((transfer, llr, broad) if policy == "coduel" else None)


def windows(world, n, before, first, after):
    """[(label, arrival indices)]: from arrival 20 on, then around the world's first switch if it has one."""
    seg = arrival_segments(world, n)
    starts = switch_starts(seg) if seg is not None else []
    overall = [("arrivals 20 on", np.arange(min(20, n), n))]
    if not starts:
        return overall
    s = starts[0]
    return overall + [(f"{before} before the switch at {s}", np.arange(max(0, s - before), s)),
            (f"first {first} after", np.arange(s, min(n, s + first))),
            (f"next {after}", np.arange(min(n, s + first), min(n, s + first + after)))]


def main(args):
    world = open_world(args.world, allow_test=args.allow_test)
    if args.seeds < 1:
        raise SystemExit(f"--seeds {args.seeds}: at least 1")
    runs = [(per_session(world, s, "coduel", args.arrivals), per_session(world, s, "no-transfer", args.arrivals)[0])
            for s in range(args.seeds)]
    n = len(runs[0][1])
    print(f"{args.world}, {args.seeds} seeds (sessions pooled over seeds; 5-95% over sessions)")
    for label, idx in windows(world, n, args.before, args.first, args.after):
        if len(idx) == 0:
            print(f"{label}: no arrivals in the run")
            continue
        on = np.concatenate([r[0][1][0][idx] for r in runs])
        llr = np.concatenate([r[0][1][1][idx] for r in runs])
        broad = np.concatenate([r[0][1][2][idx] for r in runs])
        ex_cd = np.concatenate([r[0][0][idx] for r in runs])
        ex_nt = np.concatenate([r[1][idx] for r in runs])
        lo, hi = np.percentile(llr, [5, 95])
        print(f"{label}: transfer on in {on.mean():.0%} of sessions; log-likelihood ratio {llr.mean():+.2f} "
              f"({lo:+.2f} to {hi:+.2f}); broad weight {broad.mean():.2f} (median {np.median(broad):.2f}); "
              f"excess regret a session CODuel {ex_cd.mean():.2f}, no-transfer {ex_nt.mean():.2f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", default="stress-shift")
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--arrivals", type=int, default=None)
    p.add_argument("--before", type=int, default=20)
    p.add_argument("--first", type=int, default=5)
    p.add_argument("--after", type=int, default=20)
    p.add_argument("--allow-test", action="store_true", help="allow held-out rosters (evaluation only)")
    main(p.parse_args())
