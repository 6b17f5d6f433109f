"""Recovery curves: the positions within a block are the switched blocks' k-th arrivals, each point is the
benchmark score over them, the band is over seeds, and a world without a change has no curve."""
import numpy as np
import pytest

from diagnostics.recovery_curves import block_positions, plot_recovery, recovery_curve
from diagnostics.segments import masked_score
from diagnostics.stats import t_interval
from online.replay import replay
from tdmodels.stress_knobs import StressKnobs
from tdmodels.stress_worlds import build_stress_world


def test_a_position_is_the_same_arrival_of_every_block_after_a_switch_up_to_the_shortest_block():
    seg = np.array([0] * 5 + [1] * 3 + [2] * 4)
    masks = block_positions(seg)
    assert [np.flatnonzero(m).tolist() for m in masks] == [[5, 8], [6, 9], [7, 10]]
    assert len(block_positions(seg, max_span=2)) == 2
    assert block_positions(np.zeros(7, dtype=int)) == []


def _row(seed, regret):
    n = len(regret)
    return {"seed": seed, "arrivals": n, "per_user": {"regret": list(regret), "floor": [0.0] * n, "random": [2.0] * n}}


def test_each_point_is_the_score_over_those_arrivals_with_a_t_band_over_seeds():
    w = build_stress_world(StressKnobs(arrivals=12, block_length=4), 0, "s")
    seg = w["student_segment"].values
    assert seg.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    rng = np.random.default_rng(0)
    rows = [_row(s, rng.uniform(0.0, 2.0, 12)) for s in range(5)]
    c = recovery_curve(rows, w)
    assert c.position.tolist() == [1, 2, 3, 4] and c.n_seeds == 5 and c.blocks == 2
    for k, m in enumerate(block_positions(seg)):
        scores = [masked_score(r, m) for r in rows]
        mean, h = t_interval(scores)
        assert c.mean[k] == pytest.approx(mean) and c.lo[k] == pytest.approx(mean - h) and c.hi[k] == pytest.approx(mean + h)
    one = recovery_curve(rows[:1], w)
    assert np.isnan(one.lo).all() and np.isfinite(one.mean).all()


def test_no_curve_without_a_change_and_a_real_run_gives_a_figure(tmp_path):
    steady = build_stress_world(StressKnobs(arrivals=12), 0, "s")
    assert recovery_curve([replay(steady, 0, "no-transfer")], steady) is None
    assert recovery_curve([], steady) is None
    drift = build_stress_world(StressKnobs(arrivals=16, block_length=8), 0, "d")
    curves = {p: recovery_curve([replay(drift, s, p) for s in (0, 1)], drift) for p in ("no-transfer", "coduel")}
    assert all(np.isfinite(c.mean).all() and len(c.mean) == 8 for c in curves.values())
    plot_recovery(curves, "d: recovery after a change", tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
