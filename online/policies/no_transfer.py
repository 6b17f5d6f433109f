"""The no-transfer learner (each user alone, Bayesian logistic with an isotropic prior) and the
pooled learner (one such belief shared by every user, never reset).

    learner = no_transfer(prior_var=4.0)      # an online.learner.Learner
    learner = pooled(prior_var=4.0, rule="thompson")

Greedy for strong regret: the pair minimising the belief-averaged regret
E[2 max_p u_p] - E[u_i] - E[u_j] is the top two of the posterior-mean utilities
mean . phi_p, so the posterior mean alone picks the pair. Ties break to the lower index.
Each click is one Laplace step (``inference.laplace.laplace_update``), or with `belief`, one step of
another online belief (``inference.online_beliefs``) on the same Gaussian.
"""
from __future__ import annotations

from typing import Annotated, NamedTuple

import numpy as np

from inference import kernels as kn
from inference.constants import BELIEFS, EP_BELIEFS, SESSION_BELIEFS
from inference.online_beliefs import UNREAD_SITES, Sites, checked_sites, new_sites
from inference.kernels.importance_laplace import base_draws
from inference.laplace import laplace_update
from online.learner import Learner, no_session_info, same_state
from online.pair_rules import greedy_pair, thompson_pair
from online.setting_range import MIN_POSITIVE, Range, Search, ranged
from tdmodels.priors import DEFAULT_PRIOR_VAR
from tdmodels.errors import InputError

RULES = ("greedy", "thompson")


class GaussianState(NamedTuple):
    """One Gaussian belief over theta and the prior it restarts from."""
    mean: np.ndarray         # [d] posterior mean of theta
    cov: np.ndarray          # [d, d] posterior covariance
    prior_mean: np.ndarray   # [d]
    prior_cov: np.ndarray    # [d, d]
    session_z: np.ndarray    # [S, d] this session's click designs, rows [:t] (kept by beliefs that reread them)
    session_y: np.ndarray    # [S] its clicks
    t: int                   # clicks so far this session
    sites: Sites | None = None   # [1, 3, S], [1]: expectation propagation's sites of this session's clicks


class SelectInfo(NamedTuple):
    """The posterior-mean utilities and the plug-in probability that the first shown wins."""
    utilities: np.ndarray    # [K] posterior-mean utilities
    p_first: float           # predicted P(first wins) at the posterior mean


class UpdateInfo(NamedTuple):
    """The plug-in log predictive probability of the click, computed before it was revealed."""
    log_predictive: float    # log of the plug-in predictive probability of the click, before it


def init(d: int, prior_var: float = DEFAULT_PRIOR_VAR, S: int = 0) -> GaussianState:
    """The isotropic prior N(0, prior_var I) over theta [d], room for a session of S clicks."""
    m0, S0 = np.zeros(d), prior_var * np.eye(d)
    return GaussianState(m0, S0, m0, S0, np.zeros((S, d)), np.zeros(S), 0, new_sites(1, S, d))


def start_session(state: GaussianState, rng=None) -> GaussianState:
    """A new user: the belief restarts from the prior."""
    return state._replace(mean=state.prior_mean, cov=state.prior_cov, t=0,
                          sites=new_sites(1, len(state.session_y), len(state.mean)))


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


def belief_update(state: GaussianState, Phi: np.ndarray, pair: tuple[int, int], y: int,
                  belief: str) -> tuple[GaussianState, UpdateInfo]:
    """`update` by the online belief `belief` (``inference.online_beliefs``); the log predictive in the info
    is the belief's own (the Gaussian's predictive probability of the click, by quadrature)."""
    if belief == "laplace":
        return update(state, Phi, pair, y)
    z = np.asarray(Phi[pair[0]] - Phi[pair[1]], dtype=float)
    t = state.t
    if t >= len(state.session_y):
        raise InputError(f"no-transfer: click {t + 1} of a session of {len(state.session_y)}")
    sites = (checked_sites(state.sites, 1, len(state.session_y), len(z), "no-transfer")   # the kernel writes here
             if belief in EP_BELIEFS else UNREAD_SITES)
    _, m, S, logpred = kn.belief_update(BELIEFS.index(belief), np.zeros(1), state.mean[None], state.cov[None],
                                        np.ones(1, dtype=bool), z, int(y), np.zeros(1), state.prior_mean[None],
                                        state.prior_cov[None], state.session_z, state.session_y, t,
                                        base_draws(len(z)), *sites)
    state = state._replace(mean=m[0], cov=S[0], sites=sites if belief in EP_BELIEFS else state.sites)
    if belief in SESSION_BELIEFS:       # the beliefs that reread the session's clicks keep them
        return recorded(state, z, y), UpdateInfo(float(logpred))
    return state._replace(t=t + 1), UpdateInfo(float(logpred))


def recorded(state: GaussianState, z: np.ndarray, y: int) -> GaussianState:
    """The state with the session's click t kept (its design z [d] and click y, in copies of the session's
    arrays) and t advanced."""
    t = state.t
    if t >= len(state.session_y):
        raise InputError(f"click {t + 1} of a session of {len(state.session_y)}")
    Z, ys = state.session_z.copy(), state.session_y.copy()
    Z[t], ys[t] = z, float(y)
    return state._replace(session_z=Z, session_y=ys, t=t + 1)


def _check(prior_var) -> float:
    if not prior_var > 0:
        raise InputError(f"prior_var must be positive, got {prior_var!r}")
    return float(prior_var)


@ranged
def no_transfer(prior_var: Annotated[float, Range(MIN_POSITIVE, 1e4)] = DEFAULT_PRIOR_VAR,
                belief: str = "laplace") -> Learner:
    """Per-user Bayesian logistic learner with greedy pairs (CODuel's no-transfer ablation).

    Parameters
    ----------
    prior_var : float
        Variance of the isotropic Gaussian prior on theta (logits^2), in (0, 1e4].
    belief : {"laplace", "adf", "laplace-is", "ep", "ep-corrected"}
        The online belief (``inference.online_beliefs``): the one-click Laplace step, assumed-density
        filtering, or the importance-corrected Laplace step.
    """
    prior_var = _check(prior_var)
    if belief not in BELIEFS:
        raise InputError(f"belief must be one of {', '.join(BELIEFS)}, got {belief!r}")
    return Learner(lambda context: init(context.d, prior_var, context.S), lambda state, rng: (start_session(state), None),
                   lambda state, Phi, rng: greedy_select(state, Phi),
                   lambda state, Phi, pair, y: belief_update(state, Phi, pair, y, belief), no_session_info)


@ranged
def pooled(prior_var: Annotated[float, Range(MIN_POSITIVE, 1e4), Search(0.25, 64, log=True)] = DEFAULT_PRIOR_VAR,
           rule: Annotated[str, Search(choices=RULES)] = "greedy") -> Learner:
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
