import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from online.replay import replay, run_key
from online.store import CorruptRowError, RunStore, row_problem
from online.sweep import parse_seeds, run_sweep
from tdmodels.rosters import open_world
from tests.online.helpers import plugin_module


def _key(seed, spec, arrivals=None, world="dev"):
    return run_key(open_world(world), seed, spec, arrivals)


def test_put_get_and_canonical_cells(dev_world, tmp_path):
    st = RunStore(tmp_path / "runs")
    row = replay(dev_world, 0, "no-transfer", arrivals=3)
    p = st.put(row)
    assert p.exists() and not list(p.parent.glob(".*tmp"))
    assert st.get(run_key(dev_world, 0, "no-transfer", 3))["regret"] == row["regret"]
    assert st.get(run_key(dev_world, 0, "no-transfer[prior_var=4.0]", 3)) is not None   # the default spelled out
    assert st.get(run_key(dev_world, 0, "no-transfer")) is None          # the full run is another cell
    assert st.get(run_key(dev_world, 1, "no-transfer", 3)) is None


def _damage_missing_per_user(row):
    del row["per_user"]


def _damage_policy(row):
    row["policy"] = "no-transfer"


def _damage_score(row):
    row["score"] += 5.0


def _damage_per_user_length(row):
    row["per_user"]["regret"] = row["per_user"]["regret"][:-1]


def _damage_below_the_floor(row):
    """A forgery whose figures agree with each other: every regret scaled by 0.1, sums and score recomputed
    (the hostile review's: it read as a score of 119)."""
    for part in ("per_user", "per_round"):
        row[part]["regret"] = [0.1 * v for v in row[part]["regret"]]
    row["regret"] = sum(row["per_user"]["regret"])
    row["excess"] = row["regret"] - row["floor"]
    row["score"] = 100.0 * (row["random"] - row["regret"]) / (row["random"] - row["floor"])


def _damage_target(row):
    row["target"] = "coduel"


@pytest.mark.parametrize("damage", [b"", b'{"schema": 2, "world": "dev"', b"\x00\xff garbage", b"[1, 2, 3]",
                                    b'{"schema": 2, "world": "dev", "seed": 0}', _damage_missing_per_user,
                                    _damage_policy, _damage_score, _damage_per_user_length, b"NaN",
                                    _damage_below_the_floor, _damage_target,
                                    b'{"schema": 3, "wall_s": ' + b"1" * 5000 + b"}"])    # past Python's int limit
def test_damaged_row_is_named_moved_aside_and_recomputed(env_dirs, damage):
    st = RunStore()
    run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False, inline=True)
    key = _key(0, "random", 3)
    path = st.path(key)
    good = path.read_bytes()
    if callable(damage):
        row = json.loads(good)
        damage(row)
        damage = json.dumps(row).encode()
    path.write_bytes(damage)
    with pytest.raises(CorruptRowError, match=str(path)):
        st.get(key)
    rows, problems = st.scan(key.world_digest)
    assert rows == [] and len(problems) == 1 and str(path) in problems[0]
    res = run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False, inline=True)
    assert len(res.done) == 1 and len(res.corrupt) == 1
    moved = path.with_name(path.name + ".corrupt")
    assert res.corrupt[0][1] == moved and moved.read_bytes() == damage      # really kept aside
    assert json.loads(path.read_bytes())["regret"] == json.loads(good)["regret"]


def test_a_row_copied_to_another_seeds_file_is_not_counted_twice(env_dirs, tmp_path):
    st = RunStore()
    run_sweep(["dev"], [0, 1], ["random"], st, arrivals=3, progress=False, inline=True)
    p0, p1 = st.path(_key(0, "random", 3)), st.path(_key(1, "random", 3))
    p1.write_bytes(p0.read_bytes())
    rows, problems = st.scan()
    assert len(rows) == 1 and len(problems) == 1 and "seed-0001" in problems[0]
    out = st.export(tmp_path / "rows.csv")
    assert len(out.read_text().splitlines()) == 2                          # header + the one genuine row
    with pytest.raises(CorruptRowError, match="another cell"):
        st.get(_key(1, "random", 3))


def test_rows_hold_finite_json_only(dev_world):
    row = replay(dev_world, 0, "random", arrivals=2)
    assert row_problem(row) is None
    bad = {**row, "score": float("nan")}
    assert "finite" in row_problem(bad)
    with pytest.raises(ValueError, match="refusing to store"):
        RunStore("unused").put(bad)


