"""Reference fits of the population and recalibration models on a run's click log.

Both return InferenceData with health checked and recorded (``inference.health``).
Population: sampled by the collapsed Gibbs sampler of ``inference.population_gibbs`` (or, to show
that it fails, NUTS). Component labels switch between chains and the posterior is multimodal over
partitions, so health is judged on label-invariant quantities (``inference.population_diagnostics``:
users' theta, the population predictive's log density at fixed test points, co-clustering, the
number of occupied components, the log likelihood; stored as the "label_invariant" group with
their R-hat and ESS in its attrs); the sorted weights are recorded beside them for information.
Recalibration: NUTS.
"""
from __future__ import annotations

import warnings

import arviz as az
import jax.numpy as jnp
import numpy as np

from inference.health import FitHealthError, FitHealthWarning, check_health, fit_health, record_health
from inference.laplace import laplace_fit_batch
from inference.population_diagnostics import (MIN_ESS_BULK, LabelInvariantHealth, label_invariant_draws,
                                              label_invariant_health)
from inference.nuts import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_WARMUP, check_sampler_settings, run_nuts
from inference.population_gibbs import DEFAULT_DRAWS as GIBBS_DRAWS
from inference.population_gibbs import DEFAULT_WARMUP as GIBBS_WARMUP
from inference.population_gibbs import GibbsSettings, RoundVerdict, checked_seconds, sample_population
from inference.user_reference import check_design
from tdmodels.population_model import RIDGE, PopulationHyper, population, recalibration
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior, validate_prior
from tdmodels.errors import InputError, check_flag
from tdmodels.limits import MAX_FIT_ROUNDS


POPULATION_SAMPLERS = ("gibbs", "nuts")


def _checked_rounds(max_rounds):
    if max_rounds is not None and (isinstance(max_rounds, bool) or not isinstance(max_rounds, (int, np.integer))
                                   or not 1 <= max_rounds <= MAX_FIT_ROUNDS):
        raise InputError(f"max_rounds {max_rounds!r}: an integer in [1, {MAX_FIT_ROUNDS:,}]")
    return max_rounds


def fit_population(z, y, seed: int = 0, chains: int = DEFAULT_CHAINS, warmup: int | None = None,
                   draws: int | None = None, thin: int = 1, sampler: str = "gibbs",
                   hyper: PopulationHyper = PopulationHyper(), strict: bool = False, map_chains=None,
                   settings: GibbsSettings = GibbsSettings(), max_seconds: float | None = None,
                   progress=None, max_rounds: int | None = None) -> az.InferenceData:
    """The population model's posterior given clicks y [U, S] on designs z [U, S, d], with its health.

    Parameters
    ----------
    z, y : arrays [U, S, d], [U, S]
    seed, chains, warmup, draws, thin
        Sampler settings; warmup and draws default to the sampler's own (``inference.population_gibbs``
        for "gibbs", ``inference.nuts`` for "nuts"); thin applies to "gibbs".
    sampler : {"gibbs", "nuts"}
        "gibbs": the collapsed Gibbs sampler with split-merge moves, the exact reference; "nuts": NUTS
        on the marginalised mixture (it does not converge on this posterior; kept to show that).
    hyper : PopulationHyper
        The model's hyperparameters.
    strict : bool
        Raise FitHealthError (instead of warning) when a diagnostic misses its threshold.
    map_chains : callable or None
        Runs the Gibbs chains (e.g. in worker processes); see ``sample_population``.
    max_seconds : float or None
        "gibbs" only: if given, the chains run on in rounds (each extends them by what the
        diagnostics' shortfall asks; see ``sample_population``) until every label-invariant
        diagnostic passes or the budget would be passed (one chain: one run, as it is never
        healthy); `progress(message)` hears of each round. Neither budget: one run of warmup + draws x thin.
    max_rounds : int or None
        "gibbs" only: a budget of rounds (at least 1), not depending on the machine's speed; first spent ends.

    Returns
    -------
    arviz.InferenceData
        posterior (theta, weights, weights_sorted, v, mu, cov_chol; assignment for "gibbs"),
        sample_stats with the health in its attrs, and the "label_invariant" group (see
        ``add_label_invariant``): the fit is healthy only if every label-invariant quantity is.
    """
    strict = check_flag("strict", strict)
    z, y = check_design(z, y)
    check_sampler_settings(seed, chains, 0 if warmup is None else warmup, 1 if draws is None else draws, thin)
    if sampler not in POPULATION_SAMPLERS:
        raise InputError(f"unknown sampler {sampler!r}; choose from {', '.join(POPULATION_SAMPLERS)}")
    hyper = hyper.validate()
    if sampler == "gibbs":
        def verdict(idata):
            li = add_label_invariant(idata, z, y, hyper.broad_var)
            qs = [q for q in li.quantities.values() if q.n]
            max_rhat = max((q.max_rhat for q in qs), default=float("inf"))
            ess = min((q.min_ess_bulk for q in qs), default=0.0)
            return RoundVerdict(li.ok, max_rhat, ess / MIN_ESS_BULK)

        budgeted = _checked_rounds(max_rounds) is not None or checked_seconds(max_seconds) is not None
        until = verdict if budgeted and chains >= 2 else None    # one chain is never healthy
        idata = sample_population(z, y, hyper, chains=chains, warmup=GIBBS_WARMUP if warmup is None else warmup,
                                  draws=GIBBS_DRAWS if draws is None else draws, thin=thin, seed=seed,
                                  settings=settings, map_chains=map_chains, until=until, max_seconds=max_seconds,
                                  progress=progress, max_rounds=max_rounds)
    else:
        idata = run_nuts(population, z, y=y, seed=seed, chains=chains,
                         warmup=DEFAULT_WARMUP if warmup is None else warmup,
                         draws=DEFAULT_DRAWS if draws is None else draws,
                         dims={"theta": ["user", "dim"], "mu": ["component", "dim"],
                               "cov_chol": ["component", "dim", "dim2"], "v": ["component"], "weights": ["slot"]},
                         **hyper._asdict())
        post = idata.posterior
        post["weights_sorted"] = (("chain", "draw", "rank"), -np.sort(-post["weights"].values, axis=-1))
    idata.sample_stats.attrs["population_sampler"] = sampler
    health = fit_health(idata, ["theta", "weights_sorted"])
    record_health(idata, health)
    li = stored_label_invariant(idata) if "label_invariant" in idata.groups() else None
    if li is None:
        li = add_label_invariant(idata, z, y, hyper.broad_var)
    problems = list(dict.fromkeys(health.problems + li.problems))
    if problems:
        msg = f"population fit ({sampler}): " + "; ".join(problems)
        if strict:
            raise FitHealthError(msg)
        warnings.warn(msg, FitHealthWarning, stacklevel=2)
    return idata


