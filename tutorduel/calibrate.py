"""`tutorduel worlds calibrate`: the simulator's free parameters fitted to the published world-level rows
and the real sample's statistics, by emulator-based Bayesian calibration.

The pieces:

- the data (``observed_figures``): the published rows of ``diagnostics.calibration_targets`` (sd 1.5 points:
  the issue's +-3 band as a 95% interval, which also covers the published integers' rounding) and, when the
  real sample has been imported, its per-session statistics (sd: their bootstrap standard error);
- the simulator (``simulate``): the five published rosters built from one ``SimulatorParams`` at world seed 0
  (the worlds the calibrated rosters then are), their figures on schedule seeds 0-1, the sample's
  statistics on test_profiles' seed-0 schedule. No policy runs: no policy score enters the discrepancy;
- the fit (``inference.emulator_calibration``): a space-filling design of simulations, a Gaussian-process
  emulator of every figure (or a quadratic one), NUTS on the emulator's posterior, then a second wave of simulations at posterior draws
  refitting the emulator where the posterior is, and the posterior predictive check with the simulator
  itself at posterior draws;
- the output: ``posterior.nc`` (ArviZ InferenceData: posterior, observed data, the simulator's posterior
  predictive, every simulation), ``simulator.json`` (the parameters rosters are generated from: of the last
  wave's simulated posterior draws, the one with the most figures inside their intervals, ties broken by
  the squared standardised error; with its generator version)
  and ``report.html`` (every figure against its target with intervals).
"""
from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np

from diagnostics.calibration_targets import BAND
from tdmodels.errors import InputError, check_flag
from tdmodels.simulator_params import SIM2_PARAMS as DEFAULT_PARAMS, SimulatorParams, generator_version
from tdmodels.netcdf_file import inference_data_bytes, save_netcdf

PUBLISHED_SD = BAND / 2         # points: the +-3 band as a 95% interval
WORLD_SEED = 0
SCHEDULE_SEEDS = (0, 1)         # behind the world-level rows while fitting
CONFIRM_SEEDS = tuple(range(16))  # behind them when the rosters' draw is chosen and reported
CANDIDATES = 8                    # last-wave draws re-simulated on CONFIRM_SEEDS


class Prior(NamedTuple):
    """A fitted parameter: its name in SimulatorParams and its uniform prior's bounds."""
    name: str
    lo: float
    hi: float


FITTED = (
    Prior("student_scale", 1.5, 5.0), Prior("demand_gain", 1.0, 4.0), Prior("judge_noise", 0.2, 1.2),
    Prior("quirk_gain", 0.0, 1.5), Prior("template_sens_base", 0.1, 0.8), Prior("taste_gain", 0.5, 2.0),
    Prior("written_sens_gain", 0.5, 2.5), Prior("shared_taste_gain", 0.0, 3.0),
) + tuple(Prior(f"{kind}offset_{p}", -2.0, 2.0) for kind in ("", "template_")
          for p in ("examples", "socratic", "intuition", "concise", "coach"))
# Only differences between personas' logits reach the judge, so each set of offsets is fitted relative to
# Prover's (held at 0): a sixth free offset would be a direction the data cannot see.


def params_of(theta, fitted=FITTED) -> SimulatorParams:
    """The SimulatorParams with the fitted parameters at `theta` [d] and the rest at sim-1's values."""
    return DEFAULT_PARAMS._replace(**{p.name: float(v) for p, v in zip(fitted, theta)})


class Data(NamedTuple):
    """What the calibration fits: a name, an observed value and its sd per figure."""
    names: tuple
    values: np.ndarray
    sds: np.ndarray
    sample_keys: tuple          # which of the sample's session statistics are among the figures


def observed_figures(sample=None, draws: int = 2000) -> Data:
    """The targets: published world-level rows and, given the sample world, its session statistics."""
    from diagnostics.calibration_targets import (bootstrap_means, figure_name, published_rows,
                                                 session_statistics)
    from diagnostics.leaderboard_report import PUBLISHED_ROSTERS

    names, values, sds = [], [], []
    for roster in PUBLISHED_ROSTERS:
        for key, value in published_rows(roster).items():
            names.append(figure_name(roster, key))
            values.append(float(value))
            sds.append(PUBLISHED_SD)
    keys = ()
    if sample is not None:
        boot = bootstrap_means(session_statistics(sample), draws)
        keys = tuple(boot)
        for k in keys:
            mean, lo, hi = boot[k]
            names.append(f"sample: {k}")
            values.append(mean)
            sds.append((hi - lo) / (2 * 1.96))
    return Data(tuple(names), np.array(values), np.array(sds), keys)


