"""What `tutorduel validate` does for one run (world, seed, policy): each user's online belief at
session end against the NUTS reference posterior on the same clicks under the same prior.

The click log (with the priors users arrived under, the recalibration their clicks were read
with and the online beliefs) comes from the store or a deterministic replay; the reference is
``inference.user_reference.fit_users`` through ``tutorduel.cell_fit.fit_cell`` (written as
``seed-NNNN.users.nc``); the checks are ``diagnostics.posterior_checks``. Output, beside the
row: ``seed-NNNN.validate.nc``, an InferenceData with the NUTS mixture draws as `posterior`,
draws of the online belief in group `online`, and the per-user figures in group `checks`
(with the online and the exact posterior component weights and their total variation
distance), and the reliability of each learner's click predictions in group `reliability`.
"""
from __future__ import annotations

from pathlib import Path

import arviz as az
import numpy as np
import xarray as xr

from diagnostics.click_reliability import reliability, reliability_table
from diagnostics.posterior_checks import (PosteriorCheck, UserChecks, beliefs_at_round, btl_log_posterior,
                                          check_logged_users, check_posterior, exact_component_weights,
                                          sample_mixture, weights_distance)
from tutorduel.cell_fit import (cell_click_log, check_fit_ranges, check_users, check_users_memory, fit_cell,
                                unit_progress)
from inference.health import stored_health
from inference.nuts import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_WARMUP
from inference.user_reference import DEFAULT_CHUNK
from tdmodels.atomic_file import check_output_path
from tdmodels.priors import MixturePrior
from online.registry import canonical_spec
from online.replay import run_key
from online.store import RunStore
from tdmodels.errors import InputError, check_flag
from tdmodels.netcdf_file import inference_data_bytes, save_netcdf


def log_with_beliefs(world, seed, spec, store, arrivals, warn=None):
    """The cell's click log (``tutorduel.cell_fit.cell_click_log``), or InputError when its policy records no
    online beliefs (nothing to validate)."""
    log = cell_click_log(world, seed, spec, store, arrivals, warn)     # older log formats are recomputed there
    if log.beliefs is None:
        raise InputError(f"policy {canonical_spec(spec)!r} does not record its online beliefs; "
                         "validation needs a policy that does (e.g. coduel)")
    return log


def click_reliability(log, bins: int = 10) -> xr.Dataset:
    """Reliability of every recorded learner's click predictions over the whole run, with log loss,
    Brier score and expected calibration error as attributes (``<learner>_log_loss`` ...)."""
    if not log.predictions:
        return xr.Dataset()
    y = log.outcome
    data, attrs = {}, {}
    for name, p in log.predictions.items():
        rel = reliability(p, y, bins)
        for f in ("predicted", "observed", "stderr", "count"):
            data[f"{name}_{f}"] = ("bin", getattr(rel, f))
        attrs.update({f"{name}_{k}": v for k, v in reliability_table({name: p}, y)[name].items()})
    return xr.Dataset(data, coords={"bin": 0.5 * (rel.edges[1:] + rel.edges[:-1])}, attrs=attrs)


def checks_at_round(log, n_users: int, t: int, chains: int, warmup: int, draws: int, seed: int = 0,
                    chunk: int = DEFAULT_CHUNK) -> UserChecks:
    """The first n_users users' online beliefs after t clicks against NUTS on those t clicks."""
    from inference.user_reference import fit_users, user_draws
    from tdmodels.priors import MixturePrior

    users = np.arange(n_users)
    z, y = log.recalibrated_design(users)
    prior = MixturePrior(*(a[users] for a in log.priors))
    ref = user_draws(fit_users(z[:, :t], y[:, :t], prior, seed=seed, chains=chains, warmup=warmup, draws=draws,
                               chunk=chunk), seed=seed)
    pooled = ref.values.reshape(-1, n_users, ref.sizes["dim"])
    online = beliefs_at_round(log, users, t)
    rng = np.random.default_rng(seed)
    out = [check_posterior(pooled[:, u], *(a[u] for a in online),
                           btl_log_posterior(z[u, :t], y[u, :t], *(a[u] for a in prior)), rng) for u in users]
    return UserChecks(users, *(np.array([getattr(c, f) for c in out]) for f in PosteriorCheck._fields))


def _checks_dataset(checks: UserChecks) -> xr.Dataset:
    dims = ("user", "dim")
    return xr.Dataset({"khat": ("user", checks.khat), "khat_replicates": (("user", "replicate"), checks.khat_replicates),
                       "mean_error": (dims, checks.mean_error),
                       "sd_ratio": (dims, checks.sd_ratio), "w1": (dims, checks.w1),
                       "w1_floor": (dims, checks.w1_floor)},
                      coords={"user": checks.users, "dim": np.arange(checks.mean_error.shape[1])},
                      attrs={k: (str(v) if isinstance(v, tuple) else v) for k, v in checks.summary().items()})


