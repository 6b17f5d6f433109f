"""Stress worlds: each knob does what it says, bad knobs are one clear error, segments and ordered arrivals
hold, and `tutorduel worlds stress` builds, keeps and refuses as documented."""
import numpy as np
import pytest

from online.schedule import make_schedule
from tdmodels.errors import InputError
from tdmodels.from_arrays import DEFAULT_CLIP
from tdmodels.portable_math import expit
from tdmodels.roster_digests import published_digest
from tdmodels.stress_knobs import CAMP_DISTANCE, SPREAD, STRESS_PRESETS, StressKnobs, preset_knobs, segment_starts
from tdmodels.stress_worlds import GENERATOR, build_stress_world, stress_knobs_of, student_tastes
from tdmodels.world import WorldFormatError, validate_world, world_digest
from tutorduel.cli import main

SMALL = StressKnobs(arrivals=40)


def _tastes(knobs, seed=0):
    return student_tastes(StressKnobs(*knobs).check(), np.random.default_rng(seed), 6)


@pytest.mark.parametrize("knob, value", [("arrivals", 0), ("arrivals", 10**6), ("arrivals", 3.0), ("arrivals", True),
                                         ("types", 0), ("tightness", -0.1), ("tightness", float("nan")),
                                         ("polarisation", 1.5), ("shift_at", float("inf")), ("unstructured", "half"),
                                         ("rater", 9.0), ("noise", None), ("block_length", -1)])
def test_a_knob_out_of_range_is_one_error_naming_it(knob, value):
    with pytest.raises(InputError, match=f"stress knob {knob} = "):
        StressKnobs(**{knob: value}).check()


def test_drift_and_shift_together_and_a_shift_with_no_arrival_after_it_are_refused():
    with pytest.raises(InputError, match="drifts in blocks or shifts once"):
        StressKnobs(block_length=10, shift_at=0.5).check()
    with pytest.raises(InputError, match="at least one arrival on each side"):
        StressKnobs(arrivals=3, shift_at=0.9).check()


def test_the_same_knobs_and_seed_build_the_same_world_and_another_seed_another():
    a, b = build_stress_world(SMALL, 3, "s"), build_stress_world(SMALL, 3, "s")
    assert world_digest(a) == world_digest(b)
    assert world_digest(build_stress_world(SMALL, 4, "s")) != world_digest(a)
    assert stress_knobs_of(a) == SMALL.check() and stress_knobs_of(validate_world(a)) is not None


def test_every_preset_builds_its_published_digest():
    for name, (knobs, description) in STRESS_PRESETS.items():
        assert world_digest(build_stress_world(knobs, 0, name, description)) == published_digest(GENERATOR, name), name


def test_utilities_are_the_students_linear_logits_and_clicks_the_clipped_click_model():
    knobs = SMALL._replace(noise=0.0, rater=1.3)
    w = build_stress_world(knobs, 1, "s")
    rng = np.random.default_rng(np.random.SeedSequence([1, 0x57E55]))      # the generator's stream: g, then tastes
    rng.standard_normal((96, 6))
    theta, _, _ = student_tastes(knobs.check(), rng, 6)
    g = w["features"].values[:, :, 6]
    v = theta[:, None, :] + 1.3 * g[None]
    U, P, beta = w["utilities"].values, w["probs"].values, float(w.attrs["beta"])
    assert np.allclose(beta * (U - 0.5), v - v.mean(-1, keepdims=True), atol=1e-9)
    want = np.clip(expit(v[..., :, None] - v[..., None, :]), DEFAULT_CLIP, 1 - DEFAULT_CLIP)
    off = ~np.eye(6, dtype=bool)
    assert np.allclose(P[..., off], want[..., off], atol=1e-9)
    assert np.all((U >= 0) & (U <= 1)) and g.std(1) == pytest.approx(np.ones(96))


