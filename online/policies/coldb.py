"""COLDB (Wang et al., ICML 2025, "Online Clustering of Dueling Bandits") and COLDB-LR.

A CLUB-style user graph with a linear dueling learner per cluster:
- each arrival joins connected to every earlier user;
- per user: a ridge estimate theta_i of their own clicks and a count T_i;
- in a round: V = the connected component of the current user; theta_V = the ridge estimate
  pooled over V's clicks, M_V = lam I + sum z z^T over V;
  first = argmax theta_V . x,  second = argmax_{j != first} theta_V . x_j + beta ||x_j - x_first||_{M_V^-1};
- after the click: refit theta_i; delete the edge (i, l) when
  ||theta_i - theta_l|| > f(T_i) + f(T_l),  f(T) = alpha sqrt((1 + ln(1 + T)) / (1 + T)).

COLDB estimates by ridge logistic MLE (the kernel behind ``inference.estimators.ridge_logistic``,
warm-started);
COLDB-LR (not described publicly; ours) by ridge least squares of 2y - 1 on z, from
sufficient statistics. The defaults beta = sqrt(d ln S) and alpha = 1 are ours; the leaderboard runs the
settings chosen on dev (``tutorduel tune``, ``diagnostics/tuned_settings.json``).
"""
from __future__ import annotations

import functools
from typing import Annotated, NamedTuple

import numpy as np
from numba import njit

from online import append_only
from online.policies import coldb_kernels as ck
from online.learner import Learner, no_session_info
from online.setting_range import MIN_POSITIVE, Range, Search, ranged
from tdmodels.errors import InputError
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest

RIDGE = 1.0
ALPHA = 1.0
ESTIMATORS = ("logistic", "least-squares")


class Users(NamedTuple):
    """The users whose sessions are over, in [N, ...] buffers shared between states (``online.append_only``):
    a state reads rows [:user] alone."""
    Z: np.ndarray          # [N, S, d] design rows (filled up to counts)
    y: np.ndarray          # [N, S] clicks
    counts: np.ndarray     # [N] T_i
    theta: np.ndarray      # [N, d] own estimates
    gram: np.ndarray       # [N, d, d] sum z z^T
    moment: np.ndarray     # [N, d] sum z (2y - 1)
    adjacency: np.ndarray  # [N, N] bool user graph (symmetric on [:user, :user])
    mark: np.ndarray       # [1] rows written (``online.append_only``)


class COLDBState(NamedTuple):
    """The earlier users, the current user's own clicks and estimate and its graph edges, and the current
    user's cluster with its pooled estimate."""
    users: Users
    user: int              # current user, -1 before the first
    Z: np.ndarray          # [S, d] the current user's design rows (the first `count` filled)
    y: np.ndarray          # [S] its clicks
    count: int             # T_user
    theta: np.ndarray      # [d] its own estimate
    gram: np.ndarray       # [d, d] sum z z^T over its clicks
    moment: np.ndarray     # [d] sum z (2y - 1)
    edges: np.ndarray      # [N] bool its edges to earlier users
    labels: np.ndarray     # [user] the earlier users' components (``component_labels``; fixed during the session)
    cluster: np.ndarray    # [n_V] users in the current user's component, itself last
    theta_cluster: np.ndarray  # [d] the pooled estimate of the current cluster (also the next fit's warm start)
    M_cluster: np.ndarray  # [d, d] lam I + sum z z^T over the current cluster
    theta_all: np.ndarray  # [d] the pooled estimate at the last session's start, over every user then (the next
                           # session start's warm start: a new user is connected to all, so that fit pools everyone)
    H_cluster: np.ndarray  # [d, d] the Hessian the cluster's next refit steps under (``coldb_kernels.cluster_fit``;
                           # zeros: none, the refit is Newton's, as at every session's start)


def init(N: int, S: int, d: int) -> COLDBState:
    """No users yet: buffers for N users of S rounds in d features."""
    users = Users(np.zeros((N, S, d)), np.zeros((N, S)), np.zeros(N, dtype=int), np.zeros((N, d)),
                  np.zeros((N, d, d)), np.zeros((N, d)), np.zeros((N, N), dtype=bool), append_only.new_mark())
    return COLDBState(users, -1, np.zeros((S, d)), np.zeros(S), 0, np.zeros(d), np.zeros((d, d)), np.zeros(d),
                      np.zeros(N, dtype=bool), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=int), np.zeros(d),
                      np.eye(d), np.zeros(d), np.zeros((d, d)))


