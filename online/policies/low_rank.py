"""A low-rank shared basis: greedy pairs under one Gaussian population with a PPCA covariance.

    learner = low_rank(rank=3)        # an online.learner.Learner

Each user starts from the population N(mean, cov) learned from every finished session
(``inference.gaussian_population``: Laplace EM, `rank` principal directions plus a shared
variance), takes one Laplace step per click (``inference.laplace.laplace_update``) and is shown
the top two posterior-mean utilities, as the no-transfer learner is. Before any session the
population is the no-transfer learner's N(0, prior_var I).
"""
from __future__ import annotations

from typing import Annotated, NamedTuple

import numpy as np

from inference.kernels import probit_log_predictive
from inference.gaussian_population import GaussianPopulation, fit_gaussian_population
from online.append_only import new_mark, writable_at
from online.learner import Learner
from online.policies import no_transfer as nt
from online.setting_range import MIN_POSITIVE, Range, ranged
from tdmodels.priors import DEFAULT_PRIOR_VAR

RANK = 3
PSEUDO_SESSIONS = 2.0
EM_ITERS = 3


class LowRankState(NamedTuple):
    """The current user's belief, the finished sessions (append-only) and the population fitted to them."""
    user: nt.GaussianState   # the current user's belief, this session's designs and clicks
    designs: np.ndarray      # [N, S, d] finished sessions' click designs, rows [:n] (shared, append-only)
    clicks: np.ndarray       # [N, S] their clicks
    mark: np.ndarray         # [1] the shared buffers' written rows (online.append_only)
    n: int                   # finished sessions
    gram: np.ndarray         # [d, d] sum of z z^T over every finished click
    population: GaussianPopulation   # mean [d], cov [d, d], modes [N, d] (rows [:n])


def init(N: int, S: int, d: int, prior_var: float) -> LowRankState:
    """Room for N sessions of S clicks; the population starts at N(0, prior_var I)."""
    user = nt.init(d, prior_var, S)
    population = GaussianPopulation(np.zeros(d), prior_var * np.eye(d), np.zeros((N, d)))
    return LowRankState(user, np.zeros((N, S, d)), np.zeros((N, S)), new_mark(), 0, np.zeros((d, d)), population)


def start_session(state: LowRankState) -> LowRankState:
    """A new user: the belief starts at the population."""
    mean, cov = state.population.mean, state.population.cov
    user = state.user._replace(mean=mean, cov=cov, prior_mean=mean, prior_cov=cov, t=0,
                               session_z=np.zeros_like(state.user.session_z), session_y=np.zeros_like(state.user.session_y))
    return state._replace(user=user)


class UpdateInfo(NamedTuple):
    """The belief's predictive probability of the click, computed before it was revealed."""
    log_predictive: float    # log p(click) with theta ~ the belief (probit approximation)


def update(state: LowRankState, Phi: np.ndarray, pair: tuple[int, int], y: int) -> tuple[LowRankState, UpdateInfo]:
    """One Laplace step on the click; the click is kept for the session's end."""
    z = Phi[pair[0]] - Phi[pair[1]]
    log_predictive = float(probit_log_predictive(float(z @ state.user.mean), float(z @ state.user.cov @ z), int(y)))
    user, _ = nt.update(state.user, Phi, pair, y)
    return state._replace(user=nt.recorded(user, z, y)), UpdateInfo(log_predictive)


def end_session(state: LowRankState, rank: int, prior_var: float, pseudo: float, em_iters: int) -> LowRankState:
    """The session joins the others and the population is refitted (warm-started at the last fit)."""
    n, user = state.n, state.user
    (designs, clicks), mark = writable_at(n, state.mark, (state.designs, state.clicks))
    designs[n], clicks[n] = user.session_z, user.session_y
    z = user.session_z[:user.t]
    gram = state.gram + z.T @ z
    modes = state.population.modes.copy()
    modes[n] = user.mean
    start = state.population._replace(modes=modes[:n + 1])
    fitted = fit_gaussian_population(designs[:n + 1], clicks[:n + 1], gram, start, rank, prior_var, pseudo, em_iters)
    modes[:n + 1] = fitted.modes
    return state._replace(designs=designs, clicks=clicks, mark=mark, n=n + 1, gram=gram,
                          population=fitted._replace(modes=modes))


@ranged
def low_rank(rank: Annotated[int, Range(1, 64)] = RANK,
             prior_var: Annotated[float, Range(MIN_POSITIVE, 1e4)] = DEFAULT_PRIOR_VAR,
             pseudo_sessions: Annotated[float, Range(0, 1e4)] = PSEUDO_SESSIONS,
             em_iters: Annotated[int, Range(1, 100)] = EM_ITERS) -> Learner:
    """Greedy pairs under a Gaussian population with a low-rank covariance learned across users.

    Parameters
    ----------
    rank : int
        Principal directions of the population's covariance, in [1, 64] (at least the number of
        identified directions: a full covariance).
    prior_var : float
        The population before any session, N(0, prior_var I), and the covariance's shrinkage target
        prior_var I, in (0, 1e4].
    pseudo_sessions : float
        The shrinkages' weight (the mean towards 0, the covariance towards prior_var I), in sessions,
        in [0, 1e4].
    em_iters : int
        Laplace EM iterations after each session, in [1, 100].
    """
    rank, em_iters, prior_var, pseudo = int(rank), int(em_iters), float(prior_var), float(pseudo_sessions)
    return Learner(lambda context: init(context.N, context.S, context.d, prior_var),
                   lambda state, rng: (start_session(state), None),
                   lambda state, Phi, rng: nt.greedy_select(state.user, Phi),
                   update,
                   lambda state: (end_session(state, rank, prior_var, pseudo, em_iters), None))
