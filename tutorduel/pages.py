"""The interactive pages' use cases: be the policy (play), watch CODuel learn (watch)
(``diagnostics.play_page``, ``diagnostics.watch_page``)."""
from __future__ import annotations

import os
from pathlib import Path

from diagnostics.play_page import play_data, play_in_terminal, write_play_page
from diagnostics.watch_page import watch_data, write_watch_page
from tdmodels.errors import InputError
from tdmodels.rosters import open_world, world_file

DEFAULT_WORLD = "dev"


def default_world(worlds_dir=None) -> str:
    """The real sample when it has been imported (`tutorduel worlds import-sample`), else the dev roster."""
    return "sample" if world_file("sample", worlds_dir).exists() else DEFAULT_WORLD


def page_path(out: str) -> Path:
    """The --out of a page command, checked before any work: a file name, not a folder (nor a name written
    as one: 'p.html/.' had been written as p.html)."""
    from tdmodels.atomic_file import names_a_folder

    if isinstance(out, (str, bytes, os.PathLike)) and not isinstance(out, Path) and names_a_folder(os.fspath(out)):
        raise InputError(f"--out {out}: names a folder (it ends in a slash, '.' or '..'); give the page's file name")
    path = Path(out)
    if path.is_dir():
        raise InputError(f"--out {out}: is a folder; give the page's file name, e.g. {path / 'page.html'}")
    return path


def _write(writer, path: Path, data) -> Path:
    try:
        return writer(path, data)
    except OSError as exc:
        raise InputError(f"--out {path}: cannot write the page ({type(exc).__name__}: {exc.strerror or exc})") from None


def play(world: str | None, seed: int, out: str | None, sessions: int = 48, arrival: int = 1, compare: bool = True,
         allow_test: bool = False, worlds_dir=None) -> int:
    """Write the play page of `sessions` arrivals to `out`; with `out` None, play arrival `arrival` (from 1) at the
    prompt instead."""
    name = world or default_world(worlds_dir)
    path = None if out is None else page_path(out)
    ds = open_world(name, allow_test=allow_test, directory=worlds_dir)
    if arrival > ds.attrs["arrivals"]:
        raise InputError(f"--arrival {arrival}: world {name!r} has {ds.attrs['arrivals']} arrivals")
    data = play_data(ds, seed, sessions=max(sessions, arrival), compare=compare)
    if path is None:
        play_in_terminal(data, arrival - 1)
        return 0
    written = _write(write_play_page, path, data)
    print(f"wrote {written} ({len(data['arrivals'])} sessions of {name!r}, seed {seed}); open it in a browser "
          f"(no server needed), #arrival=K picks session K + 1")
    return 0


def watch(world: str | None, seed: int, out: str, arrivals: int = 100, curve_seeds: int = 4, allow_test: bool = False,
          worlds_dir=None) -> int:
    """Write the watch page: CODuel's beliefs and pairs over the first `arrivals` arrivals of one run, and a
    learning curve over `curve_seeds` full runs."""
    name = world or default_world(worlds_dir)
    path = page_path(out)
    ds = open_world(name, allow_test=allow_test, directory=worlds_dir)
    arrivals = min(arrivals, int(ds.attrs["arrivals"]))
    data = watch_data(ds, seed, arrivals=arrivals, curve_seeds=curve_seeds)
    written = _write(write_watch_page, path, data)
    print(f"wrote {written} (CODuel on {name!r}, seed {seed}, {arrivals} arrivals; learning curve over "
          f"{curve_seeds} seeds)")
    return 0
