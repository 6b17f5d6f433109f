import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from diagnostics.click_reliability import brier, expected_calibration_error, log_loss, reliability, reliability_table


def test_calibrated_predictions_sit_on_the_diagonal_and_overconfident_ones_do_not():
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, 200_000)
    y = rng.random(p.size) < p
    rel = reliability(p, y)
    ok = rel.count > 0
    assert np.all(np.abs(rel.observed[ok] - rel.predicted[ok]) < 4 * rel.stderr[ok] + 1e-3)
    assert expected_calibration_error(rel) < 0.01
    sharp = np.clip(0.5 + 1.8 * (p - 0.5), 0.001, 0.999)                        # overconfident
    assert expected_calibration_error(reliability(sharp, y)) > 0.1
    assert log_loss(sharp, y) > log_loss(p, y) and brier(sharp, y) > brier(p, y)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=50), st.integers(0, 2**31))
def test_scores_are_in_range(ps, seed):
    p = np.array(ps)
    y = np.random.default_rng(seed).random(p.size) < 0.5
    assert 0 <= brier(p, y) <= 1 and log_loss(p, y) >= 0
    rel = reliability(p, y)
    assert rel.count.sum() == p.size
    t = reliability_table({"a": p}, y)["a"]
    assert 0 <= t["ece"] <= 1 and t["clicks"] == p.size


def test_known_values():
    assert np.isclose(log_loss([0.5, 0.5], [1, 0]), np.log(2))
    assert np.isclose(brier([1.0, 0.0], [1, 1]), 0.5)
