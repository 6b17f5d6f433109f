"""CODuel: a Bayesian logistic learner with a learned population prior, recalibration, lookahead and a gate.

    learner = coduel(lookahead=False)                   # an online.learner.Learner
    state = learner.init(context)
    state, info = learner.start_session(state, rng)   # info: ArrivalInfo
    pair, info = learner.select(state, Phi, rng)        # the state is not changed
    state, info = learner.update(state, Phi, pair, y)
    state, info = learner.end_session(state)

Per user: a mixture belief over the population prior's component slots
(``inference.mixture_belief``) and, alongside, the no-transfer learner (the same update with
the broad prior alone); both predict every click before it is revealed (probit-approximated
predictive for both, so the gate compares like with like). After each session: the gate
records the session's log-likelihood ratio (``online.gate``); every `recal_every` sessions
from `recal_start` on, A = a I + A' is refitted on all completed choices with users' theta
at their broad-prior Laplace modes (``inference.recalibration_fit``, warm-started at the
previous A); the population prior is refitted by incremental EM (``inference.population``).
Pairs: knowledge-gradient lookahead over the bank of the `bank_size` most recent questions,
this one included (``inference.kernels.lookahead_pair``; the rule stated in ``online.lookahead_reference``), its future term weighted by `lookahead_weight` (1 in
CODuel; ``online.policies.tempered_kg`` tempers it), or greedy; the no-transfer learner's greedy pair
while the gate is closed. Frontier settings change the pair while transfer is on (component Thompson
sampling, component information, the challenger: ``online.policies.coduel_pairs``). Ablations are settings: population=False keeps the prior
isotropic, recalibration=False, lookahead=False, gate=False (always transfer once a session
is complete).

The state has fixed shapes: the session's rounds in [S] arrays, the completed sessions in [N]
arrays with a count, the question bank in a [bank_size] window. The population's own
per-session statistics (``inference.population.Population``) still grow by one row a session.

The hot path runs in compiled kernels (``inference.kernels``), each checked against a plain
NumPy oracle in the tests (tests/inference/test_kernels.py). The infos carry what the click log records (``online.records``):
the prior and recalibration each user arrived under (`ArrivalInfo`), both learners' click
predictions and the belief after every click (`UpdateInfo`), each user's final belief
(`SessionInfo`).
"""
from __future__ import annotations

import math
import numbers
from typing import Annotated, NamedTuple

import numpy as np

from inference import kernels as kn
from inference import population as pp
from inference.constants import BELIEFS, SESSION_BELIEFS
from inference.mixture_belief import MixtureBelief
from inference.online_beliefs import Sites
from inference.population import Population, fit_units, init_population, rebase, refit_population
from inference.recalibration_fit import RIDGE_A
from online import append_only
from online import gate as gt
from online.learner import Context, Learner
from online.policies.coduel_pairs import challenged_pair, informative_pair
from online.policies.coduel_belief_click import belief_click, session_sites
from online.policies.coduel_prior import (arrival_log_gain, belief_from, broad_belief, broad_floor, floored,
                                          unfloored_broad)
from online.setting_range import MIN_POSITIVE, Range, Search, ranged
from tdmodels.population_hyper import ALPHA, N_LEARNED, RIDGE, recalibrated_design
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior
from tdmodels.errors import InputError

_ONE = np.ones(1, dtype=bool)
RECAL_TOL = 1e-7         # Newton step size at which the recalibration fit stops (quadratic: error ~1e-14 by then)


