"""Calibrate two of the simulator's parameters to the published world-level rows, then check the fit with
the simulator itself.

    python examples/calibrate_simulator.py [--simulations 24] [--wave-size 8] [--jobs 2]

A small version of `tutorduel worlds calibrate`: student scale and the shared Socratic offset (the others
at sim-1's values), a Sobol design, a Gaussian-process emulator of the 13 published rows, NUTS on the
emulated posterior, one wave of simulations at posterior draws (the posterior predictive check). Prints
the posterior summary (ArviZ), each figure against its target, and whether the chains are healthy.
Builds the held-out rosters' worlds to read their world-level rows only: no policy runs.
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse
import tempfile

from inference.nuts import configure_jax


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--simulations", type=int, default=24)
    ap.add_argument("--wave-size", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    configure_jax()
    import arviz as az

    from diagnostics.calibration_report import figure_table, format_figure_table, format_parameter_table, parameter_table
    from tutorduel.calibrate import Prior, observed_figures, run_calibration

    fitted = (Prior("student_scale", 1.5, 5.0), Prior("offset_socratic", -1.5, 1.5))
    with tempfile.TemporaryDirectory() as out:
        spec = run_calibration(out, observed_figures(None), simulations=a.simulations, waves=1,
                               wave_size=a.wave_size, jobs=a.jobs, chains=2, draws=300, fitted=fitted)
        idata = az.from_netcdf(f"{out}/posterior.nc")
        print(az.summary(idata, var_names=[p.name for p in fitted]))
        print(format_parameter_table(parameter_table(idata)))
        print(format_figure_table(figure_table(idata)))
        print(f"generator of worlds built from it: {spec['generator']}")


if __name__ == "__main__":
    main()
