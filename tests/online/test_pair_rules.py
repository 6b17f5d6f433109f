import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.mixture_belief import init_belief, update_belief
from online.lookahead_reference import mixture_greedy_pair, lookahead_pair, lookahead_scores, top2_sum
from tdmodels.priors import MixturePrior

K, D = 6, 7
PHI = np.concatenate([np.eye(K), np.zeros((K, 1))], 1)       # indicators only, rater column 0


def _belief(rng, C=3):
    A = rng.standard_normal((C, D, D)) * 0.4
    return init_belief(MixturePrior(rng.dirichlet(np.ones(C)), rng.standard_normal((C, D)),
                                    A @ A.transpose(0, 2, 1) + 0.1 * np.eye(D)))


@given(st.integers(0, 10_000))
@settings(max_examples=40, deadline=None)
def test_without_future_rounds_lookahead_is_greedy(seed):
    rng = np.random.default_rng(seed)
    b = _belief(rng)
    Phi = PHI + np.c_[np.zeros((K, K)), rng.standard_normal(K)]
    bank = rng.standard_normal((4, K, D))
    assert lookahead_pair(b, Phi, bank, remaining=0) == mixture_greedy_pair(b, Phi)


def test_lookahead_pays_now_to_learn_who_the_user_is():
    """Two equally likely kinds of user: one loves persona 0, the other persona 1; persona 2 is a safe
    second best for both. Greedy shows 2 against one of them; with rounds ahead, showing 0 vs 1 reveals
    the kind and pays off."""
    means = np.zeros((2, D))
    means[0, [0, 2]] = 4.0, 2.5
    means[1, [1, 2]] = 4.0, 2.5
    b = init_belief(MixturePrior(np.array([0.5, 0.5]), means, np.stack([0.05 * np.eye(D)] * 2)))
    bank = np.stack([PHI] * 4)
    assert 2 in mixture_greedy_pair(b, PHI)
    assert set(lookahead_pair(b, PHI, bank, remaining=20)) == {0, 1}


def test_score_is_the_expectation_it_claims():
    rng = np.random.default_rng(7)
    b = _belief(rng)
    bank = rng.standard_normal((5, K, D))
    i, j, R = 1, 4, 9
    scores = lookahead_scores(b, PHI, bank, R)
    mu = PHI @ (np.exp(b.log_w) @ b.means)
    z = PHI[i] - PHI[j]
    total = -(mu[i] + mu[j])
    post = {}
    for y in (0, 1):
        b2, lp = update_belief(b, z, y)
        post[y] = (np.exp(lp), np.exp(b2.log_w) @ b2.means)
    (p0, m0), (p1, m1) = post[0], post[1]
    assert np.isclose(p0 + p1, 1.0)
    kg = [p1 * top2_sum(q @ m1) + p0 * top2_sum(q @ m0) - top2_sum(q @ (p1 * m1 + p0 * m0)) for q in bank]
    assert min(kg) >= -1e-12                                   # top2 is convex: information never hurts
    total -= R * np.mean(kg)
    assert np.isclose(scores[(i, j)], total)
    assert len(scores) == K * (K - 1) // 2
