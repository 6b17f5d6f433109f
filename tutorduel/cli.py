"""`tutorduel` command line: a thin layer over tdmodels, online and diagnostics."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tutorduel.arg_types import (MAX_DRAWS, MAX_JOBS, MAX_MINUTES, MAX_RESAMPLES, arrivals_int, chains_int, file_arg,
                                 float_in, folder_arg, int_in, seed_int)
from tdmodels.limits import (MAX_ARRIVALS, MAX_CURVE_SEEDS, MAX_PAGE_ARRIVALS, MAX_REFERENCE_SEEDS,
                             MAX_SESSION)
from tutorduel.errors import CLIError
from tutorduel.prefdisco_commands import add_prefdisco_parsers

DEFAULT_POLICIES = "random,no-transfer"
WORLD_HELP = "a roster or world name (in --worlds DIR) or a path to a world .nc file"





def _common(p, store=True):
    p.add_argument("--worlds", metavar="DIR", help="world files folder (default: $TUTORDUEL_WORLDS or ./worlds)")
    p.add_argument("--allow-test", action="store_true", help="allow held-out rosters (evaluation only; never tune on them)")
    if store:
        p.add_argument("--store", metavar="PATH", help="run store (default: $TUTORDUEL_STORE or ./runs)")


def _dask_options(p):
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run the cells on this Dask cluster (the client "
                   "alone writes the store; workers need tutorduel installed, not the worlds)")
    p.add_argument("--dask-workers", type=int_in(1, MAX_JOBS), metavar="N", help="start a Dask LocalCluster of N worker processes")


def cmd_replay(a) -> int:
    """`tutorduel replay`: run the sweep of worlds x seeds x policies through the run store and print the stats of what it touched."""
    from online.registry import split_specs
    from online.store import RunStore
    from online.sweep import SweepInterrupted, parse_seeds, run_sweep

    store = RunStore(a.store)
    worlds = [w.strip() for w in a.world.split(",")]
    try:
        res = run_sweep(worlds, parse_seeds(a.seeds), split_specs(a.policies), store, jobs=a.jobs,
                        allow_test=a.allow_test, arrivals=a.arrivals, worlds_dir=a.worlds, keep_clicks=a.keep_clicks,
                        scheduler=a.scheduler, dask_workers=a.dask_workers, cell_timeout=a.cell_timeout, confirm=a.yes)
    except SweepInterrupted as stop:
        r = stop.result
        print(f"\ninterrupted: {len(r.done)} cells computed and stored, {len(r.cached)} already stored, "
              f"{len(r.failed)} failed, {len(r.interrupted)} not finished (rerun to resume; store: {store.root})",
              file=sys.stderr)
        return 130
    print(f"{len(res.done)} cells computed, {len(res.cached)} already stored, {len(res.failed)} failed (store: {store.root})")
    report_sweep_notes(res)
    shown = {}
    for w in worlds:
        _print_stats(store, w, a.allow_test, a.worlds, None, a.arrivals, specs=split_specs(a.policies), shown=shown)
    if res.failed:
        print("\nfailed cells (not stored; rerun to retry):", file=sys.stderr)
        for cell, msg in res.failed:
            print(f"  {cell}: {msg.splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


def report_sweep_notes(res) -> None:
    """Warnings about damaged rows moved aside and rows of other code versions kept."""
    for msg, moved in res.corrupt:
        print(f"warning: {msg}; moved aside to {moved} and recomputed", file=sys.stderr)
    if res.superseded:
        cell, paths = res.superseded[0]
        print(f"note: {len(res.superseded)} cell(s) have rows from other code versions of their policy (e.g. {cell}: "
              f"{paths[0]}); kept where they are, not counted, and recomputed on the current code", file=sys.stderr)


def _named_targets(specs) -> frozenset:
    """The targets of the policy specs the user named: the plug-ins a reading command may import."""
    from online.registry import policy_spec

    return frozenset(policy_spec(s).target for s in specs or ())


def _stored_rows(store, world, name, arrivals=None, any_code=False, specs=None, named=()) -> list[dict]:
    """The rows to show for one world version and truncation (of `specs` only, if given), printing a warning
    for each kind left out. The plug-ins in `specs` and `named` are the only ones imported."""
    from online.registry import canonical_spec
    from tutorduel.store_view import stored_rows

    view = stored_rows(store, world, name, arrivals, any_code, trusted=_named_targets([*(specs or ()), *named]))
    for note in view.notes:
        print(f"warning: {note}", file=sys.stderr)
    if specs is not None:
        keep = {canonical_spec(s) for s in specs}
        return [r for r in view.rows if r["policy"].split(" (code ")[0] in keep]
    return view.rows


def _print_stats(store, world_arg, allow_test, worlds_dir, against, arrivals=None, curves=None, any_code=False,
                 specs=None, shown=None):
    """Print the tables of one world; `shown` (digest -> name) skips a world already printed under another
    name or spelling, so its rows are read (and any damaged one reported) once."""
    from diagnostics.stats import format_table, leaderboard, paired_gain, t_interval
    from online.replay import arrivals_limit
    from tdmodels.rosters import open_world, world_name
    from tdmodels.world import world_digest

    world = open_world(world_arg, allow_test=allow_test, directory=worlds_dir)
    name, limit = world_name(world_arg), arrivals_limit(world, arrivals)
    if shown is not None:
        digest = world_digest(world)
        if digest in shown:
            print(f"\n{name}: the same world as {shown[digest]} (content digest {digest}); shown once")
            return
        shown[digest] = name
    rows = _stored_rows(store, world, name, arrivals, any_code, specs,
                        named=[against.partition(" (code ")[0]] if against else [])
    cut = f", first {limit} arrivals" if limit is not None else ""
    if not rows:
        print(f"no stored runs for world {name!r}{cut} in {store.root}")
        return
    print()
    print(format_table(leaderboard(rows, world, limit), title=f"{name} ({rows[0]['arrivals']} arrivals{cut}; world "
                                                               f"{world_digest(world)})"))
    if against:
        by, score = {}, {}
        for r in rows:
            by.setdefault(r["policy"], {})[r["seed"]] = r["excess"]
            score.setdefault(r["policy"], {})[r["seed"]] = r["score"]
        from online.registry import canonical_spec

        against = _against_key(against, by, name, canonical_spec)
        print(f"\npaired excess-regret reduction and score difference against {against} (95% intervals, common seeds):")
        for spec, d in sorted(by.items()):
            if spec == against:
                continue
            common = sorted(set(d) & set(by[against]))
            if not common:
                continue
            g = paired_gain([d[s] for s in common], [by[against][s] for s in common])
            m, h = t_interval([score[spec][s] - score[against][s] for s in common])
            print(f"  {spec}: {100 * g['gain']:+.1f}% [{100 * g['lo']:+.1f}, {100 * g['hi']:+.1f}], "
                  f"score {m:+.2f} [{m - h:+.2f}, {m + h:+.2f}] over {g['n']} seeds")
    _print_final_quarter(rows, against)
    if curves:
        from diagnostics.learning_curves import learning_curve, plot_learning_curves

        by = {}
        for r in rows:
            by.setdefault(r["policy"], []).append(r)
        from tdmodels.atomic_file import check_output_path

        path = check_output_path(Path(curves) / f"curves-{name}.png")
        plot_learning_curves({k: learning_curve(v) for k, v in by.items()}, f"{name}: excess regret per user", path)
        print(f"\nlearning curves: {path}")
    failed = store.failures(world_digest(world))
    if failed:
        print(f"\n{len(failed)} failed cell(s) recorded for {name}:")
        for f in failed:
            print(f"  seed {f['seed']} {f['policy']} (code {f.get('code')}): {f['error'].splitlines()[0]}")


def _against_key(against: str, by: dict, name: str, canonical_spec) -> str:
    """The line of the table that --against names: its canonical spec, or with --any-code the one code version
    stored (a spec may also name a version as 'SPEC (code DIGEST)', as the table shows it)."""
    base, sep, code = against.partition(" (code ")
    key = canonical_spec(base) + (sep + code if sep else "")
    if key in by:
        return key
    versions = sorted(p for p in by if p.startswith(key + " (code "))
    if len(versions) == 1:
        return versions[0]
    if versions:
        raise CLIError(f"--against {key!r}: rows of {len(versions)} code versions ({', '.join(versions)}); "
                       f"name one, e.g. --against {versions[0]!r}")
    raise CLIError(f"--against {key!r}: no stored rows of that policy for {name}")


def _print_final_quarter(rows, against=None):
    import numpy as np

    from diagnostics.learning_curves import final_quarter_table

    by = {}
    for r in rows:
        by.setdefault(r["policy"], []).append(r)
    print(f"\nfinal quarter (last {len(rows[0]['per_user']['regret']) // 4} arrivals), summed excess regret:")
    for ln in final_quarter_table(by, against):
        m, se = ln["final_quarter"]
        g = ln.get("gain")
        extra = (f"; against {against} {100 * g['gain']:+.1f}% [{100 * g['lo']:+.1f}, {100 * g['hi']:+.1f}]"
                 if g else "")
        print(f"  {ln['name']}: {m:.1f}" + (f" ± {se:.1f}" if np.isfinite(se) else "") + f" over {ln['n']} seeds{extra}")


def cmd_stats(a) -> int:
    """`tutorduel stats`: the stored rows of a world as tables, with paired gains and curves on request."""
    from online.store import RunStore

    from online.registry import split_specs

    store = RunStore(a.store)
    specs = split_specs(a.policies) if a.policies else None
    shown = {}
    for w in a.world.split(","):
        _print_stats(store, w.strip(), a.allow_test, a.worlds, a.against, a.arrivals, a.curves, a.any_code, specs,
                     shown)
    return 0


def cmd_leaderboard(a) -> int:
    """`tutorduel leaderboard`: every policy over the evaluation rosters through the store, then the markdown, curves and HTML page."""
    from diagnostics.leaderboard_report import POLICIES, PUBLISHED_ROSTERS, SEEDS, fidelity_table, findings, write_page
    from diagnostics.learning_curves import learning_curve, plot_learning_curves
    from diagnostics.stats import leaderboard
    from online.registry import canonical_spec, split_specs
    from online.store import RunStore
    from online.sweep import parse_seeds, run_sweep
    from tdmodels.atomic_file import atomic_save
    from tdmodels.rosters import open_world
    from tdmodels.simulator import ROSTERS

    rosters = [r.strip() for r in a.rosters.split(",")] if a.rosters else list(PUBLISHED_ROSTERS)
    held = [r for r in rosters if r in ROSTERS and ROSTERS[r].held_out]
    if held and not a.allow_test:
        if a.rosters:
            raise CLIError(f"held-out roster(s) {', '.join(held)} need --allow-test (evaluation only; never tune on them)")
        print(f"note: held-out rosters {', '.join(held)} left out (pass --allow-test to evaluate on them)")
        rosters = [r for r in rosters if r not in held]
    specs = [canonical_spec(s) for s in (split_specs(a.policies) if a.policies else POLICIES.values())]
    from tdmodels.atomic_file import check_output_path

    store, out = RunStore(a.store), Path(a.out)
    check_output_path(out / "leaderboard.md")
    out.mkdir(parents=True, exist_ok=True)
    lines_by_roster, figures, curves, failed, codes = {}, {}, {}, 0, {}
    for roster in rosters:
        seeds = parse_seeds(a.seeds) if a.seeds else list(range(SEEDS.get(roster, 32)))
        res = run_sweep([roster], seeds, specs, store, jobs=a.jobs, allow_test=a.allow_test, worlds_dir=a.worlds,
                        scheduler=a.scheduler, dask_workers=a.dask_workers, cell_timeout=a.cell_timeout, confirm=a.yes)
        failed += len(res.failed)
        print(f"{roster}: {len(res.done)} cells computed, {len(res.cached)} already stored, {len(res.failed)} failed")
        report_sweep_notes(res)
        world = open_world(roster, allow_test=a.allow_test, directory=a.worlds)
        rows = [r for r in _stored_rows(store, world, roster, specs=specs) if int(r["seed"]) in set(seeds)]
        codes.update({r["policy"]: r["code"]["digest"] for r in rows})
        if not rows:
            continue
        lines_by_roster[roster] = leaderboard(rows, world)
        by = {}
        for r in rows:
            by.setdefault(r["policy"], []).append(r)
        figures[roster] = out / f"curves-{roster}.png"
        curves[roster] = {k: learning_curve(v) for k, v in by.items()}
        plot_learning_curves(curves[roster], f"{roster}: excess regret per user", figures[roster])
    table = fidelity_table(lines_by_roster)
    found = findings(lines_by_roster)
    md = ["# TutorDuel leaderboard", "", "Score, mean ± s.e. over seeds [seeds] (published score in brackets); "
          "reference rows in italics.", "", table, "", "## Findings of the paper on this simulator", ""]
    md += [f"- {x}" for x in found]
    md += ["", "## Code", "", "Each policy's rows ran on this code identity (`online.code_identity`): "
           + ", ".join(f"{p} {c}" for p, c in sorted(codes.items())) + "."]
    atomic_save(out / "leaderboard.md", lambda tmp: tmp.write_text("\n".join(md) + "\n"))
    page = write_page(out / "leaderboard.html", table, found, figures, curves)
    print()
    print(table)
    print()
    for x in found:
        print(f"- {x}")
    print(f"\nwrote {out / 'leaderboard.md'}, {page} and {len(figures)} curve plot(s)")
    return 1 if failed else 0


def cmd_worlds(a) -> int:
    """`tutorduel worlds`: list, build, describe worlds, import the site sample, or make one from arrays."""
    from tdmodels.rosters import known_worlds, open_world, world_file
    from tdmodels.simulator import ROSTERS

    if a.action == "list":
        from tdmodels.world import WorldFormatError, load_world

        for n in known_worlds(a.worlds):
            r = ROSTERS.get(n)
            f = world_file(n, a.worlds)
            if r and not f.exists():
                print(f"{n:14s} not built  {r.arrivals:4d} arrivals  {'held out' if r.held_out else 'open    '}  "
                      f"{r.description}")
                continue
            try:
                ds = load_world(f)
            except WorldFormatError as exc:
                print(f"{n:14s} INVALID    {exc}")
                continue
            kind = f"simulated {ds.attrs.get('generator')}" if r else str(ds.attrs.get("generator", "imported"))
            print(f"{n:14s} on disk    {int(ds.attrs['arrivals']):4d} arrivals  "
                  f"{'held out' if int(ds.attrs['held_out']) else 'open    '}  {kind}: {ds.attrs.get('description', '')}")
        return 0
    if a.action == "from-arrays":
        return _from_arrays(a)
    if a.action == "build":
        names = a.names or [n for n in ROSTERS]
        if a.simulator:
            _adopt_simulator(a.simulator, a.worlds)
        differ = 0
        for n in names:
            ds = open_world(n, allow_test=True, directory=a.worlds)
            print(f"{n}: {world_file(n, a.worlds)} ({ds.sizes['student']} students, {ds.sizes['question']} questions)"
                  f"; {_digest_check(ds)}")
            differ += _digest_differs(ds)
        if differ:
            print(f"warning: {differ} world(s) differ from their published digest: rows computed on them will not match "
                  f"rows computed elsewhere (rebuild them: remove the files and run tutorduel worlds build)",
                  file=sys.stderr)
        return 0
    if a.action == "targets":
        return _targets(a)
    if a.action == "calibrate":
        return _calibrate(a)
    if a.action == "import-sample":
        from tdmodels.sample import load_sample
        from tdmodels.world import save_world

        ds = load_sample(a.path)
        path = save_world(ds, world_file("sample", a.worlds))
        print(f"sample: {path} (48 arrivals of real judge data; rater feature absent); {_digest_check(ds)}")
        return 0
    if a.action == "describe":
        return _describe(a)
    raise CLIError(f"unknown worlds action {a.action!r}")


def _digest_differs(ds) -> bool:
    from tdmodels.roster_digests import published_digest
    from tdmodels.world import world_digest

    want = published_digest(ds.attrs.get("generator"), ds.attrs.get("roster"))
    return want is not None and want != world_digest(ds)


def _digest_check(ds) -> str:
    """'digest D (as published)', 'digest D, NOT the published P', or 'digest D (none published)'."""
    from tdmodels.roster_digests import published_digest
    from tdmodels.world import world_digest

    have, want = world_digest(ds), published_digest(ds.attrs.get("generator"), ds.attrs.get("roster"))
    if want is None:
        return f"digest {have} (none published for generator {ds.attrs.get('generator')!r})"
    return f"digest {have} (as published)" if have == want else f"digest {have}, NOT the published {want}"


def _describe(a) -> int:
    from diagnostics.stats import REFERENCE_LABELS, mean_se, reference_table
    from diagnostics.world_figures import format_side_by_side, world_figures
    from online.sweep import parse_seeds
    from tdmodels.rosters import open_world, world_file

    from tdmodels.rosters import world_name
    from tdmodels.world import world_digest

    world = open_world(a.name, allow_test=a.allow_test, directory=a.worlds)
    seeds = parse_seeds(a.seeds, MAX_REFERENCE_SEEDS, "for the reference rows one command computes")
    print(f"world {world_name(a.name)} (roster {world.attrs['roster']}, content digest {world_digest(world)}): "
          f"{world.attrs.get('description', '')}")
    print(f"{world.sizes['student']} students, {world.sizes['question']} questions, {world.attrs['arrivals']} arrivals, "
          f"arrival mode {world.attrs['arrival_mode']}, rater {'present' if int(world.attrs['rater_available']) else 'absent'}\n")
    refs = reference_table(world, seeds)
    print(f"references over seeds {a.seeds} (score; summed regret):")
    for name in ("floor", "random", "best-pair-everyone", "best-fixed-pair", "linear-oracle"):
        sc = mean_se([v["score"] for v in refs[name].values()])
        R = mean_se([v["regret"] for v in refs[name].values()])
        print(f"  {REFERENCE_LABELS[name]:40s} score {sc[0]:6.1f}   R {R[0]:8.1f}")
    sample = None
    sp = world_file("sample", a.worlds)
    is_sample = str(world.attrs.get("generator")) == "site-sample"
    if sp.exists() and not is_sample:
        sample = world_figures(open_world("sample", directory=a.worlds))
    hint = "" if sample or is_sample else "; import the sample to compare: tutorduel worlds import-sample PATH"
    print(f"\ncalibration figures (seed {seeds[0]} schedule){hint}")
    print(format_side_by_side(world_figures(world, seeds[0]), sample, str(world.attrs["roster"])))
    return 0


def _adopt_simulator(path, directory) -> None:
    """Make a worlds folder generate its rosters from the simulator file at `path` (copied in as simulator.json);
    refused where the folder already holds another simulator file or roster files of another generator."""
    from tdmodels.rosters import SIMULATOR_FILE, read_simulator_file, worlds_dir
    from tdmodels.simulator import ROSTERS
    from tdmodels.simulator_params import generator_version
    from tdmodels.world import load_world

    params = read_simulator_file(path)
    folder = worlds_dir(directory)
    mine = folder / SIMULATOR_FILE
    if mine.exists():
        if read_simulator_file(mine) != params:
            raise CLIError(f"{folder} already generates from {mine} ({generator_version(read_simulator_file(mine))}); "
                           f"give another --worlds folder for {path}")
        return
    for r in ROSTERS:
        f = folder / f"{r}.nc"
        made_by = str(load_world(f).attrs.get("generator")) if f.exists() else None
        if made_by is not None and made_by != generator_version(params):
            raise CLIError(f"{folder} holds {f.name} of generator {made_by!r}; give an empty "
                           f"--worlds folder for the worlds of {path} ({generator_version(params)})")
    folder.mkdir(parents=True, exist_ok=True)
    from tdmodels.atomic_file import atomic_save

    from tdmodels.file_read import read_regular_text

    text = read_regular_text(path, 2**20)
    atomic_save(mine, lambda tmp: Path(tmp).write_text(text))
    print(f"{folder} now generates its rosters from {path} ({generator_version(params)})")


def _calibrate(a) -> int:
    """`tutorduel worlds calibrate`: fit the simulator's parameters to the published rows and the sample."""
    from inference.nuts import configure_jax

    configure_jax()                      # first: float64 for the emulator's Cholesky factors and NUTS
    from tdmodels.rosters import open_world, world_file
    from tutorduel.calibrate import observed_figures, run_calibration

    if not a.allow_test:
        raise CLIError("worlds calibrate builds the held-out rosters to compare their world-level figures with the "
                       "published ones (no policy runs); pass --allow-test to allow it")
    from inference.emulator_calibration import min_simulations
    from tutorduel.calibrate import FITTED

    need = min_simulations(a.emulator, len(FITTED))
    if a.simulations < need:
        raise CLIError(f"--simulations {a.simulations}: the {a.emulator} emulator of {len(FITTED)} parameters needs at "
                       f"least {need}")
    if a.wave_size > a.chains * a.draws:
        raise CLIError(f"--wave-size {a.wave_size}: more than the posterior's {a.chains} x {a.draws} draws")
    if Path(a.out).exists() and not Path(a.out).is_dir():
        raise CLIError(f"--out {a.out} is a file, not a folder")
    sample = None
    if world_file("sample", a.worlds).exists():
        sample = open_world("sample", directory=a.worlds)
    else:
        print("note: the real sample is not imported (tutorduel worlds import-sample PATH): fitting the published "
              "rows alone")
    data = observed_figures(sample, a.bootstrap)
    spec = run_calibration(Path(a.out), data, simulations=a.simulations, waves=a.waves, wave_size=a.wave_size,
                           jobs=a.jobs, seed=a.seed, chains=a.chains, draws=a.draws, emulator=a.emulator)
    out = Path(a.out)
    from diagnostics.calibration_report import figure_table, format_figure_table

    import arviz as az

    print(format_figure_table(figure_table(az.from_netcdf(out / "posterior.nc"))))
    print(f"\nwrote {out / 'posterior.nc'}, {out / 'simulator.json'} (generator {spec['generator']}) and "
          f"{out / 'report.html'}; build the calibrated rosters with: tutorduel worlds build --simulator "
          f"{out / 'simulator.json'} --worlds DIR")
    return 0


