"""CODuel: a Bayesian logistic learner with a learned population prior, recalibration, lookahead and a gate.

Functional core (pure functions over `CODuelState`; the class is a shell):

    state = init(K, d, S, settings)
    state = start_session(state)
    (i, j), state = select(state, Phi)
    state = update(state, y)
    state = end_session(state)

Per user: a mixture belief over the population prior's components (``online.mixture_belief``)
and, alongside, the no-transfer learner; both predict every click before it is revealed
(probit-approximated predictive for both, so the gate compares like with like).
After each session: the gate records the session's log-likelihood ratio
(``online.gate``); the population prior is refitted (``online.population``); every
`recal_every` sessions from `recal_start` on, A = a I + A' is refitted on all completed
choices with users' theta at their broad-prior Laplace means (``inference.recalibration_fit``).
Pairs: knowledge-gradient lookahead over the bank of the `bank_size` most recent questions
(``online.pair_rules``), or greedy; the no-transfer learner's greedy pair while the gate
is closed. Ablations are settings: population=False keeps the prior isotropic,
recalibration=False, lookahead=False, gate=False (always transfer).

This NumPy version is the readable reference of the algorithm; the refits make it slow
(seconds to minutes per full run), which the speed work of issue 4 addresses.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference.laplace import laplace_fit_batch
from inference.recalibration_fit import fit_recalibration_map
from online import gate as gt
from online.mixture_belief import MixtureBelief, init_belief, probit_log_predictive, update_belief
from online.pair_rules import lookahead_pair, mixture_greedy_pair
from online.policies import no_transfer as nt
from online.population import Population, init_population, refit_population
from online.protocol import Policy
from tdmodels.population_model import ALPHA, N_LEARNED, RIDGE, recalibrated_design
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior


class Settings(NamedTuple):
    population: bool = True
    recalibration: bool = True
    lookahead: bool = True
    gate: bool = True
    alpha: float = ALPHA
    max_learned: int = N_LEARNED
    ridge: float = RIDGE
    recal_start: int = 20
    recal_every: int = 10
    bank_size: int = 16
    gate_z: float = gt.GATE_Z
    gate_min: int = gt.GATE_MIN_SESSIONS
    prior_var: float = DEFAULT_PRIOR_VAR


class CODuelState(NamedTuple):
    settings: Settings
    S: int                       # rounds per session
    pop: Population
    A: np.ndarray                # [K, K] recalibration (identity until fitted)
    gate: gt.GateState
    transfer: bool               # whether the population learner selects this session
    belief: MixtureBelief        # current user, under the population prior
    alone: nt.NoTransferState    # current user, no-transfer learner
    bank: np.ndarray             # [<= bank_size, K, d] recent questions, raw Phi
    t: int                       # round within the session
    pending: tuple               # (z, first, second, rater) of the shown pair, until its click
    session: tuple               # lists of first, second, rater rows, clicks of this session
    done: tuple                  # arrays first [n, S], second [n, S], rater [n, S, K], y [n, S]


def recalibrate(Phi: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Phi [..., K, K+1] with the rater column g replaced by A g."""
    out = Phi.copy()
    out[..., -1] = np.einsum("pq,...q->...p", A, Phi[..., -1])
    return out


def init(K: int, d: int, S: int, settings: Settings = Settings()) -> CODuelState:
    pop = init_population(d, settings.prior_var)
    empty = (np.zeros((0, S), int), np.zeros((0, S), int), np.zeros((0, S, K)), np.zeros((0, S), int))
    return CODuelState(settings, S, pop, np.eye(K), gt.GateState(), False, init_belief(pop.prior),
                       nt.init(d, settings.prior_var), np.zeros((0, K, d)), 0, (), ([], [], [], []), empty)


def start_session(state: CODuelState) -> CODuelState:
    s = state.settings
    transfer = (not s.gate and state.pop.n > 0) or gt.transfer_on(state.gate, s.gate_z, s.gate_min)
    return state._replace(belief=init_belief(state.pop.prior), alone=nt.start_session(state.alone),
                          transfer=transfer, t=0, session=([], [], [], []))


