"""The five-method policy protocol and the check of what a policy returns.

A policy is any object with

    reset(rng, context)    once per run; context: K, d, S, beta, b, N
    start_student()        a new user arrives
    select(Phi) -> (i, j)  Phi: [K, d] read-only features; two distinct persona indices
    update(outcome)        1 if the first index won the click, else 0
    end_student()          the session joins the log

The runner never shows a policy the utilities, the probabilities or the profile.

Optional capabilities are declared, never guessed from the methods an object happens to have:

    records = frozenset({...})   what the replay may read into the click log after the run, each a
                                 method of that name: "arrival_priors" (a MixturePrior, one prior per
                                 arrival, zero-padded: what the policy believed of each user when the
                                 user arrived), "arrival_recalibrations" ([N, K, K]), "session_beliefs"
                                 (a MixturePrior per arrival: the belief at session end, to validate),
                                 "click_predictions" ({learner: [N, S]} P(first wins) before each click)
    asks = True                  the policy may spend a round on a direct question (the combined
                                 mode): `ask(Phi) -> persona or None`, then `answer(k, value)`
"""
from __future__ import annotations

import numbers

import numpy as np
from tdmodels.errors import InputError

CONTEXT_KEYS = ("K", "d", "S", "beta", "b", "N")


RECORDS = ("arrival_priors", "arrival_recalibrations", "session_beliefs", "click_predictions")


class Policy:
    """Base class with no-op hooks; subclasses implement `select` and declare what else they offer."""

    name = "policy"
    records: frozenset = frozenset()      # which of RECORDS the replay may read after the run
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
    """A policy returned something that is not two distinct in-range persona indices."""


def check_pair(out, K: int, policy: str, arrival: int, round_: int) -> tuple[int, int]:
    """Validate `select`'s output; return it as two Python ints or raise PolicyOutputError."""
    if type(out) is tuple and len(out) == 2:              # the common case, checked cheaply
        i, j = out
        if type(i) is int and type(j) is int and 0 <= i < K and 0 <= j < K and i != j:
            return i, j
    where = f"policy {policy!r} at arrival {arrival}, round {round_}"
    try:
        items = list(out)
    except TypeError:
        raise PolicyOutputError(f"{where}: select returned {out!r}, expected a pair (i, j) of persona indices") from None
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