def test_failed_cells_are_reported_never_stored_and_others_go_on(env_dirs):
    st = RunStore()
    specs = ["random", "tests.online.helpers:Exploding", "tests.online.helpers:BadOutput[value=[1,1]]"]
    res = run_sweep(["dev"], [0, 1], specs, st, arrivals=4, progress=False, inline=True)
    assert len(res.done) == 2 and len(res.failed) == 4
    assert all(st.get(c.key) is None for c, _ in res.failed)
    msgs = " ".join(m for _, m in res.failed)
    assert "boom" in msgs and "same index twice" in msgs
    assert len(st.failures()) == 4


def test_sweep_skips_finished_cells(env_dirs):
    st = RunStore()
    r1 = run_sweep(["dev"], [0, 1], ["random"], st, arrivals=3, progress=False, inline=True)
    r2 = run_sweep(["dev"], [0, 1, 2], ["random"], st, arrivals=3, progress=False, inline=True)
    assert len(r1.done) == 2 and len(r2.cached) == 2 and len(r2.done) == 1


def test_truncated_runs_are_their_own_cells(env_dirs):
    st = RunStore()
    run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False, inline=True)
    res = run_sweep(["dev"], [0], ["random"], st, arrivals=300, progress=False, inline=True)   # 300 = dev's full run
    assert len(res.done) == 1 and res.done[0].arrivals is None
    assert st.get(_key(0, "random"))["arrivals"] == 300 and st.get(_key(0, "random", 3))["arrivals"] == 3


def test_an_edited_copy_of_a_world_never_touches_the_genuine_rows(env_dirs):
    """Finding 1: identity is the world's content, not its `roster` attribute."""
    st = RunStore()
    run_sweep(["dev"], [0, 1], ["random", "no-transfer"], st, arrivals=4, progress=False, inline=True)
    genuine = {p: p.read_bytes() for p in st.root.rglob("*.json")}
    copy = open_world("dev").copy(deep=True)
    copy["utilities"].values[0, 0, 0] = 0.5 * copy["utilities"].values[0, 0, 0]      # still roster='dev'
    from tdmodels.world import save_world

    save_world(copy, env_dirs / "devcopy.nc")
    res = run_sweep([str(env_dirs / "devcopy.nc")], [0, 1], ["random", "no-transfer"], st, arrivals=4,
                    progress=False, inline=True)
    assert len(res.done) == 4 and not res.cached and not res.superseded
    for p, data in genuine.items():
        if p.name != "world.json":
            assert p.read_bytes() == data                                   # byte-identical
    again = run_sweep(["dev"], [0, 1], ["random", "no-transfer"], st, arrivals=4, progress=False, inline=True)
    assert len(again.cached) == 4 and not again.done


@pytest.mark.parametrize("roster", ["../../escaped", "/abs/path", "a/b", "..", "", "x" * 65, "-rf"])
def test_a_world_name_never_becomes_a_path(env_dirs, roster):
    from tdmodels.world import WorldFormatError, save_world, write_world_file

    bad = open_world("dev").copy(deep=True)
    bad.attrs["roster"] = roster
    with pytest.raises(WorldFormatError, match="attrs.roster"):
        save_world(bad, env_dirs / "bad.nc")
    write_world_file(bad, env_dirs / "bad.nc")
    with pytest.raises(WorldFormatError, match="attrs.roster"):
        run_sweep([str(env_dirs / "bad.nc")], [0], ["random"], RunStore(), arrivals=3, progress=False, inline=True)
    assert not (env_dirs / "runs").exists() or not any((env_dirs / "runs").rglob("seed-*"))
    assert not list(env_dirs.parent.rglob("escaped*"))


def test_rows_of_another_code_version_are_kept_and_reported(env_dirs, tmp_path, monkeypatch):
    """Finding 2: the code is part of a run's identity."""
    from online import code_identity

    mod = plugin_module(tmp_path, "codeid_policy", monkeypatch)
    st = RunStore()
    first = run_sweep(["dev"], [0], ["codeid_policy:P"], st, arrivals=3, progress=False, inline=True)
    old = first.done[0]
    mod.write_text(mod.read_text() + "\nEDITED = 1\n")
    code_identity.code_identity.cache_clear()
    second = run_sweep(["dev"], [0], ["codeid_policy:P"], st, arrivals=3, progress=False, inline=True)
    new = second.done[0]
    assert new.code != old.code and len(second.superseded) == 1
    assert st.get(old.key) is not None and st.get(new.key) is not None     # both kept
    assert second.superseded[0][1] == [st.path(old.key)]
    from tutorduel.store_view import stored_rows

    view = stored_rows(st, open_world("dev"), "dev", 3, trusted={"codeid_policy:P"})
    assert [r["code"]["digest"] for r in view.rows] == [new.code]
    assert any("other code versions" in n and old.code in n for n in view.notes)
    code_identity.code_identity.cache_clear()


