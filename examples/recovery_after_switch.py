"""After each switch of a drifting stress world: how many sessions until the prior CODuel's users arrive under
holds a component near the new students' type, and what its gate and broad weight saw meanwhile.

The diagnostic behind docs/results/recovery.md. The students' type means are rebuilt from the world's knobs
and seed (``tdmodels.stress_worlds.world_type_means``). For every arrival it
reads, from the prior the user arrives under (``ArrivalInfo``), the component nearest the user's type (a
learned one, or with `coduel-change-point` also the recent type; never the broad one): the correlation, over
the personas, of the two mean tastes (each centred, since only differences between personas matter; a
correlation, not a distance, because the clicks' clipping at 0.1 and 0.9 leaves a learner's tastes on a
smaller scale than the students'), and that component's weight; beside it the
prior's broad weight, whether transfer was on, the session's final log-likelihood ratio (population learner
against no-transfer) and the final belief's broad weight. A component is near when that correlation is at
least `--near`.

    python examples/recovery_after_switch.py --world stress-lookalike --seeds 4
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
from tdmodels.stress_worlds import stress_knobs_of, world_type_means


def trace(world, seed, policy, type_mean, arrivals=None):
    """Per arrival [N]: the nearest component's correlation with the user's type and its weight, broad weight on
    arrival, transfer, final log-likelihood ratio, final broad weight, excess regret (NaN where the policy's infos
    do not carry them: only CODuel's do)."""
    run = prepare_run(world, seed, policy, arrivals)
    N = run.sched.question.shape[0]
    K = type_mean.shape[1]
    out = {k: np.full(N, np.nan) for k in ("similarity", "weight", "broad_in", "transfer", "llr", "broad_out")}

    def observe(kind, a, t, info):
        if kind == "start_session" and hasattr(info, "prior"):      # CODuel's infos; other learners' carry less
            p = info.prior
            learned = np.asarray(p.means)[:-1, :K]
            out["broad_in"][a], out["transfer"][a] = p.weights[-1], info.transfer
            if len(learned):
                c = learned - learned.mean(1, keepdims=True)
                t = type_mean[a]
                r = c @ t / np.maximum(np.linalg.norm(c, axis=1) * np.linalg.norm(t), 1e-12)
                k = int(np.argmax(r))
                out["similarity"][a], out["weight"][a] = r[k], p.weights[k]
        elif kind == "update" and hasattr(info, "gate_llr"):
            out["llr"][a] = info.gate_llr
        elif kind == "end_session" and hasattr(info, "belief"):
            out["broad_out"][a] = info.belief.weights[-1]

    played = play(run, observe=observe)
    u = score_played(world, seed, arrivals, played.pairs, played.clicks, run.sched)["per_user"]
    out["excess"] = np.subtract(u["regret"], u["floor"])
    return out


def main(args):
    world = open_world(args.world, allow_test=args.allow_test)
    if args.seeds < 1 or (args.arrivals is not None and args.arrivals < 1):
        raise SystemExit(f"--seeds {args.seeds} and --arrivals {args.arrivals}: at least 1 each")
    if stress_knobs_of(world) is None:
        raise SystemExit(f"{args.world}: not a stress world (its students' tastes cannot be rebuilt)")
    means = world_type_means(world)
    tm = means - means.mean(1, keepdims=True)
    n = min(tm.shape[0], args.arrivals or tm.shape[0])
    starts = switch_starts(arrival_segments(world, n))
    runs = [(trace(world, s, args.policy, tm, n), trace(world, s, "no-transfer", tm, n)["excess"])
            for s in range(args.seeds)]
    print(f"{args.world}, {args.policy}, {args.seeds} seeds; near: a correlation of at least {args.near}")
    print("switch | sessions until near | by arrival in the block (1, 2-5, 6 on): correlation / its weight / broad "
          "weight on arrival / transfer on / final llr / final broad weight / excess regret minus no-transfer's")
    ends = starts[1:] + [n]
    for s, e in zip(starts, ends):
        until = []
        for r, _ in runs:
            near = np.flatnonzero(r["similarity"][s:e] >= args.near)
            until.append(near[0] if len(near) else np.nan)
        found = np.isfinite(until)
        text = f"{np.nanmean(until):.1f}" if found.any() else "never"
        parts = []
        for lo, hi in ((0, 1), (1, 5), (5, e - s)):
            idx = np.arange(s + lo, min(s + hi, e))
            if len(idx) == 0:
                continue
            f = {k: np.mean([r[k][idx].mean() for r, _ in runs]) for k in runs[0][0] if k != "excess"}
            gap = np.mean([(r["excess"][idx] - nt[idx]).mean() for r, nt in runs])
            parts.append(f"{f['similarity']:.2f}/{f['weight']:.2f}/{f['broad_in']:.2f}/{f['transfer']:.0%}/"
                         f"{f['llr']:+.1f}/{f['broad_out']:.2f}/{gap:+.2f}")
        print(f"{s:6d} | {text} ({found.sum()} of {len(until)} seeds) | " + " | ".join(parts))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", default="stress-lookalike")
    p.add_argument("--policy", default="coduel")
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--near", type=float, default=0.9)
    p.add_argument("--arrivals", type=int, default=None, help="the first N arrivals only")
    p.add_argument("--allow-test", action="store_true", help="allow held-out rosters (evaluation only)")
    main(p.parse_args())
