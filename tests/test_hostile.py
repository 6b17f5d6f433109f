"""Every command and the public Python entry points on one shared set of hostile inputs.

For each input the command must exit 2 with one line naming what and where (a Python entry point must
raise a documented type: ValueError or a subclass, such as WorldFormatError and PolicySpecError, or the
store's StoreError), print no traceback,
touch nothing outside its store and output, and leave every stored row byte-identical. The fixture
set is built once: a worlds folder with dev and hostile world files, a store with rows, and hostile
files of every kind the commands read (arrays, samples, simulator files, devices, loops, files where
folders should be)."""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import signal
import stat
from pathlib import Path

import numpy as np
import pytest

from online.sweep import run_sweep
from online.store import RunStore, StoreError
from tdmodels.from_arrays import btl_probs
from tdmodels.simulator import build_roster
from tdmodels.world import write_world_file
from tutorduel.cli import build_parser, main

CASE_SECONDS = 120     # a case that runs longer hangs: it fails instead of stalling the suite


def _digests(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The shared fixture set; returns its folder."""
    root = tmp_path_factory.mktemp("hostile")
    worlds, store = root / "worlds", root / "runs"
    os.environ["TUTORDUEL_WORLDS"], os.environ["TUTORDUEL_STORE"] = str(worlds), str(store)
    try:
        dev = build_roster("dev")
        write_world_file(dev, worlds / "dev.nc")
        run_sweep(["dev"], [0], ["random", "no-transfer"], RunStore(store), arrivals=3, progress=False)
        for name, change in {"arrivals3e6": {"arrivals": 3_000_000}, "bank0": {"bank_size": 0},
                             "betanan": {"beta": float("nan")}, "session1e6": {"topics_per_session": 1_000_000}}.items():
            w = dev.copy()
            w.attrs.update(change)
            write_world_file(w, worlds / f"{name}.nc")
        w = dev.copy()
        w["utilities"] = w["utilities"] * 5
        write_world_file(w, worlds / "utimes5.nc")
        fixed = dev.copy()
        fixed.attrs.update(arrival_mode="fixed", arrivals=2)
        fixed["schedule_student"] = ("arrival",), np.array([0.0, np.nan])
        fixed["schedule_question"] = ("arrival", "round"), np.zeros((2, 3), dtype=np.int64)
        write_world_file(fixed, worlds / "fixednan.nc")
        fixed["schedule_student"] = ("arrival",), np.array([0, 1])
        fixed = fixed.drop_vars("schedule_question")
        fixed["schedule_question"] = ("arrival", "round"), np.zeros((2, 0), dtype=np.int64)
        write_world_file(fixed, worlds / "fixed0rounds.nc")
    finally:
        del os.environ["TUTORDUEL_WORLDS"], os.environ["TUTORDUEL_STORE"]
    (root / "afile").write_text("a file where a folder should be\n")
    (root / "loop").symlink_to(root / "loop")
    rng = np.random.default_rng(0)
    U = rng.uniform(size=(3, 30, 4))
    np.save(root / "plain.npy", U)
    np.savez(root / "against.npz", utilities=U, probs=1 - btl_probs(U))
    np.savez(root / "nan.npz", utilities=np.where(np.arange(4) == 1, np.nan, U))
    np.savez(root / "allnan.npz", utilities=np.full_like(U, np.nan))
    np.savez(root / "zero.npz", utilities=np.zeros((0, 30, 4)))
    np.savez(root / "two.npz", utilities=U[..., :2])
    np.savez(root / "ok.npz", utilities=U)
    np.savez_compressed(root / "bomb.npz", utilities=np.zeros((200, 300, 1000), dtype=np.float32))
    persona = [{"short": f"P{k}"} for k in range(2)]
    (root / "sample2.json").write_text(json.dumps({"personas": persona, "arrivals": []}))
    (root / "sample0.json").write_text(json.dumps({"personas": persona + [{"short": "P2"}], "arrivals": []}))
    (root / "simulator.json").write_text(json.dumps({"params": {"no_such": 1}}))
    (root / "exits_on_import.py").write_text("raise SystemExit(3)\n")
    os.mkfifo(root / "fifo.npz")
    sample = {"personas": persona + [{"short": "P2"}], "labels": ["x"],
              "arrivals": [{"profile_key": "a", "qs": [{"q": "x?", "U": [0.1, 0.5, 0.9], "P": [0.3, 0.2, 0.4]}]}]}
    (root / "labels.json").write_text(json.dumps(sample))
    return root


def _run(argv, env, root, monkeypatch) -> int:
    """Run the CLI in this process with `env`, from `root`; its exit status (output: capfd)."""
    for k, v in {"TUTORDUEL_WORLDS": str(root / "worlds"), "TUTORDUEL_STORE": str(root / "runs"), **env}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root))

    def overdue(*_):
        raise TimeoutError(f"{' '.join(argv)}: still running after {CASE_SECONDS} s")

    old = signal.signal(signal.SIGALRM, overdue)
    signal.alarm(CASE_SECONDS)
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return rc


# (argv, extra environment, words the error line must contain)
CLI_CASES = [
    (["replay", "--world", "dev", "--seeds", "0", "--arrivals", "3", "--policies",
      "coduel[em_iters=99999999999999999999999999999]"], {}, "outside its range [1, 100]"),
    (["replay", "--world", "dev", "--seeds", "0", "--arrivals", "3", "--policies", "colstim[c=1e308]"], {},
     "outside its range"),
    (["replay", "--world", "dev", "--seeds", "0", "--arrivals", "3", "--policies", "rucb[alpha=1e308]"], {},
     "outside its range"),
    (["replay", "--world", "dev", "--seeds", "0", "--arrivals", "3", "--policies", "no-transfer[prior_var=NaN]"], {},
     "finite number"),
    (["replay", "--world", "dev", "--seeds", "0", "--arrivals", "3", "--policies", "exits_on_import:P"], {},
     "cannot load policy 'exits_on_import:P'"),
    (["replay", "--world", "dev", "--seeds", "0-99999999999999999999999", "--arrivals", "3"], {}, "seed range"),
    (["replay", "--world", "arrivals3e6", "--seeds", "0", "--arrivals", "5"], {}, "attrs.arrivals"),
    (["replay", "--world", "session1e6", "--seeds", "0", "--arrivals", "5"], {}, "attrs.topics_per_session"),
    (["replay", "--world", "bank0", "--seeds", "0", "--arrivals", "3"], {}, "attrs.bank_size"),
    (["replay", "--world", "betanan", "--seeds", "0", "--arrivals", "3"], {}, "attrs.beta"),
    (["replay", "--world", "utimes5", "--seeds", "0", "--arrivals", "3"], {}, "outside [0, 1]"),
    (["replay", "--world", "fixednan", "--seeds", "0"], {}, "schedule_student"),
    (["replay", "--world", "fixed0rounds", "--seeds", "0"], {}, "0 rounds per session"),
    (["replay", "--world", "dev", "--seeds", "0", "--arrivals", "3", "--store", "afile/x"], {},
     "afile is a file, not a folder"),
    (["worlds", "describe", "dev", "--seeds", "0-999999"], {}, "at most 1,000"),
    (["worlds", "list"], {"TUTORDUEL_WORLDS": "afile"}, "worlds folder afile"),
    (["worlds", "list"], {"TUTORDUEL_WORLDS": "/etc/passwd"}, "is a file, not a folder"),
    (["worlds", "list"], {"TUTORDUEL_WORLDS": "loop"}, "symbolic links"),
    (["stats", "--world", "dev"], {"TUTORDUEL_STORE": "afile"}, "run store afile"),
    (["stats", "--world", "dev", "--store", "loop"], {}, "run store loop"),
    (["stats", "--world", "dev", "--store", "/dev/null"], {}, "device"),
    (["stats", "--world", "/dev/zero"], {}, "not a regular file"),
    (["stats", "--world", "dev", "--arrivals", "3", "--curves", "afile"], {}, "afile: is a file, not a folder"),
    (["verify", "--store", "afile"], {}, "run store afile"),
    (["export", "afile/e.csv"], {}, "afile is a file, not a folder"),
    (["export", "/dev/full"], {}, "not a regular file"),
    (["leaderboard", "--out", "afile/x", "--rosters", "dev", "--seeds", "0", "--policies", "random"], {},
     "afile is a file, not a folder"),
    (["worlds", "calibrate", "--out", "afile/sub", "--allow-test"], {}, "afile is a file, not a folder"),
    (["play", "--out", "/dev/full"], {}, "not a regular file"),
    (["watch", "--out", "/dev/full"], {}, "not a regular file"),
    (["worlds", "from-arrays", "ok.npz", "--name", "big", "--arrivals", "1000000000000"], {}, "--arrivals"),
    (["worlds", "from-arrays", "plain.npy", "--name", "p"], {}, "a single array (.npy)"),
    (["worlds", "from-arrays", "against.npz", "--name", "p"], {}, "P does not rise with U"),
    (["worlds", "from-arrays", "nan.npz", "--name", "p"], {}, "utilities: non-finite value"),
    (["worlds", "from-arrays", "allnan.npz", "--name", "p"], {}, "utilities: non-finite value"),
    (["worlds", "from-arrays", "zero.npz", "--name", "p"], {}, "0 students"),
    (["worlds", "from-arrays", "two.npz", "--name", "p"], {}, "at least 3 personas"),
    (["worlds", "from-arrays", "ok.npz", "--name", "../escaped"], {}, "world name"),
    (["worlds", "from-arrays", "/dev/zero", "--name", "p"], {}, "arrays /dev/zero"),
    (["worlds", "import-sample", "sample2.json"], {}, "2 personas"),
    (["worlds", "import-sample", "sample0.json"], {}, "arrivals: an empty list"),
    (["worlds", "import-sample", "/dev/zero"], {}, "not a regular file"),
    (["worlds", "build", "dev", "--simulator", "simulator.json", "--worlds", "newworlds"], {}, "unknown parameter"),
    (["worlds", "build", "dev", "--simulator", "/dev/zero", "--worlds", "newworlds"], {}, "not a regular file"),
    (["fit", "--chains", "1", "--arrivals", "3"], {}, "--chains"),
    (["fit", "--model", "population", "--sampler", "nuts", "--thin", "5", "--arrivals", "3"], {}, "--thin 5"),
    (["validate", "--chains", "1"], {}, "--chains"),
    (["prefdisco", "--seeds", "0-5000"], {}, "at most 1,000"),
    (["prefdisco-validate", "--questions", "-5"], {}, "argument --questions: '-5': must be an integer in [0, 5]"),
    (["replay", "--world", "dev", "--seeds", "0", "--arrivals", "3", "--policies", "no-transfer[prior_var=1\nX]"], {},
     "prior_var=1\\nX"),
    (["worlds", "from-arrays", "fifo.npz", "--name", "p"], {}, "not a regular file"),
    (["worlds", "import-sample", "labels.json"], {}, "labels"),
]


@pytest.mark.parametrize("argv, env, words", CLI_CASES, ids=[" ".join(c[0])[:70] for c in CLI_CASES])
def test_a_hostile_argument_gets_one_line_and_changes_nothing(hostile, argv, env, words, monkeypatch, capfd):
    runs_before = _digests(hostile / "runs")
    worlds_before = _digests(hostile / "worlds")
    afile = (hostile / "afile").read_bytes()
    capfd.readouterr()
    rc = _run(argv, env, hostile, monkeypatch)
    out, err = capfd.readouterr()
    assert rc == 2, (rc, err[-2000:])
    assert "Traceback" not in err + out
    errors = [ln for ln in err.splitlines() if ln.startswith("tutorduel")]
    assert len(errors) == 1 and words in errors[0], err
    assert _digests(hostile / "runs") == runs_before                 # every stored row byte-identical
    assert _digests(hostile / "worlds") == worlds_before
    assert (hostile / "afile").read_bytes() == afile
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode) and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not (hostile / "escaped.nc").exists() and not (hostile / "newworlds").exists()


def _number_options():
    """(subcommand path, option, its type) for every numeric option of every command."""
    def walk(p, path):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, path + [name])
            elif action.option_strings and getattr(action.type, "__name__", "") in ("int", "float") \
                    and action.type not in (int, float):
                yield path, action.option_strings[-1], action.type
    return list(walk(build_parser(), []))


NUMBERS = ["nan", "inf", "-1", "1e400", "9" * 40, "", "x", "1e308"]


@pytest.mark.parametrize("path, option, kind", _number_options(),
                         ids=[f"{' '.join(p)} {o}" for p, o, _ in _number_options()])
def test_every_numeric_option_has_both_ends(path, option, kind, capsys):
    """No command option takes NaN, infinity, a negative where it means a count, or an unbounded number."""
    refused = 0
    for text in NUMBERS:
        try:
            v = kind(text)
        except argparse.ArgumentTypeError as exc:
            refused += 1
            assert "\n" not in str(exc)
            continue
        assert math.isfinite(v) and abs(v) < 1e300, (option, text, v)
    assert refused >= len(NUMBERS) - 2


def test_every_help_renders(capsys):
    def walk(p):
        yield p
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)
    for p in walk(build_parser()):
        assert p.format_help()
    with pytest.raises(SystemExit) as exc:
        main(["worlds", "--help"])                                 # crashed on a '%' in a help string
    assert exc.value.code == 0


def _python_cases(dev, hostile):
    from diagnostics.play_page import play_data
    from diagnostics.references import reference_regrets
    from diagnostics.watch_page import watch_data
    from diagnostics.world_figures import world_figures
    from online.policies.colstim import colstim
    from online.policies.coduel import coduel
    from online.policies.rucb import rucb
    from online.replay import replay, replay_logged
    from diagnostics.stats import reference_table
    from online.combined_replay import replay_combined
    from tdmodels.from_arrays import world_from_arrays
    from tdmodels.rosters import open_world
    from tutorduel.cell_fit import fit_cell

    U = np.random.default_rng(0).uniform(size=(3, 30, 4))

    def changed(**attrs):
        w = dev.copy()
        w.attrs.update(attrs)
        return w

    times5 = dev.copy()
    times5["utilities"] = dev["utilities"] * 5
    return {
        "replay(None)": lambda: replay(None, 0, "random"),
        "replay(seed=-1)": lambda: replay(dev, -1, "random", 2),
        "replay(seed=1.5)": lambda: replay(dev, 1.5, "random", 2),
        "replay(arrivals=2.5)": lambda: replay(dev, 0, "random", 2.5),
        "replay(arrivals=True)": lambda: replay(dev, 0, "random", True),
        "replay(arrivals=0)": lambda: replay(dev, 0, "random", 0),
        "replay_logged(U x 5)": lambda: replay_logged(times5, 0, "random", 2),
        "replay(beta=nan)": lambda: replay(changed(beta=float("nan")), 0, "random", 2),
        "replay(bank_size=0)": lambda: replay(changed(bank_size=0), 0, "random", 2),
        "replay(arrivals attr 3e6)": lambda: replay(changed(arrivals=3_000_000), 0, "random", 5),
        "replay(a string spec)": lambda: replay(dev, 0, "rucb[alpha=1e308]", 2),
        "rucb(alpha=1e308)": lambda: rucb(alpha=1e308),
        "colstim(c=1e308)": lambda: colstim(c=1e308),
        "coduel(em_iters=huge)": lambda: coduel(em_iters=10**30),
        "world_from_arrays(held_out='no')": lambda: world_from_arrays(U, held_out="no"),
        "world_from_arrays(rater all NaN)": lambda: world_from_arrays(U, rater=np.full((30, 4), np.nan)),
        "world_from_arrays(P against U)": lambda: world_from_arrays(U, 1 - btl_probs(U)),
        "world_from_arrays(arrivals=1e12)": lambda: world_from_arrays(U, arrivals=10**12),
        "reference_regrets(seed=-1)": lambda: reference_regrets(dev, -1),
        "world_figures(None)": lambda: world_figures(None),
        "play_data(None)": lambda: play_data(None, 0, sessions=2),
        "play_data(sessions=0)": lambda: play_data(dev, 0, sessions=0),
        "play_data(seed=2.5)": lambda: play_data(dev, 2.5, sessions=2),
        "watch_data(curve_seeds=0)": lambda: watch_data(dev, 0, arrivals=3, curve_seeds=0),
        "watch_data(arrivals=True)": lambda: watch_data(dev, 0, arrivals=True, curve_seeds=1),
        "RunStore(5)": lambda: RunStore(5),
        "run_sweep(arrivals=2.5)": lambda: run_sweep(["dev"], [0], ["random"], RunStore(hostile / "apistore"),
                                                     arrivals=2.5, progress=False),
        "run_sweep('dev')": lambda: run_sweep("dev", [0], ["random"], RunStore(hostile / "apistore"), progress=False),
        "run_sweep(store=path)": lambda: run_sweep(["dev"], [0], ["random"], str(hostile / "apistore"), progress=False),
        "replay(seed=2**64)": lambda: replay(dev, 2**64, "random", 2),
        "replay_combined(answer_noise=nan)": lambda: replay_combined(dev, 0, "coduel-ask", 2, float("nan")),
        "replay_combined(answer_noise=-1)": lambda: replay_combined(dev, 0, "coduel-ask", 2, -1.0),
        "reference_table(None)": lambda: reference_table(dev, None),
        "open_world(copies=0)": lambda: open_world("dev", directory=hostile / "worlds", copies=0),
        "open_world(directory=5)": lambda: open_world("dev", directory=5),
        "fit_cell(chains=10**6)": lambda: fit_cell(dev, 0, "random", "users", RunStore(hostile / "apistore"),
                                                   arrivals=3, chains=10**6),
        "fit_cell(max_minutes=1e300)": lambda: fit_cell(dev, 0, "random", "population", RunStore(hostile / "apistore"),
                                                        arrivals=3, max_minutes=1e300),
    }


def test_python_entry_points_refuse_what_the_cli_refuses(hostile, dev_world):
    cases = _python_cases(dev_world, hostile)
    runs_before = _digests(hostile / "runs")
    for name, call in cases.items():
        with pytest.raises((ValueError, StoreError)) as exc:        # the documented types (StoreError: OSError)
            call()
        msg = str(exc.value)
        assert msg and "\n" not in msg and len(msg) < 600, (name, msg)
    assert _digests(hostile / "runs") == runs_before
    assert np.all(dev_world["utilities"].values <= 1)           # nothing changed the caller's world


def test_python_replay_still_accepts_numpy_integers(dev_world):
    from online.replay import replay

    row = replay(dev_world, np.int64(0), "random", np.int32(2))
    assert row["seed"] == 0 and row["arrivals"] == 2


def test_a_damaged_store_is_read_without_hanging_or_a_traceback(hostile, tmp_path, monkeypatch, capfd):
    """Failure records and world.json files that are pipes, devices, garbage or of the wrong shape; a world
    name in the store that is a path. Every reading command finishes with its usual status and no traceback."""
    import shutil

    root = tmp_path / "h"
    shutil.copytree(hostile, root, symlinks=True, ignore=shutil.ignore_patterns("fifo.npz"))
    runs = root / "runs"
    digest = next(p.name for p in runs.iterdir() if len(p.name) == 16)
    failed = runs / "_failed" / digest / "x" / "code-aaaaaaaaaaaa"
    failed.mkdir(parents=True)
    os.mkfifo(failed / "seed-0000.json")
    (failed / "seed-0001.json").symlink_to("/dev/zero")
    (failed / "seed-0002.json").write_text('{"error": "x"}')
    (failed / "seed-0003.json").write_text('{"error": "", "seed": 0, "policy": "p"}')
    (runs / digest / "world.json").unlink()
    os.mkfifo(runs / digest / "world.json")
    other = runs / "0123456789abcdef"
    other.mkdir()
    (other / "world.json").write_text(json.dumps({"names": 5}))
    third = runs / "fedcba9876543210"
    third.mkdir()
    (third / "world.json").write_text(json.dumps({"names": [str(root / "worlds" / "dev.nc")]}))
    before = _digests(runs)
    for argv, ok in ((["stats", "--world", "dev", "--arrivals", "3"], (0,)), (["verify"], (0, 1)),
                     (["export", str(tmp_path / "rows.csv")], (0,))):
        capfd.readouterr()
        rc = _run(argv, {"TUTORDUEL_WORLDS": str(root / "worlds"), "TUTORDUEL_STORE": str(runs)}, root, monkeypatch)
        out, err = capfd.readouterr()
        assert rc in ok and "Traceback" not in out + err, (argv, rc, err[-1500:])
    assert _digests(runs) == before


ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\x9b31m\u202egnp.exe"


def test_text_from_a_world_file_reaches_the_terminal_visible(dev_world, tmp_path, capsys):
    """A world's description (any text from a file) with escape sequences that would retitle, clear and
    recolour the terminal, a carriage return and a bidi override: the world is refused when read (a world's
    texts are one line of visible text), and the error that names it shows no control character raw."""
    w = dev_world.copy()
    w.attrs["description"] = ESCAPES
    path = write_world_file(w, tmp_path / "w.nc")
    assert main(["worlds", "describe", str(path), "--seeds", "0"]) == 2
    err = capsys.readouterr().err
    assert "attrs.description" in err and "control character" in err
    assert not any(c in err for c in "\x1b\x07\r\x9b\u202e")


def test_visible_keeps_line_breaks_and_tabs_and_escapes_the_rest():
    from hypothesis import given, strategies as st

    from tutorduel.terminal_text import visible

    assert visible("a\tb\nc") == "a\tb\nc" and visible("\x00\x7f\x85") == "\\x00\\x7f\\x85"

    import unicodedata

    bidi = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

    @given(st.text())
    def check(text):
        shown = visible(text)
        assert all(c in "\t\n" or (unicodedata.category(c) != "Cc" and c not in bidi) for c in shown)
        assert visible(shown) == shown                            # nothing left to escape
    check()


@pytest.mark.parametrize("call", ["open_world", "run_sweep", "plan_sweep", "coduel", "tempered_kg", "check_health",
                                  "play_data", "world_from_npz", "calibrate_leaderboard", "calibrate_and_report",
                                  "stress_worlds", "refit_population", "run_nuts", "fit_population", "validate_users",
                                  "prefdisco_and_report"])
@pytest.mark.parametrize("truthy", ["no", "false", 1, None])
def test_a_truthy_value_is_not_taken_for_true(call, truthy, dev_world, env_dirs):
    """allow_test="no" had opened held-out rosters; every bool of the Python API takes a bool only."""
    from online.sweep_plan import plan_sweep

    if call == "open_world":
        from tdmodels.rosters import open_world
        fn = lambda: open_world("quirky", allow_test=truthy)                       # noqa: E731
    elif call == "run_sweep":
        fn = lambda: run_sweep(["quirky"], [0], ["random"], RunStore(), allow_test=truthy)   # noqa: E731
    elif call == "plan_sweep":
        fn = lambda: plan_sweep(["quirky"], [0], ["random"], RunStore(), allow_test=truthy)  # noqa: E731
    elif call == "coduel":
        from online.policies.coduel import coduel
        fn = lambda: coduel(population=truthy)                                      # noqa: E731
    elif call == "tempered_kg":
        from online.policies.tempered_kg import tempered_kg
        fn = lambda: tempered_kg(gate=truthy)                                       # noqa: E731
    elif call == "check_health":
        from inference.health import check_health
        fn = lambda: check_health(None, strict=truthy)                              # noqa: E731
    elif call == "play_data":
        from diagnostics.play_page import play_data
        fn = lambda: play_data(dev_world, 0, sessions=2, compare=truthy)           # noqa: E731
    elif call == "world_from_npz":
        from tutorduel.world_commands import world_from_npz
        fn = lambda: world_from_npz(env_dirs / "none.npz", "mine", force=truthy)   # noqa: E731
    elif call == "calibrate_leaderboard":
        from tutorduel.leaderboard_calibration import calibrate_leaderboard
        fn = lambda: calibrate_leaderboard(env_dirs / "cal", allow_test=truthy)   # noqa: E731
    elif call == "calibrate_and_report":
        from tutorduel.calibrate import calibrate_and_report
        fn = lambda: calibrate_and_report(env_dirs / "cal", allow_test=truthy)    # noqa: E731
    elif call == "stress_worlds":
        from tutorduel.world_commands import stress_worlds
        fn = lambda: stress_worlds(["stress-types"], force=truthy)                 # noqa: E731
    elif call == "refit_population":
        from inference.population import refit_population
        fn = lambda: refit_population(None, None, None, exact=truthy)              # noqa: E731
    elif call == "run_nuts":
        from inference.nuts import run_nuts
        fn = lambda: run_nuts(None, dense_mass=truthy)                             # noqa: E731
    elif call == "fit_population":
        from inference.model_fits import fit_population
        fn = lambda: fit_population(None, None, strict=truthy)                     # noqa: E731
    elif call == "validate_users":
        from tutorduel.validate_cell import validate_users
        fn = lambda: validate_users(dev_world, 0, "coduel", RunStore(), population_reference=truthy)  # noqa: E731
    else:
        from tutorduel.prefdisco_commands import prefdisco_and_report
        fn = lambda: prefdisco_and_report([0], curve=truthy)                       # noqa: E731
    from tdmodels.errors import InputError

    with pytest.raises(InputError, match="give True or False"):
        fn()
    assert not (env_dirs / "worlds" / "quirky.nc").exists() and not (env_dirs / "cal").exists()


def test_the_progress_bar_keeps_its_own_line_clearing_and_escapes_the_rest():
    """The terminal wrapper had escaped the progress bar's own carriage return and erase-line."""
    import io

    from tutorduel.terminal_text import CLEAR_LINE, VisibleStream

    buf = io.StringIO()
    VisibleStream(buf).write(CLEAR_LINE + "[###] dev seed 0 \x1b]0;x\x07: ok")
    assert buf.getvalue() == CLEAR_LINE + "[###] dev seed 0 \\x1b]0;x\\x07: ok"
    buf = io.StringIO()
    VisibleStream(buf).write("name " + CLEAR_LINE)
    assert buf.getvalue() == "name \\r\\x1b[K"
