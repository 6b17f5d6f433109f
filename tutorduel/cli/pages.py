"""`play` and `watch`: the self-contained pages."""
from __future__ import annotations

from tdmodels.limits import MAX_CURVE_SEEDS, MAX_PAGE_ARRIVALS
from tutorduel.arg_types import int_in
from tutorduel.cli.options import page_options


def cmd_play(a) -> int:
    from tutorduel.pages import play

    return play(a.world, a.seed, None if a.terminal else a.out, sessions=a.sessions, arrival=a.arrival,
                compare=not a.no_compare, allow_test=a.allow_test, worlds_dir=a.worlds)


def cmd_watch(a) -> int:
    from tutorduel.pages import watch

    return watch(a.world, a.seed, a.out, arrivals=a.arrivals, curve_seeds=a.curve_seeds, allow_test=a.allow_test,
                 worlds_dir=a.worlds)


def add_parsers(sub) -> None:
    p = sub.add_parser("play", help="be the policy: a self-contained page (or --terminal) to play one student's session")
    page_options(p, "play.html")
    p.add_argument("--sessions", type=int_in(1, MAX_PAGE_ARRIVALS), default=48, help="arrivals the page offers (default 48)")
    p.add_argument("--arrival", type=int_in(1, MAX_PAGE_ARRIVALS), default=1,
                   help="with --terminal: which arrival to play (default 1)")
    p.add_argument("--terminal", action="store_true", help="play at the prompt instead of writing a page")
    p.add_argument("--no-compare", action="store_true", help="leave out no-transfer's and CODuel's figures (no replays)")
    p.set_defaults(fn=cmd_play)

    p = sub.add_parser("watch", help="watch CODuel learn: a self-contained page stepping through a recorded run")
    page_options(p, "watch.html")
    p.add_argument("--arrivals", type=int_in(1, MAX_PAGE_ARRIVALS), default=100, help="arrivals to record (default 100)")
    p.add_argument("--curve-seeds", type=int_in(1, MAX_CURVE_SEEDS), default=4,
                   help="full runs behind the learning curve's band (default 4)")
    p.set_defaults(fn=cmd_watch)
