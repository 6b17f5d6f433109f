"""Stress worlds: generated populations with knobs, to try policies on worlds nobody tuned them on.

A stress world's students have linear utilities on the project's features (the six persona
indicators and the rater score g), in logits, plus a little per-(student, question) noise:

    v[s, q, p] = theta_s[p] + rater_s g[q, p] + noise_s[q, p].

Students arrive in order (arrival mode "ordered": student i is arrival i), so a world can change
who arrives over time. The knobs (`StressKnobs`):

- `types` student types per segment, each a mean taste mu_k ~ N(0, SPREAD^2 I) over the personas;
  `tightness`: a student's sd about its type's mean, as a fraction of SPREAD (0: identical students
  of a type);
- `polarisation` in [0, 1]: the types split into two camps with opposed tastes, mu_k moved towards
  +-CAMP_DISTANCE a along one axis a (1: the types are the two camps' means alone);
- `block_length` (drift): every block of this many arrivals draws fresh types that never recur; each
  block is a segment;
- `shift_at`, `shift_strength` (shift): from arrival round(shift_at x arrivals) on, students come from
  types anti-correlated with the earlier ones, mu'_k = -shift_strength mu_k + sqrt(1 - shift_strength^2)
  x fresh; the two halves are segments;
- `unstructured` in [0, 1]: the share of students with no type, theta ~ N(0, SPREAD^2 I);
- `rater`: every student's weight on the rater score (logits per sd of g; 0: the rater is useless);
- `noise`: sd of the per-(student, question, persona) logit noise that no linear model explains.

Utilities are U = 1/2 + (v - mean_p v) / beta, beta = max(11, the span the world needs), so that
P(first wins) = clip(sigmoid(v_i - v_j), 0.1, 0.9) is the click model of ``tdmodels.from_arrays``.
Everything is computed with ``tdmodels.portable_math`` from one seeded generator, so a knob setting
and a seed build the same bytes, and the same digest, on every machine (published ones in
``tdmodels.roster_digests``).
"""
from __future__ import annotations

import json
import math
from typing import NamedTuple

import numpy as np
import xarray as xr

from .catalog import PERSONA_SHORT
from .errors import InputError
from .from_arrays import DEFAULT_CLICK_SCALE, DEFAULT_CLIP, _world_dataset, btl_probs
from .limits import MAX_ARRIVALS
from .portable_math import standardise, total
from .world import FORMAT_VERSION, check_name, validate_world

GENERATOR = "stress-1"
SPREAD = 1.5                 # sd of a type's mean taste of each persona, logits
CAMP_DISTANCE = 2.0          # a polarised camp's distance from the origin along its axis, logits
QUESTIONS = 96               # questions in the pool; a session asks SESSION_LENGTH of them
SESSION_LENGTH = 24
MAX_STRESS_ARRIVALS = 5_000  # a stress world holds one student per arrival: P is arrivals x 96 x 36 floats


class StressKnobs(NamedTuple):
    """The knobs of a stress world (see the module docstring); `check` says which one is out of range."""
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

    def check(self) -> "StressKnobs":
        """These knobs as exact Python numbers, or InputError naming the first one out of range."""
        ints = {"arrivals": (1, MAX_STRESS_ARRIVALS), "types": (1, 64), "block_length": (0, MAX_ARRIVALS)}
        floats = {"tightness": (0.0, 4.0), "polarisation": (0.0, 1.0), "shift_at": (0.0, 1.0),
                  "shift_strength": (0.0, 1.0), "unstructured": (0.0, 1.0), "rater": (-4.0, 4.0),
                  "noise": (0.0, 3.0)}
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


def segment_starts(knobs: StressKnobs) -> list[int]:
    """The arrivals at which each segment starts (the first is 0): blocks under drift, the two halves of a
    shift, else one segment."""
    n = knobs.arrivals
    if knobs.block_length:
        return list(range(0, n, knobs.block_length))
    if knobs.shift_at:
        return [0, int(round(knobs.shift_at * n))]
    return [0]


def _type_means(rng: np.random.Generator, knobs: StressKnobs, K: int, axis: np.ndarray) -> np.ndarray:
    """[types, K] mean tastes, moved towards the two camps by the polarisation."""
    mu = SPREAD * rng.standard_normal((knobs.types, K))
    camp = CAMP_DISTANCE * np.where(np.arange(knobs.types) % 2 == 0, 1.0, -1.0)[:, None] * axis[None]
    return (1.0 - knobs.polarisation) * mu + knobs.polarisation * camp