def test_export_csv(env_dirs, tmp_path):
    st = RunStore()
    run_sweep(["dev"], [0, 1], ["random"], st, arrivals=3, progress=False, inline=True)
    out = st.export(tmp_path / "rows.csv")
    lines = out.read_text().splitlines()
    assert lines[0].startswith("world,") and "code" in lines[0] and len(lines) == 3


def test_parse_seeds():
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("0-1,5,7-8") == [0, 1, 5, 7, 8]
    for bad in ("a", "3-1", "-2", "1-", "", "0..3", "0-1000000000"):
        with pytest.raises(ValueError, match="seed range"):
            parse_seeds(bad)


def test_parallel_sweep_gives_the_same_rows(env_dirs, tmp_path):
    a, b = RunStore(tmp_path / "a"), RunStore(tmp_path / "b")
    run_sweep(["dev"], [0, 1], ["random", "no-transfer"], a, arrivals=5, progress=False, inline=True)
    run_sweep(["dev"], [0, 1], ["random", "no-transfer"], b, jobs=2, arrivals=5, progress=False)
    strip = lambda r: {k: v for k, v in r.items() if k not in ("wall_s", "versions")}  # noqa: E731
    ra = sorted((strip(r) for r in a.rows()), key=lambda r: (r["seed"], r["policy"]))
    rb = sorted((strip(r) for r in b.rows()), key=lambda r: (r["seed"], r["policy"]))
    assert ra == rb and len(ra) == 4


@pytest.mark.slow
def test_sigkill_mid_sweep_then_resume(env_dirs):
    """Kill a sweep with SIGKILL several times; the resumed store holds every cell exactly once."""
    open_world("dev")                                         # build the world before racing
    seeds, specs = "0-9", "random,no-transfer"
    cmd = [sys.executable, "-m", "tutorduel.cli", "replay", "--world", "dev", "--seeds", seeds,
           "--policies", specs]
    st = RunStore()
    counts, rng = [], random.Random(0)
    for _ in range(3):
        before = len(list(st.rows()))
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 120
        while len(list(st.rows())) <= before and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.3))          # kill at a random point of the next cell
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        counts.append(len(list(st.rows())))
    done_before = len(list(st.rows()))
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    files = sorted(st.root.rglob("seed-*.json"))
    cells = [(r["seed"], r["policy"]) for r in st.rows()]
    assert len(cells) == len(set(cells)) == 20 == len(files)
    assert not st.scan()[1]
    ref = {(r["seed"], r["policy"]): r["regret"] for r in st.rows()}
    fresh = {(s, p): replay(open_world("dev"), s, p)["regret"] for s in (0, 9) for p in ("random", "no-transfer")}
    assert all(ref[k] == v for k, v in fresh.items())
    assert 0 < counts[0] and done_before < 20, counts


def _without_timing(row):
    return {k: v for k, v in row.items() if k not in ("wall_s", "versions")}


@pytest.mark.slow
def test_rows_are_identical_under_one_and_two_jobs(env_dirs):
    specs = ["random", "no-transfer", "coduel-greedy"]
    one, two = RunStore(env_dirs / "one"), RunStore(env_dirs / "two")
    run_sweep(["dev"], [0, 1], specs, one, arrivals=8, progress=False, jobs=1)
    run_sweep(["dev"], [0, 1], specs, two, arrivals=8, progress=False, jobs=2)
    again = RunStore(env_dirs / "again")
    run_sweep(["dev"], [0, 1], specs, again, arrivals=8, progress=False, inline=True)
    for s in (0, 1):
        for p in specs:
            k = _key(s, p, 8)
            assert _without_timing(one.get(k)) == _without_timing(two.get(k)) == _without_timing(again.get(k))


