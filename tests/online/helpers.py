"""Small policies used by the replay tests."""
import numpy as np

from online.protocol import Policy


class FixedPairs(Policy):
    """Plays a fixed cycle of pairs and records the clicks it sees."""

    def __init__(self, cycle=((0, 1), (2, 3), (4, 5), (1, 0))):
        self.cycle = [tuple(p) for p in cycle]

    def reset(self, rng, context):
        super().reset(rng, context)
        self.t, self.seen = 0, []

    def select(self, Phi):
        self.last = self.cycle[self.t % len(self.cycle)]
        self.t += 1
        return self.last

    def update(self, outcome):
        self.seen.append((self.last, outcome))


class BadOutput(Policy):
    """Returns `value` at arrival `arrival`, round `round`; a valid pair otherwise."""

    def __init__(self, value, arrival=2, round=5):
        self.value, self.at = value, (arrival, round)

    def reset(self, rng, context):
        super().reset(rng, context)
        self.a, self.t = -1, 0

    def start_student(self):
        self.a += 1
        self.t = 0

    def select(self, Phi):
        out = self.value if (self.a, self.t) == self.at else (0, 1)
        self.t += 1
        return out


class Exploding(Policy):
    def select(self, Phi):
        raise RuntimeError("boom")


class Mutator(Policy):
    def select(self, Phi):
        Phi[0, 0] = 99.0
        return 0, 1


BAD_VALUES = {
    "same index twice": ((3, 3), "same index twice"),
    "out of range": ((0, 6), "out of range"),
    "negative": ((-1, 2), "out of range"),
    "float": ((0.0, 1), "not an integer"),
    "numpy float": ((np.float64(1), 2), "not an integer"),
    "bool": ((True, 2), "not an integer"),
    "string": (("0", 1), "not an integer"),
    "three": ((0, 1, 2), "exactly two"),
    "scalar": (4, "expected a pair"),
    "none": (None, "expected a pair"),
}


class AskEveryRound(Policy):
    """Asks `value` on round `round` of every session, else shows pair (0, 1); for the combined-mode tests."""

    def __init__(self, value=0, round=0):
        self.value, self.round = value, round

    def start_student(self):
        self.t = 0

    def ask(self, Phi):
        k = self.value if self.t == self.round else None
        if k is not None:
            self.t += 1
        return k

    def answer(self, k, value):
        self.answers = getattr(self, "answers", []) + [(k, value)]

    def select(self, Phi):
        self.t += 1
        return (0, 1)
