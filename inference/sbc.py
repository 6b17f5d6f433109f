"""Simulation-based calibration of the per-user reference fits and of the population sampler.

Draw theta_u from the prior, clicks from the BTL model on random shown pairs of a
world's questions, fit every simulated user in one `fit_users` call (users are
independent), and rank each true coordinate among L thinned posterior draws. If the fit
is exact the ranks are uniform on {0, ..., L}; `rank_uniformity` tests that with a
chi-square test per coordinate (Bonferroni-combined), and `coverage` counts how often
central intervals hold the truth.
"""
from __future__ import annotations

import warnings

from typing import NamedTuple

import numpy as np
from scipy import stats

from inference.user_reference import fit_users, user_draws
from tdmodels.errors import InputError
from tdmodels.population_model import PopulationHyper
from tdmodels.priors import MixturePrior, validate_prior


# The three-component prior the calibration checks use beside the isotropic one: two separated
# components with small covariance and a broad one (d = 7).
CHECK_MIXTURE = MixturePrior(np.array([0.4, 0.35, 0.25]),
                             np.array([[1.5, 0, 0, -1.5, 0, 0, 1.0], [-1.5, 0, 1.5, 0, 0, 0, -1.0], np.zeros(7)]),
                             np.stack([0.5 * np.eye(7), 0.5 * np.eye(7), 4.0 * np.eye(7)]))


class SBCResult(NamedTuple):
    """A simulation-based calibration run: true theta, their ranks among thinned posterior draws, all draws and whether every fit was healthy."""
    theta: np.ndarray        # [U, d] true values
    ranks: np.ndarray        # [U, d] in 0..L
    L: int                   # thinned draws per user
    draws: np.ndarray        # [M, U, d] all posterior draws
    health_ok: bool


def random_designs(features: np.ndarray, n_users: int, rounds: int, rng) -> np.ndarray:
    """z [U, S, d]: rows phi_i - phi_j of uniformly random (question, ordered pair i != j)."""
    Q, K, _ = features.shape
    q = rng.integers(Q, size=(n_users, rounds))
    i = rng.integers(K, size=(n_users, rounds))
    j = (i + rng.integers(1, K, size=(n_users, rounds))) % K
    return features[q, i] - features[q, j]


def sample_prior(prior: MixturePrior, n: int, rng) -> np.ndarray:
    """n draws [n, d] from a shared mixture prior."""
    w, m, S = validate_prior(prior)
    k = rng.choice(len(w), size=n, p=w)
    L = np.linalg.cholesky(S)
    return m[k] + np.einsum("nij,nj->ni", L[k], rng.standard_normal((n, m.shape[-1])))


def simulate_clicks(theta: np.ndarray, z: np.ndarray, rng) -> np.ndarray:
    """Clicks y [U, S] ~ Bernoulli(sigmoid(z . theta_u)) for theta [U, d] and designs z [U, S, d]."""
    eta = np.einsum("usd,ud->us", z, theta)
    return (rng.random(eta.shape) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)


def sbc_ranks(theta: np.ndarray, draws: np.ndarray, L: int) -> np.ndarray:
    """Rank of theta [U, d] among L evenly thinned draws of draws [M, U, d]."""
    M = draws.shape[0]
    idx = np.linspace(0, M - 1, L).round().astype(int)
    return np.sum(draws[idx] < theta[None], axis=0)