def _targets(a) -> int:
    """`tutorduel worlds targets`: how far our rosters' world-level figures and the sample's statistics are."""
    from diagnostics.calibration_targets import SAMPLE_ROSTER, format_targets, sample_targets, world_targets
    from diagnostics.leaderboard_report import PUBLISHED_ROSTERS
    from online.sweep import parse_seeds
    from tdmodels.rosters import open_world, world_file
    from tdmodels.simulator import ROSTERS

    rosters = [r for r in PUBLISHED_ROSTERS if a.allow_test or not ROSTERS[r].held_out]
    if len(rosters) < len(PUBLISHED_ROSTERS):
        print("note: held-out rosters left out (pass --allow-test for their world-level rows; fitting worlds to "
              "them is not tuning a policy, but reading them is evaluation)")
    worlds = {r: open_world(r, allow_test=a.allow_test, directory=a.worlds) for r in rosters}
    targets = world_targets(worlds, parse_seeds(a.seeds, MAX_REFERENCE_SEEDS, "for the reference rows one command computes"))
    if world_file("sample", a.worlds).exists():
        against = SAMPLE_ROSTER if SAMPLE_ROSTER in worlds else rosters[0]
        if against != SAMPLE_ROSTER:
            print(f"note: the sample's statistics are compared with {against} (the sample is a held-out-profile "
                  f"roster; --allow-test compares them with {SAMPLE_ROSTER})")
        targets += sample_targets(open_world("sample", directory=a.worlds), worlds[against], a.bootstrap)
    else:
        print("note: the real sample is not imported (tutorduel worlds import-sample PATH); its statistics are left out")
    print(format_targets(targets))
    return 0