def select(state: CODuelState, Phi: np.ndarray) -> tuple[tuple[int, int], CODuelState]:
    s = state.settings
    bank = np.concatenate([state.bank, Phi[None]])[-s.bank_size:]
    P = recalibrate(Phi, state.A)
    if state.transfer:
        if s.lookahead:
            pair = lookahead_pair(state.belief, P, recalibrate(bank, state.A), state.S - state.t - 1)
        else:
            pair = mixture_greedy_pair(state.belief, P)
    else:
        pair, _ = nt.select(state.alone, P)
    i, j = pair
    return pair, state._replace(bank=bank, pending=(P[i] - P[j], i, j, Phi[:, -1].copy()))


def update(state: CODuelState, y: int) -> CODuelState:
    z, i, j, g = state.pending
    belief, lp_pop = update_belief(state.belief, z, y)
    a = state.alone
    lp_alone = float(probit_log_predictive(float(z @ a.mean), float(z @ a.cov @ z), y))
    alone, _ = nt.update(a, z, y)
    f, sc, r, c = state.session
    return state._replace(belief=belief, alone=alone, gate=gt.observe(state.gate, lp_pop, lp_alone),
                          t=state.t + 1, pending=(), session=(f + [i], sc + [j], r + [g], c + [y]))


def end_session(state: CODuelState) -> CODuelState:
    s = state.settings
    f, sc, r, c = state.session
    if len(c) != state.S:
        raise ValueError(f"CODuel: a session of {len(c)} clicks, expected {state.S}")
    first, second, rater, y = (np.concatenate([old, np.asarray(new)[None]]) for old, new in zip(state.done, (f, sc, r, c)))
    n = len(y)
    A = state.A
    if s.recalibration and n >= s.recal_start and (n - s.recal_start) % s.recal_every == 0:
        Z = recalibrated_design(A, first, second, rater)
        d = Z.shape[-1]
        theta, _, _ = laplace_fit_batch(np.zeros((n, d)), np.broadcast_to(s.prior_var * np.eye(d), (n, d, d)).copy(),
                                        Z, y)
        th = np.broadcast_to(theta[:, None], (n, state.S, d))
        A = fit_recalibration_map(first, second, rater, th, y, ridge=s.ridge).A
    pop = state.pop
    if s.population:
        pop, _ = refit_population(pop, recalibrated_design(A, first, second, rater), y, alpha=s.alpha,
                                  max_learned=s.max_learned)
    else:
        pop = pop._replace(n=n)
    return state._replace(pop=pop, A=A, gate=gt.end_session(state.gate), done=(first, second, rater, y))


class CODuel(Policy):
    """CODuel with the reference settings; ablations by setting, e.g. coduel[population=false]."""

    name = "coduel"

    def __init__(self, population: bool = True, recalibration: bool = True, lookahead: bool = True,
                 gate: bool = True):
        self.settings = Settings(population=bool(population), recalibration=bool(recalibration),
                                 lookahead=bool(lookahead), gate=bool(gate))

    def reset(self, rng, context):
        super().reset(rng, context)
        self.state = init(context["K"], context["d"], context["S"],
                          self.settings._replace(bank_size=int(context.get("b", 16))))
        self._priors = []

    def start_student(self):
        self.state = start_session(self.state)
        self._priors.append(self.state.pop.prior)

    def arrival_priors(self) -> MixturePrior:
        """The population prior each user arrived under, zero-padded to a common component count."""
        N, C = len(self._priors), max(len(p.weights) for p in self._priors)
        d = self._priors[0].means.shape[-1]
        w, m, S = np.zeros((N, C)), np.zeros((N, C, d)), np.tile(np.eye(d), (N, C, 1, 1))
        for a, p in enumerate(self._priors):
            k = len(p.weights)
            w[a, :k], m[a, :k], S[a, :k] = p
        return MixturePrior(w, m, S)

    def select(self, Phi):
        pair, self.state = select(self.state, Phi)
        return pair

    def update(self, outcome):
        self.state = update(self.state, int(outcome))

    def end_student(self):
        self.state = end_session(self.state)


__all__ = ["CODuel", "CODuelState", "Settings", "init", "start_session", "select", "update", "end_session"]
