"""The learned population prior: a Gaussian mixture over users' theta, refitted after every
session by incremental EM with births and removals.

Components live in `max_learned + 1` fixed slots (fixed shapes, so the compiled kernels
and the belief never reallocate); the last slot is the broad isotropic N(0, tau2 I),
fixed, whose weight never falls below alpha / (alpha + n) after n sessions (the mass a
Dirichlet process keeps for a new kind of user). After each session:

1. the new session's Laplace fit under every active component (a "unit" = one user
   under one component; Laplace mode, covariance and evidence p(y_u | k));
2. birth: if the broad component explains the new session better than every learned one
   (weight x Laplace evidence) and a slot is free, a component is born at that session's
   broad-prior Laplace posterior (covariance + ridge I);
3. `em_iters` passes of incremental EM (Neal & Hinton 1998): the E-step refits the units of
   the new session and of the next `refresh` earlier sessions in cyclic order and stores
   their responsibilities and Laplace moments; the M-step moment-matches every learned
   component to the stored moments of all sessions (running totals, so a pass costs
   O(refresh), not O(n));
4. removal: learned components with under `min_support` users' worth of responsibility are
   dropped, and each session's stored responsibilities renormalised over what is left.

Full-batch EM over all sessions after every session costs O(n) Laplace fits per session
and dominates a run (NOTES-inference.md); the incremental E-step visits every session every
n / refresh sessions instead. Inside an E-step, every unit is first fitted in closed form
under a Gaussian surrogate of the user's likelihood (read off the user's broad-prior
Laplace fit: precision H_u - I / tau2, exact for the broad component); units whose
surrogate responsibility reaches `exact_min` are then refitted by Newton (exact Laplace,
warm-started at the surrogate mode) when `exact` is set. Without it the E-step is the
closed-form one of EM for a Gaussian mixture observed through known Gaussian noise
("extreme deconvolution", Bovy, Hogg & Roweis 2011). The surrogate-only E-step scored
no worse on dev than exact refits above 1e-3 and is faster, so it is the default (the
measurement is in docs/policies.md). Choices the reference leaves open
(surrogate E-step; refresh 8; one pass per session, as a second scored no better on dev, measured
in docs/policies.md; ridge 1e-2; min_support 0.5; newborn covariance = the session's
broad Laplace covariance + ridge) are settings, chosen on the dev roster. The fits run in the
compiled kernels (``inference.kernels``); their NumPy oracles are ``inference.laplace.laplace_fit_batch``
and the closed forms in tests/inference/test_population.py.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference.constants import COV_RIDGE, EM_ITERS, EXACT_MIN, MIN_SUPPORT, REFRESH, RESP_FLOOR
from inference import kernels
from tdmodels.population_hyper import ALPHA, N_LEARNED
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior
from tdmodels.errors import InputError, check_flag



class Population(NamedTuple):
    """The learned population prior and the per-session statistics its incremental EM keeps."""
    weights: np.ndarray      # [C] mixture weights, 0 on empty slots; slot C - 1 is the broad component
    means: np.ndarray        # [C, d]
    covs: np.ndarray         # [C, d, d]
    active: np.ndarray       # [C] bool
    n: int                   # completed sessions
    cursor: int              # next earlier session the incremental E-step refreshes
    broad_modes: np.ndarray  # [n, d] each session's Laplace mode under the broad prior
    resp: np.ndarray         # [n, C] stored responsibilities (0 on inactive slots)
    unit_modes: np.ndarray   # [n, C, d] stored Laplace modes per (session, component)
    unit_covs: np.ndarray    # [n, C, d, d]
    lik_prec: np.ndarray     # [n, d, d] Gaussian surrogate of each session's likelihood: precision Lam_u,
    lik_lin: np.ndarray      # [n, d]    linear term h_u,
    lik_const: np.ndarray    # [n]       and constant c_u (log L ~= c_u - theta' Lam_u theta / 2 + h_u' theta)
    totals: tuple            # (T0 [C], T1 [C, d], T2 [C, d, d]) = sums of r, r m, r (S + m m^T)

    @property
    def prior(self) -> MixturePrior:
        """The active components as a MixturePrior, learned first, broad last."""
        a = self.active
        return MixturePrior(self.weights[a], self.means[a], self.covs[a])

    @property
    def n_learned(self) -> int:
        return int(self.active[:-1].sum())


def init_population(d: int, broad_var: float = DEFAULT_PRIOR_VAR, max_learned: int = N_LEARNED) -> Population:
    """The population before any session: the broad component N(0, broad_var I) alone.

    Parameters
    ----------
    d : int
        Features per persona (the dimension of theta).
    broad_var : float
        Variance of the broad isotropic component, logits^2.
    max_learned : int
        Slots for learned components (the broad one is slot max_learned).

    Returns
    -------
    Population
        C = max_learned + 1 slots, the last active with weight 1; no sessions.
    """
    C = max_learned + 1
    weights, active = np.zeros(C), np.zeros(C, dtype=bool)
    weights[-1], active[-1] = 1.0, True
    covs = np.tile(np.eye(d), (C, 1, 1))
    covs[-1] *= broad_var
    totals = (np.zeros(C), np.zeros((C, d)), np.zeros((C, d, d)))
    return Population(weights, np.zeros((C, d)), covs, active, 0, 0, np.zeros((0, d)), np.zeros((0, C)),
                      np.zeros((0, C, d)), np.zeros((0, C, d, d)), np.zeros((0, d, d)), np.zeros((0, d)), np.zeros(0),
                      totals)


def _normalised(joint: np.ndarray) -> np.ndarray:
    """exp(joint) normalised along the last axis (-inf entries give 0)."""
    top = joint.max(-1, keepdims=True)
    e = np.exp(joint - top)
    return e / e.sum(-1, keepdims=True)


def _factors(covs):
    """(inverses, log determinants) of symmetric positive definite matrices [C, d, d]."""
    return kernels.spd_factors(np.ascontiguousarray(covs, dtype=float))


def fit_units(Z, y, users, comps, means, covs, init, factors=None):
    """Laplace fits of user users[b] under N(means[comps[b]], covs[comps[b]]).

    Z [n, S, d], y [n, S], means [C, d], covs [C, d, d], init [B, d]; `factors` = _factors(covs)
    when already at hand. Returns (modes [B, d], covs [B, d, d], log evidence [B]).
    """
    users, comps = np.asarray(users, dtype=np.int64), np.asarray(comps, dtype=np.int64)
    precs, logdets = factors if factors is not None else _factors(covs)
    modes, post, ev, ok = kernels.laplace_units(Z, y, users, comps, means, precs, logdets, np.array(init, dtype=float))
    if not ok.all():
        raise RuntimeError(f"Laplace: Newton did not converge for session(s) {users[~ok][:10].tolist()}")
    return modes, post, ev


def surrogate_units(users, comps, lik_prec, lik_lin, lik_const, means, covs, factors=None):
    """Closed-form fits of user users[b] under N(means[comps[b]], covs[comps[b]]) with the
    Gaussian likelihood surrogate of that user: (modes [B, d], covs [B, d, d], log evidence [B])."""
    users, comps = np.asarray(users, dtype=np.int64), np.asarray(comps, dtype=np.int64)
    precs, logdets = factors if factors is not None else _factors(covs)
    return kernels.surrogate_units(users, comps, lik_prec, lik_lin, lik_const, means, precs, logdets)


def fit_broad(pop: Population, Z, y, users) -> tuple[Population, np.ndarray]:
    """Refit `users`' broad-prior Laplace fits (Newton warm-started at the stored mode) and their
    likelihood surrogates; writes into pop's per-session buffers (callers own them). Returns the
    population and the fits' covariances [len(users), d, d]."""
    users = np.asarray(users, dtype=np.int64)
    C = len(pop.weights)
    mode, cov, ev = fit_units(Z, y, users, np.full(len(users), C - 1), pop.means, pop.covs,
                              pop.broad_modes[users])
    H, logdet_cov = _factors(cov)
    pop.broad_modes[users] = mode
    pop.lik_prec[users], pop.lik_lin[users], pop.lik_const[users] = likelihood_surrogate(
        mode, H, -logdet_cov, ev, pop.covs[-1, 0, 0])
    return pop, cov


