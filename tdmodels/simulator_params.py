"""The simulator's free parameters: what a calibration against real data may move.

Every roster is generated from one ``SimulatorParams``; the defaults are generator "sim-2" (the
values of "sim-1", computed with ``tdmodels.portable_math`` so that a world has the same bytes on
every machine; a sim-2 world differs from the sim-1 world this machine built by at most a few ulps).
A world built from other values records them (attribute ``simulator_params``, JSON) and a generator
version that names them (``generator_version``), so its rows never mix with the defaults' in a run
store (the world digest differs too). Units: logits of the judge's picks unless said.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import NamedTuple

import numpy as np
from tdmodels.errors import InputError

GENERATOR_BASE = "sim-2"
MAX_PARAM = 1e6                 # no parameter's magnitude beyond this: rosters built at 1e100 still, not at 1e308


class SimulatorParams(NamedTuple):
    """The named free parameters of ``tdmodels.simulator.build_roster``."""
    student_scale: float = 3.0        # logits per unit of a student's style score
    demand_gain: float = 2.5          # weight of the question-dependent response against the base taste
    answer_noise: float = 0.35        # sd of answer-text quality, shared by all students
    judge_noise: float = 0.60         # sd of the judge's reading of one answer for one student
    label_bias_sd: float = 0.15       # sd of a student's preference for one answer label
    order_bias: float = 0.25          # in favour of the answer shown first
    quirk_gain: float = 0.3           # scale of the quirks' non-linear rules
    template_sens_base: float = 0.35  # template students' base sensitivity to a question's demand
    rater_noise: float = 0.15         # sd of the rater's noise, before its scores are standardised
    taste_gain: float = 1.0           # scale of every student's base taste (its question-independent style weights)
    written_sens_gain: float = 1.0    # scale of the hand-written profiles' response to a question's demand
    shared_taste_gain: float = 1.0    # scale of the lean the development profiles share (students.DEV_SHARED_TASTE)
    # a preference every student shares for each persona (logits, any sign), added before a scramble
    offset_prover: float = 0.0
    offset_examples: float = 0.0
    offset_socratic: float = 0.0
    offset_intuition: float = 0.0
    offset_concise: float = 0.0
    offset_coach: float = 0.0
    # a preference the template students (composite, quirky, scrambled) share on top of the above, as the
    # development profiles share students.DEV_SHARED_TASTE: each population its own lean
    template_offset_prover: float = 0.0
    template_offset_examples: float = 0.0
    template_offset_socratic: float = 0.0
    template_offset_intuition: float = 0.0
    template_offset_concise: float = 0.0
    template_offset_coach: float = 0.0

    def check(self) -> "SimulatorParams":
        """The parameters, or ValueError naming the first that is not a finite number in its range."""
        for name, value in self._asdict().items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InputError(f"simulator parameter {name} must be a finite number, got {value!r}")
            if abs(value) > MAX_PARAM:
                raise InputError(f"simulator parameter {name} must lie within +-{MAX_PARAM:g}, got {value!r} (the "
                                 f"judge's probabilities overflow near the largest floats)")
            if "offset_" in name:
                continue
            if value < 0 or (name in ("student_scale",) and value == 0):
                raise InputError(f"simulator parameter {name} must be {'> 0' if name == 'student_scale' else '>= 0'}, "
                                 f"got {value!r}")
        return self


    def _offsets(self, prefix: str) -> np.ndarray:
        return np.array([getattr(self, f"{prefix}offset_{p}") for p in _PERSONA_FIELDS], dtype=float)

    @property
    def shared_offset(self) -> np.ndarray:
        """[K] the shared persona offsets, in ``tdmodels.catalog.PERSONAS`` order."""
        return self._offsets("")

    @property
    def template_offset(self) -> np.ndarray:
        """[K] the template students' own shared persona offsets, in ``tdmodels.catalog.PERSONAS`` order."""
        return self._offsets("template_")


_PERSONA_FIELDS = ("prover", "examples", "socratic", "intuition", "concise", "coach")   # catalog.PERSONAS order

DEFAULT_PARAMS = SimulatorParams()


def generator_version(params: SimulatorParams) -> str:
    """GENERATOR_BASE ('sim-2') for the defaults, else 'sim-2+' and a digest of the values that differ."""
    changed = {k: float(v) for k, v in params._asdict().items() if float(v) != float(DEFAULT_PARAMS._asdict()[k])}
    if not changed:
        return GENERATOR_BASE
    digest = hashlib.sha256(json.dumps(changed, sort_keys=True).encode()).hexdigest()[:10]
    return f"{GENERATOR_BASE}+{digest}"


__all__ = ["SimulatorParams", "DEFAULT_PARAMS", "generator_version", "GENERATOR_BASE"]
