"""The low-rank learner (online.policies.low_rank)."""
from __future__ import annotations

import numpy as np
import pytest

from online.learner import Context
from online.policies.low_rank import low_rank
from online.policies.no_transfer import no_transfer
from online.replay import replay
from tdmodels.errors import InputError


def play_session(learner, state, rng, questions):
    """One session against a fixed user (theta [d]); returns the state and the pairs shown."""
    state, _ = learner.start_session(state, rng)
    pairs = []
    for Phi, u in questions:
        pair, _ = learner.select(state, Phi, rng)
        pairs.append(pair)
        state, _ = learner.update(state, Phi, pair, int(u[pair[0]] > u[pair[1]]))
    return learner.end_session(state)[0], pairs


def questions(rng, S, K, theta):
    out = []
    for _ in range(S):
        g = rng.normal(size=K)
        Phi = np.c_[np.eye(K), g - g.mean()]
        out.append((Phi, Phi @ theta))
    return out


def test_before_any_session_it_plays_as_no_transfer():
    rng = np.random.default_rng(0)
    ctx = Context(K=4, d=5, S=8, beta=1.0, b=16, N=3)
    qs = questions(rng, ctx.S, ctx.K, rng.normal(size=ctx.d))
    lr, nt = low_rank(), no_transfer()
    _, pairs_lr = play_session(lr, lr.init(ctx), rng, qs)
    _, pairs_nt = play_session(nt, nt.init(ctx), rng, qs)
    assert pairs_lr == pairs_nt


def test_sessions_are_kept_and_branches_do_not_see_each_other():
    rng = np.random.default_rng(1)
    ctx = Context(K=4, d=5, S=6, beta=1.0, b=16, N=4)
    lr = low_rank(rank=2)
    state, _ = play_session(lr, lr.init(ctx), rng, questions(rng, ctx.S, ctx.K, np.r_[2.0, 0, 0, 0, 0]))
    assert state.n == 1 and not np.allclose(state.population.mean, 0)
    assert np.allclose(state.gram, np.einsum("sd,se->de", state.designs[0], state.designs[0]))
    before = (state.population.mean.copy(), state.population.cov.copy(), state.population.modes.copy(), state.gram.copy())
    a, _ = play_session(lr, state, rng, questions(rng, ctx.S, ctx.K, np.r_[0, 2.0, 0, 0, 0]))
    b, _ = play_session(lr, state, rng, questions(rng, ctx.S, ctx.K, np.r_[0, 0, 2.0, 0, 0]))
    assert a.n == b.n == 2
    assert not np.allclose(a.designs[1], b.designs[1]) and not np.allclose(a.population.mean, b.population.mean)
    assert np.array_equal(a.designs[0], state.designs[0]) and np.array_equal(b.designs[0], state.designs[0])
    after = (state.population.mean, state.population.cov, state.population.modes, state.gram)
    assert all(np.array_equal(x, y) for x, y in zip(before, after))       # the parent state is as it was
    s, _ = lr.start_session(a, rng)
    assert s.user.t == 0 and not s.user.session_z.any()
    assert np.array_equal(s.user.mean, a.population.mean) and np.array_equal(s.user.cov, a.population.cov)


def test_a_replay_is_reproducible_and_plays_otherwise_than_no_transfer(dev_world):
    a = replay(dev_world, 0, "low-rank", arrivals=12)
    b = replay(dev_world, 0, "low-rank", arrivals=12)
    assert a["played"] == b["played"] and a["score"] == b["score"]
    assert a["played"] != replay(dev_world, 0, "no-transfer", arrivals=12)["played"]


@pytest.mark.parametrize("settings", [dict(rank=0), dict(rank=1.5), dict(prior_var=0.0), dict(pseudo_sessions=-1.0),
                                      dict(em_iters=0), dict(prior_var=float("nan")), dict(rank=True)])
def test_bad_settings_are_refused(settings):
    with pytest.raises(InputError):
        low_rank(**settings)


def test_a_click_past_the_session_is_refused_and_the_state_kept():
    rng = np.random.default_rng(2)
    ctx = Context(K=4, d=5, S=2, beta=1.0, b=16, N=2)
    lr = low_rank()
    state, _ = lr.start_session(lr.init(ctx), rng)
    for Phi, _u in questions(rng, ctx.S, ctx.K, np.zeros(ctx.d)):
        state, _ = lr.update(state, Phi, (0, 1), 1)
    kept = (state.user.session_z.copy(), state.user.session_y.copy(), state.user.t)
    with pytest.raises(InputError, match="click 3 of a session of 2"):
        lr.update(state, questions(rng, 1, ctx.K, np.zeros(ctx.d))[0][0], (0, 1), 1)
    assert np.array_equal(state.user.session_z, kept[0]) and np.array_equal(state.user.session_y, kept[1])
    assert state.user.t == kept[2] == 2 and np.array_equal(state.user.session_y, [1.0, 1.0])
