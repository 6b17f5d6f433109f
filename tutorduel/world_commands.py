"""The world use cases: list, build (optionally from a simulator file), describe, compare with the
published targets, import the real sample, make a world from your own arrays, build stress worlds."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from diagnostics.calibration_targets import SAMPLE_ROSTER, format_targets, sample_targets, world_targets
from diagnostics.leaderboard_report import PUBLISHED_ROSTERS
from diagnostics.published_curves import CURVES_BYTES, CURVES_FILE, load_curves
from diagnostics.stats import REFERENCE_LABELS, mean_se, reference_table
from diagnostics.world_figures import format_side_by_side, world_figures
from tdmodels.atomic_file import atomic_save
from tdmodels.errors import InputError, check_flag
from tdmodels.file_read import read_regular_text
from tdmodels.from_arrays import read_arrays, world_from_arrays
from tdmodels.roster_digests import published_digest
from tdmodels.rosters import (SIMULATOR_FILE, known_worlds, open_world, read_simulator_file, reserved_name, world_file,
                              world_name, worlds_dir)
from tdmodels.sample import load_sample
from tdmodels.sample_roster import real_session_roster, resample_name
from tdmodels.simulator import ROSTERS
from tdmodels.simulator_params import BASES, generator_version
from tdmodels.stress_knobs import STRESS_PRESETS, StressKnobs, preset_knobs
from tdmodels.stress_worlds import build_stress_world
from tdmodels.world import WorldFormatError, check_name, load_world, save_world, validate_world, world_digest
from tutorduel.arg_types import distinct_names


def list_worlds(directory=None) -> int:
    """Print the simulated rosters and every world file in the folder, each checked."""
    for n in known_worlds(directory):
        r = ROSTERS.get(n)
        f = world_file(n, directory)
        if r and not f.exists():
            print(f"{n:20s} not built  {r.arrivals:4d} arrivals  {'held out' if r.held_out else 'open    '}  "
                  f"{r.description}")
            continue
        if n in STRESS_PRESETS and not f.exists():
            knobs, description = STRESS_PRESETS[n]
            print(f"{n:20s} not built  {knobs.arrivals:4d} arrivals  open      stress preset: {description}")
            continue
        try:
            ds = load_world(f)
        except WorldFormatError as exc:
            print(f"{n:20s} INVALID    {exc}")
            continue
        kind = f"simulated {ds.attrs.get('generator')}" if r else str(ds.attrs.get("generator", "imported"))
        print(f"{n:20s} on disk    {int(ds.attrs['arrivals']):4d} arrivals  "
              f"{'held out' if int(ds.attrs['held_out']) else 'open    '}  {kind}: {ds.attrs.get('description', '')}")
    return 0


def build_worlds(names: list[str] | None = None, simulator=None, directory=None, generator: str | None = None) -> int:
    """Build the named rosters (default: all), first adopting `simulator` (a simulator file) or `generator` (a named
    generator, ``tdmodels.simulator_params.BASES``) for the folder if given; warn about any world that differs from
    its published digest."""
    if simulator and generator:
        raise InputError("give --simulator or --generator, not both")
    adopted = adopt_simulator(simulator, directory) if simulator else None
    if generator:
        adopted = adopt_generator(generator, directory)
    differ, built = 0, []
    for n in distinct_names(names, "rosters to build") if names else list(ROSTERS):
        target = world_file(n, directory)
        new = not target.exists()
        try:
            ds = open_world(n, allow_test=True, directory=directory)
        except BaseException:
            if adopted is not None:      # the folder goes back to what it generated before this command
                for f in [*built, adopted]:
                    f.unlink(missing_ok=True)
            raise
        if new:
            built.append(target)
        print(f"{n}: {world_file(n, directory)} ({ds.sizes['student']} students, {ds.sizes['question']} questions)"
              f"; {digest_check(ds)}")
        differ += digest_differs(ds)
    if differ:
        print(f"warning: {differ} world(s) differ from their published digest: rows computed on them will not match "
              f"rows computed elsewhere (rebuild them: remove the files and run tutorduel worlds build)",
              file=sys.stderr)
    return 0


def digest_differs(ds) -> bool:
    want = published_digest(ds.attrs.get("generator"), ds.attrs.get("roster"))
    return want is not None and want != world_digest(ds)


def digest_check(ds) -> str:
    """'digest D (as published)', 'digest D, NOT the published P', or 'digest D (none published)'."""
    have, want = world_digest(ds), published_digest(ds.attrs.get("generator"), ds.attrs.get("roster"))
    if want is None:
        return f"digest {have} (none published for generator {ds.attrs.get('generator')!r})"
    return f"digest {have} (as published)" if have == want else f"digest {have}, NOT the published {want}"


def adopt_generator(name: str, directory) -> Path | None:
    """Make a worlds folder generate its rosters with the named generator (its parameters written into the folder
    as its simulator file), by ``adopt_simulator``'s rules."""
    if name not in BASES:
        raise InputError(f"generator {name!r}: the named ones are {', '.join(BASES)}")
    text = json.dumps({"generator": name, "params": {k: float(v) for k, v in BASES[name]._asdict().items()}},
                      indent=1, sort_keys=True)
    return _adopt(BASES[name], text, f"--generator {name}", directory)


