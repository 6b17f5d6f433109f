"""Writing a file so that a killed process leaves either the old file or the whole new one."""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path
from tdmodels.errors import InputError


class WriteFailedError(OSError):
    """A file that could not be written (a full disk, an I/O error), named; what it would have replaced is
    kept. An OSError, so that callers that handle the store's I/O go on handling it; the command line
    reports it on one line, exit 2."""


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


def _nearest_existing(path: Path) -> Path:
    """`path` itself if something is there, else its nearest existing parent."""
    for p in (path, *path.parents):
        if os.path.lexists(p):
            return p
    return Path(".")


def unwritable(folder: str | os.PathLike) -> str | None:
    """Why files cannot be created in `folder` (or in the nearest existing parent where it would be made),
    None if they can: read-only file system, no permission."""
    where = _nearest_existing(Path(folder))
    if os.access(where, os.W_OK | os.X_OK):
        return None
    try:        # os.access says no: find out why (EROFS, EACCES) by trying, without leaving anything behind
        tempfile.TemporaryDirectory(dir=where).cleanup()
    except OSError as exc:
        return f"{where} cannot be written ({exc.strerror or exc})"
    return None


def names_a_folder(raw: str | bytes) -> bool:
    """Whether a path as written names a folder whatever is on disk: it is empty, ends in a slash, or its
    last component is '.' or '..' (pathlib drops a trailing '.', so 'pages/p.html/.' would be 'pages/p.html')."""
    text = os.fsdecode(raw)
    seps = "/" + (os.sep if os.sep != "/" else "") + (os.altsep or "")
    if not text or text.endswith(tuple(seps)):
        return True
    last = text
    for sep in seps:
        last = last.rsplit(sep, 1)[-1]
    return last in (".", "..")


def check_output_path(path: str | os.PathLike) -> Path:
    """Refuse (OutputPathError naming it) a path where writing would replace anything but a regular file, or
    whose folder cannot exist (a regular file in its way), or a name written as a folder (`names_a_folder`);
    return it as a Path."""
    raw = os.fspath(path)
    if names_a_folder(raw):
        raise OutputPathError(f"{raw!s}: names a folder (it ends in a slash, '.' or '..'); give a file name")
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
    problem = unwritable(path.parent)
    if problem:
        raise OutputPathError(f"{path}: {problem}")
    return path


def folder_problem(path: str | os.PathLike, writable: bool = False) -> str | None:
    """What keeps `path` from being used as a folder (None if it is one, or does not exist yet): a file, a
    device, a symlink loop, a regular file among its parents, no permission; with `writable`, also a folder
    where files cannot be created (read-only, no write permission)."""
    from tdmodels.errors import check_flag

    writable = check_flag("writable", writable)
    path = Path(path)
    try:
        st = _stat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if st is None and os.path.islink(path):
        return f"is a symlink to {os.readlink(path)}, which does not exist"
    if st is not None and not stat.S_ISDIR(st.st_mode):
        return "is a file, not a folder" if stat.S_ISREG(st.st_mode) else "is a device or special file, not a folder"
    blocking = _file_in_the_way(path) if st is None else None
    if blocking is not None:
        return f"{blocking} is a file, not a folder"
    return unwritable(path) if writable else None


def atomic_save(path: str | os.PathLike, write) -> Path:
    """Write a file so a kill leaves the old file or the whole new one.

    ``write(tmp_path)`` fills a file of the same name inside a private folder that this call creates
    (mode 0700, an unpredictable name, created exclusively) beside `path`; the file is fsynced and renamed
    over `path`. Nothing planted beside the output (a symlink at a guessable temporary name) is followed,
    and only a regular file or a new path is ever replaced (``check_output_path``).
    """
    path = check_output_path(path)
    try:
        return _save(path, write)
    except WriteFailedError:
        raise
    except OSError as exc:           # a full disk, an I/O error: named for the file asked for, not the temporary
        raise WriteFailedError(f"{path}: could not be written ({exc.strerror or exc}); nothing was "
                               f"replaced") from None


def save_cache_file(path: str | os.PathLike, data: bytes) -> bool:
    """Write a cache entry through `atomic_save` (nothing planted beside it followed), best effort: whether it
    was written; a cache that cannot be written costs only the work next time."""
    try:
        atomic_save(path, lambda tmp: tmp.write_bytes(data))
    except (OSError, InputError):
        return False
    return True


def _short(name: str, limit: int = 64) -> str:
    """At most `limit` bytes of `name` in UTF-8 (a temporary folder's name must stay within the file system's
    255 bytes)."""
    return name.encode("utf-8", "surrogateescape")[:limit].decode("utf-8", "ignore")


def _save(path: Path, write) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    private = Path(tempfile.mkdtemp(prefix=f".{_short(path.name)}.", suffix=".partial", dir=path.parent))
    tmp = private / path.name
    try:
        write(tmp)
        st = os.lstat(tmp)
        if not stat.S_ISREG(st.st_mode):
            raise OutputPathError(f"{path}: the writer left no regular file at {tmp}")
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return path


__all__ = ["atomic_save", "check_output_path", "folder_problem", "unwritable", "OutputPathError", "WriteFailedError"]
