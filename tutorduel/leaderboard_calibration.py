"""`tutorduel worlds calibrate --leaderboard`: sim-3's parameters fitted to the reference's leaderboard.

The world-level calibration (``tutorduel.calibrate``) fits rows no policy affects; the reference's
findings are about policies, so this one runs a probe of the policies whose implementation the
reference pins down on every roster of each simulation and fits what the reference reports of them:

- the gaps to no-transfer of RUCB, Pooled (Thompson pairs) and CODuel on the five rosters (sd 3 points,
  the reference's standard errors of a gap being 1 to 3 points);
- the plateaus of no-transfer, RUCB and Pooled on the held-out profiles and composite (the published
  curves' mean excess per user over arrivals 251-350; sd 0.3);
- the world-level rows: best fixed pair per user on the three held-out-student rosters, the linear oracle
  on all five (sd 1.5), one pair for everyone in hindsight on the held-out topics and dev (sd 2; there,
  unlike on the held-out-student rosters, the published row is above RUCB and can be the hindsight pair);
- the real sample's statistics on test_profiles: the variance shares of ``diagnostics.variance_shares``
  (sd 2 percentage points) and the clip shares and random excess per session (their bootstrap s.e.).

Out of the fit, reported beside it: Meta-TS, HierTS, COLDB, COLDB-LR and CoLSTIM, the quirky roster's
curves, the absolute scores. The engine is ``inference.emulator_calibration`` (a design, a Gaussian-process
emulator of every figure, NUTS, waves at posterior draws); every batch of simulations (the design, each wave)
is kept in simulations.npz when it finishes, and a rerun with the same design reads the design back.
``--check FILE`` prints a simulator's fitted figures on the confirmation seeds beside their targets.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tutorduel.calibrate import Data, Prior, design, nearest_draw, simulate_many
from tdmodels.netcdf_file import inference_data_bytes, save_netcdf
from tdmodels.errors import check_flag

WORLD_SEED = 0
PROBE_SEEDS = (0, 1)
CONFIRM_SEEDS = tuple(range(8))
CANDIDATES = 6
GAP_SD, PLATEAU_SD, ROW_SD, PAIR_SD, SHARE_SD = 3.0, 0.3, 1.5, 2.0, 0.02
PROBE = {"no-transfer": "no-transfer", "rucb": "rucb", "pooled": 'pooled[rule="thompson"]', "coduel": "coduel"}
GAPS = ("rucb", "pooled", "coduel")
PLATEAUS = {"test_profiles": ("no-transfer", "rucb", "pooled"), "composite": ("no-transfer", "rucb", "pooled")}
PAIR_ROWS = ("test_topics", "dev")
SAMPLE_FIGURES = ("P at 0.1 (share)", "P at 0.9 (share)", "random excess / session")

FITTED = (
    Prior("student_scale", 0.8, 3.0), Prior("demand_gain", 1.0, 4.0), Prior("judge_noise", 0.3, 1.3),
    Prior("written_sens_gain", 0.2, 1.5), Prior("template_sens_base", 0.0, 0.8), Prior("quirk_gain", 0.0, 1.5),
    Prior("shared_taste_gain", 0.0, 3.0), Prior("follow_mean", -0.5, 1.0), Prior("follow_sd", 0.0, 1.5),
    Prior("type_sd", 0.0, 1.0), Prior("sample_lean_gain", 0.0, 4.0), Prior("sample_profile_gain", 0.5, 3.0),
)


def params_of(theta, fitted=FITTED):
    """sim-3's parameters (``tdmodels.simulator_params.SIM3_PARAMS``) with the fitted ones at `theta`."""
    from tdmodels.simulator_params import SIM3_PARAMS

    return SIM3_PARAMS._replace(**{p.name: float(v) for p, v in zip(fitted, theta)})


def observed_figures(sample, curves, draws: int = 2000) -> Data:
    """The fitted figures: names, published values and sds (module docstring)."""
    from diagnostics.calibration_targets import PER_USER_PAIR, bootstrap_means, session_statistics
    from diagnostics.leaderboard_report import PUBLISHED_ROSTERS, published
    from diagnostics.variance_shares import variance_shares

    names, values, sds = [], [], []

    def add(name, value, sd):
        names.append(name)
        values.append(float(value))
        sds.append(float(sd))
    for r in PUBLISHED_ROSTERS:
        for m in GAPS:
            add(f"{r}: {m} - no-transfer", published(m, r) - published("no-transfer", r), GAP_SD)
    for r, methods in PLATEAUS.items():
        for m in methods:
            add(f"{r}: plateau {m}", curves[r][m].plateau, PLATEAU_SD)
    for r in PUBLISHED_ROSTERS:
        if r in PER_USER_PAIR:
            add(f"{r}: best fixed pair per user", PER_USER_PAIR[r], ROW_SD)
        add(f"{r}: per-user linear oracle", published("per-user linear oracle", r), ROW_SD)
    for r in PAIR_ROWS:
        add(f"{r}: best fixed pair (everyone)", published("best fixed pair (everyone, hindsight)", r), PAIR_SD)
    for part, share in variance_shares(sample).items():
        add(f"sample: share {part}", share, SHARE_SD)
    boot = bootstrap_means(session_statistics(sample), draws)
    for k in SAMPLE_FIGURES:
        mean, lo, hi = boot[k]
        add(f"sample: {k}", mean, (hi - lo) / (2 * 1.96))
    return Data(tuple(names), np.array(values), np.array(sds), SAMPLE_FIGURES)


