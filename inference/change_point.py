"""A change-point view of the population: have the last users come from a new type the population lacks?

After each completed session u, the population keeps a Gaussian surrogate of that user's click likelihood,
log L_u(theta) ~= c_u - theta' Lam_u theta / 2 + h_u' theta (``inference.population.likelihood_surrogate``).
Over the last sessions this module runs Bayesian online change-point detection (Adams & MacKay 2007) with two
kinds of run: in a population run each user comes from the population prior (the learned mixture and its
broad component) on their own; in a type run the run's users share a new type, theta_u ~ N(m, W I) with
m ~ N(0, broad_var I), for W in a grid of type widths `WIDTHS`. At each session a run continues with
probability 1 - hazard or a new one starts, of the population (half) or of a new type of each width (the
other half, evenly). A session's predictive is its evidence under the population in a population run, and
the increase of its run's evidence in a type run; every evidence is closed-form under the surrogates (no
Newton, no draws), and a session with no likelihood in some direction (Lam_u singular, as along the
persona-sum direction every click leaves unseen) is handled in information form, without inverting Lam_u.
Because earlier runs are summed over, not compared against the population, a new type shows after its first
users even when the run before it was of a type the population lacked too. The oldest session given is taken to
be in a population run: a change is a departure from the population within the sessions looked at, and a type
all of them share from the first is the population's to learn (the refit sees the same sessions). Without that
rule, where the users' clicks say little, one tight type at the population's mean taste could explain all the
sessions better, prequentially, than a population still being learned, and take the recent type's weight on a
population of two opposed camps, whose mean taste serves no one.

The next user continues the newest session's run with probability 1 - hazard; in a type run of r sessions
its predictive is N(J^-1 k, J^-1 + W), J, k the posterior precision and linear term of m. A type is only a
type once at least `MIN_SESSIONS` users agree on it: one user who fits no learned type is as often on their
own (the broad component's business) as the first of a new kind. `recent_type` returns the probability that
the next user continues a type run of at least that many sessions, and those runs' predictives
moment-matched into one Gaussian: the component a session's belief can add to the population prior
(``online.policies.coduel``'s `change_hazard`).

A type needs users who agree; a shift to several new kinds at once, or to a kind the population is
confidently wrong about, shows sooner in how much better than the broad component the population explained
each user: `new_kind_probability` reads a drop of that gain (a second, one-dimensional change-point
recursion), the least broad weight of the population's part of a session's belief.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference import kernels
from inference.constants import CHANGE_MIN_GAINS as MIN_GAINS
from inference.constants import CHANGE_MIN_SESSIONS as MIN_SESSIONS
from inference.constants import CHANGE_WIDTHS as WIDTHS


class RecentType(NamedTuple):
    """What the last sessions say about a new type: its probability for the next user, and its predictive."""
    weight: float            # P(the next user is of the new type the last sessions share)
    mean: np.ndarray         # [d] the type's predictive mean for the next user
    cov: np.ndarray          # [d, d] and covariance
    sessions: float          # the posterior mean length of that type run (0: none)


def population_log_evidence(lik_prec, lik_lin, lik_const, weights, means, covs) -> np.ndarray:
    """[B] each session's log evidence under a Gaussian mixture prior (weights [C], means [C, d], covs [C, d, d]),
    under the likelihood surrogates [B, d, d], [B, d], [B]."""
    out = kernels.mixture_log_evidence(*_floats(lik_prec, lik_lin, lik_const, weights, means, covs))
    if not np.isfinite(out).all():
        raise FloatingPointError("change point: a matrix that should be positive definite is not")
    return out


def _floats(*arrays) -> list[np.ndarray]:
    return [np.ascontiguousarray(a, dtype=float) for a in arrays]


def recent_type(lik_prec, lik_lin, lik_const, weights, means, covs, hazard: float, broad_var: float,
                gain: np.ndarray | None = None) -> RecentType:
    """The new type the last sessions may share (see the module docstring).

    Parameters
    ----------
    lik_prec, lik_lin, lik_const : arrays [R, d, d], [R, d], [R]
        The likelihood surrogates of the last R sessions, oldest first (R may be 0).
    weights, means, covs : arrays [C], [C, d], [C, d, d]
        The population prior now (its active components, the broad one included).
    hazard : float
        In (0, 1): the prior probability that the population changes at a given session.
    broad_var : float
        The prior variance of a new type's mean, per coordinate.
    gain : array [R], optional
        Each session's log evidence under the population prior its user arrived under minus its log evidence
        under the broad component, both read off the surrogate the session had then; a population run's
        predictive is the session's broad evidence under the surrogate given here plus its gain. The surrogates
        are redone whenever the recalibration is refitted, which moves every evidence: the gain is what an
        arrival's evidence leaves that stays comparable with the type runs' evidences, read off today's surrogates.
        Without it, the gains under the given prior, which was refitted on those very sessions (a component born
        from a session explains it well, so population runs are favoured).

    Returns
    -------
    RecentType
        Weight 0 (and the broad prior as its predictive) where fewer than MIN_SESSIONS sessions are given. The
        broad component is the last of the given prior's.
    """
    if not (0.0 < hazard < 1.0 and 0.0 < broad_var < np.inf):
        raise ValueError(f"recent_type: hazard in (0, 1) and a finite broad_var > 0, got {hazard!r}, {broad_var!r}")
    R, d = lik_lin.shape if len(lik_lin) else (0, len(means[0]))
    if R == 0:
        return RecentType(0.0, np.zeros(d), broad_var * np.eye(d), 0.0)
    alone = population_log_evidence(lik_prec, lik_lin, lik_const, np.ones(1), means[-1:], covs[-1:])
    if gain is None:
        gain = population_log_evidence(lik_prec, lik_lin, lik_const, weights, means, covs) - alone
    gain = np.asarray(gain, dtype=float)
    if gain.shape != (R,) or not np.isfinite(gain).all():
        raise FloatingPointError(f"change point: the sessions' population evidence gains are not {R} finite numbers")
    base = alone + gain
    log_ev, post_mean, post_cov = kernels.type_run_evidence(*_floats(lik_prec, lik_lin, lik_const, WIDTHS),
                                                            float(broad_var))
    if not np.isfinite(log_ev).all():
        raise FloatingPointError("change point: a matrix that should be positive definite is not")
    runs = kernels.run_posterior(base, log_ev, float(hazard))  # [1 + widths, R]: by kind (population first), start
    typed = runs[1:, :max(R - MIN_SESSIONS + 1, 0)]           # type runs of at least MIN_SESSIONS sessions
    shared = float(typed.sum())
    if not shared > 0:
        return RecentType(0.0, np.zeros(d), broad_var * np.eye(d), 0.0)
    q = (typed / shared).ravel()
    m = post_mean[:, :R - MIN_SESSIONS + 1].reshape(-1, d)
    mean = np.einsum("h,hi->i", q, m)
    dev = m - mean[None]
    cov = (np.einsum("h,hij->ij", q, post_cov[:, :R - MIN_SESSIONS + 1].reshape(-1, d, d))
           + np.einsum("h,hi,hj->ij", q, dev, dev))
    r = np.tile(R - np.arange(R - MIN_SESSIONS + 1), len(WIDTHS))
    return RecentType((1.0 - hazard) * shared, mean, 0.5 * (cov + cov.T), float(np.dot(q, r)))


def new_kind_probability(gains: np.ndarray, hazard: float) -> float:
    """P(the next user is of a new kind: one the population prior explains no better than its broad component).

    A session's gain is its log evidence under the population prior its user arrived under minus that under
    the broad component (``online.policies.coduel_prior.arrival_log_gain``). While the population applies, the
    gains scatter around their mean over the given sessions, g ~ N(mean, sd^2); the users of a kind the
    population lacks, and of a kind it is confidently wrong about, are explained by it about as well as by the
    broad prior or worse, g ~ N(0, sd^2). The change-point recursion of `recent_type` over the sessions, with
    these two kinds of run, gives the probability that the next user continues a new-kind run of at least
    MIN_SESSIONS sessions: as for a type, one user the population explains badly is as often on their own as
    the first of a new kind. Unlike a session's evidence against the broad component alone, the gain's drop
    shows after the first users of a kind whose clicks, on the pairs the population chose, its components
    predict no better than the broad prior does.

    Parameters
    ----------
    gains : array [R]
        The last R sessions' gains, oldest first.
    hazard : float
        In (0, 1), as for `recent_type`.

    Returns
    -------
    float
        0 where fewer than MIN_GAINS sessions are given or their mean gain is not positive (no drop to read).
    """
    g = np.asarray(gains, dtype=float)
    if not 0.0 < hazard < 1.0:
        raise ValueError(f"new_kind_probability: hazard in (0, 1), got {hazard!r}")
    if g.ndim != 1:
        raise ValueError(f"new_kind_probability: gains are one number a session, got shape {g.shape}")
    if not np.isfinite(g).all():
        raise FloatingPointError("change point: the sessions' gains are not finite numbers")
    R = len(g)
    if R < MIN_GAINS:
        return 0.0
    ref, sd = float(g.mean()), float(g.std())
    if not (ref > 0.0 and sd > 0.0):
        return 0.0
    z = np.r_[0.0, np.cumsum(-0.5 * (g / sd) ** 2)]                   # a new kind's log likelihood, summed
    runs = kernels.run_posterior(-0.5 * ((g - ref) / sd) ** 2, np.ascontiguousarray((z[None, :] - z[:, None])[None]),
                                 float(hazard))
    return (1.0 - hazard) * float(runs[1, :R - MIN_SESSIONS + 1].sum())


__all__ = ["RecentType", "MIN_SESSIONS", "MIN_GAINS", "WIDTHS", "population_log_evidence", "recent_type",
           "new_kind_probability"]