def first_question_features(log, users: np.ndarray) -> np.ndarray:
    """Phi [H, K, d] of each user's first question as the policy read it: the persona indicators and
    the rater column through the recalibration recorded for the arrival."""
    rater = log.rater[users, 0]                                                 # [H, K]
    if log.recalibration is not None:
        rater = np.einsum("hpq,hq->hp", log.recalibration[users], rater)
    K = rater.shape[1]
    return np.concatenate([np.broadcast_to(np.eye(K), (len(users), K, K)), rater[..., None]], -1)


def population_reference_fits(world, seed, spec, store, log, em, holdout, arrivals, chains, warmup, draws, thin=1,
                              jobs: int = 1, check_seed: int = 0, max_minutes: float | None = 30.0,
                              progress=None) -> xr.Dataset:
    """The batch EM fit of the first N - holdout arrivals and the online prior the first held-out arrival
    saw, against the population model's exact reference posterior on the same clicks (the Gibbs
    sampler, written as ``seed-NNNN.population-train.nc``): log density at test points (the held-out
    arrivals' broad-prior Laplace modes), the held-out arrivals' clicks, co-clustering of the training
    arrivals (and the same-student truth), the number of components, and the first pair each fit
    would show a held-out arrival. The reference's health travels with the figures: they are
    figures against an exact posterior only where it says healthy."""
    from diagnostics.population_fit_checks import compare_population_fits
    from inference.health import stored_health
    from inference.model_fits import population_test_points, stored_label_invariant
    from tdmodels.priors import MixturePrior

    N = log.n_users
    train, test = np.arange(N - holdout), np.arange(N - holdout, N)
    out = store.fit_path(run_key(world, seed, spec, arrivals), "population-train")
    idata_ref, _ = fit_cell(world, seed, spec, "population", store, arrivals=arrivals, chains=chains,
                            warmup=warmup, draws=draws, users=N - holdout, out=out, thin=thin, jobs=jobs,
                            max_minutes=max_minutes, progress=progress)
    z, y = log.recalibrated_design()
    points = population_test_points(z[test], y[test])
    online, n_online = None, None
    if log.priors is not None:
        online = MixturePrior(*(a[test[0]] for a in log.priors))
        n_online = int(np.sum(online.weights > 0) - 1)
    cmp = compare_population_fits(idata_ref, em, z[test], y[test], points, online=online,
                                  students=log.student[train], phi_first=first_question_features(log, test),
                                  online_components=n_online, seed=check_seed)
    data = {f"log_density_{k}": ("test_point", v) for k, v in cmp.log_density.items()}
    data.update({f"log_pred_{k}": ("heldout_user", v) for k, v in cmp.log_pred.items()})
    data.update({f"co_clustering_{k}": (("train_user", "train_user2"), v) for k, v in cmp.co_clustering.items()})
    data.update({f"first_pair_{k}": (("heldout_user", "shown"), v) for k, v in cmp.first_pairs.items()})
    data.update({f"pair_loss_{k}": ("heldout_user", v) for k, v in cmp.pair_loss.items()})
    data["components_reference"] = ("reference_draw", np.asarray(cmp.components["reference"]))
    data["test_points"] = (("test_point", "dim"), cmp.test_points)
    data["log_density_reference_interval"] = (("bound", "test_point"), cmp.log_density_interval)
    li = stored_label_invariant(idata_ref)
    attrs = {**cmp.summary(), **{f"max_khat_{k}": v for k, v in cmp.max_khat.items()},
             "reference_healthy": int(li.ok and stored_health(idata_ref).n_params > 0),
             "reference_sampler": str(idata_ref.sample_stats.attrs.get("population_sampler", "gibbs")),
             "reference_label_invariant": " / ".join(li.lines()),
             "reference_seconds": float(sum(idata_ref.sample_stats.attrs.get("seconds_per_chain", [0.0])))}
    return xr.Dataset(data, coords={"heldout_user": test, "train_user": train, "train_user2": train}, attrs=attrs)


