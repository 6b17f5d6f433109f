"""Where rosters live: build-on-demand cache of simulated worlds, imported worlds, the held-out lock.

A world is named by a roster name (`dev`, `composite`, ..., `sample` once imported) or a
path to a `.nc` file. Files live in `--worlds DIR`, else `$TUTORDUEL_WORLDS`, else
`./worlds`. A simulated roster that is not on disk yet is generated (seed 0) and saved.
"""
from __future__ import annotations

import os
from pathlib import Path

import xarray as xr

from .simulator import ROSTERS, build_roster
from .world import load_world, save_world

DEFAULT_WORLD = "dev"


class HeldOutError(PermissionError):
    """A held-out roster was asked for without --allow-test."""


def worlds_dir(path: str | os.PathLike | None = None) -> Path:
    return Path(path or os.environ.get("TUTORDUEL_WORLDS") or "worlds")


def world_file(name: str, directory=None) -> Path:
    if name.endswith(".nc") or os.sep in name:
        return Path(name)
    return worlds_dir(directory) / f"{name}.nc"


def known_worlds(directory=None) -> list[str]:
    """Simulated roster names plus any world file already in the directory."""
    names = list(ROSTERS)
    d = worlds_dir(directory)
    if d.is_dir():
        names += sorted(p.stem for p in d.glob("*.nc") if p.stem not in ROSTERS)
    return names


def open_world(name: str, allow_test: bool = False, directory=None) -> xr.Dataset:
    """Load (building if needed) a world by name or path; refuse held-out ones without allow_test."""
    if name in ROSTERS and ROSTERS[name].held_out and not allow_test:
        raise HeldOutError(f"roster {name!r} is held out for evaluation; pass --allow-test to read it (never tune on it)")
    path = world_file(name, directory)
    if not path.exists() and name in ROSTERS:
        save_world(build_roster(name), path)
    if not path.exists():
        hint = " (import it first: tutorduel worlds import-sample PATH)" if name == "sample" else ""
        raise FileNotFoundError(f"no world {name!r} at {path}{hint}; known: {', '.join(known_worlds(directory))}")
    ds = load_world(path)
    if int(ds.attrs["held_out"]) and not allow_test:
        raise HeldOutError(f"world {name!r} is held out for evaluation; pass --allow-test to read it (never tune on it)")
    return ds
