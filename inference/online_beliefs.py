"""The online beliefs a learner can hold about one user: a Gaussian per prior component, updated click by
click, and the component weights beside them.

- ``laplace``: the paper's step, the mode and curvature of N(theta; m, S) x the click's likelihood
  (``inference.mixture_belief``), the weights reweighted by the probit-approximated predictive;
- ``adf``: assumed-density filtering, the Gaussian replaced by the exact mean and covariance of that
  product (one-dimensional quadrature along z), the weights by the exact one-click predictive
  (``inference.kernels.moment_matching``);
- ``laplace-is``: the Laplace step, then its Gaussian, widened, used as an importance proposal for the
  exact component posterior on all of the session's clicks (every component of weight 1e-3 or more),
  its Pareto-smoothed moments kept where PSIS k-hat trusts them, the weights from each component's
  evidence for the session (``inference.kernels.importance_laplace``; the constants in
  ``inference.constants``). It costs a fixed number of draws a component a click, each evaluating the
  session's clicks so far;
- ``ep``: expectation propagation, each component's Gaussian refitted after every click to the exact
  component posterior on all of the session's clicks, one Gaussian site per click, EP_PASSES passes over
  them (the first is ADF's), the weights from each component's evidence for the session at the fitted mean
  (``inference.kernels.expectation_propagation``). No draws; its cost grows with the clicks so far.

The learners that hold a belief take it as a setting (``coduel[belief=adf]``, ``no-transfer[belief=adf]``,
``tempered-kg[belief=adf]``); `fold_session` replays one user's clicks through any of them, as
``tutorduel validate --beliefs`` does to check every belief on the same clicks.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference import kernels as kn
from inference.constants import BELIEFS
from inference.kernels.importance_laplace import base_draws
from tdmodels.errors import InputError
from tdmodels.priors import MixturePrior

__all__ = ["BELIEFS", "FoldedSession", "Sites", "UNREAD_SITES", "check_belief", "checked_sites", "fold_session", "new_sites"]


class FoldedSession(NamedTuple):
    """One user's session replayed through an online belief."""
    belief: MixturePrior     # weights [C], means [C, d], covs [C, d, d] after the last click (prior's slots)
    p_first: np.ndarray      # [S] the belief's predictive P(y = 1) of each click, before it was revealed


class Sites(NamedTuple):
    """Expectation propagation's state beside a belief: each component's sites and how many are fitted."""
    values: np.ndarray       # [C, 3, S] per click: the site's precision, shift and log normaliser
    fitted: np.ndarray       # [C] int: the first clicks the component's sites cover (0: refit from the prior)
    means: np.ndarray        # [C, d] EP's own Gaussian on those sites (before any correction)
    covs: np.ndarray         # [C, d, d]

    def copy(self) -> "Sites":
        return Sites(*(a.copy() for a in self))


def new_sites(components: int, session: int, d: int) -> Sites:
    """Expectation propagation's state at a session's start: no site fitted.

    Parameters
    ----------
    components : int
        C, the belief's component slots.
    session : int
        S, the session's clicks.
    d : int
        The dimension of theta.
    """
    return Sites(np.zeros((components, 3, session)), np.zeros(components, dtype=np.int64), np.zeros((components, d)),
                 np.zeros((components, d, d)))


UNREAD_SITES = Sites(np.zeros((1, 3, 1)), np.zeros(1, dtype=np.int64), np.zeros((1, 1)), np.zeros((1, 1, 1)))
"""What a belief that keeps no sites hands the kernel (which neither reads nor writes it for that belief)."""


