"""COLDB (Wang et al., ICML 2025, "Online Clustering of Dueling Bandits") and COLDB-LR.

A CLUB-style user graph with a linear dueling learner per cluster:
- each arrival joins connected to every earlier user;
- per user: a ridge estimate theta_i of their own clicks and a count T_i;
- in a round: V = the connected component of the current user; theta_V = the ridge estimate
  pooled over V's clicks, M_V = lam I + sum z z^T over V;
  first = argmax theta_V . x,  second = argmax_{j != first} theta_V . x_j + beta ||x_j - x_first||_{M_V^-1};
- after the click: refit theta_i; delete the edge (i, l) when
  ||theta_i - theta_l|| > f(T_i) + f(T_l),  f(T) = alpha sqrt((1 + ln(1 + T)) / (1 + T)).

COLDB estimates by ridge logistic MLE (``inference.estimators.ridge_logistic``, warm-started);
COLDB-LR (not described publicly; ours) by ridge least squares of 2y - 1 on z, from
sufficient statistics. beta = sqrt(d ln S) and alpha = 1 are ours (not tuned).
"""
from __future__ import annotations

from typing import Annotated, NamedTuple

import numpy as np

from inference.estimators import ridge_least_squares, ridge_logistic
from online.learner import Learner, no_session_info
from online.setting_range import Range, ranged
from tdmodels.errors import InputError

RIDGE = 1.0
ALPHA = 1.0
ESTIMATORS = ("logistic", "least-squares")


class COLDBState(NamedTuple):
    """Every user's clicks and own estimate, the user graph, and the current user's cluster with its pooled estimate."""
    Z: np.ndarray          # [N, S, d] every user's design rows (filled up to counts)
    y: np.ndarray          # [N, S] clicks
    counts: np.ndarray     # [N] T_i
    theta: np.ndarray      # [N, d] each user's own estimate
    gram: np.ndarray       # [N, d, d] sum z z^T per user
    moment: np.ndarray     # [N, d] sum z (2y - 1) per user
    adjacency: np.ndarray  # [N, N] bool user graph
    user: int              # current user, -1 before the first
    cluster: np.ndarray    # [n_V] users in the current user's component
    theta_cluster: np.ndarray  # [d] the pooled estimate of the current cluster (also the next fit's warm start)
    M_cluster: np.ndarray  # [d, d] lam I + sum z z^T over the current cluster


def init(N: int, S: int, d: int) -> COLDBState:
    """No users yet: buffers for N users of S rounds in d features."""
    return COLDBState(np.zeros((N, S, d)), np.zeros((N, S)), np.zeros(N, dtype=int), np.zeros((N, d)),
                      np.zeros((N, d, d)), np.zeros((N, d)), np.zeros((N, N), dtype=bool), -1,
                      np.zeros(0, dtype=int), np.zeros(d), np.eye(d))


def component(adjacency: np.ndarray, u: int, n: int) -> np.ndarray:
    """Users in u's connected component among the first n users (breadth-first, dense)."""
    seen = np.zeros(n, dtype=bool)
    seen[u] = True
    frontier = seen.copy()
    while frontier.any():
        reach = adjacency[:n, :n][frontier].any(0) & ~seen
        seen |= reach
        frontier = reach
    return np.flatnonzero(seen)


def start_session(state: COLDBState) -> COLDBState:
    """The next user joins the graph connected to every earlier user; its cluster is its connected component."""
    u = state.user + 1
    adj = state.adjacency.copy()
    adj[u, :u] = adj[:u, u] = True
    return state._replace(user=u, adjacency=adj, cluster=component(adj, u, u + 1))


