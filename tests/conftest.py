import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from inference.nuts import configure_jax

configure_jax()          # the tests are a program: host devices and float64 before JAX starts
os.environ.setdefault("TUTORDUEL_CACHE", tempfile.mkdtemp(prefix="tutorduel-cache-"))   # verdicts: not in ~/.cache

from tdmodels.simulator import build_roster  # noqa: E402

# No per-example deadline: these machines are shared, and a first example may pay for
# compiling a numba kernel.
settings.register_profile("tutorduel", deadline=None)
settings.load_profile("tutorduel")

SAMPLE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tutorduel-site-sample.json"


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
def sample_path():
    p = Path(os.environ.get("TUTORDUEL_SAMPLE", SAMPLE))
    if not p.exists():
        pytest.skip(f"real sample not found at {p} (set TUTORDUEL_SAMPLE)")
    return p
