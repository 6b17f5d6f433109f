"""Reading a store never imports a module a row names; a plug-in is imported only when the user names it."""
import json
import sys

from online.replay import run_key
from online.store import RunStore
from online.sweep import run_sweep
from tdmodels.rosters import open_world
from tutorduel.cli import main
from tutorduel.store_view import stored_rows
from tests.online.helpers import plugin_module


def _retarget(st, spec, target):
    """The row of `spec` rewritten as a row of plug-in `target` at that plug-in's place (a row's target must
    agree with its policy, and its policy with its path, or the schema check refuses it first)."""
    p = st.path(run_key(open_world("dev"), 0, spec, 3))
    row = json.loads(p.read_text())
    row.update(target=target, policy=target, settings={})
    p.unlink()
    st.put(row)


def test_stats_leaderboard_and_export_never_import_a_rows_target(env_dirs, capsys, tmp_path):
    st = RunStore()
    run_sweep(["dev"], [0], ["random", "no-transfer"], st, arrivals=3, progress=False)
    _retarget(st, "random", "this:x")                      # importing `this` prints the Zen of Python
    (tmp_path / "planted.py").write_text("open(__file__ + '.ran', 'w').write('x')\nclass P: pass\n")
    _retarget(st, "no-transfer", "planted:P")              # a file in the current folder
    sys.modules.pop("this", None)
    import os
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["stats", "--world", "dev", "--arrivals", "3"]) == 0
        assert main(["export", str(tmp_path / "rows.csv")]) == 0
    finally:
        os.chdir(cwd)
    out = capsys.readouterr()
    assert "this" not in sys.modules and "Beautiful is better" not in out.out + out.err
    assert not (tmp_path / "planted.py.ran").exists() and "planted" not in sys.modules
    assert "not imported on a row's say" in out.err
    # each code version of a row whose target is not looked up is its own line, never merged
    assert "this:x (code " in out.out


def test_a_plugin_named_with_policies_has_its_code_version_checked(env_dirs, tmp_path, monkeypatch, capsys):
    from online import code_identity

    mod = plugin_module(tmp_path, "named_plugin", monkeypatch)
    st = RunStore()
    run_sweep(["dev"], [0], ["named_plugin:P"], st, arrivals=3, progress=False, inline=True)
    mod.write_text(mod.read_text() + "\nEDITED = 1\n")
    code_identity.code_identity.cache_clear()
    unnamed = stored_rows(st, open_world("dev"), "dev", 3)
    assert [r["policy"].split(" (code ")[0] for r in unnamed.rows] == ["named_plugin:P"]
    assert " (code " in unnamed.rows[0]["policy"]           # shown as its own version, not as the current code
    assert main(["stats", "--world", "dev", "--arrivals", "3", "--policies", "named_plugin:P"]) == 0
    captured = capsys.readouterr()
    assert "ran on other code versions" in captured.err       # named: looked up, the old row left out
    code_identity.code_identity.cache_clear()


def test_a_world_named_twice_is_read_and_reported_once(env_dirs, capsys):
    """A damaged row of a world given twice (by name and by path) used to be reported twice."""
    st = RunStore()
    run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False)
    st.path(run_key(open_world("dev"), 0, "random", 3)).write_text("{bad")
    path = str(env_dirs / "worlds" / "dev.nc")
    assert main(["stats", "--world", f"dev,dev,{path}", "--arrivals", "3"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("unreadable") == 1 and captured.out.count("shown once") == 2
