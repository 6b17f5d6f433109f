"""CODuel that may spend a round asking the student one direct question (the combined mode).

Each round, before choosing a pair, the policy may ask about one persona's style
(``online.direct_questions``); the answer enters the session's belief (the population
learner's mixture and the no-transfer learner's Gaussian alike). It asks, at most
`max_questions` times a session, when the best question's expected gain on this question's
utilities, counted for `horizon` rounds (0: every round left), is at least the plug-in price
of the round (``pair_cost``): early in a session under a broad belief asking is cheap, under
a confident population prior it is not. horizon = 1 (the question must pay on the question
at hand) was chosen on dev, 16 seeds: with answers of sd 2 logits, horizon 0 asked in every
session for +0.18 [-0.75, +1.12], horizon 1 in 69% for +0.65 [-0.36, +1.66]; with sd 0.5,
+3.30 [+1.92, +4.67] against +2.70 [+1.26, +4.14] (measured with the 8-question bank CODuel had
before issue 16's fix). An asked round is stored as a click with no information (the
same persona on both sides: a zero design, a constant likelihood), so the session's record,
the population refit, recalibration and the gate read it as nothing; the population refit
therefore learns from clicks only, not from answers. An asked question does not join the
lookahead's question bank.

Settings: max_questions (default 1), answer_sd (the answer noise sd the policy assumes, in
logits, default 0.5), horizon (default 1), and every CODuel setting. In `tutorduel replay`
(no asking protocol) it plays exactly as CODuel; `tutorduel combined` runs the questions.
"""
from __future__ import annotations

from typing import Annotated

import numpy as np

from inference import population as pp
from online.direct_questions import observe_linear, pair_cost, persona_contrast, question_gains
from online.learner import Learner
from online.policies.coduel import CODuelState, _recalibrated, coduel, record_round
from online.setting_range import MIN_POSITIVE, Range, ranged
from tdmodels.errors import InputError


def asked_this_session(state: CODuelState) -> int:
    """Rounds of the session in progress spent on a question (recorded as the same persona on both sides)."""
    t, r = state.t, state.session
    return int(np.count_nonzero(r.first[:t] == r.second[:t]))


def choose_question(state: CODuelState, Phi: np.ndarray, max_questions: int, noise_var: float,
                    horizon: int = 0):
    """The persona to ask about this round, or None (show a pair). The gain counts for the rounds
    left, or for at most `horizon` of them when horizon > 0."""
    if asked_this_session(state) >= max_questions:
        return None
    P = _recalibrated(Phi, state.A)
    b = state.belief if state.transfer else state.alone
    gains = question_gains(b, P, noise_var)
    k = int(np.argmax(gains))
    remaining = len(state.session.y) - state.t - 1
    if horizon > 0:
        remaining = min(remaining, horizon)
    return k if gains[k] * remaining >= pair_cost(b, P) else None


def answer(state: CODuelState, k: int, value: float, noise_var: float, Phi: np.ndarray) -> CODuelState:
    """Fold the answer about persona k into both learners' beliefs; record a no-information round."""
    K, d = Phi.shape
    c = persona_contrast(K, d, k)
    return state._replace(belief=observe_linear(state.belief, c, value, noise_var),
                          alone=observe_linear(state.alone, c, value, noise_var), t=state.t + 1,
                          session=record_round(state.session, state.t, k, k, Phi[:, -1], 0.0))


@ranged
def coduel_ask(max_questions: Annotated[int, Range(0, 1000)] = 1,
               answer_sd: Annotated[float, Range(MIN_POSITIVE, 100)] = 0.5,
               horizon: Annotated[int, Range(0, 100)] = 1,
               population: bool = True, recalibration: bool = True, lookahead: bool = True, gate: bool = True,
               em_iters: Annotated[int, Range(1, 100)] = pp.EM_ITERS,
               refresh: Annotated[int, Range(0, 10_000)] = pp.REFRESH, exact_estep: bool = False) -> Learner:
    """CODuel that may ask one direct question a round (the combined mode); in `replay` it plays exactly as CODuel.

    Parameters
    ----------
    max_questions : int
        Questions at most per session.
    answer_sd : float
        The sd of a stated answer the learner assumes, in logits.
    horizon : int
        Rounds a question's gain is counted for (0: every round left).
    population, recalibration, lookahead, gate, em_iters, refresh, exact_estep
        CODuel's settings (``online.policies.coduel.coduel``).

    Returns
    -------
    online.learner.Learner
        CODuel's functions and records, with `ask` and `answer`.
    """
    if int(max_questions) < 0 or not float(answer_sd) > 0 or int(horizon) < 0:
        raise InputError(f"max_questions >= 0, answer_sd > 0 and horizon >= 0 are required, "
                         f"got {max_questions}, {answer_sd}, {horizon}")
    base = coduel(population, recalibration, lookahead, gate, em_iters, refresh, exact_estep)
    max_questions, noise_var, horizon = int(max_questions), float(answer_sd) ** 2, int(horizon)

    def ask(state, Phi, rng):
        return choose_question(state, Phi, max_questions, noise_var, horizon), None

    def answer_(state, Phi, k, value):
        return answer(state, int(k), float(value), noise_var, Phi), None

    return base._replace(ask=ask, answer=answer_)


__all__ = ["coduel_ask", "choose_question", "answer", "asked_this_session"]
