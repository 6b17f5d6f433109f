import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from online.replay import replay
from online.store import CorruptRowError, RunStore
from online.sweep import parse_seeds, run_sweep
from tdmodels.rosters import open_world


def test_put_get_and_canonical_cells(dev_world, tmp_path):
    st = RunStore(tmp_path / "runs")
    row = replay(dev_world, 0, "no-transfer", arrivals=3)
    p = st.put(row)
    assert p.exists() and not list(p.parent.glob(".*tmp"))
    assert st.get("dev", 0, "no-transfer", 3)["regret"] == row["regret"]
    assert st.get("dev", 0, "no-transfer") is None          # the full run is another cell
    assert st.get("dev", 1, "no-transfer", 3) is None


@pytest.mark.parametrize("damage", [b"", b'{"schema": 1, "world": "dev"', b"\x00\xff garbage", b"[1, 2, 3]",
                                    b'{"schema": 1, "world": "dev", "seed": 0}'])
def test_corrupt_row_is_named_recomputed_and_kept_aside(env_dirs, damage):
    st = RunStore()
    res = run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False)
    path = st.path("dev", 0, "random", 3)
    good = json.loads(path.read_text())
    path.write_bytes(damage)
    with pytest.raises(CorruptRowError, match=str(path)):
        st.get("dev", 0, "random", 3)
    rows, problems = st.scan("dev")
    assert rows == [] and len(problems) == 1 and str(path) in problems[0]
    res = run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False)
    assert len(res.done) == 1 and len(res.corrupt) == 1
    assert path.with_suffix(".json.corrupt").read_bytes() == damage
    again = st.get("dev", 0, "random", 3)
    assert again["regret"] == good["regret"]


def test_failed_cells_are_reported_never_stored_and_others_go_on(env_dirs):
    st = RunStore()
    specs = ["random", "tests.online.helpers:Exploding", "tests.online.helpers:BadOutput[value=[1,1]]"]
    res = run_sweep(["dev"], [0, 1], specs, st, arrivals=4, progress=False)
    assert len(res.done) == 2 and len(res.failed) == 4
    assert all(st.get("dev", c.seed, c.policy, c.arrivals) is None for c, _ in res.failed)
    msgs = " ".join(m for _, m in res.failed)
    assert "boom" in msgs and "same index twice" in msgs
    assert len(st.failures("dev")) == 4


def test_sweep_skips_finished_cells(env_dirs):
    st = RunStore()
    r1 = run_sweep(["dev"], [0, 1], ["random"], st, arrivals=3, progress=False)
    r2 = run_sweep(["dev"], [0, 1, 2], ["random"], st, arrivals=3, progress=False)
    assert len(r1.done) == 2 and len(r2.cached) == 2 and len(r2.done) == 1


def test_truncated_runs_are_their_own_cells(env_dirs):
    st = RunStore()
    run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False)
    res = run_sweep(["dev"], [0], ["random"], st, arrivals=300, progress=False)   # 300 = dev's full run
    assert len(res.done) == 1 and res.done[0].arrivals is None
    assert st.get("dev", 0, "random")["arrivals"] == 300 and st.get("dev", 0, "random", 3)["arrivals"] == 3


def test_rows_of_another_world_version_are_recomputed(env_dirs):
    st = RunStore()
    run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False)
    p = st.path("dev", 0, "random", 3)
    row = json.loads(p.read_text())
    good_digest, row["world_digest"] = row["world_digest"], "0" * 16
    p.write_text(json.dumps(row))
    res = run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False)
    assert len(res.stale) == 1 and len(res.done) == 1
    assert st.get("dev", 0, "random", 3)["world_digest"] == good_digest


def test_parallel_sweep_gives_the_same_rows(env_dirs, tmp_path):
    a, b = RunStore(tmp_path / "a"), RunStore(tmp_path / "b")
    run_sweep(["dev"], [0, 1], ["random", "no-transfer"], a, jobs=1, arrivals=5, progress=False)
    run_sweep(["dev"], [0, 1], ["random", "no-transfer"], b, jobs=2, arrivals=5, progress=False)
    strip = lambda r: {k: v for k, v in r.items() if k not in ("wall_s", "versions")}
    ra = sorted((strip(r) for r in a.rows("dev")), key=lambda r: (r["seed"], r["policy"]))
    rb = sorted((strip(r) for r in b.rows("dev")), key=lambda r: (r["seed"], r["policy"]))
    assert ra == rb and len(ra) == 4


