"""tutorduel verify: a fresh sweep verifies; a rescaled row, edited pairs, a swapped click log and a
plug-in that patches the scorer are each caught, named, kept aside and never counted."""
import json
import os

import numpy as np
import pytest

from online.replay import run_key
from online.store import RunStore
from online.sweep import run_sweep
from online.verify import decode_played, encode_played, rescored
from tdmodels.rosters import open_world
from tutorduel.cli import main

SPECS = ["random", "no-transfer"]


def _sweep(**kw):
    st = RunStore()
    res = run_sweep(["dev"], [0, 1], SPECS, st, arrivals=6, progress=False, **kw)
    assert not res.failed, res.failed
    return st


def _path(st, seed, spec):
    return st.path(run_key(open_world("dev"), seed, spec, 6))


def _edit(path, change):
    row = json.loads(path.read_text())
    change(row)
    path.write_text(json.dumps(row))


def _rescale(row, factor=0.6):
    """Regret, per-user and per-round regrets scaled together: every sum and the score stay consistent."""
    row["regret"] *= factor
    for part in ("per_user", "per_round"):
        row[part]["regret"] = [x * factor for x in row[part]["regret"]]
    row["excess"] = row["regret"] - row["floor"]
    row["score"] = 100 * (row["random"] - row["regret"]) / (row["random"] - row["floor"])


def test_a_fresh_sweep_verifies(env_dirs, capsys):
    _sweep(keep_clicks=True)
    assert main(["verify"]) == 0
    assert "4 of 4 row(s) verified" in capsys.readouterr().err
    assert main(["verify", "--world", "dev", "--policies", "random"]) == 0


def test_a_consistently_rescaled_row_is_caught_and_never_counted(env_dirs, capsys):
    st = _sweep()
    p = _path(st, 0, "no-transfer")
    _edit(p, _rescale)
    assert st.scan()[1] == []                     # the schema check alone cannot see it
    assert main(["stats", "--world", "dev", "--arrivals", "6"]) == 0
    out = capsys.readouterr()
    assert f"run row {p}: does not verify" in out.err and "rejected" in out.err
    assert not p.exists() and list(p.parent.glob("*.rejected"))
    assert "| no-transfer | 1 |" in out.out                # seed 1 only: the rescaled row is not counted
    assert main(["verify"]) == 0                  # the bad row is aside: what is left verifies


@pytest.mark.parametrize("planted", ["folder", "file"])
def test_a_verdict_is_a_file_that_names_the_bytes_it_verified(env_dirs, capsys, planted):
    """An empty folder at a forged row's verdict path had made export count the row as verified."""
    from online.verify import _verdict_path, known_good, log_digest

    st = _sweep()
    p = _path(st, 0, "no-transfer")
    _edit(p, _rescale)
    verdict = _verdict_path(p.read_bytes(), log_digest(p))
    if planted == "folder":
        verdict.mkdir(parents=True)
    else:
        verdict.parent.mkdir(parents=True, exist_ok=True)
        verdict.write_bytes(b"ok\n")                          # the old verdict's content, naming nothing
    assert not known_good(p.read_bytes(), log_digest(p))
    assert main(["export", str(env_dirs / "rows.csv")]) == 0
    assert "does not verify" in capsys.readouterr().err
    assert len((env_dirs / "rows.csv").read_text().splitlines()) == 1 + 3       # header and the three good rows


def test_verify_names_each_bad_row_and_exits_1(env_dirs, capsys):
    st = _sweep()
    rescaled, edited = _path(st, 0, "no-transfer"), _path(st, 1, "random")
    _edit(rescaled, _rescale)

    def flip_a_pair(row):
        """Another second persona at arrival 2, round 3 (its regret or its click, or both, then differ; the
        same pair in the other order can keep both, where the click falls the same way in either order)."""
        pairs, clicks = decode_played(row["played"], row["arrivals"], row["rounds"])
        first, second = pairs[2, 3]
        pairs[2, 3, 1] = next(k for k in range(6) if k not in (first, second))
        row["played"] = encode_played(pairs, clicks, 6)
    _edit(edited, flip_a_pair)
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert f"run row {rescaled}: does not verify: regret is" in out
    assert any(f"run row {edited}: does not verify: {what}" in out
               for what in ("arrival 2, round 3: click", "per_", "regret is"))
    assert len(out.strip().splitlines()) == 2