def roster_figures(roster: str, params, seeds) -> dict[str, float]:
    """Every figure of one roster built from `params`: the probe's scores and plateaus, the world-level rows,
    and on test_profiles the sample's statistics (variance shares over the first 48 arrivals of each seed)."""
    from diagnostics.calibration_targets import session_statistics
    from diagnostics.learning_curves import per_user_excess
    from diagnostics.published_curves import our_plateau
    from diagnostics.stats import reference_table
    from diagnostics.variance_shares import variance_shares
    from online.replay import replay
    from tdmodels.simulator import build_roster

    world = build_roster(roster, WORLD_SEED, params)
    out = {}
    refs = reference_table(world, list(seeds))
    for key, label in (("best-fixed-pair", "best fixed pair per user"), ("linear-oracle", "per-user linear oracle"),
                       ("best-pair-everyone", "best fixed pair (everyone)")):
        out[f"{roster}: {label}"] = float(np.mean([v["score"] for v in refs[key].values()]))
    scores = {}
    for name, spec in PROBE.items():
        rows = [replay(world, s, spec) for s in seeds]
        scores[name] = float(np.mean([r["score"] for r in rows]))
        out[f"{roster}: {name}"] = scores[name]
        out[f"{roster}: plateau {name}"] = our_plateau(np.stack([per_user_excess(r) for r in rows]))
    for m in GAPS:
        out[f"{roster}: {m} - no-transfer"] = scores[m] - scores["no-transfer"]
    if roster == "test_profiles":
        shares = [variance_shares(world, s, 48) for s in seeds]
        for part in shares[0]:
            out[f"sample: share {part}"] = float(np.mean([v[part] for v in shares]))
        mine = session_statistics(world, seed=seeds[0])
        out.update({f"sample: {k}": float(mine[k].mean()) for k in SAMPLE_FIGURES})
    return out


class ProbeSimulator:
    """theta [d] -> the figures named (picklable, for worker processes); `report` adds the probe's figures that
    are not fitted (absolute scores, quirky's plateaus)."""

    def __init__(self, names, fitted=FITTED, seeds=PROBE_SEEDS):
        self.names, self.fitted, self.seeds = tuple(names), tuple(fitted), tuple(seeds)

    def figures(self, theta) -> dict[str, float]:
        from diagnostics.leaderboard_report import PUBLISHED_ROSTERS

        params = params_of(theta, self.fitted)
        out = {}
        for r in PUBLISHED_ROSTERS:
            out.update(roster_figures(r, params, self.seeds))
        return out

    def __call__(self, theta) -> np.ndarray:
        got = self.figures(theta)
        return np.array([np.nan if got.get(n) is None else got[n] for n in self.names])


class Fit(NamedTuple):
    """The chosen parameters and their figures on the confirmation seeds."""
    theta: np.ndarray
    figures: dict


def choose(result, data: Data, fitted=FITTED, jobs: int = 2) -> tuple[int, np.ndarray]:
    """The rosters' draw: the last wave's `CANDIDATES` best draws re-simulated on CONFIRM_SEEDS, the best there
    (most figures inside their 95% intervals, then the least squared standardised error)."""
    last = list(np.flatnonzero(result.wave == result.wave.max()))
    order = []
    while last and len(order) < CANDIDATES:
        order.append(last.pop(nearest_draw(result.statistics[last], data)))
    confirmed = simulate_many(ProbeSimulator(data.names, fitted, CONFIRM_SEEDS), result.thetas[order], jobs)
    best = nearest_draw(confirmed, data)
    return int(order[best]), confirmed[best]