def checked_sites(sites: Sites | None, components: int, session: int, d: int, who: str) -> Sites:
    """A copy of `sites` for the kernel to write into, after checking its shapes against the belief's (a state
    built by hand, or one of another learner, would have the compiled kernel read past its arrays); None is
    no site fitted (`new_sites`)."""
    if sites is None:
        return new_sites(components, session, d)
    want = ((components, 3, session), (components,), (components, d), (components, d, d))
    if (isinstance(sites, Sites) and all(isinstance(a, np.ndarray) for a in sites)
            and tuple(a.shape for a in sites) == want and sites.fitted.dtype == np.int64
            and sites.values.dtype == sites.means.dtype == sites.covs.dtype == np.float64
            and 0 <= sites.fitted.min() and sites.fitted.max() <= session):
        return sites.copy()                                        # the learner's own, as it made them
    got = tuple(np.shape(a) for a in sites) if isinstance(sites, tuple) and len(sites) == 4 else None
    if got != want:
        raise InputError(f"{who}: expectation propagation's sites have shapes {got}, the belief needs {want}")
    fitted = np.asarray(sites.fitted)
    if not (np.issubdtype(fitted.dtype, np.integer) and np.all((fitted >= 0) & (fitted <= session))):
        raise InputError(f"{who}: expectation propagation's fitted counts must be whole numbers in 0..{session}")
    return Sites(np.array(sites.values, dtype=float), fitted.astype(np.int64), np.array(sites.means, dtype=float),
                 np.array(sites.covs, dtype=float))


def check_belief(name: str) -> int:
    """The kernels' code of belief `name`; InputError naming the choices otherwise."""
    if not isinstance(name, str) or name not in BELIEFS:
        raise InputError(f"unknown belief {name!r}; choose from {', '.join(BELIEFS)}")
    return BELIEFS.index(name)


def fold_session(prior: MixturePrior, z: np.ndarray, y: np.ndarray, belief: str = "laplace",
                 clicks: int | None = None) -> FoldedSession:
    """Replay clicks through an online belief from `prior`.

    Parameters
    ----------
    prior : MixturePrior
        weights [C] (zero slots stay empty), means [C, d], covs [C, d, d]: the prior the user arrived under.
    z : array [S, d]
        Click designs, phi_first - phi_second, as the learner read them.
    y : array [S]
        Clicks, 1 if the first shown won.
    belief : str
        One of ``BELIEFS``.
    clicks : int, optional
        Fold only the first `clicks` clicks (default all).

    Returns
    -------
    FoldedSession
        The belief after the clicks (weights normalised; zero where the prior's were) and each click's
        predictive probability under the belief before it.
    """
    kind = check_belief(belief)
    w0 = np.asarray(prior.weights, dtype=float)
    m0 = np.ascontiguousarray(prior.means, dtype=float)
    S0 = np.ascontiguousarray(prior.covs, dtype=float)
    z = np.ascontiguousarray(z, dtype=float)
    y = np.asarray(y)
    C, d = m0.shape
    if w0.shape != (C,) or S0.shape != (C, d, d) or z.ndim != 2 or z.shape[1] != d or y.shape != z.shape[:1]:
        raise InputError(f"fold_session: prior ({w0.shape}, {m0.shape}, {S0.shape}), z {z.shape} and y {y.shape} "
                         "do not fit one user's session")
    if not (np.isfinite(z).all() and np.isin(y, (0, 1)).all() and np.isfinite(w0).all() and (w0 >= 0).all()
            and w0.sum() > 0):
        raise InputError("fold_session: z must be finite, y 0 or 1 and the prior weights finite, >= 0, not all 0")
    if not (np.isfinite(m0).all() and np.isfinite(S0).all()):
        raise InputError("fold_session: the prior's means and covariances must be finite")
    try:
        np.linalg.cholesky(S0[w0 > 0])
    except np.linalg.LinAlgError:
        raise InputError("fold_session: a prior covariance (of a component with weight) is not positive definite") from None
    n = len(y) if clicks is None else int(clicks)
    if not 0 <= n <= len(y):
        raise InputError(f"fold_session: clicks {clicks!r} outside 0..{len(y)}")
    active = w0 > 0
    with np.errstate(divide="ignore"):
        log_w0 = np.where(active, np.log(np.where(active, w0, 1.0) / w0.sum()), -np.inf)
    log_w, means, covs = log_w0, m0, S0
    ys = y.astype(float)
    base = base_draws(d)
    sites = new_sites(C, len(y), d)
    p_first = np.empty(n)
    for t in range(n):
        log_w, means, covs, lp = kn.belief_update(kind, log_w, means, covs, active, z[t], int(y[t]), log_w0, m0, S0,
                                                  z, ys, t, base, *sites)
        p = float(np.exp(lp))
        p_first[t] = p if y[t] else 1.0 - p
    return FoldedSession(MixturePrior(np.where(active, np.exp(log_w), 0.0), means, covs), p_first)
