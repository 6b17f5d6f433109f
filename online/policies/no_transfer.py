"""The no-transfer learner (each user alone, Bayesian logistic with an isotropic prior) and the
pooled learner (one such belief shared by every user, never reset).

    learner = no_transfer(prior_var=4.0)      # an online.learner.Learner
    learner = pooled(prior_var=4.0, rule="thompson")

Greedy for strong regret: the pair minimising the belief-averaged regret
E[2 max_p u_p] - E[u_i] - E[u_j] is the top two of the posterior-mean utilities
mean . phi_p, so the posterior mean alone picks the pair. Ties break to the lower index.
Each click is one Laplace step (``inference.laplace.laplace_update``).
"""
from __future__ import annotations

from typing import Annotated, NamedTuple

import numpy as np

from inference.laplace import laplace_update
from online.learner import Learner, no_session_info, same_state
from online.pair_rules import greedy_pair, thompson_pair
from online.setting_range import Range, ranged
from tdmodels.priors import DEFAULT_PRIOR_VAR
from tdmodels.errors import InputError

RULES = ("greedy", "thompson")


class GaussianState(NamedTuple):
    """One Gaussian belief over theta and the prior it restarts from."""
    mean: np.ndarray         # [d] posterior mean of theta
    cov: np.ndarray          # [d, d] posterior covariance
    prior_mean: np.ndarray   # [d]
    prior_cov: np.ndarray    # [d, d]


class SelectInfo(NamedTuple):
    """The posterior-mean utilities and the plug-in probability that the first shown wins."""
    utilities: np.ndarray    # [K] posterior-mean utilities
    p_first: float           # predicted P(first wins) at the posterior mean


class UpdateInfo(NamedTuple):
    """The plug-in log predictive probability of the click, computed before it was revealed."""
    log_predictive: float    # log of the plug-in predictive probability of the click, before it


def init(d: int, prior_var: float = DEFAULT_PRIOR_VAR) -> GaussianState:
    """The isotropic prior N(0, prior_var I) over theta [d]."""
    m0, S0 = np.zeros(d), prior_var * np.eye(d)
    return GaussianState(m0, S0, m0, S0)


def start_session(state: GaussianState, rng=None) -> GaussianState:
    """A new user: the belief restarts from the prior."""
    return state._replace(mean=state.prior_mean, cov=state.prior_cov)


def greedy_select(state: GaussianState, Phi: np.ndarray) -> tuple[tuple[int, int], SelectInfo]:
    """The top two posterior-mean utilities of Phi [K, d], the larger first, with the SelectInfo."""
    u = Phi @ state.mean
    i, j = greedy_pair(u)
    eta = u[i] - u[j]
    return (i, j), SelectInfo(u, float(1.0 / (1.0 + np.exp(-eta))))


def update(state: GaussianState, Phi: np.ndarray, pair: tuple[int, int], y: int) -> tuple[GaussianState, UpdateInfo]:
    """Fold one click on `pair` of the question Phi [K, d] in."""
    m, S, logpred = laplace_update(state.mean, state.cov, Phi[pair[0]] - Phi[pair[1]], y)
    return state._replace(mean=m, cov=S), UpdateInfo(float(logpred))


def _check(prior_var) -> float:
    if not prior_var > 0:
        raise InputError(f"prior_var must be positive, got {prior_var!r}")
    return float(prior_var)


@ranged
def no_transfer(prior_var: Annotated[float, Range(0, 1e4, lo_open=True)] = DEFAULT_PRIOR_VAR) -> Learner:
    """Per-user Bayesian logistic learner with greedy pairs (CODuel's no-transfer ablation).

    Parameters
    ----------
    prior_var : float
        Variance of the isotropic Gaussian prior on theta (logits^2), in (0, 1e4].
    """
    prior_var = _check(prior_var)
    return Learner(lambda context: init(context.d, prior_var), lambda state, rng: (start_session(state), None),
                   lambda state, Phi, rng: greedy_select(state, Phi), update, no_session_info)


@ranged
def pooled(prior_var: Annotated[float, Range(0, 1e4, lo_open=True)] = DEFAULT_PRIOR_VAR, rule: str = "greedy") -> Learner:
    """One Bayesian logistic learner shared by every user, never reset (a single population theta):
    the 'Pooled' row of the reference leaderboard.

    Parameters
    ----------
    prior_var : float
        As for `no_transfer`.
    rule : {"greedy", "thompson"}
        Top two posterior-mean utilities, or double Thompson sampling (first = argmax of a posterior
        draw, second = argmax over the others of an independent draw).
    """
    prior_var = _check(prior_var)
    if rule not in RULES:
        raise InputError(f"rule must be one of {RULES}, got {rule!r}")

    def select(state, Phi, rng):
        if rule == "greedy":
            return greedy_select(state, Phi)
        return thompson_pair(state.mean, state.cov, Phi, rng), None

    return Learner(lambda context: init(context.d, prior_var), same_state, select, update, no_session_info)
