"""COLDB's compiled steps (online.policies.coldb_kernels) against their plain NumPy statements, on
random states: the pooled statistics, the cluster's rows, both estimators, the edge cuts and the pair
rule; and a replay's click step equal to the steps run one by one."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.estimators import ridge_logistic
from online.policies import coldb_kernels as ck


def _edge_radius(T, alpha):
    return alpha * np.sqrt((1.0 + np.log1p(T)) / (1.0 + T))


def _random_users(seed, N=9, S=5, d=3):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, S + 1, N)
    Z = rng.normal(size=(N, S, d))
    y = (rng.random((N, S)) < 0.5).astype(float)
    for v in range(N):                       # rows past a user's count are never read: poison them
        Z[v, counts[v]:] = np.nan
        y[v, counts[v]:] = np.nan
    gram = np.stack([Z[v, :counts[v]].T @ Z[v, :counts[v]] for v in range(N)])
    moment = np.stack([Z[v, :counts[v]].T @ (2 * y[v, :counts[v]] - 1) for v in range(N)])
    theta = rng.normal(size=(N, d))
    return rng, Z, y, counts, gram, moment, theta


@given(st.integers(0, 10_000))
@settings(max_examples=40, deadline=None)
def test_cluster_fit_is_the_pooled_estimate_of_the_clusters_clicks(seed):
    rng, Z, y, counts, gram, moment, _ = _random_users(seed)
    N, S, d = Z.shape
    user = int(rng.integers(1, N))
    cluster = np.r_[np.sort(rng.choice(user, int(rng.integers(0, user + 1)), replace=False)), user]
    count = int(rng.integers(0, S))
    cur_Z, cur_y = np.zeros((S, d)), np.zeros(S)
    cur_Z[:count], cur_y[:count] = rng.normal(size=(count, d)), rng.random(count) < 0.5
    cur_gram, cur_moment = cur_Z[:count].T @ cur_Z[:count], cur_Z[:count].T @ (2 * cur_y[:count] - 1)
    lam = float(rng.uniform(0.1, 3.0))
    rows = np.concatenate([Z[v, :counts[v]] for v in cluster[:-1]] + [cur_Z[:count]])
    ys = np.concatenate([y[v, :counts[v]] for v in cluster[:-1]] + [cur_y[:count]])
    M_want = lam * np.eye(d) + rows.T @ rows
    got_rows, got_ys = ck.cluster_rows(Z, y, counts, cluster, cur_Z, cur_y, count)
    np.testing.assert_array_equal(got_rows, rows)
    np.testing.assert_array_equal(got_ys, ys)
    theta, M, _ = ck.cluster_fit(Z, y, counts, gram, moment, cluster, cur_Z, cur_y, count, cur_gram, cur_moment,
                                 np.zeros(d), np.zeros((d, d)), lam, True)
    np.testing.assert_allclose(M, M_want, rtol=1e-12, atol=1e-12)
    if len(rows):
        np.testing.assert_allclose(theta, ridge_logistic(rows, ys, lam), rtol=1e-7, atol=1e-7)
    theta_ls, M_ls, _ = ck.cluster_fit(Z, y, counts, gram, moment, cluster, cur_Z, cur_y, count, cur_gram,
                                       cur_moment, np.zeros(d), np.zeros((d, d)), lam, False)
    np.testing.assert_array_equal(M_ls, M)
    np.testing.assert_allclose(theta_ls, np.linalg.solve(M_want, rows.T @ (2 * ys - 1)), rtol=1e-10, atol=1e-12)


@given(st.integers(0, 10_000), st.sampled_from([0.05, 0.5, 2.0]))
@settings(max_examples=40, deadline=None)
def test_edge_cuts_and_pair_rule_match_their_numpy_statements(seed, alpha):
    rng, _, _, counts, _, _, theta_users = _random_users(seed)
    N, d = theta_users.shape
    user = int(rng.integers(1, N))
    edges = rng.random(N) < 0.7
    theta, count = rng.normal(size=d), int(rng.integers(1, 6))
    got, n_cut = ck.cut_edges(theta_users, counts, edges, user, theta, count, alpha)
    want = edges.copy()
    nb = np.flatnonzero(edges[:user])
    far = np.linalg.norm(theta_users[nb] - theta, axis=1) > _edge_radius(count, alpha) + _edge_radius(counts[nb], alpha)
    want[nb[far]] = False
    np.testing.assert_array_equal(got, want)
    assert n_cut == far.sum()
    K = 5
    Phi = rng.normal(size=(K, d))
    A = rng.normal(size=(d, d))
    M = A @ A.T + 0.5 * np.eye(d)
    beta = float(rng.uniform(0, 3))
    u = Phi @ theta
    first = int(np.argmax(u))
    D = Phi - Phi[first]
    score = u + beta * np.sqrt(np.maximum(np.einsum("kd,de,ke->k", D, np.linalg.inv(M), D), 0.0))
    score[first] = -np.inf
    assert ck.choose(theta, M, Phi, beta) == (first, int(np.argmax(score)))


def test_edge_radius_is_the_papers_f():
    T = np.arange(0, 30)
    np.testing.assert_allclose([ck.edge_radius(t, 0.7) for t in T], _edge_radius(T, 0.7), rtol=1e-15)


def test_own_update_adds_the_click_and_refits_without_touching_its_inputs():
    rng = np.random.default_rng(3)
    S, d = 4, 3
    Z, y, gram, moment, theta = np.zeros((S, d)), np.zeros(S), np.zeros((d, d)), np.zeros(d), np.zeros(d)
    count = 0
    seen = []
    for _ in range(S):
        z, click = rng.normal(size=d), float(rng.random() < 0.5)
        before = [x.copy() for x in (Z, y, gram, moment, theta)]
        out = ck.own_update(Z, y, count, theta, gram, moment, z, click, 0.5, True)
        for x, b in zip((Z, y, gram, moment, theta), before):
            np.testing.assert_array_equal(x, b)
        Z, y, count, theta, gram, moment = out
        seen.append((z, click))
        rows = np.array([s[0] for s in seen])
        ys = np.array([s[1] for s in seen])
        np.testing.assert_allclose(gram, rows.T @ rows, rtol=1e-12)
        np.testing.assert_allclose(moment, rows.T @ (2 * ys - 1), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(theta, ridge_logistic(rows, ys, 0.5), atol=1e-7)
        ls = ck.own_update(Z, y, count - 1, theta, gram - np.outer(z, z), moment - z * (2 * click - 1), z, click,
                           0.5, False)[3]
        np.testing.assert_allclose(ls, np.linalg.solve(rows.T @ rows + 0.5 * np.eye(d), rows.T @ (2 * ys - 1)),
                                   rtol=1e-9, atol=1e-12)


def test_a_click_step_is_its_parts_in_order(dev_world):
    """`click_step`, what the learner runs, equals own_update, cut_edges, component_of_last, the kept Hessian's
    update (add_hessian_rows, drop_users) and cluster_fit called one by one, along a dev replay's first users."""
    from online.policies import coldb

    feats = dev_world["features"].values
    rng = np.random.default_rng(1)
    state = coldb.start_session(coldb.init(N=6, S=5, d=7))
    for _ in range(4):
        for _ in range(5):
            Phi = feats[rng.integers(len(feats))]
            z, y = Phi[0] - Phi[1], float(rng.integers(2))
            u = state.users
            got = ck.click_step(u.Z, u.y, u.counts, u.theta, u.gram, u.moment, state.labels, state.user, state.Z,
                                state.y, state.count, state.theta, state.gram, state.moment, state.edges,
                                state.cluster, state.theta_cluster, state.M_cluster, state.H_cluster, z, y, 0.7,
                                0.3, True, True)
            Z, Y, count, theta, gram, moment = ck.own_update(state.Z, state.y, state.count, state.theta, state.gram,
                                                             state.moment, z, y, 0.7, True)
            edges, cut = ck.cut_edges(u.theta, u.counts, state.edges, state.user, theta, count, 0.3)
            cluster = ck.component_of_last(state.labels, edges, state.user) if cut else state.cluster
            H = state.H_cluster.copy()     # the kept Hessian with the click at the estimate, the lost users out
            ck.add_hessian_rows(H, z[None], 1, state.theta_cluster)
            if cut and not ck.drop_users(H, u.Z, u.counts, state.cluster, cluster, state.theta_cluster):
                H[:] = 0.0
            fit = ck.cluster_fit(u.Z, u.y, u.counts, u.gram, u.moment, cluster, Z, Y, count, gram, moment,
                                 state.theta_cluster, H, 0.7, True)
            for g, w in zip(got, (Z, Y, count, theta, gram, moment, edges, cluster) + fit):
                np.testing.assert_array_equal(g, w)
            state = state._replace(Z=Z, y=Y, count=count, theta=theta, gram=gram, moment=moment, edges=edges,
                                   cluster=cluster, theta_cluster=fit[0], M_cluster=fit[1], H_cluster=fit[2])
        state = coldb.start_estimate(coldb.start_session(state), 0.7, "logistic")


