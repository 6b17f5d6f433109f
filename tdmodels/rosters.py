"""Where rosters live: build-on-demand cache of simulated worlds, imported worlds, the held-out lock.

A world is named by a roster name (`dev`, `composite`, ..., `sample` once imported, a real-session
roster `real-sessions-N`, a stress preset such as `stress-drift`, or the name of any world file in the
folder) or a path to a `.nc` file. Files live in `--worlds DIR`, else `$TUTORDUEL_WORLDS`, else
`./worlds`. A simulated roster that is not on disk yet is generated (seed 0) and saved, from the
simulator parameters in the folder's `simulator.json` when it has one (written by `tutorduel worlds
build --simulator FILE`, e.g. a calibration's), else the default generator's; a roster file there whose
generator is not that file's is refused, so worlds of two generators never share a folder. A
real-session roster not on disk yet is resampled from the folder's imported sample
(``tdmodels.sample_roster``). A world is shown under the name it was asked for (a path: its file name
without `.nc`); its identity in the run store is its content digest, not a name.
"""
from __future__ import annotations

import os
from pathlib import Path

import xarray as xr

from .atomic_file import folder_problem
from .file_read import read_regular_text
from .sample_roster import real_session_roster, resample_of
from .simulator import ROSTERS, build_roster
from .simulator_params import BASES, DEFAULT_PARAMS, SimulatorParams, generator_version
from .stress_knobs import STRESS_PRESETS
from .stress_worlds import GENERATOR, build_stress_world
from .world import WorldFormatError, check_name, load_world, save_world, world_digest
from tdmodels.errors import HeldOutError, InputError, check_flag

DEFAULT_WORLD = "dev"
SIMULATOR_FILE = "simulator.json"


def worlds_dir(path: str | os.PathLike | None = None) -> Path:
    """The world files folder: `path`, else $TUTORDUEL_WORLDS, else ./worlds; WorldFormatError where that
    path exists and is not a folder (a file, a device, a symlink loop)."""
    folder = Path(path or os.environ.get("TUTORDUEL_WORLDS") or "worlds")
    problem = folder_problem(folder)
    if problem:
        where = "--worlds" if path else ("$TUTORDUEL_WORLDS" if os.environ.get("TUTORDUEL_WORLDS") else "./worlds")
        raise WorldFormatError(f"worlds folder {folder} ({where}): {problem}")
    return folder


def is_path(name: str) -> bool:
    """Whether a --world value names a file (ends in .nc or has a path separator) rather than a world."""
    return name.endswith(".nc") or os.sep in name or (os.altsep is not None and os.altsep in name)


def world_file(name: str, directory=None) -> Path:
    """The file of a world given by name (in the worlds folder) or by path."""
    if is_path(name):
        return Path(name)
    check_name(name)
    return worlds_dir(directory) / f"{name}.nc"


def reserved_name(name: str) -> bool:
    """Whether `name` is one the toolkit gives its own worlds (a roster, a stress preset, the real sample or
    one of its resamples): a world by that name is that world, whatever file holds it."""
    return name in ROSTERS or name in STRESS_PRESETS or name == "sample" or resample_of(name) is not None


def world_name(name: str) -> str:
    """The name a world is shown under: a roster or file name as given, a path's file name without .nc."""
    return Path(name).name.removesuffix(".nc") if is_path(name) else name


def known_worlds(directory=None) -> list[str]:
    """Simulated roster names plus the name of every .nc file in the worlds folder."""
    names = list(ROSTERS) + list(STRESS_PRESETS)
    d = worlds_dir(directory)
    if d.is_dir():
        names += sorted(p.stem for p in d.glob("*.nc") if p.stem not in names and p.is_file())
    return names


def read_simulator_file(path: str | os.PathLike) -> SimulatorParams:
    """The SimulatorParams in a simulator file (JSON with "params": {name: value} and "generator", a named base such
    as "sim-3" or a variant of one; a parameter the file leaves out is its base's, sim-2's where it names none), or
    WorldFormatError naming the file and what is wrong with it."""
    import json

    path = Path(path)
    try:
        spec = json.loads(read_regular_text(path, 2**20))
        values = spec["params"]
        unknown = set(values) - set(SimulatorParams._fields)
        if unknown:
            raise InputError(f"unknown parameter(s) {', '.join(sorted(unknown))}")
        base = str(spec.get("generator") or "sim-2").split("+")[0]
        if base not in BASES:
            raise InputError(f"generator {spec.get('generator')!r}: not a variant of {', '.join(BASES)}")
        params = BASES[base]._replace(**values).check()      # what the file leaves out is its base's
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise WorldFormatError(f"simulator file {path}: {exc.__class__.__name__}: {exc}") from None
    want = spec.get("generator")
    if want is not None and want != generator_version(params):
        raise WorldFormatError(f"simulator file {path}: its generator {want!r} is not its parameters' "
                               f"({generator_version(params)!r}); the file was edited by hand")
    return params


