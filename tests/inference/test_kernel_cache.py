"""The compiled kernels' cache folder is named by their source: a changed kernel never meets an old cache."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from inference.kernel_cache import SOURCES, kernel_digest

ROOT = Path(__file__).resolve().parents[2]


def test_the_digest_changes_with_any_kernel_source_or_constant(tmp_path):
    for rel in SOURCES:
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, tmp_path / rel)
    before = kernel_digest(tmp_path)
    assert before == kernel_digest(ROOT) and len(before) == 16
    for rel in ("inference/kernels/moment_matching.py", "inference/constants.py"):
        f = tmp_path / rel
        text = f.read_text()
        f.write_text(text + "\n# changed\n")
        assert kernel_digest(tmp_path) != before
        f.write_text(text)
    assert kernel_digest(tmp_path) == before


def test_a_command_line_process_caches_its_kernels_in_the_folder_of_their_digest(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "TUTORDUEL_STORE": str(tmp_path / "runs"),
           "TUTORDUEL_WORLDS": str(tmp_path / "worlds")}
    env.pop("NUMBA_CACHE_DIR", None)
    code = ("import sys; from tutorduel.cli import main; "
            "rc = main(['replay', '--world', 'dev', '--seeds', '0', '--arrivals', '1', '--policies', 'coduel']); "
            "import numba; print(numba.config.CACHE_DIR); sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    folder = tmp_path / "tutorduel" / "numba" / kernel_digest()
    assert out.stdout.strip().splitlines()[-1] == str(folder)
    assert list(folder.rglob("*.nbi"))                      # the kernels it compiled are cached there


def test_a_child_process_keeps_its_parents_cache_folder(tmp_path):
    """A process started with the folder its parent chose (inherited NUMBA_CACHE_DIR) uses it as is."""
    folder = tmp_path / kernel_digest()
    code = ("from inference.kernel_cache import configure_kernel_cache; print(configure_kernel_cache())")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "NUMBA_CACHE_DIR": str(folder)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == str(folder)


def test_the_test_session_itself_caches_its_kernels_in_the_folder_of_their_digest():
    """conftest configures the cache before anything imports numba (arviz does, on import): else the
    tests ran kernels from the source tree's __pycache__, where a caller compiled against an older callee
    went on running it."""
    import numba

    assert Path(numba.config.CACHE_DIR).name == kernel_digest()