def student_tastes(knobs: StressKnobs, rng: np.random.Generator, K: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(theta [arrivals, K], segment [arrivals], type labels [arrivals]) of a stress world's students, in
    arrival order."""
    n = knobs.arrivals
    axis = rng.standard_normal(K)
    axis = axis / math.sqrt(float(total(axis * axis)))
    starts = segment_starts(knobs) + [n]
    theta, segment, labels = np.empty((n, K)), np.empty(n, dtype=np.int64), []
    mu = _type_means(rng, knobs, K, axis)
    for g, (a, b) in enumerate(zip(starts[:-1], starts[1:])):
        if g > 0 and knobs.block_length:
            mu = _type_means(rng, knobs, K, axis)
        elif g > 0:              # the shift: tastes anti-correlated with the first segment's types
            s = knobs.shift_strength
            mu = -s * mu + math.sqrt(1.0 - s * s) * _type_means(rng, knobs, K, axis)
        kind = rng.integers(0, knobs.types, b - a)
        alone = rng.random(b - a) < knobs.unstructured
        eps = rng.standard_normal((b - a, K))
        theta[a:b] = np.where(alone[:, None], SPREAD * eps, mu[kind] + knobs.tightness * SPREAD * eps)
        segment[a:b] = g
        labels += [f"seg{g}-alone" if alone[i] else f"seg{g}-type{int(kind[i])}" for i in range(b - a)]
    return theta, segment, labels


def build_stress_world(knobs: StressKnobs = StressKnobs(), seed: int = 0, name: str = "stress",
                       description: str = "") -> xr.Dataset:
    """A validated stress world of `knobs` built from `seed` (see the module docstring).

    Parameters
    ----------
    knobs : StressKnobs
    seed : int
        A non-negative integer; the same knobs and seed build the same world on any machine.
    name : str
        The world's roster name (it also salts the session schedule).
    description : str
        Shown by ``tutorduel worlds list``; default: the knobs.

    Returns
    -------
    xarray.Dataset
        A world in the on-disk format with arrival mode "ordered", one student per arrival,
        ``student_segment[student]`` and the knobs in ``attrs["stress_knobs"]``.
    """
    check_name(name)
    knobs = StressKnobs(*knobs).check()
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
        raise InputError(f"seed {seed!r}: a non-negative integer")
    K = len(PERSONA_SHORT)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x57E55]))
    g = standardise(rng.standard_normal((QUESTIONS, K)))
    theta, segment, labels = student_tastes(knobs, rng, K)
    noise = knobs.noise * rng.standard_normal((knobs.arrivals, QUESTIONS, K))
    v = theta[:, None, :] + knobs.rater * g[None] + noise                       # [students, questions, K]
    centred = v - (total(v) / K)[..., None]
    beta = max(DEFAULT_CLICK_SCALE, 2.0 * float(np.abs(centred).max()) / 0.98)
    U = 0.5 + centred / beta
    P = btl_probs(U, beta, DEFAULT_CLIP)
    attrs = {"roster": name, "arrivals": knobs.arrivals, "topics_per_session": SESSION_LENGTH,
             "chains_per_topic": 1, "questions_per_chain": 1, "arrival_mode": "ordered", "held_out": 0,
             "rater_available": 1, "beta": beta, "bank_size": 16, "format_version": FORMAT_VERSION,
             "generator": GENERATOR, "seed": int(seed), "click_model": f"btl beta={beta!r} clip={DEFAULT_CLIP}",
             "stress_knobs": json.dumps(knobs._asdict(), sort_keys=True),
             "description": description or "stress world " + ", ".join(f"{k}={v}" for k, v in knobs._asdict().items())}
    ds = _world_dataset(U, P, g, list(PERSONA_SHORT), attrs)
    ds["student_profile"] = ("student", np.array(labels))
    ds["student_segment"] = ("student", segment)
    return validate_world(ds, f"{name} (stress)")


def stress_knobs_of(world: xr.Dataset) -> StressKnobs | None:
    """The knobs a stress world was built with (None for any other world)."""
    text = world.attrs.get("stress_knobs")
    return None if text is None else StressKnobs(**json.loads(str(text)))