def test_parse_seeds():
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("0-1,5,7-8") == [0, 1, 5, 7, 8]
    for bad in ("a", "3-1", "-2", "1-", "", "0..3"):
        with pytest.raises(ValueError, match="seed range"):
            parse_seeds(bad)


def test_export_csv(env_dirs, tmp_path):
    st = RunStore()
    run_sweep(["dev"], [0, 1], ["random"], st, arrivals=3, progress=False)
    out = st.export(tmp_path / "rows.csv")
    lines = out.read_text().splitlines()
    assert lines[0].startswith("world,") and len(lines) == 3


def test_sigkill_mid_sweep_then_resume(env_dirs):
    """Kill a sweep with SIGKILL several times; the resumed store holds every cell exactly once."""
    open_world("dev")                                         # build the world before racing
    seeds, specs = "0-9", "random,no-transfer"
    cmd = [sys.executable, "-m", "tutorduel.cli", "replay", "--world", "dev", "--seeds", seeds,
           "--policies", specs]
    st = RunStore()
    counts, rng = [], random.Random(0)
    for _ in range(3):
        before = len(list(st.rows("dev")))
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 120
        while len(list(st.rows("dev"))) <= before and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.3))          # kill at a random point of the next cell
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        counts.append(len(list(st.rows("dev"))))
    done_before = len(list(st.rows("dev")))
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    files = sorted(p for p in (st.root / "dev").rglob("seed-*.json"))
    cells = [(r["seed"], r["policy"]) for r in st.rows("dev")]
    assert len(cells) == len(set(cells)) == 20 == len(files)
    assert not st.scan("dev")[1]
    ref = {(r["seed"], r["policy"]): r["regret"] for r in st.rows("dev")}
    fresh = {(s, p): replay(open_world("dev"), s, p)["regret"] for s in (0, 9) for p in ("random", "no-transfer")}
    assert all(ref[k] == v for k, v in fresh.items())
    assert 0 < counts[0] and done_before < 20, counts


def _without_timing(row):
    return {k: v for k, v in row.items() if k not in ("wall_s", "versions")}


def test_rows_are_identical_under_one_and_two_jobs(env_dirs):
    specs = ["random", "no-transfer", "coduel:greedy"]
    one, two = RunStore(env_dirs / "one"), RunStore(env_dirs / "two")
    run_sweep(["dev"], [0, 1], specs, one, arrivals=8, progress=False, jobs=1)
    run_sweep(["dev"], [0, 1], specs, two, arrivals=8, progress=False, jobs=2)
    again = RunStore(env_dirs / "again")
    run_sweep(["dev"], [0, 1], specs, again, arrivals=8, progress=False, jobs=1)
    from online.registry import canonical_spec

    for s in (0, 1):
        for p in map(canonical_spec, specs):
            a = _without_timing(one.get("dev", s, p, 8))
            assert a == _without_timing(two.get("dev", s, p, 8)) == _without_timing(again.get("dev", s, p, 8))


@pytest.mark.slow
def test_twenty_sigkills_then_resume_equal_an_uninterrupted_sweep(env_dirs):
    """SIGKILL a sweep at random points 20 times; the final store holds every cell exactly once and
    every row equals the row of an uninterrupted sweep (timing aside)."""
    open_world("dev")
    seeds, specs = "0-9", "random,no-transfer,coduel:greedy"
    cmd = [sys.executable, "-m", "tutorduel.cli", "replay", "--world", "dev", "--seeds", seeds, "--policies", specs]
    st = RunStore()
    rng, kills = random.Random(1), 0
    for _ in range(20):
        before = len(list(st.rows("dev")))
        if before == 30:
            break
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(1.0, 4.0))          # a random point: start-up, a cell, or a store write
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    cells = [(r["seed"], r["policy"]) for r in st.rows("dev")]
    assert len(cells) == len(set(cells)) == 30 and not st.scan("dev")[1]
    assert len(list((st.root / "dev").rglob("seed-*.json"))) == 30
    clean = RunStore(env_dirs / "clean")
    run_sweep(["dev"], parse_seeds(seeds), specs.split(","), clean, progress=False)   # rows hold canonical specs
    for r in st.rows("dev"):
        assert _without_timing(r) == _without_timing(clean.get("dev", r["seed"], r["policy"]))
    assert kills >= 10, kills
