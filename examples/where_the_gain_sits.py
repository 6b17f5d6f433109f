"""Where one policy gains on another: by round of the session, by quarter of the arrivals, by student profile.

Reads the stored rows of both policies on one world (``tutorduel replay`` first; only rows run on the
current code, and every row verified against the world as ``tutorduel stats`` does) and pairs them by
seed. A round's or a quarter's score is the benchmark's score of the regret summed over it and over
the seeds. A profile's gain is the regret the policy saved on the arrivals of that profile, over their
random excess, x 100, per seed, with a 95% t interval over seeds (``diagnostics.profile_breakdown``, which
``tutorduel stats --by-profile`` prints too).

    tutorduel replay --world dev --seeds 0-31 --policies coduel,tempered-kg --jobs 2
    python examples/where_the_gain_sits.py --world dev --policy tempered-kg --against coduel
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import numpy as np

from diagnostics.profile_breakdown import profile_table
from online.registry import canonical_spec
from online.scoring import benchmark_score
from online.store import RunStore
from tdmodels.rosters import open_world
from tutorduel.store_view import stored_rows


def paired_rows(world, name, policy, against, store, arrivals=None):
    """{seed: (row of policy, row of against)} over the seeds both have (runs of the first `arrivals`)."""
    rows = stored_rows(RunStore(store), world, name, arrivals).rows
    by = {p: {r["seed"]: r for r in rows if r["policy"] == p} for p in (policy, against)}
    return {s: (by[policy][s], by[against][s]) for s in sorted(set(by[policy]) & set(by[against]))}


def pooled_score(rows, field, index):
    """The score of the regret summed over `index` of rows' `field` ("per_round" or "per_user") and the rows."""
    total = {k: sum(np.asarray(r[field][k])[index].sum() for r in rows) for k in ("regret", "floor", "random")}
    return float(benchmark_score(total["regret"], total["floor"], total["random"]))


def main(args):
    world = open_world(args.world, allow_test=args.allow_test)
    policy, against = canonical_spec(args.policy), canonical_spec(args.against)
    pairs = paired_rows(world, args.world, policy, against, args.store, args.arrivals)
    if len(pairs) < 2:
        raise SystemExit(f"{len(pairs)} seed(s) with rows of both {policy!r} and {against!r} on {args.world!r} in the "
                         f"store on the current code: run tutorduel replay first (two seeds at least)")
    mine, theirs = [p[0] for p in pairs.values()], [p[1] for p in pairs.values()]
    S, N = len(mine[0]["per_round"]["regret"]), len(mine[0]["per_user"]["regret"])
    print(f"{args.world}: {policy} against {against}, {len(pairs)} seeds")
    spans = [(f"round {t + 1}", slice(t, t + 1)) for t in range(3)] + [(f"rounds {S // 2 + 1}-{S}", slice(S // 2, S))]
    for label, index in spans:
        print(f"  {label}: {pooled_score(mine, 'per_round', index):5.1f} against {pooled_score(theirs, 'per_round', index):5.1f}")
    for q in range(4 if N >= 4 else 0):
        index = slice(q * N // 4, (q + 1) * N // 4)
        print(f"  arrivals {index.start}-{index.stop - 1}: {pooled_score(mine, 'per_user', index):5.1f} against "
              f"{pooled_score(theirs, 'per_user', index):5.1f}")
    by = {policy: {s: a for s, (a, _) in pairs.items()}, against: {s: b for s, (_, b) in pairs.items()}}
    for line in profile_table(by, world, against):
        if line["name"] == policy and "diff" in line:
            m, h = line["diff"]
            print(f"  {line['profile']}: {m:+.1f} ± {h:.1f} (95%, {line['n_common']} seeds)")

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", default="dev")
    p.add_argument("--policy", default="tempered-kg")
    p.add_argument("--against", default="coduel")
    p.add_argument("--arrivals", type=int, default=None, help="rows of runs of only the first N arrivals")
    p.add_argument("--store", default=None, help="run store (default: $TUTORDUEL_STORE or ./runs)")
    p.add_argument("--allow-test", action="store_true", help="allow held-out rosters (evaluation only)")
    main(p.parse_args())
