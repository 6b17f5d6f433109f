"""Bad input at the command line: one clear message naming what and where, exit 2, nothing stored
(issue 15's findings 3, 6, 7, 9 and 11)."""
import json
import sys

import numpy as np
import pytest

from online.store import RunStore
from tutorduel.cli import main


def _rows():
    return list(RunStore().rows())


def _fails_with(capsys, argv, words, code=2):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("tutorduel: error:") and words in err and "Traceback" not in err, err


def _usage_error(capsys, argv, words):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("policy, words", [
    ("coduel[gate=no]", "setting gate=no: expected true or false"),
    ('coduel[population="false"]', "expected true or false"),
    ("coduel[em_iters=1.7]", "expected an integer"),
    ("rucb[alpha=Infinity]", "expected a finite number"),
])
def test_wrong_settings_stop_before_any_cell(env_dirs, capsys, policy, words):
    _fails_with(capsys, ["replay", "--seeds", "0-1", "--arrivals", "3", "--policies", f"random,{policy}"], words)
    assert not _rows()


@pytest.mark.slow
def test_boolean_spellings_are_one_cell(env_dirs, capsys):
    assert main(["replay", "--seeds", "0", "--arrivals", "3", "--policies",
                 "coduel[lookahead=false],coduel[lookahead=False],coduel-greedy"]) == 0
    assert "1 cells computed" in capsys.readouterr().out and len(_rows()) == 1


@pytest.mark.parametrize("argv, words", [
    (["replay", "--jobs", "0"], "--jobs: '0': must be a"),
    (["replay", "--jobs", "-1"], "--jobs: '-1': must be a"),
    (["replay", "--dask-workers", "0"], "--dask-workers: '0': must be a"),
    (["replay", "--dask-workers", "-1"], "must be a"),
    (["replay", "--arrivals", "0"], "--arrivals: '0': must be a"),
    (["replay", "--cell-timeout", "nan"], "--cell-timeout: 'nan': must be a"),
    (["fit", "--users", "-3"], "--users: '-3': must be a"),
    (["fit", "--users", "0"], "--users: '0': must be a"),
    (["fit", "--chains", "0"], "--chains: '0': must be a"),
    (["validate", "--users", "0"], "--users: '0': must be a"),
    (["validate", "--holdout", "-1"], "--holdout: '-1': must be a"),
    (["fit", "--seed", "-1"], "--seed: '-1': must be a"),
    (["fit", "--max-minutes", "-1"], "--max-minutes: '-1': must be a"),
    (["fit", "--max-minutes", "nan"], "--max-minutes: 'nan': must be a"),
    (["fit", "--thin", "0"], "--thin: '0': must be a"),
    (["fit", "--sampler", "hmc"], "invalid choice: 'hmc'"),
    (["validate", "--reference-draws", "0"], "--reference-draws: '0': must be a"),
])
def test_numbers_out_of_range_are_usage_errors(env_dirs, capsys, argv, words):
    _usage_error(capsys, argv, words)


def test_fit_users_beyond_the_run(env_dirs, capsys):
    _fails_with(capsys, ["fit", "--arrivals", "4", "--users", "5", "--chains", "2", "--warmup", "20", "--draws", "20"],
                "--users 5: give a number of users in 1..4")


def test_population_sampler_options_are_refused_for_other_models(env_dirs, capsys):
    _fails_with(capsys, ["fit", "--arrivals", "3", "--model", "users", "--sampler", "nuts", "--chains", "2",
                         "--warmup", "20", "--draws", "20"], "--sampler and --thin apply to --model population only")


@pytest.mark.slow
def test_a_population_fit_runs_until_healthy(env_dirs, capsys):
    """The default population fit keeps its chains running until every label-invariant diagnostic
    passes; --strict then exits 0 and the verdict is printed."""
    argv = ["fit", "--arrivals", "8", "--model", "population", "--chains", "2", "--warmup", "200", "--draws", "500",
            "--max-rounds", "20", "--jobs", "1", "--strict"]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "label-invariant diagnostics, 2 chains" in cap.out and "  -- OK" in cap.out
    assert "round 1:" in cap.err


