"""The links between the project's pages: a page links only to pages this toolkit wrote beside it.

Every page the toolkit writes carries ``GENERATOR_META`` in its head. ``nav`` lists the regular files beside a
page that carry it (never a symlink, never a file someone else put there, whatever its name) and links each
with a relative URL that cannot be read as a scheme: a file named ``javascript:alert(7).html`` is linked, if it
were ours, as ``./javascript%3Aalert%287%29.html``, a file name and nothing else.
"""
from __future__ import annotations

import html
import os
import stat
from pathlib import Path
from urllib.parse import quote

GENERATOR_META = "<meta name='generator' content='tutorduel'>"
_HEAD_BYTES = 4096              # the marker sits in the head, within the first bytes of the file
SIBLING_PAGES = (("leaderboard.html", "leaderboard"), ("play.html", "be the policy"), ("watch.html", "watch CODuel learn"))
MAX_LINKS = 200                 # a folder of thousands of pages gets the first ones, in name order


def written_by_us(path: str | os.PathLike) -> bool:
    """Whether `path` is a regular file (not a symlink) whose head carries ``GENERATOR_META``."""
    try:      # never follows a symlink, never blocks on a pipe swapped in after a check
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, _HEAD_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    return GENERATOR_META.encode() in head


def page_href(name: str) -> str:
    """A relative URL to a file named `name` in the same folder: percent-encoded, starting with ./ so that no
    part of a name (``javascript:``, ``//host``, ``?``, ``#``) is read as anything but the file's name."""
    return "./" + quote(name, safe="")


def nav(path: str | os.PathLike) -> str:
    """Links to the toolkit's other pages beside `path`: the known ones first, then any other page it wrote
    there (validation reports are named after their .nc), each checked by ``written_by_us``; '' when none."""
    here = Path(path)
    if not here.parent.is_dir():
        return ""
    labels = dict(SIBLING_PAGES)
    others = sorted(p.name for p in here.parent.glob("*.html") if p.name not in labels)
    names = [n for n, _ in SIBLING_PAGES] + others
    found = [(n, labels.get(n, Path(n).stem)) for n in names
             if n != here.name and written_by_us(here.parent / n)][:MAX_LINKS]
    links = "".join(f"<a href='{html.escape(page_href(n))}'>{html.escape(label)}</a>" for n, label in found)
    return f"<nav>{links}</nav>" if links else ""


__all__ = ["GENERATOR_META", "nav", "page_href", "written_by_us"]