class Simulator:
    """theta [d] -> every figure of `data` on the worlds built from it (a picklable callable for workers)."""

    def __init__(self, data: Data, fitted=FITTED, seeds=SCHEDULE_SEEDS):
        self.data, self.fitted, self.seeds = data, tuple(fitted), tuple(seeds)

    def worlds(self, theta) -> dict:
        from diagnostics.leaderboard_report import PUBLISHED_ROSTERS
        from tdmodels.simulator import build_roster

        params = params_of(theta, self.fitted)
        return {r: build_roster(r, WORLD_SEED, params) for r in PUBLISHED_ROSTERS}

    def __call__(self, theta) -> np.ndarray:
        from diagnostics.calibration_targets import SAMPLE_ROSTER, session_statistics, world_targets

        worlds = self.worlds(theta)
        got = {t.figure: t.ours for t in world_targets(worlds, self.seeds)}
        if self.data.sample_keys:
            mine = session_statistics(worlds[SAMPLE_ROSTER], seed=SCHEDULE_SEEDS[0])   # as the sample's: one schedule
            got.update({f"sample: {k}": float(mine[k].mean()) for k in self.data.sample_keys})
        return np.array([got[n] for n in self.data.names])


def simulate_many(sim: Simulator, thetas: np.ndarray, jobs: int = 1) -> np.ndarray:
    """[n, m] figures at each row of `thetas` [n, d], in `jobs` processes."""
    thetas = np.asarray(thetas, float)
    if jobs <= 1:
        return np.stack([sim(t) for t in thetas])
    import multiprocessing as mp

    with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as ex:     # JAX runs threads: never fork
        return np.stack(list(ex.map(sim, thetas, chunksize=max(1, len(thetas) // (8 * jobs)))))


def design(n: int, fitted=FITTED, seed: int = 0) -> np.ndarray:
    """[n, d] a scrambled Sobol design over the fitted parameters' box."""
    import warnings

    from scipy.stats import qmc

    lo = np.array([p.lo for p in fitted])
    hi = np.array([p.hi for p in fitted])
    with warnings.catch_warnings():          # balance is best at powers of 2; any n is a valid design
        warnings.simplefilter("ignore", UserWarning)
        u = qmc.Sobol(len(fitted), scramble=True, seed=seed).random(n)
    return lo + u * (hi - lo)


def nearest_draw(statistics: np.ndarray, data: Data) -> int:
    """Index of the simulation with the most figures inside their targets' 95% intervals (the issue's
    criterion), ties broken by the sum of squared standardised errors (the likelihood's)."""
    z = (statistics - data.values) / data.sds
    inside = np.sum(np.abs(z) <= 1.96, axis=1)
    chi2 = np.sum(z ** 2, axis=1)
    return int(np.lexsort((chi2, -inside))[0])


def to_inference_data(result, data: Data, sim1: np.ndarray, chosen: int, calibrated: np.ndarray, fitted=FITTED):
    """The calibration as ArviZ InferenceData: the posterior over the fitted parameters, the observed
    figures with their sds, the simulator's figures at the last wave's posterior draws (posterior
    predictive), every simulation (group ``simulations``), sim-1's figures and the calibrated draw's (both on
    CONFIRM_SEEDS)."""
    import xarray as xr

    last = result.wave == result.wave.max()
    fig = {"figure": list(data.names)}
    ppc = xr.Dataset({"statistics": (("chain", "draw", "figure"), result.statistics[last][None])},
                     coords={**fig, "chain": [0], "draw": np.arange(last.sum())})
    idata = result.idata.copy()
    for g in ("observed_data", "log_likelihood", "posterior_predictive"):
        if g in idata.groups():
            delattr(idata, g)
    idata.add_groups(
        observed_data=xr.Dataset({"statistics": (("figure",), data.values)}, coords=fig),
        posterior_predictive=ppc,
        constant_data=xr.Dataset({
            "sd": (("figure",), data.sds), "sim1": (("figure",), sim1),
            "calibrated": (("figure",), calibrated),
            "emulator_error": (("figure",), result.emulator.error_sd),
            "prior_lo": (("parameter",), [p.lo for p in fitted]), "prior_hi": (("parameter",), [p.hi for p in fitted]),
            "calibrated_theta": (("parameter",), result.thetas[chosen]),
            "sim1_theta": (("parameter",), [getattr(DEFAULT_PARAMS, p.name) for p in fitted]),
        }, coords={**fig, "parameter": [p.name for p in fitted]}, attrs={"confirm_seeds": list(CONFIRM_SEEDS),
                                                                          "chosen_simulation": int(chosen)}),
        simulations=xr.Dataset({"theta": (("simulation", "parameter"), result.thetas),
                                "statistics": (("simulation", "figure"), result.statistics),
                                "wave": (("simulation",), result.wave)},
                               coords={**fig, "parameter": [p.name for p in fitted]}),
    )
    return idata


MAX_SIMULATIONS_BYTES = 1 << 30     # a design's kept simulations: thousands of rows of tens of figures


def _resume(path: Path, thetas: np.ndarray, data: Data):
    """The design's simulations kept by an interrupted run of the same design and data, else None."""
    import io
    import zipfile

    from tdmodels.file_read import UnreadableFileError, read_regular

    if not os.path.lexists(path):
        return None
    try:                  # a regular file of bounded size only (a FIFO there would block the open)
        data = read_regular(path, MAX_SIMULATIONS_BYTES)
    except UnreadableFileError as exc:
        raise InputError(f"{exc}: the kept simulations cannot be read there; remove it or give another --out") from None
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            th, Y, wave, names, values = z["thetas"], z["statistics"], z["wave"], z["names"], z["values"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    n = len(thetas)
    same = (th.shape[0] >= n and th.shape[1:] == thetas.shape[1:] and np.array_equal(th[:n], thetas)
            and list(names) == list(data.names) and np.array_equal(values, data.values) and np.all(wave[:n] == 0))
    return Y[:n] if same else None


def choose_draw(result, data: Data, fitted=FITTED, jobs: int = 2, candidates: int = CANDIDATES):
    """The rosters' draw: the last wave's `candidates` best draws (most figures inside, then least squared
    standardised error) re-simulated on CONFIRM_SEEDS, the best of them by the same rule there (two schedule
    seeds alone would pick a draw for its seeds' luck). Returns (index into the simulations, its figures)."""
    last = np.flatnonzero(result.wave == result.wave.max())
    order = []
    rest = list(last)
    while rest and len(order) < candidates:
        k = nearest_draw(result.statistics[rest], data)
        order.append(rest.pop(k))
    confirmed = simulate_many(Simulator(data, fitted, CONFIRM_SEEDS), result.thetas[order], jobs)
    best = nearest_draw(confirmed, data)
    return int(order[best]), confirmed[best]


def finish(out: Path, result, data: Data, fitted=FITTED, emulator: str = "gp", seed: int = 0, jobs: int = 2,
           log=print) -> dict:
    """Choose the rosters' draw and write posterior.nc, simulator.json and report.html into `out`."""
    from diagnostics.calibration_report import write_calibration_report
    from tdmodels.atomic_file import atomic_save

    out = Path(out)
    chosen, calibrated = choose_draw(result, data, fitted, jobs)
    sim1 = Simulator(data, fitted, CONFIRM_SEEDS)([getattr(DEFAULT_PARAMS, p.name) for p in fitted])
    log(f"rosters' draw: simulation {chosen} (of the last wave's {CANDIDATES} best, confirmed on {len(CONFIRM_SEEDS)} "
        f"schedule seeds)")
    idata = to_inference_data(result, data, sim1, chosen, calibrated, fitted)
    save_netcdf(out / "posterior.nc", inference_data_bytes(idata))
    params = params_of(result.thetas[chosen], fitted)
    spec = {"generator": generator_version(params), "params": {k: float(v) for k, v in params._asdict().items()},
            "fitted": [p.name for p in fitted], "emulator": emulator,
            "from": f"tutorduel worlds calibrate: of the last wave's posterior draws, the {CANDIDATES} with the most "
                    f"figures inside their targets' intervals (ties: the least squared standardised error) re-simulated "
                    f"on schedule seeds 0-{len(CONFIRM_SEEDS) - 1}, and the best of them there by the same rule",
            "seed": seed, "simulations": int(len(result.thetas))}
    atomic_save(out / "simulator.json", lambda tmp: Path(tmp).write_text(json.dumps(spec, indent=1, sort_keys=True)))
    write_calibration_report(idata, out / "report.html")
    return spec


def run_calibration(out: Path, data: Data, simulations: int = 640, waves: int = 2, wave_size: int = 64,
                    jobs: int = 2, seed: int = 0, chains: int = 4, draws: int = 1000, fitted=FITTED,
                    log=print, emulator: str = "gp") -> dict:
    """The whole calibration into folder `out`: posterior.nc, simulator.json, report.html. Returns simulator.json's
    content."""
    from inference.emulator_calibration import calibrate
    from tdmodels.atomic_file import atomic_save

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sim = Simulator(data, fitted)
    thetas = design(simulations, fitted, seed)
    partial = out / "simulations.partial.npz"
    done = _resume(partial, thetas, data)
    if done is None:
        log(f"design: {simulations} simulations in {jobs} process(es)")
    else:
        log(f"design: {len(thetas)} simulations read back from {partial}")

    def keep(th, Y, wave):
        def write(tmp):
            with open(tmp, "wb") as f:
                np.savez(f, thetas=th, statistics=Y, wave=wave, names=np.array(data.names), values=data.values)
        atomic_save(partial, write)

    result = calibrate(lambda th: simulate_many(sim, th, jobs), [p.name for p in fitted], [p.lo for p in fitted],
                       [p.hi for p in fitted], data.values, data.sds, thetas, waves=waves, wave_size=wave_size,
                       chains=chains, draws=draws, seed=seed, log=log, design_statistics=done, checkpoint=keep,
                       emulator=emulator)
    spec = finish(out, result, data, fitted, emulator=emulator, seed=seed, jobs=jobs, log=log)
    partial.unlink(missing_ok=True)
    return spec


__all__ = ["Prior", "FITTED", "Data", "params_of", "observed_figures", "Simulator", "simulate_many", "design",
           "nearest_draw", "choose_draw", "finish", "to_inference_data", "run_calibration", "CONFIRM_SEEDS"]


def calibrate_and_report(out, directory=None, allow_test=False, simulations: int = 640, waves: int = 2,
                         wave_size: int = 64, jobs: int = 2, seed: int = 0, chains: int = 4, draws: int = 500,
                         emulator: str = "gp", bootstrap: int = 2000) -> int:
    """`tutorduel worlds calibrate`: fit the simulator's parameters to the published rows and the sample, write
    posterior.nc, simulator.json and report.html in `out`, and print the figure table. JAX must be configured
    (``inference.nuts.configure_jax``) before this is called."""
    allow_test = check_flag("allow_test", allow_test)
    import arviz as az

    from diagnostics.calibration_report import figure_table, format_figure_table
    from inference.emulator_calibration import min_simulations
    from tdmodels.rosters import open_world, world_file

    if not allow_test:
        raise InputError("worlds calibrate builds the held-out rosters to compare their world-level figures with the "
                         "published ones (no policy runs); pass --allow-test to allow it")
    need = min_simulations(emulator, len(FITTED))
    if simulations < need:
        raise InputError(f"--simulations {simulations}: the {emulator} emulator of {len(FITTED)} parameters needs at "
                         f"least {need}")
    if wave_size > chains * draws:
        raise InputError(f"--wave-size {wave_size}: more than the posterior's {chains} x {draws} draws")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file, not a folder")
    sample = None
    if world_file("sample", directory).exists():
        sample = open_world("sample", directory=directory)
    else:
        print("note: the real sample is not imported (tutorduel worlds import-sample PATH): fitting the published "
              "rows alone")
    data = observed_figures(sample, bootstrap)
    spec = run_calibration(out, data, simulations=simulations, waves=waves, wave_size=wave_size, jobs=jobs, seed=seed,
                           chains=chains, draws=draws, emulator=emulator)
    print(format_figure_table(figure_table(az.from_netcdf(out / "posterior.nc"))))
    print(f"\nwrote {out / 'posterior.nc'}, {out / 'simulator.json'} (generator {spec['generator']}) and "
          f"{out / 'report.html'}; build the calibrated rosters with: tutorduel worlds build --simulator "
          f"{out / 'simulator.json'} --worlds DIR")
    return 0
