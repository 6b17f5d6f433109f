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
