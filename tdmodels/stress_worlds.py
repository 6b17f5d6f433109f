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
- `closeness` in [0, 1] (drift only): each fresh type is moved towards a lookalike of the mean taste m of
  every type before it (what a population prior learned on them favours; centred and scaled to a type's
  spread, SPREAD a persona): the same taste on m's two
  favourite personas, the others reflected about the favourite (2 m_1st - m_p), so that the clicks between
  the two favourites are as the earlier types would have them, every other persona is preferred to both and
  m's least favourite becomes the lookalike's favourite; mu = closeness x lookalike + (1 - closeness) x fresh.
  A prior learned on the earlier blocks shows the two personas both agree on, and is confidently wrong about
  the rest;
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

import numpy as np
import xarray as xr

from .catalog import PERSONA_SHORT
from .errors import InputError
from .from_arrays import DEFAULT_CLICK_SCALE, DEFAULT_CLIP, _world_dataset, btl_probs
from .portable_math import standardise, total
# STRESS_PRESETS and preset_knobs are imported here too, where readers found them before they moved
from .stress_knobs import (CAMP_DISTANCE, QUESTIONS, SESSION_LENGTH, SPREAD, STRESS_PRESETS, StressKnobs,
                           knobs_record, preset_knobs, segment_starts)
from .world import FORMAT_VERSION, check_name, validate_world

GENERATOR = "stress-1"


def _type_means(rng: np.random.Generator, knobs: StressKnobs, K: int, axis: np.ndarray) -> np.ndarray:
    """[types, K] mean tastes, moved towards the two camps by the polarisation."""
    mu = SPREAD * rng.standard_normal((knobs.types, K))
    camp = CAMP_DISTANCE * np.where(np.arange(knobs.types) % 2 == 0, 1.0, -1.0)[:, None] * axis[None]
    return (1.0 - knobs.polarisation) * mu + knobs.polarisation * camp


def lookalike_means(mu: np.ndarray) -> np.ndarray:
    """[types, K] lookalikes of type means `mu`: each type's two favourite personas kept, the others reflected
    about the favourite's taste (see the module docstring)."""
    order = np.argsort(-mu, axis=1, kind="stable")
    first = np.take_along_axis(mu, order[:, :1], axis=1)
    out = 2.0 * first - mu
    top = order[:, :2]
    np.put_along_axis(out, top, np.take_along_axis(mu, top, axis=1), axis=1)
    return out


def student_tastes(knobs: StressKnobs, rng: np.random.Generator, K: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(theta [arrivals, K], segment [arrivals], type labels [arrivals]) of a stress world's students, in
    arrival order."""
    return _tastes(knobs, rng, K)[:3]


def _tastes(knobs: StressKnobs, rng: np.random.Generator, K: int):
    """`student_tastes` and each student's type mean [arrivals, K] (a student with no type: its own theta)."""
    n = knobs.arrivals
    axis = rng.standard_normal(K)
    axis = axis / math.sqrt(float(total(axis * axis)))
    starts = segment_starts(knobs) + [n]
    theta, segment, labels, centre = np.empty((n, K)), np.empty(n, dtype=np.int64), [], np.empty((n, K))
    mu = _type_means(rng, knobs, K, axis)
    seen = mu.copy()                     # every type so far, one row each
    for g, (a, b) in enumerate(zip(starts[:-1], starts[1:])):
        if g > 0 and knobs.block_length:
            mu = _type_means(rng, knobs, K, axis)
            if knobs.closeness:
                like = lookalike_means(_at_spread(total(seen.T) / len(seen))[None])
                mu = knobs.closeness * like + (1.0 - knobs.closeness) * mu
            seen = np.concatenate([seen, mu])
        elif g > 0:              # the shift: tastes anti-correlated with the first segment's types
            s = knobs.shift_strength
            mu = -s * mu + math.sqrt(1.0 - s * s) * _type_means(rng, knobs, K, axis)
        kind = rng.integers(0, knobs.types, b - a)
        alone = rng.random(b - a) < knobs.unstructured
        eps = rng.standard_normal((b - a, K))
        theta[a:b] = np.where(alone[:, None], SPREAD * eps, mu[kind] + knobs.tightness * SPREAD * eps)
        centre[a:b] = np.where(alone[:, None], theta[a:b], mu[kind])
        segment[a:b] = g
        labels += [f"seg{g}-alone" if alone[i] else f"seg{g}-type{int(kind[i])}" for i in range(b - a)]
    return theta, segment, labels, centre


def _at_spread(m: np.ndarray) -> np.ndarray:
    """A mean taste [K] centred and scaled to a type's spread (SPREAD per persona): an average of types keeps
    their favourites, not their contrast."""
    c = m - total(m) / len(m)
    ss = float(total(c * c))
    if not ss > 0.0:
        raise InputError("stress knob closeness: the earlier types' mean taste is the same for every persona (two "
                         "polarised camps of as many types each cancel out), so it has no lookalike; use less "
                         "polarisation, an odd number of types or closeness 0")
    return c * (SPREAD / math.sqrt(ss / len(m)))


def _world_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), 0x57E55]))


def world_type_means(world: xr.Dataset) -> np.ndarray:
    """[students, K] each student's type mean taste (its own for a student with no type), in logits, rebuilt from
    a stress world's knobs and seed; InputError for another world."""
    knobs = stress_knobs_of(world)
    if knobs is None:
        raise InputError(f"world {world.attrs.get('roster')!r}: not a stress world (no stress_knobs)")
    K = len(PERSONA_SHORT)
    seed = world.attrs.get("seed")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"world {world.attrs.get('roster')!r}: its type means are rebuilt from its seed, and its "
                         f"seed attribute is {seed!r}, not a non-negative integer")
    rng = _world_rng(int(seed))
    rng.standard_normal((QUESTIONS, K))          # the rater scores g, drawn first
    return _tastes(knobs, rng, K)[3]


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
    rng = _world_rng(seed)
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
             "stress_knobs": json.dumps(knobs_record(knobs), sort_keys=True),
             "description": description or "stress world " + ", ".join(f"{k}={v}"
                                                                       for k, v in knobs_record(knobs).items())}
    ds = _world_dataset(U, P, g, list(PERSONA_SHORT), attrs)
    ds["student_profile"] = ("student", np.array(labels))
    ds["student_segment"] = ("student", segment)
    return validate_world(ds, f"{name} (stress)")


def stress_knobs_of(world: xr.Dataset) -> StressKnobs | None:
    """The knobs a stress world was built with (None for any other world); InputError where its stress_knobs
    attribute is not a JSON object of valid knobs."""
    text = world.attrs.get("stress_knobs")
    if text is None:
        return None
    where = f"world {world.attrs.get('roster')!r}: stress_knobs {str(text)[:80]!r}"
    try:
        record = json.loads(str(text))
    except ValueError as e:
        raise InputError(f"{where} is not JSON ({e})") from None
    if not isinstance(record, dict):
        raise InputError(f"{where}: a JSON object of knobs is needed")
    unknown = sorted(set(record) - set(StressKnobs._fields))
    if unknown:
        raise InputError(f"{where}: unknown knob(s) {', '.join(map(repr, unknown))}; the knobs: "
                         f"{', '.join(StressKnobs._fields)}")
    try:
        return StressKnobs(**record).check()
    except InputError as e:
        raise InputError(f"{where}: {e}") from None
