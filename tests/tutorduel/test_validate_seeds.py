"""`validate --seeds`: one validation per seed in worker processes, each seed's files written as it finishes,
a finished seed read instead of recomputed, and the same figures from local workers and from Dask."""
import json
import os
import shutil

import numpy as np
import pytest

from tutorduel.cli import main

SMALL = ["--world", "dev", "--policy", "coduel", "--arrivals", "4", "--users", "2", "--chains", "2",
         "--warmup", "60", "--draws", "60"]


def _files(root, what):
    return sorted(root.rglob(f"seed-*.{what}.nc"))


def test_seeds_run_in_workers_and_a_finished_seed_is_read_not_recomputed(env_dirs, capsys):
    assert main(["validate", *SMALL, "--seeds", "0-1", "--jobs", "1"]) == 0
    out, err = capsys.readouterr()
    done = _files(env_dirs, "validate")
    assert len(done) == 2 and len(_files(env_dirs, "users")) == 2
    assert "seed 0: validated, wrote" in err and "seed 1: validated, wrote" in err
    lines = [line.split() for line in out.splitlines()]
    assert [r[0] for r in lines if r and r[0].isdigit()] == ["0", "1"]
    assert any(r[:1] == ["mean"] for r in lines) and any(r[:1] == ["sd"] for r in lines)
    assert "pooled over 4 users of 2 seeds" in out
    stamps = {p: os.stat(p).st_mtime_ns for p in done}
    assert main(["validate", *SMALL, "--seeds", "0-1", "--jobs", "1"]) == 0     # both read back, no worker
    out2, err2 = capsys.readouterr()
    assert err2.count("validated before with the same settings") == 2 and "validated, wrote" not in err2
    assert all(os.stat(p).st_mtime_ns == t for p, t in stamps.items())
    assert out2 == out                                                    # the figures, read back
    from tutorduel.validate_seeds import SETTINGS_ATTR, _finished
    import arviz as az
    text = az.from_netcdf(str(done[0])).posterior.attrs[SETTINGS_ATTR]
    assert _finished(done[0], text) and not _finished(done[0], text.replace('"draws": 60', '"draws": 70'))
    # A file read back must be its seed's, made on its click log: seed 0's files under seed 1's names were
    # reported as seed 1's validation.
    texts = {p: az.from_netcdf(str(p)).posterior.attrs[SETTINGS_ATTR] for p in done}
    mine = {json.loads(t)["seed"]: (p, t) for p, t in texts.items()}
    assert sorted(mine) == [0, 1] and all(len(json.loads(t)["click_log_sha256"]) == 64 for t in texts.values())
    (p0, t0), (p1, t1) = mine[0], mine[1]
    assert _finished(p1, t1)
    shutil.copyfile(p0, p1)
    assert not _finished(p1, t1)
    assert not _finished(p0, t0.replace(json.loads(t0)["click_log_sha256"], "0" * 64))     # another log
    done[0].write_bytes(b"not netCDF")                                    # damaged: computed again
    assert not _finished(done[0], text)


def test_seeds_refuse_what_runs_one_seed_at_a_time(env_dirs, capsys):
    assert main(["validate", *SMALL, "--seeds", "0-1", "--holdout", "2", "--population-reference"]) == 2
    assert "--population-reference runs one seed at a time" in capsys.readouterr().err
    assert main(["validate", *SMALL, "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "give --seeds as well" in capsys.readouterr().err
    assert main(["validate", *SMALL, "--seeds", "0-99"]) == 2
    assert "at most 64" in capsys.readouterr().err
    too_many = [a if a != "2" else "9" for a in SMALL]              # --users 9 of a 4-arrival run
    assert main(["validate", *too_many, "--seeds", "0-1", "--jobs", "2"]) == 2   # named here, before any worker
    err = capsys.readouterr().err
    assert "--users 9" in err and err.count("\n") <= 4 and not _files(env_dirs, "validate")


def test_a_reference_over_its_memory_bound_is_refused_before_sampling(env_dirs, capsys):
    assert main(["fit", "--world", "dev", "--policy", "coduel", "--arrivals", "4", "--max-memory", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "over --max-memory 0.5 GiB" in err and "for a chunk of units" in err
    assert not _files(env_dirs, "users")
    assert main(["validate", *SMALL, "--max-memory", "0.5"]) == 2
    assert "over --max-memory" in capsys.readouterr().err and not _files(env_dirs, "validate")


@pytest.mark.slow
def test_seeds_on_dask_give_the_local_figures(env_dirs, capsys, tmp_path):
    assert main(["validate", *SMALL, "--seeds", "0-1", "--jobs", "2"]) == 0
    local = capsys.readouterr().out
    os.environ["TUTORDUEL_STORE"] = str(tmp_path / "dask-runs")
    assert main(["validate", *SMALL, "--seeds", "0-1", "--dask-workers", "2"]) == 0
    assert capsys.readouterr().out == local
    import arviz as az
    a = az.from_netcdf(_files(env_dirs / "runs", "users")[0]).posterior.theta.values
    b = az.from_netcdf(_files(tmp_path / "dask-runs", "users")[0]).posterior.theta.values
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kw, words", [({"dask_workers": 0}, "dask_workers must be a positive integer"),
                                       ({"dask_workers": True}, "dask_workers must be a positive integer"),
                                       ({"dask_workers": 2, "scheduler": "tcp://127.0.0.1:8786"}, "not both"),
                                       ({"scheduler": "nowhere"}, "cannot be read as an address|scheme")])
def test_validate_seeds_from_python_refuses_a_dask_option_that_cannot_work(env_dirs, kw, words):
    """dask_workers=0 had started a cluster of no workers and waited for it forever."""
    from online.store import RunStore
    from tdmodels.errors import InputError
    from tdmodels.rosters import open_world
    from tutorduel.validate_seeds import validate_seeds

    settings = {"users": 2, "chains": 2, "warmup": 10, "draws": 10, "check_seed": 0, "rounds": (4,),
                "holdout": 0, "beliefs": (), "chunk": 8}
    with pytest.raises(InputError, match=words):
        validate_seeds(open_world("dev"), [0], "coduel", RunStore(env_dirs / "runs"), arrivals=4, **kw, **settings)
    assert not (env_dirs / "runs").exists() or not list((env_dirs / "runs").rglob("*.json"))
