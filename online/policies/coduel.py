"""CODuel: a Bayesian logistic learner with a learned population prior, recalibration, lookahead and a gate.

Functional core (pure functions over `CODuelState`; the class is a shell):

    state = init(K, d, S, settings)
    state = start_session(state)
    (i, j), state = select(state, Phi)
    state = update(state, y)
    state = end_session(state)

Per user: a mixture belief over the population prior's component slots
(``inference.mixture_belief``) and, alongside, the no-transfer learner (the same update with
the broad prior alone); both predict every click before it is revealed (probit-approximated
predictive for both, so the gate compares like with like). After each session: the gate
records the session's log-likelihood ratio (``online.gate``); every `recal_every` sessions
from `recal_start` on, A = a I + A' is refitted on all completed choices with users' theta
at their broad-prior Laplace modes (``inference.recalibration_fit``, warm-started at the
previous A); the population prior is refitted by incremental EM (``inference.population``).
Pairs: knowledge-gradient lookahead over the bank of the `bank_size` most recent questions,
this one included (``online.pair_rules``), or greedy; the no-transfer learner's greedy pair
while the gate is closed. Ablations are settings: population=False keeps the prior
isotropic, recalibration=False, lookahead=False, gate=False (always transfer once a session
is complete).

`engine` = "numba" runs the hot path in compiled kernels (``inference.kernels``); "numpy" runs
the same algorithm in plain NumPy (the readable reference; the speed benchmark compares
them). Both agree to rounding.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from inference.recalibration_fit import RIDGE_A, fit_recalibration_map
from inference import kernels as kn
from online import gate as gt
from inference.mixture_belief import MixtureBelief, update_belief
from online.pair_rules import lookahead_pair, mixture_greedy_pair
from inference import population as pp
from inference.population import Population, fit_units, init_population, rebase, refit_population
from online.protocol import Policy
from tdmodels.population_model import ALPHA, N_LEARNED, RIDGE, recalibrated_design
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior

ENGINES = ("numba", "numpy")
_ONE = np.ones(1, dtype=bool)
RECAL_TOL = 1e-7         # Newton step size at which the recalibration fit stops (quadratic: error ~1e-14 by then)


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
    em_iters: int = pp.EM_ITERS
    refresh: int = pp.REFRESH
    exact_estep: bool = False
    engine: str = "numba"


class Completed(NamedTuple):
    """All completed sessions, n of them."""
    first: np.ndarray        # [n, S] int
    second: np.ndarray       # [n, S] int
    rater: np.ndarray        # [n, S, K] the question's rater scores g
    y: np.ndarray            # [n, S] float clicks
    Z: np.ndarray            # [n, S, d] click designs under the current A


class CODuelState(NamedTuple):
    settings: Settings
    S: int                       # rounds per session
    pop: Population
    A: np.ndarray                # [K, K] recalibration (identity until fitted)
    recal_w: np.ndarray          # [1 + K*K] its parameters (a, vec A'), the next fit's warm start
    gate: gt.GateState
    transfer: bool               # whether the population learner selects this session
    belief: MixtureBelief        # current user, over the population's component slots
    alone: MixtureBelief         # current user, the no-transfer learner (one component: the broad prior)
    bank: np.ndarray             # [<= bank_size, K, d] recent questions, raw Phi
    bank_P: np.ndarray           # the same, recalibrated by A
    t: int                       # round within the session
    pending: tuple               # (z, first, second, rater) of the shown pair, until its click
    session: tuple               # (first, second, rater, clicks) lists of this session
    done: Completed
    last_logpred: tuple = ()     # (population, alone): log p(y) of the last click, predicted before it was revealed


def recalibrate(Phi: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Phi [..., K, K+1] with the rater column g replaced by A g."""
    out = np.array(Phi, dtype=float)
    out[..., -1] = np.einsum("pq,...q->...p", A, Phi[..., -1])
    return out