def _from_arrays(a) -> int:
    from tdmodels.from_arrays import read_arrays, world_from_arrays
    from tdmodels.rosters import world_file
    from tdmodels.simulator import ROSTERS
    from tdmodels.world import check_name, save_world

    check_name(a.name)
    if a.name in ROSTERS:
        raise CLIError(f"--name {a.name!r} is a simulated roster's name; choose another")
    arrays = read_arrays(a.path)
    target = world_file(a.name, a.worlds)
    if target.exists() and not a.force:
        raise CLIError(f"world file {target} exists; pass --force to replace it")
    personas = [str(p) for p in arrays["personas"]] if "personas" in arrays else None
    ds = world_from_arrays(arrays["utilities"], arrays.get("probs"), name=a.name, rater=arrays.get("rater"),
                           personas=personas, beta=a.beta, arrivals=a.arrivals, session_length=a.session_length,
                           arrival_mode=a.arrival_mode)
    path = save_world(ds, target)
    print(f"{a.name}: {path} ({ds.sizes['student']} students, {ds.sizes['question']} questions, "
          f"{ds.attrs['arrivals']} arrivals of {ds.attrs['topics_per_session']} questions; click model "
          f"{ds.attrs['click_model']}, beta {ds.attrs['beta']:.3f})")
    return 0


