"""The transfer gate: let the population learner choose pairs only while it predicts clicks better.

Both learners predict every click before it is revealed. Per completed session s the gate
keeps D_s = sum over the session's rounds of log p_pop(y) - log p_alone(y), the
log-likelihood ratio of the population learner against the no-transfer learner. Transfer
is on for the next session when at least `n_min` sessions are complete and their mean
ratio exceeds `z` standard errors: mean(D) > z * sd(D) / sqrt(n). The decision uses
completed sessions only, so it is fixed within a session. Running moments by Welford's
update; pure functions over a NamedTuple.
"""
from __future__ import annotations

import math
from typing import NamedTuple

GATE_Z = 0.5
GATE_MIN_SESSIONS = 8


class GateState(NamedTuple):
    """Running moments of the per-session log-likelihood ratio (population learner against the no-transfer learner) and the current session's running ratio."""
    n: int = 0               # completed sessions
    mean: float = 0.0        # mean of D_s
    m2: float = 0.0          # sum of squared deviations of D_s
    current: float = 0.0     # running D of the session in progress


def observe(state: GateState, logp_population: float, logp_alone: float) -> GateState:
    """One click's predictive log probabilities under both learners (computed before the reveal)."""
    return GateState(n=state.n, mean=state.mean, m2=state.m2,
                     current=state.current + float(logp_population) - float(logp_alone))


def end_session(state: GateState) -> GateState:
    """The session's ratio joins the completed ones (Welford's update); the running ratio restarts at 0."""
    n = state.n + 1
    delta = state.current - state.mean
    mean = state.mean + delta / n
    return GateState(n, mean, state.m2 + delta * (state.current - mean), 0.0)


def standard_error(state: GateState) -> float:
    """Standard error of the mean ratio (nan below two sessions)."""
    if state.n < 2:
        return math.nan
    return math.sqrt(state.m2 / (state.n - 1) / state.n)


def transfer_on(state: GateState, z: float = GATE_Z, n_min: int = GATE_MIN_SESSIONS) -> bool:
    """Whether the population learner selects in the next session."""
    if state.n < max(n_min, 2):
        return False
    return state.mean > z * standard_error(state)
