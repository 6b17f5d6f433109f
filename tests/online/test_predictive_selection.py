"""Following whichever of two learners predicted the recent sessions better (online.policies.predictive_selection)."""
from __future__ import annotations

import numpy as np
import pytest

from online.learner import Context
from online.policies.no_transfer import no_transfer
from online.policies.predictive_selection import TIE_RTOL, coduel_or_low_rank, followed_from_log, predictive_selection
from tdmodels.errors import InputError

CTX = Context(K=4, d=5, S=6, beta=1.0, b=16, N=10)
LP = (lambda state, info: info.log_predictive, lambda state, info: info.log_predictive)


def question(rng):
    g = rng.normal(size=CTX.K)
    return np.c_[np.eye(CTX.K), g - g.mean()]


def session(learner, state, rng, theta):
    """One session of CTX.S rounds against a user theta [d]; returns the state, the pairs and who chose them."""
    state, _ = learner.start_session(state, rng)
    shown = []
    for _ in range(CTX.S):
        Phi = question(rng)
        pair, info = learner.select(state, Phi, rng)
        shown.append((pair, info.followed, Phi, state))
        u = Phi @ theta
        state, _ = learner.update(state, Phi, pair, int(u[pair[0]] > u[pair[1]]))
    return learner.end_session(state)[0], shown


def test_both_learners_see_every_click_and_the_better_predictor_is_followed():
    sharp, vague = no_transfer(prior_var=0.01), no_transfer(prior_var=4.0)
    both = predictive_selection(sharp, vague, memory=3, log_predictive=LP)
    rng = np.random.default_rng(0)
    theta = np.r_[3.0, -3.0, 0.0, 0.0, 0.0]          # a strong user: the vague prior predicts its clicks better
    state = both.init(CTX)
    state, shown = session(both, state, rng, theta)
    assert all(f == 0 for _, f, _, _ in shown)        # before any session: the first learner
    a, b = sharp.init(CTX), vague.init(CTX)
    a, _ = sharp.start_session(a, rng)
    b, _ = vague.start_session(b, rng)
    expected = np.zeros(2)
    for pair, _, Phi, _ in shown:
        u = Phi @ theta
        y = int(u[pair[0]] > u[pair[1]])
        a, ia = sharp.update(a, Phi, pair, y)
        b, ib = vague.update(b, Phi, pair, y)
        expected += [ia.log_predictive, ib.log_predictive]
    assert np.allclose(state.first.mean, a.mean) and np.allclose(state.second.mean, b.mean)
    assert np.allclose(state.recent[0], expected) and expected[1] > expected[0]
    state, shown = session(both, state, rng, theta)
    assert all(f == 1 for _, f, _, _ in shown)
    for pair, _, Phi, before in shown:             # the pair is the followed learner's own
        assert pair == vague.select(before.second, Phi, rng)[0]


def test_only_the_last_memory_sessions_decide():
    sharp, vague = no_transfer(prior_var=0.01), no_transfer(prior_var=4.0)
    both = predictive_selection(sharp, vague, memory=2, log_predictive=LP)
    state = both.init(CTX)._replace(recent=np.array([[0.0, -1.0], [0.0, -1.0]]), n=5)
    state, _ = both.start_session(state, np.random.default_rng(1))
    assert state.followed == 0
    state = state._replace(recent=np.array([[0.0, -1.0], [-5.0, 0.0]]))
    assert both.start_session(state, np.random.default_rng(1))[0].followed == 1
    state = state._replace(n=1)                    # one finished session: only row 0 counts
    assert both.start_session(state, np.random.default_rng(1))[0].followed == 0


def test_coduel_or_low_rank_plays_coduel_until_a_session_is_done(dev_world):
    from online.replay import replay
    both = replay(dev_world, 0, "coduel-or-low-rank", arrivals=1)
    assert both["played"] == replay(dev_world, 0, "coduel", arrivals=1)["played"]


@pytest.mark.parametrize("memory", [0, 1.5, True, -3])
def test_bad_memory_is_refused(memory):
    with pytest.raises(InputError):
        coduel_or_low_rank(memory=memory)


def test_the_click_log_says_which_learner_each_session_followed(dev_world):
    """Both learners' predictions are in the click log, so the rule can be replayed from it alone."""
    from online.replay import play, prepare_run, replay_logged

    N, memory = 30, 20
    row, log = replay_logged(dev_world, 0, "coduel-or-low-rank", arrivals=N)
    followed = []
    run = prepare_run(dev_world, 0, "coduel-or-low-rank", N)
    play(run, observe=lambda kind, arrival, round_, info:
         followed.append(info.followed) if kind == "select" and round_ == 0 else None)
    y = log.outcome.astype(float)
    lp = {k: np.log(np.where(y == 1, p, 1 - p)).sum(axis=1) for k, p in log.predictions.items()}   # [N] per session
    assert abs(lp["coduel"][0] - lp["low_rank"][0]) < 1e-9   # the first session: the same prior, the same predictions
    again = followed_from_log(log.predictions, log.outcome, memory)
    assert followed == again.tolist() and 0 < sum(followed) < N
    assert followed_from_log(log.predictions, log.outcome, 1).tolist() == [
        0, *(int(b - a > TIE_RTOL * (1 + abs(a))) for a, b in zip(lp["coduel"][:-1], lp["low_rank"][:-1]))]