def reference_fit(log, spec: str, users: int, chains: int, warmup: int, draws: int, seed: int, chunk: int,
                  progress=None) -> az.InferenceData:
    """The per-user NUTS reference on the first `users` arrivals of a click log, under the priors the users arrived
    under, with the attributes ``fit`` writes (what ``fit_cell(..., model="users")`` computes, from the log)."""
    from inference.user_reference import fit_users

    sl = slice(None, users)
    z, y = log.recalibrated_design(sl)
    done = unit_progress(progress)
    idata = fit_users(z, y, MixturePrior(*(a[sl] for a in log.priors)), seed=seed, chains=chains, warmup=warmup,
                      draws=draws, chunk=chunk, progress=done)
    idata.posterior.attrs.update({"world": str(log.attrs.get("world", "")), "world_digest": str(log.attrs.get(
                                  "world_digest", "")), "seed": int(seed), "policy": canonical_spec(spec), "model": "users",
                                  "prior": "policy", "users": int(z.shape[0])})
    return idata


def check_validation_settings(log, users: int | None, rounds: tuple[int, ...], holdout: int,
                              beliefs: tuple[str, ...], exact_draws: int = 0) -> None:
    """One InputError naming the first setting a validation of this click log cannot take."""
    if beliefs:
        from diagnostics.belief_comparison import check_belief_names
        check_belief_names(beliefs)
    if exact_draws is not None and (isinstance(exact_draws, bool) or not isinstance(exact_draws, (int, np.integer))):
        raise InputError(f"--exact-draws must be a whole number of draws, got {exact_draws!r}")
    if exact_draws:
        from inference.importance_moments import MAX_DRAWS, MIN_DRAWS
        if not beliefs:
            raise InputError("--exact-draws adds a row to the table of --beliefs: give --beliefs as well")
        if not MIN_DRAWS <= exact_draws <= MAX_DRAWS:
            raise InputError(f"--exact-draws {exact_draws}: give {MIN_DRAWS} to {MAX_DRAWS} draws a component")
    check_users(users, log.n_users)
    if holdout and not 0 < holdout < log.n_users:
        raise InputError(f"--holdout {holdout}: must lie in 1..{log.n_users - 1} (the run has {log.n_users} arrivals)")
    S = log.outcome.shape[1]
    bad = [t for t in rounds if not 0 < int(t) < S]
    if bad:
        raise InputError(f"--rounds {bad}: rounds must lie in 1..{S - 1} (round {S} is the session end)")


def compute_validation(log, seed: int, spec: str, users: int | None = None, chains: int = DEFAULT_CHAINS,
                       warmup: int | None = None, draws: int | None = None, check_seed: int = 0,
                       rounds: tuple[int, ...] = (), holdout: int = 0, beliefs: tuple[str, ...] = (),
                       chunk: int = DEFAULT_CHUNK, progress=None, exact_draws: int = 0):
    """Everything `validate_users` computes from a run's click log, without the store: (session-end checks, the
    reference's InferenceData, (the validation's InferenceData, the batch EM fit of the arrivals before the
    `holdout` ones, None without a holdout)). No file is read or written, so a worker on another machine can
    run it."""
    from inference.user_reference import user_draws

    warmup = DEFAULT_WARMUP if warmup is None else warmup     # the per-user NUTS references'
    draws = DEFAULT_DRAWS if draws is None else draws
    check_validation_settings(log, users, rounds, holdout, beliefs, exact_draws)
    em = None
    idata_ref = reference_fit(log, spec, users, chains, warmup, draws, seed, chunk, progress)
    ref = user_draws(idata_ref, seed=check_seed)                       # [chain, draw, user, dim]
    U = ref.sizes["user"]
    pooled = ref.values.reshape(-1, U, ref.sizes["dim"])
    checks = check_logged_users(log, pooled, np.arange(U), seed=check_seed)
    rng = np.random.default_rng(check_seed)
    online = np.stack([sample_mixture(rng, *(a[u] for a in log.beliefs), pooled.shape[0]) for u in range(U)], 1)
    online_w = log.beliefs.weights[:U]
    exact_w = exact_component_weights(idata_ref["units"], U, online_w.shape[1])
    tv = weights_distance(online_w, exact_w)
    figures = _checks_dataset(checks).assign(weights_tv=("user", tv), online_weights=(("user", "component"), online_w),
                                             exact_weights=(("user", "component"), exact_w))
    figures.attrs.update({"weights_tv_median": float(np.median(tv)), "weights_tv_max": float(np.max(tv))})
    at_rounds = {f"checks_round_{int(t)}": _checks_dataset(checks_at_round(log, U, int(t), chains, warmup, draws,
                                                                         check_seed, chunk)) for t in rounds}
    idata = az.InferenceData(posterior=ref.astype(np.float32).to_dataset(name="theta"))
    groups = {"online": xr.Dataset({"theta": (("draw", "user", "dim"), online.astype(np.float32))}), "checks": figures,
              "reliability": click_reliability(log), **at_rounds}
    if beliefs:
        from diagnostics.belief_comparison import compare_beliefs, exact_moments_mixture
        exact = exact_moments_mixture(idata_ref["units"], U, log.priors.means, log.priors.covs)
        groups["beliefs"] = compare_beliefs(log, pooled, beliefs, np.arange(U), seed=check_seed, exact_moments=exact,
                                            importance_draws=exact_draws or 0)
    if holdout:
        from diagnostics.population_checks import held_out_check
        from inference.mixture_em import fit_mixture_em

        z, y = log.recalibrated_design()
        train = np.arange(log.n_users - holdout)
        em = fit_mixture_em(z[train], y[train], seed=check_seed)
        ho = held_out_check(log, holdout, seed=check_seed, em=em)
        groups["population"] = xr.Dataset({f"log_pred_{k}": ("heldout_user", v) for k, v in ho.log_pred.items()},
                                          coords={"heldout_user": ho.users},
                                          attrs={f"max_khat_{k}": v for k, v in ho.max_khat.items()})
    idata.add_groups(groups)
    idata.posterior.attrs.update({"world": str(log.attrs.get("world", "")), "seed": int(seed),
                                  "policy": canonical_spec(spec), "users": int(U),
                                  "reference_health": stored_health(idata_ref).line()})
    return checks, idata_ref, (idata, em)


