"""CODuel's pair rules beyond the paper's, each a setting of ``online.policies.coduel`` (0 or off is the paper's rule).

- `informative_pair` (``component_information``): the lookahead's pair with each pair's score lowered by
  what one click on it says about the user's component, for the users to come.
- `challenged_pair` (``challenger``): CODuel's pair with its second persona replaced by the no-transfer
  learner's favourite where that learner is confident enough that its favourite beats CODuel's first.
  The click then compares the two learners' picks for this user directly: where the population's types
  do not fit the user, the persona the user prefers is shown instead of being ruled out by the prior.
"""
from __future__ import annotations

import math

import numpy as np

from inference import kernels as kn

INFORMATION_SESSIONS = 50  # the component-information term's weight halves after this many completed sessions


def _unrank(best: int, K: int) -> tuple[int, int]:
    """The unordered pair (i < j) at position `best` of the lexicographic order of K personas' pairs."""
    i = 0
    while best >= K - 1 - i:
        best -= K - 1 - i
        i += 1
    return i, i + 1 + best


def informative_pair(log_w: np.ndarray, means: np.ndarray, covs: np.ndarray, active: np.ndarray, P: np.ndarray,
                     bank: np.ndarray, remaining: float, weight: float, completed: int) -> tuple[int, int]:
    """The lookahead's pair with each pair's score lowered by weight x INFORMATION_SESSIONS /
    (INFORMATION_SESSIONS + completed) x what one click on it says about the user's component (nats;
    ``inference.kernels.component_information``): pairs that tell the components apart while the
    population is being learned.

    Parameters
    ----------
    log_w, means, covs, active : np.ndarray
        The user's mixture belief: log weights [C], means [C, d], covariances [C, d, d], active slots [C].
    P : np.ndarray
        [K, d] the question's recalibrated features.
    bank : np.ndarray
        [B, K, d] the lookahead's bank, this question last (``inference.kernels.lookahead_bank``).
    remaining : float
        The lookahead's weighted count of rounds left.
    weight : float
        The setting ``component_information`` (logits per nat), > 0.
    completed : int
        Completed sessions so far.

    Returns
    -------
    tuple of int
        (first, second): ties go to the earliest pair; the larger mean utility is shown first.
    """
    scores, mu = kn.lookahead_scores(log_w, means, covs, active, P, bank, remaining)
    w = weight * INFORMATION_SESSIONS / (INFORMATION_SESSIONS + completed)
    i, j = _unrank(int(np.argmin(scores - w * kn.component_information(log_w, means, covs, active, P))), len(mu))
    return (j, i) if mu[j] > mu[i] else (i, j)


def challenged_pair(pair: tuple[int, int], mean: np.ndarray, cov: np.ndarray, P: np.ndarray,
                    least: float) -> tuple[int, int]:
    """`pair` with its second persona replaced by the no-transfer learner's favourite f (its largest mean
    utility; the lowest index on ties) when f is not shown already and that learner gives f beating the
    pair's first persona a probability of at least `least`: P(u_f > u_first) = Phi(m / s) under its Gaussian
    belief, m and s the mean and sd of (P[f] - P[first]) . theta. Where s is 0 (f and the first have the same
    features) the pair is kept.

    Parameters
    ----------
    pair : tuple of int
        (first, second), CODuel's pair, its favourite first.
    mean, cov : np.ndarray
        The no-transfer learner's belief over theta: [d] and [d, d].
    P : np.ndarray
        [K, d] the question's recalibrated features (what both learners read).
    least : float
        The setting ``challenger``, in [0.5, 1) (below 0.5 it would act as 0.5).

    Returns
    -------
    tuple of int
        (first, f) or `pair`.
    """
    first, second = int(pair[0]), int(pair[1])
    f = int(np.argmax(P @ mean))
    if f in (first, second):
        return first, second
    diff = P[f] - P[first]
    var = float(diff @ cov @ diff)
    if not var > 0.0:
        return first, second
    p = 0.5 * math.erfc(-float(diff @ mean) / math.sqrt(2.0 * var))
    return (first, f) if p >= least else (first, second)


__all__ = ["informative_pair", "challenged_pair", "INFORMATION_SESSIONS"]