def likelihood_surrogate(mode, H, logdet_H, log_ev, broad_var):
    """Each user's Gaussian surrogate of the click likelihood, read off the broad-prior Laplace fit.

    Parameters
    ----------
    mode : array [B, d]
        Laplace modes under the broad prior N(0, broad_var I).
    H : array [B, d, d]
        The fits' precisions (inverse Laplace covariances); logdet_H [B] their log determinants.
    log_ev : array [B]
        The fits' Laplace log evidences.
    broad_var : float

    Returns
    -------
    (precision [B, d, d], linear [B, d], constant [B])
        log L(theta) ~= constant - theta' precision theta / 2 + linear' theta; precision = H - I /
        broad_var (exact for the broad component), the constant making the surrogate's evidence under
        the broad prior equal the Laplace evidence.
    """
    d = mode.shape[1]
    lin = np.einsum("bij,bj->bi", H, mode)
    const = log_ev + 0.5 * d * np.log(broad_var) + 0.5 * logdet_H - 0.5 * np.einsum("bi,bi->b", mode, lin)
    return H - np.eye(d) / broad_var, lin, const


def rebase(pop: Population, Z, y) -> Population:
    """The population with every session's broad fit and likelihood surrogate redone in a new
    design Z [>= n, S, d] (after the recalibration changed); the input is not modified."""
    if pop.n == 0:
        return pop
    pop = pop._replace(broad_modes=pop.broad_modes.copy(), lik_prec=pop.lik_prec.copy(),
                       lik_lin=pop.lik_lin.copy(), lik_const=pop.lik_const.copy())
    return fit_broad(pop, Z, y, np.arange(pop.n))[0]


