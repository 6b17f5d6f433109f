"""The benchmark entry point runs every group at small sizes and writes finite ratios (its figures are
measured by hand; these tests check that the harness works, never a speed)."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    return subprocess.run([sys.executable, "-m", "benchmarks.run", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)


def check_table(path, groups):
    rows = json.loads(Path(path).read_text())["rows"]
    assert {r["group"] for r in rows} == set(groups)
    for r in rows:
        assert math.isfinite(r["ratio"]) and r["ratio"] > 0 and r["value"] > 0, r
    return rows


def run_groups(tmp_path, groups, *args):
    """Run the short benchmark `groups` (a tuple) into a table; (stdout, its rows), the run and table checked."""
    out = run("--quick", "--only", ",".join(groups), *args, "--json", str(tmp_path / "t.json"))
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout, check_table(tmp_path / "t.json", groups)


@pytest.mark.slow         # CI runs the short benchmark itself after the tests (benchmarks.run --check)
def test_the_short_benchmarks_run_in_one_process_and_print_ratios(tmp_path):
    stdout, rows = run_groups(tmp_path, ("replay", "memory", "beliefs"), "--policies", "no-transfer,coduel,tempered-kg")
    names = {(r["group"], r["name"], r["reference"]) for r in rows}
    assert ("replay", "coduel", "random") in names and ("replay", "tempered-kg", "coduel") in names
    assert ("memory", "coduel, 12 arrivals", "coduel, 6 arrivals") in names
    assert ("beliefs", "one click, adf", "one click, laplace") in names
    assert ("beliefs", 'coduel[belief="laplace-is"]', "coduel") in names
    assert "every ratio against a reference measured in this run" in stdout


@pytest.mark.slow
def test_the_short_benchmarks_of_processes_run_and_print_ratios(tmp_path):
    """The groups that start worker processes or the command line (about half the short run's time: slow)."""
    _, rows = run_groups(tmp_path, ("sweep", "cli", "leaderboard", "tuning"), "--policies", "no-transfer,coduel")
    names = {(r["group"], r["name"], r["reference"]) for r in rows}
    assert ("sweep", "sweep, 2 workers", "sweep, inline") in names
    assert ("leaderboard", "leaderboard, 2 cells", "replay time / 2 workers") in names
    assert ("tuning", "tune rucb, 2 evaluations", "replay time / 2 workers") in names
    assert {n for g, n, _ in names if g == "cli"} == {"tutorduel --help", "replay, 1 random cell of 5",
                                                       "stats, 12 rows", "quickstart replay, 12 cells"}


@pytest.mark.slow
def test_the_long_benchmarks_run(tmp_path):
    _, rows = run_groups(tmp_path, ("nuts", "reference", "population"), "--population-users", "8,310")
    names = {r["name"] for r in rows}
    assert {"per 100 users, 8 users", "peak memory, 8 users"} <= names
    assert "310 users, to the verdict" in names             # past the roster's 300 arrivals
    assert all("MiB here" in r["note"] for r in rows if r["name"].endswith("to the verdict"))


def test_an_unknown_group_is_one_clear_error(tmp_path):
    out = run("--only", "replay,speed")
    assert out.returncode == 2 and "unknown group(s) 'speed'" in out.stderr


def _committed(path, ratios: dict):
    meta = {"world": "dev", "policies": ",".join(ratios), "arrivals": 6, "repeats": 1, "short": True}
    rows = [{"group": "replay", "name": p, "reference": "random", "ratio": r} for p, r in ratios.items()]
    path.write_text(json.dumps({"meta": meta, "rows": rows}))
    return path


def test_the_regression_check_fails_on_a_slower_ratio_and_passes_within_the_allowance(tmp_path):
    """CI's check measures what the committed table measured and fails (exit 1) on a ratio over 1.5x the
    committed one (the others far above theirs, so the machine factor stays under 1); ratios far above
    every plausible one pass."""
    slow = run("--check", str(_committed(tmp_path / "tight.json", {"no-transfer": 0.01, "rucb": 1000.0, "pooled": 1000.0})))
    assert slow.returncode == 1, slow.stderr[-2000:]
    assert "replay no-transfer / random" in slow.stdout and "REGRESSION" in slow.stdout
    again = slow.stdout.split("measured again, best of 2")[1]              # the table's 1 repeat, twice
    assert "replay no-transfer / random" in again and "REGRESSION" in again and "rucb" not in again
    ok = run("--check", str(_committed(tmp_path / "loose.json", {"no-transfer": 1000.0, "rucb": 1000.0})))
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "committed 1000.00x, limit 1500.00x" in ok.stdout and "machine factor" in ok.stdout


def test_a_committed_figure_that_is_not_measured_fails_the_check(tmp_path):
    from benchmarks.measure import Ratio
    from benchmarks.regression import compare

    lines, bad = compare([Ratio("replay", "coduel", 1.0, "random", 0.1)],
                         {("replay", "coduel", "random"): 10.0, ("replay", "coldb", "random"): 5.0})
    assert len(bad) == 1 and "coldb" in bad[0] and "not measured" in bad[0]
    assert any("committed 10.00x" in x for x in lines)


def test_a_machine_that_runs_everything_slower_is_not_a_regression_but_one_policy_is():
    """Another processor that runs every policy 1.4x slower against random pairs fails nothing; on it, a
    policy 1.4 x 1.6 slower than committed does."""
    from benchmarks.measure import Ratio
    from benchmarks.regression import compare

    committed = {("replay", p, "random"): 10.0 for p in "abcde"}
    slower = [Ratio("replay", p, 14.0, "random", 1.0) for p in "abcde"]
    assert compare(slower, committed)[1] == []
    one = slower[:4] + [Ratio("replay", "e", 14.0 * 1.6, "random", 1.0)]
    lines, bad = compare(one, committed)
    assert len(bad) == 1 and "replay e / random" in bad[0] and "machine factor 1.40" in lines[0]
    faster = [Ratio("replay", p, 7.0, "random", 1.0) for p in "abcd"] + [Ratio("replay", "e", 16.0, "random", 1.0)]
    assert len(compare(faster, committed)[1]) == 1          # a faster machine does not loosen the limits


def test_a_table_that_is_not_one_is_a_clear_error(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text("{not json")
    out = run("--check", str(bad))
    assert out.returncode == 2 and "not a benchmark table" in out.stderr


def test_the_committed_table_is_a_short_table_of_every_short_policy():
    from benchmarks.regression import SHORT_POLICIES, load_baseline

    meta, ratios = load_baseline(ROOT / "benchmarks" / "baseline.json")
    assert meta["short"] and meta["policies"] == SHORT_POLICIES and meta["world"] == "dev"
    assert {name for _, name, ref in ratios if ref == "random"} == set(SHORT_POLICIES.split(","))


@pytest.mark.parametrize("change, argv, says", [
    ({"rows": [{"group": "replay", "name": "no-transfer", "reference": "random", "ratio": float("nan")}]}, [],
     "finite and positive"),
    ({"rows": [{"group": "replay", "name": "no-transfer", "reference": "random", "ratio": 0.0}]}, [],
     "finite and positive"),
    ({"meta": {"world": "dev", "policies": "no-transfer", "arrivals": 6, "repeats": 1}}, [], "not a short table"),
    ({"meta": {"world": "dev", "policies": "no-transfer", "arrivals": "x", "repeats": 1, "short": True}}, [],
     "arrivals must be an integer in [1,"),
    ({"meta": {"world": "dev", "policies": ["no-transfer"], "arrivals": 6, "repeats": 1, "short": True}}, [],
     "policies or world as text"),
    ({"meta": {"world": "dev", "policies": "no-such-policy", "arrivals": 6, "repeats": 1, "short": True}}, [],
     "registered policies only"),
    ({"meta": {"world": "dev", "policies": "this:x", "arrivals": 6, "repeats": 1, "short": True}}, [],
     "registered policies only"),
    ({"meta": {"world": "dev", "policies": "no-transfer,os:system[x=1]", "arrivals": 6, "repeats": 1, "short": True}},
     [], "registered policies only"),
    ({"meta": {"world": "../../etc/passwd", "policies": "no-transfer", "arrivals": 6, "repeats": 1, "short": True}},
     [], "is not a roster"),
    ({"meta": {"world": "dev", "policies": "no-transfer", "arrivals": 6, "repeats": 1_000_000_000, "short": True}},
     [], "repeats must be an integer in [1, 20]"),
    ({"meta": {"world": "dev", "policies": "no-transfer", "arrivals": 10**12, "repeats": 1, "short": True}},
     [], "arrivals must be an integer in [1,"),
    ({"meta": []}, [], "not a benchmark table"),
    ({"rows": [{"group": "replay", "name": 7, "reference": "random", "ratio": 1.0}]}, [], "must be text"),
    ({}, ["--world", "quirky"], "takes no --world"),
    ({}, ["--population-users", "300"], "takes no --population-users"),
])
def test_a_bad_committed_table_or_option_is_one_clear_error_before_measuring(tmp_path, capsys, change, argv, says):
    from benchmarks.run import parse

    table = json.loads(_committed(tmp_path / "t.json", {"no-transfer": 2.0}).read_text())
    table.update(change)
    (tmp_path / "t.json").write_text(json.dumps(table))
    with pytest.raises(SystemExit) as exc:
        parse(["--check", str(tmp_path / "t.json"), *argv])
    assert exc.value.code == 2 and says in capsys.readouterr().err
    if isinstance(change.get("meta"), dict) and change["meta"].get("policies") == "this:x":
        assert "this" not in sys.modules and "Zen" not in capsys.readouterr().out     # nothing imported


@pytest.mark.parametrize("what", ["fifo", "/dev/zero", "huge", "folder", "deep"])
def test_a_table_that_is_not_a_small_regular_file_is_refused_unread(tmp_path, capsys, what):
    """A FIFO or /dev/zero would block or never end; a huge file is not a short table."""
    from benchmarks.run import parse

    path = tmp_path / "t.json"
    if what == "fifo":
        os.mkfifo(path)
    elif what == "huge":
        path.write_bytes(b" " * (2 << 20))
    elif what == "folder":
        path.mkdir()
    elif what == "deep":
        path.write_text("[" * 200_000)                       # RecursionError in the JSON parser
    else:
        path = Path(what)
    with pytest.raises(SystemExit) as exc:
        parse(["--check", str(path)])
    assert exc.value.code == 2 and "not a benchmark table" in capsys.readouterr().err


@pytest.mark.parametrize("argv, says", [(["--short", "--arrivals", "0"], "--arrivals must be in [1,"),
                                        (["--repeats", "1000000000"], "--repeats must be in [1, 20]"),
                                        (["--short", "--policies", "coduel"], "give no --policies"),
                                        (["--repeats", "0"], "--repeats must be in [1, 20]"),
                                        (["--population-users", "100,x"], "not a comma-separated list"),
                                        (["--population-users", "1"], "distinct counts of 2 to"),
                                        (["--population-users", "2,2000000"], "distinct counts of 2 to"),
                                        (["--only", "replay", "--population-users", "300"], "add it with --only"),
                                        (["--population-users", "50,50"], "distinct counts"),
                                        (["--population-minutes", "nan"], "must be in (0, 1440]"),
                                        (["--population-minutes", "0"], "must be in (0, 1440]")])
def test_bad_sizes_are_refused(capsys, argv, says):
    from benchmarks.run import parse

    with pytest.raises(SystemExit) as exc:
        parse(argv)
    assert exc.value.code == 2 and says in capsys.readouterr().err


def test_a_slowdown_shared_by_most_policies_fails_past_the_capped_machine_factor():
    from benchmarks.measure import Ratio
    from benchmarks.regression import compare

    committed = {("replay", p, "random"): 10.0 for p in "abcde"}
    assert compare([Ratio("replay", p, 30.0, "random", 1.0) for p in "abcde"], committed)[1] != []
    assert compare([Ratio("replay", p, 20.0, "random", 1.0) for p in "abcde"], committed)[1] == []


@pytest.mark.parametrize("where, says", [(".", "names a folder"), ("out", "is a folder"),
                                         ("fifo", "device or special file"), ("afile/t.json", "is a file, not a folder"),
                                         ("t.json/", "ends in a slash")])
def test_a_json_path_that_cannot_be_written_is_refused_before_measuring(tmp_path, capsys, where, says):
    """Never a FIFO (the write would block after the whole run), a folder, a path under a file."""
    from benchmarks.run import parse

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "afile").write_text("keep")
    (tmp_path / "out").mkdir()
    with pytest.raises(SystemExit) as exc:
        parse(["--json", str(tmp_path) + "/" + where])
    assert exc.value.code == 2 and says in capsys.readouterr().err


def test_a_figure_over_its_limit_is_measured_again_and_fails_only_if_over_again():
    """The check measures the figures over their limit once more (the policies behind them, tempered-KG's
    against CODuel's both) and keeps as regressions only those over the same limit again, under the first
    measurement's machine factor."""
    from benchmarks.measure import Ratio
    from benchmarks.regression import compare, limit, machine_factor, over_limit, to_measure_again

    committed = {("replay", p, "random"): 10.0 for p in "abcdefg"} | {("replay", "tempered-kg", "coduel"): 1.0}
    first = [Ratio("replay", p, 10.0, "random", 1.0) for p in "abcfg"] + [Ratio("replay", "d", 16.0, "random", 1.0),
             Ratio("replay", "e", 16.0, "random", 1.0), Ratio("replay", "tempered-kg", 1.6, "coduel", 1.0)]
    factor = machine_factor(first, committed)
    assert factor == 1.0 and limit(10.0, factor) == 15.0
    keys = over_limit(first, committed, factor)
    assert keys == [("replay", "d", "random"), ("replay", "e", "random"), ("replay", "tempered-kg", "coduel")]
    assert to_measure_again(keys) == ["d", "e", "tempered-kg", "coduel"]
    again = [Ratio("replay", "d", 11.0, "random", 1.0), Ratio("replay", "e", 17.0, "random", 1.0),
             Ratio("replay", "tempered-kg", 1.2, "coduel", 1.0)]
    lines, held = compare(again, {k: committed[k] for k in keys}, factor=factor)
    assert len(held) == 1 and "replay e / random" in held[0]           # d was a spike, e stayed slower
    assert not any("not measured" in x for x in lines)
    # a figure measured again keeps the first factor: far slower re-measures do not loosen the limit
    assert compare([Ratio("replay", "d", 16.0, "random", 1.0)], {("replay", "d", "random"): 10.0}, factor=1.0)[1]
