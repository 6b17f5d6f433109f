"""The competitor policies: each pair rule on a hand-made case, and a replay of each."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.estimators import ridge_least_squares, ridge_logistic
from online.policies import coldb, colstim, hierarchical_ts, rucb
from tdmodels.errors import InputError
from tests.online.driving import play_sessions

PHI = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.5, 0.5]])


def test_rucb_bounds_champion_and_challenger():
    W = np.array([[0, 40, 45], [10, 0, 25], [5, 25, 0]], dtype=float)
    U = rucb.upper_bounds(W, alpha=0.51)
    t = W.sum() + 1
    assert U[1, 0] < 0.5 and U[2, 0] < 0.5
    assert U[0, 1] == pytest.approx(40 / 50 + np.sqrt(0.51 * np.log(t) / 50))
    assert np.all(np.diag(U) == 0.5)
    # arm 0 is the only arm whose optimistic win rate is >= 1/2 against all: the champion
    (c, d), info = rucb.select(rucb.RUCBState(W, -1), np.random.default_rng(0))
    assert c == 0 and d == 1                                   # challenger: the best bound against 0
    assert list(info.candidates) == [0]
    assert rucb.update(rucb.RUCBState(W, -1), (c, d), 1).best == 0         # the sole candidate becomes B
    # no comparisons yet: every bound is 1, every arm a candidate, the pair distinct
    (c, d), _ = rucb.select(rucb.init(3), np.random.default_rng(1))
    assert c != d
    after = rucb.update(rucb.RUCBState(W, 0), (2, 1), outcome=0)     # the second shown (1) won
    assert after.wins[1, 2] == W[1, 2] + 1 and after.wins.sum() == W.sum() + 1


def test_rucb_keeps_b_while_a_candidate_and_plays_it_half_the_time():
    """Zoghi et al.'s champion: B, the last sole candidate, w.p. 1/2 among several candidates, the others
    uniformly; a first version kept the last champion shown whenever it stayed a candidate."""
    W = np.array([[0, 12, 11, 30], [10, 0, 11, 30], [10, 10, 0, 30], [2, 2, 2, 0]], dtype=float)
    state = rucb.RUCBState(W, 1)
    U, candidates, best = rucb.this_round(state)
    assert list(candidates) == [0, 1, 2] and best == 1
    rng = np.random.default_rng(0)
    shown = np.array([rucb.select(state, rng)[0][0] for _ in range(4000)])
    np.testing.assert_allclose(np.bincount(shown, minlength=4) / len(shown), [0.25, 0.5, 0.25, 0], atol=0.03)
    assert rucb.update(state, (0, 1), 1).best == 1                   # still a candidate: B stays
    assert rucb.this_round(rucb.RUCBState(W, 3))[2] == -1          # arm 3 is no candidate: no B
    assert rucb.update(rucb.RUCBState(W, 3), (0, 1), 1).best == -1
    none = np.array([rucb.select(rucb.RUCBState(W, -1), rng)[0][0] for _ in range(3000)])
    np.testing.assert_allclose(np.bincount(none, minlength=4)[:3] / len(none), 1 / 3, atol=0.03)


def test_colstim_first_is_the_optimistic_best_second_the_widest_challenger():
    state = colstim.init(2, 24, lam=1.0)                       # theta = 0, M = I
    first, second = colstim.select(state, PHI, eps=np.zeros(4), c=1.0)
    assert first == 0 and second == 2                          # no estimate: the farthest persona from the first
    sure = state._replace(theta=np.array([2.0, 1.0]), M=1e9 * np.eye(2))
    first, second = colstim.select(sure, PHI, eps=np.zeros(4), c=4.7)
    assert (first, second) == (0, 3)                           # certain: the top two utilities
    eps = np.array([0.0, 0.0, 5.0, 0.0])                       # a large Gumbel draw lifts persona 2 first
    assert colstim.select(state, PHI, eps, c=1.0)[0] == 2


def test_coldb_graph_clusters_and_pooled_estimate():
    s = coldb.init(N=3, S=4, d=2)
    s = coldb.start_session(s)
    assert s.user == 0 and list(s.cluster) == [0]
    for y in (1, 1, 1, 1):
        s = coldb.update(s, np.array([1.0, 0.0]), y, lam=1.0, alpha=1.0, estimator="logistic")
    s = coldb.start_session(s)
    assert s.user == 1 and list(s.cluster) == [0, 1] and s.edges[0]
    for y in (0, 0, 0, 0):                                     # the opposite user: the edge is cut
        s = coldb.update(s, np.array([1.0, 0.0]), y, lam=0.1, alpha=0.2, estimator="logistic")
    assert not s.edges[0] and list(s.cluster) == [1]
    theta, M, _ = coldb.cluster_estimate(s, lam=0.1, estimator="logistic")
    np.testing.assert_allclose(theta, ridge_logistic(np.tile([1.0, 0.0], (4, 1)), np.zeros(4), 0.1), atol=1e-8)
    np.testing.assert_allclose(M, 0.1 * np.eye(2) + 4 * np.outer([1.0, 0.0], [1.0, 0.0]))
    adj = np.zeros((5, 5), dtype=bool)
    adj[0, 1] = adj[1, 0] = adj[1, 2] = adj[2, 1] = adj[3, 4] = adj[4, 3] = True
    assert list(coldb.component(adj, 2, 5)) == [0, 1, 2] and list(coldb.component(adj, 4, 5)) == [3, 4]


def test_coldb_states_stay_as_they_were_when_a_caller_branches(dev_world):
    """COLDB's earlier users live in buffers its states share (no [N, N] copy a click); a state reused
    after a later one appended (two branches from one past) still plays as a fresh run would, and
    neither branch sees the other's users."""
    from online.learner import Context
    from online.policies.coldb import coldb as make

    feats = dev_world["features"].values
    learner = make()
    ctx = Context(6, 7, 4, 1.0, 16, 9)
    past, _ = play_sessions(learner, learner.init(ctx), feats, 3, 0, 4)
    def seen(users, n):                                             # what a state with n users over reads
        return [x[:n, :n] if name == "adjacency" else x[:n] for name, x in zip(users._fields[:-1], users)]

    past_rows = [x.copy() for x in seen(past.users, 2)]             # users 0-1 are over, user 2 is current
    a, pairs_a = play_sessions(learner, past, feats, 3, 1, 4)
    a_rows = [x.copy() for x in seen(a.users, 5)]
    b, pairs_b = play_sessions(learner, past, feats, 3, 2, 4)             # a second branch from the same past
    for x, want in zip(seen(a.users, 5), a_rows):                   # the first branch's users are its own
        np.testing.assert_array_equal(x, want)
    for x, want in zip(seen(past.users, 2), past_rows):
        np.testing.assert_array_equal(x, want)
    assert play_sessions(learner, past, feats, 3, 1, 4)[1] == pairs_a
    fresh, _ = play_sessions(learner, learner.init(ctx), feats, 3, 0, 4)
    assert play_sessions(learner, fresh, feats, 3, 2, 4)[1] == pairs_b


