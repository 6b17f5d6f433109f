"""COLDB's compiled steps: a click folded into the current user and its cluster, and the pair rule.

Each function is the compiled statement of one step of ``online.policies.coldb`` (the plain NumPy
statement is the oracle in tests/online/test_coldb_kernels.py). The earlier users are read from the
shared [N, ...] buffers by index, so no click gathers or copies the cluster's rows in Python; the
current user's row (the cluster's last) comes from the state, its buffer row being unwritten.
Solves are by Cholesky (the matrices are lam I + a Gram matrix, positive definite for lam > 0).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from inference.constants import RIDGE_LOGISTIC_ITERS, RIDGE_LOGISTIC_TOL
from inference.kernels.ridge_logistic import ridge_logistic_mode
from inference.kernels.belief import _utilities
from inference.kernels.linalg import _chol_solve, _cholesky, ridge_solve, whitened_sq_norm
from inference.kernel_cache import disk_cache

CACHE = disk_cache()     # on disk only in the folder named by the kernels' source digest

CLUSTER_ITERS = 8           # Newton steps of the pooled estimate, refitted every click from the last (a cap)
CHORD_ITERS = 6             # steps of a refit under the kept Hessian (a gradient pass each) before Newton (a cap)
CHORD_RATE = 0.25           # a step over this fraction of the one before it hands the refit to Newton
CHORD_MARGIN = 4.0          # a refit stops where the steps still to come (estimated) sum to under tol / this


@njit(cache=CACHE)
def edge_radius(T, alpha):
    """f(T) = alpha sqrt((1 + ln(1 + T)) / (1 + T)): an edge (i, l) is cut when ||theta_i - theta_l|| > f(T_i) + f(T_l)."""
    return alpha * math.sqrt((1.0 + math.log1p(T)) / (1.0 + T))


@njit(cache=CACHE)
def pooled_statistics(users_gram, users_moment, cluster, gram, moment, lam):
    """(M = lam I + the cluster's sum of z z^T [d, d], the sum of z (2y - 1) [d]); cluster [n_V] lists
    earlier users then the current one, whose statistics are `gram`, `moment`."""
    d = moment.shape[0]
    G = np.zeros((d, d))
    m = np.zeros(d)
    for k in range(cluster.shape[0] - 1):
        v = cluster[k]
        for i in range(d):
            m[i] += users_moment[v, i]
            for j in range(d):
                G[i, j] += users_gram[v, i, j]
    for i in range(d):
        m[i] += moment[i]
        for j in range(d):
            G[i, j] += gram[i, j]
    for i in range(d):
        G[i, i] += lam
    return G, m


@njit(cache=CACHE)
def cluster_rows(users_Z, users_y, users_counts, cluster, Z, y, count):
    """The cluster's clicks as rows [n, d] and outcomes [n]: each earlier user's first T_v rows in the
    cluster's order, then the current user's first `count`."""
    d = Z.shape[1]
    n = count
    for k in range(cluster.shape[0] - 1):
        n += users_counts[cluster[k]]
    rows = np.empty((n, d))
    ys = np.empty(n)
    r = 0
    for k in range(cluster.shape[0] - 1):
        v = cluster[k]
        for t in range(users_counts[v]):
            rows[r] = users_Z[v, t]
            ys[r] = users_y[v, t]
            r += 1
    for t in range(count):
        rows[r] = Z[t]
        ys[r] = y[t]
        r += 1
    return rows, ys


@njit(cache=CACHE)
def _logit(Z, t, theta):
    """(e, exp(-|e|)) for e = Z[t] . theta: sigmoid(e) and its derivative without overflow either way."""
    e = 0.0
    for i in range(theta.shape[0]):
        e += Z[t, i] * theta[i]
    return e, math.exp(-abs(e))


@njit(cache=CACHE)
def _add_gradient(Z, y, n, theta, grad):
    """grad [d] += sum over rows t < n of Z[t] (y[t] - sigmoid(Z[t] . theta))."""
    d = theta.shape[0]
    for t in range(n):
        e, x = _logit(Z, t, theta)
        r = y[t] - (1.0 / (1.0 + x) if e >= 0 else x / (1.0 + x))
        for i in range(d):
            grad[i] += Z[t, i] * r


@njit(cache=CACHE)
def cluster_gradient(users_Z, users_y, users_counts, cluster, Z, y, count, theta, lam, grad):
    """grad [d] := the gradient of the cluster's ridge logistic log posterior at theta, -lam theta + sum z (y -
    sigmoid(z . theta)) over the rows `cluster_rows` lists, read where they are (no copy)."""
    for i in range(theta.shape[0]):
        grad[i] = -lam * theta[i]
    for k in range(cluster.shape[0] - 1):
        v = cluster[k]
        _add_gradient(users_Z[v], users_y[v], users_counts[v], theta, grad)
    _add_gradient(Z, y, count, theta, grad)


@njit(cache=CACHE)
def add_hessian_rows(H, Z, n, theta):
    """H [d, d] += sum over rows t < n of w_t Z[t] Z[t]', w = sigmoid'(Z[t] . theta): those clicks' share of
    the negative log posterior's Hessian at theta (the clicks themselves do not enter it)."""
    d = theta.shape[0]
    for t in range(n):
        x = _logit(Z, t, theta)[1]
        w = x / ((1.0 + x) * (1.0 + x))
        for i in range(d):
            for j in range(d):
                H[i, j] += w * Z[t, i] * Z[t, j]