def _floor_weights(learned: np.ndarray, broad: float, n: int, alpha: float) -> np.ndarray:
    """Learned weights rescaled to 1 - w_broad, w_broad = max(broad, alpha / (alpha + n))."""
    w_broad = max(broad, alpha / (alpha + n))
    total = learned.sum()
    if total <= 0:
        return np.concatenate([np.zeros_like(learned), [1.0]])
    return np.concatenate([(1.0 - w_broad) * learned / total, [w_broad]])


def _totals(resp, modes, covs):
    """Sums over sessions of r, r m, r (S + m m^T): resp [u, C], modes [u, C, d], covs [u, C, d, d]."""
    return (resp.sum(0), np.einsum("uc,ucd->cd", resp, modes),
            np.einsum("uc,ucij->cij", resp, covs + modes[..., :, None] * modes[..., None, :]))


def _e_step(pop: Population, Z, y, users, exact: bool = False, exact_min: float = EXACT_MIN) -> tuple[Population, np.ndarray]:
    """Refit every active unit of `users`, store their moments and responsibilities; also return
    log w_k + log p(y_u | k) [len(users), C] (-inf on inactive slots). Without `exact` one compiled
    kernel does it all (``kernels.surrogate_estep``); with it, units whose responsibility reaches
    `exact_min` are refitted by Laplace on their clicks.

    Writes into pop's per-session buffers: callers pass a population whose buffers they own
    (``refit_population`` copies them once on entry).
    """
    C = len(pop.weights)
    factors = _factors(pop.covs)
    if not exact:
        with np.errstate(divide="ignore"):
            log_w = np.log(pop.weights)
        joint = kernels.surrogate_estep(np.asarray(users, dtype=np.int64), pop.active, log_w, pop.means, *factors,
                                        pop.lik_prec, pop.lik_lin, pop.lik_const, pop.resp, pop.unit_modes,
                                        pop.unit_covs, *pop.totals)
        return pop, joint
    comps = np.flatnonzero(pop.active)
    nu, nc = len(users), len(comps)
    uu, cc = np.repeat(users, nc), np.tile(comps, nu)
    modes, covs, ev = surrogate_units(uu, cc, pop.lik_prec, pop.lik_lin, pop.lik_const, pop.means, pop.covs, factors)
    log_w = np.log(pop.weights[comps])
    joint = log_w[None] + ev.reshape(nu, nc)
    r = _normalised(joint).ravel()
    exact = np.flatnonzero((r >= exact_min) & (cc != C - 1)) if exact else []   # the broad unit's surrogate is exact
    if len(exact):
        modes[exact], covs[exact], ev[exact] = fit_units(Z, y, uu[exact], cc[exact], pop.means, pop.covs,
                                                         modes[exact], factors)
        joint = log_w[None] + ev.reshape(nu, nc)
    r = _normalised(joint)
    r = np.where(r >= RESP_FLOOR, r, 0.0)
    r /= r.sum(1, keepdims=True)
    resp = np.zeros((nu, C))
    resp[:, comps] = r
    old = _totals(pop.resp[users], pop.unit_modes[users], pop.unit_covs[users])
    pop.unit_modes[uu, cc] = modes
    kept = r.ravel() > 0                          # moments of units without responsibility are not stored
    pop.unit_covs[uu[kept], cc[kept]] = covs[kept]
    pop.resp[users] = resp
    new = _totals(resp, pop.unit_modes[users], pop.unit_covs[users])
    totals = tuple(t + a - b for t, a, b in zip(pop.totals, new, old))
    full = np.full((nu, C), -np.inf)
    full[:, comps] = joint
    return pop._replace(totals=totals), full


