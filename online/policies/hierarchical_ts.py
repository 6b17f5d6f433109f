"""Meta-TS (Kveton et al., ICML 2021) and HierTS (Hong et al., AISTATS 2022): Thompson sampling
per user under a Gaussian prior whose mean is learned across users.

Model: mu ~ N(mu_q, Sigma_q) (the meta-posterior Q, from completed users), theta_u ~ N(mu, Sigma_0).
- Meta-TS: each new user draws mu ~ Q and runs TS under N(mu, Sigma_0);
- HierTS: TS under the exact marginal N(mu_q, Sigma_q + Sigma_0) (drawing mu then theta_u each
  round is drawing theta_u from this marginal's posterior).
Within a session the user's belief takes one Laplace step per click (``inference.laplace``).
At session end the user's clicks are read off as a Gaussian likelihood site in information
form, P = S^-1 - S0^-1 and h = S^-1 m - S0^-1 m0 (posterior N(m, S) under prior N(m0, S0)),
and folded into Q exactly: integrating theta_u ~ N(mu, Sigma_0) against the site gives
precision Lambda = P (I + Sigma_0 P)^-1 and linear term (I + P Sigma_0)^-1 h in mu (valid for
singular P).
Pair (double TS, ours): first = argmax of a sampled theta, second = argmax over the other
personas of a second, independent sample. Settings (ours): Sigma_0 = s0_var I, Q starts at
N(0, q_var I); the defaults 1 + 3 give the no-transfer learner's N(0, 4 I) before any user. The
leaderboard runs the settings chosen on dev (``tutorduel tune``).
"""
from __future__ import annotations

from typing import Annotated, NamedTuple

import numpy as np

from inference.laplace import laplace_update
from online.pair_rules import thompson_pair
from online.learner import Learner
from online.setting_range import MIN_POSITIVE, Range, Search, ranged
from tdmodels.errors import InputError

S0_VAR, Q_VAR = 1.0, 3.0
# The tuner's search (online.search_space): users' spread around the mean (four decades, down to nearly one shared
# theta) and the meta-prior's width (two and a half).
S0_SEARCH, Q_SEARCH = Search(0.001, 10, log=True), Search(0.1, 30, log=True)
S0 = Annotated[float, Range(MIN_POSITIVE, 1e4), S0_SEARCH]
Q = Annotated[float, Range(MIN_POSITIVE, 1e4), Q_SEARCH]


class HierTSState(NamedTuple):
    """The posterior of the population mean Q (in information form), users' spread around it, and the current user's prior and Gaussian posterior."""
    q_prec: np.ndarray     # [d, d] precision of Q
    q_lin: np.ndarray      # [d] Q's precision times mean
    sigma0: np.ndarray     # [d, d] users' spread around mu
    prior_mean: np.ndarray  # [d] the current user's prior
    prior_cov: np.ndarray  # [d, d]
    mean: np.ndarray       # [d] the current user's posterior
    cov: np.ndarray        # [d, d]


def init(d: int, s0_var: float = S0_VAR, q_var: float = Q_VAR) -> HierTSState:
    """Q ~ N(0, q_var I) before any user; users spread s0_var I around it."""
    z = np.zeros(d)
    return HierTSState(np.eye(d) / q_var, z, s0_var * np.eye(d), z, (q_var + s0_var) * np.eye(d), z,
                       (q_var + s0_var) * np.eye(d))


def meta_posterior(state: HierTSState) -> tuple[np.ndarray, np.ndarray]:
    """Q as (mean [d], covariance [d, d])."""
    cov = np.linalg.inv(state.q_prec)
    return cov @ state.q_lin, cov


def start_session(state: HierTSState, variant: str, rng: np.random.Generator) -> HierTSState:
    """The new user's prior: Q's posterior plus the spread (hierts), or a draw of Q with the spread (meta, Meta-TS)."""
    mq, Sq = meta_posterior(state)
    if variant == "meta":
        m0, S0 = rng.multivariate_normal(mq, Sq, method="cholesky"), state.sigma0    # unique factor: same rows everywhere
    else:
        m0, S0 = mq, Sq + state.sigma0
    return state._replace(prior_mean=m0, prior_cov=S0, mean=m0, cov=S0)


def select(state: HierTSState, Phi: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """Double Thompson sampling from the current user's posterior."""
    return thompson_pair(state.mean, state.cov, Phi, rng)


def update(state: HierTSState, z: np.ndarray, y: int) -> HierTSState:
    """One click into the user's posterior (``inference.laplace.laplace_update``)."""
    m, S, _ = laplace_update(state.mean, state.cov, z, y)
    return state._replace(mean=m, cov=S)


def end_session(state: HierTSState) -> HierTSState:
    """Fold the finished user's likelihood site into Q."""
    Pi, P0 = np.linalg.inv(state.cov), np.linalg.inv(state.prior_cov)
    P = 0.5 * ((Pi - P0) + (Pi - P0).T)
    h = Pi @ state.mean - P0 @ state.prior_mean
    I = np.eye(len(h))
    lam = P @ np.linalg.inv(I + state.sigma0 @ P)
    eta = np.linalg.solve(I + P @ state.sigma0, h)
    return state._replace(q_prec=state.q_prec + 0.5 * (lam + lam.T), q_lin=state.q_lin + eta)


def _check(s0_var, q_var) -> tuple[float, float]:
    if not s0_var > 0 or not q_var > 0:
        raise InputError(f"s0_var and q_var must be positive, got {s0_var!r}, {q_var!r}")
    return float(s0_var), float(q_var)


def _learner(variant: str, s0_var: float, q_var: float) -> Learner:
    s0_var, q_var = _check(s0_var, q_var)
    return Learner(lambda context: init(context.d, s0_var, q_var),
                   lambda state, rng: (start_session(state, variant, rng), None),
                   lambda state, Phi, rng: (select(state, Phi, rng), None),
                   lambda state, Phi, pair, y: (update(state, Phi[pair[0]] - Phi[pair[1]], y), None),
                   lambda state: (end_session(state), None))


@ranged
def hierts(s0_var: S0 = S0_VAR, q_var: Q = Q_VAR) -> Learner:
    """HierTS: Thompson sampling under the marginal N(mu_q, Sigma_q + Sigma_0).

    Parameters
    ----------
    s0_var : float
        Sigma_0 = s0_var I, users' spread around mu, in (0, 1e4] (default 1.0).
    q_var : float
        Q starts at N(0, q_var I), in (0, 1e4] (default 3.0).
    """
    return _learner("hier", s0_var, q_var)


@ranged
def meta_ts(s0_var: S0 = S0_VAR, q_var: Q = Q_VAR) -> Learner:
    """Meta-TS: each user draws mu ~ Q, then Thompson sampling under N(mu, Sigma_0). Settings as `hierts`."""
    return _learner("meta", s0_var, q_var)
