import numpy as np
import pytest

from diagnostics.learning_curves import (final_quarter, final_quarter_table, learning_curve, moving_mean,
                                         plot_learning_curves)


def _row(seed, excess, floor=1.0):
    excess = np.asarray(excess, dtype=float)
    return {"seed": seed, "per_user": {"regret": list(excess + floor), "floor": [floor] * len(excess),
                                       "random": [9.0] * len(excess)}}


def test_moving_mean_is_centred_and_exact():
    x = np.arange(10.0)
    np.testing.assert_allclose(moving_mean(x, 5), np.arange(2.0, 8.0))


def test_curve_band_and_final_quarter():
    rng = np.random.default_rng(0)
    N = 100
    trend = np.linspace(4.0, 1.0, N)
    rows = [_row(s, trend + rng.normal(0, 0.5, N)) for s in range(6)]
    c = learning_curve(rows, window=25)
    assert len(c.mean) == N - 24 and c.arrival[0] == 12 and c.n_seeds == 6
    assert np.all(c.lo <= c.mean) and np.all(c.mean <= c.hi)
    assert abs(c.mean[0] - trend[:25].mean()) < 0.5 and c.mean[0] > c.mean[-1]
    fq = final_quarter(rows)
    np.testing.assert_allclose(fq, [np.sum(np.asarray(r["per_user"]["regret"][75:]) - 1.0) for r in rows])


def test_final_quarter_gain_is_paired_and_signed():
    rows_a = [_row(s, np.full(40, 1.0 + 0.01 * s)) for s in range(5)]
    rows_b = [_row(s, np.full(40, 2.0 + 0.01 * s)) for s in range(5)]
    lines = {ln["name"]: ln for ln in final_quarter_table({"a": rows_a, "b": rows_b}, against="b")}
    assert lines["a"]["gain"]["gain"] == pytest.approx(1 - np.mean([1.0 + 0.01 * s for s in range(5)])
                                                       / np.mean([2.0 + 0.01 * s for s in range(5)]))
    assert "gain" not in lines["b"]


def test_runs_of_different_lengths_are_refused(tmp_path):
    with pytest.raises(ValueError, match="different lengths"):
        learning_curve([_row(0, np.ones(30)), _row(1, np.ones(40))])
    c = learning_curve([_row(0, np.ones(30)), _row(1, np.ones(30))])
    plot_learning_curves({"x": c}, "t", tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 1000