def test_coldb_refuses_a_click_past_the_session_and_mismatched_shapes():
    import pytest

    from online.policies import coldb
    from tdmodels.errors import InputError

    s = coldb.start_session(coldb.init(N=2, S=2, d=3))
    for _ in range(2):
        s = coldb.update(s, np.ones(3), 1, lam=1.0, alpha=1.0, estimator="logistic")
    with pytest.raises(InputError, match="rounds left"):
        coldb.update(s, np.ones(3), 1, lam=1.0, alpha=1.0, estimator="logistic")
    with pytest.raises(InputError, match="z"):
        coldb.update(coldb.start_session(s), np.ones(4), 1, lam=1.0, alpha=1.0, estimator="logistic")
    for Phi in (np.ones((5, 2)), np.ones((5, 4)), np.ones((1, 3))):
        with pytest.raises(InputError, match="Phi"):
            coldb.choose(np.zeros(3), np.eye(3), Phi, 1.0)


def test_coldb_refuses_a_click_that_is_not_0_or_1_and_a_nonfinite_design():
    import pytest

    from online.policies import coldb
    from tdmodels.errors import InputError

    s = coldb.start_session(coldb.init(N=2, S=2, d=3))
    for y, z in ((2, np.ones(3)), (float("nan"), np.ones(3)), (True, np.ones(3)), (1, np.array([1.0, np.nan, 0.0]))):
        with pytest.raises(InputError, match="0 or 1"):
            coldb.update(s, z, y, lam=1.0, alpha=1.0, estimator="logistic")


