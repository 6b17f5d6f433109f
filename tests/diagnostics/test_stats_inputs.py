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