def adopt_simulator(path, directory) -> Path | None:
    """Make a worlds folder generate its rosters from the simulator file at `path` (copied in as simulator.json);
    refused where the folder already holds another simulator file or roster files of another generator. Returns
    the file written, None where the folder already had it."""
    return _adopt(read_simulator_file(path), read_regular_text(path, 2**20), str(path), directory)


def _adopt(params, text: str, source: str, directory) -> Path | None:
    folder = worlds_dir(directory)
    mine = folder / SIMULATOR_FILE
    if mine.exists():
        if read_simulator_file(mine) != params:
            raise InputError(f"{folder} already generates from {mine} ({generator_version(read_simulator_file(mine))}); "
                             f"give another --worlds folder for {source}")
        return None
    for r in ROSTERS:
        f = folder / f"{r}.nc"
        made_by = str(load_world(f).attrs.get("generator")) if f.exists() else None
        if made_by is not None and made_by != generator_version(params):
            raise InputError(f"{folder} holds {f.name} of generator {made_by!r}; give an empty "
                             f"--worlds folder for the worlds of {source} ({generator_version(params)})")
    folder.mkdir(parents=True, exist_ok=True)
    atomic_save(mine, lambda tmp: Path(tmp).write_text(text))
    print(f"{folder} now generates its rosters from {source} ({generator_version(params)})")
    return mine


def describe_world(name: str, seeds: list[int], seeds_text: str, allow_test=False, directory=None) -> int:
    """Print a world's sizes, its reference rows over `seeds` and its world-level figures beside the sample's."""
    world = open_world(name, allow_test=allow_test, directory=directory)
    print(f"world {world_name(name)} (roster {world.attrs['roster']}, content digest {world_digest(world)}): "
          f"{world.attrs.get('description', '')}")
    print(f"{world.sizes['student']} students, {world.sizes['question']} questions, {world.attrs['arrivals']} arrivals, "
          f"arrival mode {world.attrs['arrival_mode']}, rater {'present' if int(world.attrs['rater_available']) else 'absent'}\n")
    refs = reference_table(world, seeds)
    print(f"references over seeds {seeds_text} (score; summed regret):")
    for ref in ("floor", "random", "best-pair-everyone", "best-fixed-pair", "linear-oracle"):
        sc = mean_se([v["score"] for v in refs[ref].values()])
        R = mean_se([v["regret"] for v in refs[ref].values()])
        print(f"  {REFERENCE_LABELS[ref]:40s} score {sc[0]:6.1f}   R {R[0]:8.1f}")
    sample = None
    is_sample = str(world.attrs.get("generator")) == "site-sample"
    if world_file("sample", directory).exists() and not is_sample:
        sample = world_figures(open_world("sample", directory=directory))
    hint = "" if sample or is_sample else "; import the sample to compare: tutorduel worlds import-sample PATH"
    print(f"\nworld-level figures (seed {seeds[0]} schedule){hint}")
    print(format_side_by_side(world_figures(world, seeds[0]), sample, str(world.attrs["roster"])))
    return 0


def print_targets(seeds: list[int], bootstrap: int, allow_test=False, directory=None) -> int:
    """How far our rosters' world-level figures and the sample's statistics are from the published ones."""
    rosters = [r for r in PUBLISHED_ROSTERS if allow_test or not ROSTERS[r].held_out]
    if len(rosters) < len(PUBLISHED_ROSTERS):
        print("note: held-out rosters left out (pass --allow-test for their world-level rows; fitting worlds to "
              "them is not tuning a policy, but reading them is evaluation)")
    worlds = {r: open_world(r, allow_test=allow_test, directory=directory) for r in rosters}
    targets = world_targets(worlds, seeds)
    if world_file("sample", directory).exists():
        against = SAMPLE_ROSTER if SAMPLE_ROSTER in worlds else rosters[0]
        if against != SAMPLE_ROSTER:
            print(f"note: the sample's statistics are compared with {against} (the sample is a held-out-profile "
                  f"roster; --allow-test compares them with {SAMPLE_ROSTER})")
        targets += sample_targets(open_world("sample", directory=directory), worlds[against], bootstrap)
    else:
        print("note: the real sample is not imported (tutorduel worlds import-sample PATH); its statistics are left out")
    print(format_targets(targets))
    return 0


def import_sample(path, directory=None, force: bool = False, resamples=(0, 1)) -> int:
    """Convert the published site sample into the world file `sample` and resample its sessions into the
    real-session rosters `real-sessions-R` for each R in `resamples` (``tdmodels.sample_roster``); an existing
    file of other content is replaced only with `force`."""
    force = check_flag("force", force)
    ds = validate_world(load_sample(path), f"sample {path}")      # a bad input is named as the input
    rosters = {resample_name(r): validate_world(real_session_roster(ds, r), f"real-session roster {r}")
               for r in resamples}
    targets = {"sample": ds, **rosters}
    if not force:
        for name, world in targets.items():
            target = world_file(name, directory)
            if target.exists():
                try:
                    same = world_digest(load_world(target)) == world_digest(world)
                except WorldFormatError:
                    same = False
                if not same:
                    raise InputError(f"world file {target} exists with other content; pass --force to replace it")
    out = save_world(ds, world_file("sample", directory))
    print(f"sample: {out} ({ds.attrs['arrivals']} arrivals of real judge data; rater feature absent); "
          f"{digest_check(ds)}")
    for name, world in rosters.items():
        out = save_world(world, world_file(name, directory))
        print(f"{name}: {out} ({world.attrs['arrivals']} arrivals resampled from the sample's sessions; held out); "
              f"{digest_check(world)}")
    return 0


