"""Where the compiled kernels are cached on disk: a folder named by a digest of the kernels' source.

numba invalidates a cached function when that function's own file changes, but not when a jitted
function it calls from another module changes, nor a module constant it read at compile time (the
constants of ``inference.constants``). After an update, a caller's cached machine code could go on
running the old callee. Entry points (the command line, the benchmarks, the test session) therefore
call `configure_kernel_cache` before anything imports numba: the cache then lives in a folder named by a
digest of every module that compiles kernels and of the constants they read, so changed kernels never
meet an old cache. Importing this module does nothing; it imports neither numba nor the kernels.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("inference/kernels", "inference/constants.py", "online/policies")   # what compiles, what it reads


def kernel_digest(root: Path = _ROOT) -> str:
    """16 hex digits of a SHA-256 over the source files under `SOURCES` (relative to `root`), in name order."""
    h = hashlib.sha256()
    for rel in SOURCES:
        path = root / rel
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def configure_kernel_cache(base: str | os.PathLike | None = None) -> Path | None:
    """Point numba's cache at `base`/<kernel digest> (default: $NUMBA_CACHE_DIR, else the user's cache
    folder, ``$XDG_CACHE_HOME`` or ``~/.cache``, then ``tutorduel/numba``). Returns the folder, or None when
    numba is already imported (it has read its configuration; nothing is changed)."""
    if "numba" in sys.modules:
        return None
    if base is None:
        base = os.environ.get("NUMBA_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME")
                                                           or Path.home() / ".cache") / "tutorduel" / "numba"
    digest = kernel_digest()
    folder = Path(base) if Path(base).name == digest else Path(base) / digest   # a child inherits its parent's
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    return folder
