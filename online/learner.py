"""The learner interface: every policy is one NamedTuple of pure functions.

    learner = no_transfer(prior_var=4.0)              # settings are closed over here
    state = learner.init(context)                      # a State pytree
    state, info = learner.start_session(state, rng)    # a new user arrives
    pair, info = learner.select(state, Phi, rng)       # two distinct persona indices; the state is not changed
    state, info = learner.update(state, Phi, pair, y)  # the click: y = 1 if pair[0] won
    state, info = learner.end_session(state)           # the session joins what the learner knows

The same five signatures for every learner, after blackjax's ``SamplingAlgorithm``: the state is
carried by the caller and never changed in place (a state may share append-only buffers with the
states before it, ``online.append_only``, which no earlier state can see change), and every function but `init` returns it (or, for
`select`, the pair) with an info beside it; what a caller may want to record (predicted
probabilities, beliefs, a gate's state) comes back in the info, never in the state; randomness
comes in as the `rng` argument (a ``numpy.random.Generator``).

Two capabilities are optional, and declared in the tuple, never found by looking for methods:

    k, info = learner.ask(state, Phi, rng)             # a persona to ask about this round, or None
    state, info = learner.answer(state, Phi, k, value) # the stated answer about persona k
    learner.records                                    # click-log fields its infos carry (online.records)

``online.replay.play`` is the one loop that drives a learner. A user's own object with the
five-method plug-in protocol becomes a learner through ``online.protocol.plugin_learner``.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import numpy as np


class Context(NamedTuple):
    """What a learner is told when a run begins."""
    K: int          # personas
    d: int          # features per persona
    S: int          # rounds per session
    beta: float     # click scale, logits per unit of utility
    b: int          # the question bank a lookahead may keep
    N: int          # arrivals in the run

    @classmethod
    def of(cls, context: dict) -> "Context":
        return cls(*(context[k] for k in cls._fields))


class Learner(NamedTuple):
    """Five pure functions over a learner's State, and what it declares beyond them (see the module
    docstring for the signatures)."""
    init: Callable[[Context], Any]
    start_session: Callable[[Any, np.random.Generator], tuple[Any, Any]]
    select: Callable[[Any, np.ndarray, np.random.Generator], tuple[tuple[int, int], Any]]
    update: Callable[[Any, np.ndarray, tuple[int, int], int], tuple[Any, Any]]
    end_session: Callable[[Any], tuple[Any, Any]]
    ask: Optional[Callable[[Any, np.ndarray, np.random.Generator], tuple[Optional[int], Any]]] = None
    answer: Optional[Callable[[Any, np.ndarray, int, float], tuple[Any, Any]]] = None
    records: frozenset = frozenset()


def no_session_info(state):
    """An `end_session` for learners that learn nothing between users: the state, no info."""
    return state, None


def same_state(state, rng=None):
    """A `start_session` for learners that carry everything over between users: the state, no info."""
    return state, None