def cluster_estimate(state: COLDBState, lam: float, estimator: str) -> tuple[np.ndarray, np.ndarray]:
    """(theta_V [d], M_V [d, d]) pooled over the current cluster."""
    V = state.cluster
    d = state.theta.shape[1]
    M = lam * np.eye(d) + state.gram[V].sum(0)
    if estimator == "least-squares":
        return ridge_least_squares(M - lam * np.eye(d), state.moment[V].sum(0), lam), M
    seen = (np.arange(state.y.shape[1]) < state.counts[V][:, None]).ravel()
    rows, ys = state.Z[V].reshape(-1, d)[seen], state.y[V].ravel()[seen]
    return ridge_logistic(rows, ys, lam, init=state.theta_cluster, iters=8), M


def choose(theta: np.ndarray, M: np.ndarray, Phi: np.ndarray, beta: float) -> tuple[int, int]:
    """first = argmax theta . x; second = argmax_{j != first} theta . x_j + beta ||x_j - x_first||_{M^-1}."""
    u = Phi @ theta
    first = int(np.argmax(u))
    D = Phi - Phi[first]
    score = u + beta * np.sqrt(np.maximum(np.einsum("kd,de,ke->k", D, np.linalg.inv(M), D), 0.0))
    score[first] = -np.inf
    return first, int(np.argmax(score))


def _f(T, alpha):
    return alpha * np.sqrt((1.0 + np.log1p(T)) / (1.0 + T))


def update(state: COLDBState, z: np.ndarray, y: int, lam: float, alpha: float, estimator: str) -> COLDBState:
    """Fold the click (design z, y) into the current user's estimate, cut graph edges to users whose estimates are now too far apart, and refit the cluster's pooled estimate."""
    i, t = state.user, int(state.counts[state.user])
    Z, Y, counts = state.Z.copy(), state.y.copy(), state.counts.copy()
    gram, moment, theta = state.gram.copy(), state.moment.copy(), state.theta.copy()
    Z[i, t], Y[i, t] = z, y
    counts[i] = t + 1
    gram[i] += np.outer(z, z)
    moment[i] += z * (2.0 * y - 1.0)
    if estimator == "least-squares":
        theta[i] = ridge_least_squares(gram[i], moment[i], lam)
    else:
        theta[i] = ridge_logistic(Z[i, :t + 1], Y[i, :t + 1], lam, init=theta[i])
    n = i + 1
    adj = state.adjacency.copy()
    nb = np.flatnonzero(adj[i, :n])
    cut = nb[np.linalg.norm(theta[nb] - theta[i], axis=1) > _f(counts[i], alpha) + _f(counts[nb], alpha)]
    adj[i, cut] = adj[cut, i] = False
    return state._replace(Z=Z, y=Y, counts=counts, gram=gram, moment=moment, theta=theta, adjacency=adj,
                          cluster=component(adj, i, n))


@ranged
def coldb(estimator: str = "logistic", lam: Annotated[float, Range(0, 1e6, lo_open=True)] = RIDGE,
          beta: Annotated[float, Range(0, 1e3)] | None = None,
          alpha: Annotated[float, Range(0, 1e3, lo_open=True)] = ALPHA) -> Learner:
    """COLDB over users (COLDB-LR with estimator="least-squares").

    The pooled estimate of the current cluster is refitted whenever the cluster or its clicks change
    (a new user, a click before the session's last), warm-started at the previous one, and kept in
    the state for the next select.

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
    lam, alpha = float(lam), float(alpha)

    def estimated(state: COLDBState) -> COLDBState:
        theta, M = cluster_estimate(state, lam, estimator)
        return state._replace(theta_cluster=theta, M_cluster=M)

    def select(state, Phi, rng):
        N, S, d = state.Z.shape
        width = float(beta) if beta is not None else float(np.sqrt(d * np.log(S)))
        return choose(state.theta_cluster, state.M_cluster, Phi, width), None

    def click(state, Phi, pair, y):
        state = update(state, Phi[pair[0]] - Phi[pair[1]], y, lam, alpha, estimator)
        last = state.counts[state.user] == state.Z.shape[1]       # no select follows in this session
        return (state if last else estimated(state)), None

    return Learner(lambda context: init(context.N, context.S, context.d),
                   lambda state, rng: (estimated(start_session(state)), None), select, click, no_session_info)
