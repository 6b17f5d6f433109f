import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from online.policies import no_transfer as nt
from online.replay import replay_logged
from online.schedule import make_schedule


def test_functional_core_gives_the_class_rows(dev_world):
    """Driving the pure core by hand reproduces the class shell's pairs exactly."""
    _, log = replay_logged(dev_world, 2, "no-transfer", arrivals=15)
    sched = make_schedule(dev_world, 2, arrivals=15)
    feats, probs = dev_world["features"].values, dev_world["probs"].values
    state = nt.init(7)
    pairs = []
    for a in range(15):
        state = nt.start_session(state)
        for t in range(24):
            q = sched.question[a, t]
            (i, j), info = nt.select(state, feats[q])
            y = int(sched.uniform[a, t] < probs[sched.student[a], q, i, j])
            state, _ = nt.update(state, feats[q][i] - feats[q][j], y)
            pairs.append((i, j))
    np.testing.assert_array_equal(np.array(pairs), np.stack([log.first, log.second], -1).reshape(-1, 2))


@given(st.lists(st.floats(-5, 5), min_size=6, max_size=6))
@settings(max_examples=50, deadline=None)
def test_greedy_pair_is_the_top_two(u):
    u = np.array(u)
    i, j = nt.greedy_pair(u)
    assert i != j
    rest = np.delete(u, [i, j])
    assert u[i] >= u[j] and (rest.size == 0 or min(u[i], u[j]) >= rest.max())


def test_learner_finds_a_clear_favourite():
    rng = np.random.default_rng(0)
    theta = np.array([2.0, 0, 0, -1, 0, 0, 1.0])
    state = nt.start_session(nt.init(7))
    for _ in range(40):
        Phi = np.concatenate([np.eye(6), rng.standard_normal((6, 1))], axis=1)
        (i, j), info = nt.select(state, Phi)
        assert 0 <= info.p_first <= 1
        z = Phi[i] - Phi[j]
        y = int(rng.random() < 1 / (1 + np.exp(-theta @ z)))
        state, lp = nt.update(state, z, y)
        assert lp <= 0
    assert np.argmax(state.mean[:6]) == 0
