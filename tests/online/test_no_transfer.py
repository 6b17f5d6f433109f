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
