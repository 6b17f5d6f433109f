"""The plug-in protocol for users' own policies, its one adapter to a Learner, and the check of a pair.

A plug-in policy is any object with five methods, and may change itself as it plays:

    reset(rng, context)    once per run; context: a dict of K, d, S, beta, b, N
    start_student()        a new user arrives
    select(Phi) -> (i, j)  Phi: [K, d] read-only features; two distinct persona indices
    update(outcome)        1 if the first index won the click, else 0
    end_student()          the session joins the log

The runner never shows a policy the utilities, the probabilities or the profile. One capability is
optional, and declared, never guessed from the methods an object happens to have:

    asks = True            the policy may spend a round on a direct question (the combined mode):
                           `ask(Phi) -> persona or None`, then `answer(k, value)`

``plugin_learner`` turns such an object into an ``online.learner.Learner``, the one type the replay
drives; it is the only place where a policy's state is changed in place. A plug-in policy records
nothing into the click log: a learner whose infos carry its beliefs does (``online.records``).
"""
from __future__ import annotations

import numbers
from typing import Any, NamedTuple

import numpy as np

from online.learner import Learner
from tdmodels.errors import InputError

PROTOCOL = ("reset", "start_student", "select", "update", "end_student")


class Policy:
    """Base class with no-op hooks; subclasses implement `select` and declare what else they offer."""

    name = "policy"
    asks: bool = False                    # whether `ask` / `answer` may spend a round on a direct question

    def reset(self, rng: np.random.Generator, context: dict) -> None:
        self.rng, self.K, self.d = rng, context["K"], context["d"]

    def start_student(self) -> None:
        pass

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        raise NotImplementedError

    def update(self, outcome: int) -> None:
        pass

    def end_student(self) -> None:
        pass


class PolicyOutputError(InputError):
    """A policy returned something that is not two distinct in-range persona indices, or declared what it
    does not offer."""


class PluginState(NamedTuple):
    """A plug-in policy's state as the replay carries it: the object itself (which changes as it plays)."""
    policy: Any
    context: dict
    started: bool            # reset has been called for this run


def plugin_learner(policy, name: str) -> Learner:
    """The Learner over a plug-in policy object. `reset` is called with the run's generator when the first
    user arrives (nothing draws before it); `ask`/`answer` are offered only when the policy declares
    ``asks = True``.

    Raises
    ------
    PolicyOutputError
        A protocol method is missing, `asks` is not a bool, a policy declaring asks lacks ask or answer,
        or it declares click-log records (only a learner's infos carry them).
    """
    missing = [m for m in PROTOCOL if not callable(getattr(policy, m, None))]
    if missing:
        raise PolicyOutputError(f"policy {name!r} lacks protocol method(s) {', '.join(missing)}")
    asks = getattr(policy, "asks", False)
    if type(asks) is not bool:
        raise PolicyOutputError(f"policy {name!r}: asks must be True or False, got {asks!r}")
    if asks and not (callable(getattr(policy, "ask", None)) and callable(getattr(policy, "answer", None))):
        raise PolicyOutputError(f"policy {name!r} declares asks = True but has no ask(Phi) and answer(k, value)")
    if getattr(policy, "records", None):
        raise PolicyOutputError(f"policy {name!r} declares records: a plug-in policy records nothing into the click "
                                "log; write a Learner whose infos carry them (online.records)")

    def init(context):
        return PluginState(policy, context._asdict(), False)

    def start_session(state, rng):
        if not state.started:
            state.policy.reset(rng, dict(state.context))
            state = state._replace(started=True)
        state.policy.start_student()
        return state, None

    def select(state, Phi, rng):
        return state.policy.select(Phi), None

    def update(state, Phi, pair, y):
        state.policy.update(y)
        return state, None

    def end_session(state):
        state.policy.end_student()
        return state, None

    def ask(state, Phi, rng):
        return state.policy.ask(Phi), None

    def answer(state, Phi, k, value):
        state.policy.answer(k, value)
        return state, None

    return Learner(init, start_session, select, update, end_session,
                   ask if asks else None, answer if asks else None)


def check_pair(out, K: int, policy: str, arrival: int, round_: int) -> tuple[int, int]:
    """Validate `select`'s output; return it as two Python ints or raise PolicyOutputError."""
    if type(out) is tuple and len(out) == 2:              # the common case, checked cheaply
        i, j = out
        if type(i) is int and type(j) is int and 0 <= i < K and 0 <= j < K and i != j:
            return i, j
    where = f"policy {policy!r} at arrival {arrival}, round {round_}"
    if not isinstance(out, (tuple, list, np.ndarray)) or (isinstance(out, np.ndarray) and out.ndim != 1):
        # a set, a dict or an iterator has no first and second: the order shown would be an accident
        raise PolicyOutputError(f"{where}: select returned {repr(out)[:80]} ({type(out).__name__}), expected a pair "
                                f"(i, j) of persona indices, first shown first: a tuple, list or 1-D array")
    items = list(out)
    if len(items) != 2:
        raise PolicyOutputError(f"{where}: select returned {out!r}, expected exactly two indices")
    pair = []
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)):
            raise PolicyOutputError(f"{where}: index {v!r} of type {type(v).__name__} is not an integer")
        v = int(v)
        if not 0 <= v < K:
            raise PolicyOutputError(f"{where}: index {v} is out of range 0..{K - 1}")
        pair.append(v)
    if pair[0] == pair[1]:
        raise PolicyOutputError(f"{where}: select returned the same index twice ({pair[0]}, {pair[1]}); the pair must be distinct")
    return pair[0], pair[1]
