import numpy as np
import pytest

from diagnostics.identification_oracles import oracle_replay


def test_oracles_replay_deterministically_and_identification_grows_with_clicks(dev_world):
    a = oracle_replay(dev_world, 0, "clustering", "greedy", arrivals=60)
    b = oracle_replay(dev_world, 0, "clustering", "greedy", arrivals=60)
    assert a.score == b.score and np.array_equal(a.per_round, b.per_round)
    assert np.all((a.identified >= 0) & (a.identified <= 1))
    assert a.identified[-1] > a.identified[0] + 0.1          # clicks identify the student
    ident = oracle_replay(dev_world, 0, "identity", "greedy", arrivals=60)
    assert np.isnan(ident.identified).all() and ident.per_round[0] > a.per_round[0]   # knowing who helps at once


def test_the_identity_oracle_on_first_visits_only_is_the_broad_prior_learner(dev_world):
    """With one arrival nobody returns: both oracles play the broad prior's pairs."""
    a = oracle_replay(dev_world, 3, "identity", "greedy", arrivals=1)
    b = oracle_replay(dev_world, 3, "clustering", "greedy", arrivals=1, alpha=1.0)
    assert a.score == b.score


def test_unknown_oracle_or_rule_is_refused(dev_world):
    with pytest.raises(ValueError, match="oracle must be one of"):
        oracle_replay(dev_world, 0, "psychic")
    with pytest.raises(ValueError, match="rule one of"):
        oracle_replay(dev_world, 0, "identity", "ucb")
