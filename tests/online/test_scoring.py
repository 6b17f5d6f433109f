import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from online.scoring import benchmark_score, floor_regret, pair_regrets, random_regret, strong_regret

U1 = np.array([1.0, 0.9, 0.5, 0.7, 0.6, 0.3])


def test_strong_regret_by_hand():
    assert strong_regret(U1, 0, 1) == pytest.approx(0.1)
    assert strong_regret(U1, 2, 5) == pytest.approx(0.5 + 0.7)
    assert strong_regret(U1, 1, 0) == pytest.approx(0.1)


def test_floor_and_random_by_hand():
    assert floor_regret(U1) == pytest.approx(0.1)
    # mean over the 15 pairs of (1 - Ui) + (1 - Uj) = 2 - 2 * mean(U) = 2 - 2 * 4.0 / 6
    assert random_regret(U1) == pytest.approx(2 - 8.0 / 6)
    by_pairs = np.mean([strong_regret(U1, i, j) for i, j in itertools.combinations(range(6), 2)])
    assert random_regret(U1) == pytest.approx(by_pairs)


def test_score_by_hand():
    assert benchmark_score(100.0, 20.0, 100.0) == 0.0
    assert benchmark_score(20.0, 20.0, 100.0) == 100.0
    assert benchmark_score(60.0, 20.0, 100.0) == pytest.approx(50.0)


U_strategy = arrays(np.float64, (3, 6), elements=st.floats(0, 1))


@given(U_strategy)
@settings(max_examples=60, deadline=None)
def test_random_is_mean_over_pairs_and_floor_is_min(U):
    pr = pair_regrets(U)
    iu, ju = np.triu_indices(6, 1)
    np.testing.assert_allclose(random_regret(U), pr[:, iu, ju].mean(-1), atol=1e-12)
    np.testing.assert_allclose(floor_regret(U), pr[:, iu, ju].min(-1), atol=1e-12)
    assert np.all(pr[:, iu, ju] >= -1e-12)
    np.testing.assert_allclose(pr, np.swapaxes(pr, -1, -2), atol=1e-12)
