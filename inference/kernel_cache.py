"""Where the compiled kernels are cached on disk: a folder named by a digest of the kernels' source.

numba invalidates a cached function when that function's own file changes, but not when a jitted
function it calls from another module changes, nor a module constant it read at compile time (the
constants of ``inference.constants``). After an update, a caller's cached machine code could go on
running the old callee. Entry points (the command line, the benchmarks, the test session) therefore
call `configure_kernel_cache` before anything imports numba: the cache then lives in a folder named by a
digest of every module that compiles kernels and of the constants they read, so changed kernels never
meet an old cache. The kernels are cached on disk only there (`disk_cache`): a program that does not
configure the cache (the Python API, a notebook, an example that forgot to) compiles them afresh rather
than run stale ones. Importing this module does nothing; it imports neither numba nor the kernels.
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from functools import lru_cache
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


def folder_problem(folder: str | os.PathLike) -> str | None:
    """Why numba could not cache in `folder` (created if missing), or None when it can: numba tries a
    folder it is given and, when that fails, falls back to ``__pycache__`` beside the kernel sources, the
    cache the digest exists to avoid; so a folder is used only after the test numba itself makes (create
    it, open a temporary file in it)."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        return f"{err.strerror or err.__class__.__name__} ({err.filename or folder})"
    return None


@lru_cache(maxsize=8)
def _disk_cache(folder: str | None) -> bool:
    return bool(folder) and Path(folder).name == kernel_digest() and folder_problem(folder) is None


def disk_cache() -> bool:
    """Whether kernels may be cached on disk: only where the cache folder is the one `configure_kernel_cache`
    names after the kernels' source digest (the kernel modules pass this as numba's ``cache=``). Elsewhere,
    a program that imports the toolkit without configuring it (the Python API, a notebook) compiles its
    kernels afresh: numba's own cache, beside the sources, would go on running a kernel whose callee or
    constants changed; and nor is it where that folder cannot be written (numba would fall back to its own
    cache beside the sources). Reads the environment; changes nothing outside that folder."""
    return _disk_cache(os.environ.get("NUMBA_CACHE_DIR"))


UNUSABLE = "TUTORDUEL_UNUSABLE_KERNEL_CACHE"    # the folder asked for and why it is unusable (for compile_note)


def configure_kernel_cache(base: str | os.PathLike | None = None) -> Path | None:
    """Point numba's cache at `base`/<kernel digest> (default: $NUMBA_CACHE_DIR, else the user's cache
    folder, ``$XDG_CACHE_HOME`` or ``~/.cache``, then ``tutorduel/numba``), creating it. Returns the folder,
    or None when numba is already imported (it has read its configuration; nothing is changed) or when the
    folder cannot be written (a regular file on its path, no permission, a full disk): then nothing is
    cached on disk at all (``disk_cache`` is False), never numba's fallback beside the sources, and
    `compile_note` says why."""
    if "numba" in sys.modules:
        return None
    if base is None and os.environ.get(UNUSABLE) and not os.environ.get("NUMBA_CACHE_DIR"):
        return None                     # a child of a process whose folder was unusable: neither caches
    if base is None:
        base = os.environ.get("NUMBA_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME")
                                                           or Path.home() / ".cache") / "tutorduel" / "numba"
    digest = kernel_digest()
    folder = Path(base) if Path(base).name == digest else Path(base) / digest   # a child inherits its parent's
    problem = folder_problem(folder)
    if problem is not None:
        os.environ.pop("NUMBA_CACHE_DIR", None)
        os.environ[UNUSABLE] = f"{folder}: {problem}"
        return None
    os.environ.pop(UNUSABLE, None)
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    return folder


def compile_note() -> str | None:
    """A line to show before a run when the configured kernel cache holds no compiled CODuel belief kernel
    (the first run of this code on this machine compiles them, which takes a while once); None when they
    are there or when no cache folder was configured (``configure_kernel_cache``). Where the folder asked
    for cannot be written, the line says so and that nothing is cached."""
    unusable = os.environ.get(UNUSABLE)
    if unusable:
        return (f"the kernel cache folder cannot be used ({unusable}): the policies' kernels compile afresh in "
                f"every process and nothing is cached")
    folder = os.environ.get("NUMBA_CACHE_DIR")
    if not folder or not disk_cache():
        return None
    try:
        cached = any(Path(folder).rglob("belief.coduel_pair-*.nbi"))
    except OSError:
        cached = False
    if cached:
        return None
    return (f"compiling the policies' kernels (the first run of this code on this machine; later runs read them "
            f"from {folder})")
