"""The statistics refuse what is not a seed-by-seed sample, instead of broadcasting or averaging it."""
import math

import numpy as np
import pytest

from diagnostics.stats import mean_se, paired_gain, t_interval
from tdmodels.errors import InputError


@pytest.mark.parametrize("a, b, match", [
    ([10., 12., 14.], [20.], "3 values of A against 1 of B"),
    ([10.], [20., 30., 40.], "1 values of A against 3"),
    ([[1., 2.], [3., 4.]], [[2., 3.], [4., 5.]], "1-D"),
    ([], [], "non-empty"),
    (["10", "12"], ["20", "22"], "dtype"),
    ([True, False], [1., 2.], "dtype"),
    ([10., 11., 12.], [20., math.inf, 22.], "finite"),
    ([10., math.nan], [20., 22.], "finite"),
    ([1., 2.], [-3., -4.], "never below 0"),
    ([1., 2.], [0., 0.], "undefined"),
])
def test_paired_gain_refuses_what_is_not_paired_excess_regret(a, b, match):
    with pytest.raises(InputError, match=match):
        paired_gain(a, b)


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.1, True, "0.95", math.nan])
def test_an_interval_level_lies_strictly_between_0_and_1(level):
    with pytest.raises(InputError, match="level"):
        paired_gain([1., 2.], [2., 3.], level=level)
    with pytest.raises(InputError, match="level"):
        t_interval([1., 2., 3.], level=level)


def test_t_interval_and_mean_se_take_one_sample_of_numbers():
    with pytest.raises(InputError, match="1-D"):
        t_interval([[1., 2., 3.], [4., 5., 7.]])
    for bad in ([], ["1", "2"], np.zeros((2, 2))):
        with pytest.raises(InputError):
            mean_se(bad)
    m, h = t_interval([1., 2., 4.])
    assert m == pytest.approx(7 / 3) and h == pytest.approx(4.303 * np.std([1, 2, 4], ddof=1) / np.sqrt(3), rel=1e-3)
    assert np.isnan(mean_se([3.])[1]) and mean_se(np.arange(4))[0] == 1.5
    g = paired_gain([1., 2.], [2., 4.])
    assert g["gain"] == pytest.approx(0.5) and g["n"] == 2
    assert paired_gain([0., -1e-12], [1., 2.])["n"] == 2          # rounding just below 0 is an excess of 0


def test_a_leaderboard_is_of_one_world_one_truncation_one_row_per_policy_and_seed(dev_world):
    from diagnostics.stats import leaderboard
    from online.replay import replay

    base = {"policy": "p", "seed": 0, "score": 10.0, "excess": 5.0, "wall_s": 1.0, "code": {"digest": "a"}}
    with pytest.raises(InputError, match="world_digest"):
        leaderboard([base, dict(base, seed=1, world_digest="other")])
    with pytest.raises(InputError, match="arrivals_limit"):
        leaderboard([dict(base, arrivals_limit=3), dict(base, seed=1, arrivals_limit=None)])
    with pytest.raises(InputError, match="two rows of 'p' for seed 0"):
        leaderboard([base, dict(base, score=90.0)])
    row = replay(dev_world, 0, "random", arrivals=3)
    with pytest.raises(InputError, match="not on the world given"):
        leaderboard([dict(row, world_digest="0" * 16)], dev_world, 3)
    assert [ln["name"] for ln in leaderboard([row], dev_world, 3)][0] == "random"


def test_scores_over_arrivals_without_random_excess_are_undefined():
    from diagnostics.segments import masked_score

    row = {"per_user": {"regret": [1.0, 0.0], "floor": [0.5, 0.0], "random": [2.0, 0.0]}}
    assert masked_score(row, np.array([True, False])) == pytest.approx(100 * (2 - 1) / (2 - 0.5))
    assert np.isnan(masked_score(row, np.array([False, True])))


def test_reliability_refuses_predictions_outside_0_1_and_clicks_that_are_not_0_or_1():
    from diagnostics.click_reliability import brier, log_loss, reliability, reliability_table

    with pytest.raises(InputError, match="0 or 1"):
        reliability_table({"a": np.array([.2, .9])}, np.array([2, -1]))
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        reliability([np.nan, .4, .9], [1, 0, 1])
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        brier([1.2, .4], [1, 0])
    with pytest.raises(InputError, match="one prediction per click"):
        log_loss([.5, .5], [1, 0, 1])
    with pytest.raises(InputError, match="bins"):
        reliability([.5], [1], bins=0)
    assert log_loss([.5, .5], [1, 0]) == pytest.approx(np.log(2))


def test_strong_regret_refuses_a_persona_index_outside_the_personas():
    from online.scoring import strong_regret

    U = np.array([[0.1, 0.5, 0.9]])
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        strong_regret(U, np.array([-1]), np.array([0]))
    with pytest.raises(ValueError, match="integers"):
        strong_regret(U, np.array([0.0]), np.array([1]))
    assert strong_regret(U, np.array([2]), np.array([1]))[0] == pytest.approx(0.4)


def test_learning_curves_refuse_a_window_below_1_and_a_run_without_a_final_quarter():
    from diagnostics.learning_curves import final_quarter, learning_curve

    row = {"per_user": {"regret": [1.0, 2.0, 3.0], "floor": [0.0] * 3, "random": [4.0] * 3}}
    with pytest.raises(InputError, match="window"):
        learning_curve([row], window=-2)
    with pytest.raises(InputError, match="no final quarter"):
        final_quarter([row])


def test_stats_on_runs_of_three_arrivals_prints_no_final_quarter_of_none(env_dirs, capsys):
    """It had printed 'final quarter (last 0 arrivals) ... 0.0 ± 0.0' and a NaN gain."""
    from tutorduel.cli import main

    assert main(["replay", "--world", "dev", "--seeds", "0-1", "--arrivals", "3", "--policies",
                 "random,no-transfer"]) == 0
    capsys.readouterr()
    assert main(["stats", "--world", "dev", "--arrivals", "3", "--against", "random"]) == 0
    out = capsys.readouterr().out
    assert "final quarter" not in out and "nan" not in out and "no-transfer: " in out


@pytest.mark.parametrize("kw, match", [
    (dict(stats={}), "at least one figure"),
    (dict(stats={"a": [1., 2.], "b": [1., 2., 3.]}), "one value per session"),
    (dict(stats={"a": [[1., 2.], [3., 4.]]}), "one value per session"),
    (dict(stats={"a": [1., math.nan, 2.]}), "non-finite"),
    (dict(stats={"a": [1., 2., 3.]}, draws=0), "draws"),
    (dict(stats={"a": [1., 2., 3.]}, draws=2.5), "draws"),
    (dict(stats={"a": [1., 2., 3.]}, level=1.5), "level"),
])
def test_a_bootstrap_over_sessions_refuses_what_is_not_one_finite_value_per_session(kw, match):
    from diagnostics.calibration_targets import bootstrap_means
    with pytest.raises(InputError, match=match):
        bootstrap_means(**kw)


@pytest.mark.parametrize("x, window", [([1., 2., 3.], 0), ([1., 2., 3.], 4), ([1., 2., 3.], 1.5), ([], 1),
                                       ([[1., 2.], [3., 4.]], 1)])
def test_a_moving_mean_needs_a_window_that_fits_a_series(x, window):
    from diagnostics.learning_curves import moving_mean
    with pytest.raises(InputError):
        moving_mean(np.asarray(x, dtype=float), window)