def test_a_one_chain_fit_is_refused_before_it_replaces_anything(env_dirs, capsys):
    """R-hat and the ESS compare chains: a one-chain fit used to return 0 with health over '0 parameters' and
    replace the earlier fit on disk. It is now refused at parse time, with the fit file untouched."""
    with pytest.raises(SystemExit) as exc:
        main(["fit", "--arrivals", "3", "--chains", "1", "--warmup", "100", "--draws", "100"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == "tutorduel fit: error: argument --chains: '1': must be an integer in [2, 64] (see tutorduel fit --help)"
    assert not (env_dirs / "runs").exists()                  # refused before anything was read or written


@pytest.mark.slow
def test_damaged_rows_do_not_crash_stats_and_are_recomputed(env_dirs, capsys):
    """Finding 7: a row without per_user is skipped by stats (named) and recomputed by replay, the damaged
    file kept as *.corrupt."""
    argv = ["replay", "--seeds", "0-1", "--arrivals", "3", "--policies", "random"]
    assert main(argv) == 0
    path = sorted(RunStore().root.rglob("seed-0001-first3.json"))[0]
    row = json.loads(path.read_text())
    del row["per_user"]
    path.write_text(json.dumps(row))
    capsys.readouterr()
    assert main(["stats", "--arrivals", "3"]) == 0
    cap = capsys.readouterr()
    assert f"{path}: field 'per_user' missing" in cap.err and "| random | 1 |" in cap.out
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "1 cells computed" in cap.out and "moved aside to" in cap.err
    assert path.with_name(path.name + ".corrupt").exists() and len(_rows()) == 2


def test_seed_lists_too_long(env_dirs, capsys):
    """Finding 9: no list of a billion seeds is built; 100,001 cells need --yes."""
    _fails_with(capsys, ["replay", "--seeds", "0-1000000000"], "1,000,000,001 seeds; at most 1,000,000")
    _fails_with(capsys, ["replay", "--seeds", "0-100000", "--policies", "random"], "pass --yes")
    assert not (env_dirs / "runs").exists()


def test_a_store_that_is_a_file(env_dirs, capsys):
    (env_dirs / "afile").write_text("")
    _fails_with(capsys, ["replay", "--seeds", "0", "--arrivals", "3", "--store", str(env_dirs / "afile")],
                "is a file, not a folder")


def test_export_parquet_without_pyarrow(env_dirs, capsys, monkeypatch):
    assert main(["replay", "--seeds", "0", "--arrivals", "3", "--policies", "random"]) == 0
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "fastparquet", None)
    capsys.readouterr()
    _fails_with(capsys, ["export", str(env_dirs / "x.parquet")], "parquet needs pandas and pyarrow")
    assert not (env_dirs / "x.parquet").exists()
    assert main(["export", str(env_dirs / "x.csv"), "--world", "dev"]) == 0


def test_help_says_world_takes_a_path(capsys):
    for cmd in ("replay", "stats", "fit", "validate", "export"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        assert "path to a world .nc file" in " ".join(capsys.readouterr().out.split())


def test_a_renamed_world_file_is_shown_under_its_new_name(env_dirs, capsys):
    """Finding 11: the name is the file's; the store finds the rows by content."""
    assert main(["replay", "--seeds", "0", "--arrivals", "3", "--policies", "random"]) == 0
    (env_dirs / "worlds" / "dev.nc").rename(env_dirs / "worlds" / "mydev.nc")
    capsys.readouterr()
    assert main(["stats", "--world", "mydev", "--arrivals", "3"]) == 0
    out = capsys.readouterr().out
    assert "### mydev" in out and "| random | 1 |" in out


def test_worlds_list_checks_each_file(env_dirs, capsys):
    (env_dirs / "worlds").mkdir()
    (env_dirs / "worlds" / "broken.nc").write_bytes(b"not netcdf")
    assert main(["worlds", "list"]) == 0
    out = capsys.readouterr().out
    assert "broken               INVALID" in out and "not a readable netCDF" in out
    assert "dev                  not built" in out


def test_describe_the_sample_does_not_ask_to_import_it(env_dirs, capsys, sample_path):
    assert main(["worlds", "import-sample", str(sample_path)]) == 0
    assert main(["worlds", "describe", "sample", "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert "import the sample" not in out and "content digest" in out


def test_worlds_from_arrays_then_replay(env_dirs, capsys):
    U = np.random.default_rng(0).uniform(size=(4, 30, 6))
    np.savez(env_dirs / "mine.npz", utilities=U, personas=np.array(list("ABCDEF")))
    assert main(["worlds", "from-arrays", str(env_dirs / "mine.npz"), "--name", "mine", "--arrivals", "10"]) == 0
    assert "click model btl beta=11.0" in capsys.readouterr().out
    _fails_with(capsys, ["worlds", "from-arrays", str(env_dirs / "mine.npz"), "--name", "mine"], "--force")
    _fails_with(capsys, ["worlds", "from-arrays", str(env_dirs / "mine.npz"), "--name", "dev"], "simulated roster")
    np.savez(env_dirs / "bad.npz", utility=U)
    _fails_with(capsys, ["worlds", "from-arrays", str(env_dirs / "bad.npz"), "--name", "bad"], "needs 'utilities'")
    assert main(["replay", "--world", "mine", "--seeds", "0-1", "--policies", "random,no-transfer"]) == 0
    assert "### mine (10 arrivals" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["1.5", "nan", "inf", "1e400", "0x1", "", "3,3", "1," * 3, "0", "1" * 5000])
def test_validate_rounds_is_a_list_of_distinct_click_counts(text, capsys):
    """They had raised ValueError from int() (1.5, nan, 1e400, 0x1), or been taken silently ('' and 3,3)."""
    from tutorduel.cli import main

    with pytest.raises(SystemExit) as e:
        main(["validate", "--rounds", text])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--rounds" in err and "Traceback" not in err


def test_importing_a_sample_names_the_input_and_keeps_another_sample_unless_forced(env_dirs, capsys, sample_path):
    """A bad sample had been blamed on the good sample.nc already there, and a sample of other content had
    replaced it without --force; from-arrays could take the name 'sample' that play and watch read as real."""
    import gzip

    assert main(["worlds", "import-sample", str(sample_path)]) == 0
    assert main(["worlds", "import-sample", str(sample_path)]) == 0             # the same content: kept, no --force
    raw = json.loads(open(sample_path, "rb").read() if not str(sample_path).endswith(".gz")
                     else gzip.decompress(open(sample_path, "rb").read()))
    bad = json.loads(json.dumps(raw))
    bad["arrivals"][0]["qs"][0]["P"][0] = 1.5
    (env_dirs / "bad.json").write_text(json.dumps(bad))
    _fails_with(capsys, ["worlds", "import-sample", str(env_dirs / "bad.json")], f"sample {env_dirs / 'bad.json'}")
    raw["arrivals"] = raw["arrivals"][:-1]
    other = env_dirs / "other.json"
    other.write_text(json.dumps(raw))
    _fails_with(capsys, ["worlds", "import-sample", str(other)], "--force")
    assert main(["worlds", "import-sample", str(other), "--force"]) == 0
    U = np.random.default_rng(0).uniform(size=(4, 30, 6))
    np.savez(env_dirs / "mine.npz", utilities=U)
    _fails_with(capsys, ["worlds", "from-arrays", str(env_dirs / "mine.npz"), "--name", "sample"], "real sample")
    _fails_with(capsys, ["worlds", "stress", "--name", "sample"], "real sample")
    _fails_with(capsys, ["worlds", "from-arrays", str(env_dirs / "mine.npz"), "--name", "real-sessions-4"], "real-session")
    _fails_with(capsys, ["worlds", "stress", "--name", "real-sessions-0"], "real-session")


def test_importing_the_sample_resamples_its_sessions_into_held_out_rosters(env_dirs, capsys, sample_path):
    from tdmodels.roster_digests import published_digest

    assert main(["worlds", "import-sample", str(sample_path)]) == 0
    out = capsys.readouterr().out
    for r in (0, 1):
        assert f"real-sessions-{r}" in out and f"digest {published_digest('real-sessions-1', f'real-sessions-{r}')} (as published)" in out
    assert main(["worlds", "import-sample", str(sample_path), "--resamples", "7"]) == 0
    assert (env_dirs / "worlds" / "real-sessions-7.nc").exists()
    _usage_error(capsys, ["worlds", "import-sample", str(sample_path), "--resamples", "1,1"], "twice")
    _usage_error(capsys, ["worlds", "import-sample", str(sample_path), "--resamples", "-1"], "--resamples")
    _fails_with(capsys, ["stats", "--world", "real-sessions-7"], "--allow-test")


@pytest.mark.parametrize("argv", [["stats", "--store", ""], ["stats", "--policies", " "], ["leaderboard", "--rosters", ""],
                                  ["leaderboard", "--out", ""], ["stats", "--curves", ""], ["replay", "--scheduler", ""],
                                  ["prefdisco", "--policies", ""]])
def test_an_empty_value_is_an_error_not_the_default(argv, capsys):
    """'' had silently meant the default (leaderboard --rosters '' ran dev; --out '' wrote into the folder)."""
    _usage_error(capsys, argv, "an empty value")


def test_stats_against_a_policy_left_out_of_policies_still_pairs_with_it(env_dirs, capsys):
    assert main(["replay", "--world", "dev", "--seeds", "0-1", "--arrivals", "4", "--policies", "random,no-transfer"]) == 0
    capsys.readouterr()
    assert main(["stats", "--world", "dev", "--arrivals", "4", "--against", "random", "--policies", "no-transfer"]) == 0
    assert "no-transfer: +" in capsys.readouterr().out
    assert main(["stats", "--world", "dev"]) == 0           # no full runs: the truncations that are stored are named
    assert "rows of other truncations are stored: --arrivals 4" in capsys.readouterr().out


def test_a_policy_named_twice_is_refused_before_any_work(capsys):
    _fails_with(capsys, ["prefdisco", "--seeds", "0", "--policies", "answer-now,answer-now"], "named twice")
    _fails_with(capsys, ["combined", "--seeds", "0", "--policies", "coduel,coduel[lookahead=true]"], "named twice")


@pytest.mark.parametrize("argv", [["stats", "--world", "dev,"], ["stats", "--world", ",dev"],
                                  ["leaderboard", "--rosters", "dev,,quirky"], ["replay", "--world", "dev, ,x"]])
def test_an_empty_name_in_a_world_list_is_named_before_any_work(argv, capsys):
    """'dev,' had printed dev's tables, then failed on the empty name."""
    _fails_with(capsys, argv, "an empty name between commas")
    assert "| policy |" not in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["--max-minutes", "0", "--max-rounds", "3"], "--max-minutes 0 is one fixed run; it takes no --max-rounds"),
])
def test_a_population_fits_budgets_are_checked_before_the_fit(env_dirs, capsys, argv, says):
    assert main(["fit", "--arrivals", "3", "--model", "population", "--chains", "2", "--warmup", "5", "--draws", "5",
                 "--jobs", "1", *argv]) == 2
    assert says in capsys.readouterr().err


