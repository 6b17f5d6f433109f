"""The robustness rule: a policy passes only where the lower end of its paired interval against CODuel is above
the margin on every world, with at least two common seeds."""
import pytest

from diagnostics.robustness import MARGIN, format_robustness, passes, robustness


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
