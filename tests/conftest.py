import functools
import gzip
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from inference.kernel_cache import configure_kernel_cache

# JAX's compiled programs cached on disk for this test run and the processes it starts (set before JAX is
# imported; the environment carries it to subprocesses): every NUTS fit builds its jitted functions afresh,
# so without it each fit of the same shapes, in this process or another, compiled the same program again.
# An executable from the cache is the one XLA compiled (keyed by the program, the backend and the versions).
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"tutorduel-tests-jax-{os.getuid()}"))

# compiled kernels cached by their source: first, since numba reads its configuration once, when it is
# first imported (arviz imports it, and JAX's configuration below imports arviz)
configure_kernel_cache()
from inference.nuts import configure_jax  # noqa: E402

configure_jax()          # the tests are a program: host devices and float64 before JAX starts
os.environ.setdefault("TUTORDUEL_CACHE", tempfile.mkdtemp(prefix="tutorduel-cache-"))   # verdicts: not in ~/.cache

import tdmodels.rosters  # noqa: E402
from tdmodels.simulator import build_roster  # noqa: E402

# A roster that a test's empty worlds folder builds on first use is built once per test process: the rosters
# are a deterministic function of (name, seed, parameters), and the default rosters take seconds each to build.
_built = functools.lru_cache(maxsize=16)(build_roster)
tdmodels.rosters.build_roster = lambda name, seed=0, params=None: _built(name, seed, *(
    () if params is None else (params,))).copy(deep=True)

# No per-example deadline: these machines are shared, and a first example may pay for
# compiling a numba kernel.
settings.register_profile("tutorduel", deadline=None)
settings.load_profile("tutorduel")

# The 48 real public arrivals (the published site sample), carried by the tests themselves (gzip of the
# file the user imports with `worlds import-sample`), so that no test depends on a folder outside the
# project and none skips.
SAMPLE_FIXTURE = Path(__file__).resolve().parent / "data" / "tutorduel-site-sample.json.gz"
# The reference's published learning curves (the site's curves file, gzipped), for the same reason.
CURVES_FIXTURE = Path(__file__).resolve().parent / "data" / "tutorduel-site-curves.json.gz"


@pytest.fixture(scope="session")
def dev_world():
    return build_roster("dev")


@pytest.fixture()
def env_dirs(tmp_path, monkeypatch):
    """Private world and store folders for one test."""
    monkeypatch.setenv("TUTORDUEL_WORLDS", str(tmp_path / "worlds"))
    monkeypatch.setenv("TUTORDUEL_STORE", str(tmp_path / "runs"))
    return tmp_path


@pytest.fixture(scope="session")
def sample_path(tmp_path_factory):
    """The real sample as the user's file: $TUTORDUEL_SAMPLE if set, else the tests' own copy."""
    if os.environ.get("TUTORDUEL_SAMPLE"):
        return Path(os.environ["TUTORDUEL_SAMPLE"])
    path = tmp_path_factory.mktemp("sample") / "tutorduel-site-sample.json"
    path.write_bytes(gzip.decompress(SAMPLE_FIXTURE.read_bytes()))
    return path


@pytest.fixture(scope="session")
def curves_path(tmp_path_factory):
    """The published curves as the user's file: $TUTORDUEL_CURVES if set, else the tests' own copy."""
    if os.environ.get("TUTORDUEL_CURVES"):
        return Path(os.environ["TUTORDUEL_CURVES"])
    path = tmp_path_factory.mktemp("curves") / "tutorduel-site-curves.json"
    path.write_bytes(gzip.decompress(CURVES_FIXTURE.read_bytes()))
    return path


@pytest.fixture()
def read_only_folder(tmp_path):
    """A folder this process cannot create files in, holding one file `kept.txt`: chmod 0555 for an
    ordinary user; for root (whom permissions do not stop), a read-only tmpfs mounted there. Skipped only
    where neither can be had (root without the right to mount)."""
    import subprocess

    ro = tmp_path / "read-only"
    ro.mkdir()
    (ro / "kept.txt").write_text("keep")
    if os.geteuid() != 0:
        ro.chmod(0o555)
        yield ro
        ro.chmod(0o755)
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(ro)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"root without the right to mount a read-only folder: {done.stderr.decode().strip()}")
    try:
        (ro / "kept.txt").write_text("keep")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True, capture_output=True)
        yield ro
    finally:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)


@pytest.fixture()
def full_folder(tmp_path):
    """A folder on a file system of 128 kB (a tmpfs mounted there): a click log of 60 arrivals (about 280 kB)
    written into it fills the disk. Skipped where this process may not mount one (not root)."""
    import subprocess

    small = tmp_path / "small-disk"
    small.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(small)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {done.stderr.decode().strip()}")
    try:
        yield small
    finally:
        subprocess.run(["umount", "-l", str(small)], capture_output=True)


SLOW_TIMEOUT_S = 3 * 3600      # the slow set's long MCMC (the population SBC runs about 42 minutes on 2 cores)


def pytest_collection_modifyitems(config, items):
    """The per-test time limit (pyproject's `timeout`) is for the default set; a slow test gets hours."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
