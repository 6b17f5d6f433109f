"""Simulation-based calibration of the per-user reference fits.

Draw theta_u from the prior, clicks from the BTL model on random shown pairs of a
world's questions, fit every simulated user in one `fit_users` call (users are
independent), and rank each true coordinate among L thinned posterior draws. If the fit
is exact the ranks are uniform on {0, ..., L}; `rank_uniformity` tests that with a
chi-square test per coordinate (Bonferroni-combined), and `coverage` counts how often
central intervals hold the truth.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from inference.user_reference import fit_users, user_draws
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
    """Chi-square p-value of uniform ranks per coordinate [d], and the Bonferroni-combined p-value."""
    edges = np.linspace(0, L + 1, bins + 1)
    p = np.empty(ranks.shape[1])
    for c in range(ranks.shape[1]):
        counts = np.histogram(ranks[:, c], bins=edges)[0]
        expected = len(ranks) * np.diff(edges) / (L + 1)
        p[c] = stats.chisquare(counts, expected).pvalue
    return p, float(min(1.0, p.min() * len(p)))


def coverage(theta: np.ndarray, draws: np.ndarray, prob: float = 0.9) -> np.ndarray:
    """Fraction [d] of users whose central `prob` interval holds the truth."""
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