@pytest.mark.slow
def test_a_click_log_swapped_between_policies_is_caught_and_refused_by_fit(env_dirs, capsys):
    st = _sweep(keep_clicks=True)
    mine = st.clicks_path(run_key(open_world("dev"), 0, "no-transfer", 6))
    other = st.clicks_path(run_key(open_world("dev"), 0, "random", 6))
    mine.write_bytes(other.read_bytes())
    rc = main(["fit", "--world", "dev", "--seed", "0", "--policy", "no-transfer", "--arrivals", "6",
               "--model", "users", "--draws", "20", "--warmup", "20", "--chains", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and f"click log {mine}: not the log of the run asked for" in err and "policy 'random'" in err
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert "its click log is of policy 'random'" in out and not mine.exists()


@pytest.mark.slow
def test_a_scorer_patching_plugin_never_reaches_the_figures(env_dirs, capsys):
    st = RunStore()
    specs = ["tests.online.scorer_patching:PatchScorer", "random"]
    res = run_sweep(["dev"], [0, 1], specs, st, arrivals=6, progress=False, jobs=1)
    assert not res.failed
    world = open_world("dev")
    for seed in (0, 1):
        row = st.get(run_key(world, seed, "random", 6))
        assert row["score"] < 60, row["score"]                                 # what random pairs score
        plug = st.get(run_key(world, seed, specs[0], 6))
        assert plug["score"] < 100
    assert main(["verify"]) == 0


def test_a_row_poisoned_in_process_is_caught(env_dirs, capsys):
    """Inline (no isolation) the plug-in patches this very process; verify, in a fresh one, catches the rows."""
    import online.scoring
    import online.verify

    saved = online.scoring.strong_regret, online.verify.strong_regret
    try:
        st = RunStore()
        run_sweep(["dev"], [0], ["tests.online.scorer_patching:PatchScorer", "random"], st, arrivals=6,
                  progress=False, inline=True)
    finally:
        online.scoring.strong_regret, online.verify.strong_regret = saved
    poisoned = st.get(run_key(open_world("dev"), 0, "random", 6))
    assert poisoned["score"] == pytest.approx(100.0)
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert out.count("does not verify: regret is") == 2
    assert main(["stats", "--world", "dev", "--arrivals", "6"]) == 0       # nothing left to count
    assert "no stored runs" in capsys.readouterr().out


def test_a_worker_that_returns_other_clicks_fails_its_cell(env_dirs, dev_world):
    from online.sweep import Cell, trusted_row
    from online.replay import replay
    from online.verify import RowCheckError

    row = replay(dev_world, 0, "random", 6)
    key = run_key(dev_world, 0, "random", 6)
    cell = Cell("dev", key.world_digest, 0, key.policy, key.code, 6)
    assert trusted_row(dev_world, cell, row, None)["score"] == row["score"]
    pairs, clicks = decode_played(row["played"], 6, row["rounds"])
    clicks[0, 0] ^= 1
    with pytest.raises(RowCheckError, match="arrival 0, round 0: click"):
        trusted_row(dev_world, cell, {**row, "played": encode_played(pairs, clicks, 6)}, None)
    with pytest.raises(RowCheckError, match="another cell"):
        trusted_row(dev_world, cell, {**row, "seed": 1}, None)
    assert rescored(dev_world, {**row, "score": 99.0})["score"] == row["score"]


def test_played_costs_little_and_refuses_bombs():
    rng = np.random.default_rng(0)
    pairs = rng.integers(6, size=(350, 24, 2))
    enc = encode_played(pairs, rng.integers(2, size=(350, 24)), 6)
    assert len(json.dumps(enc)) < 15_000
    p, c = decode_played(enc, 350, 24)
    assert np.array_equal(p, pairs)
    import base64
    import zlib
    bomb = {**enc, "pairs": base64.b64encode(zlib.compress(b"\0" * 10_000_000)).decode()}
    with pytest.raises(ValueError, match="more than"):
        decode_played(bomb, 350, 24)


def test_a_row_relabelled_as_another_policy_verifies_but_does_not_replay(env_dirs, capsys):
    """Its pairs and figures are right for the world, so plain verify passes it (the hostile review's gap:
    random's run written as no-transfer's, with no-transfer's code digest); --replay names it."""
    from online.code_identity import policy_code
    from online.registry import resolve

    st = _sweep()
    row = json.loads(_path(st, 0, "random").read_text())
    _path(st, 0, "no-transfer").unlink()
    row.update(policy="no-transfer", target="no-transfer",
               code=dict(row["code"], digest=policy_code(resolve("no-transfer")).digest))
    forged = st.put(row)
    assert forged == _path(st, 0, "no-transfer")
    assert main(["verify"]) == 0
    capsys.readouterr()
    assert main(["verify", "--replay"]) == 1
    out = capsys.readouterr()
    assert f"run row {forged}: does not replay: no-transfer on this code shows" in out.out
    assert "the row is not this policy's run" in out.out and "3 of 4 replayed row(s)" in out.err
    assert not forged.exists() and list(forged.parent.glob("*.rejected"))      # moved aside, no longer counted
    assert main(["stats", "--world", "dev", "--arrivals", "6"]) == 0
    assert "| no-transfer | 1 |" in capsys.readouterr().out
    assert main(["verify", "--replay", "--policies", "random", "--jobs", "2"]) == 0


def test_export_names_a_rows_world_from_its_digest_not_its_label(env_dirs, capsys):
    """A row labelled 'foo' was exported as world foo."""
    import csv

    st = _sweep()
    _edit(_path(st, 0, "random"), lambda r: r.update(world="foo"))
    for argv in (["export", str(env_dirs / "a.csv")], ["export", str(env_dirs / "b.csv"), "--world", "dev"]):
        assert main(argv) == 0
        with open(argv[1]) as f:
            worlds = {r["world"] for r in csv.DictReader(f)}
        assert worlds == {"dev"}
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:              # refused while the arguments are parsed
        main(["export", str(env_dirs / "c.csv") + "/."])
    assert exc.value.code == 2 and "names a folder" in capsys.readouterr().err and not (env_dirs / "c.csv").exists()


def test_a_row_stored_under_a_non_canonical_name_is_one_policy_not_two(env_dirs, capsys):
    """A row stored under no-transfer[prior_var=4.0] (the default written out) was a second policy in stats."""
    st = _sweep()
    row = json.loads(_path(st, 1, "no-transfer").read_text())
    row.update(policy="no-transfer[prior_var=4.0]")
    forged = st.put(row)
    assert forged != _path(st, 1, "no-transfer") and forged.exists()
    assert main(["stats", "--world", "dev", "--arrivals", "6"]) == 0
    out, err = capsys.readouterr()
    assert "prior_var" not in out and "| no-transfer | 2 |" in out
    assert "1 row(s) stored under 'no-transfer[prior_var=4.0]', a non-canonical name of 'no-transfer'" in err
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert f"run row {forged}: stored under 'no-transfer[prior_var=4.0]', a non-canonical name" in out
    assert not forged.exists()
    assert main(["verify"]) == 0


def test_a_click_log_edited_where_the_world_decides_fails_verify_and_one_edited_where_the_policy_does_fails_replay(
        env_dirs, capsys):
    """The hostile CLI review's: phi_first scaled and question set to 0 passed verify and fit used them;
    coduel's belief_means + 3 passed verify and validate reported the forged beliefs."""
    import xarray as xr

    from online.store import RunStore

    assert main(["replay", "--world", "dev", "--seeds", "0", "--arrivals", "4", "--policies", "no-transfer,coduel",
                 "--keep-clicks"]) == 0
    st = RunStore()
    for spec, edit, words in (("no-transfer", lambda ds: ds.assign(phi_first=ds["phi_first"] * -5), "phi_first"),
                              ("no-transfer", lambda ds: ds.assign(question=ds["question"] * 0), "question"),
                              ("coduel", lambda ds: ds.assign(belief_means=ds["belief_means"] + 3), "beliefs.means")):
        log = st.path(run_key(open_world("dev"), 0, spec, 4)).with_suffix(".clicks.nc")
        if not log.exists():
            assert main(["replay", "--world", "dev", "--seeds", "0", "--arrivals", "4", "--policies", spec,
                         "--keep-clicks"]) == 0
        with xr.open_dataset(log, engine="h5netcdf") as ds:
            forged = edit(ds.load())
        forged.to_netcdf(log, engine="h5netcdf")
        capsys.readouterr()
        plain = main(["verify", "--policies", spec])
        out = capsys.readouterr()
        if words == "beliefs.means":
            assert plain == 0                                     # what the policy recorded: only a replay can tell
            assert main(["verify", "--replay", "--policies", spec]) == 1
            out = capsys.readouterr()
        else:
            assert plain == 1 and "1 of 1 row(s) verified; 1 click log(s) beside them did not" in out.err
        assert words in out.out and "moved aside" in out.out, out
        assert not log.exists()


def test_replay_leaves_out_rows_of_other_code_versions(env_dirs, capsys):
    st = _sweep()
    p = _path(st, 1, "random")
    row = json.loads(p.read_text())
    p.unlink()
    row["code"] = dict(row["code"], digest="0" * 12)
    st.put(row)
    assert main(["verify", "--replay"]) == 0
    err = capsys.readouterr().err
    assert "not replayed: 1 row(s) of random (code 000000000000): ran on code 000000000000" in err
    assert "3 of 3 replayed row(s) are their policy's run" in err


def test_a_policy_that_fails_on_replay_is_named_for_its_row_and_the_others_go_on(env_dirs, tmp_path, monkeypatch,
                                                                                   capsys):
    """One policy's exception (in its replay's worker process) had ended the command; its row is named, the rest go on."""
    import os

    from tests.online.helpers import plugin_module

    mod = plugin_module(tmp_path, "flaky_plugin", monkeypatch)
    marker = tmp_path / "fail-now"
    mod.write_text("import os\nfrom online.protocol import Policy\n\nclass P(Policy):\n    def select(self, Phi):\n"
                   f"        if os.path.exists({str(marker)!r}):\n            raise RuntimeError('flaky')\n"
                   "        return 0, 1\n")
    st = RunStore()
    run_sweep(["dev"], [0], ["flaky_plugin:P", "random"], st, arrivals=3, progress=False, inline=True)
    marker.write_text("x")
    assert os.path.exists(marker)
    assert main(["verify", "--replay", "--policies", "flaky_plugin:P,random"]) == 1
    out = capsys.readouterr()
    assert "could not be replayed: RuntimeError: flaky" in out.out and "kept in place" in out.out
    assert "1 of 2 replayed row(s) are their policy's run" in out.err


def test_a_policy_that_hangs_on_replay_is_stopped_at_the_time_limit_and_named(env_dirs, tmp_path, monkeypatch, capsys):
    """A plug-in that sleeps when replayed had hung verify --replay; it is stopped after --cell-timeout and
    named (kept in place). Only the sleeper is replayed, and it sleeps far past any limit, so the outcome does
    not depend on the machine's speed (that the others go on is the flaky plug-in's test)."""
    from tests.online.helpers import plugin_module

    mod = plugin_module(tmp_path, "sleepy_plugin", monkeypatch)
    marker = tmp_path / "sleep-now"
    mod.write_text("import os, time\nfrom online.protocol import Policy\n\nclass P(Policy):\n    def select(self, Phi):\n"
                   f"        if os.path.exists({str(marker)!r}):\n            time.sleep(3600)\n"
                   "        return 0, 1\n")
    run_sweep(["dev"], [0], ["sleepy_plugin:P", "random"], RunStore(), arrivals=3, progress=False, inline=True)
    marker.write_text("x")
    assert main(["verify", "--replay", "--policies", "sleepy_plugin:P", "--cell-timeout", "5"]) == 1
    out = capsys.readouterr()
    assert "could not be replayed: exceeded the time limit of 5 s" in out.out and "kept in place" in out.out
    assert "0 of 1 replayed row(s) are their policy's run; 1 are not" in out.err


def test_a_row_labelled_with_another_rosters_name_does_not_verify_or_export(env_dirs, capsys):
    """A dev row relabelled 'test_profiles' (its digest still dev's) had exported as a test_profiles row."""
    run_sweep(["dev"], [0], ["random"], RunStore(), arrivals=3, progress=False, inline=True)
    path = next(RunStore().root.rglob("seed-0000-first3.json"))
    row = json.loads(path.read_text())
    path.write_text(json.dumps({**row, "world": "test_profiles"}))
    assert main(["verify"]) == 1                                               # named, moved aside
    assert "labelled world 'test_profiles', but its world digest" in capsys.readouterr().out
    path.write_text(json.dumps({**row, "world": "test_profiles"}))
    assert main(["export", str(env_dirs / "rows.csv")]) == 0
    assert "labelled world 'test_profiles', but its world digest" in capsys.readouterr().err
    assert len((env_dirs / "rows.csv").read_text().splitlines()) == 1        # the header only


def test_readers_of_a_read_only_store_skip_a_row_they_cannot_move_aside(env_dirs, read_only_folder, capsys):
    """stats, export and verify had crashed with no output (OSError moving the bad row aside)."""
    import shutil
    import subprocess

    from online.verify import encode_played, row_played

    run_sweep(["dev"], [0, 1], ["random"], RunStore(), arrivals=3, progress=False, inline=True)
    path = next(RunStore().root.rglob("seed-0001-first3.json"))
    row = json.loads(path.read_text())
    pairs, clicks = row_played(row)
    clicks = clicks.copy()
    clicks[0, 0] = 1 - clicks[0, 0]                      # a click the world does not give: fails verification
    path.write_text(json.dumps({**row, "played": encode_played(pairs, clicks, 6)}))
    if os.geteuid() == 0:                                 # root: copy the store onto the read-only mount
        subprocess.run(["mount", "-o", "remount,rw", str(read_only_folder)], check=True)
        shutil.copytree(RunStore().root, read_only_folder / "runs")
        subprocess.run(["mount", "-o", "remount,ro", str(read_only_folder)], check=True)
        store = str(read_only_folder / "runs")
    else:
        store = str(RunStore().root)
        for p in sorted(RunStore().root.rglob("*"), reverse=True):
            p.chmod(0o555 if p.is_dir() else 0o444)
    for argv, stream in ((["stats", "--world", "dev", "--arrivals", "3"], "err"), (["export", str(env_dirs / "e.csv")], "err"),
                         (["verify"], "out")):
        code = main([*argv, "--store", store])
        said = getattr(capsys.readouterr(), stream)
        assert code == (1 if argv[0] == "verify" else 0), said
        assert "does not verify" in said and "left in place (the store cannot be written" in said, said


def test_a_file_named_like_a_roster_but_holding_another_world_is_refused_before_any_run(env_dirs, dev_world, tmp_path):
    """Its rows would be stored under the roster's name and then fail verify (the label check)."""
    from online.sweep_plan import SweepError
    from tdmodels.world import write_world_file

    path = write_world_file(dev_world, tmp_path / "test_topics.nc")
    with pytest.raises(SweepError, match="named like the toolkit's world 'test_topics' holds world 'dev'"):
        run_sweep([str(path)], [0], ["random"], RunStore(), arrivals=3, progress=False, inline=True)
    assert not RunStore().root.exists() or not list(RunStore().rows())
