"""The compiled kernels' cache folder is named by their source: a changed kernel never meets an old cache."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
            "rc = main(['replay', '--world', 'dev', '--seeds', '0', '--arrivals', '1', '--policies', 'no-transfer']); "
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


def test_a_run_says_it_compiles_when_the_cache_holds_no_kernels(tmp_path, monkeypatch):
    from inference.kernel_cache import compile_note

    empty = tmp_path / "empty" / kernel_digest()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(empty))
    assert "compiling the policies' kernels" in compile_note() and str(empty) in compile_note()
    (empty / "kernels_x").mkdir(parents=True)
    (empty / "kernels_x" / "belief.coduel_pair-12.py311.nbi").write_bytes(b"")
    assert compile_note() is None
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert compile_note() is None              # no configured cache: nothing claimed


@pytest.mark.parametrize("configure", [False, True])
def test_a_program_that_does_not_configure_the_cache_compiles_afresh(tmp_path, configure):
    """The Python API without configure_kernel_cache had cached kernels in the package's __pycache__, where an
    edit to inference/constants.py left old machine code running under the new code digest. Unconfigured,
    nothing is cached on disk (numba's own cache is off); configured, the digest's folder is used."""
    code = ("from inference.kernel_cache import configure_kernel_cache\n"
            + ("configure_kernel_cache()\n" if configure else "")
            + "import inference.kernels.belief as b, online.policies.coldb_kernels as c\n"
              "print(b.CACHE, c.CACHE, b.eta_prior._cache.__class__.__name__)\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    cached = "True True FunctionCache" if configure else "False False NullCache"
    assert out.stdout.split() == cached.split()


def test_every_example_configures_the_cache_before_it_imports_the_kernels():
    import ast

    for script in sorted((ROOT / "examples").glob("*.py")):
        body = ast.parse(script.read_text()).body
        calls = [i for i, node in enumerate(body) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                 and getattr(node.value.func, "id", "") == "configure_kernel_cache"]
        imports = [i for i, node in enumerate(body) if isinstance(node, (ast.Import, ast.ImportFrom))
                   and not (isinstance(node, ast.ImportFrom) and node.module == "inference.kernel_cache")]
        assert calls and calls[0] < min(imports), script.name


def _compiled_beside_the_sources() -> set[Path]:
    return {p for pattern in ("*.nbi", "*.nbc") for p in ROOT.rglob(pattern) if ".venv" not in p.parts}


def test_an_unusable_cache_folder_caches_nothing_and_nothing_beside_the_sources(tmp_path):
    """With NUMBA_CACHE_DIR at a regular file, numba fell back to __pycache__ beside the kernel sources (the
    cache the digest exists to avoid: an edit of inference/constants.py kept the old score under the new
    code digest), and the line on screen named a folder that could not exist."""
    planted = tmp_path / "not-a-folder"
    planted.write_text("a file\n")
    before = _compiled_beside_the_sources()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(planted), "TUTORDUEL_STORE": str(tmp_path / "runs"),
           "TUTORDUEL_WORLDS": str(tmp_path / "worlds")}
    out = subprocess.run([sys.executable, "-m", "tutorduel.cli", "replay", "--world", "dev", "--seeds", "0",
                          "--arrivals", "2", "--policies", "no-transfer"], env=env, capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "cannot be used" in out.stderr and str(planted) in out.stderr and "nothing is cached" in out.stderr
    assert _compiled_beside_the_sources() - before == set()
    assert planted.read_text() == "a file\n"
    assert not list(tmp_path.rglob("*.nbi"))


@pytest.mark.parametrize("kind", ["file", "under-a-file"])
def test_a_folder_numba_cannot_write_is_not_a_disk_cache(tmp_path, kind):
    from inference.kernel_cache import _disk_cache, folder_problem

    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    folder = blocker if kind == "file" else blocker / kernel_digest()
    assert folder_problem(folder) is not None
    assert not _disk_cache(str(folder))
    assert folder_problem(tmp_path / "fresh" / kernel_digest()) is None       # created, writable
    assert _disk_cache(str(tmp_path / "fresh" / kernel_digest()))


def test_a_child_of_a_process_with_an_unusable_folder_caches_nothing_either(tmp_path):
    code = ("from inference.kernel_cache import configure_kernel_cache, compile_note; "
            "print(configure_kernel_cache()); print(compile_note())")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["TUTORDUEL_UNUSABLE_KERNEL_CACHE"] = "/x/y: Not a directory"
    env["XDG_CACHE_HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0] == "None" and "cannot be used (/x/y: Not a directory)" in lines[1]
    assert not (tmp_path / "tutorduel").exists()
