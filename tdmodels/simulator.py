"""Generate the seven TutorDuel rosters as world Datasets, deterministically from a seed.

A roster = a question pool (topics x 2 chains x 3 kinds, each question ending with one of
13 cues), a student population, the simulated judge's order-aware probabilities, the
reference utilities from the ridge Bradley-Terry fit, and the rater feature.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

import numpy as np
import xarray as xr

from . import catalog, judge, students
from .bradley_terry import order_averaged, reference_utilities
from .portable_math import dot, exp, expit, total
from .simulator_params import (DEFAULT_PARAMS, GENERATOR_BASE, SIM2_PARAMS, SIM3_FIELDS, SimulatorParams, base_of,
                               generator_version)
from .world import FORMAT_VERSION, KINDS

GENERATOR_VERSION = GENERATOR_BASE   # of worlds built from DEFAULT_PARAMS; others name theirs
UNSTRUCTURED_SD = 1.2      # sd of each theta entry in the unstructured control
LOGITS_PER_UTILITY = 8.0   # the reference's scale from Bradley-Terry strengths to U: the sample's U read as logits


@dataclass(frozen=True)
class RosterRecipe:
    """How a roster is built: its arrivals, topics, student population and whether it is held out."""
    name: str
    arrivals: int
    topics: tuple
    held_out: bool
    arrival_mode: str                      # "uniform": students drawn with replacement; "distinct"
    population: Callable                   # (rng) -> list[StudentSpec]
    scramble: bool = False
    linear_population: bool = False        # unstructured control: theta ~ N(0, sd^2 I), v = theta . phi
    description: str = ""


def _templates(n, quirks_each):
    def make(rng):
        combos = students.all_trait_combinations()
        if quirks_each == 0:
            pick = rng.choice(len(combos), size=n, replace=False)
            return [students.template_student(combos[i], name=f"template_{i:04d}") for i in pick]
        out = []
        qnames = list(students.QUIRKS)
        for _ in range(n):
            i = int(rng.integers(len(combos)))
            qs = tuple(qnames[j] for j in sorted(rng.choice(len(qnames), size=quirks_each, replace=False)))
            out.append(students.template_student(combos[i], qs, name=f"template_{i:04d}"))
        return out
    return make


def _linear_population(n):
    def make(rng):
        z = np.zeros(len(catalog.ATTRIBUTES))
        return [students.StudentSpec(f"linear_{i:03d}", z, z, np.zeros(6), {}, ()) for i in range(n)]
    return make


ROSTERS = {
    "dev": RosterRecipe("dev", 300, catalog.DEV_TOPICS, False, "uniform", lambda rng: list(students.DEV_PROFILES),
                        description="8 hand-written development profiles, development topics"),
    "test_topics": RosterRecipe("test_topics", 350, catalog.TEST_TOPICS, True, "uniform", lambda rng: list(students.DEV_PROFILES),
                                description="the 8 development profiles on new topics"),
    "test_profiles": RosterRecipe("test_profiles", 350, catalog.TEST_TOPICS, True, "uniform", lambda rng: list(students.TEST_PROFILES),
                                  description="8 new hand-written profiles on new topics"),
    "composite": RosterRecipe("composite", 350, catalog.TEST_TOPICS, True, "distinct", _templates(350, 0),
                              description="350 distinct template students (7 traits, 3,072 combinations)"),
    "quirky": RosterRecipe("quirky", 350, catalog.TEST_TOPICS, True, "distinct", _templates(350, 2),
                           description="350 template students with 2 of 10 quirks each"),
    "scrambled": RosterRecipe("scrambled", 350, catalog.DEV_TOPICS, False, "distinct", _templates(350, 0), scramble=True,
                              description="negative control: each student's personas relabelled by its own permutation"),
    "unstructured": RosterRecipe("unstructured", 350, catalog.DEV_TOPICS, False, "distinct", _linear_population(350),
                                 linear_population=True, description="negative control: iid isotropic theta, no shared structure"),
}
ROSTER_ORDER = tuple(ROSTERS)


def build_questions(topics, rng):
    """Question pool: per topic 2 chains x (definition, computation, why), each with a cue."""
    rows = []
    for t in topics:
        for c, variant in enumerate(catalog.CHAIN_VARIANTS):
            for kind in KINDS:
                demand_kind = catalog.KIND_DEMAND[kind]
                # cues fitting the kind are likelier, every cue stays possible
                fit = dot(catalog.CUE_DEMAND, demand_kind)
                w = exp(1.5 * fit)
                cue = int(rng.choice(len(catalog.CUES), p=w / total(w)))
                text = catalog.QUESTION_FORMS[kind].format(topic=t, variant=variant) + " " + catalog.CUES[cue][0]
                rows.append((t, c, kind, cue, text, demand_kind + catalog.CUE_DEMAND[cue]))
    topic, chain, kind, cue, text, demand = map(list, zip(*rows))
    return dict(topic=np.array(topic), chain=np.array(chain, dtype=np.int64), kind=np.array(kind),
                cue=np.array(cue, dtype=np.int64), text=np.array(text), demand=np.stack(demand))


BETA_SEARCH = (0.1, 50.0)     # the interval the click scale is fitted in


def fit_click_scale(pbar: np.ndarray, U: np.ndarray) -> float:
    """beta: logits per unit of utility, least squares of pbar ~ sigmoid(beta (U_a - U_b)), a < b."""
    from scipy.optimize import minimize_scalar      # here: importing scipy.optimize takes half a second

    K = U.shape[-1]
    iu, ju = np.triu_indices(K, 1)
    du = (U[..., iu] - U[..., ju]).ravel()
    p = pbar[..., iu, ju].ravel()
    res = minimize_scalar(lambda b: np.mean(np.square(expit(b * du) - p)), bounds=BETA_SEARCH, method="bounded")
    return float(res.x)


def _student_under(spec: students.StudentSpec, params: SimulatorParams) -> students.StudentSpec:
    """A student's spec under the family parameters (unchanged, bit for bit, at sim-1's values)."""
    d = SIM2_PARAMS
    if spec.traits and params.template_sens_base != d.template_sens_base:
        spec = spec._replace(sens=spec.sens + (params.template_sens_base - students.TEMPLATE_SENS_BASE))
    if not spec.traits and params.written_sens_gain != d.written_sens_gain:
        spec = spec._replace(sens=spec.sens * params.written_sens_gain)
    if spec.profile in students.DEV_NAMES and params.shared_taste_gain != d.shared_taste_gain:
        spec = spec._replace(taste=spec.taste + (params.shared_taste_gain - 1.0) * students.DEV_SHARED_TASTE)
    if params.taste_gain != d.taste_gain:
        spec = spec._replace(taste=spec.taste * params.taste_gain)
    return spec


def _arrival_rows(recipe: RosterRecipe, pop: list, params: SimulatorParams, rng: np.random.Generator) -> list:
    """The student rows of a roster: its population, or with ``fresh_arrivals`` one row per arrival (a roster
    of recurring profiles draws each arrival's profile uniformly; its cells are judged afresh)."""
    if not params.fresh_arrivals or recipe.arrival_mode != "uniform":
        return pop
    return [pop[i] for i in rng.integers(len(pop), size=recipe.arrivals)]


def _follow(pop: list, params: SimulatorParams, rng: np.random.Generator) -> np.ndarray:
    """[rows] each row's multiplier on its response to a question's demand: one draw of
    N(follow_mean, follow_sd^2) per profile, in the order profiles first appear."""
    names = [p.profile for p in pop]
    order = list(dict.fromkeys(names))
    draws = params.follow_mean + params.follow_sd * rng.standard_normal(len(order))
    index = {n: i for i, n in enumerate(order)}
    return np.array([draws[index[n]] for n in names])


def _sample_logits(spec: students.StudentSpec, params: SimulatorParams) -> tuple[students.StudentSpec, np.ndarray]:
    """The spec with the real sample's persona preferences in place of its own where sim-3 says so, and the
    logits [K] the sample adds to every question: the shared lean for everyone, a held-out profile's own
    deviation from it."""
    extra = params.sample_lean_gain * LOGITS_PER_UTILITY * students.SAMPLE_LEAN
    if params.sample_profiles and spec.profile in students.SAMPLE_PROFILE_DEVIATION:
        spec = spec._replace(taste=np.zeros_like(spec.taste), offset=np.zeros_like(spec.offset))
        extra = extra + (params.sample_profile_gain * LOGITS_PER_UTILITY *
                         students.SAMPLE_PROFILE_DEVIATION[spec.profile])
    return spec, extra


def _student_rows(recipe: RosterRecipe, pop: list, qs: dict, features: np.ndarray, params: SimulatorParams,
                  r_pop: np.random.Generator, extra: tuple) -> np.ndarray:
    """The latent logits v [rows, questions, K] of every student row, before answer and judge noise."""
    r_follow, r_type = extra
    K = features.shape[1]
    follow = _follow(pop, params, r_follow) if params.follow_sd or params.follow_mean != 1.0 else None
    v = np.empty((len(pop), len(qs["kind"]), K))
    for s, spec in enumerate(pop):
        if recipe.linear_population:
            theta = UNSTRUCTURED_SD * r_pop.standard_normal(K + 1)
            v[s] = dot(features, theta)
            continue
        spec = _student_under(spec, params)
        spec, lean = _sample_logits(spec, params)
        if follow is not None:
            spec = spec._replace(sens=follow[s] * spec.sens)
        v[s] = params.student_scale * students.student_logits(spec, qs["kind"], qs["chain"],
                                                              params.demand_gain * qs["demand"],
                                                              quirk_gain=params.quirk_gain)
        v[s] += params.shared_offset
        if spec.traits and params.template_offset.any():
            v[s] += params.template_offset
        if params.sample_lean_gain or params.sample_profiles:
            v[s] += lean
        if params.type_sd:
            v[s] += params.type_sd * r_type.standard_normal(K)
        if recipe.scramble:
            v[s] = v[s][:, r_pop.permutation(K)]
    return v


def build_roster(name: str, seed: int = 0, params: SimulatorParams = DEFAULT_PARAMS) -> xr.Dataset:
    """Generate roster `name` (one of ROSTERS) as a validated world Dataset, from the simulator's free
    parameters `params` (``tdmodels.simulator_params``; the defaults are generator sim-3)."""
    params = SimulatorParams(*params).check()
    if name not in ROSTERS:
        raise KeyError(f"unknown roster {name!r}; simulated rosters are {', '.join(ROSTERS)}")
    recipe = ROSTERS[name]
    ss = np.random.SeedSequence([seed, ROSTER_ORDER.index(name)])
    r_q, r_pop, r_rater, r_judge, r_noise = (np.random.default_rng(s) for s in ss.spawn(5))
    r_arrive, r_follow, r_type = (np.random.default_rng(s) for s in ss.spawn(3))     # sim-3's draws, after sim-2's
    qs = build_questions(recipe.topics, r_q)
    pop = _arrival_rows(recipe, recipe.population(r_pop), params, r_arrive)
    K = len(catalog.PERSONAS)
    g = judge.rater_scores(qs["demand"], r_rater, noise=params.rater_noise)
    features = np.concatenate([np.broadcast_to(np.eye(K), (len(g), K, K)), g[:, :, None]], axis=2)

    answer = params.answer_noise * r_noise.standard_normal((len(g), K))
    n_s = len(pop)
    v = _student_rows(recipe, pop, qs, features, params, r_pop, (r_follow, r_type))
    v = v + answer[None] + params.judge_noise * r_noise.standard_normal(v.shape)
    label_bias = params.label_bias_sd * r_noise.standard_normal(n_s)
    probs = judge.judge_probs(v, r_judge, label_bias=label_bias[:, None, None, None], order_bias=params.order_bias)
    U = reference_utilities(probs)
    beta = fit_click_scale(order_averaged(probs), U)

    ds = xr.Dataset(
        {
            "features": (("question", "persona", "feature"), features),
            "probs": (("student", "question", "first", "second"), probs),
            "utilities": (("student", "question", "persona"), U),
            "question_topic": (("question",), qs["topic"].astype(str)),
            "question_chain": (("question",), qs["chain"]),
            "question_kind": (("question",), qs["kind"].astype(str)),
            "question_cue": (("question",), qs["cue"]),
            "question_text": (("question",), qs["text"].astype(str)),
            "student_profile": (("student",), np.array([p.profile for p in pop], dtype=str)),
            "student_traits": (("student",), np.array([students.describe_traits(p) for p in pop], dtype=str)),
            "student_quirks": (("student",), np.array([",".join(p.quirks) for p in pop], dtype=str)),
        },
        coords={
            "student": np.arange(n_s), "question": np.arange(len(g)),
            "persona": list(catalog.PERSONA_SHORT), "first": list(catalog.PERSONA_SHORT),
            "second": list(catalog.PERSONA_SHORT),
            "feature": [f"e_{p}" for p in catalog.PERSONA_SHORT] + ["g"],
        },
        attrs={
            "roster": name, "arrivals": recipe.arrivals, "topics_per_session": 4, "chains_per_topic": 2,
            "questions_per_chain": 3, "arrival_mode": "distinct" if params.fresh_arrivals else recipe.arrival_mode,
            "held_out": int(recipe.held_out),
            "rater_available": 1, "beta": beta, "bank_size": 16, "format_version": FORMAT_VERSION,
            "generator": generator_version(params), "seed": int(seed), "description": recipe.description,
            "cues": "\n".join(c[0] for c in catalog.CUES),
        },
    )
    if params not in (SIM2_PARAMS, DEFAULT_PARAMS):     # the named generators' worlds record no parameters
        recorded = {k: float(v) for k, v in params._asdict().items()
                    if base_of(params) == "sim-3" or k not in SIM3_FIELDS}      # sim-2's variants as they were
        ds.attrs["simulator_params"] = json.dumps(recorded, sort_keys=True)
    return ds