def _belief_from(pop: Population) -> MixtureBelief:
    with np.errstate(divide="ignore"):
        log_w = np.where(pop.active, np.log(pop.weights), -np.inf)
    return MixtureBelief(log_w, pop.means.copy(), pop.covs.copy())


def _broad(pop: Population) -> MixtureBelief:
    return MixtureBelief(np.zeros(1), pop.means[-1:].copy(), pop.covs[-1:].copy())


def init(K: int, d: int, S: int, settings: Settings = Settings()) -> CODuelState:
    if settings.engine not in ENGINES:
        raise ValueError(f"CODuel engine must be one of {ENGINES}, got {settings.engine!r}")
    pop = init_population(d, settings.prior_var, settings.max_learned)
    done = Completed(np.zeros((0, S), int), np.zeros((0, S), int), np.zeros((0, S, K)), np.zeros((0, S)),
                     np.zeros((0, S, d)))
    return CODuelState(settings, S, pop, np.eye(K), np.r_[1.0, np.zeros(K * K)], gt.GateState(), False, _belief_from(pop), _broad(pop),
                       np.zeros((0, K, d)), np.zeros((0, K, d)), 0, (), ([], [], [], []), done)


def start_session(state: CODuelState) -> CODuelState:
    s = state.settings
    transfer = (not s.gate and state.pop.n > 0) or gt.transfer_on(state.gate, s.gate_z, s.gate_min)
    return state._replace(belief=_belief_from(state.pop), alone=_broad(state.pop), transfer=transfer, t=0,
                          session=([], [], [], []))


def select(state: CODuelState, Phi: np.ndarray) -> tuple[tuple[int, int], CODuelState]:
    s = state.settings
    fast = s.engine == "numba"
    if fast:
        P = kn.recalibrated(np.asarray(Phi, dtype=float), state.A)
    else:
        P = recalibrate(Phi, state.A)
    bank, bank_P = state.bank, state.bank_P
    if s.lookahead:                 # greedy play needs no bank
        keep = s.bank_size - 1
        bank = np.concatenate([bank[len(bank) - keep:] if keep > 0 else bank[:0], Phi[None]])
        bank_P = np.concatenate([bank_P[len(bank_P) - keep:] if keep > 0 else bank_P[:0], P[None]])
    b = state.belief if state.transfer else state.alone
    active = state.pop.active if state.transfer else _ONE
    if state.transfer and s.lookahead:
        remaining = state.S - state.t - 1
        pair = (kn.lookahead_pair(b.log_w, b.means, b.covs, active, P, bank_P, remaining) if fast
                else lookahead_pair(b, P, bank_P, remaining))
    else:
        pair = kn.mixture_greedy(b.log_w, b.means, active, P) if fast else mixture_greedy_pair(b, P)
    i, j = int(pair[0]), int(pair[1])
    return (i, j), state._replace(bank=bank, bank_P=bank_P, pending=(P[i] - P[j], i, j, Phi[:, -1].copy()))


def update(state: CODuelState, y: int) -> CODuelState:
    z, i, j, g = state.pending
    if state.settings.engine == "numba":
        b, a = state.belief, state.alone
        w1, m1, S1, lp_pop, w2, m2, S2, lp_alone = kn.update_both(b.log_w, b.means, b.covs, state.pop.active,
                                                                  a.log_w, a.means, a.covs, z, int(y))
        belief, alone = MixtureBelief(w1, m1, S1), MixtureBelief(w2, m2, S2)
    else:
        belief, lp_pop = update_belief(state.belief, z, y)
        alone, lp_alone = update_belief(state.alone, z, y)
    f, sc, r, c = state.session
    return state._replace(belief=belief, alone=alone, gate=gt.observe(state.gate, lp_pop, lp_alone),
                          t=state.t + 1, pending=(), session=(f + [i], sc + [j], r + [g], c + [int(y)]),
                          last_logpred=(float(lp_pop), float(lp_alone)))


