"""`tutorduel worlds calibrate` and `worlds build --simulator`: refusals and the folder rule."""
import json

import pytest

from tdmodels.simulator import build_roster
from tdmodels.simulator_params import SIM2_PARAMS as DEFAULT_PARAMS, generator_version
from tdmodels.world import load_world, save_world
from tests.test_cli_inputs import _fails_with
from tutorduel.cli import main

CALIBRATED = DEFAULT_PARAMS._replace(student_scale=2.5)      # a variant of sim-2's (eight dev rows: a fast build)


def _simulator_file(path, params=CALIBRATED):
    path.write_text(json.dumps({"generator": generator_version(params), "params": dict(params._asdict())}))
    return path


def test_calibrate_needs_allow_test(env_dirs, capsys):
    _fails_with(capsys, ["worlds", "calibrate", "--out", str(env_dirs / "cal")], "pass --allow-test")
    assert not (env_dirs / "cal").exists()


def test_build_from_a_simulator_file_makes_a_folder_of_its_generator(env_dirs, capsys):
    f = _simulator_file(env_dirs / "sim.json")
    folder = env_dirs / "calworlds"
    assert main(["worlds", "build", "dev", "--simulator", str(f), "--worlds", str(folder)]) == 0
    assert load_world(folder / "dev.nc").attrs["generator"] == generator_version(CALIBRATED)
    capsys.readouterr()
    assert main(["worlds", "build", "dev", "dev", "--simulator", str(f), "--worlds", str(folder)]) == 0   # again
    assert capsys.readouterr().out.count("dev.nc") == 1          # a roster named twice is built once
    other = _simulator_file(env_dirs / "other.json", DEFAULT_PARAMS._replace(student_scale=3.5))
    _fails_with(capsys, ["worlds", "build", "--simulator", str(other), "--worlds", str(folder)], "already generates")


def test_build_from_a_simulator_file_into_a_folder_of_sim1_worlds_is_refused(env_dirs, capsys, dev_world):
    folder = env_dirs / "worlds"
    folder.mkdir()
    save_world(dev_world, folder / "dev.nc")
    f = _simulator_file(env_dirs / "sim.json")
    _fails_with(capsys, ["worlds", "build", "--simulator", str(f)], "holds dev.nc of generator 'sim-3'")
    assert not (folder / "simulator.json").exists()


def test_a_bad_simulator_file_is_one_clear_error(env_dirs, capsys):
    bad = env_dirs / "bad.json"
    bad.write_text('{"params": {"judge_noise": -1}}')
    _fails_with(capsys, ["worlds", "build", "dev", "--simulator", str(bad), "--worlds", str(env_dirs / "w")],
                "judge_noise must be >= 0")
    _fails_with(capsys, ["worlds", "build", "dev", "--simulator", str(env_dirs / "missing.json"),
                         "--worlds", str(env_dirs / "w")], "missing.json")


def test_calibrate_settings_that_cannot_work_are_refused_before_any_simulation(env_dirs, capsys):
    base = ["worlds", "calibrate", "--allow-test", "--out", str(env_dirs / "cal")]
    _fails_with(capsys, base + ["--simulations", "5"], "needs at least 57")
    _fails_with(capsys, base + ["--simulations", "100", "--emulator", "quadratic"], "needs at least 195")
    _fails_with(capsys, base + ["--wave-size", "5000"], "more than the posterior's 4 x 500 draws")
    (env_dirs / "afile").write_text("")
    with pytest.raises(SystemExit) as exc:                   # refused while the arguments are parsed
        main(["worlds", "calibrate", "--allow-test", "--out", str(env_dirs / "afile")])
    assert exc.value.code == 2 and "is a file" in capsys.readouterr().err
    assert not (env_dirs / "cal").exists()


def test_the_leaderboard_calibration_needs_its_data_and_refuses_before_any_simulation(env_dirs, capsys, sample_path,
                                                                                     curves_path):
    _fails_with(capsys, ["worlds", "calibrate", "--leaderboard", "--out", str(env_dirs / "c")], "pass --allow-test")
    _fails_with(capsys, ["worlds", "calibrate", "--leaderboard", "--allow-test", "--out", str(env_dirs / "c")],
                "import-sample")
    assert main(["worlds", "import-sample", str(sample_path), "--resamples", "0"]) == 0
    _fails_with(capsys, ["worlds", "calibrate", "--leaderboard", "--allow-test", "--out", str(env_dirs / "c")],
                "import-curves")
    _fails_with(capsys, ["worlds", "calibrate", "--check", "sim-3", "--allow-test"], "--leaderboard")
    assert main(["worlds", "import-curves", str(curves_path)]) == 0
    _fails_with(capsys, ["worlds", "calibrate", "--leaderboard", "--allow-test", "--check", str(env_dirs / "no.json")],
                "no.json")
    assert not (env_dirs / "c").exists()


def test_the_leaderboard_calibrations_figures_are_the_published_ones(sample_path, curves_path):
    from diagnostics.published_curves import load_curves
    from tdmodels.sample import load_sample
    from tutorduel.leaderboard_calibration import FITTED, observed_figures

    data = observed_figures(load_sample(sample_path), load_curves(curves_path), draws=200)
    fig = dict(zip(data.names, data.values))
    assert len(data.names) == len(set(data.names)) == 39 and len(FITTED) == 12
    assert fig["test_profiles: rucb - no-transfer"] == -13 and fig["composite: pooled - no-transfer"] == 4
    assert fig["dev: coduel - no-transfer"] == 22 and fig["composite: best fixed pair per user"] == 66
    assert abs(fig["test_profiles: plateau rucb"] - 5.279) < 5e-4
    assert "quirky: plateau rucb" not in fig                   # quirky's curves are kept out of the fit
    assert abs(fig["sample: share residual"] - 0.255) < 5e-4 and all(data.sds > 0)
