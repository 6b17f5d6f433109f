"""Writing never destroys what is not a regular file, and a path under a file is one clear error (exit 2)."""
import os
import stat

import pytest

from tdmodels.atomic_file import OutputPathError, atomic_save, check_output_path
from tutorduel.cli import main


def test_a_device_a_folder_and_a_fifo_are_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target, what in (("/dev/null", "device"), (str(tmp_path), "folder"), (str(fifo), "device or special")):
        with pytest.raises(OutputPathError, match=what):
            atomic_save(target, lambda tmp: tmp.write_text("x"))
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_path_under_a_file_is_refused(tmp_path):
    f = tmp_path / "afile"
    f.write_text("keep")
    with pytest.raises(OutputPathError, match="is a file, not a folder"):
        check_output_path(f / "sub" / "e.csv")
    assert f.read_text() == "keep"
    assert check_output_path(tmp_path / "new" / "e.csv") == tmp_path / "new" / "e.csv"


@pytest.mark.parametrize("argv", [
    ["export", "{link}"], ["export", "{afile}/e.csv"], ["stats", "--world", "dev", "--curves", "{afile}"],
    ["leaderboard", "--rosters", "dev", "--seeds", "0", "--policies", "random", "--out", "{afile}/x"],
])
def test_commands_refuse_such_outputs_with_exit_2(env_dirs, capsys, argv):
    afile = env_dirs / "afile"
    afile.write_text("keep")
    link = env_dirs / "rows.csv"
    link.symlink_to("/dev/null")                       # a .csv name that is a device node
    argv = [a.replace("{afile}", str(afile)).replace("{link}", str(link)) for a in argv]
    if argv[0] == "stats":
        assert main(["replay", "--world", "dev", "--seeds", "0", "--policies", "random", "--arrivals", "3"]) == 0
        argv += ["--arrivals", "3"]
    try:
        rc = main(argv)
    except SystemExit as exc:              # refused while the arguments are parsed
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and ("not a regular file" in err or "is a file, not a folder" in err), err
    assert afile.read_text() == "keep" and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_planted_symlink_beside_the_output_is_never_followed(tmp_path):
    """The temporary file lives in a private folder with an unguessable name: a symlink planted at any name
    beside the output (the old `.<name>.<pid>.tmp` among them) is left alone, and so is what it points to."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    out = tmp_path / "rows.csv"
    for name in (f".rows.csv.{os.getpid()}.tmp", ".rows.csv.tmp", "rows.csv.tmp"):
        (tmp_path / name).symlink_to(victim)
    atomic_save(out, lambda tmp: tmp.write_text("new"))
    assert victim.read_text() == "keep"
    assert out.read_text() == "new" and not out.is_symlink()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([f".rows.csv.{os.getpid()}.tmp", ".rows.csv.tmp", "rows.csv", "rows.csv.tmp", "victim.txt"])


def test_a_writer_that_leaves_a_symlink_is_refused(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    with pytest.raises(OutputPathError, match="no regular file"):
        atomic_save(tmp_path / "out.txt", lambda tmp: tmp.symlink_to(victim))
    assert not (tmp_path / "out.txt").exists() and victim.read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim.txt"]      # nothing left behind


@pytest.mark.parametrize("name", ["e.csv/", "sub/e.csv/", "e.csv" + os.sep, "e.csv/.", "sub/e.csv/..", "e.csv/./"])
def test_a_name_ending_in_a_slash_is_a_folder_not_a_file(tmp_path, name):
    """pathlib drops a last '.': 'p.html/.' had been written as the file p.html."""
    with pytest.raises(OutputPathError, match="names a folder"):
        atomic_save(str(tmp_path) + "/" + name, lambda tmp: tmp.write_text("x"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", ["/.", "/.."])
def test_a_page_named_as_a_folder_is_refused_before_anything_is_written(env_dirs, capsys, suffix):
    out = str(env_dirs / "pages" / "p.html") + suffix
    with pytest.raises(SystemExit) as exc:
        main(["play", "--world", "dev", "--no-compare", "--sessions", "2", "--out", out])
    assert exc.value.code == 2 and "names a folder" in capsys.readouterr().err
    assert not (env_dirs / "pages").exists()


def test_export_to_a_name_ending_in_a_slash_exits_2(env_dirs, capsys):
    with pytest.raises(SystemExit) as exc:      # refused while the arguments are parsed
        main(["export", str(env_dirs / "pages" / "e.csv") + "/"])
    assert exc.value.code == 2 and "ends in a slash" in capsys.readouterr().err
    assert not (env_dirs / "pages").exists()


def test_a_read_only_folder_is_one_clear_error(read_only_folder):
    with pytest.raises(OutputPathError, match="cannot be written"):
        atomic_save(read_only_folder / "x.csv", lambda tmp: tmp.write_text("x"))
    with pytest.raises(OutputPathError, match="cannot be written"):
        check_output_path(read_only_folder / "new" / "deeper" / "x.csv")
    assert sorted(p.name for p in read_only_folder.iterdir()) == ["kept.txt"]


@pytest.mark.parametrize("argv", [["replay", "--world", "dev", "--seeds", "0", "--policies", "random", "--arrivals", "3",
                                   "--store", "{link}"], ["stats", "--world", "dev", "--store", "{link}"]])
def test_a_store_that_is_a_dangling_symlink_is_named_as_one(env_dirs, capsys, argv):
    """It had read "cannot be written (File exists)"."""
    link = env_dirs / "store-link"
    link.symlink_to(env_dirs / "gone" / "runs")
    assert main([a.replace("{link}", str(link)) for a in argv]) == 2
    assert f"is a symlink to {env_dirs / 'gone' / 'runs'}, which does not exist" in capsys.readouterr().err


def test_a_disk_that_fills_while_a_click_log_is_written_is_one_clear_error(env_dirs, full_folder, dev_world):
    """HDF5 had reported the full disk and then crashed the process (rc 139) closing the half-written file;
    the file is now serialised in memory and written with plain file I/O."""
    import subprocess
    import sys

    from tdmodels.world import write_world_file

    world = write_world_file(dev_world, env_dirs / "dev-copy.nc")
    out = subprocess.run([sys.executable, "-m", "tutorduel.cli", "replay", "--world", str(world), "--seeds", "0",
                          "--policies", "random", "--arrivals", "60", "--keep-clicks", "--store",
                          str(full_folder / "runs")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    assert "No space left on device" in out.stderr and "Traceback" not in out.stderr
    assert not [p for p in full_folder.rglob("*") if p.name.endswith(".partial")]     # nothing half-written left


def test_a_disk_that_fills_is_named_for_the_file_asked_for(full_folder):
    """Every writer, not only the store's: the error names the output (not the deleted temporary) and is an
    OSError the command line reports on one line, exit 2."""
    from tdmodels.atomic_file import WriteFailedError

    target = full_folder / "big.bin"
    with pytest.raises(WriteFailedError, match=f"{target}: could not be written .*No space left"):
        atomic_save(target, lambda tmp: tmp.write_bytes(b"x" * (2 << 20)))
    assert not target.exists() and list(full_folder.iterdir()) == []