def run(out: Path, data: Data, simulations: int, waves: int, wave_size: int, jobs: int = 2, seed: int = 0,
        chains: int = 4, draws: int = 500, log=print) -> dict:
    """The calibration into `out`: simulations.npz (every simulation: kept as they finish, read back on a rerun),
    posterior.nc and simulator.json (generator sim-3+...; its params are all of SimulatorParams)."""
    from inference.emulator_calibration import calibrate
    from tdmodels.atomic_file import atomic_save
    from tdmodels.simulator_params import generator_version
    from tutorduel.calibrate import _resume

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sim = ProbeSimulator(data.names)
    thetas = design(simulations, FITTED, seed)
    partial = out / "simulations.npz"
    done = _resume(partial, thetas, data)
    log(f"design: {simulations} simulations in {jobs} process(es)" if done is None else
        f"design: {len(thetas)} simulations read back from {partial}")

    def keep(th, Y, wave):
        def write(tmp):
            with open(tmp, "wb") as f:
                np.savez(f, thetas=th, statistics=Y, wave=wave, names=np.array(data.names), values=data.values)
        atomic_save(partial, write)

    result = calibrate(lambda th: simulate_many(sim, th, jobs), [p.name for p in FITTED], [p.lo for p in FITTED],
                       [p.hi for p in FITTED], data.values, data.sds, thetas, waves=waves, wave_size=wave_size,
                       chains=chains, draws=draws, seed=seed, log=log, design_statistics=done, checkpoint=keep)
    chosen, confirmed = choose(result, data, FITTED, jobs)
    params = params_of(result.thetas[chosen])
    save_netcdf(out / "posterior.nc", inference_data_bytes(result.idata))
    spec = {"generator": generator_version(params), "params": {k: float(v) for k, v in params._asdict().items()},
            "fitted": [p.name for p in FITTED], "figures": dict(zip(data.names, map(float, confirmed))),
            "targets": dict(zip(data.names, map(float, data.values))), "sds": dict(zip(data.names, map(float, data.sds))),
            "from": f"tutorduel worlds calibrate --leaderboard: of the last wave's posterior draws, the {CANDIDATES} "
                    f"closest to the targets re-simulated on schedule seeds 0-{len(CONFIRM_SEEDS) - 1}, the closest there",
            "seed": seed, "simulations": int(len(result.thetas))}
    atomic_save(out / "simulator.json", lambda tmp: Path(tmp).write_text(json.dumps(spec, indent=1, sort_keys=True)))
    return spec


def check_figures(params, data: Data, seeds=CONFIRM_SEEDS, jobs: int = 2) -> list[str]:
    """The fitted figures of `params` (a SimulatorParams) on `seeds`, each beside its target, as lines; one
    roster per process."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing as mp

    from diagnostics.leaderboard_report import PUBLISHED_ROSTERS

    with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as ex:
        got = {}
        for part in ex.map(roster_figures, PUBLISHED_ROSTERS, [params] * 5, [tuple(seeds)] * 5):
            got.update(part)
    z = [(got[n] - v) / sd for n, v, sd in zip(data.names, data.values, data.sds)]
    lines = [f"{n}: {got[n]:.3f} (target {v:.3f} ± {sd:.3f}, z {zz:+.1f})"
             for n, v, sd, zz in zip(data.names, data.values, data.sds, z)]
    return lines + [f"{sum(abs(x) <= 1.96 for x in z)} of {len(z)} figures within 1.96 sd of their targets"]


def calibrate_leaderboard(out, directory=None, allow_test=False, simulations: int = 224, waves: int = 2,
                          wave_size: int = 40, jobs: int = 2, seed: int = 0, chains: int = 4, draws: int = 500,
                          bootstrap: int = 2000, check: str | None = None) -> int:
    """`tutorduel worlds calibrate --leaderboard` (module docstring); the real sample and the published curves must
    be imported. With `check` (a simulator file or a named generator), no fit: that simulator's fitted figures
    on CONFIRM_SEEDS beside their targets. JAX must be configured (``inference.nuts.configure_jax``) first."""
    allow_test = check_flag("allow_test", allow_test)
    from diagnostics.published_curves import CURVES_FILE, load_curves
    from tdmodels.errors import InputError
    from tdmodels.rosters import open_world, world_file, worlds_dir

    if not allow_test:
        raise InputError("worlds calibrate --leaderboard runs policies on the held-out rosters of each simulation; "
                         "pass --allow-test to allow it (the fitted figures are the published ones)")
    if not world_file("sample", directory).exists():
        raise InputError("worlds calibrate --leaderboard fits the real sample's statistics: import it first "
                         "(tutorduel worlds import-sample PATH)")
    curves = worlds_dir(directory) / CURVES_FILE
    if not curves.exists():
        raise InputError("worlds calibrate --leaderboard fits the published curves' plateaus: import them first "
                         "(tutorduel worlds import-curves PATH)")
    data = observed_figures(open_world("sample", directory=directory), load_curves(curves), bootstrap)
    if check is not None:
        from tdmodels.rosters import read_simulator_file
        from tdmodels.simulator_params import BASES

        params = BASES[check] if check in BASES else read_simulator_file(check)
        print("\n".join(check_figures(params, data, CONFIRM_SEEDS, jobs)))
        return 0
    spec = run(Path(out), data, simulations, waves, wave_size, jobs, seed, chains, draws)
    print("\n".join(f"{n}: {spec['figures'][n]:.3f} (target {spec['targets'][n]:.3f} ± {spec['sds'][n]:.3f})"
                    for n in data.names))
    print(f"\nwrote {Path(out) / 'simulator.json'} (generator {spec['generator']})")
    return 0


__all__ = ["FITTED", "observed_figures", "ProbeSimulator", "params_of", "run", "check_figures", "calibrate_leaderboard"]
