"""Checks of the PrefDisco profile belief (``inference.profile_belief``), as for TutorDuel's learners:

- against NUTS on the same model and data (``inference.profile_reference``): standardised
  mean error, sd ratio, marginal W1 beside an MCMC-vs-MCMC floor, and PSIS k-hat of the belief
  as a proposal for the exact target. The exact target is known in closed form up to a
  constant: the population's predictive t at the full profile times the answers' likelihood,
  so k-hat does not depend on the NUTS draws. With exact answers the belief is the exact
  posterior (errors at Monte Carlo noise); with noisy answers it is an approximation;
- against the simulated truth (model misspecification): probability integral transforms of
  the user's true coordinates under the belief's marginals, and the coverage of central
  intervals, over many scenarios;
- simulation-based calibration of the conjugate algebra (``sbc_profile``): draws from the
  model's prior, ranks of the truth uniform.
"""
from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import stats
from scipy.stats import wasserstein_distance

from diagnostics.posterior_checks import PosteriorCheck, psis_khat
from inference.evidence import mvt_logpdf
from inference.profile_belief import ProfileBelief, condition, covariance, population_belief
from tdmodels.profile_model import ProfilePrior


def t_logpdf(x: np.ndarray, belief: ProfileBelief, coords=None) -> np.ndarray:
    """log density [n] of the belief (or its marginal on `coords`) at x [n, len(coords)]."""
    c = np.arange(len(belief.mean)) if coords is None else np.asarray(coords)
    return mvt_logpdf(np.asarray(x)[None], belief.mean[c][None], belief.shape[np.ix_(c, c)][None], belief.df)[0]


def t_sample(rng: np.random.Generator, belief: ProfileBelief, n: int, coords=None) -> np.ndarray:
    """n draws [n, len(coords)] of the belief's marginal on `coords`."""
    c = np.arange(len(belief.mean)) if coords is None else np.asarray(coords)
    L = np.linalg.cholesky(belief.shape[np.ix_(c, c)])
    g = rng.standard_normal((n, len(c)))
    u = rng.chisquare(belief.df, (n, 1)) / belief.df
    return belief.mean[c] + g @ L.T / np.sqrt(u)


def check_belief(belief: ProfileBelief, prior_belief: ProfileBelief, answer_index, answers, answer_var,
                 reference: np.ndarray, rng: np.random.Generator, n_proposal: int = 4000) -> tuple[PosteriorCheck, np.ndarray]:
    """The belief after answers against reference draws [S, D] of the exact posterior.

    prior_belief: the predictive before any answer; answer_var [J]: logit-scale noise variances
    (all 0: exact answers, then only the unanswered coordinates are compared). Returns the
    check and the coordinates it covers."""
    idx = np.asarray(answer_index, dtype=int)
    answers = np.asarray(answers, dtype=float)
    var = np.broadcast_to(np.asarray(answer_var, dtype=float), idx.shape)
    D = len(belief.mean)
    exact = bool(np.all(var == 0))
    coords = np.setdiff1d(np.arange(D), idx) if exact else np.arange(D)
    ref = np.asarray(reference, dtype=float)[:, coords]
    sd_p = ref.std(0, ddof=1)
    mean_q = belief.mean[coords]
    sd_q = np.sqrt(np.diag(covariance(belief))[coords])
    half = len(ref) // 2
    q = t_sample(rng, belief, max(n_proposal, half), coords)
    w1 = np.array([wasserstein_distance(q[:half, i], ref[half:2 * half, i]) for i in range(len(coords))]) / sd_p
    floor = np.array([wasserstein_distance(ref[:half, i], ref[half:2 * half, i]) for i in range(len(coords))]) / sd_p
    if exact:
        full = np.zeros((len(q), D))
        full[:, coords], full[:, idx] = q, answers
        log_target = t_logpdf(full, prior_belief)
    else:
        log_target = t_logpdf(q, prior_belief) + stats.norm.logpdf(answers, q[:, idx], np.sqrt(var)).sum(-1)
    khat = psis_khat(log_target - t_logpdf(q, belief, coords))
    return PosteriorCheck((mean_q - ref.mean(0)) / sd_p, sd_q / sd_p, w1, floor, khat, np.array([khat])), coords


def marginal_pit(belief: ProfileBelief, truth: np.ndarray, coords) -> np.ndarray:
    """P(z_c <= truth_c) [len(coords)] under the belief's t marginals."""
    c = np.asarray(coords, dtype=int)
    scale = np.sqrt(np.diag(belief.shape)[c])
    return stats.t.cdf((np.asarray(truth)[c] - belief.mean[c]) / scale, belief.df)


def coverage(pit: np.ndarray, prob: float = 0.9) -> float:
    """Share of PIT values inside the central `prob` interval."""
    pit = np.asarray(pit)
    return float(np.mean((pit >= (1 - prob) / 2) & (pit <= (1 + prob) / 2)))


def sbc_profile(prior: ProfilePrior, n_population: int, n_answered: int, sims: int, rng: np.random.Generator,
                answer_sd: float = 0.0, fit_prior: ProfilePrior | None = None) -> np.ndarray:
    """SBC of the conjugate belief: per simulation draw Sigma ~ IW, mu, a population and a new user
    from the model under `prior`, answer the first `n_answered` coordinates (exactly when
    answer_sd is 0), and return the PIT [sims, D] of the new user's true coordinates under the
    belief updated with `fit_prior` (default: the same prior); answered coordinates are NaN
    when exact. Uniform PIT = calibrated; a wrong fit_prior should show."""
    D = len(prior.mu0)
    out = np.full((sims, D), np.nan)
    for s in range(sims):
        Sigma = stats.invwishart.rvs(prior.nu0, prior.psi0, random_state=rng)
        mu = rng.multivariate_normal(prior.mu0, Sigma / prior.kappa0)
        pop = rng.multivariate_normal(mu, Sigma, n_population)
        z = rng.multivariate_normal(mu, Sigma)
        b = population_belief(pop, fit_prior or prior)
        for j in range(n_answered):
            b = condition(b, j, z[j] + answer_sd * rng.standard_normal(), answer_sd ** 2)
        free = np.arange(n_answered if answer_sd == 0 else 0, D)
        out[s, free] = marginal_pit(b, z, free)
    return out


def checks_dataset(checks: list[PosteriorCheck], coords: list[np.ndarray], D: int) -> xr.Dataset:
    """Per-scenario checks as a Dataset (scenario, coord), NaN where a coordinate was not compared."""
    arr = {k: np.full((len(checks), D), np.nan) for k in ("mean_error", "sd_ratio", "w1", "w1_floor")}
    for i, (c, cs) in enumerate(zip(checks, coords)):
        for k in arr:
            arr[k][i, cs] = getattr(c, k)
    data = {k: (("scenario", "coord"), v) for k, v in arr.items()}
    data["khat"] = ("scenario", np.array([c.khat for c in checks]))
    return xr.Dataset(data)