def cmd_fit(a) -> int:
    """`tutorduel fit`: an exact (NUTS) reference fit of a stored run's clicks, written beside its row."""
    from inference.nuts import configure_jax

    configure_jax()                      # first: one host device per chain, float64, before JAX starts
    import pandas as pd

    from tutorduel.cell_fit import fit_cell, fit_summary
    from online.store import RunStore
    from tdmodels.rosters import open_world

    from inference.health import FitHealthError, stored_health

    world = open_world(a.world, allow_test=a.allow_test, directory=a.worlds)
    try:
        idata, path = fit_cell(world, a.seed, a.policy, a.model, RunStore(a.store), prior=a.prior, arrivals=a.arrivals,
                               chains=a.chains, warmup=a.warmup, draws=a.draws, strict=a.strict, users=a.users,
                               sampler=a.sampler, thin=a.thin, jobs=a.jobs, max_minutes=a.max_minutes,
                               progress=lambda msg: print(f"  {msg}", file=sys.stderr, flush=True))
    except FitHealthError as exc:
        print(f"tutorduel: fit failed its health checks (--strict): {exc}", file=sys.stderr)
        return 1
    from inference.model_fits import stored_label_invariant

    health = stored_health(idata)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(fit_summary(idata, a.model))
    print(f"\nhealth: {health.line()}")
    li = stored_label_invariant(idata)
    if li is not None:
        print("\n".join(li.lines()))
    ok = health.ok and (li is None or li.ok)
    if "units" in idata.groups():
        u = idata["units"]
        print(f"units: {u.sizes['unit']} (user, component) pairs; max importance k-hat {float(u.khat.max()):.2f}; "
              f"max pruned Laplace mass {float(u.pruned_mass.max()):.1e}")
    print(f"wrote {path}")
    return 0 if ok or not a.strict else 1


