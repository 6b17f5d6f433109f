"""Reading a file someone else made: only a regular file, and only up to a size, so that a path naming a
device (``/dev/zero``), a pipe or a huge file gets one clear error instead of a hang or a memory blow-up."""
from __future__ import annotations

import os
import stat
from pathlib import Path


class UnreadableFileError(ValueError):
    """A path that is not a regular file, cannot be opened, or is larger than the reader allows."""


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; UnreadableFileError otherwise."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # a pipe must not block the open
    except OSError as exc:
        raise UnreadableFileError(f"{path}: cannot be opened ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "a folder" if stat.S_ISDIR(st.st_mode) else "a device, pipe or other special file"
            raise UnreadableFileError(f"{path}: {what}, not a regular file")
        if st.st_size > limit:
            raise UnreadableFileError(f"{path}: {st.st_size:,} bytes; at most {limit:,} are read")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise UnreadableFileError(f"{path}: more than {limit:,} bytes; at most {limit:,} are read")
        return data
    finally:
        os.close(fd)


def regular_file_digest(path: str | os.PathLike, limit: int) -> bytes:
    """SHA-256 of the regular file at `path`, read in chunks (never held whole), at most `limit` bytes;
    UnreadableFileError otherwise."""
    import hashlib

    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise UnreadableFileError(f"{path}: cannot be opened ({exc.strerror or exc})") from None
    h, seen = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFileError(f"{path}: a device, pipe or other special file, not a regular file")
        if st.st_size > limit:
            raise UnreadableFileError(f"{path}: {st.st_size:,} bytes; at most {limit:,} are read")
        while chunk := fh.read(2**20):
            seen += len(chunk)
            if seen > limit:
                raise UnreadableFileError(f"{path}: more than {limit:,} bytes; at most {limit:,} are read")
            h.update(chunk)
    return h.digest()


def read_regular_text(path: str | os.PathLike, limit: int) -> str:
    """As `read_regular`, decoded as UTF-8 (UnreadableFileError if it is not)."""
    data = read_regular(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(f"{path}: not UTF-8 text ({exc})") from None