def component(adjacency: np.ndarray, u: int, n: int) -> np.ndarray:
    """Users in u's connected component among the first n users (breadth-first, dense): the plain statement
    the policy's `current_component` is tested against."""
    seen = np.zeros(n, dtype=bool)
    seen[u] = True
    frontier = seen.copy()
    while frontier.any():
        reach = adjacency[:n, :n][frontier].any(0) & ~seen
        seen |= reach
        frontier = reach
    return np.flatnonzero(seen)


def current_component(state: COLDBState) -> np.ndarray:
    """`component` of the current user u among users [:u + 1]: the earlier users' components (fixed during
    u's session, `component_labels`) that u still has an edge into, and u."""
    return ck.component_of_last(state.labels, state.edges, state.user)


@njit(cache=CACHE)
def component_labels(adjacency, u):
    """Connected-component labels [u] of users [:u] in the graph adjacency[:u, :u]: each user's label is the
    smallest index in its component (breadth-first)."""
    labels = np.full(u, -1, dtype=np.int64)
    queue = np.empty(max(u, 1), dtype=np.int64)
    for s in range(u):
        if labels[s] >= 0:
            continue
        labels[s] = s
        queue[0] = s
        head, tail = 0, 1
        while head < tail:
            v = queue[head]
            head += 1
            for w in range(u):
                if adjacency[v, w] and labels[w] < 0:
                    labels[w] = s
                    queue[tail] = w
                    tail += 1
    return labels


def _freeze(state: COLDBState) -> Users:
    """The users with the current one's session added at row `user` (and column, in the graph)."""
    u = state.user
    if u < 0:
        return state.users
    users = state.users
    buffers = (users.Z, users.y, users.counts, users.theta, users.gram, users.moment, users.adjacency)
    (Z, y, counts, theta, gram, moment, adj), mark = append_only.writable_at(u, users.mark, buffers)
    Z[u], y[u], counts[u], theta[u], gram[u], moment[u] = state.Z, state.y, state.count, state.theta, state.gram, \
        state.moment
    adj[u, :u] = adj[:u, u] = state.edges[:u]
    return Users(Z, y, counts, theta, gram, moment, adj, mark)


def start_session(state: COLDBState) -> COLDBState:
    """The next user joins the graph connected to every earlier user; its cluster is its connected component."""
    u = state.user + 1
    if u == len(state.edges):
        raise InputError(f"COLDB: more users than the {u} arrivals the run was started for (context N)")
    users = _freeze(state)
    edges = np.zeros_like(state.edges)
    edges[:u] = True
    state = state._replace(users=users, user=u, Z=np.zeros_like(state.Z), y=np.zeros_like(state.y), count=0,
                           theta=np.zeros_like(state.theta), gram=np.zeros_like(state.gram),
                           moment=np.zeros_like(state.moment), edges=edges,
                           labels=component_labels(users.adjacency, u))
    return state._replace(cluster=current_component(state))