def test_tightness_zero_makes_the_students_of_a_type_identical_and_polarisation_one_makes_two_camps():
    theta, _, labels = _tastes(SMALL._replace(tightness=0.0, types=3))
    for t in set(labels):
        rows = theta[np.array(labels) == t]
        assert np.all(rows == rows[0])
    theta, _, labels = _tastes(SMALL._replace(tightness=0.0, types=4, polarisation=1.0))
    means = np.unique(np.round(theta, 12), axis=0)
    assert len(means) == 2 and np.allclose(means[0], -means[1])
    assert np.linalg.norm(means[0]) == pytest.approx(CAMP_DISTANCE)


def test_drift_draws_fresh_types_per_block_and_shift_turns_them_against_the_first():
    knobs = StressKnobs(arrivals=100, block_length=30, tightness=0.0, types=2)
    theta, segment, labels = _tastes(knobs)
    assert segment_starts(knobs.check()) == [0, 30, 60, 90]
    assert segment.tolist() == sorted(segment.tolist()) and np.bincount(segment).tolist() == [30, 30, 30, 10]
    first, second = {tuple(t) for t in theta[:30]}, {tuple(t) for t in theta[30:60]}
    assert not first & second                                 # no type recurs in a later block
    knobs = StressKnobs(arrivals=100, shift_at=0.4, shift_strength=1.0, tightness=0.0, types=1)
    theta, segment, _ = _tastes(knobs)
    assert np.bincount(segment).tolist() == [40, 60]
    assert np.allclose(theta[40:], -theta[0])                  # full strength: exactly the opposite taste


def test_unstructured_students_have_no_type():
    theta, _, labels = _tastes(StressKnobs(arrivals=400, unstructured=1.0))
    assert all(t.endswith("alone") for t in labels)
    assert theta.std() == pytest.approx(SPREAD, rel=0.1)


def test_students_arrive_in_order_and_an_ordered_world_needs_a_student_per_arrival():
    w = build_stress_world(SMALL, 0, "s")
    sched = make_schedule(w, 5)
    assert sched.student.tolist() == list(range(40))
    assert make_schedule(w, 5, 10).question.tolist() == sched.question[:10].tolist()
    with pytest.raises(InputError, match="arrive once each, in order"):
        make_schedule(w, 0, 41)
    bad = w.copy()
    bad.attrs["arrivals"] = 41
    with pytest.raises(WorldFormatError, match="cannot fill 41 ordered arrivals"):
        validate_world(bad)


@pytest.mark.parametrize("change, words", [
    (lambda w: w.attrs.update(arrival_mode="uniform"), "segments need arrival mode 'ordered'"),
    (lambda w: w.__setitem__("student_segment", ("student", np.arange(40)[::-1].copy())), "must start at 0"),
    (lambda w: w.__setitem__("student_segment", ("student", np.where(np.arange(40) < 20, 0, 2))), "rise by 0 or 1"),
    (lambda w: w.__setitem__("student_segment", ("student", np.zeros(40) + 0.5)), "expected integers"),
])
def test_bad_segments_are_refused_naming_the_field(change, words):
    w = build_stress_world(SMALL._replace(block_length=10), 0, "s").copy()
    change(w)
    with pytest.raises(WorldFormatError, match="student_segment") as e:
        validate_world(w)
    assert words in str(e.value)


def test_the_command_builds_presets_keeps_what_is_built_and_builds_your_own(env_dirs, capsys):
    assert main(["worlds", "stress", "stress-drift", "stress-shift"]) == 0
    out = capsys.readouterr().out
    assert "stress-drift" in out and "10 segment(s)" in out and "(as published)" in out
    assert main(["worlds", "stress", "stress-drift"]) == 0
    assert "is this world already" in capsys.readouterr().out
    assert main(["worlds", "stress", "stress-drift", "--seed", "2"]) == 0
    assert (env_dirs / "worlds" / "stress-drift-seed2.nc").exists()
    assert main(["worlds", "stress", "stress-types", "--name", "mine", "--types", "7", "--arrivals", "60"]) == 0
    from tdmodels.rosters import open_world

    mine = open_world("mine")
    assert stress_knobs_of(mine) == preset_knobs("stress-types")._replace(types=7, arrivals=60)
    capsys.readouterr()
    assert main(["worlds", "stress", "stress-types", "--name", "mine", "--types", "6", "--arrivals", "60"]) == 2
    assert "exists with other content; pass --force" in capsys.readouterr().err
    assert main(["worlds", "stress", "--name", "mine", "--types", "6", "--arrivals", "60", "--force"]) == 0