def print_population_fits(idata) -> None:
    """Print the `population_fits` group of a validation: the reference's verdict, then each fit's figures
    beside the reference's (its own value first, then the difference)."""
    pf = idata["population_fits"].attrs
    n_train = idata["population_fits"].sizes["train_user"]
    verdict = ("healthy on every label-invariant diagnostic" if pf["reference_healthy"]
               else "NOT converged: the figures below are against an unconverged fit")
    print(f"population model reference ({pf['reference_sampler']}, {pf['reference_seconds']:.0f} s of chains; "
          f"{verdict}) on the first {n_train} arrivals, against batch EM and the online prior:")
    names = [k for k in ("em", "online") if f"log_pred_{k}_mean" in pf]
    print(f"  log density of a new user's theta at {idata['population_fits'].sizes['test_point']} test points: "
          f"reference {pf['log_density_reference_mean']:.3f}; " + ", ".join(
              f"{k} {pf[f'log_density_{k}_mean']:.3f} ({pf[f'log_density_{k}_vs_reference_mean']:+.3f} against "
              f"it, mean |difference| {pf[f'log_density_{k}_vs_reference_mean_abs']:.3f})" for k in names)
          + " nats (mean over the points)")
    print(f"  held-out clicks: reference {pf['log_pred_reference_mean']:.3f} nats per user; " + ", ".join(
        f"{k} {pf[f'log_pred_{k}_mean']:.3f} ({pf[f'log_pred_{k}_vs_reference']:+.3f} +- "
        f"{pf[f'log_pred_{k}_vs_reference_ci95']:.3f} against it)" for k in names))
    line = "  co-clustering: " + ", ".join(f"mean |{k} - reference| {pf[f'co_clustering_{k}_vs_reference_mean_abs']:.3f}"
                                           for k in ("em",))
    if "co_clustering_reference_same_student" in pf:
        line += "; P(same component) for arrivals of the same / another student: " + ", ".join(
            f"{k} {pf[f'co_clustering_{k}_same_student']:.2f} / {pf[f'co_clustering_{k}_other_student']:.2f}"
            for k in ("reference", "em"))
    print(line)
    print(f"  learned components: reference {pf['components_reference']:.1f} (90% {pf['components_reference_90']}), "
          + ", ".join(f"{k} {pf[f'components_{k}']:.0f}" for k in names))
    if "first_pair_em_same_as_reference" in pf:
        print("  first pair shown to a held-out arrival, same as the reference's: " + ", ".join(
            f"{k} {100 * pf[f'first_pair_{k}_same_as_reference']:.0f}% (mean utility given up under the "
            f"reference {pf[f'first_pair_{k}_loss']:.3f} logits)" for k in names))


def cmd_validate(a) -> int:
    """`tutorduel validate`: a learner's online beliefs of a stored run against NUTS references, with the report."""
    from inference.nuts import configure_jax

    configure_jax()                      # first: one host device per chain, float64, before JAX starts
    import numpy as np
    import pandas as pd

    from diagnostics.stats import t_interval
    from online.store import RunStore
    from tutorduel.validate_cell import validate_users
    from tdmodels.rosters import open_world

    world = open_world(a.world, allow_test=a.allow_test, directory=a.worlds)
    rounds = tuple(int(t) for t in a.rounds.split(",")) if a.rounds else ()
    checks, idata, path = validate_users(world, a.seed, a.policy, RunStore(a.store), users=a.users, arrivals=a.arrivals,
                                         chains=a.chains, warmup=a.warmup, draws=a.draws, rounds=rounds,
                                         holdout=a.holdout, population_reference=a.population_reference,
                                         reference_warmup=a.reference_warmup, reference_draws=a.reference_draws,
                                         reference_thin=a.reference_thin, reference_minutes=a.reference_minutes,
                                         jobs=a.jobs,
                                         progress=lambda msg: print(f"  {msg}", file=sys.stderr, flush=True))
    table = pd.DataFrame({"k-hat": checks.khat, "k-hat MC sd": checks.khat_replicates.std(1, ddof=1),
                          "max |mean error| (sd)": np.abs(checks.mean_error).max(1),
                          "min sd ratio": checks.sd_ratio.min(1), "max sd ratio": checks.sd_ratio.max(1),
                          "max W1 / floor": (checks.w1 / checks.w1_floor).max(1),
                          "weights TV": idata["checks"].weights_tv.values}, index=checks.users)
    table.index.name = "user"
    with pd.option_context("display.width", 160, "display.max_rows", 40):
        print(table.round(3))
    sm = checks.summary()
    lo, hi = sm["share_khat_over_0.7_range"]
    print(f"\nk-hat (mean of {sm['khat_replicates']} independent proposal samples; Monte Carlo sd median "
          f"{sm['khat_mc_sd_median']:.3f}) median {sm['khat_median']:.2f}, max {sm['khat_max']:.2f}, over 0.7: "
          f"{100 * sm['share_khat_over_0.7']:.0f}% ({100 * lo:.0f}-{100 * hi:.0f}% over the samples; "
          f"{100 * sm['share_flagged_in_some_replicates_only']:.0f}% flagged in some samples only) of {sm['users']} "
          f"users; mean |error| {sm['mean_abs_error_sd']:.3f} sd "
          f"(max {sm['max_abs_error_sd']:.2f}); sd ratio median {sm['sd_ratio_median']:.3f} "
          f"(range {sm['sd_ratio_range'][0]:.2f}-{sm['sd_ratio_range'][1]:.2f}); W1 / noise floor median "
          f"{sm['w1_over_floor_median']:.2f}; component weights TV median "
          f"{idata['checks'].attrs['weights_tv_median']:.3f} (max {idata['checks'].attrs['weights_tv_max']:.3f})")
    blocks = checks.by_block()
    if len(blocks) > 1:
        print("by arrival block (an early user arrives under a prior learned from few sessions):")
        for b in blocks:
            print(f"  arrivals {b['arrivals'][0]}-{b['arrivals'][1]} ({b['users']} users): k-hat median "
                  f"{b['khat_median']:.2f}, over 0.7 {100 * b['share_khat_over_0.7']:.0f}%; mean |error| "
                  f"{b['mean_abs_error_sd']:.3f} sd")
    cal = idata["calibration"].attrs if "calibration" in idata.groups() else {}
    for name in sorted(k.removesuffix("_clicks") for k in cal if k.endswith("_clicks")):
        print(f"click predictions, {name} learner: log loss {cal[name + '_log_loss']:.4f} nats, Brier "
              f"{cal[name + '_brier']:.4f}, calibration error {cal[name + '_ece']:.4f} over {cal[name + '_clicks']} clicks")
    from diagnostics.validation_report import write_report

    for t in rounds:
        r = idata[f"checks_round_{t}"].attrs
        print(f"after {t} clicks: k-hat median {r['khat_median']:.2f}, max {r['khat_max']:.2f}, over 0.7: "
              f"{100 * r['share_khat_over_0.7']:.0f}%; mean |error| {r['mean_abs_error_sd']:.3f} sd; "
              f"sd ratio median {r['sd_ratio_median']:.3f}")
    if "population" in idata.groups():
        pop = idata["population"]
        base = pop["log_pred_isotropic"].values
        for name in ("online", "batch_em", "isotropic"):
            if f"log_pred_{name}" in pop:
                diff = pop[f"log_pred_{name}"].values - base
                half = t_interval(diff)[1]
                print(f"held-out users' clicks under the {name} prior: {pop[f'log_pred_{name}'].values.mean():.3f} "
                      f"nats per user ({diff.mean():+.3f} +- {half:.3f} against isotropic; "
                      f"max k-hat {pop.attrs[f'max_khat_{name}']:.2f})")
    if "population_fits" in idata.groups():
        print_population_fits(idata)
    print(f"NUTS reference health: {idata.posterior.attrs['reference_health']}")
    report = write_report(idata, path.with_suffix(".html"))
    print(f"report {report}")
    print(f"wrote {path}")
    return 0


