"""`worlds list|build|describe|targets|calibrate|import-sample|import-curves|from-arrays|stress`."""
from __future__ import annotations

from tdmodels.limits import MAX_REFERENCE_SEEDS, MAX_RESAMPLE, MAX_SESSION
from tutorduel.arg_types import (MAX_DRAWS, MAX_JOBS, MAX_RESAMPLES, arrivals_int, chains_int, float_in, folder_arg,
                                 int_in, int_list_in, seed_int)
from tutorduel.cli.options import WORLD_HELP, common_options

REFERENCE_SEEDS_WHY = "for the reference rows one command computes"


def cmd_list(a) -> int:
    from tutorduel.world_commands import list_worlds

    return list_worlds(a.worlds)


def cmd_build(a) -> int:
    from tutorduel.world_commands import build_worlds

    return build_worlds(a.names, a.simulator, a.worlds, generator=a.generator)


def cmd_describe(a) -> int:
    from online.sweep import parse_seeds
    from tutorduel.world_commands import describe_world

    seeds = parse_seeds(a.seeds, MAX_REFERENCE_SEEDS, REFERENCE_SEEDS_WHY)
    return describe_world(a.name, seeds, a.seeds, a.allow_test, a.worlds)


def cmd_targets(a) -> int:
    from online.sweep import parse_seeds
    from tutorduel.world_commands import print_targets

    return print_targets(parse_seeds(a.seeds, MAX_REFERENCE_SEEDS, REFERENCE_SEEDS_WHY), a.bootstrap, a.allow_test,
                         a.worlds)


def cmd_calibrate(a) -> int:
    from inference.nuts import configure_jax

    configure_jax()                      # first: float64 for the emulator's Cholesky factors and NUTS
    if a.check and not a.leaderboard:
        from tdmodels.errors import InputError

        raise InputError("--check reads a simulator's figures for the leaderboard calibration: give --leaderboard too")
    if a.leaderboard:
        from tutorduel.leaderboard_calibration import calibrate_leaderboard

        return calibrate_leaderboard(a.out or "calibration/sim-3", a.worlds, a.allow_test,
                                     simulations=a.simulations or 224, waves=a.waves, wave_size=a.wave_size or 40,
                                     jobs=a.jobs, seed=a.seed, chains=a.chains, draws=a.draws, bootstrap=a.bootstrap,
                                     check=a.check)
    from tutorduel.calibrate import calibrate_and_report

    return calibrate_and_report(a.out or "calibration", a.worlds, a.allow_test, simulations=a.simulations or 640,
                                waves=a.waves, wave_size=a.wave_size or 64, jobs=a.jobs, seed=a.seed, chains=a.chains, draws=a.draws,
                                emulator=a.emulator, bootstrap=a.bootstrap)


def cmd_import_sample(a) -> int:
    from tutorduel.world_commands import import_sample

    return import_sample(a.path, a.worlds, a.force, a.resamples)


def cmd_import_curves(a) -> int:
    from tutorduel.world_commands import import_curves

    return import_curves(a.path, a.worlds, a.force)


def cmd_from_arrays(a) -> int:
    from tutorduel.world_commands import world_from_npz

    return world_from_npz(a.path, a.name, a.worlds, a.force, beta=a.beta, arrivals=a.arrivals,
                          session_length=a.session_length, arrival_mode=a.arrival_mode)


STRESS_KNOB_OPTIONS = {   # option -> (knob, type, help)
    "--arrivals": ("arrivals", int_in(1, 5000), "students, one per arrival (default 350)"),
    "--types": ("types", int_in(1, 64), "student types per segment (default 4)"),
    "--tightness": ("tightness", float_in(0, 4), "a student's sd about its type, as a fraction of the types' spread "
                                               "(default 0.25)"),
    "--polarisation": ("polarisation", float_in(0, 1), "0 to 1: the types pulled into two opposed camps (default 0)"),
    "--block-length": ("block_length", int_in(0, 5000), "drift: fresh types every this many arrivals (default 0: none)"),
    "--shift-at": ("shift_at", float_in(0, 1), "shift: the share of arrivals before the population turns against "
                                             "itself (default 0: none)"),
    "--shift-strength": ("shift_strength", float_in(0, 1), "how anti-correlated the shifted types are (default 1)"),
    "--unstructured": ("unstructured", float_in(0, 1), "share of students with no type at all (default 0)"),
    "--rater": ("rater", float_in(-4, 4), "every student's weight on the rater score, logits per sd (default 0.5)"),
    "--noise": ("noise", float_in(0, 3), "sd of the logit noise no linear model explains (default 0.3)"),
    "--closeness": ("closeness", float_in(0, 1), "drift: 0 to 1, each block's types moved towards a lookalike of every "
                                                 "earlier type's mean taste: its two favourite personas kept, every "
                                                 "other persona put above both (default 0)"),
}