def validate_users(world, seed: int, spec: str, store: RunStore, users: int | None = None,
                   arrivals: int | None = None, chains: int = DEFAULT_CHAINS, warmup: int | None = None,
                   draws: int | None = None, check_seed: int = 0, rounds: tuple[int, ...] = (),
                   holdout: int = 0, population_reference: bool = False, reference_warmup: int | None = None,
                   reference_draws: int | None = None, reference_thin: int = 1, reference_minutes: float = 30.0,
                   jobs: int = 1, beliefs: tuple[str, ...] = (), chunk: int | None = None,
                   max_memory: float | None = None, progress=None,
                   exact_draws: int = 0) -> tuple[UserChecks, az.InferenceData, Path]:
    """Check the first `users` users (default all) of a run at session end, and at each of `rounds`
    (clicks seen so far) against NUTS on that many clicks, and the population prior on the last
    `holdout` arrivals (``diagnostics.population_checks``); with `population_reference`, also a batch
    EM fit of the other arrivals and the online prior against the hierarchical model's exact reference
    posterior on the same clicks (``population_reference_fits``; its sampler settings are the
    reference_* ones, the Gibbs sampler's defaults when None; it runs until healthy or
    reference_minutes, 0 for one fixed run); with `beliefs`, every named online belief
    (``inference.online_beliefs``) replayed on the same clicks and checked against the same reference, side by
    side (``diagnostics.belief_comparison``, group `beliefs`), and with `exact_draws` the exact mixture by
    importance sampling with that many draws a component beside them (``compare_beliefs``). `chunk`: units the reference samples together;
    `max_memory` (GiB): a request whose estimate exceeds it is refused before the sampler. The reference is
    written as ``seed-NNNN.users.nc`` and the validation as ``seed-NNNN.validate.nc`` beside the row. Returns (session-end checks, InferenceData,
    path written)."""
    population_reference = check_flag("population_reference", population_reference)
    if population_reference and not holdout:
        raise InputError("--population-reference compares fits on held-out users: give --holdout N as well")
    chunk = DEFAULT_CHUNK if chunk is None else chunk
    check_fit_ranges(chains=chains, warmup=warmup, draws=draws, seed=seed, chunk=chunk, jobs=jobs)
    key = run_key(world, seed, spec, arrivals)
    for what in ("users", "validate"):
        check_output_path(store.fit_path(key, what))      # before the sampler runs, not after
    log = log_with_beliefs(world, seed, spec, store, arrivals, progress)
    check_validation_settings(log, users, rounds, holdout, beliefs, exact_draws)     # before the sampler
    check_users_memory(users or log.n_users, log.priors.weights.shape[1], chains,
                       DEFAULT_DRAWS if draws is None else draws, chunk, max_memory, log.outcome.shape[1],
                       log.phi_first.shape[-1], validate=True)
    checks, idata_ref, (idata, em) = compute_validation(
        log, seed, spec, users, chains, warmup, draws, check_seed, rounds, holdout, beliefs, chunk, progress,
        exact_draws)
    save_netcdf(store.fit_path(key, "users"), inference_data_bytes(idata_ref))
    if population_reference:
        idata.add_groups({"population_fits": population_reference_fits(
            world, seed, spec, store, log, em, holdout, arrivals, chains, reference_warmup, reference_draws,
            reference_thin, jobs, check_seed, reference_minutes, progress)})
    return checks, idata, save_netcdf(store.fit_path(key, "validate"), inference_data_bytes(idata))