def folder_params(directory=None) -> SimulatorParams:
    """The simulator parameters a worlds folder generates its rosters from (its simulator.json, else sim-1)."""
    f = worlds_dir(directory) / SIMULATOR_FILE
    return read_simulator_file(f) if f.exists() else DEFAULT_PARAMS


def open_world(name: str | os.PathLike, allow_test: bool = False, directory=None, copies: int = 1) -> xr.Dataset:
    """Load (building if needed) a world by name or path; refuse held-out ones without allow_test.

    `copies`: processes that will hold the world at once (checked against available memory first)."""
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str) or not name.strip():
        raise WorldFormatError(f"world name {name!r}: give a roster name or a path to a .nc file")
    allow_test = check_flag("allow_test", allow_test)
    if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= 4096:
        raise InputError(f"copies {copies!r}: the processes that will hold the world, an integer in [1, 4096]")
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise WorldFormatError(f"worlds folder {directory!r}: give a folder path (a str or os.PathLike)")
    if ((name in ROSTERS and ROSTERS[name].held_out) or resample_of(name) is not None) and not allow_test:
        raise HeldOutError(f"roster {name!r} is held out for evaluation; pass --allow-test to read it (never tune on it)")
    path = world_file(name, directory)
    params = folder_params(directory) if name in ROSTERS and not is_path(name) else None
    if not path.exists() and params is not None:
        save_world(build_roster(name, params=params), path)
    elif not path.exists() and name in STRESS_PRESETS and not is_path(name):
        knobs, description = STRESS_PRESETS[name]
        save_world(build_stress_world(knobs, 0, name, description), path)
    elif not path.exists() and resample_of(name) is not None and not is_path(name):
        sample = world_file("sample", directory)
        if sample.exists():
            save_world(real_session_roster(load_world(sample), resample_of(name)), path)
    if not path.exists():
        hint = (" (import it first: tutorduel worlds import-sample PATH)" if name == "sample" else
                " (it is resampled from the real sample: import that first, tutorduel worlds import-sample PATH)"
                if resample_of(name) is not None else "")
        raise FileNotFoundError(f"no world {name!r} at {path}{hint}; known: {', '.join(known_worlds(directory))}")
    ds = load_world(path, copies=copies)
    if params is not None and str(ds.attrs.get("generator")) != generator_version(params):
        raise WorldFormatError(f"world file {path} was made by generator {ds.attrs.get('generator')!r}, but its folder "
                               f"generates {generator_version(params)!r}"
                               f"{' (' + SIMULATOR_FILE + ')' if params != DEFAULT_PARAMS else ''}; "
                               f"remove it to rebuild, or use a folder of its own")
    if name in STRESS_PRESETS and not is_path(name):
        from .roster_digests import published_digest

        want = published_digest(GENERATOR, name)
        if world_digest(ds) != want:
            raise WorldFormatError(f"world file {path} is named like the stress preset {name!r} but is not it (digest "
                                   f"{world_digest(ds)}, the preset's is {want}); remove it to rebuild the preset")
    if resample_of(name) is not None and not is_path(name):
        sample = world_file("sample", directory)
        want = real_session_roster(load_world(sample), resample_of(name)) if sample.exists() else None
        if want is not None and world_digest(ds) != world_digest(want):
            raise WorldFormatError(f"world file {path} is named like the real-session roster {name!r} but is not the "
                                   f"resample of the imported sample {sample} (digest {world_digest(ds)}, the "
                                   f"resample's is {world_digest(want)}); remove it to rebuild it from the sample")
    if int(ds.attrs["held_out"]) and not allow_test:
        raise HeldOutError(f"world {name!r} is held out for evaluation; pass --allow-test to read it (never tune on it)")
    return ds
