"""`tune`: choose a policy's settings by its score on dev (or another world that is not held out); `tuned`: show
a tuned-settings file."""
from __future__ import annotations

import argparse

from online import phase_clock
from tutorduel.arg_types import MAX_JOBS, arrivals_int, file_arg, float_in, folder_arg, int_in
from tutorduel.cli.options import WORLD_HELP


def _searches(items: list[str] | None) -> dict | None:
    from tutorduel.tune import TuningError

    if not items:
        return None
    out = {}
    for item in items:
        name, eq, text = item.partition("=")
        if not eq or not name.strip():
            raise TuningError(f"--search {item!r}: give NAME=LO:HI, NAME=LO:HI:log or NAME=CHOICE,CHOICE,...")
        if name.strip() in out:
            raise TuningError(f"--search: {name.strip()!r} is given twice")
        out[name.strip()] = text
    return out


def cmd_tune(a) -> int:
    from diagnostics.tuning_report import edge_warnings, plot_tuning, tuning_table
    from online.store import RunStore
    from online.sweep import parse_seeds
    from tdmodels.atomic_file import atomic_save
    from tutorduel.tune import TuningError, record_tuning, tune, tuning_entry

    phase_clock.phase_ended("imports")
    if a.allow_test:
        raise TuningError("tune never reads a held-out world, and --allow-test does not change that (tuning on "
                          "held-out rosters is what the lock exists for)")
    name = a.policy.strip()
    tuning = tune(name, world=a.world, budget=a.budget, seeds=parse_seeds(a.seeds, limit=10_000),
                  searches=_searches(a.search), store=RunStore(a.store), worlds_dir=a.worlds, arrivals=a.arrivals,
                  sampler_seed=a.sampler_seed, jobs=a.jobs, cell_timeout=a.cell_timeout, scheduler=a.scheduler,
                  dask_workers=a.dask_workers)
    entry = tuning_entry(tuning, name)
    g = tuning.gain
    print(f"\n{name} on {tuning.world}, seeds {tuning.seeds[0]}-{tuning.seeds[-1]} ({len(tuning.seeds)}), "
          f"{tuning.budget} evaluations ({tuning.sampler}):\n")
    print(tuning_table(entry))
    print(f"\nchosen: {tuning.best.spec}, {tuning.best.mean:.1f} ± {tuning.best.se:.1f} against the defaults' "
          f"{tuning.default.mean:.1f} ± {tuning.default.se:.1f}: {g[0]:+.1f} [{g[0] - g[1]:+.1f}, {g[0] + g[1]:+.1f}] "
          f"paired over the seeds (the best of many noisy evaluations: read the interval, not the point)")
    for line in edge_warnings(entry):
        print(f"note: {line}")
    if a.out:
        from pathlib import Path

        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        table, figure = tuning_files(out, name)
        atomic_save(table, lambda tmp: Path(tmp).write_text(tuning_table(entry) + "\n"))
        plot_tuning({name: entry}, figure, world=tuning.world)
        print(f"wrote {table} and {figure}")
    if a.record:
        record_tuning(tuning, a.record, name)
        print(f"recorded {name} -> {tuning.best.spec} in {a.record}")
    return 0


def cmd_tuned(a) -> int:
    from diagnostics.tuned_settings import TUNED_FILE, read_tuned_settings
    from diagnostics.tuning_report import edge_warnings, plot_tuning, tuning_summary, tuning_table
    from tdmodels.errors import InputError

    phase_clock.phase_ended("imports")
    a.file = a.file or str(TUNED_FILE)
    entries = read_tuned_settings(a.file)
    if not entries:
        raise InputError(f"tuned settings {a.file}: no such file, or no entry in it")
    if a.policies:
        names = [n.strip() for n in a.policies.split(",")]
        missing = [n for n in names if n not in entries]
        if missing:
            raise InputError(f"tuned settings {a.file}: no entry {missing[0]!r}; entries: {', '.join(entries)}")
        entries = {n: entries[n] for n in names}
    print(tuning_summary(entries))
    for name, entry in entries.items():
        print(f"\n### {name}\n\nOn {entry['world']} (digest {entry['world_digest']}), searched {entry['space']}:\n")
        print(tuning_table(entry))
        for line in edge_warnings(entry):
            print(f"\nnote: {line}")
    if a.plot:
        plot_tuning(entries, a.plot)
        print(f"\nwrote {a.plot}")
    return 0