def _chord_case(seed, n=400, d=7, lam=1.5):
    rng = np.random.default_rng(seed)
    N, S = 4, n // 4
    Z = rng.normal(size=(N, S, d)) * rng.uniform(0.2, 1.5)
    theta_true = rng.normal(size=d)
    y = (rng.random((N, S)) < 1 / (1 + np.exp(-Z @ theta_true))).astype(float)
    counts = np.full(N, S)
    gram = np.einsum("nsi,nsj->nij", Z, Z)
    moment = np.einsum("nsi,ns->ni", Z, 2 * y - 1)
    return rng, Z, y, counts, gram, moment, lam


@given(st.integers(0, 10_000), st.integers(1, 30))
@settings(max_examples=30, deadline=None)
def test_a_refit_under_the_kept_hessian_is_the_mle_as_newtons_is(seed, new_clicks):
    """The cluster's refit steps under a Hessian kept from the fit before (the new clicks added at that fit's
    estimate) and reaches the MLE that Newton reaches to its tolerance (1e-8), keeping that Hessian where it
    got there (always for one new click among 400, as COLDB refits after each click); with none kept
    (zeros) or a wrong one (a tenth, a hundred times) it still reaches it (Newton takes over), as it does
    where many new clicks moved the estimate too far for the kept Hessian."""
    rng, Z, y, counts, gram, moment, lam = _chord_case(seed)
    N, S, d = Z.shape
    cluster = np.arange(N)                              # users 0..N-2 earlier, N-1 the current one
    cur_Z, cur_y = Z[-1].copy(), y[-1].copy()
    before = S - new_clicks
    rows, ys = ck.cluster_rows(Z, y, counts, cluster, cur_Z, cur_y, before)
    theta0, _, H0 = ck.ridge_logistic_mode(rows, ys, lam, np.zeros(d), 25, 1e-12)
    H = H0.copy()
    ck.add_hessian_rows(H, cur_Z[before:], new_clicks, theta0)
    want = ridge_logistic(np.concatenate([Z[v] for v in range(N)]), y.ravel(), lam)
    g, m = gram[-1], moment[-1]
    for kept, newton in ((H, False), (np.zeros((d, d)), True), (0.1 * H, True), (100.0 * H, True)):
        theta, M, H_out = ck.cluster_fit(Z, y, counts, gram, moment, cluster, cur_Z, cur_y, S, g, m, theta0, kept,
                                         lam, True)
        np.testing.assert_allclose(theta, want, rtol=0, atol=2e-8)
        np.testing.assert_allclose(M, lam * np.eye(d) + gram.sum(0), rtol=1e-12)
        if not newton and (new_clicks == 1 or np.array_equal(H_out, kept)):
            assert np.array_equal(H_out, kept)          # the chord path keeps the Hessian it stepped under
        else:                                           # Newton's: the Hessian at (a step from) the estimate
            full = lam * np.eye(d)
            ck.add_hessian_rows(full, np.concatenate(list(Z)), N * S, want)
            np.testing.assert_allclose(H_out, full, rtol=1e-6, atol=1e-6)