class Settings(NamedTuple):
    """Every CODuel constant; `bank_size` is the context's b unless given."""
    population: bool = True
    recalibration: bool = True
    lookahead: bool = True
    gate: bool = True
    alpha: float = ALPHA
    max_learned: int = N_LEARNED
    ridge: float = RIDGE
    recal_start: int = 20
    recal_every: int = 10
    bank_size: int | None = None
    lookahead_weight: float = 1.0
    gate_z: float = gt.GATE_Z
    gate_min: int = gt.GATE_MIN_SESSIONS
    component_thompson: bool = False   # pairs: greedy under one component drawn from the belief's weights
    prior_var: float = DEFAULT_PRIOR_VAR
    em_iters: int = pp.EM_ITERS
    refresh: int = pp.REFRESH
    exact_estep: bool = False
    belief: str = "laplace"           # the per-user online belief (``inference.online_beliefs``)
    component_information: float = 0.0  # pairs: minus this x (decay) x the click's information on the component
    session_broad_weight: float = 0.0   # a session's belief starts with the broad component's weight at least this
    broad_memory: int = 0               # ... and at least its mean weight at the end of the last this many sessions
                                        # (0 for each of them before the first session)
    challenger: float = 0.0             # pairs: the no-transfer learner's favourite as second at this confidence
    change_hazard: float = 0.0          # a session's belief adds the new type the last sessions may share
                                        # (``inference.change_point``), this the prior chance of a change a session
    change_weight_max: float = 0.5      # ... with at most this weight: the rest keeps the population's hedge


class Rounds(NamedTuple):
    """Rounds of one or more sessions: shown pairs, the question's rater scores and the clicks."""
    first: np.ndarray        # [..., S] int
    second: np.ndarray       # [..., S] int
    rater: np.ndarray        # [..., S, K] the question's rater scores g
    y: np.ndarray            # [..., S] float clicks


class Completed(NamedTuple):
    """The completed sessions: rows [:n] of [N, ...] arrays, shared between states (``online.append_only``)."""
    rounds: Rounds           # [N, S, ...]
    Z: np.ndarray            # [N, S, d] click designs under the current A
    n: int
    mark: np.ndarray         # [1] rows written to the buffers (``online.append_only``)


class CODuelState(NamedTuple):
    """Everything CODuel carries between calls, in fixed shapes (see the module docstring)."""
    pop: Population
    A: np.ndarray                # [K, K] recalibration (identity until fitted)
    recal_w: np.ndarray          # [1 + K*K] its parameters (a, vec A'), the next fit's warm start
    gate: gt.GateState
    transfer: bool               # whether the population learner selects this session
    belief: MixtureBelief        # current user, over the population's component slots
    alone: MixtureBelief         # current user, the no-transfer learner (one component: the broad prior)
    bank: np.ndarray             # [bank_size, K, d] recent questions, raw Phi, the newest last
    bank_P: np.ndarray           # the same, recalibrated by A
    n_bank: int                  # how many of the bank's last rows hold questions
    t: int                       # rounds played in this session
    session: Rounds              # [S, ...] this session's rounds (rows [:t] filled)
    done: Completed
    session_z: np.ndarray        # [S, d] this session's click designs as read (rows [:t]; kept by the beliefs that reread them, SESSION_BELIEFS)
    recent_broad: np.ndarray     # [broad_memory] the broad component's weight in the belief at the last sessions' ends
    active: np.ndarray           # [C'] the belief's live slots: the population's (C' = C), and with change_hazard
                                 # the recent type's before the broad one (C' = C + 1; ``online.policies.coduel_prior``)
    recent_weight: float = 0.0   # the recent type's weight in this session's starting belief (0 without change_hazard)
    arrival_gain: np.ndarray = np.zeros(0)  # [N] with change_hazard: each completed session's log evidence under the
                                            # population prior its user arrived under, over the broad component's
    floor: float = 0.0           # the least broad weight in this session's starting belief (``belief_from``)
    start: MixtureBelief | None = None  # this session's starting belief (``belief_from``): what the beliefs that
                                        # reread the session fold its clicks from (SESSION_BELIEFS)
    sites: Sites | None = None          # [C', 3, S], [C']: expectation propagation's sites of the belief's components
    alone_sites: Sites | None = None    # [1, 3, S], [1]: and of the no-transfer belief's (None: a belief without)


class Predictions(NamedTuple):
    """P(first wins) as each learner predicted it before the click was revealed."""
    population: float
    alone: float


class UpdateInfo(NamedTuple):
    """What each learner predicted of the click before it was revealed, and the belief after it."""
    log_predictive_population: float   # log P(the observed click) under the population learner
    log_predictive_alone: float        # ... under the no-transfer learner
    predictions: Predictions           # P(first wins) under each
    belief: MixtureBelief              # the population learner's belief after the click (the new state's arrays)
    gate_llr: float                    # the session's running log-likelihood ratio, population - alone