def _store_worlds(store, worlds_dir) -> dict:
    """digest -> world file, for every world the store recorded a run under whose file (by that name, in the
    worlds folder) is there; nothing is built."""
    from tdmodels.rosters import is_path, world_file
    from tdmodels.world import WorldFormatError

    out = {}
    for digest in store.world_digests():
        for name in sorted(store.world_names(digest)):
            if is_path(name):         # a name in the store never becomes a path (a sweep records names only)
                continue
            try:
                f = world_file(name, worlds_dir)
            except WorldFormatError:
                continue
            if f.is_file():
                out[digest] = str(f)
                break
    return out


def _worlds_to_check(store, a) -> tuple[dict, list[str] | None]:
    """(digest -> world, the digests to read: None for all) from --world, else the worlds the store names."""
    if not a.world:
        return _store_worlds(store, a.worlds), None
    from tdmodels.rosters import open_world
    from tdmodels.world import world_digest

    worlds = {}
    for w in a.world.split(","):
        ds = open_world(w.strip(), allow_test=a.allow_test, directory=a.worlds)
        worlds[world_digest(ds)] = ds
    return worlds, list(worlds)


def cmd_export(a) -> int:
    """`tutorduel export`: the scalar fields of the stored rows that verify (of one world, or all) as .csv or .parquet."""
    from online.store import RunStore
    from tutorduel.store_view import verified_rows

    store = RunStore(a.store)
    worlds, digests = _worlds_to_check(store, a)
    rows, problems = [], []
    for d in digests or [None]:
        r, p = store.scan(d)
        rows, problems = rows + r, problems + p
    rows, lines = verified_rows(store, rows, worlds)
    for line in problems + lines:
        print(f"warning: {line} (not exported)", file=sys.stderr)
    p = store.export(a.path, rows=rows)
    print(f"wrote {p} ({len(rows)} verified rows)")
    return 0


def cmd_verify(a) -> int:
    """`tutorduel verify`: recompute every stored row from its world, its seed and what it played, in a fresh
    process; one line per row that does not verify (moved aside) or cannot be checked; exit 1 if any."""
    from online.registry import canonical_spec, split_specs
    from online.store import CellKey, RunStore
    from online.verify import audit_in_fresh_process
    from tutorduel.store_view import apply_verdicts

    store = RunStore(a.store)
    if not store.root.is_dir():
        raise CLIError(f"run store {store.root}: no such folder")
    worlds, digests = _worlds_to_check(store, a)
    specs = {canonical_spec(s) for s in split_specs(a.policies)} if a.policies else None
    rows, problems = [], []
    for d in digests or [None]:
        r, p = store.scan(d)
        rows, problems = rows + r, problems + p
    rows = [r for r in rows if specs is None or r["policy"] in specs]
    paths = [store.path(CellKey.of_row(r)) for r in rows]
    good, lines = apply_verdicts(store, audit_in_fresh_process(store.root, worlds, paths))
    for line in problems + lines:
        print(line)
    bad = len(problems) + len(lines)
    print(f"{len(good)} of {len(rows) + len(problems)} row(s) verified" + (f"; {bad} did not" if bad else ""),
          file=sys.stderr)
    return 1 if bad else 0


def _sweep_options(p):
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=1, help="local worker processes (default 1)")
    p.add_argument("--cell-timeout", type=float_in(0, 7 * 24 * 3600, lo_open=True), metavar="SECONDS",
                   help="stop and fail a cell that runs longer than this (default: no limit)")
    p.add_argument("--yes", action="store_true", help="run a sweep of more than 10,000 cells")
    _dask_options(p)


def _fit_options(p, what):
    p.add_argument("--world", default="dev", help=f"{WORLD_HELP} (default: dev)")
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument("--arrivals", type=arrivals_int, help=f"{what} the run truncated to its first N arrivals")
    p.add_argument("--users", type=arrivals_int, help=f"{what} only the first N users of the run")
    p.add_argument("--chains", type=chains_int, default=4, help="chains (at least 2 for R-hat; default 4)")
    p.add_argument("--warmup", type=int_in(1, MAX_DRAWS),
                   help="warm-up iterations per chain (default: NUTS 1000; the population model's Gibbs sweeps 2000)")
    p.add_argument("--draws", type=int_in(1, MAX_DRAWS),
                   help="draws kept per chain (default: NUTS 1000; the population model's Gibbs sampler 2000)")


def _page_options(p, out):
    p.add_argument("--world", help=f"{WORLD_HELP} (default: the real sample if imported, else dev)")
    p.add_argument("--seed", type=seed_int, default=0, help="the run's seed: schedule and click draws (default 0)")
    p.add_argument("--out", default=out, type=file_arg, help=f"the page to write (default {out})")
    _common(p, store=False)


