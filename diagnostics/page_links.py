"""The links between the project's pages: a page links only to pages this toolkit wrote beside it, and can
show it wrote.

A marker in a page proves nothing: anyone who can put a file in an output folder can copy it (a planted page
carrying the toolkit's generator ``<meta>`` and a script had been offered in every page's navigation). So each
page is written through `save_page`, which records the page's SHA-256 under its resolved path in a list this
toolkit keeps outside the output folder (``$TUTORDUEL_CACHE/pages``, beside the verified-row verdicts); ``nav``
links a sibling only when it is a regular file (never a symlink) whose content is the one recorded for that
path. Each link is a relative URL that cannot be read as a scheme: a file named ``javascript:alert(7).html`` is
linked, if it were ours, as ``./javascript%3Aalert%287%29.html``, a file name and nothing else.
"""
from __future__ import annotations

import hashlib
import html
import os
from pathlib import Path
from urllib.parse import quote

from tdmodels.atomic_file import atomic_save, save_cache_file
from tdmodels.file_read import UnreadableFileError, read_regular, regular_file_digest

GENERATOR_META = "<meta name='generator' content='tutorduel'>"
SIBLING_PAGES = (("leaderboard.html", "leaderboard"), ("play.html", "be the policy"), ("watch.html", "watch CODuel learn"))
MAX_LINKS = 200                 # a folder of thousands of pages gets the first ones, in name order


MAX_PAGE_BYTES = 256 << 20     # a page larger than this is not read to be checked (not linked)


def _record_path(path: Path) -> Path:
    from online.code_identity import cache_root

    key = hashlib.sha256(b"tutorduel-page\0" + os.fsencode(os.path.realpath(path))).hexdigest()
    return cache_root() / "pages" / key[:2] / key[2:]


def _record(path: Path, digest: str) -> bytes:
    return f"tutorduel page\npath {os.path.realpath(path)}\nsha256 {digest}\n".encode()


def save_page(path: str | os.PathLike, page: str) -> Path:
    """Write `page` (HTML text) at `path` (``tdmodels.atomic_file.atomic_save``) and record that this toolkit
    wrote it (best effort: where the record cannot be written, the page is written and simply not linked)."""
    data = page.encode("utf-8")
    out = atomic_save(path, lambda tmp: Path(tmp).write_bytes(data))
    save_cache_file(_record_path(out), _record(out, hashlib.sha256(data).hexdigest()))
    return out


def written_by_us(path: str | os.PathLike) -> bool:
    """Whether `path` is a regular file (not a symlink) whose content is what `save_page` recorded writing at
    that path."""
    try:
        digest = regular_file_digest(path, MAX_PAGE_BYTES, follow=False)
        want = _record(Path(path), digest.hex())
        return read_regular(_record_path(Path(path)), len(want) + 1) == want
    except (OSError, UnreadableFileError):
        return False


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


__all__ = ["GENERATOR_META", "nav", "page_href", "save_page", "written_by_us"]
