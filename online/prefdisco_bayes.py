"""The Bayesian elicitation policy for PrefDisco ("ask-bayes").

For a scenario (persona p, task i) the policy learns the task's population of value logits
from the earlier users (the world's other personas: the same information the baseline and
the fixed-order policies use) through the conjugate profile model
(``tdmodels.profile_model``), so its belief over the user's values on F(i) is a
multivariate t that knows how attributes co-vary. Each turn it computes, for every
attribute not yet asked, the expected gain in the best expected PrefAlign from hearing its
value (``inference.profile_belief.question_gains``), asks the best one if that gain is at least
`cost` (PrefAlign units per question) and stops otherwise; then it answers with the
response of largest expected PrefAlign under the belief. The belief covers values and
weights together, so a stated value also moves the expected weights.

Answers with noise: the simulated user states clip(v_j + N(0, sigma^2), 0, 1); the policy
reads it as logit(answer) = z_j + N(0, tau^2) with the delta-method tau = sigma / (a (1 - a)),
a clipped to [0.05, 0.95].
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr

from inference.profile_belief import ProfileBelief, condition, expected_pref_align, population_belief, question_gains
from tdmodels.profile_model import ProfilePrior, default_profile_prior, profile_coordinates, to_logit

COST = 0.002


class ScenarioModel(NamedTuple):
    """What the policy knows of a scenario before asking: the task's relevant attributes, the
    belief over the user's profile learned from the population, and the responses' styles."""
    attributes: np.ndarray   # [K] attribute indices of F(i)
    belief: ProfileBelief    # over D = 2K coordinates (value logits, log-weights)
    styles: np.ndarray       # [R, K]


def scenario_model(world: xr.Dataset, persona: int, task: int, prior: ProfilePrior | None = None) -> ScenarioModel:
    """The policy's model of (persona, task) learned from the other personas' profiles of the task."""
    rel = np.flatnonzero(world["relevant"].values[task])
    others = np.arange(world.sizes["persona"]) != persona
    population = profile_coordinates(world["values"].values[others, task][:, rel],
                                     world["weights"].values[others, task][:, rel])
    prior = prior or default_profile_prior(len(rel))
    return ScenarioModel(rel, population_belief(population, prior), world["styles"].values[task][:, rel])


def logit_noise_var(answer, answer_noise: float):
    """Logit-scale variance of an answer stated with probability-scale noise sd `answer_noise` (delta method)."""
    a = np.clip(answer, 0.05, 0.95)
    return (answer_noise / (a * (1.0 - a))) ** 2


class Elicitation(NamedTuple):
    """One scenario's questions and answer: coordinates asked (indices into F(i)) in order, the
    answers as logits with their logit-scale noise variances, the expected gain when each was
    asked, the final belief and the chosen response."""
    asked: np.ndarray        # [J] int
    answers: np.ndarray      # [J]
    noise_var: np.ndarray    # [J]
    gains: np.ndarray        # [J]
    belief: ProfileBelief
    response: int


def elicit(model: ScenarioModel, answer_fn, questions: int, cost: float = COST, answer_noise: float = 0.0) -> Elicitation:
    """Ask up to `questions` questions by expected gain, stop when none is worth `cost`, answer.
    `answer_fn(attribute index) -> stated value in [0, 1]`."""
    belief, asked, answers, noise, gains_at = model.belief, [], [], [], []
    for _ in range(questions):
        free = np.setdiff1d(np.arange(len(model.attributes)), asked)
        if free.size == 0:
            break
        prior_mean_v = 1.0 / (1.0 + np.exp(-belief.mean[free]))
        gains = question_gains(belief, model.styles, free, logit_noise_var(prior_mean_v, answer_noise))
        k = int(np.argmax(gains))
        if gains[k] < cost:
            break
        j = int(free[k])
        stated = float(answer_fn(int(model.attributes[j])))
        a, nv = float(to_logit(stated)), float(logit_noise_var(stated, answer_noise))
        belief = condition(belief, j, a, nv)
        asked.append(j)
        answers.append(a)
        noise.append(nv)
        gains_at.append(float(gains[k]))
    response = int(np.argmax(expected_pref_align(belief, model.styles)))
    return Elicitation(np.asarray(asked, dtype=int), np.asarray(answers), np.asarray(noise), np.asarray(gains_at),
                       belief, response)
