"""The calibration use case end to end on the real simulator, with two fitted parameters (small and quick)."""
import json

import arviz as az
import numpy as np
import pytest

from diagnostics.calibration_report import figure_table, parameter_table
from tdmodels.rosters import read_simulator_file
from tdmodels.simulator_params import generator_version
from tutorduel.calibrate import CONFIRM_SEEDS, FITTED, Prior, Simulator, observed_figures, params_of, run_calibration

TWO = (Prior("student_scale", 2.0, 4.0), Prior("offset_socratic", -1.0, 1.0))


def test_the_fitted_parameters_are_named_and_identified():
    names = [p.name for p in FITTED]
    assert len(set(names)) == len(names) and "offset_prover" not in names and "template_offset_prover" not in names
    assert params_of([3.0, 0.5], TWO).offset_socratic == 0.5 and params_of([3.0, 0.5], TWO).judge_noise == 0.6


def test_the_data_are_the_published_rows_without_the_sample():
    data = observed_figures(None)
    assert len(data.names) == 13 and not data.sample_keys and np.all(data.sds == 1.5)
    assert dict(zip(data.names, data.values))["quirky: best fixed pair (everyone)"] == 22


@pytest.mark.slow
def test_a_small_calibration_writes_its_posterior_report_and_simulator_file(tmp_path):
    data = observed_figures(None)
    spec = run_calibration(tmp_path, data, simulations=12, waves=1, wave_size=6, jobs=2, chains=2, draws=200,
                           fitted=TWO, log=lambda m: None)
    idata = az.from_netcdf(tmp_path / "posterior.nc")
    assert {"posterior", "observed_data", "posterior_predictive", "constant_data", "simulations"} <= set(idata.groups())
    assert idata.simulations.sizes["simulation"] == 18 and idata.posterior_predictive.sizes["draw"] == 6
    rows = figure_table(idata)
    assert len(rows) == 13 and all(r["ppc_lo"] <= r["ppc_hi"] for r in rows)
    assert [r["parameter"] for r in parameter_table(idata)] == ["student_scale", "offset_socratic"]
    params = read_simulator_file(tmp_path / "simulator.json")
    assert generator_version(params) == spec["generator"] != "sim-2"
    chosen = idata.constant_data["calibrated_theta"].values
    np.testing.assert_allclose([params.student_scale, params.offset_socratic], chosen)
    # the calibrated figures are the simulator's at the chosen parameters on the confirming seeds, not the emulator's
    np.testing.assert_allclose(Simulator(data, TWO, CONFIRM_SEEDS)(chosen), idata.constant_data["calibrated"].values)
    assert int(idata.constant_data.attrs["chosen_simulation"]) in np.flatnonzero(idata.simulations["wave"].values == 1)
    assert "Simulator calibration" in (tmp_path / "report.html").read_text()
    assert not (tmp_path / "simulations.partial.npz").exists()
    assert json.loads((tmp_path / "simulator.json").read_text())["fitted"] == ["student_scale", "offset_socratic"]


def test_the_committed_calibration_builds_worlds_of_its_own_generator(tmp_path):
    """calibration/ holds what `tutorduel worlds calibrate --allow-test` wrote; its simulator file is what
    the calibrated rosters are generated from, and its report can be rebuilt from posterior.nc alone."""
    from pathlib import Path

    from diagnostics.calibration_report import write_calibration_report
    from tdmodels.rosters import SIMULATOR_FILE, open_world

    here = Path(__file__).resolve().parents[1] / "calibration"
    params = read_simulator_file(here / SIMULATOR_FILE)
    folder = tmp_path / "calibrated"
    folder.mkdir()
    (folder / SIMULATOR_FILE).write_text((here / SIMULATOR_FILE).read_text())
    world = open_world("dev", directory=folder)
    assert world.attrs["generator"] == generator_version(params) != "sim-2"
    idata = az.from_netcdf(here / "posterior.nc")
    np.testing.assert_allclose(idata.constant_data["calibrated_theta"].values,
                               [getattr(params, str(n)) for n in idata.constant_data["parameter"].values])
    assert "Figures against their targets" in write_calibration_report(idata, tmp_path / "r.html").read_text()


def test_kept_simulations_that_are_a_pipe_or_damaged_are_refused_or_ignored(tmp_path):
    """A FIFO at simulations.partial.npz had blocked the calibration's start; a damaged zip had been a
    traceback (zipfile.BadZipFile)."""
    import os

    import numpy as np

    from tdmodels.errors import InputError
    from tutorduel.calibrate import _resume

    fifo = tmp_path / "simulations.partial.npz"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="cannot be read there"):
        _resume(fifo, np.zeros((2, 3)), None)
    damaged = tmp_path / "simulations.npz"
    damaged.write_bytes(b"PK\x03\x04 not a zip at all")
    assert _resume(damaged, np.zeros((2, 3)), None) is None


def test_a_damaged_world_file_in_the_worlds_folder_is_named_by_export(tmp_path):
    from tdmodels.world import WorldFormatError
    from tutorduel.store_commands import _held_out

    bad = tmp_path / "mine.nc"
    bad.write_bytes(b"\x89HDF\r\n\x1a\n damaged")
    with pytest.raises(WorldFormatError, match="cannot be read"):
        _held_out(bad)
