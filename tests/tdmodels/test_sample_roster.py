"""The real-session roster: the sample's recorded sessions resampled into a held-out 350-arrival roster."""
import numpy as np
import pytest

from tdmodels.errors import InputError
from tdmodels.roster_digests import published_digest
from tdmodels.rosters import HeldOutError, open_world
from tdmodels.sample import load_sample
from tdmodels.sample_roster import (GENERATOR, real_session_roster, resample_name, resample_of,
                                    resampled_schedule)
from tdmodels.world import load_world, save_world, world_digest


@pytest.fixture(scope="module")
def sample(sample_path):
    return load_sample(sample_path)


def test_every_arrival_replays_one_recorded_session_whole(sample):
    world = real_session_roster(sample, 0)
    st, sq = sample["schedule_student"].values, sample["schedule_question"].values
    recorded = {tuple(q): s for s, q in zip(st, sq)}
    assert world.sizes["arrival"] == 350 and int(world.attrs["held_out"]) == 1
    for s, q in zip(world["schedule_student"].values, world["schedule_question"].values):
        assert recorded[tuple(q)] == s           # its questions, asked in order, by the profile that asked them
    for name in ("probs", "utilities", "features", "question_text"):
        assert world[name].equals(sample[name])


def test_profiles_are_drawn_uniformly_then_sessions_uniformly_within_them():
    profiles = np.repeat(np.arange(4), [1, 2, 3, 10])            # unequal numbers of recorded sessions
    pick = np.concatenate([resampled_schedule(profiles, r, 2000) for r in range(3)])
    share = np.bincount(profiles[pick], minlength=4) / len(pick)
    np.testing.assert_allclose(share, 0.25, atol=0.02)          # by profile, not by session
    within = np.bincount(pick[profiles[pick] == 3], minlength=16)[6:] / np.sum(profiles[pick] == 3)
    np.testing.assert_allclose(within, 0.1, atol=0.025)


def test_a_resample_is_its_seed_alone_and_has_a_published_digest(sample):
    a, b = real_session_roster(sample, 0), real_session_roster(sample, 0)
    assert world_digest(a) == world_digest(b) == published_digest(GENERATOR, "real-sessions-0")
    assert world_digest(real_session_roster(sample, 1)) == published_digest(GENERATOR, "real-sessions-1")
    assert not np.array_equal(a["schedule_question"].values, real_session_roster(sample, 1)["schedule_question"].values)


def test_names_and_bad_inputs(sample):
    assert resample_name(12) == "real-sessions-12" and resample_of("real-sessions-12") == 12
    for name in ("real-sessions-", "real-sessions-01", "real-sessions-1x", "dev", "real-sessions-1234567"):
        assert resample_of(name) is None
    for bad in (-1, True, 1.0, 10**7, "0"):
        with pytest.raises(InputError, match="resample"):
            real_session_roster(sample, bad)
    with pytest.raises(InputError, match="arrivals"):
        real_session_roster(sample, 0, arrivals=0)
    with pytest.raises(InputError, match="recorded sessions"):
        real_session_roster(real_session_roster(sample, 0).drop_vars(["schedule_student"]), 0)


def test_open_world_resamples_the_imported_sample_on_first_use_and_keeps_it_held_out(sample, tmp_path):
    with pytest.raises(HeldOutError):
        open_world("real-sessions-3", directory=tmp_path)
    with pytest.raises(FileNotFoundError, match="import-sample"):
        open_world("real-sessions-3", allow_test=True, directory=tmp_path)
    save_world(sample, tmp_path / "sample.nc")
    world = open_world("real-sessions-3", allow_test=True, directory=tmp_path)
    assert (tmp_path / "real-sessions-3.nc").exists()
    assert world_digest(world) == world_digest(real_session_roster(sample, 3))
    assert world_digest(load_world(tmp_path / "real-sessions-3.nc")) == world_digest(world)


def test_a_file_named_like_a_resample_that_is_not_it_is_refused(sample, tmp_path):
    from tdmodels.world import WorldFormatError

    save_world(sample, tmp_path / "sample.nc")
    save_world(real_session_roster(sample, 1), tmp_path / "real-sessions-0.nc")      # resample 1 under 0's name
    with pytest.raises(WorldFormatError, match="not the resample"):
        open_world("real-sessions-0", allow_test=True, directory=tmp_path)
