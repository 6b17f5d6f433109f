"""Writing a file so that a killed process leaves either the old file or the whole new one."""
from __future__ import annotations

import os
from pathlib import Path


def atomic_save(path: str | os.PathLike, write) -> Path:
    """Write a file so a kill leaves the old file or the whole new one: `write(tmp_path)` fills a
    temporary file in the same folder, which is fsynced and renamed over `path`."""
    path = Path(path)
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


__all__ = ["atomic_save"]
