"""Reading a file someone else made: only a regular file, and only up to a size, so that a path naming a
device (``/dev/zero``), a pipe or a huge file gets one clear error instead of a hang or a memory blow-up."""
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from tdmodels.errors import InputError


class UnreadableFileError(InputError):
    """A path that is not a regular file, cannot be opened, or is larger than the reader allows."""


def _chunks(path: str | os.PathLike, limit: int, follow: bool = True):
    """The bytes of the regular file at `path` in 1 MiB chunks, at most `limit` in all; UnreadableFileError for
    anything else (checked on the open file, so a path swapped after a check is still refused); with `follow`
    False, a symlink at `path` is refused too."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)   # a pipe must not block the open
    except OSError as exc:
        raise UnreadableFileError(f"{path}: cannot be opened ({exc.strerror or exc})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
        os.close(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "a folder" if stat.S_ISDIR(st.st_mode) else "a device, pipe or other special file"
            raise UnreadableFileError(f"{path}: {what}, not a regular file")
        raise UnreadableFileError(f"{path}: {st.st_size:,} bytes; at most {limit:,} are read")
    with os.fdopen(fd, "rb") as fh:
        seen = 0
        while chunk := fh.read(2**20):
            seen += len(chunk)
            if seen > limit:                      # grew since the fstat
                raise UnreadableFileError(f"{path}: more than {limit:,} bytes; at most {limit:,} are read")
            yield chunk


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; UnreadableFileError otherwise."""
    return b"".join(_chunks(path, limit))


def regular_file_digest(path: str | os.PathLike, limit: int, follow: bool = True) -> bytes:
    """SHA-256 of the regular file at `path`, read in chunks (never held whole), at most `limit` bytes;
    UnreadableFileError otherwise (and for a symlink, with `follow` False)."""
    h = hashlib.sha256()
    for chunk in _chunks(path, limit, follow):
        h.update(chunk)
    return h.digest()


def read_regular_text(path: str | os.PathLike, limit: int) -> str:
    """As `read_regular`, decoded as UTF-8 (UnreadableFileError if it is not)."""
    data = read_regular(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(f"{path}: not UTF-8 text ({exc})") from None