def _m_step(pop: Population, alpha: float, min_support: float, ridge: float) -> Population:
    """Moment-match the learned components to the stored moments; drop weakly supported ones."""
    T0, T1, T2 = pop.totals
    d = pop.means.shape[1]
    learned = pop.active.copy()
    learned[-1] = False
    dead = learned & (T0 < min_support)
    live = learned & ~dead
    active, means, covs = pop.active.copy(), pop.means.copy(), pop.covs.copy()
    resp, totals = pop.resp, pop.totals
    if dead.any():
        active[dead] = False
        resp[:, dead] = 0.0
        resp /= resp.sum(1, keepdims=True)
        totals = _totals(resp, pop.unit_modes, pop.unit_covs)
        T0, T1, T2 = totals
    mu = T1[live] / T0[live, None]
    cov = T2[live] / T0[live, None, None] - mu[:, :, None] * mu[:, None, :] + ridge * np.eye(d)
    means[live], covs[live] = mu, 0.5 * (cov + cov.transpose(0, 2, 1))
    w = np.zeros(len(active))
    keep = live.copy()
    keep[-1] = True
    w[keep] = _floor_weights(T0[live] / pop.n, T0[-1] / pop.n, pop.n, alpha)
    return pop._replace(weights=w, means=means, covs=covs, active=active, resp=resp, totals=totals)


def refit_population(pop: Population, Z: np.ndarray, y: np.ndarray, alpha: float = ALPHA,
                     em_iters: int = EM_ITERS, refresh: int = REFRESH, min_support: float = MIN_SUPPORT,
                     ridge: float = COV_RIDGE, exact: bool = False, exact_min: float = EXACT_MIN) -> Population:
    """The prior after the latest session. Z [n, S, d], y [n, S]: all completed sessions, newest last,
    in the current recalibrated design (earlier sessions' stored fits may predate it; the
    cyclic refresh brings them up to date). The input population is not modified."""
    exact = check_flag("exact", exact)
    n, S, d = Z.shape
    if n != pop.n + 1:
        raise InputError(f"refit_population: {n} sessions given, the population has seen {pop.n}")
    C = len(pop.weights)
    v = n - 1
    pop = pop._replace(
        n=n, broad_modes=np.concatenate([pop.broad_modes, np.zeros((1, d))]),
        resp=np.concatenate([pop.resp, np.zeros((1, C))]),
        unit_modes=np.concatenate([pop.unit_modes, np.zeros((1, C, d))]),
        unit_covs=np.concatenate([pop.unit_covs, np.zeros((1, C, d, d))]),
        lik_prec=np.concatenate([pop.lik_prec, np.zeros((1, d, d))]), lik_lin=np.concatenate([pop.lik_lin, np.zeros((1, d))]),
        lik_const=np.concatenate([pop.lik_const, np.zeros(1)]), totals=tuple(t.copy() for t in pop.totals))
    pop, bc = fit_broad(pop, Z, y, [v])
    bm = pop.broad_modes[v:]
    pop, joint = _e_step(pop, Z, y, np.array([v]), exact, exact_min)
    # birth from the newest session
    free = np.flatnonzero(~pop.active[:-1])
    learned_w = pop.weights[:-1]
    if len(free):
        if pop.n_learned == 0 or joint[0, -1] > joint[0, :-1].max():
            slot = free[0]
            means, covs, active = pop.means.copy(), pop.covs.copy(), pop.active.copy()
            means[slot], covs[slot], active[slot] = bm[0], bc[0] + ridge * np.eye(d), True
            counts = learned_w * max(n - 1, 0)
            counts[slot] = 1.0
            pop = pop._replace(means=means, covs=covs, active=active,
                               weights=_floor_weights(counts, 0.0, n, alpha))
        else:
            pop = pop._replace(weights=_floor_weights(learned_w, pop.weights[-1], n, alpha))
    else:
        pop = pop._replace(weights=_floor_weights(learned_w, pop.weights[-1], n, alpha))
    cursor = pop.cursor
    for _ in range(em_iters):
        k = min(refresh, v)
        older = (cursor + np.arange(k)) % max(v, 1)
        cursor = int((cursor + k) % max(v, 1))
        pop, _ = _e_step(pop, Z, y, np.r_[v, older].astype(np.int64), exact, exact_min)
        pop = _m_step(pop, alpha, min_support, ridge)
    return pop._replace(cursor=cursor)