def rank_uniformity(ranks: np.ndarray, L: int, bins: int = 10) -> tuple[np.ndarray, float]:
    """Chi-square p-value of uniform ranks per coordinate [d], and the Bonferroni-combined p-value. InputError
    where L or bins is not a positive integer (bins=0 had given p = NaN, combined into 1.0: a pass) or a rank
    is not an integer in [0, L]."""
    for name, v, lo in (("L", L, 1), ("bins", bins, 2)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise InputError(f"rank_uniformity: {name}={v!r} must be an integer of at least {lo}")
    ranks = np.asarray(ranks)
    if ranks.ndim != 2 or len(ranks) < 1 or not np.all(np.isfinite(ranks)) or np.any(ranks < 0) \
            or np.any(ranks > L) or np.any(ranks != np.round(ranks)):
        raise InputError(f"rank_uniformity: ranks must be [simulations >= 1, d] integers in [0, {L}]")
    edges = np.linspace(0, L + 1, bins + 1)
    p = np.empty(ranks.shape[1])
    for c in range(ranks.shape[1]):
        counts = np.histogram(ranks[:, c], bins=edges)[0]
        expected = len(ranks) * np.diff(edges) / (L + 1)
        p[c] = stats.chisquare(counts, expected).pvalue
    return p, float(min(1.0, p.min() * len(p)))


def coverage(theta: np.ndarray, draws: np.ndarray, prob: float = 0.9) -> np.ndarray:
    """Fraction [d] of users whose central `prob` interval holds the truth. InputError for a `prob` outside
    (0, 1) or a NaN among the truth or the draws (which had counted as not covered)."""
    if isinstance(prob, bool) or not isinstance(prob, (int, float, np.floating)) or not 0 < prob < 1:
        raise InputError(f"coverage: prob={prob!r} must be a number in (0, 1)")
    if np.isnan(np.asarray(theta, dtype=float)).any() or np.isnan(np.asarray(draws, dtype=float)).any():
        raise InputError("coverage: NaN among the true values or the draws")
    lo, hi = np.quantile(draws, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
    return np.mean((theta >= lo) & (theta <= hi), axis=0)


def run_sbc(prior: MixturePrior, features: np.ndarray, n_sims: int = 200, rounds: int = 24, L: int = 99,
            seed: int = 0, **fit_kwargs) -> SBCResult:
    """SBC of `fit_users` under `prior` on `n_sims` simulated users of `rounds` clicks each."""
    rng = np.random.default_rng(seed)
    theta = sample_prior(prior, n_sims, rng)
    z = random_designs(np.asarray(features, dtype=float), n_sims, rounds, rng)
    y = simulate_clicks(theta, z, rng)
    idata = fit_users(z, y, prior, seed=seed, **fit_kwargs)
    th = user_draws(idata, seed=seed).values                    # [chain, draw, U, d]
    draws = th.reshape(-1, th.shape[2], th.shape[3])
    ok = bool(idata.sample_stats.attrs["health_ok"])
    return SBCResult(theta, sbc_ranks(theta, draws, L), L, draws, ok)


# The population model's SBC: a small instance of the same model and sampler, 6 learned components
# with alpha = 0.5, so that 30 users fall in 2-3 of them (and hardly ever the broad one) and there
# are empty components to split into.
SBC_POPULATION = PopulationHyper(alpha=0.5, n_learned=6)


class PopulationSBC(NamedTuple):
    """SBC of the population sampler: per simulation, the true value of each checked quantity and its
    rank among L thinned posterior draws (ties broken at random), whether the fit was healthy and the
    sweeps per chain it took."""
    names: list              # [Q] quantity names
    truth: np.ndarray        # [N, Q]
    ranks: np.ndarray        # [N, Q] in 0..L
    L: int
    healthy: np.ndarray      # [N] bool: the fit passed its label-invariant diagnostics
    sweeps: np.ndarray       # [N] sweeps per chain of each fit


def _tied_ranks(truth: np.ndarray, draws: np.ndarray, L: int, rng) -> np.ndarray:
    """Rank of truth [Q] among L evenly thinned draws [M, Q], ties broken uniformly at random."""
    idx = np.linspace(0, draws.shape[0] - 1, L).round().astype(int)
    d = draws[idx]
    below = (d < truth).sum(0)
    ties = (d == truth).sum(0)
    return below + rng.integers(0, ties + 1)


def _population_quantities(theta, assignment, weights, mu, cov_chol, z, y, points, K, broad_var):
    """The checked quantities of population states, [M, Q]: the first users' theta, the clicks' log
    likelihood, the population density at fixed points, the largest weight, the number of occupied
    learned components and whether users 0 and 1 share a component."""
    from inference.population_diagnostics import slot_log_joint
    from scipy.special import logsumexp

    M = theta.shape[0]
    eta = np.einsum("usd,mud->mus", z, theta)
    log_lik = (y * -np.logaddexp(0.0, -eta) + (1 - y) * -np.logaddexp(0.0, eta)).sum((1, 2))
    dens = logsumexp(slot_log_joint(weights, mu, cov_chol, points, broad_var), axis=1)      # [M, P]
    occupied = np.array([len(np.unique(a[a < K])) for a in assignment])
    same = (assignment[:, 0] == assignment[:, 1]).astype(float)
    return np.column_stack([theta[:, :3].reshape(M, -1), log_lik, dens, weights.max(-1), occupied, same])


def run_population_sbc(features: np.ndarray, n_sims: int = 100, users: int = 30, rounds: int = 24, L: int = 99,
                       seed: int = 0, hyper: PopulationHyper = SBC_POPULATION, chains: int = 2, warmup: int = 300,
                       draws: int = 1000, max_seconds: float | None = 120.0, map_chains=None) -> PopulationSBC:
    """SBC of ``inference.population_gibbs`` on the population model `hyper`: `n_sims` data sets of
    `users` users with `rounds` clicks each on random pairs of a world's questions, the truth drawn
    from the NumPyro model's prior (stick fractions, component means and covariances from its sites;
    each user's component and theta from its mixture). Each fit runs as `fit_population` runs it: in
    rounds until its label-invariant diagnostics pass, or `max_seconds` (None: one run of warmup +
    draws)."""
    import jax
    import jax.numpy as jnp
    import numpyro

    from inference.health import FitHealthWarning
    from inference.model_fits import fit_population, stored_label_invariant
    from tdmodels.population_model import population

    rng = np.random.default_rng(seed)
    F = np.asarray(features, dtype=float)
    d, K = F.shape[-1], hyper.n_learned
    with jax.enable_x64(True):
        prior = numpyro.infer.Predictive(population, num_samples=n_sims, return_sites=["weights", "mu", "cov_chol"])(
            jax.random.PRNGKey(seed), jnp.zeros((1, 1, d)), **hyper._asdict())
    W, MU, CH = (np.asarray(prior[k], dtype=float) for k in ("weights", "mu", "cov_chol"))
    points = np.stack([np.zeros(d), np.r_[1.0, -1.0, np.zeros(d - 2)]])
    names = ([f"theta[{u},{j}]" for u in range(3) for j in range(d)]
             + ["log_lik", "log_density[0]", "log_density[1]", "max_weight", "occupied", "same_component[0,1]"])
    truths, ranks, healthy, sweeps = [], [], [], []
    for s in range(n_sims):
        c = rng.choice(K + 1, size=users, p=W[s] / W[s].sum())
        locs = np.concatenate([MU[s], np.zeros((1, d))])
        trils = np.concatenate([CH[s], np.sqrt(hyper.broad_var) * np.eye(d)[None]])
        theta = locs[c] + np.einsum("uij,uj->ui", trils[c], rng.standard_normal((users, d)))
        z = random_designs(F, users, rounds, rng)
        y = simulate_clicks(theta, z, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitHealthWarning)      # health is returned, not hidden
            idata = fit_population(z, y, seed=seed * 100003 + s, chains=chains, warmup=warmup, draws=draws,
                                   hyper=hyper, map_chains=map_chains, max_seconds=max_seconds)
        post = idata.posterior
        flat = lambda v: post[v].values.reshape((-1,) + post[v].shape[2:])  # noqa: E731
        q_post = _population_quantities(flat("theta"), flat("assignment"), flat("weights"), flat("mu"),
                                        flat("cov_chol"), z, y, points, K, hyper.broad_var)
        q_true = _population_quantities(theta[None], c[None], W[s][None], MU[s][None], CH[s][None], z, y, points, K,
                                        hyper.broad_var)[0]
        truths.append(q_true)
        ranks.append(_tied_ranks(q_true, q_post, L, rng))
        healthy.append(stored_label_invariant(idata).ok)
        sweeps.append(int(idata.sample_stats.attrs.get("sweeps_per_chain", warmup + draws)))
    return PopulationSBC(names, np.array(truths), np.array(ranks), L, np.array(healthy), np.array(sweeps))
