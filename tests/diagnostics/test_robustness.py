"""The robustness rule: a policy passes only where the lower end of its paired interval against CODuel is above
the margin on every world, with at least two common seeds."""
import pytest

from diagnostics.robustness import (MARGIN, MIN_WORLDS, family_robustness, format_family_robustness,
                                    format_robustness, passes, robustness)
from diagnostics.stats import t_interval


def _rows(world_scores: dict) -> list[dict]:
    return [{"policy": p, "seed": s, "score": v} for p, by in world_scores.items() for s, v in enumerate(by)]


def test_a_policy_passes_only_where_its_lower_end_clears_the_margin_everywhere():
    base = [50.0, 52.0, 51.0, 49.0]
    worlds = {"a": _rows({"coduel": base, "x": [b + 2 for b in base], "y": [b + 2 for b in base]}),
              "b": _rows({"coduel": base, "x": [b + 0.5 for b in base], "y": [b - 3 for b in base]}),
              }
    v = robustness(worlds)
    assert set(v) == {"x", "y"} and [w.world for w in v["x"]] == ["a", "b"]
    assert passes(v["x"]) and not passes(v["y"])
    missing = robustness({**worlds, "c": _rows({"x": [1.0, 2.0]}), "d": _rows({"coduel": base, "y": base})})
    assert not passes(missing["x"])              # no baseline on c, and no rows of x on d: x fails there
    assert [w.n for w in missing["x"]] == [4, 4, 0, 0]
    assert v["y"][1].mean == pytest.approx(-3.0) and v["y"][1].lo < MARGIN
    text = format_robustness(v)
    assert "| x | 2 |" in text and "| yes |" in text and "| y | 2 | b | -3.0" in text and "| no |" in text


def test_one_common_seed_or_noisy_differences_do_not_pass():
    one = robustness({"a": _rows({"coduel": [50.0], "x": [60.0]})})
    assert not passes(one["x"])
    noisy = robustness({"a": _rows({"coduel": [50.0, 50.0, 50.0], "x": [58.0, 40.0, 57.0]})})
    assert noisy["x"][0].mean > 0 and not passes(noisy["x"])                  # mean above, lower end below -1
    assert not passes([])


def test_a_family_is_one_comparison_of_all_its_pairs_and_needs_its_worlds():
    """A preset's worlds pooled: one world's noisy loss does not fail the family when the pooled interval clears
    the margin, a family short of MIN_WORLDS worlds fails whatever its interval, and a roster is its own family."""
    base = [50.0, 52.0, 51.0, 49.0]
    shifts = {"p-seed10": [0.5, 0.5, 0.5, 0.5], "p-seed11": [2.0, 0.0, 1.0, 1.5], "p-seed12": [1.0, 0.8, 1.2, 1.1],
              "p-seed13": [-6.0, 3.0, 1.0, 1.0]}                  # alone, seed13's lower end is far below -1
    worlds = {w: _rows({"coduel": base, "x": [b + d for b, d in zip(base, ds)]}) for w, ds in shifts.items()}
    worlds["dev"] = _rows({"coduel": base, "x": [b + 1 for b in base]})
    family_of = {w: "p" for w in shifts}
    v = family_robustness(worlds, family_of, ["coduel", "x", "random"])
    assert list(v) == ["x"] and [f.family for f in v["x"]] == ["p", "dev"]
    p, dev = v["x"]
    pooled = [d for ds in shifts.values() for d in ds]
    m, h = t_interval(pooled)
    assert p.pooled.n == 16 and p.pooled.mean == pytest.approx(m) and p.pooled.lo == pytest.approx(m - h)
    assert not robustness({"p-seed13": worlds["p-seed13"]})["x"][0].passes and p.passes
    assert [w.world for w in p.worlds] == list(shifts) and dev.needs == 1 and dev.passes
    short = family_robustness({w: worlds[w] for w in list(shifts)[:MIN_WORLDS - 1]}, family_of, ["x"])
    assert not short["x"][0].passes                             # three worlds of a preset are not enough
    text = format_family_robustness(short)
    assert f"3 of the {MIN_WORLDS} worlds it needs" in text and "- x: does not hold on p" in text
    missing = family_robustness({**worlds, "p-seed14": _rows({"coduel": base})}, {**family_of, "p-seed14": "p"}, ["x"])
    assert not missing["x"][0].passes                           # a world of the family without the policy's rows
    assert "- x: holds on every family" in format_family_robustness(v)
