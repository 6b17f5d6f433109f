"""What a tuner may search: each competitor's declared space, a plug-in's Range-annotated settings, the
specs of a point, and every bad search refused by name (issue 61)."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from online.registry import PolicySpecError, declared_settings, policy_spec, resolve
from online.search_space import Dimension, rounded, search_space
from online.setting_range import Search

COMPETITORS = {"rucb": {"alpha"}, "pooled": {"prior_var", "rule"}, "colstim": {"lam", "c"},
               "coldb": {"lam", "beta", "alpha"}, "coldb-lr": {"lam", "beta", "alpha"},
               "meta-ts": {"s0_var", "q_var"}, "hierts": {"s0_var", "q_var"},
               "coduel": {"alpha", "gate_z", "prior_var"}}


@pytest.mark.parametrize("policy", sorted(COMPETITORS))
def test_each_policy_declares_the_settings_that_matter_inside_their_ranges(policy):
    space = search_space(policy)
    assert {d.name for d in space.dimensions} == COMPETITORS[policy]
    declared, _ = declared_settings(resolve(space.base.target))
    for d in space.dimensions:
        rng = declared[d.name].range
        if d.search.choices:
            assert all(rng is None or c in rng for c in d.search.choices)
        else:
            assert d.search.lo < d.search.hi and d.search.lo in rng and d.search.hi in rng
    ends = {d.name: (d.search.choices[-1] if d.search.choices else d.search.hi) for d in space.dimensions}
    assert policy_spec(space.spec(ends)).canonical == space.spec(ends)


def test_a_registered_policy_without_a_search_is_searched_only_where_named():
    for policy in ("random", "no-transfer", "coduel-ask"):
        with pytest.raises(PolicySpecError, match="nothing to search"):
            search_space(policy)
    # no-transfer declares no Search: it moves only with CODuel; a named setting can still be searched
    space = search_space("no-transfer", {"prior_var": "1:16:log"})
    assert space.describe() == "prior_var [1, 16] log"


def test_an_alias_keeps_what_it_fixes_and_a_spec_fixes_its_bracketed_settings():
    space = search_space("coldb-lr")
    assert space.base.changed == {"estimator": "least-squares"}
    assert 'estimator="least-squares"' in space.spec({"lam": 1.5, "beta": 2.0, "alpha": 0.3})
    space = search_space("meta-ts[q_var=2.0]")
    assert [d.name for d in space.dimensions] == ["s0_var"]
    assert space.spec({"s0_var": 0.1}) == "meta-ts[q_var=2.0,s0_var=0.1]"


def test_a_point_at_the_defaults_is_the_untuned_spec():
    space = search_space("meta-ts")
    assert space.spec({"s0_var": 1.0, "q_var": 3.0}) == "meta-ts"


def test_a_plugin_without_a_search_is_searched_over_its_ranges():
    space = search_space("tests.online.helpers:tunable_pairs")
    dims = {d.name: d for d in space.dimensions}
    assert dims["explore"].search == Search(0.0, 1.0, False) and dims["explore"].kind is float
    assert dims["pair"].search == Search(0, 4, False) and dims["pair"].kind is int
    assert space.spec({"explore": 0.25, "pair": 2}) == "tests.online.helpers:tunable_pairs[explore=0.25,pair=2]"


def test_a_plugins_open_and_infinite_ranges_are_searched_inside_or_left_out():
    from online.search_space import _from_range
    from online.setting_range import Range

    assert _from_range(Range(0, 10, lo_open=True)) == Search(0.01, 10.0, False)
    assert _from_range(Range(0.5, 100, lo_open=True)).lo > 0.5 and _from_range(Range(0.5, 100, lo_open=True)).log
    assert _from_range(Range(1, float("inf"))) is None and _from_range(Range(0, 1)) == Search(0.0, 1.0, False)
    space = search_space("tests.online.helpers:open_ranges")
    assert [d.name for d in space.dimensions] == ["rate"] and space.dimensions[0].search.lo > 0


def test_a_grid_is_counted_before_it_is_made():
    many = {f"x{k}": ",".join(map(str, range(100))) for k in range(4)}
    space = search_space("tests.online.helpers:choices_only", many)
    assert space.grid_size() == 100 ** 4 and space.grid(limit=24) is None


def test_a_narrow_search_keeps_the_digits_that_tell_its_points_apart():
    dim = Dimension("x", float, Search(1.0001, 1.0002))
    assert len({rounded(1.0001 + k * 1e-5, dim) for k in range(11)}) == 11


def test_a_registered_policys_choice_it_refuses_is_refused_before_any_run():
    with pytest.raises(PolicySpecError, match="rule must be one of"):
        search_space("pooled", {"rule": "greedy,bogus"})


@pytest.mark.parametrize("policy, searches, words", [
    ("meta-ts", {"s0": "0.1:1"}, "has no setting 's0'; its settings: s0_var, q_var"),
    ("meta-ts", {"s0_var": "0:1"}, "outside the setting's own range"),
    ("meta-ts", {"s0_var": "0.1:1e9"}, "outside the setting's own range"),
    ("rucb", {"alpha": "0.4:2"}, "outside the setting's own range"),
    ("meta-ts", {"s0_var": "2:1"}, "low end must be below the high end"),
    ("meta-ts", {"s0_var": "0.5:0.5"}, "low end must be below the high end"),
    ("meta-ts", {"s0_var": "nan:1"}, "'nan' is not a number"),
    ("meta-ts", {"s0_var": "NaN:1"}, "is not a finite number"),
    ("meta-ts", {"s0_var": "Infinity:1"}, "is not a finite number"),
    ("meta-ts", {"s0_var": "1e999:1"}, "is not a finite number"),
    ("meta-ts", {"s0_var": ""}, "give LO:HI"),
    ("meta-ts", {"s0_var": "0.1,0.1"}, "a choice is given twice"),
    ("meta-ts", {"s0_var": "0.1,-1"}, "outside the setting's range"),
    ("pooled", {"rule": "0:1"}, "is a str setting; give its choices"),
    ("coduel", {"gate": "yes,no"}, "give true or false"),
    ("coduel", {"em_iters": "1.5:3"}, "is not an integer"),
    ("coldb-lr", {"estimator": "logistic,least-squares"}, "fixes estimator"),
    ("meta-ts[s0_var=0.5]", {"s0_var": "0.1:1"}, "fixes s0_var"),
    ("meta-ts", {"s0_var": ",".join(map(str, range(1, 200)))}, "at most 100"),
    ("meta-ts", ["s0_var"], "must be a dict"),
    ("no-such-policy", None, "unknown policy"),
    ("tests.online.helpers:Exploding", None, "nothing to search"),
])
def test_a_bad_search_is_one_named_error(policy, searches, words):
    with pytest.raises(PolicySpecError, match=None) as err:
        search_space(policy, searches)
    assert words in str(err.value), str(err.value)


def test_a_declared_search_outside_its_own_range_is_refused():
    from online.registry import Setting
    from online.search_space import _check
    from online.setting_range import Range

    setting = Setting(float, False, 1.0, Range(0, 1), Search(0, 2))
    with pytest.raises(PolicySpecError, match="outside the setting's own range"):
        _check("mine", "x", setting, setting.search)


@given(st.floats(0.01, 10), st.booleans())
def test_a_rounded_number_keeps_three_digits_and_stays_in_its_search(x, log):
    dim = Dimension("s0_var", float, Search(0.01, 10.0, log))
    v = rounded(x, dim)
    assert 0.01 <= v <= 10.0
    assert math.isclose(v, x, rel_tol=5e-3) or v in (0.01, 10.0)
    assert float(f"{v:.3g}") == v


def test_a_grid_is_every_combination_of_choices():
    space = search_space("pooled", {"rule": "greedy,thompson", "prior_var": "1,4"})
    assert space.grid() == [{"rule": "greedy", "prior_var": 1.0}, {"rule": "greedy", "prior_var": 4.0},
                            {"rule": "thompson", "prior_var": 1.0}, {"rule": "thompson", "prior_var": 4.0}]
    assert search_space("meta-ts").grid() is None
