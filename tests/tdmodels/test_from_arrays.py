"""Bring your own world: U (and P, or a stated click model) become a valid world."""
import numpy as np
import pytest

from online.replay import replay
from tdmodels.from_arrays import btl_probs, world_from_arrays
from tdmodels.world import WorldFormatError, load_world, save_world, world_digest


def _U(n_s=5, n_q=30, K=6, seed=0):
    return np.random.default_rng(seed).uniform(size=(n_s, n_q, K))


def test_a_world_from_utilities_alone_replays(tmp_path):
    w = world_from_arrays(_U(), name="mine", arrivals=12, session_length=10)
    assert w.attrs["click_model"] == "btl beta=11.0 clip=0.1" and int(w.attrs["rater_available"]) == 0
    back = load_world(save_world(w, tmp_path / "mine.nc"))
    assert world_digest(back) == world_digest(w)
    row = replay(back, 0, "no-transfer")
    assert row["arrivals"] == 12 and row["rounds"] == 10


def test_btl_click_model():
    U = np.array([[0.0, 0.1, 1.0]])
    P = btl_probs(U, beta=11.0, clip=0.1)
    assert P[0, 0, 1] == pytest.approx(1 / (1 + np.exp(1.1))) and P[0, 2, 0] == 0.9 and P[0, 0, 2] == 0.1
    np.testing.assert_allclose(P + np.swapaxes(P, -1, -2), 1.0)


def test_given_probs_fix_beta_by_fit_and_rater_is_standardised():
    U = _U()
    P = btl_probs(U, beta=7.0, clip=0.0)
    rater = np.random.default_rng(1).normal(3.0, 5.0, size=(30, 6))
    w = world_from_arrays(U, P, rater=rater, personas=list("ABCDEF"))
    assert float(w.attrs["beta"]) == pytest.approx(7.0, rel=1e-3) and int(w.attrs["rater_available"]) == 1
    g = w["features"].values[:, :, -1]
    np.testing.assert_allclose(g.mean(1), 0, atol=1e-12)
    np.testing.assert_allclose(g.std(1), 1)


@pytest.mark.parametrize("kwargs, words", [
    ({"utilities": np.zeros((2, 3))}, "expected 3"),
    ({"utilities": np.full((2, 5, 6), "x")}, "expected numbers"),
    ({"utilities": _U(K=2)}, "at least 3 personas"),
    ({"utilities": _U() * 2}, "outside [0, 1]"),
    ({"utilities": _U(), "probs": np.full((5, 30, 6, 6), 1.5)}, "outside the open interval"),
    ({"utilities": _U(), "probs": np.full((5, 30, 6, 5), 0.5)}, "to match utilities"),
    ({"utilities": _U(), "name": "../x"}, "world name"),
    ({"utilities": _U(), "beta": float("nan")}, "beta"),
    ({"utilities": _U(), "session_length": 31}, "session_length"),
    ({"utilities": _U(), "arrivals": 0}, "arrivals"),
    ({"utilities": _U(), "arrival_mode": "distinct", "arrivals": 6}, "cannot fill"),
    ({"utilities": _U(), "personas": ["A"] * 6}, "appears 6 times"),
    # issue 28: each used to pass, or to fail naming the wrong field
    ({"utilities": _U(), "held_out": "no"}, "held_out 'no': must be True or False"),
    ({"utilities": _U(), "rater": np.full((30, 6), np.nan)}, "rater: non-finite value nan"),
    ({"utilities": _U(), "probs": 1 - btl_probs(_U())}, "P does not rise with U"),
    ({"utilities": _U(), "probs": np.full((5, 30, 6, 6), 0.5)}, "P does not rise with U"),
    ({"utilities": _U(), "probs": 0.5 + 1e-9 * (btl_probs(_U()) - 0.5)}, "at the edge of its search range"),
    ({"utilities": np.where(np.arange(6) == 0, np.nan, _U())}, "utilities: non-finite value nan"),
    ({"utilities": np.full((5, 30, 6), np.nan)}, "utilities: non-finite value nan"),
    ({"utilities": np.zeros((0, 30, 6))}, "0 students"),
    ({"utilities": _U(), "arrivals": 10**12}, "arrivals 1000000000000: must be an integer in [1, 1,000,000]"),
])
def test_bad_arrays_are_refused_naming_the_field(kwargs, words):
    with pytest.raises(WorldFormatError) as e:
        world_from_arrays(**kwargs)
    assert words in str(e.value)


def test_ordered_arrivals_take_the_students_in_the_arrays_order_and_need_one_per_arrival():
    from online.schedule import make_schedule

    U = np.random.default_rng(0).uniform(0, 1, (5, 12, 4))
    w = world_from_arrays(U, session_length=6, arrival_mode="ordered")
    assert make_schedule(w, 3).student.tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(WorldFormatError, match="cannot fill 6 ordered arrivals"):
        world_from_arrays(U, session_length=6, arrival_mode="ordered", arrivals=6)
    with pytest.raises(WorldFormatError, match="use 'uniform', 'distinct' or 'ordered'"):
        world_from_arrays(U, session_length=6, arrival_mode="fixed")


@pytest.mark.parametrize("kw", [{"beta": "abc"}, {"clip": "x"}, {"beta": True}, {"beta": float("nan")}])
def test_the_click_model_settings_are_numbers_named_when_not(kw):
    from tdmodels.from_arrays import btl_probs, world_from_arrays
    from tdmodels.world import WorldFormatError

    U = np.random.default_rng(0).uniform(0.2, 0.8, (4, 5, 3))
    name = next(iter(kw))
    for probs in (None, btl_probs(U)):
        with pytest.raises(WorldFormatError, match=f"click model: {name}"):
            world_from_arrays(U, probs=probs, name="m", session_length=5, **kw)


def test_a_text_file_named_npz_is_named_as_not_a_npz_file(tmp_path):
    """It had been reported as 'This file contains pickled (object) data'."""
    from tdmodels.from_arrays import read_arrays

    (tmp_path / "notzip.npz").write_text("hello")
    with pytest.raises(WorldFormatError, match="not a .npz file"):
        read_arrays(tmp_path / "notzip.npz")
