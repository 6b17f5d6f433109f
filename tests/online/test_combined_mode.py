import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from online.combined_replay import replay_combined, student_thetas
from online.direct_questions import observe_linear, pair_cost, persona_contrast, question_gains
from inference.mixture_belief import MixtureBelief
from online.protocol import PolicyOutputError
from online.replay import replay
from online.schedule import make_schedule, session_utilities
from online.scoring import random_regret, strong_regret


def test_persona_contrast():
    c = persona_contrast(6, 7, 2)
    assert c.sum() == pytest.approx(0.0) and c[2] == pytest.approx(5 / 6) and c[6] == 0.0


def test_observe_linear_is_exact_bayes_on_a_grid():
    """Two-component mixture in 1-D, answer = theta + noise: weights and means against a grid posterior."""
    b = MixtureBelief(np.log([0.3, 0.7]), np.array([[-1.0], [2.0]]), np.array([[[0.5]], [[1.5]]]))
    a, nv = 0.4, 0.3
    post = observe_linear(b, np.array([1.0]), a, nv)
    x = np.linspace(-10, 10, 200_001)
    comp = np.array([w * stats.norm.pdf(x, m[0], np.sqrt(S[0, 0])) for w, m, S in zip([0.3, 0.7], b.means, b.covs)])
    joint = comp * stats.norm.pdf(a, x, np.sqrt(nv))
    w = joint.sum(1) / joint.sum()
    np.testing.assert_allclose(np.exp(post.log_w), w, rtol=1e-6)
    np.testing.assert_allclose(post.means[:, 0], (joint * x).sum(1) / joint.sum(1), rtol=1e-6)
    var = (joint * x ** 2).sum(1) / joint.sum(1) - post.means[:, 0] ** 2
    np.testing.assert_allclose(post.covs[:, 0, 0], var, rtol=1e-5)
    # an inactive component (weight 0) stays inactive
    with np.errstate(divide="ignore"):
        w3 = np.log([0.3, 0.7, 0.0])
    b3 = MixtureBelief(w3, np.r_[b.means, [[0.0]]], np.r_[b.covs, [[[1.0]]]])
    assert np.exp(observe_linear(b3, np.array([1.0]), a, nv).log_w)[2] == 0.0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_question_gains_nonnegative_and_zero_without_a_choice(seed):
    rng = np.random.default_rng(seed)
    C, K, d = 3, 6, 7
    A = rng.normal(size=(C, d, d))
    b = MixtureBelief(np.log(rng.dirichlet(np.ones(C))), rng.normal(size=(C, d)),
                      A @ np.swapaxes(A, 1, 2) / d + 0.1 * np.eye(d))
    P = np.c_[np.eye(K), rng.normal(size=K)]
    g = question_gains(b, P, 0.25)
    assert g.shape == (K,) and np.all(g >= -1e-12)
    same = np.tile(P[:1], (K, 1))                        # identical personas: nothing to choose
    np.testing.assert_allclose(question_gains(b, same, 0.25), 0.0, atol=1e-12)
    assert pair_cost(b, same) == pytest.approx(0.0)


def test_combined_replay_without_questions_equals_the_replay(dev_world):
    for spec in ("no-transfer", "coduel-ask[max_questions=0]"):
        a = replay_combined(dev_world, 3, spec, arrivals=12)
        b = replay(dev_world, 3, spec, arrivals=12)
        assert a["score"] == pytest.approx(b["score"], abs=1e-12) and a["asked"].max() == -1


def test_asked_rounds_are_charged_a_random_pair_and_answers_follow_theta(dev_world):
    spec = "tests.online.helpers:AskEveryRound[value=3,round=0]"
    r = replay_combined(dev_world, 1, spec, arrivals=10, answer_noise=0.0)
    sched = make_schedule(dev_world, 1, 10)
    U = session_utilities(dev_world, sched)
    expect = strong_regret(U, np.zeros_like(sched.question), np.ones_like(sched.question))
    expect[:, 0] = random_regret(U)[:, 0]
    assert r["regret"] == pytest.approx(expect.sum()) and np.all(r["asked"][:, 0] == 3)
    theta = student_thetas(dev_world, sched)
    assert np.all(r["asked_per_user"] == 1)
    np.testing.assert_allclose(r["answers"][:, 0], theta @ persona_contrast(6, 7, 3))    # no noise: c . theta*
    assert np.isnan(r["answers"][:, 1:]).all()
    noisy = replay_combined(dev_world, 1, spec, arrivals=10, answer_noise=1.0)
    assert 0.3 < np.std(noisy["answers"][:, 0] - r["answers"][:, 0]) < 2.0


def test_bad_ask_output_names_where(dev_world):
    with pytest.raises(PolicyOutputError, match="arrival 0, round 0: ask returned 9"):
        replay_combined(dev_world, 0, "tests.online.helpers:AskEveryRound[value=9]", arrivals=2)


def test_coduel_ask_asks_and_helps_a_little_on_dev(dev_world):
    base = replay_combined(dev_world, 0, "coduel", arrivals=60)
    ask = replay_combined(dev_world, 0, "coduel-ask", arrivals=60)
    assert np.all(ask["asked_per_user"] <= 1) and ask["asked_per_user"].sum() > 0
    assert np.isfinite(ask["score"]) and ask["score"] > base["score"] - 5.0