def _refit_A(state: CODuelState, done: Completed) -> np.ndarray:
    """(a, vec A') by ridge logistic regression, theta at each session's broad-prior Laplace mode
    under the current A, Newton warm-started at the previous fit."""
    s, pop = state.settings, state.pop
    n, S, d = done.Z.shape
    init = np.zeros((n, d))
    init[:len(pop.broad_modes)] = pop.broad_modes        # earlier sessions' broad fits warm-start Newton
    theta, _, _ = fit_units(done.Z, done.y, np.arange(n), np.full(n, len(pop.weights) - 1), pop.means, pop.covs,
                            init, s.engine)
    K = state.A.shape[0]
    w0 = state.recal_w
    th = np.repeat(theta, S, 0)
    first, second, rater, y = done.first.ravel(), done.second.ravel(), done.rater.reshape(-1, K), done.y.ravel()
    if s.engine == "numba":
        w, it = kn.recalibration_newton(first.astype(np.int64), second.astype(np.int64), rater, th, y,
                                        float(s.ridge), RIDGE_A, w0, tol=RECAL_TOL)
        if it < 0:
            raise RuntimeError("recalibration fit: Newton did not converge")
        return w
    fit = fit_recalibration_map(first, second, rater, th, y, ridge=s.ridge, init=w0, tol=RECAL_TOL)
    return np.r_[fit.a, fit.A_dev.ravel()]


def end_session(state: CODuelState) -> CODuelState:
    s = state.settings
    f, sc, r, c = state.session
    if len(c) != state.S:
        raise ValueError(f"CODuel: a session of {len(c)} clicks, expected {state.S}")
    new = (np.asarray(f)[None], np.asarray(sc)[None], np.asarray(r)[None], np.asarray(c, dtype=float)[None])
    z_new = recalibrated_design(state.A, *new[:3])
    done = Completed(*(np.concatenate([old, x]) for old, x in zip(state.done, new + (z_new,))))
    n = len(done.y)
    A, recal_w, bank_P = state.A, state.recal_w, state.bank_P
    if s.recalibration and n >= s.recal_start and (n - s.recal_start) % s.recal_every == 0:
        recal_w = _refit_A(state, done)
        K = len(A)
        A = recal_w[0] * np.eye(K) + recal_w[1:].reshape(K, K)
        done = done._replace(Z=recalibrated_design(A, done.first, done.second, done.rater))
        bank_P = recalibrate(state.bank, A)
        pop = rebase(state.pop, done.Z, done.y, s.engine) if s.population else state.pop
    else:
        pop = state.pop
    if s.population:
        pop = refit_population(pop, done.Z, done.y, alpha=s.alpha, em_iters=s.em_iters, refresh=s.refresh,
                               exact=s.exact_estep, engine=s.engine)
    else:
        pop = pop._replace(n=n)
    return state._replace(pop=pop, A=A, recal_w=recal_w, bank_P=bank_P, gate=gt.end_session(state.gate), done=done)


class BeliefTrace(NamedTuple):
    """The online belief after every click: [N, S, ...] arrays (C = component slots)."""
    log_w: np.ndarray        # [N, S, C]
    means: np.ndarray        # [N, S, C, d]
    covs: np.ndarray         # [N, S, C, d, d]
    transfer: np.ndarray     # [N] bool, whether the population learner chose this session's pairs
    gate_llr: np.ndarray     # [N, S] running log-likelihood ratio of the session (population - alone)
    gate_mean: np.ndarray    # [N] at arrival: mean ratio over completed sessions
    gate_se: np.ndarray      # [N] at arrival: its standard error (nan below two sessions)


