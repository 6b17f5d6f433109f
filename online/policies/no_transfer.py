"""The no-transfer learner: each user alone, Bayesian logistic with an isotropic prior.

Functional core (state in, state out, no hidden mutation):

    state = init(d, prior_var)            # NoTransferState pytree
    state = start_session(state)          # back to the prior for a new user
    pair, info = select(state, Phi)       # greedy: top two posterior-mean utilities
    state, info = update(state, z, y)     # one click, Laplace step (inference.laplace)

Greedy for strong regret: the pair minimising the belief-averaged regret
E[2 max_p u_p] - E[u_i] - E[u_j] is the top two of the posterior-mean utilities
mean . phi_p, so the posterior mean alone picks the pair. Ties break to the lower index.
`NoTransfer` is the five-method class shell over this core.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference.laplace import laplace_update
from online.pair_rules import greedy_pair
from online.protocol import Policy
from tdmodels.priors import DEFAULT_PRIOR_VAR


class NoTransferState(NamedTuple):
    mean: np.ndarray         # [d] posterior mean of theta for the current user
    cov: np.ndarray          # [d, d] posterior covariance
    prior_mean: np.ndarray   # [d]
    prior_cov: np.ndarray    # [d, d]


class SelectInfo(NamedTuple):
    utilities: np.ndarray    # [K] posterior-mean utilities
    p_first: float           # predicted P(first wins) at the posterior mean


def init(d: int, prior_var: float = DEFAULT_PRIOR_VAR) -> NoTransferState:
    m0, S0 = np.zeros(d), prior_var * np.eye(d)
    return NoTransferState(m0, S0, m0, S0)


def start_session(state: NoTransferState) -> NoTransferState:
    return state._replace(mean=state.prior_mean, cov=state.prior_cov)


def select(state: NoTransferState, Phi: np.ndarray) -> tuple[tuple[int, int], SelectInfo]:
    u = Phi @ state.mean
    i, j = greedy_pair(u)
    eta = u[i] - u[j]
    return (i, j), SelectInfo(u, float(1.0 / (1.0 + np.exp(-eta))))


def update(state: NoTransferState, z: np.ndarray, y: int) -> tuple[NoTransferState, float]:
    """Fold one click (z = phi_first - phi_second, y) in; returns (state, log predictive)."""
    m, S, logpred = laplace_update(state.mean, state.cov, z, y)
    return state._replace(mean=m, cov=S), logpred


class NoTransfer(Policy):
    """Per-user Bayesian logistic learner with greedy pairs (CODuel's no-transfer ablation).

    Settings: prior_var, the variance of the isotropic Gaussian prior on theta (logits^2).
    """

    name = "no-transfer"

    def __init__(self, prior_var: float = DEFAULT_PRIOR_VAR):
        if not prior_var > 0:
            raise ValueError(f"prior_var must be positive, got {prior_var!r}")
        self.prior_var = float(prior_var)

    def reset(self, rng, context):
        super().reset(rng, context)
        self.state = init(context["d"], self.prior_var)

    def start_student(self):
        self.state = start_session(self.state)

    def select(self, Phi):
        (i, j), _ = select(self.state, Phi)
        self._z = Phi[i] - Phi[j]
        return i, j

    def update(self, outcome):
        self.state, _ = update(self.state, self._z, outcome)


class Pooled(NoTransfer):
    """One Bayesian logistic learner shared by every user, never reset (a single population theta).

    The 'Pooled' row of the reference leaderboard. Settings: prior_var, as for NoTransfer; rule:
    "greedy" (top two posterior-mean utilities) or "thompson" (first = argmax of a posterior draw,
    second = argmax over the others of an independent draw).
    """

    name = "pooled"
    RULES = ("greedy", "thompson")

    def __init__(self, prior_var: float = DEFAULT_PRIOR_VAR, rule: str = "greedy"):
        super().__init__(prior_var)
        if rule not in self.RULES:
            raise ValueError(f"rule must be one of {self.RULES}, got {rule!r}")
        self.rule = rule

    def start_student(self):
        pass

    def select(self, Phi):
        if self.rule == "greedy":
            return super().select(Phi)
        from online.policies.hierarchical_ts import thompson_pair

        i, j = thompson_pair(self.state.mean, self.state.cov, Phi, self.rng)
        self._z = Phi[i] - Phi[j]
        return i, j
