"""RUCB (Zoghi et al. 2014), pooled over all users, non-contextual: arms are the personas.

    U_ij = W_ij / N_ij + sqrt(alpha ln t / N_ij),  N_ij = W_ij + W_ji  (U_ij = 1 where N_ij = 0,
    U_ii = 1/2), t = comparisons so far + 1.

Champion, as in the paper's Algorithm 1: the candidates C are the arms c with U_cj >= 1/2 for every
j. The hypothesised best arm B is kept while it stays a candidate and becomes the sole candidate when
there is one. With no candidate the champion is drawn uniformly among all arms; with one, it is that
arm; with several, it is B with probability 1/2 (when B is a candidate) and otherwise drawn uniformly
among the other candidates. Challenger: argmax_{j != c} U_jc (ties at random). The champion is shown
first. The question's features are ignored, and the counts are never reset between users.

A first version kept the last champion shown for as long as it stayed a candidate: it explored far
less than Zoghi et al.'s rule, and on the reference's own 48 real sessions its excess regret fell
below the published RUCB curve's by about 1 per user over the first arrivals; with the paper's rule
the two agree over the 350 arrivals of a real-session roster (docs/results/leaderboard.md).
"""
from __future__ import annotations

from typing import Annotated, NamedTuple

import numpy as np

from online.learner import Learner, no_session_info, same_state
from online.setting_range import Range, Search, ranged

ALPHA = 0.51


class RUCBState(NamedTuple):
    """Pairwise win counts over the personas and the hypothesised best arm."""
    wins: np.ndarray      # [K, K] wins[i, j]: times i beat j
    best: int             # B: the last sole candidate while it stays a candidate, -1 for none


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


def this_round(state: RUCBState, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray, int]:
    """(U, candidates, B) of the round about to be played: B kept while a candidate, the sole candidate
    when there is one."""
    U = upper_bounds(state.wins, alpha)
    candidates = np.flatnonzero((U >= 0.5).all(1))
    best = state.best if state.best in candidates else -1
    if len(candidates) == 1:
        best = int(candidates[0])
    return U, candidates, best


def select(state: RUCBState, rng: np.random.Generator, alpha: float = ALPHA) -> tuple[tuple[int, int], SelectInfo]:
    """(champion, challenger): the champion is shown first."""
    U, candidates, best = this_round(state, alpha)
    if len(candidates) == 0:
        c = int(rng.integers(len(U)))
    elif len(candidates) == 1:
        c = int(candidates[0])
    elif best >= 0:
        others = candidates[candidates != best]
        c = best if rng.random() < 0.5 else int(others[rng.integers(len(others))])
    else:
        c = int(candidates[rng.integers(len(candidates))])
    col = U[:, c].copy()
    col[c] = -np.inf
    top = np.flatnonzero(col == col.max())
    d = int(top[rng.integers(len(top))]) if len(top) > 1 else int(top[0])
    return (c, d), SelectInfo(U, candidates)


def update(state: RUCBState, pair: tuple[int, int], outcome: int, alpha: float = ALPHA) -> RUCBState:
    """Count the comparison; B becomes what this round made it."""
    _, _, best = this_round(state, alpha)
    i, j = pair if outcome else pair[::-1]
    wins = state.wins.copy()
    wins[i, j] += 1
    return RUCBState(wins, best)


@ranged
def rucb(alpha: Annotated[float, Range(0.5, 100, lo_open=True), Search(0.51, 10, log=True)] = ALPHA) -> Learner:
    """Pooled, non-contextual RUCB over the personas; the counts are never reset between users.

    Parameters
    ----------
    alpha : float
        Exploration, in (0.5, 100] (default 0.51).
    """
    alpha = float(alpha)
    return Learner(lambda context: init(context.K), same_state, lambda state, Phi, rng: select(state, rng, alpha),
                   lambda state, Phi, pair, y: (update(state, pair, y, alpha), None), no_session_info)
