"""Run the benchmarks and print one table of ratios (see ``benchmarks``).

    python -m benchmarks.run [--world dev]
        [--only replay,sweep,memory,cli,nuts,reference,population,leaderboard,beliefs,tuning]
        [--long] [--quick] [--repeats 3] [--arrivals N] [--json table.json] [--population-users 50,100,200,300] [--population-minutes 30]
    python -m benchmarks.run --short [--json benchmarks/baseline.json]   # the replays CI checks
    python -m benchmarks.run --check benchmarks/baseline.json            # exit 1 on a regression
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
from datetime import datetime, timezone

from benchmarks.measure import table, to_json
from benchmarks.regression import ALLOWANCE
from tdmodels.limits import MAX_ARRIVALS

GROUPS = ("replay", "sweep", "memory", "cli", "nuts", "reference", "population", "leaderboard", "beliefs", "tuning")
SHORT = ("replay", "sweep", "memory", "cli")
POLICIES = "no-transfer,pooled,rucb,colstim,coldb,coldb-lr,meta-ts,hierts,coduel,coduel-greedy,tempered-kg,low-rank"


def parse(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    ap.add_argument("--world", help="the roster the replays run on (default dev)")
    ap.add_argument("--only", help=f"comma-separated groups of {', '.join(GROUPS)}")
    ap.add_argument("--long", action="store_true",
                    help="also the exact references, memory up to 35,000 arrivals, the leaderboard at the paper's "
                         "seed counts and the competitors' tunings on dev (hours)")
    ap.add_argument("--quick", action="store_true", help="small sizes: that every benchmark runs, not its figures")
    ap.add_argument("--repeats", type=int, help="best of this many replays (default 3; 5 with --short)")
    ap.add_argument("--policies", help="the replays' policies (random is the reference; default: every built-in "
                                       "policy, or the short form's with --short)")
    ap.add_argument("--arrivals", type=int, help="replays on the first N arrivals (default: all)")
    ap.add_argument("--json", help="also write the table here")
    ap.add_argument("--population-users",
                    help="the population group's sizes: the first N arrivals of CODuel's dev seed-0 run (beyond the "
                         "roster's 300, its students arriving for longer; default 50,100,200,300)")
    ap.add_argument("--population-minutes", type=float,
                    help="the population group's wall-time budget per size, in minutes (default 30)")
    ap.add_argument("--short", action="store_true",
                    help="the short form CI checks: replays of a few policies on the first arrivals of dev")
    ap.add_argument("--check", metavar="TABLE",
                    help="measure what the committed TABLE (written with --short --json) measured; exit 1 if a "
                         f"ratio is more than {(ALLOWANCE - 1) * 100:.0f}%% above the committed one")
    a = ap.parse_args(argv)
    from benchmarks.regression import MAX_REPEATS

    if a.arrivals is not None and not 1 <= a.arrivals <= MAX_ARRIVALS:
        ap.error(f"--arrivals must be in [1, {MAX_ARRIVALS:,}]")
    if a.repeats is not None and not 1 <= a.repeats <= MAX_REPEATS:
        ap.error(f"--repeats must be in [1, {MAX_REPEATS}]")
    if a.check:
        from benchmarks.regression import load_baseline

        options = ("world", "policies", "arrivals", "repeats", "only", "population_users", "population_minutes")
        given = ["--" + k.replace("_", "-") for k in options if getattr(a, k) is not None]
        if given or a.short or a.long or a.quick:
            ap.error(f"--check measures what its table measured; it takes no {', '.join(given) or 'other sizes'}")
        try:
            meta, a.committed = load_baseline(a.check)
        except ValueError as exc:
            ap.error(str(exc))
        a.short, a.world, a.policies = True, meta["world"], meta["policies"]
        a.arrivals, a.repeats = meta["arrivals"], meta["repeats"]
    elif a.short:
        from benchmarks.regression import SHORT_ARRIVALS, SHORT_POLICIES, SHORT_REPEATS

        if a.policies is not None or a.only is not None:
            ap.error("--short runs its own replays; give no --policies or --only with it")
        a.policies = SHORT_POLICIES
        a.arrivals = a.arrivals or SHORT_ARRIVALS
        a.repeats = a.repeats or SHORT_REPEATS
    a.world = a.world or "dev"
    a.policies = a.policies or POLICIES
    a.repeats = a.repeats or 3
    if a.short:
        a.only = "replay"
    groups = [g.strip() for g in a.only.split(",")] if a.only else list(GROUPS if a.long else SHORT)
    if len(set(groups)) != len(groups):
        ap.error(f"--only {a.only!r}: a group is given twice")
    unknown = sorted(repr(g) for g in set(groups) - set(GROUPS))
    if unknown:
        ap.error(f"unknown group(s) {', '.join(unknown)}; known: {', '.join(GROUPS)}")
    from tdmodels.rosters import ROSTERS

    if a.world not in ROSTERS:
        ap.error(f"unknown world {a.world!r}; the rosters: {', '.join(ROSTERS)}")
    from online.registry import PolicySpecError, policy_spec, split_specs

    try:
        canonical = [policy_spec(spec).canonical for spec in split_specs(a.policies)]
    except PolicySpecError as exc:
        ap.error(f"policies {a.policies[:200]!r}: {exc}")
    if len(set(canonical)) != len(canonical):
        ap.error(f"policies {a.policies[:200]!r}: {next(c for c in canonical if canonical.count(c) > 1)!r} is "
                 f"given twice")
    if a.json:
        from tdmodels.atomic_file import OutputPathError, check_output_path

        try:
            check_output_path(a.json)      # a regular file or a new one (never a FIFO or a device), writable
        except OutputPathError as exc:
            ap.error(f"--json: {exc}")
    if a.population_users is not None:
        try:
            a.population_users = [int(n) for n in a.population_users.split(",")]
        except ValueError:
            ap.error(f"--population-users {a.population_users!r}: not a comma-separated list of user counts")
        if min(a.population_users) < 2 or max(a.population_users) > MAX_ARRIVALS \
                or len(set(a.population_users)) != len(a.population_users):
            ap.error(f"--population-users: distinct counts of 2 to {MAX_ARRIVALS:,} users")
    if a.population_minutes is not None and not 0 < a.population_minutes <= 24 * 60:
        ap.error("--population-minutes must be in (0, 1440]")
    if (a.population_users is not None or a.population_minutes is not None) and "population" not in groups:
        ap.error("--population-users and --population-minutes size the population group; add it with "
                 "--only population")
    a.groups = groups
    return a


def main(argv=None) -> int:
    """Run the benchmarks; print through ``tutorduel.terminal_text.VisibleStream`` (a table's names are data)."""
    from tutorduel.terminal_text import VisibleStream, silence

    from tdmodels.atomic_file import WriteFailedError
    from tdmodels.errors import InputError

    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = VisibleStream(sys.stdout), VisibleStream(sys.stderr)
    try:
        return _main(argv)
    except (InputError, WriteFailedError) as exc:          # a full disk at --json, after the measuring
        print(f"benchmarks: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except BrokenPipeError:                                # `... | head`: the reader has gone
        silence(streams[0])
        return 141
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv=None) -> int:
    from inference.kernel_cache import configure_kernel_cache

    configure_kernel_cache()             # before numba starts: compiled kernels cached by their source
    a = parse(argv)
    quick = a.quick
    from online.registry import split_specs

    policies = split_specs(a.policies)         # commas inside brackets belong to a spec
    if any(g in a.groups for g in ("nuts", "population")):
        from inference import configure_jax

        configure_jax(4)                      # before JAX starts: float64, one host device per chain
    rows = []
    for group in a.groups:
        if group == "replay":
            from benchmarks.replay_speed import measure_replays
            from tdmodels.simulator import build_roster

            rows += measure_replays(build_roster(a.world), policies, 1 if quick else a.repeats,
                                    12 if quick else a.arrivals)
        elif group == "sweep":
            from benchmarks.sweep_overhead import measure_sweep

            rows += measure_sweep(a.world, [0, 1] if quick else list(range(16)), ["random", "no-transfer"],
                                  6 if quick else 30)
        elif group == "memory":
            from benchmarks.memory import measure_memory

            rows += measure_memory(a.world, ["coduel"] if quick else ["coduel", "tempered-kg"], 12 if quick else None)
            if a.long or quick:                    # how a run's memory grows with its arrivals
                from benchmarks.memory import measure_memory_growth

                rows += measure_memory_growth(a.world, "no-transfer", [6, 12] if quick else [350, 3500, 35000])
                rows += measure_memory_growth(a.world, "coduel", [6, 12] if quick else [350, 3500])
        elif group == "cli":
            from benchmarks.cli_latency import measure_cli

            rows += measure_cli(1 if quick else a.repeats, 12 if quick else a.arrivals)
        elif group == "leaderboard":
            from benchmarks.leaderboard_time import measure_leaderboard

            rows += (measure_leaderboard(jobs=2, rosters=["dev"], seeds=[0], policies=["random", "no-transfer"])
                     if quick else measure_leaderboard(jobs=2))
        elif group == "tuning":
            from benchmarks.tuning_time import measure_tuning

            rows += (measure_tuning(["rucb"], budget=2, seeds=[1000, 1001], arrivals=6) if quick
                     else measure_tuning())
        elif group == "beliefs":
            from benchmarks.belief_updates import measure_beliefs
            from tdmodels.simulator import build_roster

            rows += (measure_beliefs(build_roster(a.world), users=4, repeats=1, arrivals=12) if quick
                     else measure_beliefs(build_roster(a.world), repeats=a.repeats, arrivals=a.arrivals))
        elif group == "nuts":
            from benchmarks.nuts_references import measure_nuts

            rows += (measure_nuts(a.world, users=2, warmup=100, draws=100) if quick else measure_nuts(a.world))
        elif group == "reference":
            from benchmarks.reference_scaling import measure_reference_scaling

            rows += (measure_reference_scaling(users=(4, 8)) if quick else measure_reference_scaling())
        else:
            from benchmarks.population_reference import measure_population

            minutes = a.population_minutes or (1.0 if quick else 30.0)
            rows += (measure_population(a.population_users or [8, 12], chains=2, jobs=2, warmup=20, draws=20,
                                        minutes=minutes) if quick
                     else measure_population(a.population_users or [50, 100, 200, 300], minutes=minutes))
        print(table([r for r in rows if r.group == group]), flush=True)
    meta = {"when": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": platform.machine(),
            "processor": platform.processor(), "cores": os.cpu_count(), "python": platform.python_version(),
            "world": a.world, "quick": quick, "repeats": a.repeats, "arrivals": a.arrivals, "policies": a.policies,
            "short": a.short}
    print(f"\n{meta['cores']} cores, {meta['machine']}; every ratio against a reference measured in this run")
    print(table(rows))
    if a.json:
        from tdmodels.atomic_file import atomic_save

        text = to_json(rows, meta)
        atomic_save(a.json, lambda tmp: tmp.write_text(text))
    if a.check:
        from benchmarks.regression import compare

        lines, bad = compare(rows, a.committed)
        print(f"\nagainst {a.check} (a ratio over {ALLOWANCE:.1f}x the committed one is a regression):")
        print("\n".join(lines))
        bad = _measure_again(a, rows, bad)
        if bad:
            print(f"{len(bad)} regression(s)", file=sys.stderr)
            return 1
    return 0


def _measure_again(a: argparse.Namespace, rows: list, bad: list[str]) -> list[str]:
    """The regressions that hold when the figures over their limit are measured again (best of
    `CONFIRM_REPEATS` x the table's repeats, against the first measurement's machine factor); a committed
    figure not measured stays one."""
    from benchmarks.regression import CONFIRM_REPEATS, MAX_REPEATS, compare, machine_factor, over_limit, to_measure_again
    from benchmarks.replay_speed import measure_replays
    from tdmodels.simulator import build_roster

    factor = machine_factor(rows, a.committed)
    keys = over_limit(rows, a.committed, factor)
    if not keys:
        return bad
    repeats = min(CONFIRM_REPEATS * a.repeats, MAX_REPEATS)
    again = [r for r in measure_replays(build_roster(a.world), to_measure_again(keys), repeats, a.arrivals)
             if (r.group, r.name, r.reference) in keys]
    lines, held = compare(again, {k: a.committed[k] for k in keys}, factor=factor)
    print(f"\nmeasured again, best of {repeats} (a regression only if over its limit again):")
    print("\n".join(lines[1:]))
    return [line for line in bad if line.endswith("not measured")] + held


if __name__ == "__main__":
    sys.exit(main())
