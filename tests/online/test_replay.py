import numpy as np
import pytest

from online.protocol import PolicyOutputError
from online.replay import replay, replay_logged
from online.schedule import make_schedule
from tests.online.helpers import BAD_VALUES

ARR = 20


def comparable(row):
    return {k: v for k, v in row.items() if k not in ("wall_s", "versions")}


def test_schedule_depends_on_world_and_seed_only(dev_world):
    a, b = make_schedule(dev_world, 3), make_schedule(dev_world, 3)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = make_schedule(dev_world, 4)
    assert not np.array_equal(a.uniform, c.uniform)
    # a truncated run is a prefix of the full one
    short = make_schedule(dev_world, 3, arrivals=10)
    np.testing.assert_array_equal(short.question, a.question[:10])
    np.testing.assert_array_equal(short.uniform, a.uniform[:10])


def test_sessions_follow_the_recipe(dev_world):
    sch = make_schedule(dev_world, 0, arrivals=5)
    kinds = dev_world["question_kind"].values[sch.question]
    assert (kinds[:, 0::3] == "definition").all() and (kinds[:, 2::3] == "why").all()
    topics = dev_world["question_topic"].values[sch.question]
    assert all(len(set(t)) == 4 for t in topics)


def test_identical_pairs_get_identical_clicks(dev_world):
    """Common random numbers: two different policies agree on every click where they show the same pair."""
    _, a = replay_logged(dev_world, 1, "tests.online.helpers:FixedPairs", arrivals=ARR)
    _, b = replay_logged(dev_world, 1, "tests.online.helpers:FixedPairs[cycle=[[0,1],[3,2],[4,5],[5,4]]]", arrivals=ARR)
    pa, pb = np.stack([a.first, a.second], -1), np.stack([b.first, b.second], -1)
    same = (pa == pb).all(-1)
    assert same.any() and (~same).any()
    oa, ob = a.outcome, b.outcome
    np.testing.assert_array_equal(oa[same], ob[same])
    # and the click is exactly u < P[s, q, i, j]
    sch = make_schedule(dev_world, 1, arrivals=ARR)
    P = dev_world["probs"].values[sch.student[:, None], sch.question, pa[..., 0], pa[..., 1]]
    np.testing.assert_array_equal(oa, (sch.uniform < P).astype(int))


def test_rerun_gives_the_same_row_bit_for_bit(dev_world):
    for spec in ("random", "no-transfer"):
        r1, r2 = replay(dev_world, 5, spec, arrivals=ARR), replay(dev_world, 5, spec, arrivals=ARR)
        assert comparable(r1) == comparable(r2)


def test_row_contents(dev_world):
    row = replay(dev_world, 0, "no-transfer", arrivals=ARR)
    assert row["arrivals"] == ARR and row["rounds"] == 24
    assert len(row["per_user"]["regret"]) == ARR and len(row["per_round"]["regret"]) == 24
    assert row["excess"] == pytest.approx(row["regret"] - row["floor"])
    assert sum(row["per_user"]["regret"]) == pytest.approx(row["regret"])
    assert row["floor"] <= row["regret"]
    assert row["settings"] == {"prior_var": 4.0, "belief": "laplace"} and "numpy" in row["versions"]   # defaults filled in
    assert len(row["code"]["digest"]) == 12 and "online.policies.no_transfer" in row["code"]["modules"]


def test_policy_cannot_change_the_world(dev_world):
    with pytest.raises(ValueError, match="read-only"):
        replay(dev_world, 0, "tests.online.helpers:Mutator", arrivals=2)


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_invalid_policy_output_names_policy_arrival_round_value(dev_world, case):
    value, words = BAD_VALUES[case]
    spec = "tests.online.helpers:BadOutput"
    pol_spec = f"{spec}[value={_json(value)}]"
    with pytest.raises(PolicyOutputError) as e:
        replay(dev_world, 0, pol_spec, arrivals=5)
    msg = str(e.value)
    assert words in msg and "arrival 2, round 5" in msg and "BadOutput" in msg


def _json(v):
    import json
    if isinstance(v, (np.floating,)):
        return "1.0"
    return json.dumps(v if not isinstance(v, tuple) else list(v))


@pytest.mark.parametrize("out", [{3, 1}, {1: "a", 3: "b"}, iter((1, 3)), (i for i in (1, 3)), np.array([[1, 3]])])
def test_a_pair_without_a_first_and_a_second_is_refused(out):
    """A set, a dict or an iterator had been taken as a pair, in whatever order it iterated."""
    from online.protocol import check_pair

    with pytest.raises(PolicyOutputError, match="a tuple, list or 1-D array"):
        check_pair(out, 6, "p", 0, 0)
    assert check_pair([1, 3], 6, "p", 0, 0) == (1, 3) == check_pair(np.array([1, 3]), 6, "p", 0, 0)


def test_an_error_a_policy_raises_says_where_it_was_raised(dev_world):
    """The policy's own exception, unchanged, with a note naming the arrival and round (it had come bare)."""
    with pytest.raises(RuntimeError, match="boom") as e:
        replay(dev_world, 0, "tests.online.helpers:Exploding", arrivals=5)
    assert e.value.__notes__ == ["raised while policy 'tests.online.helpers:Exploding' played arrival 0, round 0"]