def import_curves(path, directory=None, force: bool = False) -> int:
    """Check the reference's published learning curves at `path` (``diagnostics.published_curves``) and keep a
    copy in the worlds folder, where the leaderboard reads them; a copy of other content is replaced only with
    `force`."""
    force = check_flag("force", force)
    curves = load_curves(path)
    text = read_regular_text(Path(path), CURVES_BYTES)
    folder = worlds_dir(directory)
    target = folder / CURVES_FILE
    if target.exists() and not force and read_regular_text(target, CURVES_BYTES) != text:
        raise InputError(f"{target} exists with other content; pass --force to replace it")
    folder.mkdir(parents=True, exist_ok=True)
    atomic_save(target, lambda tmp: Path(tmp).write_text(text))
    shown = "; ".join(f"{r}: {len(by)} methods, {len(next(iter(by.values())).mean)} arrivals" for r, by in curves.items())
    print(f"published curves: {target} ({shown})")
    return 0


def world_from_npz(path, name: str, directory=None, force=False, **world_options) -> int:
    """Make the world `name` from the arrays of a .npz file (checked from their headers before any is loaded)."""
    force = check_flag("force", force)
    check_name(name)
    if reserved_name(name):
        raise InputError(f"--name {name!r} is a simulated roster's, a stress preset's, the real sample's or a "
                         f"real-session roster's name; choose another")
    arrays = read_arrays(path)
    target = world_file(name, directory)
    if target.exists() and not force:
        raise InputError(f"world file {target} exists; pass --force to replace it")
    personas = [str(p) for p in arrays["personas"]] if "personas" in arrays else None
    ds = world_from_arrays(arrays["utilities"], arrays.get("probs"), name=name, rater=arrays.get("rater"),
                           personas=personas, **world_options)
    out = save_world(ds, target)
    print(f"{name}: {out} ({ds.sizes['student']} students, {ds.sizes['question']} questions, "
          f"{ds.attrs['arrivals']} arrivals of {ds.attrs['topics_per_session']} questions; click model "
          f"{ds.attrs['click_model']}, beta {ds.attrs['beta']:.3f})")
    return 0


def stress_worlds(presets: list[str] | None = None, name: str | None = None, seed: int = 0, knobs: dict | None = None,
                  directory=None, force: bool = False) -> int:
    """Build stress worlds (``tdmodels.stress_worlds``) into the worlds folder.

    With neither `name` nor `knobs`: the named presets (default: all) at `seed`, each under its preset's name
    (with "-seed{seed}" appended for a seed other than 0). With `name`: one world of the first preset's knobs
    (or the defaults) changed by `knobs`. An existing file of the same content is kept; one of other content
    is replaced only with `force`."""
    force = check_flag("force", force)
    presets = distinct_names(presets, "presets") if presets else []
    for p in presets:
        preset_knobs(p)
    if knobs and not name:
        raise InputError("stress knobs given without --name: a world of your own knobs needs a name of its own")
    if name:
        if len(presets) > 1:
            raise InputError(f"--name {name!r} names one world; give at most one preset to start from")
        check_name(name)
        if reserved_name(name):
            raise InputError(f"--name {name!r} is a roster's, a preset's, the real sample's or a real-session "
                             f"roster's name; choose another for "
                             f"your own world "
                             f"(a preset is built by naming it: tutorduel worlds stress {name})")
        base = preset_knobs(presets[0]) if presets else StressKnobs()
        jobs = [(name, base._replace(**(knobs or {})),
                 STRESS_PRESETS[presets[0]][1] if presets and not knobs else "")]
    else:
        jobs = [(p if seed == 0 else f"{p}-seed{seed}", *STRESS_PRESETS[p]) for p in (presets or STRESS_PRESETS)]
    for world_name_, k, description in jobs:
        ds = build_stress_world(k, seed, world_name_, description)
        target = world_file(world_name_, directory)
        if target.exists():
            try:
                same = world_digest(load_world(target)) == world_digest(ds)
            except WorldFormatError:
                same = False
            if same:
                print(f"{world_name_}: {target} is this world already; {digest_check(ds)}")
                continue
            if not force:
                raise InputError(f"world file {target} exists with other content; pass --force to replace it")
        save_world(ds, target)
        segments = int(ds["student_segment"].values.max()) + 1
        print(f"{world_name_}: {target} ({ds.attrs['arrivals']} arrivals in {segments} segment(s)); {digest_check(ds)}")
    return 0
