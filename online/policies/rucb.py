"""RUCB (Zoghi et al. 2014), pooled over all users, non-contextual: arms are the personas.

    U_ij = W_ij / N_ij + sqrt(alpha ln t / N_ij),  N_ij = W_ij + W_ji  (U_ij = 1 where N_ij = 0,
    U_ii = 1/2), t = comparisons so far + 1.

Champion: an arm c with U_cj >= 1/2 for every j (the previous champion when it still
qualifies, else one drawn at random among the candidates; a random arm when none does).
Challenger: argmax_{j != c} U_jc (ties at random). The question's features are ignored,
and the counts are never reset between users.
"""
from __future__ import annotations

from typing import Annotated, NamedTuple

import numpy as np

from online.learner import Learner, no_session_info, same_state
from online.setting_range import Range, ranged

ALPHA = 0.51


class RUCBState(NamedTuple):
    """Pairwise win counts over the personas and the last champion."""
    wins: np.ndarray      # [K, K] wins[i, j]: times i beat j
    champion: int         # previous champion, -1 before the first


class SelectInfo(NamedTuple):
    """The upper confidence bounds and the candidate champions of this round."""
    upper: np.ndarray     # [K, K] the upper confidence bounds U
    candidates: np.ndarray  # arms c with U[c, j] >= 1/2 for every j


def init(K: int) -> RUCBState:
    """No comparisons yet over K personas."""
    return RUCBState(np.zeros((K, K)), -1)


def upper_bounds(wins: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """U [K, K] of the RUCB rule from the win counts."""
    n = wins + wins.T
    t = n.sum() / 2 + 1
    with np.errstate(divide="ignore", invalid="ignore"):
        U = np.where(n > 0, wins / n + np.sqrt(alpha * np.log(t) / n), 1.0)
    np.fill_diagonal(U, 0.5)
    return U


def select(state: RUCBState, rng: np.random.Generator, alpha: float = ALPHA) -> tuple[tuple[int, int], SelectInfo]:
    """(champion, challenger): the champion is shown first."""
    U = upper_bounds(state.wins, alpha)
    candidates = np.flatnonzero((U >= 0.5).all(1))
    if state.champion in candidates:
        c = state.champion
    elif len(candidates):
        c = int(rng.choice(candidates))
    else:
        c = int(rng.integers(len(U)))
    col = U[:, c].copy()
    col[c] = -np.inf
    best = np.flatnonzero(col == col.max())
    d = int(rng.choice(best)) if len(best) > 1 else int(best[0])
    return (c, d), SelectInfo(U, candidates)


def update(state: RUCBState, pair: tuple[int, int], outcome: int) -> RUCBState:
    """Count the comparison; the champion shown (first) stays the champion to beat."""
    i, j = pair if outcome else pair[::-1]
    wins = state.wins.copy()
    wins[i, j] += 1
    return state._replace(wins=wins, champion=int(pair[0]))


@ranged
def rucb(alpha: Annotated[float, Range(0.5, 100, lo_open=True)] = ALPHA) -> Learner:
    """Pooled, non-contextual RUCB over the personas; the counts are never reset between users.

    Parameters
    ----------
    alpha : float
        Exploration, in (0.5, 100] (default 0.51).
    """
    alpha = float(alpha)
    return Learner(lambda context: init(context.K), same_state, lambda state, Phi, rng: select(state, rng, alpha),
                   lambda state, Phi, pair, y: (update(state, pair, y), None), no_session_info)
