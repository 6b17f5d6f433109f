"""`tutorduel play` and `tutorduel watch`: the interactive pages (diagnostics/play_page.py, watch_page.py)."""
from __future__ import annotations

from pathlib import Path

from tdmodels.rosters import open_world, world_file

DEFAULT_WORLD = "dev"


def default_world(worlds_dir=None) -> str:
    """The real sample when it has been imported (`tutorduel worlds import-sample`), else the dev roster."""
    return "sample" if world_file("sample", worlds_dir).exists() else DEFAULT_WORLD


def page_path(out: str) -> Path:
    """The --out of a page command, checked before any work: a file name, not a folder."""
    from tutorduel.errors import CLIError

    path = Path(out)
    if path.is_dir():
        raise CLIError(f"--out {out}: is a folder; give the page's file name, e.g. {path / 'page.html'}")
    return path


def _write(writer, path: Path, data) -> Path:
    from tutorduel.errors import CLIError

    try:
        return writer(path, data)
    except OSError as exc:
        raise CLIError(f"--out {path}: cannot write the page ({type(exc).__name__}: {exc.strerror or exc})") from None


def cmd_play(a) -> int:
    from diagnostics.play_page import play_data, play_in_terminal, write_play_page
    from tutorduel.errors import CLIError

    name = a.world or default_world(a.worlds)
    path = None if a.terminal else page_path(a.out)
    world = open_world(name, allow_test=a.allow_test, directory=a.worlds)
    sessions = max(a.sessions, a.arrival)
    if a.arrival > world.attrs["arrivals"]:
        raise CLIError(f"--arrival {a.arrival}: world {name!r} has {world.attrs['arrivals']} arrivals")
    data = play_data(world, a.seed, sessions=sessions, compare=not a.no_compare)
    if a.terminal:
        play_in_terminal(data, a.arrival - 1)
        return 0
    out = _write(write_play_page, path, data)
    print(f"wrote {out} ({len(data['arrivals'])} sessions of {name!r}, seed {a.seed}); open it in a browser "
          f"(no server needed), #arrival=K picks session K + 1")
    return 0


def cmd_watch(a) -> int:
    from diagnostics.watch_page import watch_data, write_watch_page

    name = a.world or default_world(a.worlds)
    path = page_path(a.out)
    world = open_world(name, allow_test=a.allow_test, directory=a.worlds)
    arrivals = min(a.arrivals, int(world.attrs["arrivals"]))
    data = watch_data(world, a.seed, arrivals=arrivals, curve_seeds=a.curve_seeds)
    out = _write(write_watch_page, path, data)
    print(f"wrote {out} (CODuel on {name!r}, seed {a.seed}, {arrivals} arrivals; learning curve over "
          f"{a.curve_seeds} seeds)")
    return 0
