"""An export never hands a spreadsheet a formula."""
import csv
import json

from online.replay import run_key
from online.store import RunStore, spreadsheet_safe
from online.sweep import run_sweep
from tdmodels.rosters import open_world
from tutorduel.cli import main


def test_formula_cells_are_neutralised():
    assert [spreadsheet_safe(v) for v in ("=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "ok", -3.5, 7)] == \
        ["'=1+1", "'+cmd", "'-2+3", "'@SUM(A1)", "'\tx", "ok", -3.5, 7]


def test_export_writes_no_formula(env_dirs, capsys):
    st = RunStore()
    run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False)
    p = st.path(run_key(open_world("dev"), 0, "random", 3))
    row = json.loads(p.read_text())
    row["world"] = '=HYPERLINK("http://x","y")'      # a label: export names the world from its digest
    p.write_text(json.dumps(row))
    assert main(["export", str(env_dirs / "rows.csv"), "--world", "dev"]) == 0
    cells = [c for r in csv.reader((env_dirs / "rows.csv").open()) for c in r]
    assert not any(c.startswith(("=", "+", "@")) for c in cells) and "dev" in cells
    st.export(env_dirs / "api.csv", rows=[row])      # the Python API writes what it is given, defused
    cells = [c for r in csv.reader((env_dirs / "api.csv").open()) for c in r]
    assert not any(c.startswith(("=", "+", "@")) for c in cells) and "'=HYPERLINK(\"http://x\",\"y\")" in cells
