"""The learner interface: every built-in policy is one NamedTuple of pure functions.

    learner = no_transfer(prior_var=4.0)              # settings are closed over here
    state = learner.init(context)                      # a State pytree
    state, info = learner.start_session(state, rng)    # a new user arrives
    pair, info = learner.select(state, Phi, rng)       # two distinct persona indices; the state is not changed
    state, info = learner.update(state, Phi, pair, y)  # the click: y = 1 if pair[0] won
    state, info = learner.end_session(state)           # the session joins what the learner knows

The same five signatures for every learner, after blackjax's ``SamplingAlgorithm``: the state is
carried by the caller and never changed in place, and every function but `init` returns it (or, for
`select`, the pair) with an info beside it; what a caller may want to record (predicted
probabilities, beliefs, a gate's state) comes back in the ``info`` beside it, never in the state;
randomness comes in as the `rng` argument. ``LearnerPolicy`` adapts a learner to the five-method
``online.protocol.Policy`` that the replay loop and users' own policies speak, and keeps the
infos it was given.

Every function that may draw takes the run's `rng` (a ``numpy.random.Generator``): `init` does not,
`start_session` and `select` do.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from online.protocol import Policy


class Context(NamedTuple):
    """What a learner is told when a run begins (the protocol's context, as a tuple)."""
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
    """Five pure functions over a learner's State (see the module docstring for their signatures)."""
    init: Callable[[Context], Any]
    start_session: Callable[[Any, np.random.Generator], tuple[Any, Any]]
    select: Callable[[Any, np.ndarray, np.random.Generator], tuple[tuple[int, int], Any]]
    update: Callable[[Any, np.ndarray, tuple[int, int], int], tuple[Any, Any]]
    end_session: Callable[[Any], tuple[Any, Any]]


def no_session_info(state):
    """An `end_session` for learners that learn nothing between users: the state, no info."""
    return state, None


def same_state(state, rng=None):
    """A `start_session` for learners that carry everything over between users: the state, no info."""
    return state, None


class LearnerPolicy(Policy):
    """The five-method protocol over a Learner. `last_info` is the info of the latest call that returns
    one; `infos` keeps (kind, info) of every call that returned one, in order, when `record` is true."""

    def __init__(self, learner: Learner, name: str = "learner", record: bool = False):
        self.learner, self.name, self.record = learner, name, record

    def reset(self, rng, context):
        super().reset(rng, context)
        self.state = self.learner.init(Context.of(context))
        self.infos, self.last_info = [], None

    def start_student(self):
        self.state, info = self.learner.start_session(self.state, self.rng)
        self._keep("start_session", info)

    def select(self, Phi):
        pair, info = self.learner.select(self.state, Phi, self.rng)
        self._pair, self._Phi = pair, Phi
        self._keep("select", info)
        return pair

    def update(self, outcome):
        self.state, info = self.learner.update(self.state, self._Phi, self._pair, int(outcome))
        self._keep("update", info)

    def end_student(self):
        self.state, info = self.learner.end_session(self.state)
        self._keep("end_session", info)

    def _keep(self, kind, info):
        self.last_info = info
        if self.record and info is not None:
            self.infos.append((kind, info))