def test_a_preset_is_built_on_demand_by_name(env_dirs):
    from tdmodels.rosters import known_worlds, open_world

    assert "stress-polarised" in known_worlds()
    w = open_world("stress-polarised")
    assert world_digest(w) == published_digest(GENERATOR, "stress-polarised")


@pytest.mark.parametrize("argv, words", [
    (["--types", "3"], "without --name"),
    (["no-such-preset"], "unknown stress preset 'no-such-preset'"),
    (["--name", "../escape"], "'../escape'"),
    (["--name", "dev"], "a roster's, a preset's, the real sample's or a real-session roster's name"),
    (["--name", "stress-drift", "--types", "9"], "a roster's, a preset's, the real sample's or a real-session roster's name"),
    (["--name", "stress-drift"], "a preset is built by naming it"),
    (["stress-drift", "stress-shift", "--name", "x"], "give at most one preset"),
    (["--name", "x", "--shift-at", "0.5", "--block-length", "10"], "drifts in blocks or shifts once"),
])
def test_bad_stress_commands_are_one_clear_error(env_dirs, capsys, argv, words):
    assert main(["worlds", "stress", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err, err
    assert not list((env_dirs / "worlds").glob("*.nc"))                    # nothing was built


@pytest.mark.parametrize("argv", [["--types", "0"], ["--tightness", "nan"], ["--polarisation", "2"],
                                  ["--arrivals", "-3"], ["--closeness", "nan"], ["--closeness", "1.5"]])
def test_knobs_out_of_range_at_the_command_line_are_usage_errors(env_dirs, capsys, argv):
    with pytest.raises(SystemExit) as e:
        main(["worlds", "stress", "--name", "x", *argv])
    assert e.value.code == 2


def test_a_file_under_a_presets_name_that_is_not_the_preset_is_refused(env_dirs, capsys, tmp_path):
    from tdmodels.rosters import open_world
    from tdmodels.world import save_world

    (env_dirs / "worlds").mkdir()
    save_world(build_stress_world(SMALL, 0, "stress-types"), env_dirs / "worlds" / "stress-types.nc")
    with pytest.raises(WorldFormatError, match="named like the stress preset 'stress-types' but is not it"):
        open_world("stress-types")
    np.savez(tmp_path / "u.npz", utilities=np.random.default_rng(0).uniform(0, 1, (4, 8, 3)))
    assert main(["worlds", "from-arrays", str(tmp_path / "u.npz"), "--name", "stress-polarised",
                 "--session-length", "4"]) == 2
    assert "a stress preset's, the real sample's or a real-session roster's name" in capsys.readouterr().err


def test_a_block_as_long_as_the_run_is_refused_as_no_drift():
    """--arrivals 5 --block-length 6 had built one segment, so the drift knob did nothing."""
    from tdmodels.errors import InputError
    from tdmodels.stress_knobs import StressKnobs

    for arrivals, block in ((5, 6), (5, 5)):
        with pytest.raises(InputError, match="one block and no drift"):
            StressKnobs(arrivals=arrivals, block_length=block).check()
    assert StressKnobs(arrivals=5, block_length=4).check().block_length == 4


def test_a_lookalike_keeps_the_two_favourites_and_puts_every_other_persona_above_them():
    from tdmodels.stress_worlds import lookalike_means

    mu = np.array([[3.0, 2.0, 1.0, 0.0, -1.0, -2.5], [0.0, -1.0, 4.0, 1.0, 2.0, 0.5]])
    like = lookalike_means(mu)
    for m, lk in zip(mu, like):
        top = np.argsort(-m)[:2]
        assert np.array_equal(lk[top], m[top])                          # the clicks between the favourites stay
        rest = np.setdiff1d(np.arange(6), top)
        assert np.all(lk[rest] > m[top].max())                          # every other persona above both
        assert np.argmax(lk) == np.argmin(m)                            # the least favourite is the new favourite


def test_closeness_without_drift_at_the_command_line_is_one_clear_error(env_dirs, capsys):
    assert main(["worlds", "stress", "--name", "x", "--closeness", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "closeness = 0.5" in err and "needs drift" in err and "Traceback" not in err
    assert not list((env_dirs / "worlds").glob("*.nc"))


def test_closeness_needs_drift_and_zero_keeps_the_world_without_the_knob():
    with pytest.raises(InputError, match="closeness = 0.5: .* needs drift"):
        StressKnobs(closeness=0.5).check()
    with pytest.raises(InputError, match="stress knob closeness = "):
        StressKnobs(block_length=10, closeness=1.5).check()
    plain = build_stress_world(SMALL._replace(block_length=10), 0, "s")
    assert stress_knobs_of(plain).closeness == 0.0                      # read back with the knob's default
    assert "closeness" not in str(plain.attrs["stress_knobs"])          # the record of a world built before it
    near = build_stress_world(SMALL._replace(block_length=10, closeness=0.8), 0, "s")
    assert stress_knobs_of(near).closeness == 0.8 and world_digest(near) != world_digest(plain)


def test_a_lookalike_blocks_types_favour_what_the_earlier_types_ranked_last():
    """With closeness 1 every later block's type is the lookalike of the earlier types' mean taste: the two
    personas that mean favours are the block's two least favourite, and its least favourite is the block's
    favourite."""
    from tdmodels.stress_worlds import world_type_means

    knobs = StressKnobs(arrivals=60, types=1, tightness=0.1, block_length=15, closeness=1.0)
    w = build_stress_world(knobs, 2, "s")
    centre = world_type_means(w)
    types = centre[::15]                                                  # one type a block
    for g in range(1, len(types)):
        m = types[:g].mean(0)
        assert set(np.argsort(types[g])[:2]) == set(np.argsort(-m)[:2])
        assert np.argmax(types[g]) == np.argmin(m)
    theta_mean_gap = np.abs(np.mean(_student_theta(knobs, 2) - centre, axis=0))
    assert np.all(theta_mean_gap < 0.1)                                   # students spread about their type


def _student_theta(knobs, seed):
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x57E55]))
    rng.standard_normal((96, 6))
    return student_tastes(knobs.check(), rng, 6)[0]


def test_a_lookalike_of_a_flat_mean_taste_is_one_clear_error():
    """Two polarised camps of one type each cancel out: their mean taste is flat and has no favourite persona."""
    knobs = StressKnobs(arrivals=60, types=2, polarisation=1.0, block_length=20, closeness=0.5)
    with pytest.raises(InputError, match="closeness: the earlier types' mean taste is the same for every persona"):
        build_stress_world(knobs, 0, "s")


def test_type_means_are_refused_for_a_world_that_is_not_a_stress_world():
    from tdmodels.stress_worlds import world_type_means

    w = build_stress_world(SMALL, 0, "s")
    del w.attrs["stress_knobs"]
    with pytest.raises(InputError, match="not a stress world"):
        world_type_means(w)


@pytest.mark.parametrize("text", ["{", "[1, 2]", '{"typez": 3}', '{"types": -1}', '{"tightness": "wide"}'])
def test_knobs_that_do_not_read_are_one_clear_error(text):
    """A hand-made world's stress_knobs that are not a JSON object of valid knobs: one InputError naming the
    attribute (it was a JSONDecodeError, TypeError or no error at all)."""
    w = build_stress_world(SMALL, 0, "s")
    w.attrs["stress_knobs"] = text
    with pytest.raises(InputError, match="stress_knobs"):
        stress_knobs_of(w)


@pytest.mark.parametrize("seed", [None, "x", -1, 2.5])
def test_type_means_without_a_seed_are_one_clear_error(seed):
    """The type means are rebuilt from the world's seed: a hand-made world without a valid one gets one
    InputError naming it (it was a KeyError or ValueError)."""
    from tdmodels.stress_worlds import world_type_means

    w = build_stress_world(SMALL, 0, "s")
    if seed is None:
        del w.attrs["seed"]
    else:
        w.attrs["seed"] = seed
    with pytest.raises(InputError, match="seed"):
        world_type_means(w)