def test_the_cluster_gradient_is_the_gradient_of_the_pooled_log_posterior():
    rng, Z, y, counts, gram, moment, lam = _chord_case(3, n=40, d=3)
    counts = np.array([10, 0, 7, 10])
    cluster = np.array([0, 1, 3])
    theta = rng.normal(size=3)
    rows, ys = ck.cluster_rows(Z, y, counts, cluster, Z[3], y[3], 4)
    grad = np.empty(3)
    ck.cluster_gradient(Z, y, counts, cluster, Z[3], y[3], 4, theta, lam, grad)
    np.testing.assert_allclose(grad, -lam * theta + rows.T @ (ys - 1 / (1 + np.exp(-rows @ theta))), rtol=1e-12)
    H = np.eye(3)
    ck.add_hessian_rows(H, rows, len(rows), theta)
    p = 1 / (1 + np.exp(-rows @ theta))
    np.testing.assert_allclose(H, np.eye(3) + (rows * (p * (1 - p))[:, None]).T @ rows, rtol=1e-12)


def test_a_kept_hessian_that_is_nan_is_not_stepped_under():
    """Bug (first version): a NaN step read as a step of 0 (max(0, nan) is 0) and ended the refit at NaN."""
    rng, Z, y, counts, gram, moment, lam = _chord_case(5)
    N, S, d = Z.shape
    theta, _, _ = ck.cluster_fit(Z, y, counts, gram, moment, np.arange(N), Z[-1], y[-1], S, gram[-1], moment[-1],
                                 np.zeros(d), np.full((d, d), np.nan), lam, True)
    want = ridge_logistic(np.concatenate(list(Z)), y.ravel(), lam)
    np.testing.assert_allclose(theta, want, atol=2e-8)


def test_a_hand_built_state_whose_kept_hessian_is_the_wrong_shape_is_refused(dev_world):
    """The compiled refit reads the kept Hessian [d, d] without bounds checks: one of another shape is
    refused before it is read."""
    import pytest

    from online.policies import coldb

    feats = dev_world["features"].values
    state = coldb.start_estimate(coldb.start_session(coldb.init(N=3, S=4, d=7)), 1.0, "logistic")
    assert state.H_cluster.shape == (7, 7)
    bad = state._replace(H_cluster=np.eye(3))
    with pytest.raises(ValueError, match="kept Hessian"):
        coldb._clicked(bad, feats[0, 0] - feats[0, 1], 1, 1.0, 1.0, True, True)
    with pytest.raises(ValueError, match="kept Hessian"):
        coldb.cluster_estimate(bad, 1.0, "logistic")


def test_the_users_a_cluster_lost_are_taken_out_of_the_kept_hessian():
    """After an edge cut the kept Hessian loses the lost users' share at the estimate (so the refit of what is
    left steps under a Hessian of the right clicks); where they held more than half the clicks, none is kept."""
    rng, Z, y, counts, gram, moment, lam = _chord_case(11, n=80, d=3)
    counts = np.array([20, 5, 20, 0])
    theta = rng.normal(size=3)
    before, after = np.array([0, 1, 2, 3]), np.array([0, 2, 3])
    H = lam * np.eye(3)
    for v in (0, 1, 2):
        ck.add_hessian_rows(H, Z[v], counts[v], theta)
    assert ck.drop_users(H, Z, counts, before, after, theta)
    want = lam * np.eye(3)
    for v in (0, 2):
        ck.add_hessian_rows(want, Z[v], counts[v], theta)
    np.testing.assert_allclose(H, want, rtol=1e-12, atol=1e-12)
    untouched = H.copy()
    assert not ck.drop_users(untouched, Z, counts, before, np.array([1, 3]), theta)     # 40 of 45 clicks lost
    np.testing.assert_array_equal(untouched, H)
    assert ck.drop_users(H.copy(), Z, counts, np.array([0, 3]), np.array([0, 3]), theta)   # none lost


def test_a_nan_warm_start_is_not_a_converged_estimate():
    """Bug: a NaN Hessian passed the Cholesky factorisation (NaN <= 0 is False), its NaN step read as a step of
    0 and the ridge logistic Newton returned NaN as converged."""
    from inference.kernels.linalg import _cholesky

    assert not _cholesky(np.full((2, 2), np.nan), np.empty((2, 2)))
    Z, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 0.0])
    theta, converged, _ = ck.ridge_logistic_mode(Z, y, 1.0, np.array([np.nan, 0.0]), 25, 1e-8)
    assert not converged
