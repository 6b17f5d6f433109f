"""A worlds folder with a simulator.json generates its rosters from it and never mixes generators."""
import json

import pytest

from tdmodels.rosters import SIMULATOR_FILE, folder_params, open_world, read_simulator_file
from tdmodels.simulator import build_roster
from tdmodels.simulator_params import DEFAULT_PARAMS, SIM2_PARAMS, generator_version
from tdmodels.world import WorldFormatError, save_world

CALIBRATED = SIM2_PARAMS._replace(student_scale=2.5, offset_socratic=0.4)   # sim-2's eight dev rows: fast builds


def _write(folder, params=CALIBRATED, **extra):
    folder.mkdir(parents=True, exist_ok=True)
    spec = {"generator": generator_version(params), "params": dict(params._asdict()), **extra}
    (folder / SIMULATOR_FILE).write_text(json.dumps(spec))
    return folder / SIMULATOR_FILE


def test_a_folder_builds_its_rosters_from_its_simulator_file(tmp_path):
    _write(tmp_path / "cal")
    w = open_world("dev", directory=tmp_path / "cal")
    assert w.attrs["generator"] == generator_version(CALIBRATED) != "sim-3"
    assert w.attrs["generator"].startswith("sim-2+")
    assert json.loads(w.attrs["simulator_params"])["student_scale"] == 2.5
    assert open_world("dev", directory=tmp_path / "cal").attrs["generator"] == w.attrs["generator"]   # read back
    assert folder_params(tmp_path / "other") == DEFAULT_PARAMS


def test_a_roster_file_of_another_generator_is_refused(tmp_path, dev_world):
    folder = tmp_path / "cal"
    folder.mkdir()
    save_world(dev_world, folder / "dev.nc")            # a default dev where calibrated worlds live
    _write(folder)
    with pytest.raises(WorldFormatError, match="generator 'sim-3'.*remove it"):
        open_world("dev", directory=folder)
    plain = tmp_path / "plain"
    plain.mkdir()
    save_world(build_roster("dev", params=CALIBRATED), plain / "dev.nc")   # a calibrated dev in a default folder
    with pytest.raises(WorldFormatError, match="generates 'sim-3'"):
        open_world("dev", directory=plain)


@pytest.mark.parametrize("content, match", [
    ("{not json", "JSONDecodeError"),
    ('{"generator": "sim-2"}', "KeyError"),
    ('{"params": {"student_scale": "big"}}', "student_scale"),
    ('{"params": {"student_scael": 2.0}}', "unknown parameter.*student_scael"),
    ('{"params": {"judge_noise": NaN}}', "judge_noise"),
    ('{"params": {"judge_noise": 0.9}, "generator": "sim-2"}', "edited by hand"),
    ('{"params": {"answer_noise": 1e308}}', "answer_noise must lie within"),    # had broken the build inside
    ('{"params": {"offset_coach": -2e6}}', "offset_coach must lie within"),
    ('[1, 2]', "TypeError"),
])
def test_a_bad_simulator_file_is_refused_naming_the_file(tmp_path, content, match):
    f = tmp_path / SIMULATOR_FILE
    f.write_text(content)
    with pytest.raises(WorldFormatError, match=match) as exc:
        read_simulator_file(f)
    assert str(f) in str(exc.value)


def test_a_simulator_file_whose_build_fails_is_not_left_in_the_folder(tmp_path, monkeypatch, capsys):
    """The file had been copied in before the first build, so every later command in the folder failed."""
    import tutorduel.world_commands as wc

    src = _write(tmp_path / "src")
    folder = tmp_path / "worlds"

    real = wc.open_world

    def second_fails(name, **kwargs):      # the first roster builds, the second fails (as a Ctrl-C would)
        if name != "dev":
            raise ValueError("a build that fails")
        return real(name, **kwargs)

    monkeypatch.setattr(wc, "open_world", second_fails)
    with pytest.raises(ValueError, match="a build that fails"):
        wc.build_worlds(["dev", "scrambled"], simulator=str(src), directory=folder)
    assert not (folder / SIMULATOR_FILE).exists() and not (folder / "dev.nc").exists()
    monkeypatch.setattr(wc, "open_world", real)
    assert real("dev", directory=folder).attrs["generator"] == "sim-3"        # the folder works as before


def test_a_folder_builds_a_named_earlier_generator(tmp_path, capsys):
    """Old generators stay buildable by name: a folder told --generator sim-2 builds sim-2's published dev."""
    from tdmodels.roster_digests import published_digest
    from tdmodels.world import load_world, world_digest
    from tutorduel.cli import main

    folder = tmp_path / "old"
    assert main(["worlds", "build", "dev", "--generator", "sim-2", "--worlds", str(folder)]) == 0
    assert world_digest(load_world(folder / "dev.nc")) == published_digest("sim-2", "dev")
    assert main(["worlds", "build", "dev", "--generator", "sim-3", "--worlds", str(folder)]) == 2
    assert "--generator sim-3" in capsys.readouterr().err
    assert main(["worlds", "build", "dev", "--generator", "sim-2", "--simulator", "x.json", "--worlds", str(folder)]) == 2
