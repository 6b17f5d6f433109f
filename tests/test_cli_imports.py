"""Commands import only what they use: reading a store, listing worlds and the help never start JAX, NumPyro,
ArviZ or scipy.stats (seconds of imports for nothing), and a replay's parent process does not either."""
import json
import subprocess
import sys

from online.store import RunStore
from online.sweep import run_sweep
from tdmodels.rosters import open_world

HEAVY = ("jax", "numpyro", "arviz", "scipy.stats", "matplotlib", "distributed")

PROBE = r"""
import contextlib, io, json, sys
from tutorduel.cli import main
seen = {}
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as exc:          # --help
            rc = exc.code
    seen[" ".join(argv)] = [rc, sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)]
print(json.dumps(seen))
"""


def _imports_of(commands: list[list[str]]) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(commands), json.dumps(HEAVY)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_reading_commands_and_the_help_import_none_of_the_heavy_libraries(env_dirs, tmp_path):
    run_sweep(["dev"], [0, 1], ["random", "no-transfer"], RunStore(), arrivals=3, progress=False)
    commands = [["--help"], ["worlds", "list"], ["worlds", "describe", "dev"],
                ["stats", "--world", "dev", "--arrivals", "3", "--against", "random"],
                ["export", str(tmp_path / "rows.csv")], ["verify"], ["replay", "--help"]]
    seen = _imports_of(commands)        # one process, in this order: each command adds to what the last imported
    assert [rc for rc, _ in seen.values()] == [0] * len(commands), seen
    assert all(mods == [] for _, mods in seen.values()), seen


def test_a_replays_parent_process_imports_none_of_them(env_dirs):
    """The parent plans, checks and stores; the built-in policies it resolves for their code identity are
    JAX-free. (The world is built first: xarray's netCDF writer imports dask.distributed for its locks.)"""
    open_world("dev")
    seen = _imports_of([["replay", "--world", "dev", "--seeds", "0", "--arrivals", "2",
                         "--policies", "random,no-transfer,coduel,pooled,rucb,coldb,meta-ts,hierts"]])
    [(rc, mods)] = seen.values()
    assert rc == 0 and mods == [], seen


RUN = r"""
import gc, sys
from tutorduel.cli import main, run
sys.argv = ["tutorduel", "worlds", "list"]
assert main() == 0 and gc.get_freeze_count() == 0      # main leaves the collector alone (in-process callers)
status = run()
print("status", status, "frozen", gc.get_freeze_count() > 0)
"""


def test_the_program_exits_with_mains_status_its_objects_frozen(env_dirs):
    """`tutorduel` (``tutorduel.cli.run``) freezes the collector before exiting; the status is main's."""
    ok = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True)
    bad = subprocess.run([sys.executable, "-m", "tutorduel.cli", "stats", "--seeds"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.strip().splitlines()[-1] == "status 0 frozen True", ok.stderr[-2000:]
    assert bad.returncode == 2 and "error" in bad.stderr