class SessionInfo(NamedTuple):
    """What `end_session` reports: the user's final belief, whether A was refitted, the prior's size now."""
    belief: MixturePrior         # the belief at session end over the components of the prior the user arrived under
    recalibrated: bool           # A was refitted after this session
    n_components: int            # active components of the population prior now (the broad one included)


def recalibrate(Phi: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Phi [..., K, K+1] with the rater column g replaced by A g."""
    out = np.array(Phi, dtype=float)
    out[..., -1] = np.einsum("pq,...q->...p", A, Phi[..., -1])
    return out


def _float(Phi):
    return Phi if Phi.dtype == np.float64 else Phi.astype(float)


def _recalibrated(Phi, A):
    return kn.recalibrated(_float(Phi), A)


def _appended(done: Completed, session: Rounds, z: np.ndarray) -> Completed:
    """The completed sessions with one more: row n of the shared buffers (copied first if another state
    has written there)."""
    n = done.n
    (*rounds, Z), mark = append_only.writable_at(n, done.mark, (*done.rounds, done.Z))
    for a, x in zip(rounds, session):
        a[n] = x
    Z[n] = z
    return Completed(Rounds(*rounds), Z, n + 1, mark)


def record_round(session: Rounds, t: int, i: int, j: int, g: np.ndarray, y: float) -> Rounds:
    """The session's rounds with round t set (a copy)."""
    first, second, rater, ys = session.first.copy(), session.second.copy(), session.rater.copy(), session.y.copy()
    first[t], second[t], rater[t], ys[t] = i, j, g, y
    return Rounds(first, second, rater, ys)


def _empty_rounds(shape: tuple, K: int) -> Rounds:
    return Rounds(np.zeros(shape, np.int64), np.zeros(shape, np.int64), np.zeros(shape + (K,)), np.zeros(shape))


def init(context: Context, settings: Settings = Settings()) -> CODuelState:
    """The state before the first user: the isotropic prior alone, A = I, an empty bank."""
    K, d, S, N = context.K, context.d, context.S, context.N
    B = settings.bank_size if settings.bank_size is not None else context.b
    pop = init_population(d, settings.prior_var, settings.max_learned)
    done = Completed(_empty_rounds((N, S), K), np.zeros((N, S, d)), 0, append_only.new_mark())
    belief, active, _, _ = belief_from(pop, 0.0, settings.change_hazard)
    return CODuelState(pop, np.eye(K), np.r_[1.0, np.zeros(K * K)], gt.GateState(), False, belief,
                       broad_belief(pop), np.zeros((B, K, d)), np.zeros((B, K, d)), 0, 0, _empty_rounds((S,), K), done,
                       np.zeros((S, d)), np.zeros(settings.broad_memory), active, 0.0,
                       np.zeros(N if settings.change_hazard else 0), start=belief,
                       **session_sites(settings, len(active), S, d))


def start_session(state: CODuelState, settings: Settings = Settings()) -> CODuelState:
    """A new user: beliefs restart from the population prior (and the broad prior, for the no-transfer learner); the gate decides whether the population learner selects this session."""
    s = settings
    if len(state.recent_broad) != s.broad_memory:
        raise InputError(f"CODuel: a state made with broad_memory={len(state.recent_broad)} given settings with "
                         f"broad_memory={s.broad_memory}")
    transfer = (not s.gate and state.pop.n > 0) or gt.transfer_on(state.gate, s.gate_z, s.gate_min)
    belief, active, rho, floor = belief_from(state.pop, broad_floor(state.recent_broad, s.session_broad_weight),
                                             s.change_hazard, s.change_weight_max, state.arrival_gain)
    return state._replace(belief=belief, active=active, recent_weight=rho, floor=floor, alone=broad_belief(state.pop),
                          transfer=transfer, t=0, start=belief,
                          **session_sites(s, len(active), len(state.session.y), belief.means.shape[1]),
                          session=Rounds(*(np.zeros_like(x) for x in state.session)))


class ArrivalInfo(NamedTuple):
    """What a user arrives under (the info of `start_session`)."""
    prior: MixturePrior      # the session's starting belief's active components (``arrival``), the broad one last
    A: np.ndarray            # [K, K] the rater recalibration the user's clicks are read with
    transfer: bool           # whether the population learner selects this session's pairs
    gate_mean: float         # the gate's mean log-likelihood ratio over completed sessions
    gate_se: float           # its standard error (nan below two sessions)


def arrival(state: CODuelState, settings: Settings = Settings()) -> tuple[CODuelState, ArrivalInfo]:
    """The state after `start_session`, with what the user arrives under: the prior the session's belief starts
    from (the population prior with the broad weight raised to the session's floor, if any, and with
    change_hazard the recent type's component just before the broad one)."""
    b, a = state.belief, state.active
    if settings.change_hazard:
        prior = MixturePrior(np.exp(b.log_w[a]), b.means[a], b.covs[a])
    else:
        w = floored(state.pop.weights, state.floor)
        prior = MixturePrior(w[a], b.means[a], b.covs[a])
    return state, ArrivalInfo(prior, state.A, state.transfer, state.gate.mean, gt.standard_error(state.gate))


def select(state: CODuelState, Phi: np.ndarray, settings: Settings = Settings(),
           rng: np.random.Generator | None = None) -> tuple[int, int]:
    """The pair to show for the question Phi [K, d]; the lookahead's bank is the state's with Phi added. With
    `component_thompson` (and transfer on), the greedy pair under the mean of one component of the user's
    belief, drawn with the belief's weights from `rng`: the user's type is explored, theta within a component
    never sampled. With `component_information` (and the lookahead) or `challenger` (and transfer on), the
    rules of ``online.policies.coduel_pairs``; the challenger applies to the pair of any rule."""
    s = settings
    b = state.belief if state.transfer else state.alone
    active = state.active if state.transfer else _ONE
    if s.component_thompson and state.transfer:
        if rng is None:
            raise InputError("CODuel with component_thompson draws a component: select needs its rng")
        slots = np.flatnonzero(active)
        w = np.exp(b.log_w[slots] - b.log_w[slots].max())
        k = slots[min(int(np.searchsorted(np.cumsum(w), rng.random() * w.sum(), side="right")), len(slots) - 1)]
        one = np.zeros(len(active), dtype=bool)
        one[k] = True
        pair = kn.mixture_greedy(np.zeros(len(active)), b.means, one, kn.recalibrated(_float(Phi), state.A))
    elif s.component_information > 0 and state.transfer and s.lookahead:
        P = kn.recalibrated(_float(Phi), state.A)
        pair = informative_pair(b.log_w, b.means, b.covs, active, P, kn.lookahead_bank(state.bank_P, state.n_bank, P),
                                s.lookahead_weight * (len(state.session.y) - state.t - 1), s.component_information,
                                state.pop.n)
    else:
        pair = kn.coduel_pair(b.log_w, b.means, b.covs, active, _float(Phi), state.A, state.bank_P, state.n_bank,
                              s.lookahead_weight * (len(state.session.y) - state.t - 1), state.transfer and s.lookahead)
    if s.challenger > 0 and state.transfer:
        return challenged_pair(pair, state.alone.means[0], state.alone.covs[0], kn.recalibrated(_float(Phi), state.A),
                               s.challenger)
    return int(pair[0]), int(pair[1])


def update(state: CODuelState, Phi: np.ndarray, pair: tuple[int, int], y: int,
           settings: Settings = Settings()) -> tuple[CODuelState, UpdateInfo]:
    """Fold the click y (1 if pair[0] won) on the question Phi into both beliefs; Phi joins the bank."""
    i, j = pair
    Phi = _float(Phi)
    b, a = state.belief, state.alone
    if settings.belief == "laplace":
        P, z, w1, m1, S1, lp_pop, w2, m2, S2, lp_alone = kn.coduel_click(
            b.log_w, b.means, b.covs, state.active, a.log_w, a.means, a.covs, Phi, state.A, i, j, int(y))
    else:
        state, P, z, w1, m1, S1, lp_pop, w2, m2, S2, lp_alone = belief_click(state, Phi, i, j, y, settings)
    belief, alone = MixtureBelief(w1, m1, S1), MixtureBelief(w2, m2, S2)
    gate = gt.observe(state.gate, lp_pop, lp_alone)
    session = record_round(state.session, state.t, i, j, Phi[:, -1], float(y))
    if settings.belief in SESSION_BELIEFS:      # the beliefs that reread the session's clicks keep them
        session_z = state.session_z.copy()
        session_z[state.t] = z
        state = state._replace(session_z=session_z)
    if settings.lookahead:              # greedy play needs no bank
        state = state._replace(belief=belief, alone=alone, gate=gate, t=state.t + 1, session=session,
                               bank=np.concatenate([state.bank[1:], Phi[None]]),
                               bank_P=np.concatenate([state.bank_P[1:], P[None]]),
                               n_bank=min(state.n_bank + 1, len(state.bank)))
    else:
        state = state._replace(belief=belief, alone=alone, gate=gate, t=state.t + 1, session=session)
    lp_pop, lp_alone = float(lp_pop), float(lp_alone)
    if y:
        first_wins = Predictions(math.exp(lp_pop), math.exp(lp_alone))
    else:
        first_wins = Predictions(-math.expm1(lp_pop), -math.expm1(lp_alone))
    return state, UpdateInfo(lp_pop, lp_alone, first_wins, belief, gate.current)


def _refit_A(state: CODuelState, done: Completed, s: Settings) -> np.ndarray:
    """(a, vec A') by ridge logistic regression, theta at each session's broad-prior Laplace mode
    under the current A, Newton warm-started at the previous fit."""
    pop, n = state.pop, done.n
    Z, r = done.Z[:n], Rounds(*(x[:n] for x in done.rounds))
    S, d = Z.shape[1:]
    init = np.zeros((n, d))
    init[:len(pop.broad_modes)] = pop.broad_modes        # earlier sessions' broad fits warm-start Newton
    theta, _, _ = fit_units(Z, r.y, np.arange(n), np.full(n, len(pop.weights) - 1), pop.means, pop.covs,
                            init)
    K = state.A.shape[0]
    w0 = state.recal_w
    th = np.repeat(theta, S, 0)
    first, second, rater, y = r.first.ravel(), r.second.ravel(), r.rater.reshape(-1, K), r.y.ravel()
    w, it = kn.recalibration_newton(first, second, rater, th, y, float(s.ridge), RIDGE_A, w0, tol=RECAL_TOL)
    if it < 0:
        raise RuntimeError("recalibration fit: Newton did not converge")
    return w


def end_session(state: CODuelState, settings: Settings = Settings()) -> tuple[CODuelState, SessionInfo]:
    """The session joins the completed ones; A and the population prior are refitted."""
    s, S = settings, len(state.session.y)
    if state.t != S:
        raise InputError(f"CODuel: a session of {state.t} clicks, expected {S}")
    n = state.done.n
    if n == len(state.done.Z):
        raise InputError(f"CODuel: more sessions than the {n} arrivals the run was started for (context N)")
    b, active = state.belief, state.active
    final = MixturePrior(np.exp(b.log_w[active]), b.means[active], b.covs[active])
    new = state.session
    z_new = recalibrated_design(state.A, new.first[None], new.second[None], new.rater[None])[0]
    done = _appended(state.done, new, z_new)
    n += 1
    A, recal_w, bank_P = state.A, state.recal_w, state.bank_P
    recalibrated = s.recalibration and n >= s.recal_start and (n - s.recal_start) % s.recal_every == 0
    if recalibrated:
        recal_w = _refit_A(state, done, s)
        K = len(A)
        A = recal_w[0] * np.eye(K) + recal_w[1:].reshape(K, K)
        r = done.rounds
        Z = done.Z.copy()
        Z[:n] = recalibrated_design(A, r.first[:n], r.second[:n], r.rater[:n])
        done = done._replace(Z=Z)
        bank_P = recalibrate(state.bank, A)
        pop = rebase(state.pop, done.Z[:n], done.rounds.y[:n]) if s.population else state.pop
    else:
        pop = state.pop
    if s.population:
        pop = refit_population(pop, done.Z[:n], done.rounds.y[:n], alpha=s.alpha, em_iters=s.em_iters,
                               refresh=s.refresh, exact=s.exact_estep)
    else:
        pop = pop._replace(n=n)
    recent = state.recent_broad
    if len(recent) and state.pop.n_learned > 0:     # with no learned type the broad weight is 1 by construction
        recent = np.r_[recent[1:], unfloored_broad(state.pop, b.log_w, state.floor,
                                                   state.recent_weight if s.change_hazard else None)]
    gains = state.arrival_gain
    if s.change_hazard and s.population:
        gains = gains.copy()
        gains[n - 1] = arrival_log_gain(state.pop, pop)
    state = state._replace(pop=pop, A=A, recal_w=recal_w, bank_P=bank_P, gate=gt.end_session(state.gate), done=done,
                           recent_broad=recent, arrival_gain=gains)
    return state, SessionInfo(final, bool(recalibrated), int(pop.active.sum()))


def check_settings(settings: Settings) -> Settings:
    """The settings, or ValueError naming the first that is out of range."""
    s = settings
    if int(s.em_iters) < 1 or int(s.refresh) < 0:
        raise InputError(f"em_iters >= 1 and refresh >= 0 are required, got {s.em_iters}, {s.refresh}")
    if not (math.isfinite(s.lookahead_weight) and s.lookahead_weight >= 0):
        raise InputError(f"lookahead_weight must be a finite number >= 0, got {s.lookahead_weight!r}")
    if not (math.isfinite(s.component_information) and 0 <= s.component_information <= 100):
        raise InputError(f"component_information must be a number in [0, 100], got {s.component_information!r}")
    if isinstance(s.session_broad_weight, bool) or not isinstance(s.session_broad_weight, numbers.Real) \
            or not 0 <= s.session_broad_weight < 1:
        raise InputError(f"session_broad_weight must be a number in [0, 1), got {s.session_broad_weight!r}")
    if isinstance(s.broad_memory, bool) or not isinstance(s.broad_memory, numbers.Integral) \
            or not 0 <= s.broad_memory <= 1000:
        raise InputError(f"broad_memory must be an integer in [0, 1000], got {s.broad_memory!r}")
    if isinstance(s.challenger, bool) or not isinstance(s.challenger, numbers.Real) or not 0 <= s.challenger < 1:
        raise InputError(f"challenger must be a number in [0, 1), got {s.challenger!r}")
    if 0 < s.challenger < 0.5:    # the favourite's probability of beating the first is never below 0.5
        raise InputError(f"challenger must be 0 (off) or in [0.5, 1): below 0.5 it acts as 0.5, got {s.challenger!r}")
    for name, hi in (("change_hazard", 0.5), ("change_weight_max", 1.0)):
        v = getattr(s, name)
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v <= hi:
            raise InputError(f"{name} must be a number in [0, {hi:g}], got {v!r}")
    if s.change_hazard and not s.population:
        raise InputError("change_hazard reads the population's per-session fits: it needs population=True")
    if s.belief not in BELIEFS:
        raise InputError(f"belief must be one of {', '.join(BELIEFS)}, got {s.belief!r}")
    if s.bank_size is not None and int(s.bank_size) < 1:
        raise InputError(f"bank_size must be at least 1, got {s.bank_size}")
    return s


RECORDS = frozenset({"arrival_priors", "arrival_recalibrations", "session_beliefs", "click_predictions"})


def coduel_learner(settings: Settings = Settings()) -> Learner:
    """CODuel as a Learner with every constant of `Settings` closed over (``coduel`` is the registered
    form, with the settings a spec may change)."""
    s = check_settings(settings)
    return Learner(lambda context: init(context, s),
                   lambda state, rng: arrival(start_session(state, s), s),
                   lambda state, Phi, rng: (select(state, Phi, s, rng), None),
                   lambda state, Phi, pair, y: update(state, Phi, pair, y, s),
                   lambda state: end_session(state, s),
                   records=RECORDS)


@ranged
def coduel(population: bool = True, recalibration: bool = True, lookahead: bool = True, gate: bool = True,
           em_iters: Annotated[int, Range(1, 100)] = pp.EM_ITERS,
           refresh: Annotated[int, Range(0, 10_000)] = pp.REFRESH, exact_estep: bool = False,
           component_thompson: bool = False, belief: str = "laplace",
           component_information: Annotated[float, Range(0, 100)] = 0.0,
           session_broad_weight: Annotated[float, Range(0, 1, hi_open=True)] = 0.0,
           broad_memory: Annotated[int, Range(0, 1000)] = 0,
           challenger: Annotated[float, Range(0, 1, hi_open=True)] = 0.0,
           change_hazard: Annotated[float, Range(0, 0.5)] = 0.0,
           change_weight_max: Annotated[float, Range(0, 1)] = 0.5,
           alpha: Annotated[float, Range(MIN_POSITIVE, 1e4), Search(2, 200, log=True)] = ALPHA,
           gate_z: Annotated[float, Range(-10, 10), Search(0, 2)] = gt.GATE_Z,
           prior_var: Annotated[float, Range(MIN_POSITIVE, 1e4), Search(1, 16, log=True)] = DEFAULT_PRIOR_VAR) -> Learner:
    """CODuel with the reference settings; ablations by setting (``coduel[population=false]``) or by name
    (``coduel-no-population``).

    Parameters
    ----------
    population, recalibration, lookahead, gate : bool
        The four parts; False is the ablation without it.
    em_iters, refresh, exact_estep
        The population refit's incremental EM (``inference.population.refit_population``).
    alpha, gate_z, prior_var : float
        The broad component's concentration (weight at least alpha / (alpha + n) after n sessions; 20), the
        gate's threshold in standard errors (0.5), the broad component's and the no-transfer learner's
        variance (4): the paper's settings, which ``tutorduel tune coduel`` searches and the leaderboard keeps.
    belief : {"laplace", "adf", "laplace-is", "ep", "ep-corrected"}
        The per-user online belief, in both the population and the no-transfer learner
        (``inference.online_beliefs``): the paper's one-click Laplace step, assumed-density filtering,
        or the importance-corrected Laplace step.

    Other Parameters
    ----------------
    component_thompson, component_information, session_broad_weight, broad_memory, challenger, change_hazard, change_weight_max
        The frontier variants, each 0 (or False) in the paper's CODuel: `component_thompson` (pairs by Thompson
        sampling over the belief's components, ``coduel-component-ts``); `component_information` (a weight, logits
        per nat, decaying with the sessions, on what the click would say about the user's component,
        ``coduel-component-info``); `session_broad_weight` in [0, 1) (each session's broad weight at least this)
        and `broad_memory` in [0, 1000] (... and at least its mean over the last this many sessions, at most
        BROAD_FLOOR_MAX; ``coduel-recent-broad`` is 5); `challenger`, 0 or in [0.5, 1) (while transfer is on, the
        no-transfer learner's favourite replaces the second persona when it beats the first with at least this
        probability, ``online.policies.coduel_pairs.challenged_pair``; ``coduel-challenger`` is 0.7);
        `change_hazard` in [0, 0.5] (the prior chance of a change a session, ``inference.change_point``: the
        session's belief also holds the recent type the last sessions may share, with at most `change_weight_max`
        of the weight, and gives the broad component at least the chance of a new kind,
        ``new_kind_probability``; ``coduel-change-point`` is 0.05 and 0.25).

    Returns
    -------
    online.learner.Learner
        Its state is a `CODuelState`; it records the four click-log fields (``online.records``).
    """
    return coduel_learner(Settings(population=bool(population), recalibration=bool(recalibration),
                                   lookahead=bool(lookahead), gate=bool(gate), em_iters=int(em_iters),
                                   refresh=int(refresh), exact_estep=bool(exact_estep),
                                   component_thompson=bool(component_thompson), belief=str(belief),
                                   component_information=float(component_information),
                                   session_broad_weight=float(session_broad_weight), broad_memory=int(broad_memory),
                                   challenger=float(challenger), change_hazard=float(change_hazard),
                                   change_weight_max=float(change_weight_max), alpha=float(alpha),
                                   gate_z=float(gate_z), prior_var=float(prior_var)))


__all__ = ["coduel", "coduel_learner", "CODuelState", "Settings", "Rounds", "Completed", "ArrivalInfo", "Predictions",
           "UpdateInfo", "SessionInfo", "init", "start_session", "select", "update", "end_session", "recalibrate"]
