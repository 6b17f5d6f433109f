"""CODuel's pair rules beyond the paper's (online.policies.coduel_pairs): the challenger against a plain
statement of its rule, and inside CODuel."""
import numpy as np
import pytest
from scipy.stats import norm

from online.policies import coduel as cd
from online.policies.coduel_pairs import challenged_pair
from online.learner import Context
from tdmodels.errors import InputError


def _belief(rng, d):
    A = rng.normal(size=(d, d)) * 0.5
    return rng.normal(size=d), A @ A.T + 0.05 * np.eye(d)


def test_the_favourite_replaces_the_second_exactly_when_its_probability_reaches_the_setting():
    rng = np.random.default_rng(3)
    K, d = 6, 7
    swapped = kept = 0
    for _ in range(300):
        mean, cov = _belief(rng, d)
        P = np.c_[np.eye(K), rng.normal(size=K)]
        first, second = (int(x) for x in rng.choice(K, 2, replace=False))
        f = int(np.argmax(P @ mean))
        diff = P[f] - P[first]
        p = norm.cdf(diff @ mean / np.sqrt(diff @ cov @ diff)) if f != first else np.nan
        for least in (0.55, 0.7, 0.9):
            got = challenged_pair((first, second), mean, cov, P, least)
            if f in (first, second) or p < least:
                assert got == (first, second)
                kept += 1
            else:
                assert got == (first, f)
                swapped += 1
        if f not in (first, second):                      # the threshold is the probability itself
            assert challenged_pair((first, second), mean, cov, P, p * (1 - 1e-9)) == (first, f)
            assert challenged_pair((first, second), mean, cov, P, p * (1 + 1e-9)) == (first, second)
    assert swapped > 50 and kept > 50


def test_same_features_or_a_favourite_already_shown_keep_the_pair():
    K, d = 6, 7
    mean, cov = np.r_[0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0], np.eye(d)
    P = np.c_[np.eye(K), np.zeros(K)]
    assert challenged_pair((2, 0), mean, cov, P, 0.7) == (2, 0)
    assert challenged_pair((0, 2), mean, cov, P, 0.7) == (0, 2)
    assert challenged_pair((0, 1), mean, cov, P, 0.7) == (0, 2)
    P_twin = P.copy()
    P_twin[0] = P_twin[2]                                  # the favourite and the first are the same persona
    assert challenged_pair((0, 1), mean, cov, P_twin, 0.01) == (0, 1)
    zero = np.zeros((d, d))                               # a belief with no spread: no probability to weigh
    assert challenged_pair((0, 1), mean, zero, P, 0.01) == (0, 1)


def test_inside_coduel_the_challenger_changes_only_the_second_and_only_while_transfer_is_on(dev_world):
    feats = dev_world["features"].values
    K, d = feats.shape[-2:]
    ctx = Context(K=K, d=d, S=24, beta=11.0, b=16, N=40)
    base, chal = cd.Settings(), cd.Settings(challenger=0.7)
    rng = np.random.default_rng(0)
    state = cd.init(ctx, chal)
    changed = off = 0
    for _ in range(30):
        state = cd.start_session(state, chal)
        for _ in range(24):
            Phi = feats[rng.integers(len(feats))]
            mine, theirs = cd.select(state, Phi, chal), cd.select(state, Phi, base)
            if not state.transfer:
                assert mine == theirs
                off += 1
            elif mine != theirs:
                P = cd.recalibrate(Phi, state.A)
                assert mine[0] == theirs[0] and mine[1] == int(np.argmax(P @ state.alone.means[0]))
                changed += 1
            state, _ = cd.update(state, Phi, mine, int(rng.integers(2)), chal)
        state, _ = cd.end_session(state, chal)
    assert off >= 8 * 24 and changed > 0


@pytest.mark.parametrize("bad", [-0.1, 1.0, float("nan"), True, "0.5"])
def test_a_challenger_outside_0_1_is_refused(bad):
    from tdmodels.errors import InputError
    with pytest.raises(InputError, match="challenger"):
        cd.check_settings(cd.Settings(challenger=bad))


@pytest.mark.parametrize("p", [0.1, 0.25, 0.4999])
def test_a_challenger_below_one_half_is_refused(p):
    """The favourite's probability of beating the first is never below 0.5, so these would all act as 0.5."""
    from online.policies.coduel import coduel
    with pytest.raises(InputError, match=r"0 \(off\) or in \[0.5, 1\)"):
        coduel(challenger=p)
    coduel(challenger=0.5)