@njit(cache=CACHE)
def cluster_fit(users_Z, users_y, users_counts, users_gram, users_moment, cluster, Z, y, count, gram, moment,
                theta_cluster, H_cluster, lam, logistic):
    """(theta_V [d], M_V [d, d], H_V [d, d]): the cluster's pooled estimate, by ridge logistic MLE warm-started
    at theta_cluster or by ridge least squares; lam I + its Gram matrix; and the Hessian the next refit keeps.

    The logistic estimate steps from theta_cluster under H_cluster [d, d], the negative log posterior's Hessian
    kept from an earlier fit (the clicks added since included by the caller at that fit's estimate): each step
    H_cluster^-1 times the gradient, one pass over the rows (no Hessian, no copy), until a step under
    RIDGE_LOGISTIC_TOL in every coordinate, or one whose ratio r to the step before puts the steps still to
    come (about step r / (1 - r)) under it by CHORD_MARGIN; H_V is then H_cluster. Since the estimate moves
    little between refits, so does the Hessian, and each step is a small fraction of the one before (the
    chord method: linear convergence where Newton's is quadratic, at a third of a Newton step's cost).
    Where H_cluster is not positive definite (zeros: none kept) or not finite, a step is not under CHORD_RATE
    times the one before, or CHORD_ITERS steps do not get under the tolerance, Newton with backtracking (at
    most CLUSTER_ITERS steps) takes over from the last point reached, and H_V is its Hessian. Either way the
    estimate is the MLE to about the tolerance. The least-squares estimate ignores H_cluster and hands it back."""
    M, m = pooled_statistics(users_gram, users_moment, cluster, gram, moment, lam)
    d = m.shape[0]
    if theta_cluster.shape[0] != d or H_cluster.shape[0] != d or H_cluster.shape[1] != d:
        raise ValueError("COLDB: the cluster's estimate [d] and kept Hessian [d, d] do not match the designs' d")
    if not logistic:
        G = M.copy()
        for i in range(d):
            G[i, i] -= lam
        return ridge_solve(G, m, lam), M, H_cluster
    theta = theta_cluster.copy()
    L, grad, step = np.empty((d, d)), np.empty(d), np.empty(d)
    if _cholesky(H_cluster, L):
        before = np.inf
        for _ in range(CHORD_ITERS):
            cluster_gradient(users_Z, users_y, users_counts, cluster, Z, y, count, theta, lam, grad)
            _chol_solve(L, grad, step)
            big, total = 0.0, 0.0
            for i in range(d):
                big = max(big, abs(step[i]))
                total += step[i]
            if not (math.isfinite(total) and big <= CHORD_RATE * before):    # a NaN kept Hessian or gradient too
                break
            for i in range(d):
                theta[i] += step[i]
            # at a rate r = big / before the steps still to come sum to about big r / (1 - r)
            if big < RIDGE_LOGISTIC_TOL or (before < np.inf and
                                            CHORD_MARGIN * big * big < RIDGE_LOGISTIC_TOL * (before - big)):
                return theta, M, H_cluster
            before = big
    rows, ys = cluster_rows(users_Z, users_y, users_counts, cluster, Z, y, count)
    theta, _, H = ridge_logistic_mode(rows, ys, lam, theta, CLUSTER_ITERS, RIDGE_LOGISTIC_TOL)
    return theta, M, H