@given(st.integers(0, 10_000), st.integers(1, 12))
@settings(max_examples=40, deadline=None)
def test_current_component_is_the_component_of_the_whole_graph(seed, u):
    rng = np.random.default_rng(seed)
    full = np.triu(rng.random((u + 1, u + 1)) < 0.25, 1)
    full = full | full.T
    N = u + 3
    users = coldb.init(N=N, S=2, d=2).users
    users.adjacency[:u, :u] = full[:u, :u]
    edges = np.zeros(N, dtype=bool)
    edges[:u] = full[u, :u]
    s = coldb.init(N=N, S=2, d=2)._replace(users=users, user=u, edges=edges,
                                           labels=coldb.component_labels(users.adjacency, u))
    assert list(coldb.current_component(s)) == list(coldb.component(full, u, u + 1))
    for v in range(u):                                           # each earlier user's label: its component's least
        assert s.labels[v] == coldb.component(full[:u, :u], v, u).min()


def test_least_squares_estimate_from_sufficient_statistics():
    rng = np.random.default_rng(0)
    Z, y = rng.normal(size=(30, 3)), rng.integers(0, 2, 30)
    direct = np.linalg.solve(Z.T @ Z + 2.0 * np.eye(3), Z.T @ (2 * y - 1))
    np.testing.assert_allclose(ridge_least_squares(Z.T @ Z, Z.T @ (2 * y - 1), 2.0), direct)


