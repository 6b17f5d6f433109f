"""`replay`, `stats`, `leaderboard`, `export`, `verify`: the commands over the run store."""
from __future__ import annotations

from online import phase_clock
from tutorduel.arg_types import (MAX_JOBS, MAX_NAMES, REPLAY_TIMEOUT_S, arrivals_int, file_arg, float_in,
                                 folder_arg, int_in)
from tutorduel.cli.options import DEFAULT_POLICIES, WORLD_HELP, common_options, sweep_keywords, sweep_options


def _worlds(text: str) -> list[str]:
    """The comma-separated world names of an option, none of them empty ('dev,' had shown dev, then failed)."""
    from tdmodels.errors import InputError

    names = [w.strip() for w in text.split(",")]
    if not all(names):
        raise InputError(f"world list {text[:80]!r}: an empty name between commas")
    if len(names) > MAX_NAMES:
        raise InputError(f"world list {text[:80]!r}: {len(names):,} names; at most {MAX_NAMES:,}")
    return names


def cmd_replay(a) -> int:
    from online.registry import split_specs
    from online.store import RunStore
    from online.sweep import parse_seeds
    from tutorduel.store_commands import replay_and_report

    phase_clock.phase_ended("imports")
    return replay_and_report(RunStore(a.store), _worlds(a.world), parse_seeds(a.seeds), split_specs(a.policies),
                             allow_test=a.allow_test, worlds_dir=a.worlds, arrivals=a.arrivals,
                             keep_clicks=a.keep_clicks, **sweep_keywords(a))


def cmd_stats(a) -> int:
    from online.registry import split_specs
    from online.store import RunStore
    from tutorduel.store_commands import print_family_robustness, print_world_tables

    phase_clock.phase_ended("imports")
    store = RunStore(a.store)
    specs = split_specs(a.policies) if a.policies else None
    shown = {}
    for w in _worlds(a.world):
        print_world_tables(store, w, a.allow_test, a.worlds, a.against, a.arrivals, a.curves, a.any_code, specs, shown,
                           by_profile=a.by_profile)
    print_family_robustness(store, _worlds(a.world), a.allow_test, a.worlds, a.against, a.arrivals, a.any_code, specs)
    return 0


def cmd_leaderboard(a) -> int:
    from online.registry import split_specs
    from online.store import RunStore
    from online.sweep import parse_seeds
    from tutorduel.leaderboard import run_leaderboard

    phase_clock.phase_ended("imports")
    return run_leaderboard(RunStore(a.store), a.out, rosters=_worlds(a.rosters) if a.rosters else None,
                           seeds=parse_seeds(a.seeds) if a.seeds else None,
                           specs=split_specs(a.policies) if a.policies else None, allow_test=a.allow_test,
                           worlds_dir=a.worlds, stress=a.stress if a.stress in (None, "presets") else _worlds(a.stress),
                           world_seeds=a.world_seeds, **sweep_keywords(a))


def cmd_export(a) -> int:
    from online.store import RunStore
    from tutorduel.store_commands import export_verified

    phase_clock.phase_ended("imports")
    return export_verified(RunStore(a.store), a.path, a.world, a.allow_test, a.worlds)


def cmd_verify(a) -> int:
    from online.registry import split_specs
    from online.store import RunStore
    from tutorduel.store_commands import verify_store

    phase_clock.phase_ended("imports")
    return verify_store(RunStore(a.store), a.world, split_specs(a.policies) if a.policies else None, a.allow_test,
                        a.worlds, replay=a.replay, jobs=a.jobs, replay_timeout=a.cell_timeout)