@njit(cache=CACHE)
def own_update(Z, y, count, theta, gram, moment, z, click, lam, logistic):
    """The current user's click (design z [d], click in {0, 1}) added to its rows and statistics (copies),
    and its own estimate refitted (logistic: warm-started at theta). Returns (Z, y, count, theta, gram, moment)."""
    d = z.shape[0]
    if count >= Z.shape[0] or d != Z.shape[1]:
        raise ValueError("COLDB: a click past the session's rounds, or a design of the wrong length")
    Z, y = Z.copy(), y.copy()
    Z[count] = z
    y[count] = click
    count += 1
    gram, moment = gram.copy(), moment.copy()
    sign = 2.0 * click - 1.0
    for i in range(d):
        moment[i] += z[i] * sign
        for j in range(d):
            gram[i, j] += z[i] * z[j]
    if logistic:
        theta = ridge_logistic_mode(Z[:count], y[:count], lam, theta, RIDGE_LOGISTIC_ITERS, RIDGE_LOGISTIC_TOL)[0]
    else:
        theta = ridge_solve(gram, moment, lam)
    return Z, y, count, theta, gram, moment


@njit(cache=CACHE)
def cut_edges(users_theta, users_counts, edges, user, theta, count, alpha):
    """The current user's edges (a copy) with those to earlier users l cut where ||theta - theta_l|| >
    f(count) + f(T_l); returns (edges, how many were cut)."""
    edges = edges.copy()
    d = theta.shape[0]
    mine = edge_radius(count, alpha)
    cut = 0
    for v in range(user):
        if not edges[v]:
            continue
        acc = 0.0
        for i in range(d):
            diff = users_theta[v, i] - theta[i]
            acc += diff * diff
        if math.sqrt(acc) > mine + edge_radius(users_counts[v], alpha):
            edges[v] = False
            cut += 1
    return edges, cut


@njit(cache=CACHE)
def choose(theta, M, Phi, beta):
    """first = argmax theta . x; second = argmax_{j != first} theta . x_j + beta ||x_j - x_first||_{M^-1}
    (the lower index on ties)."""
    K, d = Phi.shape
    if K < 2 or d != theta.shape[0] or M.shape[0] != d or M.shape[1] != d:
        raise ValueError("COLDB: Phi [K >= 2, d], theta [d] and M [d, d] do not agree")
    u = _utilities(Phi, theta)
    first = 0
    for k in range(1, K):
        if u[k] > u[first]:
            first = k
    L = np.empty((d, d))
    if not _cholesky(M, L):
        raise ValueError("COLDB: M is not positive definite")
    w = np.empty(d)
    second = -1
    best = -np.inf
    for k in range(K):
        if k == first:
            continue
        q = whitened_sq_norm(L, Phi[k], Phi[first], w)          # ||x_k - x_first||^2_{M^-1}
        score = u[k] + beta * math.sqrt(q)
        if second < 0 or score > best:
            second, best = k, score
    return first, second


