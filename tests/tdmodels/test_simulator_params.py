import numpy as np
import pytest

from tdmodels.roster_digests import published_digest
from tdmodels.simulator import build_roster
from tdmodels.simulator_params import SIM2_PARAMS, SIM3_PARAMS, SimulatorParams, generator_version
from tdmodels.world import world_digest

# The family's parameters are tested on sim-2's (eight student rows on dev: fast builds); sim-3's own
# structure is tested in test_sim3.py.
DEFAULT_PARAMS = SIM2_PARAMS
DEV_DIGEST = published_digest("sim-2", "dev")


def test_the_defaults_are_generator_sim3_and_sim2_still_builds_its_published_worlds(dev_world):
    assert world_digest(dev_world) == published_digest("sim-3", "dev") and dev_world.attrs["generator"] == "sim-3"
    assert "simulator_params" not in dev_world.attrs and build_roster("dev").attrs["generator"] == "sim-3"
    again = build_roster("dev", params=SimulatorParams(*SIM2_PARAMS))
    assert world_digest(again) == DEV_DIGEST and "simulator_params" not in again.attrs
    assert generator_version(SIM3_PARAMS) == "sim-3" and generator_version(SIM2_PARAMS) == "sim-2"


def test_other_values_name_their_generator_and_make_another_world():
    w = build_roster("dev", params=DEFAULT_PARAMS._replace(judge_noise=0.9))
    assert w.attrs["generator"].startswith("sim-2+") and w.attrs["generator"] == generator_version(
        SimulatorParams(judge_noise=0.9))
    assert '"judge_noise": 0.9' in w.attrs["simulator_params"] and world_digest(w) != DEV_DIGEST
    assert '"type_sd"' not in w.attrs["simulator_params"]            # sim-2's variants record sim-2's fields
    assert generator_version(SimulatorParams(judge_noise=0.9)) != generator_version(SimulatorParams(order_bias=0.3))


def test_the_order_bias_moves_the_judge_toward_the_first_shown_answer():
    def first_bias(order_bias):
        P = build_roster("dev", params=DEFAULT_PARAMS._replace(order_bias=order_bias))["probs"].values
        iu, ju = np.triu_indices(P.shape[-1], 1)
        return float((P[..., iu, ju] + P[..., ju, iu]).mean() - 1)
    none, default, strong = first_bias(0.0), first_bias(0.25), first_bias(0.6)
    assert abs(none) < 0.01 and 0.02 < default < strong


@pytest.mark.parametrize("bad", [dict(judge_noise=float("nan")), dict(order_bias=-0.1), dict(student_scale=0.0),
                                 dict(quirk_gain=True), dict(rater_noise="0.1")])
def test_bad_values_are_refused_by_name(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        build_roster("dev", params=DEFAULT_PARAMS._replace(**bad))


def test_a_shared_persona_offset_makes_that_persona_best_more_often():
    dev_world = build_roster("dev", params=DEFAULT_PARAMS)

    def share(world, k):
        U = world["utilities"].values
        return float(np.mean(U.argmax(-1) == k))
    socratic = 2
    up = build_roster("dev", params=DEFAULT_PARAMS._replace(offset_socratic=1.0))
    down = build_roster("dev", params=DEFAULT_PARAMS._replace(offset_socratic=-1.0))
    assert share(down, socratic) + 0.03 < share(dev_world, socratic) < share(up, socratic) - 0.03
    assert DEFAULT_PARAMS._replace(offset_coach=-2.0).check().shared_offset[5] == -2.0


@pytest.mark.parametrize("name", ["taste_gain", pytest.param("written_sens_gain", marks=pytest.mark.slow),
                                  pytest.param("shared_taste_gain", marks=pytest.mark.slow)])
def test_the_family_parameters_change_the_students_they_name(name):
    d = DEFAULT_PARAMS
    moved = d._replace(**{name: getattr(d, name) * 1.5 + 0.2})
    for roster, touched in (("dev", True), ("composite", name == "taste_gain")):
        a = build_roster(roster, params=d)["utilities"].values
        b = build_roster(roster, params=moved)["utilities"].values
        assert (not np.allclose(a, b)) == touched, (roster, name)


def test_the_development_profiles_shared_lean_raises_one_pair_for_everyone():
    from diagnostics.stats import reference_table

    def everyone(gain):
        w = build_roster("dev", params=DEFAULT_PARAMS._replace(shared_taste_gain=gain))
        return reference_table(w, [0])["best-pair-everyone"][0]["score"]
    assert everyone(0.0) + 5 < everyone(1.0) < everyone(2.0) - 5


def test_the_offset_fields_follow_the_catalogs_persona_order():
    from tdmodels.catalog import PERSONA_SHORT
    from tdmodels.simulator_params import _PERSONA_FIELDS

    assert [p.lower() for p in PERSONA_SHORT] == list(_PERSONA_FIELDS)
    p = DEFAULT_PARAMS._replace(offset_concise=0.7, template_offset_examples=-0.2)
    assert p.shared_offset[4] == 0.7 and p.template_offset[1] == -0.2 and p.shared_offset.sum() == 0.7
