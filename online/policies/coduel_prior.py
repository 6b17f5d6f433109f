"""The prior a CODuel session starts from: the population prior, its broad weight floored, and (with a change
hazard) the new type the last sessions may share, the floor raised to the probability that the next user is of
a kind the population explains no better than its broad component.

CODuel's belief over a user lives on the population's component slots, learned ones first and the broad one
last. With `change_hazard` > 0 the belief has one slot more, just before the broad one: the recent type of
``inference.change_point``, weighted by the probability that the next user is of it, the population's slots
scaled down by the rest. The population itself (its refit, its slots) never sees that slot.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference.change_point import RecentType, new_kind_probability, population_log_evidence, recent_type
from inference.constants import CHANGE_WINDOW
from inference.mixture_belief import MixtureBelief
from inference.population import Population

BROAD_FLOOR_MAX = 0.99   # recent sessions raise the floor at most to this: the learned components keep weight


def floored(weights: np.ndarray, floor: float) -> np.ndarray:
    """Mixture weights [C] (broad last) with the broad weight raised to `floor` if below it, the others scaled
    down in proportion."""
    if floor <= weights[-1]:
        return weights
    w = weights * ((1.0 - floor) / (1.0 - weights[-1]))
    w[-1] = floor
    return w


def broad_floor(recent_broad: np.ndarray, session_broad_weight: float) -> float:
    """The least weight of the broad component in a session's starting belief (`session_broad_weight`, and the
    mean of `recent_broad` up to BROAD_FLOOR_MAX)."""
    recent = min(float(recent_broad.mean()), BROAD_FLOOR_MAX) if len(recent_broad) else 0.0
    return max(session_broad_weight, recent)


def _window(pop: Population) -> slice:
    """The population's last CHANGE_WINDOW completed sessions."""
    return slice(max(0, pop.n - CHANGE_WINDOW), pop.n)


def recent_type_of(pop: Population, hazard: float, gains: np.ndarray) -> RecentType:
    """``inference.change_point.recent_type`` over the population's last CHANGE_WINDOW sessions, their
    population evidence gains on arrival `gains` [>= n] (``arrival_log_gain``) and the prior now."""
    broad_var = float(pop.covs[-1, 0, 0])
    if pop.n == 0:
        d = pop.means.shape[1]
        return RecentType(0.0, np.zeros(d), broad_var * np.eye(d), 0.0)
    last, a = _window(pop), pop.active
    return recent_type(pop.lik_prec[last], pop.lik_lin[last], pop.lik_const[last], pop.weights[a],
                       pop.means[a], pop.covs[a], hazard, broad_var, gain=gains[last])


def arrival_log_gain(before: Population, after: Population) -> float:
    """The newest session's log evidence under the population prior its user arrived under (`before`, the prior
    before the refit that added the session; its likelihood surrogate from `after`), minus its log evidence
    under the broad component: a population run's predictive in the change-point view, over the broad one's
    (the refitted prior, with a component born from the session, would overstate it; and the ratio, unlike the
    evidence, stays comparable when a recalibration redoes the surrogates)."""
    u, a = after.n - 1, before.active
    lik = after.lik_prec[u:u + 1], after.lik_lin[u:u + 1], after.lik_const[u:u + 1]
    return float(population_log_evidence(*lik, before.weights[a], before.means[a], before.covs[a])[0]
                 - population_log_evidence(*lik, np.ones(1), before.means[-1:], before.covs[-1:])[0])


def session_prior(pop: Population, floor: float = 0.0, rho: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(weights [C'], active [C']) of a session's starting belief: C' = C slots, the population's weights with
    the broad one at least `floor` (the others scaled down in proportion); or C + 1, those weights scaled by
    1 - `rho` and a recent type of weight `rho` (its slot before the broad one, inactive where `rho` is 0)."""
    w = floored(pop.weights, floor)
    if rho is None:
        return w, pop.active
    mixed = np.concatenate([(1.0 - rho) * w[:-1], [rho], (1.0 - rho) * w[-1:]])
    return mixed, np.concatenate([pop.active[:-1], [rho > 0.0], pop.active[-1:]])


class SessionStart(NamedTuple):
    """What a session's belief starts from (``belief_from``)."""
    belief: MixtureBelief        # over the population's slots, and with a change hazard the recent type's
    active: np.ndarray           # [C'] its live slots
    recent_weight: float         # the recent type's weight in it (0 without a change hazard)
    floor: float                 # the least broad weight of its population part (``session_prior``)


def belief_from(pop: Population, floor: float = 0.0, hazard: float = 0.0, cap: float = 1.0,
                gains: np.ndarray | None = None) -> SessionStart:
    """The belief a session starts from: `session_prior`'s weights on the population's components, and with
    `hazard` > 0 on the recent type's too (``recent_type_of`` with the sessions' arrival `gains`, its weight at
    most `cap`); the population's broad weight at least `floor` and, with a hazard, at least the probability that
    the next user is of a new kind (``inference.change_point.new_kind_probability`` over the last CHANGE_WINDOW
    sessions' `gains`, up to BROAD_FLOOR_MAX)."""
    if hazard and pop.n and (gains is None or len(gains) < pop.n):
        raise ValueError(f"belief_from: with a change hazard, the gains of the {pop.n} completed sessions are needed")
    recent = recent_type_of(pop, hazard, gains) if hazard else None
    if recent is None:
        w, active = session_prior(pop, floor)
    else:
        new_kind = new_kind_probability(gains[_window(pop)], hazard) if pop.n else 0.0
        floor = max(floor, min(new_kind, BROAD_FLOOR_MAX))
        rho = min(recent.weight, cap)
        w, active = session_prior(pop, floor, rho)
    with np.errstate(divide="ignore"):
        log_w = np.where(active, np.log(w), -np.inf)
    if recent is None:
        return SessionStart(MixtureBelief(log_w, pop.means.copy(), pop.covs.copy()), active, 0.0, floor)
    return SessionStart(MixtureBelief(log_w, np.concatenate([pop.means[:-1], recent.mean[None], pop.means[-1:]]),
                                      np.concatenate([pop.covs[:-1], recent.cov[None], pop.covs[-1:]])),
                        active, rho, floor)


def unfloored_broad(pop: Population, final_log_w: np.ndarray, floor: float, rho: float | None = None) -> float:
    """The broad component's weight in a session's final belief (log weights `final_log_w` over its slots)
    re-weighted from the prior the session started under to the unfloored one: the posterior probability that
    the user fits no learned type (nor the recent type, of weight `rho` in that prior, where there is one), as
    the prior without a floor would have it (so that a floor does not feed on itself)."""
    wf, active = session_prior(pop, floor, rho)
    w0 = session_prior(pop, 0.0, rho)[0]
    w0, wf = w0[active], wf[active]
    with np.errstate(divide="ignore", invalid="ignore"):
        lp = np.where(w0 > 0, final_log_w[active] + np.log(w0) - np.log(wf), -np.inf)
    return float(np.exp(lp[-1] - np.logaddexp.reduce(lp)))


def broad_belief(pop: Population) -> MixtureBelief:
    """The no-transfer learner's belief: the broad prior alone."""
    return MixtureBelief(np.zeros(1), pop.means[-1:].copy(), pop.covs[-1:].copy())


__all__ = ["BROAD_FLOOR_MAX", "floored", "broad_floor", "recent_type_of", "arrival_log_gain", "session_prior",
           "SessionStart", "belief_from", "unfloored_broad", "broad_belief"]
