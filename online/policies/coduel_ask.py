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

from online.direct_questions import observe_linear, pair_cost, persona_contrast, question_gains
from online.policies.coduel import CODuel, CODuelState, _recalibrated, record_round
from online.setting_range import Range, ranged
from tdmodels.errors import InputError


def choose_question(state: CODuelState, Phi: np.ndarray, asked: int, max_questions: int, noise_var: float,
                    horizon: int = 0, engine: str = "numba"):
    """The persona to ask about this round, or None (show a pair). The gain counts for the rounds
    left, or for at most `horizon` of them when horizon > 0."""
    if asked >= max_questions:
        return None
    P = _recalibrated(Phi, state.A, engine)
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


class CODuelAsk(CODuel):
    """CODuel that may ask one direct question a round (the combined mode); in `replay` it plays exactly as CODuel."""
    name = "coduel-ask"
    asks = True

    @ranged
    def __init__(self, max_questions: Annotated[int, Range(0, 1000)] = 1,
                 answer_sd: Annotated[float, Range(0, 100, lo_open=True)] = 0.5,
                 horizon: Annotated[int, Range(0, 100)] = 1, **coduel_settings):
        if int(max_questions) < 0 or not float(answer_sd) > 0 or int(horizon) < 0:
            raise InputError(f"max_questions >= 0, answer_sd > 0 and horizon >= 0 are required, "
                             f"got {max_questions}, {answer_sd}, {horizon}")
        super().__init__(**coduel_settings)
        self.engine = coduel_settings.get("engine", "numba")
        self.max_questions, self.noise_var, self.horizon = int(max_questions), float(answer_sd) ** 2, int(horizon)

    def start_student(self):
        super().start_student()
        self._asked = 0

    def ask(self, Phi):
        """A persona index to ask about this round, or None to show a pair."""
        k = choose_question(self.state, Phi, self._asked, self.max_questions, self.noise_var, self.horizon,
                            self.engine)
        self._phi = Phi
        return k

    def answer(self, k, value):
        self.state = answer(self.state, int(k), float(value), self.noise_var, self._phi)
        self._asked += 1
        self._pred.append([0.5, 0.5])               # no click was predicted this round
        self._trace_round()