@njit(cache=CACHE)
def click_step(users_Z, users_y, users_counts, users_theta, users_gram, users_moment, labels, user, Z, y, count,
               theta, gram, moment, edges, cluster, theta_cluster, M_cluster, H_cluster, z, click, lam, alpha,
               logistic, refit):
    """A click in one call: `own_update`, `cut_edges`, the current user's component again if an edge was cut
    (``component_of_last``), and with `refit` the cluster's pooled estimate (`cluster_fit`; the click added to
    the kept Hessian at the estimate before it, and the users the cluster lost taken out, `drop_users`).
    Returns the state's (Z, y, count, theta, gram, moment, edges, cluster, theta_cluster, M_cluster, H_cluster)."""
    Z, y, count, theta, gram, moment = own_update(Z, y, count, theta, gram, moment, z, click, lam, logistic)
    edges, cut = cut_edges(users_theta, users_counts, edges, user, theta, count, alpha)
    before = cluster
    if cut > 0:             # edges are only ever cut: with none cut the component is the one it was
        cluster = component_of_last(labels, edges, user)
    if refit:
        d = z.shape[0]
        if H_cluster.shape[0] != d or H_cluster.shape[1] != d or theta_cluster.shape[0] != d:
            raise ValueError("COLDB: the cluster's estimate [d] and kept Hessian [d, d] do not match the designs' d")
        H = np.zeros((d, d))
        if logistic:
            H[:, :] = H_cluster
            add_hessian_rows(H, Z[count - 1:count], 1, theta_cluster)
            if cut > 0 and not drop_users(H, users_Z, users_counts, before, cluster, theta_cluster):
                H[:, :] = 0.0
        theta_cluster, M_cluster, H_cluster = cluster_fit(users_Z, users_y, users_counts, users_gram, users_moment,
                                                          cluster, Z, y, count, gram, moment, theta_cluster, H,
                                                          lam, logistic)
    return Z, y, count, theta, gram, moment, edges, cluster, theta_cluster, M_cluster, H_cluster


@njit(cache=CACHE)
def drop_users(H, users_Z, users_counts, before, after, theta):
    """H [d, d] -= the Hessian share at theta (`add_hessian_rows`, negated) of the earlier users in the cluster
    `before` and not in `after` (both in index order, the current user last, `after` within `before`), in
    place; False, H untouched, where they hold more than half of `before`'s earlier users' clicks (the
    Hessian of what is left is then better recomputed than taken as a difference)."""
    kept, lost = 0, 0
    k = 0
    for j in range(before.shape[0] - 1):
        v = before[j]
        if k < after.shape[0] - 1 and after[k] == v:
            kept += users_counts[v]
            k += 1
        else:
            lost += users_counts[v]
    if 2 * lost > kept + lost:
        return False
    d = theta.shape[0]
    minus = np.zeros((d, d))
    k = 0
    for j in range(before.shape[0] - 1):
        v = before[j]
        if k < after.shape[0] - 1 and after[k] == v:
            k += 1
        else:
            add_hessian_rows(minus, users_Z[v], users_counts[v], theta)
    for i in range(d):
        for j in range(d):
            H[i, j] -= minus[i, j]
    return True


@njit(cache=CACHE)
def component_of_last(labels, edges, u):
    """The current user u's connected component among users [:u + 1]: the earlier users whose component
    (labels [u], fixed during u's session) u has an edge into, in index order, then u."""
    hit = np.zeros(u + 1, dtype=np.bool_)
    for w in range(u):
        if edges[w]:
            hit[labels[w]] = True
    out = np.empty(u + 1, dtype=np.int64)
    k = 0
    for w in range(u):
        if hit[labels[w]]:
            out[k] = w
            k += 1
    out[k] = u
    return out[:k + 1]