def cmd_stress(a) -> int:
    from tutorduel.world_commands import stress_worlds

    knobs = {knob: getattr(a, knob) for knob, _, _ in STRESS_KNOB_OPTIONS.values() if getattr(a, knob) is not None}
    return stress_worlds(a.presets, a.name, a.seed, knobs, a.worlds, a.force)


def add_parsers(sub) -> None:
    p = sub.add_parser("worlds", help="build, list, describe, import and make worlds")
    wsub = p.add_subparsers(dest="action", required=True)
    q = wsub.add_parser("list", help="the simulated rosters and every world file in --worlds DIR, checked")
    common_options(q, store=False)
    q.set_defaults(fn=cmd_list)

    q = wsub.add_parser("build", help="build simulated rosters into the --worlds folder (default: all seven), "
                                      "from its simulator file or a named generator")
    q.add_argument("names", nargs="*", help="rosters to build (default: all seven)")
    q.add_argument("--simulator", metavar="FILE", help="a simulator file (simulator.json of `worlds calibrate`): the "
                                                       "--worlds folder generates its rosters from it from now on")
    q.add_argument("--generator", choices=["sim-2", "sim-3"], help="a named generator for the --worlds folder from "
                   "now on, e.g. the earlier sim-2 (default: the folder's simulator file, else the default generator)")
    common_options(q, store=False)
    q.set_defaults(fn=cmd_build)

    q = wsub.add_parser("describe", help="one world's size, personas, questions and profiles, and its per-seed "
                                         "figures")
    q.add_argument("name", help=WORLD_HELP)
    q.add_argument("--seeds", default="0-3")
    common_options(q, store=False)
    q.set_defaults(fn=cmd_describe)

    q = wsub.add_parser("targets", help="the published world-level rows and the real sample's statistics (95%% bootstrap "
                        "intervals) against our rosters")
    q.add_argument("--seeds", default="0-3", help="seeds behind our reference rows (default 0-3)")
    q.add_argument("--bootstrap", type=int_in(1, MAX_RESAMPLES), default=2000, help="bootstrap resamples of the sample's sessions")
    common_options(q, store=False)
    q.set_defaults(fn=cmd_targets)

    q = wsub.add_parser("calibrate", help="fit the simulator's parameters to the published world-level rows and the "
                        "real sample's statistics (emulator-based Bayesian calibration); writes posterior.nc, "
                        "simulator.json and report.html")
    q.add_argument("--leaderboard", action="store_true",
                   help="fit sim-3 to the published leaderboard instead: a probe of no-transfer, RUCB, Pooled and CODuel "
                        "on every roster of each simulation, their gaps and plateaus, the world-level rows and the "
                        "sample's statistics (needs the sample and the curves imported)")
    q.add_argument("--check", metavar="FILE", help="with --leaderboard: no fit, the fitted figures of this simulator "
                   "file (or named generator: sim-2, sim-3) on 8 seeds beside their targets")
    q.add_argument("--out", type=folder_arg, help="output folder (default ./calibration, with --leaderboard "
                                                  "./calibration/sim-3)")
    q.add_argument("--simulations", type=int_in(1, MAX_RESAMPLES), help="design simulations (default 640; with "
                                                                      "--leaderboard 224)")
    q.add_argument("--waves", type=int_in(1, 100), default=2, help="emulator waves (default 2)")
    q.add_argument("--wave-size", type=int_in(1, MAX_RESAMPLES), help="simulations at each wave's posterior draws "
                                                                      "(default 64; with --leaderboard 40)")
    q.add_argument("--emulator", choices=["gp", "quadratic"], default="gp",
                   help="Gaussian process on a linear mean (default) or quadratic ridge regression")
    q.add_argument("--chains", type=chains_int, default=4, help="NUTS chains on the emulator (at least 2; default 4)")
    q.add_argument("--draws", type=int_in(1, MAX_DRAWS), default=500, help="NUTS draws (and warmup) per chain (default 500)")
    q.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=2, help="simulation processes (default 2)")
    q.add_argument("--seed", type=seed_int, default=0)
    q.add_argument("--bootstrap", type=int_in(1, MAX_RESAMPLES), default=2000, help="bootstrap resamples of the sample's sessions")
    common_options(q, store=False)
    q.set_defaults(fn=cmd_calibrate)

    _add_import_parsers(wsub)

    from tdmodels.stress_knobs import STRESS_PRESETS

    q = wsub.add_parser("stress", help="generated stress worlds with knobs: the presets (default: all of them), or one "
                                       "world of your own knobs with --name",
                        description="Presets: " + "; ".join(f"{k}: {v[1]}" for k, v in STRESS_PRESETS.items()))
    q.add_argument("presets", nargs="*", metavar="PRESET", help=f"presets to build: {', '.join(STRESS_PRESETS)} "
                                                                f"(with --name: the one to start from)")
    q.add_argument("--name", help="build one world of your own knobs under this name")
    q.add_argument("--seed", type=seed_int, default=0, help="the generator's seed (default 0: the published digests)")
    for option, (knob, kind, text) in STRESS_KNOB_OPTIONS.items():
        q.add_argument(option, dest=knob, type=kind, help=text)
    q.add_argument("--force", action="store_true", help="replace an existing world file of other content")
    common_options(q, store=False)
    q.set_defaults(fn=cmd_stress)