def test_a_population_fit_refuses_a_bad_budget_of_rounds_from_python():
    import numpy as np

    from inference.model_fits import fit_population
    from tdmodels.errors import InputError

    z, y = np.zeros((2, 3, 7)), np.zeros((2, 3))
    for bad in (0, True, "3", 10**9):
        with pytest.raises(InputError, match="max_rounds"):
            fit_population(z, y, chains=2, warmup=5, draws=5, max_seconds=60.0, max_rounds=bad)


def _subcommands(parser, path=()):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            described = {c.dest: c.help for c in action._choices_actions}
            for name, sub in action.choices.items():
                yield path + (name,), described.get(name)
                yield from _subcommands(sub, path + (name,))


def test_every_command_and_action_the_help_lists_is_described():
    """`worlds --help` listed nine actions and described six."""
    from tutorduel.cli import build_parser

    found = list(_subcommands(build_parser()))
    assert len(found) > 20
    bare = [" ".join(path) for path, text in found if not (text and text.strip())]
    assert bare == []


def test_a_roster_named_twice_runs_once(env_dirs, capsys):
    """`leaderboard --rosters dev,dev,...` had run one sweep per repeat."""
    assert main(["leaderboard", "--rosters", "dev,dev,dev", "--seeds", "0", "--policies", "random",
                 "--out", str(env_dirs / "lb")]) == 0
    out = capsys.readouterr().out
    assert out.count("dev: 1 cells computed") == 1 and "already stored" in out


