"""The benchmark entry point runs every group at small sizes and writes finite ratios (its figures are
measured by hand; these tests check that the harness works, never a speed)."""
import json
import math
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


def test_the_short_benchmarks_run_in_one_process_and_print_ratios(tmp_path):
    out = run("--quick", "--only", "replay,sweep,memory", "--policies", "no-transfer,coduel,tempered-kg",
              "--json", str(tmp_path / "t.json"))
    assert out.returncode == 0, out.stderr[-3000:]
    rows = check_table(tmp_path / "t.json", ("replay", "sweep", "memory"))
    names = {(r["group"], r["name"], r["reference"]) for r in rows}
    assert ("replay", "coduel", "random") in names and ("replay", "tempered-kg", "coduel") in names
    assert ("sweep", "sweep, 2 workers", "sweep, inline") in names
    assert "every ratio against a reference measured in this run" in out.stdout


@pytest.mark.slow
def test_the_long_benchmarks_run(tmp_path):
    out = run("--quick", "--only", "nuts,population", "--json", str(tmp_path / "t.json"))
    assert out.returncode == 0, out.stderr[-3000:]
    check_table(tmp_path / "t.json", ("nuts", "population"))


def test_an_unknown_group_is_one_clear_error(tmp_path):
    out = run("--only", "replay,speed")
    assert out.returncode == 2 and "unknown group(s) 'speed'" in out.stderr