@settings(max_examples=20)
@given(st.integers(0, 10_000))
def test_hierts_meta_posterior_update_is_the_exact_gaussian_marginal(seed):
    rng = np.random.default_rng(seed)
    d = 3
    s = hierarchical_ts.init(d, s0_var=0.7, q_var=2.0)
    s = hierarchical_ts.start_session(s, "hier", rng)
    A = rng.normal(size=(d, d))
    P = A @ A.T + 0.1 * np.eye(d)                              # a Gaussian likelihood site N(theta; b, P^-1)
    b = rng.normal(size=d)
    P0 = np.linalg.inv(s.prior_cov)
    cov = np.linalg.inv(P0 + P)
    mean = cov @ (P0 @ s.prior_mean + P @ b)
    after = hierarchical_ts.end_session(s._replace(mean=mean, cov=cov))
    lam = np.linalg.inv(s.sigma0 + np.linalg.inv(P))           # b ~ N(mu, Sigma_0 + P^-1) given mu
    np.testing.assert_allclose(after.q_prec, np.eye(d) / 2.0 + lam, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(after.q_lin, lam @ b, rtol=1e-8, atol=1e-10)
    unchanged = hierarchical_ts.end_session(s)                 # no clicks: Q unchanged
    np.testing.assert_allclose(unchanged.q_prec, s.q_prec, atol=1e-10)
    np.testing.assert_allclose(unchanged.q_lin, 0.0, atol=1e-10)


def test_thompson_pairs_are_distinct_and_follow_a_certain_belief():
    s = hierarchical_ts.init(2)._replace(mean=np.array([2.0, 1.0]), cov=1e-12 * np.eye(2))
    assert hierarchical_ts.select(s, PHI, np.random.default_rng(0)) == (0, 3)


COMPETITORS = ["rucb", "colstim", "coldb", "coldb-lr", "meta-ts", "hierts", "pooled", 'pooled[rule="thompson"]']


@pytest.mark.parametrize("spec", COMPETITORS)
def test_each_competitor_replays_on_dev(dev_world, spec):
    from online.replay import replay_logged

    row, log = replay_logged(dev_world, 0, spec, arrivals=12)
    assert np.isfinite(row["score"])
    assert np.all(log.first != log.second)
    again, _ = replay_logged(dev_world, 0, spec, arrivals=12)
    assert again["score"] == row["score"]                       # deterministic given the seed


def test_competitors_choose_differently(dev_world):
    from online.replay import replay_logged

    pairs = {s: np.stack(replay_logged(dev_world, 0, s, arrivals=6)[1].first) for s in COMPETITORS}
    firsts = [p.tobytes() for p in pairs.values()]
    assert len(set(firsts)) == len(firsts)


def test_bad_settings_are_refused():
    from online.registry import PolicySpecError, make_learner

    for spec in ("rucb[alpha=0.3]", "colstim[lam=0]", "coldb[estimator=\"tree\"]", "hierts[q_var=-1]"):
        with pytest.raises((ValueError, PolicySpecError)):
            make_learner(spec)
    with pytest.raises(PolicySpecError):
        make_learner("coldb-lr[estimator=\"logistic\"]")


def test_leaderboard_names_map_specs_to_published_rows():
    from diagnostics.leaderboard_report import display_name, leaderboard_policies, published

    runs = leaderboard_policies()
    assert display_name(runs["pooled"]) == "pooled" and display_name(runs["coldb-lr"]) == "coldb-lr"
    assert display_name('pooled[rule="thompson"]') in ("pooled", "pooled (untuned)")
    assert display_name('coldb[estimator="least-squares"]') in ("coldb-lr", "coldb-lr (untuned)")
    assert display_name("my:Policy") == "my:Policy"
    assert published("coldb-lr", "dev") == 40 and published(runs["coldb-lr"], "composite") == 34
    assert published("coduel", "scrambled") is None


def test_meta_ts_draws_the_users_prior_mean_by_cholesky():
    """Bug: Meta-TS drew mu ~ Q with numpy's default SVD factor, whose singular vectors' signs depend on
    the LAPACK build and CPU, so one seed gave different rows on different machines (dev seed 0: score
    38.28 on one, 37.48 on another). The Cholesky factor is unique."""
    from online.policies.hierarchical_ts import init, meta_posterior, start_session

    state = init(4)
    A = np.array([[2.0, 0.3, 0, 0], [0.3, 1.5, 0.2, 0], [0, 0.2, 1.0, 0.1], [0, 0, 0.1, 0.7]])
    state = state._replace(q_prec=A, q_lin=np.array([0.5, -1.0, 0.2, 0.0]))
    drawn = start_session(state, "meta", np.random.default_rng(3)).prior_mean
    mq, Sq = meta_posterior(state)
    expected = mq + np.linalg.cholesky(Sq) @ np.random.default_rng(3).standard_normal(4)
    np.testing.assert_allclose(drawn, expected, rtol=1e-12)


def test_coldb_with_more_users_than_its_context_says_is_one_clear_error():
    s = coldb.init(N=1, S=2, d=2)
    s = coldb.start_session(s)
    with pytest.raises(InputError, match="more users than the 1 arrivals"):
        coldb.start_session(s)


@pytest.mark.parametrize("lam", [0.0, -1.0, float("nan"), float("inf"), True, "1"])
def test_ridge_least_squares_refuses_a_ridge_that_is_not_a_finite_positive_number(lam):
    with pytest.raises(InputError, match="lam"):
        ridge_least_squares(np.eye(2), np.ones(2), lam)
