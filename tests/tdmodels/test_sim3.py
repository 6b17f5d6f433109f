"""sim-3's structural changes, each on its own: what it changes in a roster and the statistic it is there to move."""
import json

import numpy as np
import pytest

from diagnostics.variance_shares import variance_shares
from tdmodels import students
from tdmodels.errors import InputError
from tdmodels.rosters import read_simulator_file
from tdmodels.simulator import build_roster
from tdmodels.simulator_params import SIM2_PARAMS, SIM3_PARAMS, base_of, generator_version
from tdmodels.world import WorldFormatError

QUIET = SIM2_PARAMS._replace(judge_noise=0.3, answer_noise=0.0)


def _profile_means(world) -> dict[str, np.ndarray]:
    """Each profile's mean utility per persona over every question."""
    prof = np.asarray(world["student_profile"].values).astype(str)
    U = world["utilities"].values
    return {p: U[prof == p].mean((0, 1)) for p in np.unique(prof)}


def test_fresh_arrivals_give_each_arrival_its_own_row_and_cells():
    world = build_roster("test_profiles", params=SIM2_PARAMS._replace(fresh_arrivals=1.0))
    assert world.sizes["student"] == 350 and world.attrs["arrival_mode"] == "distinct"
    prof = np.asarray(world["student_profile"].values).astype(str)
    counts = np.unique(prof, return_counts=True)[1]
    assert len(counts) == 8 and counts.min() >= 25 and counts.max() <= 65      # profiles drawn uniformly
    first, second = np.flatnonzero(prof == prof[0])[:2]
    U = world["utilities"].values
    assert not np.allclose(U[first], U[second])          # a recurring profile is judged afresh, not replayed
    sim2 = build_roster("test_profiles", params=SIM2_PARAMS)
    assert sim2.sizes["student"] == 8 and sim2.attrs["arrival_mode"] == "uniform"


def _follow_signs(world) -> np.ndarray:
    """Per student: the sign of the correlation of its question-dependent utilities with the rater's g."""
    U = world["utilities"].values
    g = world["features"].values[:, :, -1]
    dev = U - U.mean(1, keepdims=True) - U.mean(2, keepdims=True) + U.mean((1, 2), keepdims=True)
    return np.array([np.sign(np.corrcoef(d.ravel(), g.ravel())[0, 1]) for d in dev])


@pytest.mark.slow
def test_signed_rater_following_makes_some_students_go_against_the_rater():
    every = _follow_signs(build_roster("composite", params=QUIET))
    assert np.mean(every > 0) > 0.95                      # sim-2: every student follows the rater
    signed = _follow_signs(build_roster("composite", params=QUIET._replace(follow_mean=0.0, follow_sd=1.0)))
    assert 0.25 < np.mean(signed < 0) < 0.75


@pytest.mark.slow
def test_within_type_variation_spreads_the_students_of_one_profile():
    def spread(params):
        world = build_roster("dev", params=params)
        prof = np.asarray(world["student_profile"].values).astype(str)
        means = world["utilities"].values.mean(1)                       # [students, K]
        return np.mean([means[prof == p].std(0).mean() for p in np.unique(prof)])
    base = SIM2_PARAMS._replace(fresh_arrivals=1.0)
    assert spread(base._replace(type_sd=1.0)) > 2 * spread(base)


def test_the_held_out_profiles_take_the_samples_preferences():
    params = QUIET._replace(fresh_arrivals=1.0, sample_profiles=1.0, sample_profile_gain=2.0, sample_lean_gain=2.0,
                            written_sens_gain=0.2)
    means = _profile_means(build_roster("test_profiles", params=params))
    same = [int(np.argmax(means[p])) == int(np.argmax(students.SAMPLE_PROFILE_MEANS[p])) for p in means]
    assert sum(same) >= 7, same
    corr = [np.corrcoef(means[p], students.SAMPLE_PROFILE_MEANS[p])[0, 1] for p in means]
    assert np.mean(corr) > 0.8
    hand = _profile_means(build_roster("test_profiles", params=QUIET))       # sim-2's written tastes
    assert np.mean([np.corrcoef(hand[p], students.SAMPLE_PROFILE_MEANS[p])[0, 1] for p in hand]) < np.mean(corr)


@pytest.mark.slow
def test_the_samples_lean_moves_the_persona_main_effect():
    base = SIM2_PARAMS._replace(fresh_arrivals=1.0, sample_profiles=1.0)
    weak = variance_shares(build_roster("test_profiles", params=base), 0, 48)["persona main effect"]
    strong = variance_shares(build_roster("test_profiles", params=base._replace(sample_lean_gain=3.0)), 0, 48)
    assert strong["persona main effect"] > weak + 0.05


def test_the_sample_profiles_table_is_the_samples(sample_path):
    from tdmodels.sample import load_sample

    sample = load_sample(sample_path)
    st, sq = sample["schedule_student"].values, sample["schedule_question"].values
    U = sample["utilities"].values
    keys = list(map(str, sample["student_profile"].values))
    ours = list(students.SAMPLE_PROFILE_MEANS)        # in the sample's profile order (A0 ... A7)
    for k in range(8):
        cells = np.stack([U[st[a], q] for a in range(len(st)) if st[a] == k for q in sq[a]])
        np.testing.assert_allclose(students.SAMPLE_PROFILE_MEANS[ours[k]], cells.mean(0), atol=5e-4,
                                   err_msg=f"{keys[k]} -> {ours[k]}")


def test_parameters_and_generator_names():
    assert base_of(SIM2_PARAMS) == "sim-2" and generator_version(SIM3_PARAMS) == "sim-3"
    assert generator_version(SIM3_PARAMS._replace(type_sd=0.4)).startswith("sim-3+")
    assert generator_version(SIM2_PARAMS._replace(judge_noise=0.9)).startswith("sim-2+")
    for bad in (dict(fresh_arrivals=0.5), dict(sample_profiles=2.0), dict(follow_sd=-1.0), dict(type_sd=-0.1)):
        with pytest.raises(InputError, match=next(iter(bad))):
            SIM3_PARAMS._replace(**bad).check()
    SIM3_PARAMS._replace(follow_mean=-0.5, sample_lean_gain=-1.0).check()          # signed: any sign


def test_a_simulator_file_leaves_out_what_its_base_gives(tmp_path):
    path = tmp_path / "simulator.json"
    params = SIM3_PARAMS._replace(type_sd=0.4)
    path.write_text(json.dumps({"generator": generator_version(params), "params": {"type_sd": 0.4}}))
    assert read_simulator_file(path) == params
    path.write_text(json.dumps({"generator": "sim-9", "params": {}}))
    with pytest.raises(WorldFormatError, match="sim-9"):
        read_simulator_file(path)
    path.write_text(json.dumps({"params": {"judge_noise": 0.9}}))                 # no generator: sim-2's
    assert read_simulator_file(path) == SIM2_PARAMS._replace(judge_noise=0.9)
