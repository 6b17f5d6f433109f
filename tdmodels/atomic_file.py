"""Writing a file so that a killed process leaves either the old file or the whole new one."""
from __future__ import annotations

import os
import stat
from pathlib import Path
from tdmodels.errors import InputError


class OutputPathError(InputError):
    """A path that a file cannot be written to without destroying something: a device, a folder, a pipe,
    or a path under a regular file."""


def _stat(path: Path):
    """os.stat of `path`; None where nothing is there (or a regular file stands in its folder's place)."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest existing parent of `path` when it is not a folder (a regular file in the way), else None."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def check_output_path(path: str | os.PathLike) -> Path:
    """Refuse (OutputPathError naming it) a path where writing would replace anything but a regular file, or
    whose folder cannot exist (a regular file in its way); return it as a Path."""
    path = Path(path)
    try:
        st = _stat(path)
    except OSError as exc:
        raise OutputPathError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "a device or special file"
        raise OutputPathError(f"{path} is {what}, not a regular file; refusing to replace it")
    blocking = _file_in_the_way(path) if st is None else None
    if blocking is not None:
        raise OutputPathError(f"{path}: {blocking} is a file, not a folder")
    return path


def folder_problem(path: str | os.PathLike) -> str | None:
    """What keeps `path` from being used as a folder (None if it is one, or does not exist yet): a file, a
    device, a symlink loop, a regular file among its parents, no permission."""
    path = Path(path)
    try:
        st = _stat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if st is not None and not stat.S_ISDIR(st.st_mode):
        return "is a file, not a folder" if stat.S_ISREG(st.st_mode) else "is a device or special file, not a folder"
    blocking = _file_in_the_way(path) if st is None else None
    return f"{blocking} is a file, not a folder" if blocking is not None else None


def atomic_save(path: str | os.PathLike, write) -> Path:
    """Write a file so a kill leaves the old file or the whole new one: `write(tmp_path)` fills a
    temporary file in the same folder, which is fsynced and renamed over `path`. Only a regular file or a
    new path is ever replaced (``check_output_path``)."""
    path = check_output_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return path


__all__ = ["atomic_save", "check_output_path", "OutputPathError"]
