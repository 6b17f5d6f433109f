"""Small policies used by the replay tests."""
from typing import Annotated

import numpy as np

from online.protocol import Policy
from online.setting_range import Range, Search


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

    asks = True

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


class Exits(Policy):
    """Ends its process at its first select: `how` = "sys" (sys.exit(code)) or "os" (os._exit(code))."""

    def __init__(self, how="sys", code=0):
        self.how, self.code = how, code

    def select(self, Phi):
        import os
        import sys

        if self.how == "os":
            os._exit(self.code)
        sys.exit(self.code)


class Sleeps(Policy):
    """Appends its process id to `pid_file` (if given) at reset, then sleeps `seconds` at its first select."""

    def __init__(self, seconds=3600.0, pid_file=""):
        self.seconds, self.pid_file = seconds, pid_file

    def reset(self, rng, context):
        import os

        super().reset(rng, context)
        if self.pid_file:
            with open(self.pid_file, "a") as fh:
                fh.write(f"{os.getpid()}\n")

    def select(self, Phi):
        import time

        if not getattr(self, "slept", False):
            self.slept = True
            time.sleep(self.seconds)
        return 0, 1


class PicklesBack(Policy):
    """A hostile plug-in: at reset it rewires its worker's pipe so that the cell's result goes back to the
    parent as a pickle that, unpickled, would run ``touch <flag>`` there."""

    def __init__(self, flag=""):
        self.flag = flag

    def reset(self, rng, context):
        import multiprocessing.connection as mc
        import os

        super().reset(rng, context)
        flag, send = self.flag, mc.Connection.send

        class Payload:
            def __reduce__(self):
                return os.system, (f"touch {flag}",)

        def hostile_send(conn, obj):
            if isinstance(obj, tuple) and obj and obj[0] == "ok":
                obj = ("ok", Payload())
            send(conn, obj)

        mc.Connection.send = hostile_send

    def select(self, Phi):
        return 0, 1


def plugin_module(folder, name: str, monkeypatch):
    """Write a plug-in module `name` (one policy, P, that always shows the first two personas) into `folder`,
    put the folder on sys.path, and return the module file (edit it to make a new code version)."""
    mod = folder / f"{name}.py"
    mod.write_text("from online.protocol import Policy\n\nclass P(Policy):\n"
                   "    def select(self, Phi):\n        return 0, 1\n")
    monkeypatch.syspath_prepend(str(folder))
    return mod


def tunable_pairs(explore: Annotated[float, Range(0, 1)] = 0.5, pair: Annotated[int, Range(0, 4)] = 0):
    """A learner factory with two Range-annotated settings and no Search (the tuner's plug-in case): shows the
    pair (pair, pair + 1), or with probability `explore` a random pair."""
    from online.learner import Learner, no_session_info, same_state

    def select(state, Phi, rng):
        if rng.random() < explore:
            i, j = rng.choice(len(Phi), 2, replace=False)
            return (int(i), int(j)), None
        return (pair, pair + 1), None

    return Learner(lambda context: None, same_state, select, lambda state, Phi, p, y: (state, None), no_session_info)


class RaisesWhenGreedy(Policy):
    """Raises at its first select when `explore` is below 0.5: a plug-in that fails on part of its space."""

    def __init__(self, explore: Annotated[float, Range(0, 1), Search(0, 1)] = 0.9):
        self.explore = explore

    def select(self, Phi):
        if self.explore < 0.5:
            raise RuntimeError(f"explore={self.explore} is not supported")
        return 0, 1


class SleepsWhenGreedy(Policy):
    """Sleeps an hour at its first select when `explore` is below 0.5 (a plug-in that hangs on part of its space)."""

    def __init__(self, explore: Annotated[float, Range(0, 1), Search(0, 1)] = 0.9):
        self.explore = explore

    def select(self, Phi):
        import time

        if self.explore < 0.5:
            time.sleep(3600)
        return 0, 1


def open_ranges(rate: Annotated[float, Range(0, 10, lo_open=True)] = 1.0,
                cap: Annotated[float, Range(1, float("inf"))] = 2.0):
    """A plug-in whose ranges are open at one end or infinite (searched inside, or left out)."""
    return tunable_pairs()


def choices_only(x0=0, x1=0, x2=0, x3=0):
    """A plug-in with four untyped settings (a tuner's grid of named choices)."""
    return tunable_pairs()


class HangsWhenBuilt(Policy):
    """Sleeps an hour in its constructor when `explore` is below 0.5 (a plug-in that hangs before any cell)."""

    def __init__(self, explore: Annotated[float, Range(0, 1), Search(0, 1)] = 0.9):
        import time

        if explore < 0.5:
            time.sleep(3600)
        self.explore = explore

    def select(self, Phi):
        return 0, 1
