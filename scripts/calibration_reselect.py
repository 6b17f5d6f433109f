"""Choose the calibrated rosters' draw again from a stored calibration, as `tutorduel worlds calibrate` does last.

    python scripts/calibration_reselect.py [calibration] [--worlds DIR] [--jobs 2]

Reads FOLDER/posterior.nc (its posterior and every simulation), re-simulates the last wave's best draws on
schedule seeds 0-15 (``tutorduel.calibrate.choose_draw``) and rewrites posterior.nc's calibrated figures,
simulator.json and report.html: the command's final step without its 40 minutes of simulations. --worlds:
where the imported sample is (its statistics are among the figures).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace


def main():
    from inference.nuts import configure_jax

    configure_jax()
    import arviz as az
    import numpy as np

    from tdmodels.rosters import open_world, world_file
    from tutorduel.calibrate import FITTED, finish, observed_figures

    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?", default="calibration")
    ap.add_argument("--worlds")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    out = Path(a.folder)
    idata = az.from_netcdf(out / "posterior.nc")
    idata.load()
    sims = idata.simulations
    sample = open_world("sample", directory=a.worlds) if world_file("sample", a.worlds).exists() else None
    data = observed_figures(sample)
    if data.names != tuple(str(x) for x in sims["figure"].values) or not np.allclose(
            data.values, idata.observed_data["statistics"].values):
        raise SystemExit(f"{out / 'posterior.nc'} was fitted to other figures than these (import the same sample)")
    fitted = tuple(p for p in FITTED if p.name in set(map(str, idata.constant_data["parameter"].values)))
    result = SimpleNamespace(idata=az.InferenceData(posterior=idata.posterior, sample_stats=idata.sample_stats),
                             emulator=SimpleNamespace(error_sd=idata.constant_data["emulator_error"].values),
                             thetas=sims["theta"].values, statistics=sims["statistics"].values, wave=sims["wave"].values)
    import json

    before = json.loads((out / "simulator.json").read_text())
    spec = finish(out, result, data, fitted, emulator=before.get("emulator", "gp"), seed=int(before.get("seed", 0)),
                  jobs=a.jobs)
    print(f"wrote {out / 'simulator.json'} (generator {spec['generator']}), posterior.nc and report.html")


if __name__ == "__main__":
    main()
