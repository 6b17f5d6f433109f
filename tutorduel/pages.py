"""`tutorduel play` and `tutorduel watch`: the interactive pages (diagnostics/play_page.py, watch_page.py)."""
from __future__ import annotations

from pathlib import Path

from tdmodels.rosters import open_world, world_file

DEFAULT_WORLD = "dev"


def default_world(worlds_dir=None) -> str:
    """The real sample when it has been imported (`tutorduel worlds import-sample`), else the dev roster."""
    return "sample" if world_file("sample", worlds_dir).exists() else DEFAULT_WORLD


def cmd_play(a) -> int:
    from diagnostics.play_page import play_data, play_in_terminal, write_play_page
    from tutorduel.errors import CLIError

    name = a.world or default_world(a.worlds)
    world = open_world(name, allow_test=a.allow_test, directory=a.worlds)
    sessions = max(a.sessions, a.arrival)
    if a.arrival > world.attrs["arrivals"]:
        raise CLIError(f"--arrival {a.arrival}: world {name!r} has {world.attrs['arrivals']} arrivals")
    data = play_data(world, a.seed, sessions=sessions, compare=not a.no_compare)
    if a.terminal:
        play_in_terminal(data, a.arrival - 1)
        return 0
    out = write_play_page(Path(a.out), data)
    print(f"wrote {out} ({len(data['arrivals'])} sessions of {name!r}, seed {a.seed}); open it in a browser "
          f"(no server needed), #arrival=K picks session K + 1")
    return 0


def cmd_watch(a) -> int:
    from diagnostics.watch_page import watch_data, write_watch_page

    name = a.world or default_world(a.worlds)
    world = open_world(name, allow_test=a.allow_test, directory=a.worlds)
    arrivals = min(a.arrivals, int(world.attrs["arrivals"]))
    data = watch_data(world, a.seed, arrivals=arrivals, curve_seeds=a.curve_seeds)
    out = write_watch_page(Path(a.out), data)
    print(f"wrote {out} (CODuel on {name!r}, seed {a.seed}, {arrivals} arrivals; learning curve over "
          f"{a.curve_seeds} seeds)")
    return 0