def population_test_points(z, y, broad_var: float = DEFAULT_PRIOR_VAR) -> np.ndarray:
    """Fixed points at which a population fit's predictive density is tracked: each user's
    broad-prior Laplace mode [U, d] (data-derived, the same for every chain)."""
    U, _, d = z.shape
    modes, _, _ = laplace_fit_batch(np.zeros((U, d)), np.broadcast_to(broad_var * np.eye(d), (U, d, d)).copy(),
                                    np.asarray(z, float), np.asarray(y, float))
    return modes


def add_label_invariant(idata: az.InferenceData, z, y, broad_var: float = DEFAULT_PRIOR_VAR,
                        test_points: np.ndarray | None = None) -> LabelInvariantHealth:
    """Compute a population fit's label-invariant draws and their health; store both in `idata`
    (group "label_invariant", health in its attrs) and return the health."""
    points = population_test_points(z, y, broad_var) if test_points is None else test_points
    draws = label_invariant_draws(idata.posterior, z, y, points, broad_var)
    draws["test_points"] = (("point", "dim"), points)
    li = label_invariant_health(draws, idata.posterior["theta"])
    draws.attrs.update(li.as_attrs())
    if "label_invariant" in idata.groups():
        del idata["label_invariant"]
    idata.add_groups({"label_invariant": draws})
    return li


def stored_label_invariant(idata: az.InferenceData) -> LabelInvariantHealth | None:
    """The label-invariant health stored with a population fit (None for fits made before it existed)."""
    if "label_invariant" not in idata.groups():
        return None
    return LabelInvariantHealth.from_attrs(idata["label_invariant"].attrs)


def fit_recalibration(first, second, rater, y, prior: MixturePrior, seed: int = 0, chains: int = DEFAULT_CHAINS,
                      warmup: int = DEFAULT_WARMUP, draws: int = DEFAULT_DRAWS, ridge: float = RIDGE,
                      strict: bool = False) -> az.InferenceData:
    """NUTS on the recalibration model; first, second [U, S] ints, rater [U, S, K], y [U, S]."""
    strict = check_flag("strict", strict)            # here, not after the sampling
    rater = np.asarray(rater, dtype=float)
    U, S, K = rater.shape
    if not np.all(np.isfinite(rater)):
        raise InputError("rater scores have non-finite entries")
    z_dummy = np.zeros((U, S, K + 1))
    _, y = check_design(z_dummy, y)
    prior = validate_prior(prior, K + 1)
    idata = run_nuts(recalibration, jnp.asarray(first), jnp.asarray(second), rater, prior, y=y, seed=seed,
                     chains=chains, warmup=warmup, draws=draws, ridge=ridge,
                     dims={"theta": ["user", "dim"], "A_dev": ["persona", "persona2"], "A": ["persona", "persona2"]})
    health = check_health(fit_health(idata, ["theta", "a", "A_dev"]), "recalibration NUTS fit", strict)
    record_health(idata, health)
    return idata
