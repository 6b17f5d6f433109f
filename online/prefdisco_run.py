"""The PrefDisco interaction and its fixed-order elicitation policies.

A scenario is one (persona, task). The policy knows the task's relevant attributes F(i) and
the other personas' profiles of the task (the population), never the user's. Each turn it
asks about one attribute of F(i), and the passive simulated user states its value (plus
N(0, answer_noise^2), clipped to [0, 1]); after at most MAX_TURNS questions it answers with
the response of largest expected PrefAlign given the answers (``expected_align``); with no
question that is the baseline's answer, so answering at once has NormAlign 0.

Policies (the question order): "answer-now" (no question), "ask-random" (attributes of F(i)
in random order), "ask-top-weight" (in decreasing population mean weight). Each asks
`questions` of them (at most MAX_TURNS). "ask-bayes" (``online.prefdisco_bayes``) asks at most
`questions`, each chosen by expected gain in PrefAlign under a learned population model, and
stops when no question is worth `cost`; it answers by its own model's expected PrefAlign.
"""
from __future__ import annotations

import numpy as np
import xarray as xr

from online.prefdisco_bayes import COST, elicit, scenario_model
from online.prefdisco_scoring import expected_align, scenario_scores
from tdmodels.errors import InputError
from tdmodels.limits import MAX_TURNS

POLICIES = ("answer-now", "ask-random", "ask-top-weight", "ask-bayes")
FIXED_ORDER = POLICIES[:3]


def question_order(world: xr.Dataset, persona: int, task: int, policy: str, rng: np.random.Generator) -> np.ndarray:
    """The attributes (indices) a fixed-order policy would ask about, in order."""
    rel = np.flatnonzero(world["relevant"].values[task])
    if policy == "answer-now":
        return rel[:0]
    if policy == "ask-random":
        return rng.permutation(rel)
    if policy == "ask-top-weight":
        others = np.arange(world.sizes["persona"]) != persona
        mean_w = world["weights"].values[others, task][:, rel].mean(0)
        return rel[np.argsort(-mean_w, kind="stable")]
    raise InputError(f"unknown PrefDisco policy {policy!r}; choose from {', '.join(POLICIES)}")


def passive_user(values: np.ndarray, answer_noise: float, rng: np.random.Generator):
    """The simulated user: asked about attribute j, states clip(v_j + N(0, answer_noise^2), 0, 1)."""
    def answer(j: int) -> float:
        return float(np.clip(values[j] + answer_noise * rng.standard_normal(), 0.0, 1.0))
    return answer


def run_scenario(world: xr.Dataset, persona: int, task: int, policy: str, questions: int,
                 rng: np.random.Generator, answer_noise: float = 0.0, cost: float = COST) -> dict:
    """Ask at most `questions` (<= MAX_TURNS) questions, answer, and score the scenario."""
    if not 0 <= questions <= MAX_TURNS:
        raise InputError(f"questions must lie in 0..{MAX_TURNS}, got {questions}")
    answer = passive_user(world["values"].values[persona, task], answer_noise, rng)
    if policy == "ask-bayes":
        model = scenario_model(world, persona, task)
        e = elicit(model, answer, questions, cost=cost, answer_noise=answer_noise)
        return {**scenario_scores(world, persona, task, e.response), "asked": len(e.asked)}
    order = question_order(world, persona, task, policy, rng)[:questions]
    answers = {int(j): answer(int(j)) for j in order}
    response = int(np.argmax(expected_align(world, persona, task, answers)))
    return {**scenario_scores(world, persona, task, response), "asked": len(answers)}


def run_world(world: xr.Dataset, policy: str, questions: int, seed: int = 0, scenarios: int | None = None,
              answer_noise: float = 0.0, cost: float = COST) -> dict:
    """Every (persona, task) scenario of a world (or `scenarios` of them drawn at random): arrays of
    baseline, oracle, discovery PrefAlign and NormAlign, and the task's domain."""
    rng = np.random.default_rng(seed)
    P, T = world.sizes["persona"], world.sizes["task"]
    pairs = [(p, t) for p in range(P) for t in range(T)]
    if scenarios is not None and scenarios < len(pairs):
        pairs = [pairs[k] for k in np.sort(rng.choice(len(pairs), scenarios, replace=False))]
    rows = [run_scenario(world, p, t, policy, questions, rng, answer_noise, cost) for p, t in pairs]
    out = {k: np.array([r[k] for r in rows]) for k in ("baseline", "oracle", "discovery", "norm_align", "asked")}
    out["domain"] = world["task_domain"].values[[t for _, t in pairs]]
    return out