def cluster_estimate(state: COLDBState, lam: float, estimator: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(theta_V [d], M_V [d, d], H_V [d, d]) pooled over the current cluster (``coldb_kernels.cluster_fit``),
    from the state's theta_cluster and H_cluster."""
    u = state.users
    return ck.cluster_fit(u.Z, u.y, u.counts, u.gram, u.moment, state.cluster, state.Z, state.y, state.count,
                          state.gram, state.moment, state.theta_cluster, state.H_cluster, lam, estimator == "logistic")


def start_estimate(state: COLDBState, lam: float, estimator: str) -> COLDBState:
    """The state with the pooled estimate of a session just started (its cluster: every user) as theta_cluster
    and theta_all, by Newton from the previous start's (no Hessian kept across sessions: the refits within
    the session step under the one this fit ends at)."""
    theta, M, H = cluster_estimate(state._replace(theta_cluster=state.theta_all,
                                                  H_cluster=np.zeros_like(state.H_cluster)), lam, estimator)
    return state._replace(theta_cluster=theta, M_cluster=M, H_cluster=H, theta_all=theta)


def choose(theta: np.ndarray, M: np.ndarray, Phi: np.ndarray, beta: float) -> tuple[int, int]:
    """first = argmax theta . x; second = argmax_{j != first} theta . x_j + beta ||x_j - x_first||_{M^-1}."""
    Phi = np.asarray(Phi, dtype=float)
    d = len(theta)
    if Phi.ndim != 2 or Phi.shape[0] < 2 or Phi.shape[1] != d or np.shape(M) != (d, d):
        raise InputError(f"COLDB: Phi [K >= 2, {d}] and M [{d}, {d}] for theta [{d}], got {Phi.shape}, {np.shape(M)}")
    first, second = ck.choose(theta, M, Phi, float(beta))
    return int(first), int(second)


def update(state: COLDBState, z: np.ndarray, y: int, lam: float, alpha: float, estimator: str) -> COLDBState:
    """Fold the click (design z, y) into the current user's estimate, cut graph edges to users whose estimates
    are now too far apart, and recompute the current user's component if any was cut (the pooled estimate
    is left as it was: `cluster_estimate`)."""
    z = np.asarray(z, dtype=float)
    if z.shape != state.theta.shape or state.count >= len(state.y) or state.user < 0:
        raise InputError(f"COLDB: a click needs a started session with rounds left and z [{len(state.theta)}]; "
                         f"got z {z.shape} at round {state.count} of {len(state.y)}")
    if type(y) not in (int, float, np.int64, np.float64, np.int8) or y not in (0, 1) or not np.isfinite(z).all():
        raise InputError(f"COLDB: a click is 0 or 1 on a finite design, got y={y!r}")
    return _clicked(state, z, y, float(lam), float(alpha), estimator == "logistic", False)


def _clicked(state: COLDBState, z: np.ndarray, y, lam: float, alpha: float, logistic: bool,
             refit: bool) -> COLDBState:
    u = state.users
    new = ck.click_step(u.Z, u.y, u.counts, u.theta, u.gram, u.moment, state.labels, state.user, state.Z, state.y,
                        state.count, state.theta, state.gram, state.moment, state.edges, state.cluster,
                        state.theta_cluster, state.M_cluster, state.H_cluster, z, float(y), lam, alpha, logistic,
                        refit)
    Z, y, count, theta, gram, moment, edges, cluster, theta_cluster, M_cluster, H_cluster = new
    return COLDBState(state.users, state.user, Z, y, count, theta, gram, moment, edges, state.labels, cluster,
                      theta_cluster, M_cluster, state.theta_all, H_cluster)


@functools.lru_cache(maxsize=None)
def _default_beta(S: int, d: int) -> float:
    return float(np.sqrt(d * np.log(S)))


@ranged
def coldb(estimator: str = "logistic",
          lam: Annotated[float, Range(MIN_POSITIVE, 1e6), Search(0.1, 100, log=True)] = RIDGE,
          beta: Annotated[float, Range(0, 1e3), Search(0, 10)] | None = None,
          alpha: Annotated[float, Range(0, 1e3, lo_open=True), Search(0.1, 10, log=True)] = ALPHA) -> Learner:
    """COLDB over users (COLDB-LR with estimator="least-squares").

    The pooled estimate of the current cluster is refitted whenever the cluster or its clicks change
    (a new user, a click before the session's last), warm-started at the previous one (at a session's
    start, when the new user's cluster is every user, at the previous session start's), and kept in
    the state for the next select; within a session each refit steps under the Hessian of the fit before,
    the users an edge cut removed taken out of it (``coldb_kernels.cluster_fit``, ``drop_users``).

    Parameters
    ----------
    estimator : {"logistic", "least-squares"}
    lam : float
        Ridge, in (0, 1e6] (default 1.0).
    beta : float, optional
        Confidence width, in [0, 1000] (default sqrt(d ln S)).
    alpha : float
        Edge-deletion scale, in (0, 1000] (default 1.0).
    """
    if estimator not in ESTIMATORS:
        raise InputError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if not lam > 0 or not alpha > 0 or (beta is not None and not beta >= 0):
        raise InputError(f"lam and alpha must be positive and beta non-negative; got {lam!r}, {alpha!r}, {beta!r}")
    lam, alpha, logistic = float(lam), float(alpha), estimator == "logistic"

    def start(state, rng):
        return start_estimate(start_session(state), lam, estimator), None

    def select(state, Phi, rng):
        width = float(beta) if beta is not None else _default_beta(*state.Z.shape)
        return choose(state.theta_cluster, state.M_cluster, Phi, width), None

    def click(state, Phi, pair, y):
        refit = state.count + 1 < state.Z.shape[0]                # no select follows the session's last click
        return _clicked(state, Phi[pair[0]] - Phi[pair[1]], y, lam, alpha, logistic, refit), None

    return Learner(lambda context: init(context.N, context.S, context.d),
                   start, select, click, no_session_info)