class CODuel(Policy):
    """CODuel with the reference settings; ablations by setting, e.g. coduel[population=false],
    or by name, e.g. coduel:no-population. record=true keeps the belief after every click."""

    name = "coduel"

    def __init__(self, population: bool = True, recalibration: bool = True, lookahead: bool = True,
                 gate: bool = True, engine: str = "numba", record: bool = False, em_iters: int = pp.EM_ITERS,
                 refresh: int = pp.REFRESH, exact_estep: bool = False):
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        if int(em_iters) < 1 or int(refresh) < 0:
            raise ValueError(f"em_iters >= 1 and refresh >= 0 are required, got {em_iters}, {refresh}")
        self.settings = Settings(population=bool(population), recalibration=bool(recalibration),
                                 lookahead=bool(lookahead), gate=bool(gate), engine=engine, em_iters=int(em_iters),
                                 refresh=int(refresh), exact_estep=bool(exact_estep))
        self.record = bool(record)

    def reset(self, rng, context):
        super().reset(rng, context)
        self.state = init(context["K"], context["d"], context["S"],
                          self.settings._replace(bank_size=int(context.get("b", 16))))
        self._priors, self._recal, self._trace, self._final, self._pred = [], [], [], [], []

    def start_student(self):
        self.state = start_session(self.state)
        self._priors.append(self.state.pop.prior)
        self._recal.append(self.state.A)
        if self.record:
            g = self.state.gate
            self._trace.append((self.state.transfer, [], g.mean, gt.standard_error(g)))

    def arrival_priors(self) -> MixturePrior:
        """The population prior each user arrived under, zero-padded to a common component count."""
        return _padded(self._priors)

    def arrival_recalibrations(self) -> np.ndarray:
        """[N, K, K]: the recalibration A each user's clicks were read with."""
        return np.array(self._recal)

    def belief_trace(self) -> BeliefTrace:
        if not self.record:
            raise RuntimeError("CODuel: construct with record=True to keep the belief per round")
        rounds = [r for _, r, _, _ in self._trace]
        return BeliefTrace(*(np.array([[x[k] for x in r] for r in rounds]) for k in range(3)),
                           np.array([t[0] for t in self._trace]), np.array([[x[3] for x in r] for r in rounds]),
                           np.array([t[2] for t in self._trace]), np.array([t[3] for t in self._trace]))

    def select(self, Phi):
        pair, self.state = select(self.state, Phi)
        return pair

    def update(self, outcome):
        self.state = update(self.state, int(outcome))
        lp = self.state.last_logpred                       # P(first wins) as each learner predicted it
        self._pred.append([math.exp(x) if outcome else -math.expm1(x) for x in lp])
        if self.record:
            b = self.state.belief
            self._trace[-1][1].append((b.log_w, b.means, b.covs, self.state.gate.current))

    def end_student(self):
        self._final.append((self.state.belief, self.state.pop.active))
        self.state = end_session(self.state)

    def click_predictions(self) -> dict:
        """P(first wins) [N, S] that each learner predicted before every click was revealed."""
        p = np.array(self._pred).reshape(len(self._final), -1, 2)
        return {"population": p[..., 0], "alone": p[..., 1]}

    def session_beliefs(self) -> MixturePrior:
        """Each user's belief at the end of their session over the components of the prior they
        arrived under (same order as `arrival_priors`, zero-padded alike): weights [N, C], means
        [N, C, d], covs [N, C, d, d]. The online posterior to validate."""
        return _padded([MixturePrior(np.exp(b.log_w[a]), b.means[a], b.covs[a]) for b, a in self._final])


def _padded(priors: list) -> MixturePrior:
    """Mixtures with different component counts, zero-padded (weight 0, identity covariance) to one array."""
    N, C = len(priors), max(len(p.weights) for p in priors)
    d = priors[0].means.shape[-1]
    w, m, S = np.zeros((N, C)), np.zeros((N, C, d)), np.tile(np.eye(d), (N, C, 1, 1))
    for a, p in enumerate(priors):
        k = len(p.weights)
        w[a, :k], m[a, :k], S[a, :k] = p
    return MixturePrior(w, m, S)


__all__ = ["CODuel", "CODuelState", "Settings", "BeliefTrace", "init", "start_session", "select", "update",
           "end_session"]
