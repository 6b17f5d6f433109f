"""Two learners, one followed per session: the one that predicted the recent sessions' clicks better.

    learner = coduel_or_low_rank(memory=20)      # an online.learner.Learner

Both learners see every click (each on the pair actually shown), so each keeps its own population and
belief. Each session follows, for all of its rounds, the learner whose log predictive probabilities of
the clicks of the last `memory` finished sessions sum higher (the first learner on a tie, within
TIE_RTOL, and before any session). A prequential choice between two population models: CODuel's mixture, which serves
populations made of distinct types, and `low-rank`'s single Gaussian, which pools more where users
share a few directions of taste.

Each click's update info carries both learners' P(first wins) before the click (the click log's
``predictions``, one entry per learner), so which learner each session followed can be recomputed
from a run's click log.
"""
from __future__ import annotations

import math
from collections import namedtuple
from typing import Annotated, Any, Callable, NamedTuple

import numpy as np

from online.learner import Learner
from online.policies.coduel import coduel
from online.policies.low_rank import low_rank
from online.setting_range import Range, ranged

MEMORY = 20
TIE_RTOL = 1e-9      # totals this close are a tie: both learners start from N(0, 4 I) and predict the first
                     # session alike, up to rounding, which must not pick the learner


class SelectionState(NamedTuple):
    """Both learners' states and how well each predicted the recent sessions."""
    first: Any
    second: Any
    recent: np.ndarray       # [memory, 2] each learner's summed log predictive of a finished session (ring)
    session: np.ndarray      # [2] the same for the current session so far
    n: int                   # finished sessions
    followed: int            # 0 or 1: the learner followed this session


class SelectionInfo(NamedTuple):
    """Which learner chose the pair, and its own info."""
    followed: int
    info: Any


class SelectionUpdateInfo(NamedTuple):
    """Each learner's P(first wins) before the click (fields named after the learners), and their own infos."""
    predictions: tuple
    infos: tuple


def predictive_selection(first: Learner, second: Learner, memory: int,
                         log_predictive: tuple[Callable[[Any, Any], float], Callable[[Any, Any], float]],
                         names: tuple[str, str] = ("first", "second")) -> Learner:
    """The combined learner (see the module docstring). `log_predictive[k](state_before, update_info)` reads
    learner k's log predictive probability of a click off its state before the click and its update info;
    `names` name the two learners in the click log's predictions."""
    Predictions = namedtuple("Predictions", names)

    def init(context):
        return SelectionState(first.init(context), second.init(context), np.zeros((memory, 2)), np.zeros(2), 0, 0)

    def start_session(state, rng):
        a, info_a = first.start_session(state.first, rng)
        b, info_b = second.start_session(state.second, rng)
        followed = _follows_second(state.recent[:min(state.n, memory)].sum(axis=0))
        return state._replace(first=a, second=b, session=np.zeros(2), followed=followed), (info_a, info_b)

    def select(state, Phi, rng):
        if state.followed == 0:
            pair, info = first.select(state.first, Phi, rng)
        else:
            pair, info = second.select(state.second, Phi, rng)
        return pair, SelectionInfo(state.followed, info)

    def update(state, Phi, pair, y):
        a, info_a = first.update(state.first, Phi, pair, y)
        b, info_b = second.update(state.second, Phi, pair, y)
        lp = np.array([log_predictive[0](state.first, info_a), log_predictive[1](state.second, info_b)])
        first_wins = Predictions(*(math.exp(v) if y else -math.expm1(v) for v in lp))
        return state._replace(first=a, second=b, session=state.session + lp), SelectionUpdateInfo(first_wins,
                                                                                                   (info_a, info_b))

    def end_session(state):
        a, info_a = first.end_session(state.first)
        b, info_b = second.end_session(state.second)
        recent = state.recent.copy()
        recent[state.n % memory] = state.session
        return state._replace(first=a, second=b, recent=recent, n=state.n + 1), (info_a, info_b)

    return Learner(init, start_session, select, update, end_session, records=frozenset({"click_predictions"}))


def _follows_second(totals) -> int:
    """1 if the second learner's summed log predictive beats the first's by more than a tie, else 0."""
    return int(totals[1] - totals[0] > TIE_RTOL * (1.0 + abs(totals[0])))


def followed_from_log(predictions: dict, outcome: np.ndarray, memory: int = MEMORY,
                      names: tuple[str, str] = ("coduel", "low_rank")) -> np.ndarray:
    """Which learner each session followed, recomputed from a run's click log.

    Parameters
    ----------
    predictions : dict
        The click log's ``predictions``: learner name -> [N, S] P(first wins) before each click.
    outcome : np.ndarray
        [N, S] the clicks, 1 if the first persona won.
    memory : int
        The policy's setting.
    names : tuple of str
        The two learners, in the policy's order.

    Returns
    -------
    np.ndarray
        [N] 0 where the session followed names[0], 1 where it followed names[1].
    """
    y = np.asarray(outcome) == 1
    lp = np.stack([np.log(np.where(y, predictions[k], 1.0 - np.asarray(predictions[k]))).sum(axis=1) for k in names],
                  axis=1)                                                  # [N, 2] per session
    return np.array([_follows_second(lp[max(0, n - memory):n].sum(axis=0)) for n in range(len(lp))], dtype=np.int64)


def _coduel_log_predictive(state, info) -> float:
    """What CODuel acted on: the population learner while transfer is on, else the no-transfer learner."""
    return info.log_predictive_population if state.transfer else info.log_predictive_alone


@ranged
def coduel_or_low_rank(memory: Annotated[int, Range(1, 10_000)] = MEMORY) -> Learner:
    """CODuel and `low-rank`, each session following the one that predicted the last `memory` sessions'
    clicks better (CODuel first).

    Parameters
    ----------
    memory : int
        Finished sessions whose clicks decide, in [1, 10000].
    """
    return predictive_selection(coduel(), low_rank(), int(memory),
                                (_coduel_log_predictive, lambda state, info: info.log_predictive), ("coduel", "low_rank"))
