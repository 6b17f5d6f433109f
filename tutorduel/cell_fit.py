"""Fit a model on the clicks of one stored run (world, seed, policy): what `tutorduel fit` does.

The click log comes from the run store when it is there and matches the world version;
otherwise the run is replayed (replays are deterministic) and its row and log stored.
The InferenceData is written beside the row as ``seed-NNNN.<model>.nc``.
"""
from __future__ import annotations

from pathlib import Path

import arviz as az
import numpy as np

from inference.nuts import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_WARMUP
from online.clicklog import ClickLog, ClickLogError, load_click_log, save_click_log
from online.registry import canonical_spec, parse_spec
from online.replay import replay_logged, run_key
from online.store import RunStore
from online.verify import click_log_problem
from tdmodels.atomic_file import check_output_path
from tdmodels.limits import MAX_FIT_ROUNDS, MAX_SEED
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior, isotropic_prior
from tdmodels.world import world_digest
from tutorduel.arg_types import MAX_DRAWS, MAX_JOBS, MAX_MINUTES
from tdmodels.errors import InputError, check_flag
from tdmodels.netcdf_file import inference_data_bytes, save_netcdf

MODELS = ("users", "population", "recalibration")
PRIORS = ("policy", "em")


def cell_click_log(world, seed: int, spec: str, store: RunStore, arrivals: int | None = None,
                   warn=None) -> ClickLog:
    """The click log of a cell: read from the store, else replayed and stored (row too, if missing). A damaged
    log, or one without its row, is moved aside (numbered) and recomputed, and `warn(message)` says so once.

    A stored log must be its row's (``online.verify.click_log_problem``: the same world, seed, policy, code
    and truncation, the row's own pairs and clicks, and the students, questions, feature rows and rater
    scores the world gives); one that is not raises ClickLogError naming both."""
    key = run_key(world, seed, spec, arrivals)
    path = store.clicks_path(key)
    if path.exists():
        try:
            log = load_click_log(path)
        except ClickLogError as exc:     # damaged or written by an older version: kept aside, recomputed
            moved = store.quarantine(path, ".corrupt" if "format version" not in str(exc) else ".old")
            if warn:
                warn(f"warning: {exc}; moved aside to {moved} and recomputed")
        else:
            row = store.get(key)
            if row is None:              # a log whose row was never written: kept aside, recomputed
                moved = store.quarantine(path, ".orphan")
                if warn:
                    warn(f"warning: click log {path} has no row beside it; moved aside to {moved} and recomputed")
            else:
                problem = click_log_problem(row, log, world)
                records = None if problem else _records_problem(world, row, log)
                if problem or records:
                    how = "tutorduel verify" if problem else "tutorduel verify --replay"
                    raise ClickLogError(f"click log {path}: not the log of the run asked for ({key.policy}, seed "
                                        f"{key.seed}, world {key.world_digest}): {problem or records}; {how} moves "
                                        f"it aside, then this command recomputes it")
                return log
    row, log = replay_logged(world, seed, key.policy, key.arrivals)
    save_click_log(log, path)
    store.put(row)
    return log


def _records_problem(world, row: dict, log: ClickLog) -> str | None:
    """What the policy recorded of itself in `log` (its priors, recalibration, beliefs, predictions) that a
    replay of the row's run on this code does not reproduce, or None. The pairs and clicks are checked
    against the row and world without running anything (``click_log_problem``); the records can only be
    checked by running the policy again, and ``fit`` and ``validate`` read them as the truth. A log that
    records nothing is checked too: what a policy records is the policy's, and a log stripped of its records
    would be fitted under another prior."""
    from online.replay_check import replay_problem

    answer = replay_problem(world, row, log)
    if answer is None:
        return None
    kind, why = answer
    if kind == "skip":
        return f"its row ran on other code, so what the policy recorded cannot be checked here ({why})"
    return why


FIT_RANGES = {"chains": (2, 64), "warmup": (1, MAX_DRAWS), "draws": (1, MAX_DRAWS), "seed": (0, MAX_SEED),
              "thin": (1, 10_000), "jobs": (1, MAX_JOBS), "chunk": (1, 100_000)}


def check_fit_ranges(**settings) -> None:
    """One InputError naming the first of `settings` (names of FIT_RANGES) that is not an integer in its range;
    None stands for the default and passes."""
    for what, v in settings.items():
        lo, hi = FIT_RANGES[what]
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise InputError(f"--{what} {v!r}: must be an integer in [{lo:,}, {hi:,}]")