def add_parsers(sub) -> None:
    p = sub.add_parser("replay", help="run policies over seeds on a roster and store one row per run")
    p.add_argument("--world", default="dev", help=f"{WORLD_HELP}; several comma-separated (default: dev)")
    p.add_argument("--seeds", default="0-3", help="e.g. 0-7 or 0-3,8 (default: 0-3)")
    p.add_argument("--policies", default=DEFAULT_POLICIES, help=f"comma-separated policy specs (default: {DEFAULT_POLICIES})")
    p.add_argument("--arrivals", type=arrivals_int, help="truncate each run to the first N arrivals (quick checks)")
    p.add_argument("--keep-clicks", action="store_true", help="also store each run's click log (for tutorduel fit)")
    sweep_options(p)
    common_options(p)
    p.set_defaults(fn=cmd_replay)

    p = sub.add_parser("stats", help="score and excess regret, mean ± s.e. over seeds, with reference rows")
    p.add_argument("--world", default="dev", help=f"{WORLD_HELP}; several comma-separated (default: dev)")
    p.add_argument("--against", metavar="SPEC", help="also print paired excess-regret reductions against this policy")
    p.add_argument("--arrivals", type=arrivals_int, help="show the runs truncated to the first N arrivals (default: "
                                                         "full runs)")
    p.add_argument("--curves", metavar="DIR", type=folder_arg, help="write the learning curves (centred 25-arrival "
                                                                    "means, 95%% bands) as DIR/curves-WORLD.png")
    p.add_argument("--any-code", action="store_true", help="also show rows run on other code versions of a policy, "
                                                           "each version as its own line")
    p.add_argument("--policies", metavar="SPECS", help="only these policies' rows (comma-separated specs); a plug-in "
                   "(module:Class) named here is imported to check its code version, one that is not is never "
                   "imported and each code version of its rows is its own line")
    p.add_argument("--by-profile", action="store_true", help="also the score over each student profile's arrivals "
                                                             "(paired with --against), where a world has at most "
                                                             "40 profiles")
    common_options(p)
    p.set_defaults(fn=cmd_stats)

    p = sub.add_parser("leaderboard", help="every policy over the evaluation rosters, resumable, with the published "
                                          "scores beside ours, learning curves and an HTML page")
    p.add_argument("--rosters", help="comma-separated rosters (default: dev and, with --allow-test, the four held-out)")
    p.add_argument("--seeds", help="seed range for every roster (default: the paper's counts, 32 or 64)")
    p.add_argument("--policies", help="comma-separated specs (default: CODuel, no-transfer and the seven competitors "
                                      "at their settings chosen on dev, random, and coduel-change-point, the one "
                                      "policy beyond the paper's, marked as such)")
    p.add_argument("--out", default="leaderboard", type=folder_arg,
                   help="folder for leaderboard.md, leaderboard.html and the curves")
    p.add_argument("--stress", nargs="?", const="presets", metavar="WORLDS",
                   help="also stress worlds, 16 seeds each unless --seeds, in a section of their own: per-segment "
                        "figures and the robustness rule against CODuel (no value: the presets of tutorduel worlds "
                        "stress; else comma-separated worlds)")
    p.add_argument("--world-seeds", type=int_in(4, 64), default=4, metavar="N",
                   help="with --stress: the robustness rule for policies beyond the paper's is read over N fresh "
                        "worlds of each stress world's knobs (generator seeds 10 on, built into the worlds folder), "
                        "16 seeds each, all pairs pooled (default 4, the fewest it is read over)")
    sweep_options(p)
    common_options(p)
    p.set_defaults(fn=cmd_leaderboard)

    p = sub.add_parser("export", help="export stored rows that verify to .csv or .parquet")
    p.add_argument("path", type=file_arg)
    p.add_argument("--world", help=f"only this world's rows: {WORLD_HELP}")
    common_options(p)
    p.set_defaults(fn=cmd_export)

    p = sub.add_parser("verify", help="recompute every stored row (pairs, clicks, figures) from its world and seed in a "
                                      "fresh process (a row whose exact bytes verified before on this machine is not "
                                      "checked again); one line per bad row (moved aside), exit 1 if any")
    p.add_argument("--world", help=f"only these worlds' rows (comma-separated; default: every world the store names "
                                   f"whose file is in the worlds folder): {WORLD_HELP}")
    p.add_argument("--policies", help="only these policies' rows (comma-separated specs; a plug-in named here may be "
                                      "imported by --replay)")
    p.add_argument("--replay", action="store_true", help="also run each verified row's policy again on this code and "
                                                         "name every row whose pairs are not that policy's (the run's "
                                                         "cost again; rows of other code versions are not replayed)")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=1, help="worker processes for --replay (default 1)")
    p.add_argument("--cell-timeout", type=float_in(0, 7 * 24 * 3600, lo_open=True), metavar="SECONDS",
                   default=REPLAY_TIMEOUT_S, help="--replay: stop a row's replay after this long and name it (kept in "
                                                  f"place; default {REPLAY_TIMEOUT_S:g} s)")
    common_options(p)
    p.set_defaults(fn=cmd_verify)