def _add_import_parsers(wsub) -> None:
    """`worlds import-sample`, `import-curves` and `from-arrays`: worlds and figures from files."""
    q = wsub.add_parser("import-sample", help="the reference's real sample of arrivals as a world, and the "
                                              "real-session rosters resampled from its sessions")
    q.add_argument("path", help="path to tutorduel-site-sample.json")
    q.add_argument("--force", action="store_true", help="replace existing world files of other content")
    q.add_argument("--resamples", type=int_list_in(0, MAX_RESAMPLE), default=(0, 1), metavar="R,R",
                   help="the real-session rosters to build, real-sessions-R: 350 arrivals resampled from the sample's "
                        "sessions, one per resample seed R (default 0,1)")
    common_options(q, store=False)
    q.set_defaults(fn=cmd_import_sample)

    q = wsub.add_parser("import-curves", help="the reference's published learning curves, kept in the worlds folder "
                                              "for the leaderboard to set beside ours")
    q.add_argument("path", help="path to tutorduel-site-curves.json")
    q.add_argument("--force", action="store_true", help="replace an imported copy of other content")
    common_options(q, store=False)
    q.set_defaults(fn=cmd_import_curves)

    q = wsub.add_parser("from-arrays", help="a world from your own U (and P) in a .npz file: arrays 'utilities' "
                                           "[students, questions, K], optional 'probs' [students, questions, K, K], "
                                           "'rater' [questions, K], 'personas' [K]")
    q.add_argument("path", help="the .npz file")
    q.add_argument("--name", required=True, help="the new world's name (written to --worlds DIR/NAME.nc)")
    q.add_argument("--beta", type=float_in(0, 1000, lo_open=True), help="click scale: the BTL click model's when "
                                                                        "'probs' is absent (default 11), else fitted to the given P")
    q.add_argument("--arrivals", type=arrivals_int, help="arrivals per run (default: the number of students)")
    q.add_argument("--session-length", type=int_in(1, MAX_SESSION), default=24, help="questions per session (default 24)")
    q.add_argument("--arrival-mode", choices=["uniform", "distinct", "ordered"], default="uniform",
                   help="students drawn with replacement (uniform, default), each at most once in a seeded order "
                        "(distinct) or each once in the arrays' order (ordered)")
    q.add_argument("--force", action="store_true", help="replace an existing world file of that name")
    common_options(q, store=False)
    q.set_defaults(fn=cmd_from_arrays)
