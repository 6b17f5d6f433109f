"""Uniformly random distinct pairs: the benchmark's zero."""
from __future__ import annotations

from typing import NamedTuple

from online.learner import Context, Learner, no_session_info, same_state


class RandomState(NamedTuple):
    """Nothing: the personas are the rows of each question's Phi."""


def random_pairs() -> Learner:
    """A uniformly random ordered pair of distinct personas every round."""

    def init(context: Context) -> RandomState:
        return RandomState()

    def select(state: RandomState, Phi, rng):
        i, j = rng.choice(len(Phi), size=2, replace=False)
        return (int(i), int(j)), None

    return Learner(init, same_state, select, lambda state, Phi, pair, y: (state, None), no_session_info)
