import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from online.learner import Context
from online.pair_rules import greedy_pair
from online.policies import no_transfer as nt
from online.replay import replay_logged
from online.schedule import make_schedule


def test_learner_driven_by_hand_gives_the_replay_rows(dev_world):
    """Driving the learner's pure functions by hand reproduces the replay's pairs exactly."""
    _, log = replay_logged(dev_world, 2, "no-transfer", arrivals=15)
    sched = make_schedule(dev_world, 2, arrivals=15)
    feats, probs = dev_world["features"].values, dev_world["probs"].values
    learner = nt.no_transfer()
    state = learner.init(Context(6, 7, 24, 10.0, 16, 15))
    pairs, rng = [], np.random.default_rng(0)
    for a in range(15):
        state, _ = learner.start_session(state, rng)
        for t in range(24):
            q = sched.question[a, t]
            (i, j), info = learner.select(state, feats[q], rng)
            y = int(sched.uniform[a, t] < probs[sched.student[a], q, i, j])
            state, _ = learner.update(state, feats[q], (i, j), y)
            pairs.append((i, j))
        state, _ = learner.end_session(state)
    np.testing.assert_array_equal(np.array(pairs), np.stack([log.first, log.second], -1).reshape(-1, 2))


@given(st.lists(st.floats(-5, 5), min_size=6, max_size=6))
@settings(max_examples=50, deadline=None)
def test_greedy_pair_is_the_top_two(u):
    u = np.array(u)
    i, j = greedy_pair(u)
    assert i != j
    rest = np.delete(u, [i, j])
    assert u[i] >= u[j] and (rest.size == 0 or min(u[i], u[j]) >= rest.max())


def test_learner_finds_a_clear_favourite():
    rng = np.random.default_rng(0)
    theta = np.array([2.0, 0, 0, -1, 0, 0, 1.0])
    learner = nt.no_transfer()
    state, _ = learner.start_session(learner.init(Context(6, 7, 24, 10.0, 16, 1)), rng)
    for _ in range(40):
        Phi = np.concatenate([np.eye(6), rng.standard_normal((6, 1))], axis=1)
        (i, j), info = learner.select(state, Phi, rng)
        assert 0 <= info.p_first <= 1
        z = Phi[i] - Phi[j]
        y = int(rng.random() < 1 / (1 + np.exp(-theta @ z)))
        state, info = learner.update(state, Phi, (i, j), y)
        assert info.log_predictive <= 0
    assert np.argmax(state.mean[:6]) == 0


def test_a_belief_setting_folds_each_session_from_the_prior_as_the_belief_does():
    """no-transfer[belief=...]: each session starts again from the prior and its clicks enter by the belief's
    own update (``inference.online_beliefs.fold_session`` on one component); more clicks than the session has
    are refused."""
    import pytest

    from inference.online_beliefs import fold_session
    from tdmodels.errors import InputError
    from tdmodels.priors import MixturePrior

    rng = np.random.default_rng(3)
    feats = rng.normal(size=(10, 6, 7))
    for belief in ("adf", "laplace-is", "ep", "ep-corrected"):
        learner = nt.no_transfer(belief=belief)
        state = learner.init(Context(6, 7, 5, 10.0, 16, 2))
        for _ in range(2):
            state, _ = learner.start_session(state, rng)
            z, ys = [], []
            for _ in range(5):
                Phi = feats[rng.integers(10)]
                pair, _ = learner.select(state, Phi, rng)
                y = int(rng.integers(2))
                state, _ = learner.update(state, Phi, pair, y)
                z.append(Phi[pair[0]] - Phi[pair[1]])
                ys.append(y)
            want = fold_session(MixturePrior(np.ones(1), np.zeros((1, 7)), 4.0 * np.eye(7)[None]), np.array(z),
                                np.array(ys), belief).belief
            np.testing.assert_allclose(state.mean, want.means[0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(state.cov, want.covs[0], rtol=1e-12, atol=1e-12)
        with pytest.raises(InputError, match="session"):
            learner.update(state, feats[0], (0, 1), 1)
    with pytest.raises(InputError, match="belief"):
        nt.no_transfer(belief="no-such-belief")


def test_eps_sites_in_a_hand_built_state_are_checked_never_read_past():
    """EP's sites are the learner's state, read by a compiled kernel: sites of the wrong shape or fitted
    counts outside the session are one InputError; a state without them (None), or with kept sites that
    make no Gaussian (NaN), starts from the prior and gives the belief a fresh state gives."""
    import pytest

    from inference.online_beliefs import Sites
    from tdmodels.errors import InputError

    rng = np.random.default_rng(4)
    Phi = rng.normal(size=(6, 7))
    learner = nt.no_transfer(belief="ep")
    state, _ = learner.start_session(learner.init(Context(6, 7, 5, 10.0, 16, 2)), rng)
    state, _ = learner.update(state, Phi, (0, 1), 1)
    good = state.sites
    for bad in (Sites(good.values[:, :, :3], good.fitted, good.means, good.covs),
                Sites(good.values, good.fitted, good.means[:, :3], good.covs),
                Sites(good.values, np.array([9]), good.means, good.covs),
                Sites(good.values, np.array([0.5]), good.means, good.covs), (good.values,)):
        with pytest.raises(InputError, match="sites|fitted"):
            learner.update(state._replace(sites=bad), Phi, (2, 3), 0)
    fresh, _ = learner.update(state._replace(sites=None), Phi, (2, 3), 0)
    cold = state._replace(sites=Sites(good.values, np.zeros(1, dtype=np.int64), good.means, good.covs))
    again, _ = learner.update(cold, Phi, (2, 3), 0)
    np.testing.assert_array_equal(fresh.mean, again.mean)
    np.testing.assert_array_equal(fresh.cov, again.cov)
    broken = state._replace(sites=Sites(good.values, good.fitted, np.full_like(good.means, np.nan), good.covs))
    refit, _ = learner.update(broken, Phi, (2, 3), 0)         # kept sites that make no Gaussian: a cold refit
    np.testing.assert_array_equal(refit.mean, again.mean)
    np.testing.assert_array_equal(refit.cov, again.cov)