def test_run_leaderboard_from_python_reads_a_repeated_roster_once_and_refuses_a_flag_that_is_not_a_bool(env_dirs):
    from tdmodels.errors import InputError
    from tutorduel.leaderboard import leaderboard_rosters

    assert leaderboard_rosters(["dev", "dev"], False) == ["dev"]
    with pytest.raises(InputError, match="allow_test='no'"):
        leaderboard_rosters(["dev"], "no")
    with pytest.raises(InputError, match="give a list of names"):
        leaderboard_rosters("dev", False)
    assert leaderboard_rosters(["dev"], False) == ["dev"]


def test_output_into_a_pipe_whose_reader_has_gone_ends_quietly_with_141(env_dirs):
    """`tutorduel stats ... | head -1` had ended in a BrokenPipeError traceback."""
    import os
    import subprocess

    assert main(["replay", "--world", "dev", "--seeds", "0", "--arrivals", "3", "--policies", "random"]) == 0
    read, write = os.pipe()
    os.close(read)                                          # the reader is gone before the first line
    try:
        out = subprocess.run([sys.executable, "-m", "tutorduel.cli", "stats", "--world", "dev", "--arrivals", "3"],
                             stdout=write, stderr=subprocess.PIPE, text=True, timeout=300, env=os.environ.copy())
    finally:
        os.close(write)
    assert out.returncode == 141 and "Traceback" not in out.stderr and "Exception ignored" not in out.stderr


@pytest.mark.parametrize("raised, status", [("write", 2), ("pipe", 141)])
def test_the_benchmark_runner_names_a_failed_write_and_ends_quietly_on_a_broken_pipe(monkeypatch, capsys, raised,
                                                                                      status):
    import benchmarks.run as run
    from tdmodels.atomic_file import WriteFailedError

    def fail(argv):
        raise WriteFailedError("t.json: No space left on device") if raised == "write" else BrokenPipeError()

    monkeypatch.setattr(run, "_main", fail)
    assert run.main([]) == status
    err = capsys.readouterr().err
    assert ("No space left on device" in err and err.count("\n") == 1) if raised == "write" else err == ""
