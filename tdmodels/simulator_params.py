"""The simulator's free parameters: what a calibration against real data may move.

Every roster is generated from one ``SimulatorParams``. Two parameter sets have names of their own:

- "sim-2" (`SIM2_PARAMS`): the values of "sim-1", computed with ``tdmodels.portable_math`` so that a
  world has the same bytes on every machine. Every student follows the rater's reading of a question,
  a recurring profile replays the same (student, question) cells, the held-out profiles share no lean.
- "sim-3" (`SIM3_PARAMS`, the default): the same family with the structure of the reference's rosters
  switched on (``fresh_arrivals``, ``follow_mean``/``follow_sd``, ``type_sd``, the sample's lean and the
  held-out profiles' tastes fitted to the real sample), at calibrated values (docs/results/worlds.md).

A world built from other values records them (attribute ``simulator_params``, JSON) and a generator
version that names them (``generator_version``: the base it differs least from, "+" and a digest of
what differs), so its rows never mix with another's in a run store (the world digest differs too).
Units: logits of the judge's picks unless said.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import NamedTuple

import numpy as np
from tdmodels.errors import InputError

GENERATOR_BASE = "sim-3"          # the default parameters' generator
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
    # sim-3's structure (at the values below, sim-2's worlds, bit for bit)
    fresh_arrivals: float = 0.0       # 1: a student row per arrival (its own draw of a profile, its own judged cells)
    follow_mean: float = 1.0          # each profile's multiplier on its response to a question's demand (what the
    follow_sd: float = 0.0            # rater reads) is drawn N(follow_mean, follow_sd^2): any sign, per profile
    type_sd: float = 0.0              # sd of a student's own persona preferences around its profile's (logits)
    sample_lean_gain: float = 0.0     # a lean every student shares: this x the real sample's persona main effect
    sample_profiles: float = 0.0      # 1: the held-out profiles' persona preferences are the real sample's profiles'
    sample_profile_gain: float = 1.0  # ... deviations from the main effect, times this

    def check(self) -> "SimulatorParams":
        """The parameters, or ValueError naming the first that is not a finite number in its range."""
        for name, value in self._asdict().items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InputError(f"simulator parameter {name} must be a finite number, got {value!r}")
            if abs(value) > MAX_PARAM:
                raise InputError(f"simulator parameter {name} must lie within +-{MAX_PARAM:g}, got {value!r} (the "
                                 f"judge's probabilities overflow near the largest floats)")
            if name in _FLAGS and value not in (0, 1):
                raise InputError(f"simulator parameter {name} must be 0 or 1 (off or on), got {value!r}")
            if "offset_" in name or name in _SIGNED:
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
_FLAGS = ("fresh_arrivals", "sample_profiles")
_SIGNED = ("follow_mean", "sample_lean_gain", "sample_profile_gain")
SIM3_FIELDS = ("fresh_arrivals", "follow_mean", "follow_sd", "type_sd", "sample_lean_gain", "sample_profiles",
               "sample_profile_gain")

SIM2_PARAMS = SimulatorParams()
# sim-3: stage A, `tutorduel worlds calibrate --leaderboard` (calibration/sim-3/simulator.json, the values below to
# full precision); stage B, three values moved on the probe of the same fitted figures (docs/results/worlds.md):
# follow_mean 0.988 -> 0.4 and shared_taste_gain 1.288 -> 0.4 (pooled's lead over RUCB, the development
# profiles' lean), and a lean of the template students' own, half the sample's (template_offset_*).
SIM3_PARAMS = SimulatorParams(
    fresh_arrivals=1.0, sample_profiles=1.0, follow_mean=0.4, shared_taste_gain=0.4,
    student_scale=2.4229715505308933,
    demand_gain=2.722946760101137,
    judge_noise=1.0303756489301428,
    written_sens_gain=0.5896884709071459,
    template_sens_base=0.2138197379834948,
    quirk_gain=0.04580827335963715,
    follow_sd=0.6931664452855956,
    type_sd=0.5402845620042325,
    sample_lean_gain=2.685634330709935,
    sample_profile_gain=1.7945329619697388,
    template_offset_prover=-0.14933333333333287,
    template_offset_examples=0.19516666666666715,
    template_offset_socratic=0.08616666666666672,
    template_offset_intuition=0.0946666666666669,
    template_offset_concise=-0.06083333333333307,
    template_offset_coach=-0.1658333333333326,
)
DEFAULT_PARAMS = SIM3_PARAMS
BASES = {"sim-2": SIM2_PARAMS, "sim-3": SIM3_PARAMS}


def base_of(params: SimulatorParams) -> str:
    """The named parameter set `params` is a variant of: "sim-2" where sim-3's structure is off (every field of
    `SIM3_FIELDS` at sim-2's value), else "sim-3"."""
    off = all(float(getattr(params, f)) == float(getattr(SIM2_PARAMS, f)) for f in SIM3_FIELDS)
    return "sim-2" if off else "sim-3"


def generator_version(params: SimulatorParams) -> str:
    """The base's name ("sim-2", "sim-3") for its own parameters, else the base, '+' and a digest of the values
    that differ from it."""
    base = base_of(params)
    ref = BASES[base]._asdict()
    changed = {k: float(v) for k, v in params._asdict().items() if float(v) != float(ref[k])}
    if not changed:
        return base
    digest = hashlib.sha256(json.dumps(changed, sort_keys=True).encode()).hexdigest()[:10]
    return f"{base}+{digest}"


__all__ = ["SimulatorParams", "DEFAULT_PARAMS", "SIM2_PARAMS", "SIM3_PARAMS", "BASES", "base_of", "generator_version",
           "GENERATOR_BASE", "SIM3_FIELDS"]