def one_line(message) -> str:
    """An error message on one line: line breaks that came with a user's text are shown as \\n."""
    return str(message).replace("\r", "\\r").replace("\n", "\\n")


class Parser(argparse.ArgumentParser):
    """argparse with a bad argument reported on one line (what and where, and where to read more), exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    ap = Parser(prog="tutorduel", description="TutorDuel benchmark: worlds, replays, statistics")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("replay", help="run policies over seeds on a roster and store one row per run")
    p.add_argument("--world", default="dev", help=f"{WORLD_HELP}; several comma-separated (default: dev)")
    p.add_argument("--seeds", default="0-3", help="e.g. 0-7 or 0-3,8 (default: 0-3)")
    p.add_argument("--policies", default=DEFAULT_POLICIES, help=f"comma-separated policy specs (default: {DEFAULT_POLICIES})")
    p.add_argument("--arrivals", type=arrivals_int, help="truncate each run to the first N arrivals (quick checks)")
    p.add_argument("--keep-clicks", action="store_true", help="also store each run's click log (for tutorduel fit)")
    _sweep_options(p)
    _common(p)
    p.set_defaults(fn=cmd_replay)

    p = sub.add_parser("stats", help="score and excess regret, mean ± s.e. over seeds, with reference rows")
    p.add_argument("--world", default="dev", help=f"{WORLD_HELP}; several comma-separated (default: dev)")
    p.add_argument("--against", metavar="SPEC", help="also print paired excess-regret reductions against this policy")
    p.add_argument("--arrivals", type=arrivals_int, help="show the runs truncated to the first N arrivals (default: "
                                                         "full runs)")
    p.add_argument("--curves", metavar="DIR", type=folder_arg, help="write the learning curves (centred 25-arrival means, 95%% bands) "
                                                   "as DIR/curves-WORLD.png")
    p.add_argument("--any-code", action="store_true", help="also show rows run on other code versions of a policy, "
                                                           "each version as its own line")
    p.add_argument("--policies", metavar="SPECS", help="only these policies' rows (comma-separated specs); a plug-in "
                   "(module:Class) named here is imported to check its code version, one that is not is never "
                   "imported and each code version of its rows is its own line")
    _common(p)
    p.set_defaults(fn=cmd_stats)

    p = sub.add_parser("leaderboard", help="every policy over the evaluation rosters, resumable, with the published "
                                          "scores beside ours, learning curves and an HTML page")
    p.add_argument("--rosters", help="comma-separated rosters (default: dev and, with --allow-test, the four held-out)")
    p.add_argument("--seeds", help="seed range for every roster (default: the paper's counts, 32 or 64)")
    p.add_argument("--policies", help="comma-separated specs (default: CODuel, no-transfer and the seven competitors, "
                                      "random)")
    p.add_argument("--out", default="leaderboard", type=folder_arg, help="folder for leaderboard.md, leaderboard.html and the curves")
    _sweep_options(p)
    _common(p)
    p.set_defaults(fn=cmd_leaderboard)

    add_prefdisco_parsers(sub, _common)

    p = sub.add_parser("worlds", help="build, list, describe, import and make worlds")
    wsub = p.add_subparsers(dest="action", required=True)
    q = wsub.add_parser("list", help="the simulated rosters and every world file in --worlds DIR, checked")
    _common(q, store=False)
    q = wsub.add_parser("build")
    q.add_argument("names", nargs="*", help="rosters to build (default: all seven)")
    q.add_argument("--simulator", metavar="FILE", help="a simulator file (simulator.json of `worlds calibrate`): the "
                                                       "--worlds folder generates its rosters from it from now on")
    _common(q, store=False)
    q = wsub.add_parser("describe")
    q.add_argument("name", help=WORLD_HELP)
    q.add_argument("--seeds", default="0-3")
    _common(q, store=False)
    q = wsub.add_parser("targets", help="the published world-level rows and the real sample's statistics (95%% bootstrap "
                        "intervals) against our rosters")
    q.add_argument("--seeds", default="0-3", help="seeds behind our reference rows (default 0-3)")
    q.add_argument("--bootstrap", type=int_in(1, MAX_RESAMPLES), default=2000, help="bootstrap resamples of the sample's sessions")
    _common(q, store=False)
    q.set_defaults(fn=cmd_worlds, action="targets")
    q = wsub.add_parser("calibrate", help="fit the simulator's parameters to the published world-level rows and the "
                        "real sample's statistics (emulator-based Bayesian calibration); writes posterior.nc, "
                        "simulator.json and report.html")
    q.add_argument("--out", default="calibration", type=folder_arg, help="output folder (default ./calibration)")
    q.add_argument("--simulations", type=int_in(1, MAX_RESAMPLES), default=640, help="design simulations (default 640)")
    q.add_argument("--waves", type=int_in(1, 100), default=2, help="emulator waves (default 2)")
    q.add_argument("--wave-size", type=int_in(1, MAX_RESAMPLES), default=64, help="simulations at each wave's posterior draws")
    q.add_argument("--emulator", choices=["gp", "quadratic"], default="gp",
                   help="Gaussian process on a linear mean (default) or quadratic ridge regression")
    q.add_argument("--chains", type=chains_int, default=4, help="NUTS chains on the emulator (at least 2; default 4)")
    q.add_argument("--draws", type=int_in(1, MAX_DRAWS), default=500, help="NUTS draws (and warmup) per chain (default 500)")
    q.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=2, help="simulation processes (default 2)")
    q.add_argument("--seed", type=seed_int, default=0)
    q.add_argument("--bootstrap", type=int_in(1, MAX_RESAMPLES), default=2000, help="bootstrap resamples of the sample's sessions")
    _common(q, store=False)
    q.set_defaults(fn=cmd_worlds, action="calibrate")
    q = wsub.add_parser("import-sample")
    q.add_argument("path", help="path to tutorduel-site-sample.json")
    _common(q, store=False)
    q = wsub.add_parser("from-arrays", help="a world from your own U (and P) in a .npz file: arrays 'utilities' "
                                           "[students, questions, K], optional 'probs' [students, questions, K, K], "
                                           "'rater' [questions, K], 'personas' [K]")
    q.add_argument("path", help="the .npz file")
    q.add_argument("--name", required=True, help="the new world's name (written to --worlds DIR/NAME.nc)")
    q.add_argument("--beta", type=float_in(0, 1000, lo_open=True), help="click scale: the BTL click model's when 'probs' is absent "
                                                       "(default 11), else fitted to the given P")
    q.add_argument("--arrivals", type=arrivals_int, help="arrivals per run (default: the number of students)")
    q.add_argument("--session-length", type=int_in(1, MAX_SESSION), default=24, help="questions per session (default 24)")
    q.add_argument("--arrival-mode", choices=["uniform", "distinct"], default="uniform",
                   help="students drawn with replacement (uniform, default) or each at most once (distinct)")
    q.add_argument("--force", action="store_true", help="replace an existing world file of that name")
    _common(q, store=False)
    p.set_defaults(fn=cmd_worlds)

    p = sub.add_parser("fit", help="NUTS reference fit of a model on the clicks of one run; writes netCDF")
    _fit_options(p, "fit")
    p.add_argument("--policy", default="no-transfer", help="the policy whose clicks are fitted (default: no-transfer)")
    p.add_argument("--model", default="users", choices=["users", "population", "recalibration"])
    p.add_argument("--prior", default="policy", choices=["policy", "em"],
                   help="users' prior: the policy's own (default) or a mixture fitted by EM to the run's clicks")
    p.add_argument("--strict", action="store_true", help="fail (exit 1) when the fit misses a health threshold")
    p.add_argument("--sampler", default="gibbs", choices=["gibbs", "nuts"],
                   help="population model: the collapsed Gibbs sampler with split-merge moves (default; the exact "
                        "reference) or NUTS on the marginalised mixture (does not converge; for comparison)")
    p.add_argument("--thin", type=int_in(1, 10_000), default=1, help="population model, Gibbs: sweeps per stored draw")
    p.add_argument("--max-minutes", type=float_in(0, MAX_MINUTES), default=30.0,
                   help="population model, Gibbs: run the chains on in rounds (each extends them by what the "
                        "diagnostics' shortfall asks, keeping the draws so far) until every label-invariant diagnostic "
                        "passes or this many minutes are spent (default 30; 0: one run of --warmup + --draws x --thin)")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=min(4, os.cpu_count() or 1),
                   help="population model, Gibbs: worker processes for the chains (default: the cores, at most 4)")
    _common(p)
    p.set_defaults(fn=cmd_fit)

    p = sub.add_parser("validate", help="check each user's online belief against a NUTS reference on the same clicks")
    _fit_options(p, "validate")
    p.add_argument("--policy", default="coduel", help="a policy that records its beliefs (default: coduel)")
    p.add_argument("--rounds", help="also check the beliefs after these many clicks, e.g. 6,12 (a NUTS fit each)")
    p.add_argument("--holdout", type=int_in(0, MAX_ARRIVALS), default=0,
                   help="also score the population prior on the run's last N arrivals (log predictive of their clicks)")
    p.add_argument("--population-reference", action="store_true",
                   help="with --holdout: also fit the hierarchical population model's exact reference (the Gibbs "
                        "sampler) on the other arrivals and compare batch EM and the online prior with it (density at "
                        "test points, held-out clicks, co-clustering, components, first pairs)")
    p.add_argument("--reference-warmup", type=int_in(1, MAX_DRAWS), help="the population reference's warm-up sweeps")
    p.add_argument("--reference-draws", type=int_in(1, MAX_DRAWS), help="the population reference's draws per chain")
    p.add_argument("--reference-thin", type=int_in(1, 10_000), default=1, help="the population reference's thinning")
    p.add_argument("--reference-minutes", type=float_in(0, MAX_MINUTES), default=30.0,
                   help="the population reference runs until healthy or this many minutes (0: one fixed run)")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=min(4, os.cpu_count() or 1),
                   help="worker processes for the population reference's chains")
    _common(p)
    p.set_defaults(fn=cmd_validate)

    from tutorduel.pages import cmd_play, cmd_watch

    p = sub.add_parser("play", help="be the policy: a self-contained page (or --terminal) to play one student's session")
    _page_options(p, "play.html")
    p.add_argument("--sessions", type=int_in(1, MAX_PAGE_ARRIVALS), default=48, help="arrivals the page offers (default 48)")
    p.add_argument("--arrival", type=int_in(1, MAX_PAGE_ARRIVALS), default=1, help="with --terminal: which arrival to play (default 1)")
    p.add_argument("--terminal", action="store_true", help="play at the prompt instead of writing a page")
    p.add_argument("--no-compare", action="store_true", help="leave out no-transfer's and CODuel's figures (no replays)")
    p.set_defaults(fn=cmd_play)

    p = sub.add_parser("watch", help="watch CODuel learn: a self-contained page stepping through a recorded run")
    _page_options(p, "watch.html")
    p.add_argument("--arrivals", type=int_in(1, MAX_PAGE_ARRIVALS), default=100, help="arrivals to record (default 100)")
    p.add_argument("--curve-seeds", type=int_in(1, MAX_CURVE_SEEDS), default=4, help="full runs behind the learning curve's band (default 4)")
    p.set_defaults(fn=cmd_watch)

    p = sub.add_parser("export", help="export stored rows that verify to .csv or .parquet")
    p.add_argument("path", type=file_arg)
    p.add_argument("--world", help=f"only this world's rows: {WORLD_HELP}")
    _common(p)
    p.set_defaults(fn=cmd_export)

    p = sub.add_parser("verify", help="recompute every stored row (pairs, clicks, figures) from its world and seed in a "
                                      "fresh process; one line per bad row (moved aside), exit 1 if any")
    p.add_argument("--world", help=f"only these worlds' rows (comma-separated; default: every world the store names "
                                   f"whose file is in the worlds folder): {WORLD_HELP}")
    p.add_argument("--policies", help="only these policies' rows (comma-separated specs)")
    _common(p)
    p.set_defaults(fn=cmd_verify)
    return ap


def main(argv=None) -> int:
    """Run the command line; returns the exit status (2: bad input, named on one line; 130: interrupted)."""
    import signal
    import threading

    previous = None
    hook = sys.unraisablehook
    if threading.current_thread() is threading.main_thread():
        from online.interrupt import InterruptFlag, quiet_unraisable

        previous = signal.signal(signal.SIGINT, InterruptFlag())
        sys.unraisablehook = quiet_unraisable(hook)
    try:
        return _main(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = hook


def _main(argv) -> int:
    try:
        from online.process_pool import TaskError
        from online.protocol import PolicyOutputError
        from online.registry import PolicySpecError
        from online.store import CorruptRowError, StoreError
        from tdmodels.rosters import HeldOutError
        from tdmodels.world import WorldFormatError

        args = build_parser().parse_args(argv)
        try:
            return args.fn(args)
        except (CLIError, HeldOutError, WorldFormatError, PolicySpecError, PolicyOutputError, CorruptRowError,
                StoreError, TaskError, FileNotFoundError, ValueError) as exc:
            print(f"tutorduel: error: {one_line(exc)}", file=sys.stderr)
            return 2
    except KeyboardInterrupt:
        print("tutorduel: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