def check_users(users: int | None, n: int) -> None:
    """A `--users` count: None (all) or 1..n."""
    if users is None:
        return
    if isinstance(users, bool) or not isinstance(users, int) or not 1 <= users <= n:
        raise InputError(f"--users {users!r}: give a number of users in 1..{n} (the run has {n} arrivals)")


def policy_prior(spec: str, d: int) -> MixturePrior:
    """The prior a policy holds for a new user: its own isotropic prior for the no-transfer learner,
    N(0, 4 I) (the no-transfer default) for policies without one."""
    _, settings = parse_spec(canonical_spec(spec))
    return isotropic_prior(d, float(settings.get("prior_var", DEFAULT_PRIOR_VAR)))


def chain_map(jobs: int):
    """A map over sampler chains: in `jobs` worker processes of the project's pool (here when 1)."""
    from online.process_pool import map_in_workers

    return lambda fn, items: map_in_workers(fn, items, jobs)


def fit_cell(world, seed: int, spec: str, model: str, store: RunStore, prior: str = "policy",
             arrivals: int | None = None, chains: int = DEFAULT_CHAINS, warmup: int | None = None,
             draws: int | None = None, strict: bool = False, out: str | Path | None = None,
             users: int | None = None, sampler: str = "gibbs", thin: int = 1,
             jobs: int = 1, max_minutes: float | None = None, progress=None,
             max_rounds: int | None = None, chunk: int | None = None,
             max_memory: float | None = None) -> tuple[az.InferenceData, Path]:
    """Fit `model` on the cell's clicks (the first `users` arrivals if given); write and return the netCDF.

    warmup and draws default to the sampler's own (NUTS: 1000 and 1000; the population model's
    Gibbs sampler, ``inference.population_gibbs``); `sampler`, `thin`, `jobs` (worker processes
    for the chains), `max_minutes` and `max_rounds` apply to the population model: with either budget, the
    Gibbs chains run on in rounds until every label-invariant diagnostic passes or a budget is spent (the
    minutes, or the rounds: a budget that does not depend on the machine's speed); with neither, or
    max_minutes 0, one run of warmup + draws x thin. `chunk` (units sampled together) and `max_memory` (GiB: a
    request whose estimate exceeds it is refused before the sampler) apply to the users model.
    """
    strict = check_flag("strict", strict)
    from inference.mixture_em import fit_mixture_em
    from inference.model_fits import fit_population, fit_recalibration

    if model not in MODELS:
        raise InputError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")
    if prior not in PRIORS:
        raise InputError(f"unknown prior {prior!r}; choose from {', '.join(PRIORS)}")
    check_fit_ranges(chains=chains, warmup=warmup, draws=draws, seed=seed, thin=thin, jobs=jobs)
    if model != "users" and (chunk is not None or max_memory is not None):
        raise InputError("--chunk and --max-memory apply to --model users only")
    if model != "population" and (sampler != "gibbs" or thin != 1):
        raise InputError("--sampler and --thin apply to --model population only")
    if sampler not in ("gibbs", "nuts"):
        raise InputError(f"--sampler {sampler!r}: choose gibbs or nuts")
    if sampler == "nuts" and thin != 1:
        raise InputError(f"--thin {thin}: thinning applies to the Gibbs sampler; NUTS keeps every draw")
    if max_minutes is not None and (isinstance(max_minutes, bool) or not isinstance(max_minutes, (int, float))
                                    or not np.isfinite(max_minutes) or not 0 <= max_minutes <= MAX_MINUTES):
        raise InputError(f"--max-minutes {max_minutes!r}: must be a number in [0, {MAX_MINUTES:g}]")
    if max_rounds is not None and (isinstance(max_rounds, bool) or not isinstance(max_rounds, (int, np.integer))
                                   or not 1 <= max_rounds <= MAX_FIT_ROUNDS):
        raise InputError(f"--max-rounds {max_rounds!r}: must be an integer in [1, {MAX_FIT_ROUNDS:,}]")
    if max_rounds is not None and max_minutes == 0:
        raise InputError("--max-minutes 0 is one fixed run; it takes no --max-rounds")
    path = check_output_path(out) if out else store.fit_path(run_key(world, seed, spec, arrivals), model)
    check_output_path(path)     # before the sampler runs, not after (the name as given: 'f.nc/.' is a folder)
    log = cell_click_log(world, seed, spec, store, arrivals, warn=progress)
    check_users(users, log.n_users)
    sl = slice(None, users)
    z, y = log.recalibrated_design(sl)     # the design the policy's learner used (A as recorded)
    d = z.shape[-1]
    nuts_default = {"warmup": DEFAULT_WARMUP, "draws": DEFAULT_DRAWS}
    opts = dict(seed=seed, chains=chains, strict=strict,
                warmup=warmup if warmup is not None or model == "population" else nuts_default["warmup"],
                draws=draws if draws is not None or model == "population" else nuts_default["draws"])
    if prior == "em":
        pr = fit_mixture_em(z, y, seed=seed).prior
    elif log.priors is not None:     # the policy recorded the prior each user arrived under
        pr = MixturePrior(*(a[sl] for a in log.priors))
    else:
        pr = policy_prior(spec, d)
    if model == "users":
        idata = _users_reference(z, y, pr, chunk, max_memory, progress, opts)
    elif model == "population":
        gibbs = sampler == "gibbs"                            # NUTS: one run of warmup + draws
        budget = 60.0 * max_minutes if max_minutes and gibbs else None
        idata = fit_population(z, y, sampler=sampler, thin=thin, map_chains=chain_map(jobs), max_seconds=budget,
                               max_rounds=max_rounds if gibbs else None, progress=progress, **opts)
    else:
        if int(world.attrs["rater_available"]) == 0:
            raise InputError(f"world {world.attrs['roster']!r} has no rater scores: nothing to recalibrate")
        idata = fit_recalibration(log.first[sl], log.second[sl], log.rater[sl], y, pr, **opts)
    idata.posterior.attrs.update({"world": str(world.attrs["roster"]), "world_digest": world_digest(world),
                                  "seed": int(seed), "policy": canonical_spec(spec), "model": model, "prior": prior,
                                  "users": int(z.shape[0])})
    return idata, save_netcdf(path, inference_data_bytes(idata))