def add_parsers(sub) -> None:
    from tutorduel.tune import BUDGET, CELL_TIMEOUT_S, MAX_BUDGET, TUNING_SEEDS

    p = sub.add_parser("tune", help="choose a policy's settings by its score on dev (never a held-out roster): "
                                    "a fixed budget of evaluations, each a row per seed in the run store (resumable)")
    p.add_argument("policy", help="a policy spec (registered, alias or module:function); bracketed settings stay fixed")
    p.add_argument("--world", default="dev", help=f"{WORLD_HELP}, not held out (default: dev)")
    p.add_argument("--budget", type=int_in(1, MAX_BUDGET), default=BUDGET,
                   help=f"evaluations beside the untuned defaults (default {BUDGET})")
    p.add_argument("--seeds", default=f"{TUNING_SEEDS[0]}-{TUNING_SEEDS[-1]}",
                   help=f"tuning seeds, at least two (default {TUNING_SEEDS[0]}-{TUNING_SEEDS[-1]}, which no results "
                        f"page reports)")
    p.add_argument("--search", action="append", metavar="NAME=LO:HI[:log] | NAME=A,B,...",
                   help="search only this setting over this range or these choices (repeat for several; default: the "
                        "settings the policy declares a search for)")
    p.add_argument("--arrivals", type=arrivals_int, help="score only each run's first N arrivals (quick checks)")
    p.add_argument("--sampler-seed", type=int_in(0, 2**31 - 1), default=0, help="the sampler's seed (default 0)")
    p.add_argument("--out", type=folder_arg, help="write the tuning table (.md) and the score-against-setting plot "
                                                  "(.png) into this folder")
    p.add_argument("--record", type=file_arg, metavar="FILE", help="write the chosen settings as this policy's entry "
                   "in a tuned-settings file (the leaderboard's: diagnostics/tuned_settings.json)")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=1, help="local worker processes (default 1)")
    p.add_argument("--cell-timeout", type=float_in(0, 7 * 24 * 3600, lo_open=True), metavar="SECONDS",
                   default=CELL_TIMEOUT_S, help=f"fail an evaluation whose run takes longer (default {CELL_TIMEOUT_S:g})")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run the cells on this Dask cluster")
    p.add_argument("--dask-workers", type=int_in(1, MAX_JOBS), metavar="N", help="start a Dask LocalCluster of N workers")
    p.add_argument("--worlds", metavar="DIR", help="world files folder (default: $TUTORDUEL_WORLDS or ./worlds)")
    p.add_argument("--store", metavar="PATH", help="run store (default: $TUTORDUEL_STORE or ./runs)")
    p.add_argument("--verbose", action="store_true", help="end with a line saying where the command's time went")
    p.add_argument("--allow-test", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(fn=cmd_tune)

    p = sub.add_parser("tuned", help="show a tuned-settings file: a line per policy, each tuning's evaluations and "
                                     "(with --plot) the score against each setting")
    p.add_argument("--file", help="the tuned-settings file (default: the leaderboard's, diagnostics/tuned_settings.json)")
    p.add_argument("--policies", help="only these entries (comma-separated)")
    p.add_argument("--plot", type=file_arg, metavar="PNG", help="write the plot here")
    p.add_argument("--verbose", action="store_true", help="end with a line saying where the command's time went")
    p.set_defaults(fn=cmd_tuned)


def tuning_files(out, name: str):
    """The table and figure `tune --out` writes for policy `name`: one pair per name, however many dots the name
    holds (suffixes are appended to the slug, never swapped in for its last dotted part)."""
    from pathlib import Path

    from online.store import policy_slug

    stem = f"tuning-{policy_slug(name)}"
    return Path(out) / f"{stem}.md", Path(out) / f"{stem}.png"
