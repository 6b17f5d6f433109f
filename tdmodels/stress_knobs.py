"""The knobs of a stress world (``tdmodels.stress_worlds`` builds them) and the presets the leaderboard's
stress section runs: plain data and its checks, light enough for the command line's help to read."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .errors import InputError
from .limits import MAX_ARRIVALS

SPREAD = 1.5                 # sd of a type's mean taste of each persona, logits
CAMP_DISTANCE = 2.0          # a polarised camp's distance from the origin along its axis, logits
QUESTIONS = 96               # questions in the pool; a session asks SESSION_LENGTH of them
SESSION_LENGTH = 24
MAX_STRESS_ARRIVALS = 5_000  # a stress world holds one student per arrival: P is arrivals x 96 x 36 floats


class StressKnobs(NamedTuple):
    """The knobs of a stress world (see ``tdmodels.stress_worlds``' docstring); `check` says which one is out of
    range."""
    arrivals: int = 350
    types: int = 4
    tightness: float = 0.25
    polarisation: float = 0.0
    block_length: int = 0            # 0: no drift
    shift_at: float = 0.0            # 0: no shift
    shift_strength: float = 1.0
    unstructured: float = 0.0
    rater: float = 0.5
    noise: float = 0.3
    closeness: float = 0.0           # drift: 0 fresh types; towards 1, lookalikes of every earlier type's mean taste

    def check(self) -> "StressKnobs":
        """These knobs as exact Python numbers, or InputError naming the first one out of range."""
        ints = {"arrivals": (1, MAX_STRESS_ARRIVALS), "types": (1, 64), "block_length": (0, MAX_ARRIVALS)}
        floats = {"tightness": (0.0, 4.0), "polarisation": (0.0, 1.0), "shift_at": (0.0, 1.0),
                  "shift_strength": (0.0, 1.0), "unstructured": (0.0, 1.0), "rater": (-4.0, 4.0),
                  "noise": (0.0, 3.0), "closeness": (0.0, 1.0)}
        out = {}
        for name, value in self._asdict().items():
            if name in ints:
                lo, hi = ints[name]
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
                        or not lo <= value <= hi:
                    raise InputError(f"stress knob {name} = {value!r}: an integer in [{lo:,}, {hi:,}]")
                out[name] = int(value)
            else:
                lo, hi = floats[name]
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
                        or not lo <= float(value) <= hi:
                    raise InputError(f"stress knob {name} = {value!r}: a number in [{lo:g}, {hi:g}]")
                out[name] = float(value)
        knobs = StressKnobs(**out)
        if knobs.block_length and knobs.shift_at:
            raise InputError("stress knobs block_length and shift_at: a world drifts in blocks or shifts once, "
                             "not both")
        if knobs.closeness and not knobs.block_length:
            raise InputError(f"stress knob closeness = {knobs.closeness}: a block's types copy the earlier blocks', so it "
                             f"needs drift (block_length > 0)")
        if knobs.block_length and knobs.block_length >= knobs.arrivals:
            raise InputError(f"stress knob block_length = {knobs.block_length}: with {knobs.arrivals} arrivals there "
                             f"would be one block and no drift; give fewer than the arrivals (0: no drift)")
        if knobs.shift_at and not 1 <= round(knobs.shift_at * knobs.arrivals) < knobs.arrivals:
            raise InputError(f"stress knob shift_at = {knobs.shift_at}: with {knobs.arrivals} arrivals the shift "
                             f"must leave at least one arrival on each side")
        return knobs


# The family the leaderboard's stress section runs, each with what it tries.
STRESS_PRESETS = {
    "stress-types": (StressKnobs(types=5, tightness=0.2),
                     "five tight student types that recur throughout: what transfer is for"),
    "stress-loose": (StressKnobs(types=5, tightness=1.0),
                     "five loose types: students of a type differ as much as the types do"),
    "stress-polarised": (StressKnobs(types=4, tightness=0.3, polarisation=1.0, rater=0.0),
                         "two camps with opposed tastes and a useless rater: the population mean serves no one"),
    "stress-drift": (StressKnobs(types=3, tightness=0.2, block_length=35),
                     "every 35 arrivals three fresh tight types that never recur"),
    "stress-lookalike": (StressKnobs(arrivals=300, types=1, tightness=0.2, block_length=25, closeness=0.8),
                         "every 25 arrivals a fresh tight type that keeps the earlier types' two favourite personas and "
                         "prefers every other persona to both: a prior that is confidently wrong"),
    "stress-shift": (StressKnobs(types=3, tightness=0.25, shift_at=0.5, shift_strength=0.8),
                     "three types, then from mid-run students whose tastes run against them"),
    "stress-unstructured": (StressKnobs(unstructured=1.0, rater=0.0),
                            "every student on their own, no shared structure and a useless rater"),
    "stress-rater": (StressKnobs(types=4, tightness=0.5, rater=2.0),
                     "students who mostly follow the rater: one shared direction dominates"),
}


def preset_knobs(name: str) -> StressKnobs:
    """The knobs of a preset of `STRESS_PRESETS`, or InputError naming the presets."""
    if name not in STRESS_PRESETS:
        raise InputError(f"unknown stress preset {name!r}; the presets: {', '.join(STRESS_PRESETS)}")
    return STRESS_PRESETS[name][0]


def knobs_record(knobs: StressKnobs) -> dict:
    """The knobs a world file records: all of them but `closeness` at 0 (the knob came later, and a world built
    without it keeps the bytes, and digest, it was published with)."""
    record = knobs._asdict()
    if not record["closeness"]:
        del record["closeness"]
    return record


def segment_starts(knobs: StressKnobs) -> list[int]:
    """The arrivals at which each segment starts (the first is 0): blocks under drift, the two halves of a
    shift, else one segment."""
    n = knobs.arrivals
    if knobs.block_length:
        return list(range(0, n, knobs.block_length))
    if knobs.shift_at:
        return [0, int(round(knobs.shift_at * n))]
    return [0]
