"""A user's belief under a Gaussian-mixture prior: one Laplace posterior per component, reweighted.

State (a pytree of arrays, pure functions, no hidden mutation):

    belief = init_belief(prior)                 # MixtureBelief
    belief, logpred = update_belief(belief, z, y)

Inside every component k the belief is a Gaussian N(m_k, S_k), updated by the same
one-click Laplace step as the no-transfer learner (``inference.laplace.click_mode`` on
eta = z . theta, rank-one covariance downdate), in every component. The log weights are
reweighted by each component's predictive probability of the click,
p(y | k, past) ~= sigmoid(+-a_k / sqrt(1 + pi s_k / 8)) (probit approximation of the
logistic-normal integral, a_k = z . m_k, s_k = z' S_k z), so after the session the
weights are each component's share of the user's Laplace-approximated evidence. The update runs
the compiled ``inference.kernels.mixture_update`` (CODuel's own); ``inference.reference`` states it
in NumPy.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from inference.kernels.belief import mixture_update
from inference.laplace import log_sigmoid
from tdmodels.errors import InputError
from tdmodels.priors import MixturePrior


class MixtureBelief(NamedTuple):
    """One user's posterior: a Gaussian (Laplace) posterior inside every prior component, with the
    components' log posterior weights (-inf on empty slots)."""
    log_w: np.ndarray        # [C] normalised log weights
    means: np.ndarray        # [C, d]
    covs: np.ndarray         # [C, d, d]


def init_belief(prior: MixturePrior) -> MixtureBelief:
    """The belief before any click: the prior itself.

    Parameters
    ----------
    prior : MixturePrior
        weights [C] (zeros allowed: those slots get log weight -inf), means [C, d], covs [C, d, d].

    Returns
    -------
    MixtureBelief
        log_w [C] normalised, means [C, d], covs [C, d, d] (copies).
    """
    w = np.asarray(prior.weights, dtype=float)
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    return MixtureBelief(log_w - logsumexp(log_w), np.array(prior.means, dtype=float), np.array(prior.covs, dtype=float))


def probit_log_predictive(a, s, y: int):
    """log p(y) for eta ~ N(a, s), P(y = 1 | eta) = sigmoid(eta): the probit approximation."""
    return log_sigmoid((a if y else -a) / np.sqrt(1.0 + np.pi * s / 8.0))


def update_belief(belief: MixtureBelief, z: np.ndarray, y: int) -> tuple[MixtureBelief, float]:
    """Fold one click (z = phi_first - phi_second, y in {0, 1}) in; returns (belief, log p(y | belief)).
    Slots with log weight -inf stay empty. Runs the compiled ``inference.kernels.mixture_update``."""
    log_w = np.asarray(belief.log_w, dtype=float)
    means, covs = np.ascontiguousarray(belief.means, dtype=float), np.ascontiguousarray(belief.covs, dtype=float)
    z = np.ascontiguousarray(z, dtype=float)
    C, d = means.shape
    if log_w.shape != (C,) or covs.shape != (C, d, d) or z.shape != (d,):
        raise InputError(f"update_belief: log_w {log_w.shape}, means {means.shape}, covs {covs.shape} and z {z.shape} "
                         f"do not fit one belief of {C} components in {d} dimensions")
    if int(y) not in (0, 1) or not np.isfinite(z).all():
        raise InputError(f"update_belief: y must be 0 or 1 and z finite, got y={y!r}")
    w, m, S, log_pred = mixture_update(log_w, means, covs, np.isfinite(log_w), z, int(y))
    return MixtureBelief(w, m, S), float(log_pred)


def expected_utilities(belief: MixtureBelief, Phi: np.ndarray) -> np.ndarray:
    """Belief-averaged utilities [K] = sum_k w_k Phi m_k."""
    return Phi @ (np.exp(belief.log_w) @ belief.means)