def _users_reference(z, y, prior: MixturePrior, chunk: int | None, max_memory: float | None, progress, opts: dict):
    """The users model: the memory estimate checked, then ``inference.user_reference.fit_users``."""
    from inference.user_reference import DEFAULT_CHUNK, fit_users

    chunk = DEFAULT_CHUNK if chunk is None else chunk
    check_users_memory(z.shape[0], prior.weights.shape[-1], opts["chains"], opts["draws"], chunk, max_memory,
                       z.shape[1], z.shape[2])
    return fit_users(z, y, prior, chunk=chunk, progress=unit_progress(progress), **opts)


def check_users_memory(users: int, components: int, chains: int, draws: int, chunk: int, max_memory: float | None,
                       rounds: int = 24, dim: int = 7, validate: bool = False) -> None:
    """Refuse, before the sampler, a per-user reference whose memory estimate exceeds `max_memory` GiB or what the
    process has available (``inference.memory_estimate``)."""
    from inference.memory_estimate import check_reference_memory, reference_memory
    from tdmodels.memory import memory_available

    check_fit_ranges(chains=chains, draws=draws, chunk=chunk)
    est = reference_memory(users, components, chains, draws, chunk, rounds, dim, validate=validate)
    check_reference_memory(est, max_memory, memory_available())


def unit_progress(say, every: float = 10.0):
    """A `fit_users` progress callback (units done, units in all) that says, through `say`, the units done and an
    estimate of the time left, at most every `every` seconds and at the end; None when `say` is None."""
    if say is None:
        return None
    import time

    t0, last = time.perf_counter(), [0.0]

    def done(k: int, n: int) -> None:
        now = time.perf_counter() - t0
        if k < n and now - last[0] < every:
            return
        last[0] = now
        left = now / k * (n - k) if k else float("nan")
        say(f"reference: {k:,} of {n:,} units, {now:.0f} s" + (f", about {left:.0f} s left" if k < n else " in all"))

    return done


def fit_summary(idata: az.InferenceData, model: str, n: int = 3):
    """A readable ArviZ summary: the first `n` users' theta (mixture draws), and the model's shared parameters."""
    from inference.user_reference import user_draws

    if model == "users":
        th = user_draws(idata).isel(user=slice(0, n))
        return az.summary(az.convert_to_inference_data(th.to_dataset(name="theta")), kind="all", round_to=3)
    names = {"population": ["weights_sorted"], "recalibration": ["a", "A"]}[model]
    post = idata.posterior
    sub = post[names + ["theta"]].isel(user=slice(0, n))
    if model == "population":
        sub = sub.isel(rank=slice(0, 6))
    return az.summary(sub, kind="all", round_to=3)