@pytest.mark.slow
def test_twenty_sigkills_then_resume_equal_an_uninterrupted_sweep(env_dirs):
    """SIGKILL a sweep at random points 20 times; the final store holds every cell exactly once and
    every row equals the row of an uninterrupted sweep (timing aside)."""
    open_world("dev")
    seeds, specs = "0-9", "random,no-transfer,coduel-greedy"
    cmd = [sys.executable, "-m", "tutorduel.cli", "replay", "--world", "dev", "--seeds", seeds, "--policies", specs]
    st = RunStore()
    rng, kills = random.Random(1), 0
    for _ in range(20):
        before = len(list(st.rows()))
        if before == 30:
            break
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(1.0, 4.0))          # a random point: start-up, a cell, or a store write
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    cells = [(r["seed"], r["policy"]) for r in st.rows()]
    assert len(cells) == len(set(cells)) == 30 and not st.scan()[1]
    assert len(list(st.root.rglob("seed-*.json"))) == 30
    clean = RunStore(env_dirs / "clean")
    run_sweep(["dev"], parse_seeds(seeds), specs.split(","), clean, progress=False)
    for r in st.rows():
        from online.store import CellKey

        assert _without_timing(r) == _without_timing(clean.get(CellKey.of_row(r)))
    assert kills >= 10, kills


def test_stats_against_a_policy_stored_only_under_older_code(env_dirs, tmp_path, monkeypatch, capsys):
    """--any-code shows old versions as 'SPEC (code DIGEST)' lines; --against SPEC used to find no rows then."""
    from online import code_identity
    from tutorduel.cli import main

    mod = plugin_module(tmp_path, "codeid_policy2", monkeypatch)
    st = RunStore()
    done = run_sweep(["dev"], [0, 1], ["codeid_policy2:P", "random"], st, arrivals=3, progress=False, inline=True)
    old = next(c.code for c in done.done if c.policy == "codeid_policy2:P")
    mod.write_text(mod.read_text() + "\nEDITED = 1\n")
    code_identity.code_identity.cache_clear()
    argv = ["stats", "--world", "dev", "--arrivals", "3", "--against", "codeid_policy2:P"]
    assert main(argv) == 2
    assert "no stored rows of that policy" in capsys.readouterr().err
    assert main(argv + ["--any-code"]) == 0
    out = capsys.readouterr().out
    assert f"against codeid_policy2:P (code {old})" in out and "random:" in out
    assert main(argv[:-1] + [f"codeid_policy2:P (code {old})", "--any-code"]) == 0
    code_identity.code_identity.cache_clear()


def test_storing_something_that_is_not_a_row_is_one_input_error(env_dirs):
    from tdmodels.errors import InputError

    for bad in ([1], None, "row"):
        with pytest.raises(InputError, match="refusing to store a row of type"):
            RunStore().put(bad)


def test_a_rows_settings_must_say_what_its_canonical_spec_says(env_dirs):
    st = RunStore()
    run_sweep(["dev"], [0], ["no-transfer[prior_var=2.0]"], st, arrivals=3, progress=False, inline=True)
    path = next(iter(st.root.rglob("seed-*.json")))
    row = json.loads(path.read_text())
    row["settings"]["prior_var"] = 3.0
    path.write_text(json.dumps(row))
    rows, problems = st.scan()
    assert rows == [] and "field 'settings' has prior_var=3.0, the policy 'no-transfer[prior_var=2.0]' says 2.0" \
        in problems[0]


def test_two_processes_moving_the_same_bad_row_aside_both_go_on(tmp_path):
    """Two readers racing to move one bad row aside: the second had failed with FileNotFoundError (exit 2,
    naming no race); it now gets where the first put it. Nothing is moved over an earlier file."""
    from online.store import RunStore, StoreError

    store = RunStore(tmp_path / "runs")
    bad = tmp_path / "runs" / "w" / "seed-0000.json"
    bad.parent.mkdir(parents=True)
    (bad.parent / "seed-0000.json.corrupt").write_text("an earlier one")
    bad.write_text("{broken")
    first = store.quarantine(bad)
    assert first.name == "seed-0000.json.corrupt.1" and first.read_text() == "{broken" and not bad.exists()
    assert store.quarantine(bad) == first                     # the other process's move, found
    assert (bad.parent / "seed-0000.json.corrupt").read_text() == "an earlier one"
    with pytest.raises(StoreError, match="another process moved or removed it at the same time"):
        store.quarantine(bad, ".rejected")
